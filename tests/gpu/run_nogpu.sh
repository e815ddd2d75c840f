#!/usr/bin/env bash
# tests/gpu/run.sh on a machine without a GPU (exit 77 where nvidia-smi lists one):
#  1. --deadline 60: ends well inside the deadline with exit 1; OUT holds exactly report.md,
#     report.json, steps.tsv, environment.txt and logs.tgz; every stage is listed with a status
#     (libs pass, device fail "no CUDA device", the rest "skipped: no CUDA device"); the same
#     stage table without a python3 (SV_GPU_CHECK_PYTHON=none, --only libs,device);
#  2. --device cpu --deadline 30 with the fsdp_bf16 stage made to hang (SV_GPU_CHECK_HANG): the
#     tiny ViT comparison really runs (CPU vs CPU, max rel diff 0), the hung stage is stopped as
#     "timeout", what no longer fits is "skipped: deadline", and run.sh exits within the deadline;
#  3. SIGKILL of run.sh and every process under it while a (hung) stage runs: report.json still
#     parses, the report says incomplete, lists the stages done, the running one and the pending;
#  4. SIGTERM to run.sh alone while a stage runs: it stops the stage's processes, records
#     "stopped by SIGTERM" and exits 143 within seconds.
#   run_nogpu.sh BUILD_DIR
set -u
NAME=run_nogpu.sh
source "$(dirname "$0")/nogpu_lib.sh"
STAGES="libs device ops tiny_vit_fp32 fsdp_bf16 attn_drop_fp32 attn_drop_bf16 nccl bench_vit-s16 bench_vit-b16 sanitizer"

