#!/usr/bin/env bash
# Every --sched against timm's scheduler classes stepped per update (--sched-on-updates), and
# shardvit's --warmup-steps form against its formula: the LR of every optimizer step as logged in
# metrics.jsonl. 96 synthetic samples at batch 24: 4 steps per epoch. Skipped (77) without
# SHARDVIT_TEST_PYTHON (timm).
SHARDVIT=$1
source "$(dirname "$0")/../fsdp/lib.sh"
[ -n "${SHARDVIT_TEST_PYTHON:-}" ] || { echo "SHARDVIT_TEST_PYTHON unset: skipped"; exit 77; }
SMALL="--model vit-28 --dim 12 --depth 1 --heads 2 --batch-size 24 --synth-samples 96 --log-every 1 --seed 3 --workers 1 --lr 1e-3"
n=0
sched() { # sched NAME REF SCHED "shardvit flags" reference KEY=VALUE...
    local name=$1 ref=$2 s=$3 flags=$4
    shift 4
    if ! "$SHARDVIT" train $SMALL $flags --out "$WORK/$name" >"$WORK/$name.log" 2>&1; then
        echo "FAIL: $name ($flags)"; tail -5 "$WORK/$name.log"; exit 1
    fi
    echo -n "$name: "
    "$SHARDVIT_TEST_PYTHON" "$HERE/../optim/sched_check.py" "$WORK/$name" 4 "$ref" "$s" lr=1e-3 "$@"
    n=$((n + 1))
}
sched cos timm cosine "--epochs 5 --warmup-epochs 1.5 --warmup-lr 1e-4 --min-lr 1e-5" \
    num_epochs=5 warmup_epochs=1.5 warmup_lr=1e-4 min_lr=1e-5
sched cos_prefix_cool timm cosine "--epochs 5 --warmup-epochs 1 --warmup-prefix --cooldown-epochs 2 --min-lr 2e-5" \
    num_epochs=5 warmup_epochs=1 warmup_prefix=1 cooldown_epochs=2 min_lr=2e-5 warmup_lr=0
sched step timm step "--sched step --epochs 6 --decay-epochs 2 --decay-rate 0.5 --warmup-epochs 1 --warmup-lr 1e-5" \
    num_epochs=6 decay_epochs=2 decay_rate=0.5 warmup_epochs=1 warmup_lr=1e-5
sched step_frac timm step "--sched step --epochs 4 --decay-epochs 0.75 --decay-rate 0.7 --warmup 0" \
    num_epochs=4 decay_epochs=0.75 decay_rate=0.7 warmup_lr=0
sched multistep timm multistep "--sched multistep --epochs 6 --decay-milestones 2,3,5 --decay-rate 0.3 --warmup-epochs 1 --warmup-prefix --warmup-lr 1e-6" \
    num_epochs=6 decay_milestones=2,3,5 decay_rate=0.3 warmup_epochs=1 warmup_prefix=1 warmup_lr=1e-6
sched poly timm poly "--sched poly --epochs 5 --decay-rate 2 --warmup-epochs 1 --cooldown-epochs 1 --min-lr 1e-5" \
    num_epochs=5 decay_rate=2 warmup_epochs=1 cooldown_epochs=1 min_lr=1e-5 warmup_lr=0
sched poly_power timm poly "--sched poly --epochs 4 --poly-power 0.7 --warmup 0 --min-lr 0" \
    num_epochs=4 decay_rate=0.7 warmup_lr=0
sched constant timm constant "--sched constant --epochs 3 --warmup-epochs 1 --warmup-lr 1e-5" \
    num_epochs=3 warmup_epochs=1 warmup_lr=1e-5
sched cos_nowarm timm cosine "--epochs 4 --warmup 0 --min-lr 1e-5" num_epochs=4 min_lr=1e-5 warmup_lr=0
sched cos_default steps cosine "--epochs 5" warmup=10 min_lr=1e-5
sched cos_steps_wlr steps cosine "--steps 14 --warmup 4 --warmup-lr 1e-4 --min-lr 0" warmup=4 warmup_lr=1e-4 min_lr=0
sched step_steps steps step "--sched step --steps 14 --warmup 3 --decay-epochs 1 --decay-rate 0.5" \
    warmup=3 decay_steps=4 decay_rate=0.5
# --sched-on-updates 0: timm's default, the schedule stepped once per epoch (constant inside one)
sched ep_cos timm-epochs cosine "--sched-on-updates 0 --epochs 6 --warmup-epochs 2 --warmup-lr 1e-4 --min-lr 1e-5" \
    num_epochs=6 warmup_epochs=2 warmup_lr=1e-4 min_lr=1e-5
sched ep_cos_prefix_cool timm-epochs cosine "--sched-on-updates 0 --epochs 5 --warmup-epochs 1 --warmup-prefix --cooldown-epochs 2 --min-lr 2e-5" \
    num_epochs=5 warmup_epochs=1 warmup_prefix=1 cooldown_epochs=2 min_lr=2e-5 warmup_lr=0
sched ep_cos_nowarm timm-epochs cosine "--sched-on-updates 0 --epochs 4 --min-lr 1e-5" num_epochs=4 min_lr=1e-5 warmup_lr=0
sched ep_step timm-epochs step "--sched-on-updates 0 --sched step --epochs 6 --decay-epochs 2 --decay-rate 0.5 --warmup-epochs 1 --warmup-lr 1e-5" \
    num_epochs=6 decay_epochs=2 decay_rate=0.5 warmup_epochs=1 warmup_lr=1e-5
sched ep_multistep timm-epochs multistep "--sched-on-updates 0 --sched multistep --epochs 6 --decay-milestones 2,3,5 --decay-rate 0.3 --warmup-epochs 1 --warmup-prefix --warmup-lr 1e-6" \
    num_epochs=6 decay_milestones=2,3,5 decay_rate=0.3 warmup_epochs=1 warmup_prefix=1 warmup_lr=1e-6
sched ep_poly timm-epochs poly "--sched-on-updates 0 --sched poly --epochs 5 --decay-rate 2 --warmup-epochs 1 --cooldown-epochs 1 --min-lr 1e-5" \
    num_epochs=5 decay_rate=2 warmup_epochs=1 cooldown_epochs=1 min_lr=1e-5 warmup_lr=0
# the same cosine stepped per update, asked for explicitly (the default), against timm's per-update curve
sched up_cos timm cosine "--sched-on-updates 1 --epochs 6 --warmup-epochs 2 --warmup-lr 1e-4 --min-lr 1e-5" \
    num_epochs=6 warmup_epochs=2 warmup_lr=1e-4 min_lr=1e-5
cmp <(grep -o '"lr":[^,]*' "$WORK/ep_cos/metrics.jsonl") <(grep -o '"lr":[^,]*' "$WORK/up_cos/metrics.jsonl") >/dev/null &&
    { echo "FAIL: per-epoch and per-update cosine logged the same LRs"; exit 1; }
echo "sched_timm: $n schedules passed"
