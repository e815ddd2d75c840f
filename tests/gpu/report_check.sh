#!/usr/bin/env bash
# tests/gpu/gpu_report.py on the ops.json shapes a GPU run can leave, without a GPU: a finished
# file whose rows carry an exact match, a non-finite result (rel_err null), a failed op call and
# the path fields (gemm_algo, attn_path); the same file cut off mid-row by a kill. The one-line
# summary and report.md must name the worst row, the failed call, the non-finite result and the
# path fields, and nothing may raise. Library versions without device_op.json: from a bench JSON's
# provenance, else a device training run's metrics.jsonl header, and report.md says which.
#   report_check.sh            (label cli; needs python3)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
PY=$(command -v python3 || true)
[ -n "$PY" ] || { echo "SKIP: python3 not found"; exit 77; }
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

mkdir -p "$W/work" "$W/out"
cat >"$W/work/ops.json" <<'EOF'
{"checks": 4, "failures": 2, "results": [
{"op": "gelu", "variant": "bf16", "output": "out", "rel_err": 0.0, "tol": 0, "ok": true, "repeat": true, "gemm_algo": "", "attn_path": ""},
{"op": "linear", "variant": "bf16", "output": "out", "rel_err": null, "tol": 0.03, "ok": false, "nonfinite": 5, "gemm_algo": "algo 6 tile 12"},
{"op": "linear", "variant": "fp32", "output": "d_in", "rel_err": 2.5e-4, "tol": 1e-3, "ok": true, "gemm_algo": "cublasGemmEx fallback"},
{"op": "attention", "variant": "fp32 T65", "output": "o", "ok": false, "error": "cuDNN refused the graph", "attn_path": "fallback: no engine"}
]}
EOF
printf 'ops\tfail\t3\t4 checks, 2 failed\n' >"$W/work/steps.tsv"

line=$("$PY" "$HERE/gpu_report.py" line ops "$W/work/ops.json")
echo "line: $line"
grep -q "4 checks, 2 failed" <<<"$line" || fail "summary counts missing"
grep -q "non-finite result (5 non-finite values)" <<<"$line" || fail "worst row is not the non-finite result"

"$PY" "$HERE/gpu_report.py" report "$W/work" "$W/out" --state final --deadline 60 --elapsed 5
md=$W/out/report.md
for want in "cuDNN refused the graph" "non-finite result" "gemm_algo=cublasGemmEx fallback" \
    "attn_path=fallback: no engine" "2.50e-04"; do
    grep -qF "$want" "$md" || fail "report.md lacks '$want'"
done
grep -q "gemm_algo=," "$md" && fail "an empty path field is listed"
"$PY" -c 'import json, sys; json.load(open(sys.argv[1]))' "$W/out/report.json" || fail "report.json is not JSON"

# cut off inside the third row, as a killed run leaves it
head -c "$(grep -b -o '"d_in"' "$W/work/ops.json" | cut -d: -f1)" "$W/work/ops.json" >"$W/work/ops.cut"
mv "$W/work/ops.cut" "$W/work/ops.json"
line=$("$PY" "$HERE/gpu_report.py" line ops "$W/work/ops.json")
echo "cut: $line"
grep -q "output cut off" <<<"$line" || fail "a cut-off ops.json is not marked"
grep -q "non-finite result" <<<"$line" || fail "the complete rows of a cut-off ops.json are not read"
"$PY" "$HERE/gpu_report.py" report "$W/work" "$W/out" --state final --deadline 60 --elapsed 5
grep -q "output cut off" "$W/out/report.md" || fail "report.md does not say the ops output was cut off"

