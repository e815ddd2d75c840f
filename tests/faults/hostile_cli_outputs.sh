#!/usr/bin/env bash
# The output rules of bench, plan, report and bench-compare, and of standard output, through the
# real CLI (docs/checkpoints.md "Outputs"). Each check fails on a build without its fix:
#   1. two outputs of one bench naming the same file (--json = --trace, --sweep-csv =
#      --sweep-jsonl): refused at start-up naming both flags, nothing written;
#   2. output flags that do not apply to the mode are refused instead of ignored: bench --sweep
#      with --json, bench --op / --comm with --trace, plan --trace without --simulate or with
#      --suggest-wrap / --sweep;
#   3. an output in a directory that does not exist (bench --json, --trace, --sweep-csv, report
#      --out): refused at start-up, before the benchmark runs;
#   4. a result that cannot reach standard output (/dev/full): exit 1, not 0;
#   5. bench-compare of --op results matches rows by variant (any order) and refuses results with
#      no variant in common;
#   6. plan --simulate --trace under a launcher: only launcher rank 0 writes the trace;
#   7. a --sweep stopped by SIGTERM after its first row keeps that row in --sweep-csv;
#   8. report with a config.toml that exists but cannot be read: an error, not a report without
#      that section (nor one written into the checkpoint root it would have protected);
#   9. a trace part whose write fails (a full tmpfs; needs root to mount, else this section says
#      so and is left out) is removed, so the next run is not refused;
#  10. prep: --out inside a checkpoint step directory refused (train --keep would delete it);
#      flags that do not apply (synthetic --limit / --src) refused; a
#      prep stopped by SIGTERM leaves nothing under OUT (its work directory is removed), one
#      killed by SIGKILL no split (only its work directory, which the rerun names); an empty
#      CIFAR batch is an error, not an empty split;
#  11. a reshard that fails removes the parent directories it made for OUT;
#  12. predict with more image paths than it takes says so;
#  13. bench --sweep refuses before its first row runs: an output that is one of the --trace part
#      files (TRACE.rankN of any rank; it failed after row 1 ran, "already exists"), and a value
#      of any key that its row would refuse (a param dtype, strategy or model, a batch that
#      world x --accum does not divide; only batch values were checked, the others failed when
#      their row came, after the earlier rows ran).
# Usage: hostile_cli_outputs.sh SHARDVIT MPIEXEC
SHARDVIT=$(cd "$(dirname "$1")" && pwd)/$(basename "$1") MPIEXEC=$2 # absolute: section 12 runs in another directory
source "$(dirname "$0")/lib.sh"
export LC_ALL=C
SV=("timeout" "120" "$SHARDVIT")
MODEL="--model vit-28 --dim 32 --depth 1 --heads 2"
BENCH=(bench $MODEL --batch-size 4 --steps 1 --warmup 0 --calib-seconds 0 --threads 1)
PLAN=(plan --simulate --device cpu $MODEL --batch-size 4 --world 2 --strategy full_shard --param-dtype fp32)
O="$WORK/o"
mkdir -p "$O"

# ---- 1. two outputs, one file ----
expect_fail same_json_trace "--json $O/t.json and --trace $O/t.json are the same file" \
    "${SV[@]}" "${BENCH[@]}" --json "$O/t.json" --trace "$O/t.json"
expect_fail same_sweep "--sweep-csv $O/s.csv and --sweep-jsonl $O/s.csv are the same file" \
    "${SV[@]}" "${BENCH[@]}" --sweep batch=4,8 --sweep-csv "$O/s.csv" --sweep-jsonl "$O/s.csv"
[ -z "$(ls -A "$O")" ] || fail "a refused command wrote: $(ls -A "$O")"

# ---- 2. output flags that do not apply ----
expect_fail sweep_json "--json takes one result" "${SV[@]}" "${BENCH[@]}" --sweep batch=4 --sweep-csv "$O/s.csv" \
    --json "$O/j.json"
expect_fail op_trace "--trace records the training step: not with --op or --comm" \
    "${SV[@]}" bench $MODEL --batch-size 4 --op gelu --trace "$O/x.json"
expect_fail comm_trace "--trace records the training step: not with --op or --comm" \
    "${SV[@]}" bench --comm --comm-max 64K --trace "$O/x.json"
