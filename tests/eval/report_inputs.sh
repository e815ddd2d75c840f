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
# The untouched files still make a report.
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
echo "report_inputs: ok ($n damaged inputs refused)"
