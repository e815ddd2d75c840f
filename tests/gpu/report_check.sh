#!/usr/bin/env bash
# tests/gpu/gpu_report.py on the ops.json shapes a GPU run can leave, without a GPU: a finished
# file whose rows carry an exact match, a non-finite result (rel_err null), a failed op call and
# the path fields (gemm_algo, attn_path); the same file cut off mid-row by a kill. The one-line
# summary and report.md must name the worst row, the failed call, the non-finite result and the
# path fields, and nothing may raise.
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
echo "report_check: ok"
