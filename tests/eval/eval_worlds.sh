#!/usr/bin/env bash
# eval of the same trained weights at world 1, 2 and 3 gives identical top-1/top-5 counts,
# per-class results and confusion matrix, and the loss within 1e-6 relative; every sample is
# counted once (28 samples in batches of 6: the padded last batch must not be counted).
SV=$1
source "$(dirname "$0")/lib.sh"
run "$WORK/train.log" "$MPIEXEC" -n 2 "$SV" train $MODEL $COMMON --data "$WORK/data/train" --steps 12 \
    --batch-size 8 --warmup 2 --lr 3e-3 --out "$WORK/run" --save-params "$WORK/params.bin"
mkdir -p "$WORK/w"
"$EVAL_TOOL" write "$WORK/params.bin" "$WORK/w/model.safetensors" 32 2 2 32 8 3 4
for n in 1 2 3; do
    run "$WORK/eval$n.log" "$MPIEXEC" -n $n "$SV" eval --weights "$WORK/w/model.safetensors" \
        --data "$WORK/data/test" --batch-size 6 --out "$WORK/e$n" $COMMON
done
"$PY" - "$WORK" <<'PYEOF'
import json, sys
w = sys.argv[1]
ev = [json.load(open(f"{w}/e{n}/eval.json")) for n in (1, 2, 3)]
cm = [open(f"{w}/e{n}/confusion.csv").read() for n in (1, 2, 3)]
a = ev[0]
assert a["num_samples"] == 28, a["num_samples"]
assert a["num_classes"] == 4
for n, b in zip((2, 3), ev[1:]):
    for k in ("num_samples", "top1_correct", "top5_correct", "top1", "top5", "per_class"):
        assert a[k] == b[k], (n, k, a[k], b[k])
    rel = abs(a["loss"] - b["loss"]) / abs(a["loss"])
    assert rel <= 1e-6, (n, a["loss"], b["loss"])
    assert cm[0] == cm[n - 1], n
rows = [l.split(",") for l in cm[0].strip().split("\n")[1:]]
assert sum(int(x) for r in rows for x in r[1:]) == 28
assert sum(int(r[1 + i]) for i, r in enumerate(rows)) <= a["top1_correct"]
print(f"ok: world 1/2/3 agree: top1 {a['top1']:.4f} top5 {a['top5']:.4f} loss {a['loss']:.6f} "
      f"({a['num_samples']} samples)")
PYEOF
