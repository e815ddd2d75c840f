#!/usr/bin/env bash
# Output paths of report, bench and plan follow the rules of docs/checkpoints.md "Outputs"
# (ckpt/ckpt_out.h): a FIFO is refused without blocking, a symbolic link is refused (neither it
# nor its target changes), nothing is written into a checkpoint step directory or over a root's
# `latest`, report never replaces its own inputs or an existing file that is not an earlier
# report; no existing file is replaced unless it is an earlier output of the same kind (bench
# --json / --sweep-jsonl: a bench result; --sweep-csv: the sweep header; --trace of bench, plan and
# train: a merged trace; train --save-params: a dump of the same size), a user's file is kept byte
# for byte; new paths are written, earlier outputs (a report, a bench result, ...) are re-written,
# bench --json is valid JSON, and no temporaries are left behind.
set -euo pipefail
SV=$1
PY=${PYTHON:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
fails=0
fail() {
    echo "FAIL: $*"
    fails=$((fails + 1))
}
# run LOG CMD...: must succeed
run() {
    local log=$1
    shift
    if ! timeout 120 "$@" >"$log" 2>&1; then
        echo "FAIL (setup or accepted case): $*"
        tail -20 "$log"
        exit 1
    fi
}
# refuse NAME CMD...: must exit non-zero, promptly (124 = it hung until the timeout), with a message
refuse() {
    local name=$1 rc=0
    shift
    timeout 20 "$@" >out.log 2>&1 || rc=$?
    if [ "$rc" = 0 ]; then
        fail "$name: accepted ($*)"
    elif [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
        fail "$name: hung until the timeout ($*)"
    elif ! grep -q "refusing\|choose" out.log; then
        fail "$name: no clear message ($*)"
        cat out.log
    fi
}

run prep.log "$SV" prep synthetic --out data --classes 4 --per-class 4 --test-per-class 2 --width 40 --height 32
MODEL=(--model vit-32 --img 32 --patch 8 --dim 32 --depth 1 --heads 2 --num-classes 4)
run train.log "$SV" train "${MODEL[@]}" --data data/train --batch-size 4 --steps 3 --ckpt-every 1 --threads 1 --workers 1 --out run
STEP=run/checkpoints/step_00000003
if [ ! -f "$STEP/index.json" ] || [ ! -f run/checkpoints/latest ]; then
    echo "FAIL: the training run left no checkpoint"
    exit 1
fi
cp "$STEP/index.json" index.copy
cp run/checkpoints/latest latest.copy
cp run/metrics.jsonl metrics.copy
cp run/config.toml config.copy
echo "the link's target" >target.copy
# fixtures: a fresh FIFO, symbolic link and target, and the checkpoint files as they were (so
# that each case below is checked on its own even when an earlier one failed)
fixtures() {
    rm -f fifo link target
    mkfifo fifo
    cp target.copy target
    ln -s target link
    cp index.copy "$STEP/index.json"
    cp latest.copy run/checkpoints/latest
}
fixtures
echo "notes the report must not destroy" >notes.txt
cp notes.txt notes.copy

BENCH=(bench "${MODEL[@]}" --batch-size 4 --steps 1 --warmup 0 --calib-seconds 0 --threads 1)
PLAN=(plan --simulate --device cpu "${MODEL[@]}" --batch-size 4 --world 2 --strategy full_shard --param-dtype fp32)

# every output flag against a FIFO, a symbolic link and a checkpoint's index.json
check_refusals() { # NAME CMD... (the output path follows as the last argument)
    local name=$1
    shift
    fixtures
    refuse "$name FIFO" "$@" fifo
    [ -p fifo ] || fail "$name: the FIFO is no longer a FIFO"
    refuse "$name symlink" "$@" link
    if [ ! -L link ] || [ "$(readlink link)" != target ]; then fail "$name: the symbolic link was replaced"; fi
    cmp -s target target.copy || fail "$name: the link's target was changed"
    refuse "$name index.json" "$@" "$STEP/index.json"
    cmp -s "$STEP/index.json" index.copy || fail "$name: the checkpoint's index.json was changed"
    refuse "$name latest" "$@" run/checkpoints/latest
    cmp -s run/checkpoints/latest latest.copy || fail "$name: the checkpoint's latest was changed"
    refuse "$name new file in a step dir" "$@" "$STEP/new.out"
    [ ! -e "$STEP/new.out" ] || fail "$name: wrote a new file into a checkpoint step directory"
}
check_refusals "report --out" "$SV" report run --out
check_refusals "bench --json" "$SV" "${BENCH[@]}" --json
check_refusals "bench --trace" "$SV" "${BENCH[@]}" --trace
check_refusals "bench --sweep-csv" "$SV" "${BENCH[@]}" --sweep batch=4 --sweep-csv
check_refusals "bench --sweep-jsonl" "$SV" "${BENCH[@]}" --sweep batch=4 --sweep-jsonl
check_refusals "plan --trace" "$SV" "${PLAN[@]}" --trace

# report: its own inputs, the run's checkpoint root, an unrelated file
refuse "report over metrics.jsonl" "$SV" report run --out run/metrics.jsonl
cmp -s run/metrics.jsonl metrics.copy || fail "report: metrics.jsonl was changed"
refuse "report over config.toml" "$SV" report run --out run/config.toml
cmp -s run/config.toml config.copy || fail "report: config.toml was changed"
refuse "report as eval.json" "$SV" report run --out run/eval.json
[ ! -e run/eval.json ] || fail "report: wrote run/eval.json, an input of later reports"
refuse "report into the checkpoint root" "$SV" report run --out run/checkpoints/report.html
[ ! -e run/checkpoints/report.html ] || fail "report: wrote into the run's checkpoint root"
refuse "report over an unrelated file" "$SV" report run --out notes.txt
cmp -s notes.txt notes.copy || fail "report: notes.txt was changed"

# accepted: a new path, the same path again (an earlier report is replaced), the default path
run rep1.log "$SV" report run --out new.html
head -c 200 new.html | grep -q "shardvit report" || fail "report: new.html is not a report"
echo "STALE-MARKER" >>new.html
run rep2.log "$SV" report run --out new.html
grep -q "STALE-MARKER" new.html && fail "report: the earlier report was not replaced"
run rep3.log "$SV" report run
run rep4.log "$SV" report run
[ -s run/report.html ] || fail "report: no run/report.html"
cmp -s run/metrics.jsonl metrics.copy || fail "report: metrics.jsonl changed by a report"

# accepted: bench --json to a new file is valid JSON; --sweep to new CSV / JSONL; --trace
run bench1.log "$SV" "${BENCH[@]}" --json b.json
"$PY" -c 'import json, sys; d = json.load(open(sys.argv[1])); assert "img_per_s" in d' b.json ||
    fail "bench --json: b.json is not the JSON result"
run bench2.log "$SV" "${BENCH[@]}" --json b.json
"$PY" -c 'import json, sys; json.load(open(sys.argv[1]))' b.json || fail "bench --json: rewritten b.json is not JSON"
run sweep.log "$SV" "${BENCH[@]}" --sweep batch=4,8 --sweep-csv s.csv --sweep-jsonl s.jsonl
[ "$(wc -l <s.csv)" = 3 ] || fail "bench --sweep-csv: expected a header and 2 rows"
[ "$(wc -l <s.jsonl)" = 2 ] || fail "bench --sweep-jsonl: expected 2 lines"
run btrace.log "$SV" "${BENCH[@]}" --trace bt.json
"$PY" -c 'import json, sys; json.load(open(sys.argv[1]))' bt.json || fail "bench --trace: bt.json is not JSON"
run ptrace.log "$SV" "${PLAN[@]}" --trace pt.json
[ -s pt.json ] || fail "plan --trace: no pt.json"
# a file of a trace part's name ("<trace>.rank<r>", written and removed by the merge) is not
# someone else's to replace: bench, plan and train refuse it at start-up and it survives
echo "my notes" >mine.json.rank0
refuse "bench --trace part" "$SV" "${BENCH[@]}" --trace mine.json
refuse "plan --trace part" "$SV" "${PLAN[@]}" --trace mine.json
refuse "train --trace part" "$SV" train "${MODEL[@]}" --data data/train --batch-size 4 --steps 1 --threads 1 --trace mine.json
[ "$(cat mine.json.rank0)" = "my notes" ] || fail "a file named like a trace part was replaced"
[ ! -e mine.json ] || fail "a refused --trace wrote its output"
# ... but a part an earlier run left (killed between writing its parts and merging them) does not
# block the next run: it is replaced and merged away (before: every later run was refused)
printf '{"ph":"M","name":"process_name","pid":0,"args":{"name":"rank 0"}}' >left.json.rank0
run left.log "$SV" "${BENCH[@]}" --trace left.json
"$PY" -c 'import json, sys; json.load(open(sys.argv[1]))' left.json || fail "bench --trace over a left part: no trace"
[ ! -e left.json.rank0 ] || fail "the earlier run's part is still there after the merge"

# a user's file at an output path (text, a binary shard, another kind of shardvit output) is kept
# byte for byte: the command refuses it at start-up naming the path; an earlier output of the
# same kind is replaced (re-running the same command works)
TRAIN=(train "${MODEL[@]}" --data data/train --batch-size 4 --steps 1 --threads 1 --workers 1)
cp "$(ls "$STEP"/shard_*.bin | head -1)" shard.copy
printf 'a,b\n1,2\n' >user.csv
echo '{"provenance": {"command": "train"}}' >user.jsonl
keeps() { # NAME USER_FILE CMD... (the output path user.out follows as the last argument)
    local name=$1 src=$2
    shift 2
    rm -f user.out
    cp "$src" user.out
    refuse "$name over $src" "$@" user.out
    grep -q "user.out exists and is not an earlier .*refusing to replace it" out.log ||
        fail "$name over $src: no message naming the path ($(tail -1 out.log | cut -c1-200))"
    cmp -s user.out "$src" || fail "$name: the user's $src at the output path was changed"
}
for src in notes.txt shard.copy b.json bt.json user.csv user.jsonl; do
    case $src in b.json | user.jsonl) ;; *)
        keeps "bench --json" "$src" "$SV" "${BENCH[@]}" --json
        keeps "bench --sweep-jsonl" "$src" "$SV" "${BENCH[@]}" --sweep batch=4 --sweep-jsonl ;;
    esac
    [ "$src" = bt.json ] || keeps "bench --trace" "$src" "$SV" "${BENCH[@]}" --trace
    [ "$src" = bt.json ] || keeps "plan --trace" "$src" "$SV" "${PLAN[@]}" --trace
    [ "$src" = bt.json ] || keeps "train --trace" "$src" "$SV" "${TRAIN[@]}" --trace
    keeps "bench --sweep-csv" "$src" "$SV" "${BENCH[@]}" --sweep batch=4 --sweep-csv
    keeps "train --save-params" "$src" "$SV" "${TRAIN[@]}" --save-params
