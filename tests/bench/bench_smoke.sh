#!/bin/bash
# Usage: bench_smoke.sh SHARDVIT [MPIEXEC]
# Runs `shardvit bench` briefly and checks the JSON it prints: one object, the required keys,
# sane values (positive throughput, per-rank entries = world size). Exit 77 when no Python
# interpreter is available to parse JSON.
set -u
SV=$1
MPIEXEC=${2:-}
PY=$(command -v python3 || command -v /usr/bin/python3 || true)
[ -n "$PY" ] || { echo "SKIP: no python3 to validate JSON"; exit 77; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
TINY="--model vit-28 --dim 32 --depth 2 --heads 2 --batch-size 8 --device cpu --threads 1"

check_train() { # FILE WORLD [CALIB: 1 = peaks measured (default), 0 = --calib-seconds 0]
    "$PY" - "$1" "$2" "${3:-1}" <<'PYEOF' || fail "train JSON check on $1"
import json, platform, sys
path, world, calib = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
lines = [l for l in open(path).read().splitlines() if l.strip()]
assert len(lines) == 1, "expected exactly one JSON line, got %d" % len(lines)
d = json.loads(lines[0])
for k in ("img_per_s", "tflops", "mfu", "peak_mem_bytes", "max_rss_bytes", "time_split", "per_rank",
          "img_per_s_per_rank", "flops_per_image", "world", "steps", "peak_flops", "peak_kind", "mfu_gemm",
          "gemm_peak_per_core_flops", "gemm_peak_dtype", "hw_peak_per_core_flops", "hw_peak_engine",
          "hw_peak_flops", "cores_used"):
    assert k in d, "missing key " + k
assert d["mode"] == "train" and d["world"] == world and d["steps"] == 2
assert d["img_per_s"] > 0 and d["tflops"] > 0 and d["peak_mem_bytes"] > 0
assert d["mfu"] is None or d["mfu"] > 0
# the CPU peak is measured in the run's own precision (fp32 sgemm, or the bf16 GEMM)
if d.get("gemm_peak_per_core_flops") is not None:
    assert d["gemm_peak_dtype"] == d["param_dtype"], (d["gemm_peak_dtype"], d["param_dtype"])
close = lambda a, b: abs(a - b) <= 1e-6 * abs(b)
achieved = d["tflops"] * 1e12
if not calib:  # --calib-seconds 0 disables both peaks, so there is no CPU MFU
    for k in ("mfu", "mfu_gemm", "peak_flops", "gemm_peak_per_core_flops", "hw_peak_per_core_flops",
              "hw_peak_engine", "hw_peak_flops"):
        assert d[k] is None, (k, d[k])
    assert d["peak_kind"] == "unknown", d["peak_kind"]
else:
    # mfu_gemm: against the measured GEMM peak x cores used (the earlier meaning of mfu)
    assert d["gemm_peak_per_core_flops"] > 0 and d["mfu_gemm"] > 0
    assert close(d["mfu_gemm"], achieved / (d["gemm_peak_per_core_flops"] * d["cores_used"])), d["mfu_gemm"]
    # the hardware peak: the ISA peak of the engine the device name says the run uses
    eng = d["hw_peak_engine"]
    assert eng in ("amx-bf16", "avx512-bf16", "avx512-f32", "avx2-f32", "openblas", "openblas-threaded"), eng
    dev = d["device"]
    assert ("gemm " + eng) in dev or (eng == "openblas" and "gemm " not in dev), (eng, dev)
    flags = ""
    try:
        flags = next(l for l in open("/proc/cpuinfo") if l.startswith("flags"))
    except (OSError, StopIteration):
        pass
    if platform.machine() == "x86_64" and " fma" in flags:  # then every engine's instruction is there
        assert d["hw_peak_flops"] is not None, "no ISA peak on an x86-64 CPU with FMA"
    if d["hw_peak_flops"] is not None:
        assert d["peak_kind"] == "isa", d["peak_kind"]
        assert d["hw_peak_per_core_flops"] > 0
        assert close(d["hw_peak_flops"], d["hw_peak_per_core_flops"] * d["cores_used"])
        assert close(d["peak_flops"], d["hw_peak_flops"])
        assert close(d["mfu"], achieved / d["hw_peak_flops"]), (d["mfu"], achieved / d["hw_peak_flops"])
    else:
        assert d["peak_kind"] == "measured_gemm" and close(d["mfu"], d["mfu_gemm"]), (d["peak_kind"], d["mfu"])
assert len(d["per_rank"]) == world and len(d["img_per_s_per_rank"]) == world
for k in ("compute_s", "comm_exposed_s", "data_wait_s", "optimizer_s", "other_s"):
    assert k in d["time_split"], "time_split lacks " + k
    assert d["time_split"][k] >= -1e-3, (k, d["time_split"][k])
assert d["time_split"]["compute_s"] > 0
# the FLOP count is 3 x forward: check against an independent count for this tiny model
D, L, T, K, Hd, C, p = 32, 2, 50, 10, 128, 1, 4
fwd = 2 * ((T - 1) * D * C * p * p + L * (T * (4 * D * D + 2 * D * Hd) + 2 * T * T * D) + D * K)
assert abs(d["flops_per_image"] - 3 * fwd) < 1e-6 * fwd, (d["flops_per_image"], 3 * fwd)
for r in d["per_rank"]:
    assert r["arena_bytes"] > 0 and r["max_rss_bytes"] > 0 and r["img_per_s"] > 0
print("ok", path, "img/s %.1f" % d["img_per_s"])
PYEOF
}

# world 1, JSON to a file; the summary goes to stderr
"$SV" bench $TINY --steps 2 --warmup 1 --calib-seconds 0.05 --json "$TMP/w1.json" \
    >"$TMP/w1.out" 2>"$TMP/w1.err" || { cat "$TMP/w1.err"; fail "bench world 1 exited $?"; }
[ -s "$TMP/w1.out" ] && fail "stdout not empty with --json"
grep -q "img/s" "$TMP/w1.err" || fail "no human summary on stderr"
check_train "$TMP/w1.json" 1
"$SV" bench $TINY --param-dtype bf16 --steps 2 --warmup 1 --calib-seconds 0.05 --json "$TMP/w1b.json" \
    2>"$TMP/w1b.err" || { cat "$TMP/w1b.err"; fail "bench world 1 bf16 exited $?"; }
check_train "$TMP/w1b.json" 1
"$SV" bench $TINY --steps 2 --warmup 1 --calib-seconds 0 --json "$TMP/w1n.json" \
    2>"$TMP/w1n.err" || { cat "$TMP/w1n.err"; fail "bench world 1 --calib-seconds 0 exited $?"; }
check_train "$TMP/w1n.json" 1 0
grep -q "MFU" "$TMP/w1n.err" && fail "an MFU line with --calib-seconds 0"
if "$PY" -c "import json,sys; sys.exit(json.load(open(sys.argv[1]))['hw_peak_flops'] is None)" "$TMP/w1.json"; then
    grep -q "of ISA peak" "$TMP/w1.err" || fail "summary lacks the ISA-peak MFU: $(grep MFU "$TMP/w1.err")"
fi
grep -q "of measured fp32 GEMM peak" "$TMP/w1.err" || fail "summary lacks the GEMM-peak MFU"
# OpenBLAS threading inside a call (SHARDVIT_CPU_GEMM=blas): the same ISA peak as openblas, the
# widest fp32 FMA (it was a measured-GEMM peak "for lack of an ISA peak")
SHARDVIT_CPU_GEMM=blas "$SV" bench $TINY --steps 2 --warmup 1 --calib-seconds 0.05 --json "$TMP/w1blas.json" \
    2>"$TMP/w1blas.err" || { cat "$TMP/w1blas.err"; fail "bench SHARDVIT_CPU_GEMM=blas exited $?"; }
check_train "$TMP/w1blas.json" 1
grep -q "gemm openblas-threaded = widest fp32 FMA" "$TMP/w1blas.err" ||
    fail "SHARDVIT_CPU_GEMM=blas: no ISA peak: $(grep MFU "$TMP/w1blas.err" | head -1)"

# world 2 (FSDP over MPI ranks), JSON on stdout
if [ -n "$MPIEXEC" ]; then
    "$MPIEXEC" -n 2 "$SV" bench $TINY --steps 2 --warmup 1 --calib-seconds 0.05 \
        >"$TMP/w2.json" 2>"$TMP/w2.err" || { cat "$TMP/w2.err"; fail "bench world 2 exited $?"; }
    check_train "$TMP/w2.json" 2
    "$MPIEXEC" -n 2 "$SV" bench --comm --comm-min 4K --comm-max 64K --device cpu \
        >"$TMP/comm.json" 2>"$TMP/comm.err" || { cat "$TMP/comm.err"; fail "bench --comm exited $?"; }
    "$PY" - "$TMP/comm.json" <<'PYEOF' || fail "comm JSON check"
import json, sys
d = json.loads(open(sys.argv[1]).read())
assert d["mode"] == "comm" and d["world"] == 2
ops = {r["op"] for r in d["results"]}
assert ops == {"all_gather", "reduce_scatter", "all_reduce", "broadcast"}, ops
sizes = sorted({r["size_bytes"] for r in d["results"]})
assert sizes == [4096, 16384, 65536], sizes
# nccl-tests' bus bandwidth for n = 2: all_gather, reduce_scatter (n-1)/n; all_reduce 2(n-1)/n; broadcast 1
factor = {"all_gather": 0.5, "reduce_scatter": 0.5, "all_reduce": 1.0, "broadcast": 1.0}
for r in d["results"]:
    assert r["time_us"] > 0
    assert abs(r["algbw_gbps"] - r["size_bytes"] / (r["time_us"] * 1e-6) / 1e9) <= 1e-9 * r["algbw_gbps"], r
    assert abs(r["busbw_gbps"] - r["algbw_gbps"] * factor[r["op"]]) < 1e-9 * max(1, r["algbw_gbps"]), r
print("ok comm")
PYEOF
fi

# single ops
for op in matmul attention layernorm gelu softmax_xent adamw; do
    "$SV" bench --op $op $TINY --steps 2 --warmup 1 >"$TMP/op.json" 2>"$TMP/op.err" \
        || { cat "$TMP/op.err"; fail "bench --op $op exited $?"; }
    "$PY" - "$TMP/op.json" "$op" <<'PYEOF' || fail "op JSON check ($op)"
import json, sys
d = json.loads(open(sys.argv[1]).read())
assert d["mode"] == "op" and d["op"] == sys.argv[2]
assert d["results"] and all(r["best_s"] > 0 and r["rate_best"] > 0 for r in d["results"]), d
PYEOF
done

# usage errors exit 2 with a message naming the flag
"$SV" bench --op nosuch $TINY >/dev/null 2>"$TMP/bad.err"; rc=$?
[ $rc -eq 2 ] || fail "--op nosuch exited $rc, expected 2"
grep -q -- "--op" "$TMP/bad.err" || fail "error does not name --op: $(cat "$TMP/bad.err")"
"$SV" bench --synthetic --data synthetic $TINY >/dev/null 2>&1; rc=$?
[ $rc -eq 2 ] || fail "--synthetic --data exited $rc, expected 2"
echo "bench_smoke: all checks passed"