expect_fail plan_trace "--trace records a simulated step: it needs --simulate" \
    "${SV[@]}" plan $MODEL --batch-size 4 --trace "$O/p.json"
expect_fail plan_suggest_trace "--trace records one simulated step: with --simulate, not with --suggest-wrap" \
    "${SV[@]}" plan --suggest-wrap --device cpu $MODEL --batch-size 4 --world 2 --trace "$O/p.json"
expect_fail plan_sweep_trace "--trace records one simulated step: with --simulate, not with --sweep" \
    "${SV[@]}" plan --sweep world=1,2 --device cpu $MODEL --batch-size 4 --trace "$O/p.json"
[ -z "$(ls -A "$O")" ] || fail "a refused command wrote: $(ls -A "$O")"

# ---- 3. an output in a directory that does not exist: refused before the work ----
for flag in json trace sweep-csv; do
    extra=()
    [ $flag = sweep-csv ] && extra=(--sweep batch=4)
    t0=$SECONDS
    expect_fail "missing_dir_$flag" "--$flag $O/missing/x: its directory $O/missing does not exist" \
        "${SV[@]}" bench $MODEL --batch-size 4 --steps 400 --warmup 0 --calib-seconds 0 --threads 1 "${extra[@]}" \
        --$flag "$O/missing/x"
    [ $((SECONDS - t0)) -lt 20 ] || fail "missing_dir_$flag: refused only after $((SECONDS - t0)) s (after the run?)"
done

# ---- 4. standard output that cannot be written ----
for c in "version --json" "info --model vit-28" "--help"; do
    rc=0
    $SHARDVIT $c >/dev/full 2>"$WORK/full.log" || rc=$?
    FAIL_LOGS=("$WORK/full.log")
    [ $rc -eq 1 ] || fail "shardvit $c > /dev/full: exit $rc (want 1)"
    grep -q "cannot write standard output: No space left on device" "$WORK/full.log" ||
        fail "shardvit $c > /dev/full: no error naming standard output"
done
echo "ok stdout: $(cat "$WORK/full.log")"

# ---- 5. bench-compare of --op results ----
expect_ok op_a "${SV[@]}" bench $MODEL --batch-size 4 --op matmul --steps 2 --warmup 0 --threads 1 --json "$O/opA.json"
"$PY" - "$O/opA.json" "$O" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
assert len(d["results"]) >= 2, d["results"]
rev = dict(d, results=list(reversed(d["results"])))
json.dump(rev, open(sys.argv[2] + "/opR.json", "w"))
json.dump(dict(d, results=[]), open(sys.argv[2] + "/opE.json", "w"))
EOF
nrows=$("$PY" -c "import json,sys; print(len(json.load(open(sys.argv[1]))['results']))" "$O/opA.json")
expect_ok cmp_reversed "${SV[@]}" bench-compare "$O/opA.json" "$O/opR.json"
got=$(grep -c "rate_best" "$WORK/cmp_reversed.log")
[ "$got" = "$nrows" ] || fail "bench-compare of reversed rows compared $got of $nrows variants"
grep "rate_best" "$WORK/cmp_reversed.log" | grep -vq "1.000" &&
    fail "bench-compare of a result with itself (rows reversed) gave a ratio other than 1: $(cat "$WORK/cmp_reversed.log")"
expect_fail cmp_empty "refusing to compare: no variant in common" "${SV[@]}" bench-compare "$O/opA.json" "$O/opE.json"
echo "ok cmp_reversed: $got variants compared"

# ---- 6. plan --simulate --trace under a launcher: rank 0 alone writes the trace ----
expect_ok plan_rank1 env PMI_RANK=1 "${SV[@]}" "${PLAN[@]}" --trace "$O/plan1.json"
[ ! -e "$O/plan1.json" ] && [ ! -e "$O/plan1.json.rank0" ] || fail "launcher rank 1 wrote the plan trace"
expect_ok plan_rank0 env PMI_RANK=0 "${SV[@]}" "${PLAN[@]}" --trace "$O/plan0.json"
[ -s "$O/plan0.json" ] || fail "launcher rank 0 wrote no plan trace"

# ---- 7. a sweep stopped after its first row keeps the row ----
# (SIGTERM: a background job of a non-interactive shell ignores SIGINT)
"$SHARDVIT" bench $MODEL --steps 200 --warmup 0 --calib-seconds 0 --threads 1 --sweep batch=4,2048 \
    --sweep-csv "$O/sig.csv" >"$WORK/sig.log" 2>&1 &
