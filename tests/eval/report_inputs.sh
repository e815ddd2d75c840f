#!/usr/bin/env bash
# shardvit report reads eval.json and confusion.csv as eval writes them (docs/evaluation.md
# "Report"): a value eval never writes, or counts that disagree between the two files or with the
# recorded totals, fail the report (exit 1, no page written) with an error naming the file, the
# field or line, and the value, instead of a page drawn from them. Each case edits one thing in a
# copy of a real run's files:
# - confusion.csv: a cell "abc", "-3", "1.5" or empty; a row one count short or one too long; an
#   extra row; a count moved to another cell of its row stays accepted, a count raised by one makes
#   the row disagree with the class's total; one class column fewer than eval.json's classes;
# - eval.json: top1 a string, above 1, or off top1_correct / num_samples; loss negative;
#   num_samples 1.5; a per-class total negative or off the sum; a per-class accuracy a string;
#   num_classes off the per_class count; ema top1 above 1; not a JSON object.
# The untouched files still make a report. Run directories of metrics only:
# - a 200k-line metrics.jsonl (with evaluations every 10 steps) reports within a minute, its
#   img/s and MFU medians those of Python's statistics.median;
# - a trace path holding HTML markup is escaped in the page, never a live tag;
# - steps and learning rates of +-1e308 give finite SVG path data (such points left out with a
#   note); an eval.json of no samples shows its null top-1 / top-5 / loss as n/a, never "nan%".
SV=$1
source "$(dirname "$0")/lib.sh"
fail() {
    echo "FAIL: $*"
    exit 1
}
run "$WORK/train.log" "$SV" train $MODEL $COMMON --data "$WORK/data/train" --val-data "$WORK/data/test" --steps 3 \
    --batch-size 8 --warmup 1 --out "$WORK/run"
[ -s "$WORK/run/eval.json" ] && [ -s "$WORK/run/confusion.csv" ] || fail "training wrote no eval.json / confusion.csv"
cp "$WORK/run/eval.json" "$WORK/eval.orig"
cp "$WORK/run/confusion.csv" "$WORK/confusion.orig"
run "$WORK/report0.log" "$SV" report "$WORK/run" --out "$WORK/r0.html"

n=0
# bad NAME FILE EDIT TEXT...: the run's FILE (eval.json or confusion.csv) edited by the Python
# statement EDIT (on j, the parsed eval.json, or rows, confusion.csv's lines split at commas) makes
# report fail with an error naming FILE and every TEXT, and write no page
bad() {
    local name=$1 file=$2 edit=$3
    shift 3
    n=$((n + 1))
    cp "$WORK/eval.orig" "$WORK/run/eval.json"
    cp "$WORK/confusion.orig" "$WORK/run/confusion.csv"
    "$PY" - "$WORK/run/$file" "$edit" <<'P'
import json, sys
path, edit = sys.argv[1:]
if path.endswith(".json"):
    j = json.load(open(path))
    exec(edit)
    open(path, "w").write(j if isinstance(j, str) else json.dumps(j, indent=2))
else:
    rows = [line.split(",") for line in open(path).read().splitlines()]
    exec(edit)
    open(path, "w").write("".join(",".join(r) + "\n" for r in rows))
P
    expect_fail "$name" 60 "$SV" report "$WORK/run" --out "$WORK/r$n.html"
    [ ! -e "$WORK/r$n.html" ] || fail "$name: a report was written"
    error_says "$name" "$file"
    local t
    for t in "$@"; do error_says "$name" "$t"; done
}
bad cell_word confusion.csv 'rows[2][3] = "abc"' "line 3, field 4" '"abc" is not a count'
bad cell_negative confusion.csv 'rows[1][1] = "-3"' "line 2, field 2" '"-3"'
bad cell_fraction confusion.csv 'rows[4][4] = "1.5"' "line 5, field 5" '"1.5"'
bad cell_empty confusion.csv 'rows[1][2] = ""' "line 2, field 3" '"" is not a count'
bad row_short confusion.csv 'rows[2].pop()' "line 3" "3 counts" "expected 4"
bad row_long confusion.csv 'rows[2].append("0")' "line 3" "more than eval.json's 4 counts"
bad extra_row confusion.csv 'rows.append(["x", "0", "0", "0", "0"])' "line 6" "more rows than eval.json's 4 classes"
bad count_raised confusion.csv 'rows[3][2] = str(int(rows[3][2]) + 1)' "line 4" "add up to more than its total"
bad column_short confusion.csv 'rows = [r[:-1] for r in rows]' "line 1" "3 class columns" "4 classes"
bad top1_string eval.json 'j["top1"] = "abc"' 'top1 is "abc"' "a number in [0, 1]"
bad top1_above_one eval.json 'j["top1"] = 1.5' "top1 is 1.5"
bad top1_off_counts eval.json 'c = j["top1_correct"]; j["top1"] = (c + (0.5 if c < j["num_samples"] else -0.5)) / j["num_samples"]' "top1 is" \
    "top1_correct / num_samples"