# ---- library versions when device_op.json is missing (the device stage's bench failed) ----
# provenance as shardvit writes it on a GPU (app/provenance.c; docs/performance.md "Provenance")
gpu_prov='{"version":"0.1.0","commit":"abc","describe":"abc1234","dirty":false,
 "libraries":{"mpi":{"version":"MPICH Version: 4.0.2","file":"/x/libmpich.so.12"},
  "openblas":{"version":"OpenBLAS 0.3.21","file":"/x/libopenblas.so.0"},"nccl":"2.28.3",
  "cuda_runtime":"13.0","cudnn":91900,"cublaslt":130100},
 "gpu":{"name":"NVIDIA H200","driver":"13.0"},"command":"bench"}'
cpu_prov='{"version":"0.1.0","commit":"abc","describe":"abc1234","dirty":false,
 "libraries":{"mpi":null,"openblas":{"version":"OpenBLAS 0.3.21","file":"/x/libopenblas.so.0"},"nccl":null,
  "cuda_runtime":null,"cudnn":null,"cublaslt":null},"gpu":null,"command":"train"}'
versions() { # WORK: report.md's version rows
    "$PY" "$HERE/gpu_report.py" report "$1" "$W/out" --state final --deadline 60 --elapsed 5
    grep -E '^\| (CUDA runtime|cuBLASLt|cuDNN|NCCL|library versions from|device) \|' "$W/out/report.md"
}
# a) a benchmark's JSON (bench_vit-s16.json) and a CPU reference run's header: the GPU one wins
V=$W/v1
mkdir -p "$V/runs/tiny_vit_fp32_cpu"
printf '%s\tfail\t3\tno result\n' device > "$V/steps.tsv"
printf '{"record":"header","format":1,"provenance":%s}\n{"step":1,"loss":2.3}\n' "$(tr -d '\n' <<< "$cpu_prov")" \
    > "$V/runs/tiny_vit_fp32_cpu/metrics.jsonl"
printf '{"model":"vit-s16","img_per_s":1000,"provenance":%s}\n' "$(tr -d '\n' <<< "$gpu_prov")" > "$V/bench_vit-s16.json"
out=$(versions "$V")
echo "$out"
for want in "| CUDA runtime | 13.0 |" "| cuDNN | 9.19.0 (91900) |" "| cuBLASLt | 13.1.0 (130100) |" "| NCCL | 2.28.3 |" \
    "| library versions from | bench_vit-s16.json (not device_op.json"; do
    grep -qF "$want" <<< "$out" || fail "versions from a bench JSON: report.md lacks '$want'"
done
"$PY" -c 'import json,sys; s=json.load(open(sys.argv[1]))["summary"]; assert s["versions_from"]=="bench_vit-s16.json", s' \
    "$W/out/report.json" || fail "report.json's summary.versions_from"
# b) only a device training run's metrics.jsonl header (its first line)
V=$W/v2
mkdir -p "$V/runs/fsdp_bf16_dev" "$V/runs/fsdp_bf16_cpu"
printf '%s\tfail\t3\tno result\n' device > "$V/steps.tsv"
cp "$W/v1/runs/tiny_vit_fp32_cpu/metrics.jsonl" "$V/runs/fsdp_bf16_cpu/"
printf '{"record":"header","format":1,"provenance":%s}\n{"step":1,"loss":2.3}\n' "$(tr -d '\n' <<< "$gpu_prov")" \
    > "$V/runs/fsdp_bf16_dev/metrics.jsonl"
out=$(versions "$V")
for want in "| cuDNN | 9.19.0 (91900) |" "| library versions from | runs/fsdp_bf16_dev/metrics.jsonl (not device_op.json"; do
    grep -qF "$want" <<< "$out" || fail "versions from a metrics.jsonl header: report.md lacks '$want': $out"
done
# c) nothing with a provenance: said so, and nothing raises
V=$W/v3
mkdir -p "$V"
printf '%s\tfail\t3\tno result\n' device > "$V/steps.tsv"
out=$(versions "$V")
grep -qF "| library versions from | no result with a provenance" <<< "$out" || fail "no provenance: $out"
echo "versions: ok (bench JSON, metrics.jsonl header, none)"
echo "report_check: ok"