pid=$!
for _ in $(seq 600); do
    [ -s "$O/sig.csv" ] && break
    kill -0 $pid 2>/dev/null || break
    sleep 0.1
done
FAIL_LOGS=("$WORK/sig.log")
[ -s "$O/sig.csv" ] || { kill -9 $pid 2>/dev/null; fail "the first sweep row is not in --sweep-csv while the second runs"; }
kill -TERM $pid
wait $pid
[ "$(wc -l <"$O/sig.csv")" -eq 2 ] || fail "--sweep-csv after SIGTERM: $(wc -l <"$O/sig.csv") lines (want header + 1 row)"
echo "ok sweep_signal: $(tail -1 "$O/sig.csv" | cut -c1-80)"

# ---- 8. report with a config.toml that cannot be read ----
expect_ok train8 "${SV[@]}" train $MODEL --batch-size 4 --steps 2 --workers 1 --threads 1 --out "$WORK/r8" \
    --ckpt-dir "$WORK/ck8"
mv "$WORK/r8/config.toml" "$WORK/r8/config.toml.orig"
ln -s "$WORK/nowhere" "$WORK/r8/config.toml"
expect_fail report_dangling "config.toml" "${SV[@]}" report "$WORK/r8" --out "$O/r8.html"
[ ! -e "$O/r8.html" ] || fail "report wrote a report from a run whose config.toml cannot be read"
rm "$WORK/r8/config.toml"
mv "$WORK/r8/config.toml.orig" "$WORK/r8/config.toml"
expect_fail report_in_root "inside the run's checkpoint" "${SV[@]}" report "$WORK/r8" --out "$WORK/ck8/rep.html"
expect_fail report_missing_dir "its directory $O/missing does not exist" \
    "${SV[@]}" report "$WORK/r8" --out "$O/missing/r.html"
expect_ok report_ok "${SV[@]}" report "$WORK/r8" --out "$O/r8.html"

# ---- 9. a trace part that cannot be written completely ----
SMALL="$WORK/small"
mkdir -p "$SMALL"
if mount -t tmpfs -o size=8k tmpfs "$SMALL" 2>"$WORK/mount.err"; then
    trap 'umount "$SMALL" 2>/dev/null; cleanup' EXIT
    expect_fail part_full "cannot write trace part $SMALL/tr.json.rank0: No space left on device" \
        "${SV[@]}" bench $MODEL --batch-size 4 --steps 60 --warmup 0 --calib-seconds 0 --threads 1 \
        --trace "$SMALL/tr.json"
    [ -z "$(ls -A "$SMALL")" ] || fail "a failed trace part was left behind: $(ls -A "$SMALL")"
    umount "$SMALL"
else
    echo "note: section 9 left out: cannot mount a tmpfs to fill ($(cat "$WORK/mount.err"); needs root)"
fi

# ---- 10. prep ----
expect_fail prep_in_ckpt "--out $WORK/ck8/step_00000002/data is inside the checkpoint step directory" \
    "${SV[@]}" prep synthetic --classes 2 --per-class 2 --test-per-class 1 --width 16 --height 16 \
    --out "$WORK/ck8/step_00000002/data"
[ ! -e "$WORK/ck8/step_00000002/data" ] || fail "prep wrote into a checkpoint step directory"
expect_fail prep_limit "--limit does not apply to synthetic" "${SV[@]}" prep synthetic --limit 1 --out "$O/pl"
[ ! -e "$O/pl" ] || fail "a refused prep wrote $O/pl"
# prep_stopped SIG DIR: a prep into DIR stopped by SIG while its work directory fills; 0 when the
# signal reached it before it finished
prep_stopped() {
    "$SHARDVIT" prep synthetic --classes 10 --per-class 400 --test-per-class 10 --out "$2" >"$WORK/pk.log" 2>&1 &
    local pid=$! n
    for n in $(seq 600); do # until the import is under way (its work directory holds images)
        [ -n "$(find "$2" -name '*.jpg' 2>/dev/null | head -1)" ] && break
        kill -0 $pid 2>/dev/null || break
        sleep 0.05
    done
    kill -"$1" $pid 2>/dev/null
    wait $pid
    FAIL_LOGS=("$WORK/pk.log")
    [ ! -e "$2/.shardvit-prep" ] || { echo "note: the prep finished before SIG$1 reached it; that case is left out"; return 1; }
    [ ! -e "$2/train" ] && [ ! -e "$2/test" ] || fail "a prep stopped by SIG$1 left a split where readers take it whole"
}
# SIGTERM: the work directory is removed on the way out (core/fileio.h), nothing is left
if prep_stopped TERM "$O/pt"; then
    ls -d "$O/pt"/.prep.tmp-* >/dev/null 2>&1 && fail "a prep stopped by SIGTERM left its work directory in $O/pt"