bad loss_negative eval.json 'j["loss"] = -1' "loss is -1" "a number >= 0"
bad samples_fraction eval.json 'j["num_samples"] = 1.5' "num_samples is 1.5" "a non-negative integer"
bad total_negative eval.json 'j["per_class"][1]["total"] = -2' "per_class[1].total is -2"
bad total_off eval.json 'c = j["per_class"][2]; c["total"] += 1; c["accuracy"] = c["correct"] / c["total"]' \
    "per_class totals add up to 29" "num_samples = 28"
bad accuracy_string eval.json 'j["per_class"][0]["accuracy"] = "abc"' 'per_class[0].accuracy is "abc"'
bad classes_off eval.json 'j["num_classes"] = 5' "num_classes is 5" "4, the number of per_class entries"
bad ema_above_one eval.json 'j["ema"] = {"top1": 2, "top5": 1, "loss": 0.5, "samples": 28}' "ema.top1 is 2"
bad not_object eval.json 'j = "[1, 2]"' "expected a JSON object"
# a count moved within its row keeps the totals: accepted (the diagonal note covers it)
cp "$WORK/eval.orig" "$WORK/run/eval.json"
"$PY" - "$WORK/confusion.orig" "$WORK/run/confusion.csv" <<'P'
import sys
rows = [l.split(",") for l in open(sys.argv[1]).read().splitlines()]
r = rows[1]
k = next(i for i in range(1, 5) if int(r[i]) > 0)
r[k], r[1 + k % 4] = str(int(r[k]) - 1), str(int(r[1 + k % 4]) + 1)
open(sys.argv[2], "w").write("".join(",".join(r) + "\n" for r in rows))
P
run "$WORK/moved.log" "$SV" report "$WORK/run" --out "$WORK/moved.html"
cp "$WORK/confusion.orig" "$WORK/run/confusion.csv"
run "$WORK/report1.log" "$SV" report "$WORK/run" --out "$WORK/r0.html"

# long log: n log n, not n^2 (this took minutes before); medians as statistics.median computes them
mkdir -p "$WORK/long"
"$PY" - "$WORK/long/metrics.jsonl" <<'P'
import json, random, sys
random.seed(1)
with open(sys.argv[1], "w") as f:
    for s in range(1, 200001):
        r = {"step": s, "loss": 2 / s ** 0.1, "lr": 1e-3, "img_per_s": round(random.uniform(100, 900), 3),
             "mfu": round(random.uniform(0.1, 0.6), 5)}
        if s % 10 == 0:
            r.update(eval_top1=0.5, eval_top5=0.9, eval_loss=1.0)
        f.write(json.dumps(r) + "\n")
