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
#  14. bench-compare refuses results of different models / problem sizes, naming the field: train
#      results of another --mlp-ratio and --num-classes (mlp_ratio; params for results from before
#      it was recorded), of another recorded architecture option (global_pool), --op adamw at depth
#      1 vs 12 (params), --op softmax_xent at 10 vs 5000 classes (num_classes; for results from
#      before these fields were recorded, the rows' bytes);
#      a field absent from one result only is a note, absent from both no difference; MFUs against
#      different peaks print a note naming both and mfu ratio n/a (img/s ratio kept); bench --json
#      refuses to replace a sweep's JSONL of several rows, --sweep-jsonl a file with a line that is
#      not a bench result, and each still replaces its own earlier output.
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
    # shellcheck disable=SC2086 # $c: the words are the arguments
    "$SHARDVIT" $c >/dev/full 2>"$WORK/full.log" || rc=$?
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
# SIGKILL leaves the work directory (the process cannot remove it). Beside a file of someone else's
# the rerun names it and removes nothing; alone, the rerun removes it, says so, and imports.
if prep_stopped KILL "$O/pk"; then
    left=$(ls -d "$O/pk"/.prep.tmp-* 2>/dev/null) || fail "no work directory of the killed prep in $O/pk"
    echo mine >"$O/pk/notes.txt"
    before=$(tree_sum "$O/pk")
    expect_fail prep_rerun_beside "holds $O/pk/.prep.tmp-[0-9a-f]*, the partial output of a prep that was interrupted .*beside other files" \
        "${SV[@]}" prep synthetic --classes 10 --per-class 400 --test-per-class 10 --out "$O/pk"
    [ "$(tree_sum "$O/pk")" = "$before" ] || fail "a refused prep changed $O/pk"
    rm "$O/pk/notes.txt"
    expect_ok prep_rerun "${SV[@]}" prep synthetic --classes 10 --per-class 400 --test-per-class 10 --out "$O/pk"
    grep -q "removing $left, the partial output of a prep that was killed" "$WORK/prep_rerun.log" ||
        fail "the rerun did not name the work directory it removed: $(grep -m1 removing "$WORK/prep_rerun.log")"
    [ -e "$O/pk/.shardvit-prep" ] && [ "$(find "$O/pk/train" -name '*.jpg' | wc -l)" = 4000 ] ||
        fail "the rerun after a killed prep did not import: $(ls -A "$O/pk")"
    ls -d "$O/pk"/.prep.tmp-* >/dev/null 2>&1 && fail "a work directory is left in $O/pk after the rerun"
    echo "ok prep after SIGKILL: the rerun removed $left and imported"
fi
# every work directory nobody holds goes (nine, as after nine killed preps); a directory whose
# name is not one prep gives (.prep.tmp- and 8 hex digits) is a user's: kept, and OUT refused
mkdir -p "$O/p9"
for i in 1 2 3 4 5 6 7 8 9; do mkdir "$O/p9/.prep.tmp-0000000$i" && echo part >"$O/p9/.prep.tmp-0000000$i/x"; done
expect_ok prep_nine "${SV[@]}" prep synthetic --classes 2 --per-class 2 --test-per-class 1 --width 16 --height 16 --out "$O/p9"
[ "$(grep -c "removing $O/p9/.prep.tmp-0000000., the partial output" "$WORK/prep_nine.log")" = 9 ] ||
    fail "nine work directories: $(grep -c removing "$WORK/prep_nine.log") removed"
ls -d "$O/p9"/.prep.tmp-* >/dev/null 2>&1 && fail "work directories left beside the import in $O/p9"
mkdir -p "$O/pu/.prep.tmp-my-backup" && echo mine >"$O/pu/.prep.tmp-my-backup/data.txt"
before=$(tree_sum "$O/pu")
expect_fail prep_user_dir "is not empty \(it holds '.prep.tmp-my-backup'" \
    "${SV[@]}" prep synthetic --classes 2 --per-class 2 --test-per-class 1 --width 16 --height 16 --out "$O/pu"
