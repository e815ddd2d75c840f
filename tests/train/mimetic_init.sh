#!/usr/bin/env bash
# bench/train/mimetic_init.py (docs/results.md, run M1) on a real export: the attention weights of
# every block and head are the rank-k factors of a1 Z + b1 I and a2 Z - b2 I (recomputed here from
# the same generator), every other tensor is the input's byte for byte, `train --init-from` loads
# all of it; a FIFO as input, a truncated file and an existing output are refused with a message,
# nothing replaced. Needs numpy: $SHARDVIT_TEST_PYTHON (the test venv) or /usr/bin/python3.
SHARDVIT=$1
source "$(dirname "$0")/../fsdp/lib.sh"
NPY=""
for p in "${SHARDVIT_TEST_PYTHON:-}" /usr/bin/python3; do
    [ -n "$p" ] && "$p" -c "import numpy" 2>/dev/null && { NPY=$p; break; }
done
[ -n "$NPY" ] || { echo "SKIP: no python with numpy (SHARDVIT_TEST_PYTHON, /usr/bin/python3)"; exit 77; }
MIM="$HERE/../../bench/train/mimetic_init.py"
fail() { echo "FAIL: $*"; exit 1; }

run p0 1 --steps 0
"$SHARDVIT" export "$WORK/p0" "$WORK/init.safetensors" >/dev/null 2>&1 || fail "export"
"$NPY" "$MIM" "$WORK/init.safetensors" "$WORK/mim.safetensors" 3 5 >"$WORK/mim.log" 2>&1 || { cat "$WORK/mim.log"; fail "mimetic_init"; }
echo "== factors and untouched tensors"
"$NPY" - "$MIM" "$WORK/init.safetensors" "$WORK/mim.safetensors" <<'PYEOF' || fail "check"
import importlib.util, sys
import numpy as np
spec = importlib.util.spec_from_file_location("mim", sys.argv[1]); mim = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mim)
a, order_a, _ = mim.read_safetensors(sys.argv[2]); b, order_b, _ = mim.read_safetensors(sys.argv[3])
assert order_a == order_b, "tensor order changed"
rng, heads, changed = np.random.default_rng(5), 3, 0
for name in order_a:
    if ".attn.qkv.weight" in name or ".attn.proj.weight" in name:
        continue
    assert a[name].tobytes() == b[name].tobytes(), name + " changed"
l = 0
while f"blocks.{l}.attn.qkv.weight" in b:
    qkv, proj = b[f"blocks.{l}.attn.qkv.weight"].astype(np.float64), b[f"blocks.{l}.attn.proj.weight"].astype(np.float64)
    d = proj.shape[0]; k = d // heads
    for h in range(heads):
        for target, prod in (
            (0.7 * rng.standard_normal((d, d)) / np.sqrt(d) + 0.7 * np.eye(d),
             lambda: qkv[h * k:(h + 1) * k].T @ qkv[d + h * k:d + (h + 1) * k]),
            (0.4 * rng.standard_normal((d, d)) / np.sqrt(d) - 0.4 * np.eye(d),
             lambda: qkv[2 * d + h * k:2 * d + (h + 1) * k].T @ proj[:, h * k:(h + 1) * k].T)):
            u, s, vt = np.linalg.svd(target)
            best = (u[:, :k] * s[:k]) @ vt[:k]  # the rank-k truncation
            err = np.abs(prod() - best).max()
            assert err < 1e-5, (l, h, err)
            changed += 1
    l += 1
assert l == 3 and changed == 18, (l, changed)
print("factors match the rank-k truncations in", l, "blocks x", heads, "heads; other tensors unchanged")
PYEOF
echo "== train --init-from loads it"
run use 1 --steps 1 --init-from "$WORK/mim.safetensors"
logline use "init-from: [0-9]+ of [0-9]+ tensors loaded" | grep -qE "init-from: ([0-9]+) of \1 tensors" || fail "not every tensor loaded"

echo "== hostile inputs"
mkfifo "$WORK/fifo"
out=$(timeout 20 "$NPY" "$MIM" "$WORK/fifo" "$WORK/x1.safetensors" 3 0 2>&1) && fail "FIFO accepted"
echo "$out" | grep -q "not a regular file" || fail "FIFO message: $out"
head -c 1000 "$WORK/init.safetensors" >"$WORK/trunc.safetensors"
out=$(timeout 20 "$NPY" "$MIM" "$WORK/trunc.safetensors" "$WORK/x2.safetensors" 3 0 2>&1) && fail "truncated file accepted"
echo "$out" | grep -qE "runs past|do not fit|not a readable" || fail "truncated message: $out"
cp "$WORK/mim.safetensors" "$WORK/keep.safetensors"
out=$(timeout 60 "$NPY" "$MIM" "$WORK/init.safetensors" "$WORK/mim.safetensors" 3 0 2>&1) && fail "existing output replaced"
echo "$out" | grep -q "will not replace" || fail "existing-output message: $out"
cmp -s "$WORK/mim.safetensors" "$WORK/keep.safetensors" || fail "existing output changed"
[ ! -e "$WORK/x1.safetensors" ] && [ ! -e "$WORK/x2.safetensors" ] || fail "output written on a refused input"
echo "mimetic_init: all passed"