fi
# SIGKILL leaves the work directory, and the rerun names it
if prep_stopped KILL "$O/pk"; then
    ls -d "$O/pk"/.prep.tmp-* >/dev/null 2>&1 || fail "no work directory of the killed prep in $O/pk"
    expect_fail prep_rerun "holds $O/pk/.prep.tmp-[0-9a-f]*, the partial output of a prep that was interrupted" \
        "${SV[@]}" prep synthetic --classes 10 --per-class 400 --test-per-class 10 --out "$O/pk"
fi
mkdir -p "$WORK/cifar"
for b in 1 2 3 4 5; do : >"$WORK/cifar/data_batch_$b.bin"; done
head -c 3073 /dev/zero >"$WORK/cifar/test_batch.bin"
expect_fail prep_cifar_empty "data_batch_1.bin holds no record" "${SV[@]}" prep cifar10 --src "$WORK/cifar" --out "$O/pc"
[ ! -e "$O/pc" ] || fail "a failed CIFAR import left $O/pc"

# ---- 11. a failed reshard removes the directories it made ----
cp -r "$WORK/ck8/step_00000002" "$WORK/tr"
truncate -s 100 "$(ls "$WORK"/tr/shard_*.bin | head -1)"
expect_fail reshard_truncated "is truncated" "${SV[@]}" reshard "$WORK/tr" "$O/new/deep/dir/rs" --world 2
[ ! -e "$O/new" ] || fail "a failed reshard left the directories it made: $(find "$O/new" | head -3)"

# ---- 12. predict with too many image paths ----
cd "$O" # short relative paths: 65537 of them stay far below the kernel's argument limit
expect_fail predict_many "too many arguments: at most 65536" \
    "${SV[@]}" predict --ckpt "$WORK/r8" $(yes g.jpg | head -65537)
cd - >/dev/null

# ---- 13. bench --sweep: refused before its first row ----
S13="$WORK/s13"
mkdir -p "$S13"
expect_fail sweep_trace_part "--sweep-csv $S13/tp.json.rank0 and --trace part $S13/tp.json.rank0 are the same file" \
    "${SV[@]}" "${BENCH[@]}" --sweep batch=4,8 --trace "$S13/tp.json" --sweep-csv "$S13/tp.json.rank0"
expect_fail sweep_trace_part1 "--sweep-jsonl $S13/tp.json.rank1 and --trace part $S13/tp.json.rank1 are the same file" \
    timeout 120 "$MPIEXEC" -n 2 "$SHARDVIT" "${BENCH[@]}" --sweep batch=4,8 --trace "$S13/tp.json" \
    --sweep-jsonl "$S13/tp.json.rank1"
[ -z "$(ls -A "$S13")" ] || fail "a refused sweep wrote: $(ls -A "$S13")"
for item in "param-dtype=fp32,fp16|--param-dtype 'fp16'" "strategy=full_shard,bogus|--strategy 'bogus'" \
    "models=vit-28,nosuch|unknown model 'nosuch'" "batch=4,6 --accum 4|--batch-size 6 must be divisible"; do
    sweep=${item%%|*} pat=${item#*|}
    expect_fail "sweep_value_${sweep%%=*}" "--sweep: configuration 2/2 .*$pat" \
        "${SV[@]}" "${BENCH[@]}" --sweep $sweep --sweep-csv "$S13/s.csv"
    grep -q "^sweep 1/2" "$WORK/sweep_value_${sweep%%=*}.log" && fail "--sweep $sweep: row 1 ran before the refusal"
    [ ! -e "$S13/s.csv" ] || fail "--sweep $sweep: a row was written before the refusal"
done

all_passed hostile_cli_outputs
