#!/usr/bin/env bash
# Flags train would ignore or misuse are refused at start-up, before any step and before anything is
# created (docs/training.md), through real 2-rank runs: --out / --ckpt-dir inside the ImageFolder
# tree of --data / --val-data (the data tree byte-identical, no run directory made); --min-lr above
# --lr; a cosine --warmup as long as the run (and with the default --warmup over a shorter run,
# index.json's t_initial is 0, not negative); --epochs with --steps; --eval-every without
# --val-data; --keep / --async-ckpt without a checkpoint directory; --shard-group with a strategy
# other than hybrid_shard; --decay-epochs / --decay-rate / --decay-milestones with a --sched that
# does not use them; --debug-nan-rank outside the world; --save-params / --dump-logits / --trace in
# a directory that does not exist (refused before training, not after it); --ckpt-dir equal to
# --out (a clear refusal, not "in use by another training" naming our own pid).
# HOSTILE_KEEP_GOING=1 runs every check (to show that each fails on a build without the fixes).
SHARDVIT=$1
source "$(dirname "$0")/cli_lib.sh"
# refused NAME PATTERN FLAGS...: exit 2 with PATTERN, before the first step
refused() {
    local name=$1 pat=$2
    shift 2
    expect_fail "$name" "$pat" t2 --steps 4 "$@"
    grep -q "info step \|info training " "$W/$name.log" && fail "$name: refused only after training started"
}

echo "== run directories inside the data"
"$SHARDVIT" prep synthetic --out "$W/prep" --classes 3 --per-class 4 --test-per-class 1 --width 28 --height 28 \
    >"$W/prep.log" 2>&1 || { cat "$W/prep.log"; echo "FAIL: prep"; exit 1; }
DS=$W/prep/train
before=$(tree_sum "$DS")
refused out_in_data "--out $DS/zrun lies in the ImageFolder tree of --data $DS" --data "$DS" --out "$DS/zrun"
refused ckpt_in_val "--ckpt-dir $DS/class_000/ck lies in the ImageFolder tree of --val-data $DS" \
    --val-data "$DS" --ckpt-dir "$DS/class_000/ck"
refused out_is_data "--out $DS lies in the ImageFolder tree of --data $DS" --data "$DS" --out "$DS"
test "$before" = "$(tree_sum "$DS")" || fail "the data tree changed (a run directory was created in it)"

echo "== schedule"
refused min_lr "--min-lr 5 is above --lr 0.001" --lr 0.001 --min-lr 5
refused cosine_warmup "--sched cosine: no steps left to decay over after --warmup 6" --warmup 6
expect_ok short_cosine t2 --steps 4 --out "$W/short" # the default --warmup 10 over 4 steps: all warmup
grep -q '"t_initial": 0,' "$W/short/checkpoints/step_00000004/index.json" ||
    fail "index.json: t_initial $(grep -o '"t_initial": *[-0-9]*' "$W/short/checkpoints/step_00000004/index.json")"

echo "== flags that would be ignored"
refused epochs_steps "--epochs 3 and --steps 4: give one" --epochs 3
refused eval_every "--eval-every 2 needs --val-data" --eval-every 2
refused keep "--keep 2 needs --ckpt-dir or --out" --keep 2
refused async "--async-ckpt needs --ckpt-dir or --out" --async-ckpt
refused shard_group "--shard-group 2 applies to --strategy hybrid_shard only" --shard-group 2
refused decay_epochs "--decay-epochs applies to --sched step only" --decay-epochs 3
refused decay_rate "--decay-rate applies to --sched step and multistep" --decay-rate 0.5
refused milestones "--decay-milestones applies to --sched multistep only" --sched step --decay-milestones 1,2
refused nan_rank "--debug-nan-rank 2: this run has 2 ranks" --debug-nan-step 1 --debug-nan-rank 2

echo "== end-of-run outputs in a missing directory"
refused save_params "--save-params $W/nodir/x.bin: its directory $W/nodir does not exist" --save-params "$W/nodir/x.bin"
refused dump_logits "--dump-logits $W/nodir/d.st: its directory $W/nodir does not exist" --dump-logits "$W/nodir/d.st"
refused trace "--trace $W/nodir/t.json: its directory $W/nodir does not exist" --trace "$W/nodir/t.json"

echo "== a run directory too long for the files a run writes below it"
# 3900 bytes: the directory itself fits PATH_MAX (4096), its checkpoint shards' temporaries do not;
# the run trained every step and failed at its first save
long=$W/longout
for i in $(seq 21); do long=$long/$(printf "d%.0s" $(seq 199)); done
long=${long:0:3900}
refused long_out "--out \.\.\..* is 3900 bytes long: the files a run writes below it" --out "$long"
test -e "$W/longout" && fail "long_out: a refused start created $W/longout"
refused long_ckpt "--ckpt-dir \.\.\..* is 3900 bytes long" --ckpt-dir "$long"

echo "== --ckpt-dir equal to --out"
refused same_dir "--ckpt-dir $W/r12 is the --out directory itself" --out "$W/r12" --ckpt-dir "$W/r12"
grep -q "in use by another training" "$W/same_dir.log" && fail "--ckpt-dir = --out reported as a busy run directory"
all_passed start_refusals