done
# earlier outputs of the same kind: a marker appended to each is gone after the same command again
for f in b.json s.csv s.jsonl bt.json pt.json; do echo "STALE-MARKER" >>"$f"; done
run bench3.log "$SV" "${BENCH[@]}" --json b.json --trace bt.json
run sweep2.log "$SV" "${BENCH[@]}" --sweep batch=4 --sweep-csv s.csv --sweep-jsonl s.jsonl
run ptrace2.log "$SV" "${PLAN[@]}" --trace pt.json
for f in b.json s.csv s.jsonl bt.json pt.json; do
    grep -q "STALE-MARKER" "$f" && fail "$f: the earlier output was not replaced"
done
[ "$(wc -l <s.csv)" = 2 ] || fail "bench --sweep-csv: the rewritten s.csv is not a header and 1 row"
run ttrace1.log "$SV" "${TRAIN[@]}" --trace tt.json
echo "STALE-MARKER" >>tt.json
run ttrace2.log "$SV" "${TRAIN[@]}" --trace tt.json
grep -q "STALE-MARKER" tt.json && fail "train --trace: the earlier trace was not replaced"
"$PY" -c 'import json, sys; json.load(open(sys.argv[1]))' tt.json || fail "train --trace: tt.json is not JSON"
# a parameter dump has no header: an earlier dump of the same model (exactly 4 bytes per
# parameter) is replaced, one of another size (another model, a truncated copy) is not
run params1.log "$SV" "${TRAIN[@]}" --save-params p.bin
cp p.bin p.first
run params2.log "$SV" "${TRAIN[@]}" --steps 2 --save-params p.bin
cmp -s p.bin p.first && fail "train --save-params: the earlier dump was not replaced"
head -c -4 p.first >short.bin
keeps "train --save-params" short.bin "$SV" "${TRAIN[@]}" --save-params

# nothing was left behind: no temporaries, the protected files as they were
left=$(find . -name '*.tmp-*' -o -name '*.tmp.*' | head -5)
[ -z "$left" ] || fail "temporaries left behind: $left"
cmp -s "$STEP/index.json" index.copy || fail "index.json changed"
[ -p fifo ] || fail "the FIFO changed"

if [ "$fails" != 0 ]; then
    echo "$fails check(s) failed"
    exit 1
fi
echo "ok: report, bench and plan outputs follow the output rules"