[ "$(tree_sum "$O/pu")" = "$before" ] || fail "prep changed $O/pu, a directory of the user's"
# a directory under a starting prep's first name (.prep.new.tmp-XXXXXXXX: not flocked yet) is never
# taken for a killed prep's: OUT refused naming it, nothing removed
mkdir -p "$O/pn/.prep.new.tmp-0badcafe"
expect_fail prep_starting "holds $O/pn/.prep.new.tmp-0badcafe: a prep starting there now" \
    "${SV[@]}" prep synthetic --classes 2 --per-class 2 --test-per-class 1 --width 16 --height 16 --out "$O/pn"
[ -d "$O/pn/.prep.new.tmp-0badcafe" ] || fail "prep removed $O/pn/.prep.new.tmp-0badcafe"
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

# ---- 14. bench-compare: same model, same problem size, same peak; bench's earlier outputs ----
B13=(bench --model vit-28 --dim 32 --depth 2 --heads 2 --batch-size 8 --steps 2 --warmup 1 --calib-seconds 0 --threads 1)
expect_ok tr_a "${SV[@]}" "${B13[@]}" --json "$O/ta.json"
expect_ok tr_b "${SV[@]}" "${B13[@]}" --mlp-ratio 1 --num-classes 1000 --json "$O/tb.json"
expect_fail cmp_model "refusing to compare: mlp_ratio differs \(.*ta.json: 4, .*tb.json: 1\)" \
    "${SV[@]}" bench-compare "$O/ta.json" "$O/tb.json"
"$PY" - "$O" <<'EOF' || fail "bench did not record the model's identity fields"
import json, sys
o = sys.argv[1]
a = json.load(open(o + "/ta.json"))
new = ("mlp_ratio", "num_classes", "in_chans", "reg_tokens", "class_token", "global_pool", "no_embed_class",
       "layer_scale")
old = {k: v for k, v in a.items() if k not in new}  # a result from before these fields
json.dump(old, open(o + "/told.json", "w"))
json.dump(old, open(o + "/told2.json", "w"))
b = json.load(open(o + "/tb.json"))
json.dump({k: v for k, v in b.items() if k not in new}, open(o + "/toldb.json", "w"))
json.dump(dict(a, global_pool="avg"), open(o + "/tpool.json", "w"))  # only a recorded option differs
# the same run measured against another peak (another --cpu-gemm engine or machine)
p = dict(a, peak_kind="isa", peak_flops=268.6e9, hw_peak_engine="avx512-f32", mfu=0.02)
q = dict(a, peak_kind="isa", peak_flops=135.0e9, hw_peak_engine="avx2-f32", mfu=0.04, img_per_s=a["img_per_s"] / 2)
json.dump(p, open(o + "/tpa.json", "w"))
json.dump(q, open(o + "/tpb.json", "w"))
missing = [k for k in new if k not in a]
assert not missing, f"bench did not record {missing}"
EOF
expect_fail cmp_pool "refusing to compare: global_pool differs \(.*ta.json: token, .*tpool.json: avg\)" \
    "${SV[@]}" bench-compare "$O/ta.json" "$O/tpool.json"
expect_fail cmp_model_old "refusing to compare: params differs \(.*told.json: 27978, .*toldb.json: 48168\)" \
    "${SV[@]}" bench-compare "$O/told.json" "$O/toldb.json"
expect_ok cmp_old_old "${SV[@]}" bench-compare "$O/told.json" "$O/told2.json"
grep -q "not recorded" "$WORK/cmp_old_old.log" && fail "cmp_old_old: a field absent from both results was noted"
expect_ok cmp_old_new "${SV[@]}" bench-compare "$O/told.json" "$O/ta.json"
grep -q "note: mlp_ratio is not recorded in $O/told.json" "$WORK/cmp_old_new.log" ||
    fail "cmp_old_new: no note that told.json lacks mlp_ratio: $(cat "$WORK/cmp_old_new.log")"
expect_ok cmp_peak "${SV[@]}" bench-compare "$O/tpa.json" "$O/tpb.json"
grep -qF "note: the results' MFU is against different peaks (A: isa peak 2.686e+11 FLOP/s, engine avx512-f32; B: isa peak 1.35e+11 FLOP/s, engine avx2-f32)" \
    "$WORK/cmp_peak.log" || fail "cmp_peak: no note naming both peaks: $(cat "$WORK/cmp_peak.log")"
