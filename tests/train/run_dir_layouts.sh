#!/usr/bin/env bash
# Run directories and checkpoint roots stay apart (docs/checkpoints.md "Run directory"), through
# real 2-rank runs on real files:
#  1. --out that is a checkpoint root (another run's --ckpt-dir) and --ckpt-dir that is a run
#     directory (another run's --out), with and without --resume: refused with exit 2, both
#     byte-identical, nothing created; the layouts a run may use (--out alone, --out with a
#     --ckpt-dir of its own, apart or inside --out, --ckpt-dir alone) start and resume; --out
#     inside its own --ckpt-dir is refused;
#  2. export and eval of a directory that holds both `latest` and checkpoints/latest: an error
#     naming both, never one of the two models chosen silently;
#  3. --out / --ckpt-dir inside a checkpoint step directory or another run's checkpoint root:
#     refused, nothing created in the checkpoint;
#  4. --keep over step directories that hold something the checkpoint writer did not make (a run
#     nested in one, a user's file in another): both kept whole with a warning naming the entry,
#     the plain old steps removed; a leftover step_N.tmp of writer files is removed;
#  5. a refused start creates nothing (--ckpt-dir FILE, a --save-params FIFO, with a new --out);
#     --save-params inside a new --out still works.
# HOSTILE_KEEP_GOING=1 runs every check (to show that each fails on a build without the fixes).
SHARDVIT=$1
source "$(dirname "$0")/cli_lib.sh"
mustrun() { # NAME CMD...: a set-up run that must exit 0, else the test cannot go on
    local name=$1 rc=0
    shift
    "$@" >"$W/$name.log" 2>&1 || rc=$?
    [ $rc -eq 0 ] || { echo "FAIL: set-up run $name: exit $rc"; tail -20 "$W/$name.log"; exit 1; }
}
# refused NAME PATTERN FLAGS...: train exits 2 with PATTERN, before the first step
refused() {
    local name=$1 pat=$2 rc=0
    shift 2
    t2 --steps 3 "$@" >"$W/$name.log" 2>&1 || rc=$?
    FAIL_LOGS=("$W/$name.log")
    [ $rc -eq 2 ] || { fail "$name: exit $rc, expected 2"; return; }
    grep -Eq -- "$pat" "$W/$name.log" || { fail "$name: no message matching '$pat'"; return; }
    grep -q "info step " "$W/$name.log" && { fail "$name: refused only after training started"; return; }
    echo "ok $name: $(grep -Em1 -- "$pat" "$W/$name.log" | cut -c1-220)"
}
# layout NAME FLAGS...: a fresh 2-step run with FLAGS, then --resume auto to step 3 continues it
layout() {
    local name=$1
    shift
    expect_ok "$name" t2 --steps 2 --ckpt-every 1 "$@"
    expect_ok "${name}_resume" t2 --steps 3 --ckpt-every 1 "$@" --resume auto
    grep -q "resumed from .*step_00000002" "$W/${name}_resume.log" ||
        { FAIL_LOGS=("$W/${name}_resume.log"); fail "$name: --resume auto did not continue the run"; return; }
    echo "ok $name: starts and resumes"
}

mustrun run_a t2 --steps 4 --ckpt-every 2 --out "$W/runA"
mustrun root_c t2 --steps 4 --ckpt-every 2 --seed 11 --ckpt-dir "$W/rootC"

echo "== a checkpoint root as --out, a run directory as --ckpt-dir"
before=$(tree_sum "$W/runA" "$W/rootC")
refused out_is_root "--out $W/rootC holds checkpoints \('(latest|step_0000000[24])'\): it is a checkpoint root" \
    --out "$W/rootC"
refused out_is_root_resume "--out $W/rootC holds checkpoints" --out "$W/rootC" --resume auto
refused ckpt_is_run "--ckpt-dir $W/runA holds a run's results \('[^']+'\): it is a run directory" \
    --out "$W/newB" --ckpt-dir "$W/runA" --ckpt-every 1
refused ckpt_is_run_resume "--ckpt-dir $W/runA holds a run's results" --out "$W/newB" --ckpt-dir "$W/runA" \
    --resume auto
test "$before" = "$(tree_sum "$W/runA" "$W/rootC")" || fail "the run directory or the checkpoint root changed"
test ! -e "$W/newB" || fail "a refused start created $W/newB"

echo "== the layouts a run may use"
layout lay_out --out "$W/L1"
layout lay_sep --out "$W/L2" --ckpt-dir "$W/L2ck"
layout lay_ck_inside --out "$W/L3" --ckpt-dir "$W/L3/ck"
layout lay_ck_default --out "$W/L4" --ckpt-dir "$W/L4/checkpoints"
layout lay_ck_only --ckpt-dir "$W/L6"
# a run directory inside its own checkpoint root would be taken for part of it
# a user's file whose name starts with step_ (not a step directory) is no checkpoint: the run
# directory holding it still resumes
expect_ok user_step_file t2 --steps 2 --ckpt-every 1 --out "$W/L7"
echo notes >"$W/L7/step_times.txt"
expect_ok user_step_file_resume t2 --steps 3 --ckpt-every 1 --out "$W/L7" --resume auto
test "$(cat "$W/L7/step_times.txt")" = notes || fail "the user's step_times.txt changed"
refused out_in_own_ckpt "--out $W/L5/run lies inside --ckpt-dir $W/L5" --out "$W/L5/run" --ckpt-dir "$W/L5"
test ! -e "$W/L5" || fail "a refused start created $W/L5"

