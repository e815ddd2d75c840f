#!/usr/bin/env bash
# Evaluation and prediction with known answers. The weights have head.weight = 0, so every
# image's logits are exactly head.bias whatever the trunk computes: the prediction is the class
# with the largest bias for every sample. Expected top-1, per-class accuracy, confusion matrix
# and loss follow from the data set's class counts alone and are computed here independently
# (eval at 2 ranks). predict must print the names from classes.txt beside the weights and
# probabilities softmax(bias) that sum to 1 over all classes.
SV=$1
source "$(dirname "$0")/lib.sh"
BIAS="0.25 2.0 -1.5 0.75"
mkdir -p "$WORK/w"
"$EVAL_TOOL" write init "$WORK/w/model.safetensors" 32 2 2 32 8 3 4 $BIAS
printf 'T-shirt/top\nTrouser\nPull, over\nDress\n' >"$WORK/w/classes.txt"
run "$WORK/eval.log" "$MPIEXEC" -n 2 "$SV" eval --weights "$WORK/w/model.safetensors" --data "$WORK/data/test" \
    --batch-size 10 --out "$WORK/e" $COMMON
mapfile -t img < <(find "$WORK/data/test" -name '*.jpg' | sort | head -3)
run "$WORK/predict.log" "$SV" predict --weights "$WORK/w/model.safetensors" --topk 0 --json --threads 1 "${img[@]}"
grep '^{' "$WORK/predict.log" >"$WORK/predict.jsonl"
run "$WORK/predict_text.log" "$SV" predict --weights "$WORK/w/model.safetensors" --topk 2 --threads 1 "${img[@]}"
"$PY" - "$WORK" "$BIAS" <<'PYEOF'
import csv, json, math, os, struct, sys
w, bias = sys.argv[1], [struct.unpack("f", struct.pack("f", float(b)))[0] for b in sys.argv[2].split()]
K = len(bias)
classes = sorted(os.listdir(f"{w}/data/test"))
counts = [len([f for f in os.listdir(f"{w}/data/test/{c}") if f.endswith(".jpg")]) for c in classes]
N = sum(counts)
pred = max(range(K), key=lambda k: (bias[k], -k))
lse = max(bias) + math.log(sum(math.exp(b - max(bias)) for b in bias))
exp_loss = sum(counts[k] * (lse - bias[k]) for k in range(K)) / N
e = json.load(open(f"{w}/e/eval.json"))
assert e["num_samples"] == N, (e["num_samples"], N)
assert e["top1_correct"] == counts[pred], (e["top1_correct"], counts[pred])
assert abs(e["top1"] - counts[pred] / N) < 1e-12
rank = sorted(range(K), key=lambda k: -bias[k])
assert e["top5_correct"] == sum(counts[k] for k in rank[:5])
assert abs(e["loss"] - exp_loss) <= 1e-6 * exp_loss, (e["loss"], exp_loss)
for k, pc in enumerate(e["per_class"]):
    assert pc["class"] == classes[k] and pc["total"] == counts[k], pc
    assert pc["correct"] == (counts[k] if k == pred else 0), pc
rows = list(csv.reader(open(f"{w}/e/confusion.csv")))
assert rows[0][1:] == classes, rows[0]
for k in range(K):
    assert rows[1 + k][0] == classes[k]
    assert [int(x) for x in rows[1 + k][1:]] == [counts[k] if j == pred else 0 for j in range(K)], rows[1 + k]
names = [l.rstrip("\n") for l in open(f"{w}/w/classes.txt")]
probs = [math.exp(b - lse) for b in bias]
lines = [json.loads(l) for l in open(f"{w}/predict.jsonl")]
assert len(lines) == 3, len(lines)
for p in lines:
    top = p["top"]
    assert len(top) == K
    assert top[0]["class"] == names[pred] and top[0]["index"] == pred, top[0]
    s = sum(t["prob"] for t in top)
    assert abs(s - 1) < 1e-6, s
    for t in top:
        assert t["class"] == names[t["index"]]
        assert abs(t["prob"] - probs[t["index"]]) < 1e-6, (t, probs)
text = open(f"{w}/predict_text.log").read()
assert f"{names[pred]} ({pred})" in text, text
print(f"ok: eval matches the known answer (top1 {e['top1']:.4f}, loss {e['loss']:.6f}); predict names and "
      f"probabilities match softmax(bias)")
PYEOF
