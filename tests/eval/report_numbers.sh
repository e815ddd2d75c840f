#!/usr/bin/env bash
# shardvit report writes every number its input files give it whole or in e-notation, never cut
# to a buffer, and draws only what it can place (docs/evaluation.md "shardvit report"). Run
# directories of hand-written files, each reported by the real binary:
# - huge/: metrics.jsonl with a final loss of -1e300, a step of 1e20, img/s of 1e300, an MFU of
#   3e5, memory of 1e300 bytes, 2e16 skipped steps, evaluation records with top-1 1e307 and losses
#   2.5e200 and 3e-7, learning rates of 1e299 and 2e299; eval.json with a loss of 1.5e300 and an
#   EMA loss of 2e-9: the cards, the evaluations table and the evaluation table show exactly
#   "-1e+300", "1e+20", "5e+299", "3e+07%", "1e+300 B", "2e+16", "1e+309%", "2.5e+200", "3e-07",
#   "1.5e+300", "2e-09" (before: the first 63 or 31 of a value's 300 digits, the memory card
#   without its unit); no card or cell runs past 16 characters; the learning-rate axis reads
#   1e299, 1.2e299, ... (report_check.py: nice labels, every text inside its viewBox);
# - mem/: 5e18 bytes of memory show in EiB ("4.3 EiB");
# - trace/: a trace.json whose complete events include a dur of 1e308, 1e301 and -50, a ts of
#   -5, and a ts and dur of 1e308 (their sum overflows): no nan or inf anywhere in the page (before:
#   width="inf", width="-nan", <td>inf</td>), the five events left out and counted in a note, the
#   per-category totals those of the other events; tracks ordered by thread_sort_index, or their
#   tid without one, at the extremes the report reads (|value| < 1e9): -999999999 < -999999998
#   (tid) < 0 < 999999998 (tid) < 999999999.
set -euo pipefail
SV=$1
PY=${PYTHON:-python3}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/shardvit-report-numbers.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
fail() {
    echo "FAIL: $*"
    exit 1
}
report() { # report DIR: shardvit report DIR --out DIR.html, which must succeed
    timeout 60 "$SV" report "$1" --out "$1.html" >"$1.log" 2>&1 || {
        cat "$1.log"
        fail "report $1 exited $?"
    }
}
mkdir -p "$WORK/huge" "$WORK/mem" "$WORK/trace"
"$PY" - "$WORK" <<'P'
import json, sys
w = sys.argv[1]
def jsonl(path, rows):
    open(path, "w").write("".join(json.dumps(r) + "\n" for r in rows))
jsonl(w + "/huge/metrics.jsonl", [
    {"step": 1, "loss": 2.5, "img_per_s": 100, "mem_bytes": 1000, "mfu": 3e5, "lr": 1e299},
    {"step": 2, "loss": 1e300, "img_per_s": 1e300, "mfu": 3e5, "lr": 2e299},
    {"step": 3, "eval_top1": 1e307, "eval_top5": 0.5, "eval_loss": 2.5e200},
    {"step": 4, "eval_top1": 0.25, "eval_top5": 0.5, "eval_loss": 3e-7},
    {"step": 1e20, "loss": -1e300, "mem_bytes": 1e300, "skipped_steps": 2e16}])
json.dump({"num_samples": 4, "top1_correct": 1, "top5_correct": 2, "top1": 0.25, "top5": 0.5, "loss": 1.5e300,
           "num_classes": 1, "per_class": [{"class": "a", "index": 0, "correct": 1, "total": 4, "accuracy": 0.25}],
           "ema": {"top1": 0.5, "top5": 0.75, "loss": 2e-9, "samples": 4}}, open(w + "/huge/eval.json", "w"))
jsonl(w + "/mem/metrics.jsonl", [{"step": 1, "loss": 1, "mem_bytes": 5e18}])
jsonl(w + "/trace/metrics.jsonl", [{"step": 1, "loss": 1}])
ev = []
for tid, name, sort in ((1, "lane hi", 999999999), (2, "lane lo", -999999999), (3, "lane mid", 0),
                        (999999998, "lane tid big", None), (-999999998, "lane tid neg", None)):
    ev.append({"ph": "M", "name": "thread_name", "pid": 0, "tid": tid, "args": {"name": name}})
    if sort is not None:
        ev.append({"ph": "M", "name": "thread_sort_index", "pid": 0, "tid": tid, "args": {"sort_index": sort}})
    ev.append({"ph": "X", "name": "forward", "cat": "compute", "pid": 0, "tid": tid, "ts": 100 * len(ev),
               "dur": 40, "args": {"unit": 0}})
ev.append({"ph": "X", "name": "all_gather", "cat": "comm", "pid": 0, "tid": 3, "ts": 0, "dur": 2000})
for ts, dur in ((200, 1e308), (300, -50), (-5, 10), (1e308, 1e308), (400, 1e301)):
    ev.append({"ph": "X", "name": "backward", "cat": "compute", "pid": 0, "tid": 1, "ts": ts, "dur": dur})
