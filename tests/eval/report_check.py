#!/usr/bin/env python3
"""Check an HTML report from `shardvit report` (stdlib only).

Usage: report_check.py REPORT.html METRICS.jsonl WORLD

- well-formed: every non-void element closed in order (html.parser);
- self-contained: no <script>, no <link>/<img>/<iframe>, no src/href/xlink:href to http(s);
- curves: an SVG <path class="series"> for train loss with one point per metrics.jsonl line
  that has a loss, for eval top-1/top-5/eval loss with one point per evaluation line, for lr
  and img/s; each path's "d" has exactly data-points points;
- evaluation section with the confusion matrix, and the trace section with one row per rank.
"""
import json
import sys
from html.parser import HTMLParser

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class Checker(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.errors, self.series, self.text = [], [], {}, []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag in ("script", "iframe", "link", "img", "object"):
            self.errors.append(f"external or scripted element <{tag}>")
        for k, v in attrs:
            if v and k in ("src", "href", "xlink:href", "action") and v.strip().lower().startswith(("http:", "https:", "//")):
                self.errors.append(f"external reference {k}={v}")
            if k.startswith("on"):
                self.errors.append(f"event handler {k}")
        if tag == "path" and a.get("class") == "series":
            d = a.get("d", "")
            pts = d.count("M") + d.count("L")
            self.series[a["data-series"]] = (int(a["data-points"]), pts)
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag not in VOID:
            self.stack.pop()

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> does not close <{self.stack[-1] if self.stack else None}>")
        else:
            self.stack.pop()

    def handle_data(self, data):
        self.text.append(data)


def main():
    html, metrics, world = open(sys.argv[1], encoding="utf-8").read(), sys.argv[2], int(sys.argv[3])
    assert html.startswith("<!DOCTYPE html>")
    c = Checker()
    c.feed(html)
    c.close()
    assert not c.errors, c.errors[:5]
    assert not c.stack, f"unclosed elements: {c.stack}"
    lines = [json.loads(l) for l in open(metrics) if l.strip()]
    want = {
        "train loss": sum("loss" in l for l in lines),
        "eval loss": sum("eval_loss" in l for l in lines),
        "top-1": sum("eval_top1" in l for l in lines),
        "top-5": sum("eval_top5" in l for l in lines),
        "lr": sum("lr" in l for l in lines),
        "img/s": sum("img_per_s" in l for l in lines),
        "memory": sum("mem_bytes" in l for l in lines),
    }
    for name, n in want.items():
        assert n > 0, f"{name}: nothing logged"
        assert name in c.series, f"no curve for {name}; have {sorted(c.series)}"
        declared, drawn = c.series[name]
        assert declared == n and drawn == n, f"{name}: {declared} declared / {drawn} drawn points, {n} logged"
    text = " ".join(c.text)
    for needle in ("Evaluation", "Confusion matrix", "Per-class accuracy", "Compute and communication per rank",
                   "Timeline of the first"):
        assert needle in text, f"missing section: {needle}"
    for r in range(world):
        assert f"rank {r}" in text, f"rank {r} missing from the trace summary"
    print(f"ok: report well-formed and self-contained; {len(c.series)} curves with the logged point counts")


if __name__ == "__main__":
    main()