echo "== a directory that is both a run directory and a checkpoint root"
cp -a "$W/runA" "$W/amb" # as an older build left it: another run's checkpoints beside the run's
cp -a "$W/rootC/latest" "$W/rootC/step_00000004" "$W/amb/"
mkdir "$W/x"
expect_fail amb_export "$W/amb is ambiguous: it holds both $W/amb/latest .*and $W/amb/checkpoints/latest" \
    "$SHARDVIT" export "$W/amb" "$W/x/m.safetensors"
test -z "$(ls -A "$W/x")" || fail "the refused export wrote $(ls "$W/x")"
expect_fail amb_eval "$W/amb is ambiguous" timeout 60 "$MPIEXEC" -n 2 "$SHARDVIT" eval --ckpt "$W/amb" \
    --data synthetic --synth-samples 32 --batch-size 8 --workers 1 --out "$W/amb_eval"
test ! -e "$W/amb_eval/eval.json" || fail "the refused eval wrote eval.json"
expect_ok amb_export_run "$SHARDVIT" export "$W/amb/checkpoints" "$W/x/run.safetensors"
expect_ok amb_export_root "$SHARDVIT" export "$W/amb/step_00000004" "$W/x/root.safetensors"

echo "== --out / --ckpt-dir inside a checkpoint"
S=$W/runA/checkpoints/step_00000004
before=$(tree_sum "$W/runA" "$W/rootC")
refused out_in_step "--out $S/sub is inside the checkpoint step directory .*step_00000004.*choose a path outside it" \
    --out "$S/sub"
refused ckpt_in_step "--ckpt-dir $S/ck is inside the checkpoint step directory .*step_00000004" \
    --out "$W/newC" --ckpt-dir "$S/ck"
refused out_in_root "--out $W/rootC/sub is inside the checkpoint root .*rootC.*choose a path outside it" \
    --out "$W/rootC/sub"
refused ckpt_in_root "--ckpt-dir $W/runA/checkpoints/ck is inside the checkpoint root .*runA/checkpoints" \
    --ckpt-dir "$W/runA/checkpoints/ck"
test "$before" = "$(tree_sum "$W/runA" "$W/rootC")" || fail "a refused start changed the checkpoints"
test ! -e "$W/newC" || fail "a refused start created $W/newC"

echo "== --keep removes only what the checkpoint writer made"
mustrun k0 t2 --steps 4 --ckpt-every 2 --out "$W/K"
K=$W/K/checkpoints
cp -a "$W/runA" "$K/step_00000004/sub" # a run nested in a step directory (an older build allowed it)
echo "my notes" >"$K/step_00000002/notes.txt"
cp -a "$K/step_00000002" "$K/step_00000003.tmp" # a save interrupted by a crash: writer files only
rm "$K/step_00000003.tmp/notes.txt"
: >"$K/step_00000003.tmp/index.json.tmp-0123abcd"
kept4=$(tree_sum "$K/step_00000004")
kept2=$(tree_sum "$K/step_00000002")
expect_ok keep t2 --steps 10 --ckpt-every 2 --keep 1 --out "$W/K" --resume auto
FAIL_LOGS=("$W/keep.log")
test "$kept4" = "$(tree_sum "$K/step_00000004")" || fail "--keep changed the step directory holding a nested run"
test "$kept2" = "$(tree_sum "$K/step_00000002")" || fail "--keep changed the step directory holding a user's file"
grep -Eq "WARN checkpoint: --keep 1: kept .*step_00000004: it holds 'sub'" "$W/keep.log" ||
    fail "no warning naming the kept step_00000004 and 'sub'"
grep -Eq "WARN checkpoint: --keep 1: kept .*step_00000002: it holds 'notes.txt'" "$W/keep.log" ||
    fail "no warning naming the kept step_00000002 and 'notes.txt'"
for s in 00000006 00000008; do test ! -e "$K/step_$s" || fail "--keep 1 left step_$s"; done
test ! -e "$K/step_00000003.tmp" || fail "the interrupted save step_00000003.tmp was not removed"
test -z "$(find "$K" -maxdepth 1 -name 'step_*.tmp')" || fail "temporaries left: $(ls "$K")"
test "$(cat "$K/latest")" = step_00000010 || fail "latest: $(cat "$K/latest")"
test -f "$K/step_00000010/index.json" || fail "step_00000010 is not complete"
echo "ok keep: the two steps with foreign entries kept (warned $(grep -c "WARN checkpoint: --keep" "$W/keep.log") times), the rest removed"

echo "== a refused start creates nothing"
echo "x" >"$W/file"
refused ckpt_file "--ckpt-dir $W/file exists and is not a directory" --out "$W/o3" --ckpt-dir "$W/file"
test ! -e "$W/o3" || fail "the refused start left $W/o3 behind"
mkfifo "$W/fifo.bin"
refused params_fifo "save-params .*(FIFO|not a regular file)" --out "$W/o4" --save-params "$W/fifo.bin"
test ! -e "$W/o4" || fail "the refused start left $W/o4 behind"
expect_ok params_in_new_out t2 --steps 1 --out "$W/o5" --save-params "$W/o5/params.bin"
test -s "$W/o5/params.bin" || fail "--save-params inside a new --out was not written"
all_passed train_run_dir_layouts