grep -Eq "^  mfu +0.02 +0.04 +B/A n/a$" "$WORK/cmp_peak.log" ||
    fail "cmp_peak: an mfu ratio across peaks: $(grep mfu "$WORK/cmp_peak.log")"
grep -Eq "^  img_per_s .*B/A 0.5000$" "$WORK/cmp_peak.log" || fail "cmp_peak: img/s ratio not shown: $(cat "$WORK/cmp_peak.log")"
# --op: the sizes of the op
OPB=(bench --model vit-28 --dim 32 --heads 2 --batch-size 4 --steps 1 --warmup 0 --threads 1)
expect_ok op_d1 "${SV[@]}" "${OPB[@]}" --depth 1 --op adamw --json "$O/od1.json"
expect_ok op_d12 "${SV[@]}" "${OPB[@]}" --depth 12 --op adamw --json "$O/od12.json"
expect_fail cmp_op_depth "refusing to compare: params differs" "${SV[@]}" bench-compare "$O/od1.json" "$O/od12.json"
expect_ok op_k10 "${SV[@]}" "${OPB[@]}" --depth 1 --num-classes 10 --op softmax_xent --json "$O/ok10.json"
expect_ok op_k5000 "${SV[@]}" "${OPB[@]}" --depth 1 --num-classes 5000 --op softmax_xent --json "$O/ok5000.json"
expect_fail cmp_op_classes "refusing to compare: num_classes differs" \
    "${SV[@]}" bench-compare "$O/ok10.json" "$O/ok5000.json"
"$PY" - "$O" <<'EOF' || fail "bench --op did not record params / num_classes"
import json, sys
o = sys.argv[1]
for f in ("od1", "od12", "ok10", "ok5000"):
    d = json.load(open(f"{o}/{f}.json"))
    have = "params" in d and "num_classes" in d
    d.pop("params", None), d.pop("num_classes", None)  # as results from before these fields
    json.dump(d, open(f"{o}/{f}_old.json", "w"))
    assert have, f"{f}: --op result lacks params / num_classes"
EOF
expect_fail cmp_op_depth_old "refusing to compare: variant [a-z0-9_]+: bytes differs" \
    "${SV[@]}" bench-compare "$O/od1_old.json" "$O/od12_old.json"
expect_fail cmp_op_classes_old "refusing to compare: variant [a-z0-9_]+: bytes differs" \
    "${SV[@]}" bench-compare "$O/ok10_old.json" "$O/ok5000_old.json"
expect_ok cmp_op_same_old "${SV[@]}" bench-compare "$O/od1_old.json" "$O/od1.json"
# bench --json over a sweep's JSONL of several rows; --sweep-jsonl over a file with a foreign line
expect_ok sweep3 "${SV[@]}" "${B13[@]}" --sweep batch=4,8,16 --sweep-jsonl "$O/s3.jsonl"
[ "$(wc -l <"$O/s3.jsonl")" = 3 ] || fail "sweep3: expected 3 rows"
cp "$O/s3.jsonl" "$O/s3.orig"
expect_fail json_over_jsonl "--json $O/s3.jsonl exists and is not an earlier bench result" \
    "${SV[@]}" "${B13[@]}" --json "$O/s3.jsonl"
cmp -s "$O/s3.jsonl" "$O/s3.orig" || fail "json_over_jsonl: the sweep's JSONL was changed"
{
    cat "$O/s3.orig"
    echo '{"note": "mine"}'
} >"$O/s4.jsonl"
cp "$O/s4.jsonl" "$O/s4.orig"
expect_fail jsonl_foreign "--sweep-jsonl $O/s4.jsonl exists and is not an earlier sweep JSONL" \
    "${SV[@]}" "${B13[@]}" --sweep batch=4 --sweep-jsonl "$O/s4.jsonl"
cmp -s "$O/s4.jsonl" "$O/s4.orig" || fail "jsonl_foreign: the file was changed"
expect_ok jsonl_again "${SV[@]}" "${B13[@]}" --sweep batch=4 --sweep-jsonl "$O/s3.jsonl"
[ "$(wc -l <"$O/s3.jsonl")" = 1 ] || fail "jsonl_again: an earlier sweep JSONL was not replaced"
expect_ok json_again "${SV[@]}" "${B13[@]}" --json "$O/ta.json"
all_passed hostile_cli_outputs