# check_out DIR: the five report files and nothing else (a .tmp left by a kill is allowed: <= 6)
check_out() {
    local n f
    n=$(find "$1" -mindepth 1 | wc -l)
    [ "$n" -le 6 ] || fail "$1 holds $n entries: $(ls -A "$1" | tr '\n' ' ')"
    for f in report.md report.json steps.tsv environment.txt logs.tgz; do [ -s "$1/$f" ] || fail "$1 lacks $f"; done
    tar -tzf "$1/logs.tgz" > /dev/null || fail "$1/logs.tgz is not a readable archive"
}
# every_stage_listed DIR: each stage is a row of report.md's stage table with a status
every_stage_listed() {
    local s
    for s in $STAGES; do
        grep -qE "^\| $s \| (pass|fail|timeout|skipped|running|pending)" "$1/report.md" ||
            fail "report.md of $1 does not list stage $s with a status"
    done
}
verdict() { "$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["verdict"])' "$1/report.json"; }
descendants() { # PID: every process under PID (children first listed after their parent)
    local c
    for c in $(ps -o pid= --ppid "$1" 2> /dev/null); do
        echo "$c"
        descendants "$c"
    done
}
wait_running() { # OUT STAGE: until report.json says STAGE is running (30 s at most)
    for _ in $(seq 1 120); do
        [ -s "$1/report.json" ] && [ "$(status "$1" "$2" 2> /dev/null | cut -d: -f1)" = running ] && return 0
        sleep 0.25
    done
    fail "stage $2 never showed as running in $1/report.json"
}

# ---- 1. no GPU, the default device ----
t0=$(date +%s)
OUT=$T/o1 bash "$RUN" --deadline 60 "$BUILD" > "$T/o1.log" 2>&1
rc=$?
el=$(($(date +%s) - t0))
[ $rc -eq 1 ] || fail "run.sh without a GPU exited $rc, not 1: $(tail -3 "$T/o1.log")"
[ $el -le 65 ] || fail "run.sh took $el s with --deadline 60"
check_out "$T/o1"
every_stage_listed "$T/o1"
[ "$(status "$T/o1" libs | cut -d: -f1)" = pass ] || fail "libs: $(status "$T/o1" libs)"
status "$T/o1" device | grep -q '^fail: no CUDA device' || fail "device: $(status "$T/o1" device)"
for s in ops tiny_vit_fp32 nccl bench_vit-b16 sanitizer; do
    [ "$(status "$T/o1" $s)" = "skipped: no CUDA device" ] || fail "$s: $(status "$T/o1" $s)"
done
grep -q '^| ops | skipped: no CUDA device |' "$T/o1/report.md" || fail "report.md does not say why ops was skipped"
grep -q '^== ldd app/shardvit' "$T/o1/environment.txt" || fail "environment.txt lacks the ldd of shardvit"
[ "$(verdict "$T/o1")" = fail ] || fail "verdict $(verdict "$T/o1")"
echo "1 ok: no GPU: exit 1 after $el s, 5 files, every stage listed"
SV_GPU_CHECK_PYTHON=none OUT=$T/o1b bash "$RUN" --deadline 60 --only libs,device "$BUILD" > "$T/o1b.log" 2>&1
check_out "$T/o1b"
every_stage_listed "$T/o1b"
[ "$(status "$T/o1b" device | cut -d: -f1)" = fail ] || fail "device without python3: $(status "$T/o1b" device)"
[ "$(status "$T/o1b" ops)" = "skipped: not selected (--only libs,device)" ] || fail "ops: $(status "$T/o1b" ops)"
echo "1b ok: without python3 the stage table is still written (report.md and a parseable report.json)"

# ---- 2. a hung stage under a short deadline (CPU self-test mode) ----
t0=$(date +%s)
# (fsdp_bf16 gets what is left of 30 s after the stages before it (about 5 s) and the 9 s kept
# for the report and the kill grace: less than its cap of 25 s, at least the 8 s a stage needs)
SV_GPU_CHECK_HANG=fsdp_bf16 OUT=$T/o2 bash "$RUN" --device cpu --deadline 30 "$BUILD" > "$T/o2.log" 2>&1
rc=$?
el=$(($(date +%s) - t0))
[ $rc -eq 1 ] || fail "run.sh with a hung stage exited $rc, not 1: $(tail -3 "$T/o2.log")"
[ $el -le 35 ] || fail "run.sh took $el s with --deadline 30"
check_out "$T/o2"
every_stage_listed "$T/o2"
status "$T/o2" tiny_vit_fp32 | grep -q '^pass: loss 4 steps max rel 0.00e+00.*grad_norm 4 steps max rel 0.00e+00' ||
    fail "tiny_vit_fp32 (CPU vs CPU): $(status "$T/o2" tiny_vit_fp32)"
status "$T/o2" fsdp_bf16 | grep -q '^timeout:' || fail "fsdp_bf16 (hung): $(status "$T/o2" fsdp_bf16)"
for s in attn_drop_fp32 bench_vit-b16; do
    status "$T/o2" $s | grep -q '^skipped: deadline' || fail "$s after the hung stage: $(status "$T/o2" $s)"
done
echo "2 ok: hung stage stopped as timeout, the rest skipped for the deadline, done after $el s of 30"

# ---- 3. SIGKILL of everything while a stage runs ----
SV_GPU_CHECK_HANG=tiny_vit_fp32 OUT=$T/o3 bash "$RUN" --device cpu --deadline 120 "$BUILD" > "$T/o3.log" 2>&1 &
pid=$!
wait_running "$T/o3" tiny_vit_fp32
procs="$pid $(descendants $pid)"
{
    kill -KILL $procs
    wait $pid
} 2> /dev/null # (no "Killed" notice)
check_out "$T/o3"
every_stage_listed "$T/o3"
[ "$(verdict "$T/o3")" = incomplete ] || fail "verdict after SIGKILL: $(verdict "$T/o3")"
[ "$(status "$T/o3" libs | cut -d: -f1)" = pass ] || fail "libs after SIGKILL: $(status "$T/o3" libs)"
[ "$(status "$T/o3" tiny_vit_fp32 | cut -d: -f1)" = running ] || fail "tiny_vit_fp32: $(status "$T/o3" tiny_vit_fp32)"
[ "$(status "$T/o3" sanitizer)" = pending ] || fail "sanitizer after SIGKILL: $(status "$T/o3" sanitizer)"
grep -q '^# shardvit GPU check: INCOMPLETE' "$T/o3/report.md" || fail "report.md after SIGKILL: $(head -1 "$T/o3/report.md")"
echo "3 ok: after SIGKILL the report lists libs..ops done, tiny_vit_fp32 running, the rest pending"

# ---- 4. SIGTERM to run.sh while a stage runs ----
SV_GPU_CHECK_HANG=tiny_vit_fp32 OUT=$T/o4 bash "$RUN" --device cpu --deadline 120 "$BUILD" > "$T/o4.log" 2>&1 &
pid=$!
wait_running "$T/o4" tiny_vit_fp32
procs=$(descendants $pid)
t0=$(date +%s)
kill -TERM $pid
wait $pid
rc=$?
el=$(($(date +%s) - t0))
left=""
for p in $procs; do kill -0 "$p" 2> /dev/null && left="$left $p"; done
[ -z "$left" ] || { kill -KILL $left 2> /dev/null; fail "processes left after SIGTERM:$left"; }
[ $rc -eq 143 ] || fail "run.sh exited $rc after SIGTERM, not 143"
[ $el -le 10 ] || fail "run.sh took $el s to stop after SIGTERM"
check_out "$T/o4"
status "$T/o4" tiny_vit_fp32 | grep -q '^fail: stopped by SIGTERM' || fail "tiny_vit_fp32: $(status "$T/o4" tiny_vit_fp32)"
[ "$(verdict "$T/o4")" = incomplete ] || fail "verdict after SIGTERM: $(verdict "$T/o4")"
echo "4 ok: SIGTERM stopped the stage and its processes in $el s, report written, exit 143"