P
timeout 60 "$SV" report "$WORK/long" --out "$WORK/long.html" >"$WORK/long.log" 2>&1 || fail "long log: report failed or took over 60 s"
"$PY" - "$WORK/long/metrics.jsonl" "$WORK/long.html" <<'P'
import json, re, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
html = open(sys.argv[2]).read()
def card(label):
    m = re.search(r'<div class="l">' + re.escape(label) + r'</div><div class="v">([^<]*)</div>', html)
    assert m, f"no card {label!r}"
    return m.group(1)
ips = statistics.median(r["img_per_s"] for r in rows)
mfu = statistics.median(r["mfu"] for r in rows)
assert card("images / s (median)") == f"{ips:.1f}", (card("images / s (median)"), ips)
assert card("MFU (median)") == f"{100 * mfu:.1f}%", (card("MFU (median)"), mfu)
assert html.count("<tr data-step=") == 20000, html.count("<tr data-step=")
assert '<tr data-step="200000"><td>200000</td><td>50.00%</td><td>90.00%</td><td>1.0000</td></tr>' in html
print("ok: long log reported, medians", ips, mfu)
P

# a trace path with markup: escaped in the page
D="$WORK/inj<img src=x onerror=alert(1)>"
mkdir -p "$D"
echo '{"step":1,"loss":1}' >"$D/metrics.jsonl"
echo '[]' >"$D/trace.json"
run "$WORK/inj.log" "$SV" report "$D" --out "$WORK/inj.html"
"$PY" - "$WORK/inj.html" <<'P'
import sys
html = open(sys.argv[1]).read()
assert "<img" not in html, "an unescaped <img tag in the page"
assert "The trace " in html and "inj&lt;img src=x onerror=alert(1)&gt;/trace.json holds no events" in html
print("ok: trace path escaped")
P

# extreme steps and values: finite path data, the points left out said; no samples: n/a
mkdir -p "$WORK/huge"
"$PY" - "$WORK/huge" <<'P'
import json, sys
d = sys.argv[1]
rows = [{"step": 1, "loss": 1, "lr": 1e-3}, {"step": 2, "loss": 0.9, "lr": 1e308},
        {"step": 3, "loss": 0.8, "lr": -1e308}, {"step": -1e308, "loss": 0.7}, {"step": 1e308, "loss": 0.6},
        {"step": 4, "loss": 0.5, "lr": 2e-3}]
open(d + "/metrics.jsonl", "w").write("".join(json.dumps(r) + "\n" for r in rows))
json.dump({"num_samples": 0, "top1_correct": 0, "top5_correct": 0, "top1": None, "top5": None, "loss": None,
           "num_classes": 1, "per_class": [{"class": "a", "index": 0, "correct": 0, "total": 0, "accuracy": None}]},
          open(d + "/eval.json", "w"))
P
run "$WORK/huge.log" "$SV" report "$WORK/huge" --out "$WORK/huge.html"
"$PY" - "$WORK/huge.html" <<'P'
import math, re, sys
html = open(sys.argv[1]).read()
bad = re.findall(r".{0,40}(?<![a-z])-?(?:nan|inf)(?![a-z]).{0,20}", html, re.I)
assert not bad, bad[:3]
paths = re.findall(r'<path class="series" data-series="([^"]*)" data-points="(\d+)"[^>]* d="([^"]*)"', html)
assert paths, "no series drawn"
for name, n, d in paths:
    nums = [float(v) for v in re.findall(r"-?[0-9.]+(?:e[-+]?\d+)?", d)]
    assert nums and all(math.isfinite(v) and abs(v) < 1e4 for v in nums), (name, d)
got = {name: int(n) for name, n, d in paths}
assert got == {"train loss": 4, "lr": 2}, got
assert "2 points with a step or value beyond &plusmn;1e+300 not drawn" in html
for m in ("top-1", "top-5", "loss"):
    assert f"<tr><td>{m}</td><td>n/a</td></tr>" in html, m
print("ok: extreme values left out with a note, finite path data; no samples: n/a")
P
echo "report_inputs: ok ($n damaged inputs refused)"
