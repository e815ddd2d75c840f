#!/usr/bin/env python3
"""The weight-EMA content of a `shardvit report` page (stdlib only).

Usage: report_ema_check.py REPORT.html RUN_DIR [--no-ema]

With EMA (train --model-ema): SVG paths "EMA top-1", "EMA top-5" and "EMA eval loss" with one
point per eval_ema_* record of metrics.jsonl; the "Evaluations during training" table has one row
per evaluated step whose cells are exactly the raw eval_top1 / eval_top5 / eval_loss and the EMA
eval_ema_top1 / eval_ema_top5 / eval_ema_loss of that step, formatted as the page does
(percent with 2 decimals, loss with 4); at least one EMA value differs from the raw one at its
step (so the EMA columns are not the raw ones again); the Evaluation section shows eval.json's
"ema" top-1 / top-5 / loss next to the raw weights'. With --no-ema: none of that EMA content."""
import json
import re
import sys
from html.parser import HTMLParser


class Page(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.series, self.tables, self.cur, self.row, self.cell = {}, [], None, None, None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "path" and a.get("class") == "series":
            self.series[a["data-series"]] = int(a["data-points"])
        elif tag == "table":
            self.cur = {"cls": a.get("class"), "rows": []}
            self.tables.append(self.cur)
        elif tag == "tr" and self.cur is not None:
            self.row = []
            self.cur["rows"].append(self.row)
        elif tag in ("td", "th") and self.row is not None:
            self.cell = ""

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self.cell is not None:
            self.row.append(self.cell.strip())
            self.cell = None
        elif tag == "table":
            self.cur = self.row = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell += data


def pct(v):
    return f"{100 * v:.2f}%"


def main():
    html, run_dir = open(sys.argv[1], encoding="utf-8").read(), sys.argv[2]
    no_ema = "--no-ema" in sys.argv[3:]
    page = Page()
    page.feed(html)
    raw, ema = {}, {}
    for line in open(f"{run_dir}/metrics.jsonl"):
        r = json.loads(line)
        if "eval_top1" in r:
            raw[r["step"]] = r
        if "eval_ema_top1" in r:
            ema[r["step"]] = r
    ev = json.load(open(f"{run_dir}/eval.json"))
    assert raw, "the run logged no evaluation"
    evals = [t for t in page.tables if t["cls"] == "evals"]
    assert len(evals) == 1, f"{len(evals)} evaluation tables"
    head, rows = evals[0]["rows"][0], evals[0]["rows"][1:]
    if no_ema:
        assert not ema and "ema" not in ev, "the --no-ema run has EMA records"
        bad = [s for s in page.series if "EMA" in s] + [h for h in head if "EMA" in h]
        assert not bad and "weight EMA" not in html, f"EMA content in a report without EMA: {bad}"
        assert [int(r[0]) for r in rows] == sorted(raw), "evaluation rows are not the evaluated steps"
        print(f"ok: no EMA content; {len(rows)} evaluations tabulated")
        return 0
    assert ema and sorted(ema) == sorted(raw), f"EMA evaluated at {sorted(ema)}, raw at {sorted(raw)}"
    for name, key in (("EMA top-1", "eval_ema_top1"), ("EMA top-5", "eval_ema_top5"), ("EMA eval loss", "eval_ema_loss")):
        want = sum(key in r for r in ema.values())
        assert page.series.get(name) == want, f"curve {name!r}: {page.series.get(name)} points, {want} records"
    assert head == ["step", "top-1", "EMA top-1", "top-5", "EMA top-5", "loss", "EMA loss"], head
    assert [int(r[0]) for r in rows] == sorted(raw), f"rows {[r[0] for r in rows]}, steps {sorted(raw)}"
    differ = 0
    for r in rows:
        s = int(r[0])
        a, e = raw[s], ema[s]
        want = [str(s), pct(a["eval_top1"]), pct(e["eval_ema_top1"]), pct(a["eval_top5"]), pct(e["eval_ema_top5"]),
                f"{a['eval_loss']:.4f}", f"{e['eval_ema_loss']:.4f}"]
        assert r == want, f"step {s}: page {r}, metrics.jsonl {want}"
        differ += r[1] != r[2] or r[5] != r[6]
    assert differ, "the EMA columns equal the raw ones at every step"
    m = ev["ema"]
    summary = [t for t in page.tables if t["rows"] and t["rows"][0] == ["metric", "weights", "weight EMA"]]
    assert len(summary) == 1, "no evaluation summary with a weight-EMA column"
    want = [["top-1", pct(ev["top1"]), pct(m["top1"])], ["top-5", pct(ev["top5"]), pct(m["top5"])],
            ["loss", f"{ev['loss']:.4f}", f"{m['loss']:.4f}"]]
    assert summary[0]["rows"][1:4] == want, f"summary {summary[0]['rows'][1:4]}, eval.json {want}"
    assert re.search(r"EMA top-1</div><div class=\"v\">" + re.escape(pct(m["top1"])), html), "no EMA top-1 card"
    print(f"ok: EMA curves with {len(ema)} points each, {len(rows)} evaluations tabulated raw and EMA "
          f"({differ} differ), eval.json's EMA in the summary")
    return 0


if __name__ == "__main__":
    sys.exit(main())