json.dump({"traceEvents": ev}, open(w + "/trace/trace.json", "w"))
P
for d in huge mem trace; do report "$WORK/$d"; done

# check PART: the Python checks of one part (below) on the pages; every part runs, then the
# test fails naming those that did not pass
failed=()
check() {
    "$PY" - "$WORK" "$HERE" "$1" <<'P' || failed+=("$1")
import html as H, re, sys
w, here, part = sys.argv[1:]
sys.path.insert(0, here)
import report_check as rc

def page(name):
    text = open(f"{w}/{name}.html", encoding="utf-8").read()
    c = rc.Checker()
    c.feed(text)
    c.close()
    assert not c.errors and not c.stack, (name, c.errors[:3], c.stack)
    return text, c

def layout(c):  # every SVG text inside its viewBox, nice tick labels stepping by 1/2/5 x 10^k
    return rc.check_text_boxes(c.svgs), rc.check_axes(c.svgs)

def cards(text):
    return {H.unescape(l): H.unescape(v) for l, v in
            re.findall(r'<div class="l">([^<]*)</div><div class="v">([^<]*)</div>', text)}

if part == "huge":
    text, c = page("huge")
    got = cards(text)
    want = {"steps": "1e+20", "final train loss": "-1e+300", "eval top-1": "25.00%", "eval top-5": "50.00%",
            "EMA top-1": "50.00%", "images / s (median)": "5e+299", "MFU (median)": "3e+07%",
            "arena memory / rank": "1e+300 B", "skipped steps": "2e+16"}
    assert got == want, f"cards {got}, want {want}"
    rows = re.findall(r'<tr data-step="[^"]*">(.*?)</tr>', text)
    cells = [re.findall(r"<td[^>]*>(.*?)</td>", r) for r in rows]
    assert cells == [["3", "1e+309%", "50.00%", "2.5e+200"], ["4", "25.00%", "50.00%", "3e-07"]], cells
    for m, a, b in (("top-1", "25.00%", "50.00%"), ("top-5", "50.00%", "75.00%"), ("loss", "1.5e+300", "2e-09")):
        row = f"<tr><td>{m}</td><td>{a}</td><td>{b}</td></tr>"
        assert row in text, f"evaluation table lacks {row}"
    tables = text[: text.index('<section id="provenance')]  # the run's numbers, not the provenance tables
    for v in re.findall(r'<div class="v">([^<]*)</div>', tables) + re.findall(r"<td>([^<]*)</td>", tables):
        assert len(H.unescape(v)) <= 16, f"a value of {len(v)} characters: {v[:80]}"
    m = re.search(r"<h3>Learning rate</h3>.*?</svg>", text, re.S)
    assert m, "no learning-rate curve"
    ticks = re.findall(r'<text class="tick-y"[^>]*>([^<]*)</text>', m.group(0))
    assert ticks and all(re.fullmatch(r"[12](\.\d)?e299", t) for t in ticks), f"learning-rate ticks {ticks}"
    ntext, naxes = layout(c)
    print(f"ok: huge values whole or in e-notation ({len(got)} cards, {len(rows)} evaluations), "
          f"{ntext} texts inside their viewBox, {naxes} axes of nice labels (lr: {' '.join(ticks)})")
elif part == "mem":
    text, c = page("mem")
    assert cards(text)["arena memory / rank"] == "4.3 EiB", cards(text)
    layout(c)
    print("ok: 5e18 bytes in EiB")
else:
    text, c = page("trace")
    bad = re.findall(r".{0,60}(?<![a-z])-?(?:nan|inf)(?![a-z]).{0,20}", text, re.I)
    assert not bad, f"nan / inf in the page: {bad[:3]}"
    assert "5 trace events with a negative, non-finite or out-of-range time (ts or dur not in [0, 1e+300]) " \
        "left out" in text, "no note counting the events left out"
    row = re.search(r"<tr><td>rank 0</td>((?:<td>[^<]*</td>){5})", text)
    assert row, "no table row for rank 0"
    tot = re.findall(r"<td>([^<]*)</td>", row.group(1))
    assert tot == ["0.2", "2.0", "0.0", "0.0", "0.0"], f"rank 0 totals (ms) {tot}"
    lanes = [H.unescape(s) for s in re.findall(r'<text class="lane"[^>]*>([^<]*)</text>', text)]
    assert lanes == ["lane lo", "lane tid neg", "lane mid", "lane tid big", "lane hi"], f"lanes in order {lanes}"
    blocks = re.findall(r'<rect class="blk" x="([^"]*)" y="[^"]*" width="([^"]*)"', text)
    assert len(blocks) == 6 and all(0 <= float(x) and 0 < float(wd) <= 1160 for x, wd in blocks), blocks
    ntext, _ = layout(c)
    print(f"ok: trace events of unusable times left out and counted, lanes in sort order, "
          f"{len(blocks)} blocks drawn, {ntext} texts inside their viewBox")
P
}
for part in huge mem trace; do check $part; done
[ ${#failed[@]} = 0 ] || fail "${failed[*]}"
echo "report_numbers: ok"
