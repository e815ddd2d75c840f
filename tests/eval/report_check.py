#!/usr/bin/env python3
"""Check an HTML report from `shardvit report` (stdlib only).

Usage: report_check.py REPORT.html METRICS.jsonl WORLD

- well-formed: every non-void element closed in order (html.parser);
- self-contained: no <script>, no <link>/<img>/<iframe>, no src/href/xlink:href to http(s);
- curves: an SVG <path class="series"> for train loss with one point per metrics.jsonl line
  that has a loss, for eval top-1/top-5/eval loss with one point per evaluation line, for lr
  and img/s; each path's "d" has exactly data-points points;
- evaluation section with the confusion matrix, and the trace section with one row per rank;
- every SVG <text> lies inside its SVG's viewBox, its box estimated as the report budgets it
  (eval/report_svg.h: 0.6 em per character, 0.8 em above the baseline, 0.25 em below; anchor
  and translate/rotate transforms applied), and every block label lies inside its block;
- axis tick labels are nice numbers as people write them ("0", "0.5", "1.5k", "2M", "5e-4",
  "3e21", "20%", "1.5 MiB", "40 ms": no "e+", no trailing zeros) whose values step by 1, 2 or
  5 x 10^k;
- the trace timeline: no two blocks on one lane overlap (collectives in flight together are on
  separate lanes);
- eval.json's per-class correct counts equal confusion.csv's diagonal and top1_correct (one
  argmax rule), and the evaluation section states the preprocessing the run recorded
  (checkpoints/latest/index.json eval_transform).
"""
import csv
import json
import math
import os
import re
import sys
from html.parser import HTMLParser

EM_PER_CHAR, ASCENT, DESCENT, TOL = 0.6, 0.8, 0.25, 0.51
NUM = r"-?(?:0|[1-9]\d*)(?:\.\d*[1-9])?"
SI = r"-?[1-9]\d{0,2}(?:\.\d*[1-9])?[kMGTPE]"
SCI = r"-?[1-9](?:\.\d*[1-9])?e-?[1-9]\d*"
UNITS = ("%", " B", " KiB", " MiB", " GiB", " TiB", " PiB", " EiB", " ms", " s")
LABEL = re.compile(rf"^(?:{SCI}|{SI}|{NUM})(?:{'|'.join(re.escape(u) for u in UNITS)})?$")

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class Checker(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.errors, self.series, self.text = [], [], {}, []
        self.svgs = []  # {"attrs", "texts": [{"attrs", "s", "box"}], "rects": [{"attrs", "title", "label"}]}
        self.cur_text = self.cur_rect = None
        self.in_title = 0
        self._selfclosing = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        svg = self.svgs[-1] if self.svgs and self.svgs[-1]["open"] else None
        if tag == "svg":
            self.svgs.append({"attrs": a, "texts": [], "rects": [], "series": 0, "open": True})
        elif svg is not None and tag == "text":
            self.cur_text = {"attrs": a, "s": "", "rect": svg["rects"][-1] if svg["rects"] else None}
            svg["texts"].append(self.cur_text)
        elif svg is not None and tag == "rect":
            r = {"attrs": a, "title": False}
            svg["rects"].append(r)
            self.cur_rect = None if self._selfclosing else r
        elif tag == "title":
            self.in_title += 1
            if self.cur_rect is not None:
                self.cur_rect["title"] = True
        if svg is not None and tag == "path" and a.get("class") == "series":
            svg["series"] += 1
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
        self._selfclosing = True
        self.handle_starttag(tag, attrs)
        self._selfclosing = False
        if tag not in VOID:
            self.stack.pop()

    def handle_endtag(self, tag):
        if tag == "svg" and self.svgs:
            self.svgs[-1]["open"] = False
        elif tag == "text":
            self.cur_text = None
        elif tag == "rect":
            self.cur_rect = None
        elif tag == "title":
            self.in_title -= 1
        if tag in VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> does not close <{self.stack[-1] if self.stack else None}>")
        else:
            self.stack.pop()

    def handle_data(self, data):
        self.text.append(data)
        if self.cur_text is not None and not self.in_title:
            self.cur_text["s"] += data


def transform_points(pts, tf):
    """Apply an SVG transform list (translate/rotate only) to points."""
    ops = re.findall(r"(translate|rotate)\(([^)]*)\)", tf or "")
    for op, args in reversed(ops):  # the rightmost transform applies first
        v = [float(x) for x in re.split(r"[ ,]+", args.strip()) if x]
        if op == "translate":
            tx, ty = v[0], v[1] if len(v) > 1 else 0.0
            pts = [(x + tx, y + ty) for x, y in pts]
        else:
            t = math.radians(v[0])
            c, s_ = math.cos(t), math.sin(t)
            pts = [(x * c - y * s_, x * s_ + y * c) for x, y in pts]
    return pts


def text_box(t):
    """Corners of the estimated box of a <text>, in SVG user units."""
    a = t["attrs"]
    fs = float(a.get("font-size", 16))
    w = EM_PER_CHAR * fs * len(t["s"])
    x, y = float(a.get("x", 0)), float(a.get("y", 0))
    anchor = a.get("text-anchor", "start")
    x0 = x - w / 2 if anchor == "middle" else x - w if anchor == "end" else x
    pts = [(x0, y - ASCENT * fs), (x0 + w, y - ASCENT * fs), (x0, y + DESCENT * fs), (x0 + w, y + DESCENT * fs)]
    return transform_points(pts, a.get("transform"))


def viewbox(svg):
    a = svg["attrs"]
    if "viewBox" in a:
        x, y, w, h = (float(v) for v in a["viewBox"].split())
        return x, y, x + w, y + h
    return 0.0, 0.0, float(a["width"]), float(a["height"])


def check_text_boxes(svgs):
    n = 0
    for i, svg in enumerate(svgs):
        x0, y0, x1, y1 = viewbox(svg)
        for t in svg["texts"]:
            if not t["s"]:
                continue
            n += 1
            for px, py in text_box(t):
                assert x0 - TOL <= px <= x1 + TOL and y0 - TOL <= py <= y1 + TOL, (
                    f"svg #{i} (viewBox {x0:g} {y0:g} {x1:g} {y1:g}): text {t['s']!r} at {t['attrs']} reaches "
                    f"({px:.1f}, {py:.1f}), outside the viewBox")
            if "blk" in t["attrs"].get("class", ""):  # a block label: inside its block
                r = t["rect"]["attrs"]
                rx, ry, rw, rh = (float(r[k]) for k in ("x", "y", "width", "height"))
                for px, py in text_box(t):
                    assert rx - 0.01 <= px <= rx + rw + 0.01 and ry - TOL <= py <= ry + rh + TOL, (
                        f"block label {t['s']!r} at {t['attrs']} leaves its block {r}")
    return n


def label_value(s):
    for u in UNITS:
        if s.endswith(u):
            s = s[: -len(u)]
            break
    mult = {"k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18}.get(s[-1:], 1)
    return float(s[:-1] if mult != 1 else s) * mult


def check_ticks(labels, where):
    """Tick labels of one axis: the nice grammar, one unit, values stepping by 1/2/5 x 10^k."""
    assert labels, f"{where}: no tick labels"
    for s in labels:
        assert LABEL.match(s), f"{where}: tick label {s!r} is not a nice number (labels {labels})"
    units = {u for s in labels for u in UNITS if s.endswith(u)}
    assert len(units) <= 1, f"{where}: mixed units {units} in {labels}"
    v = sorted(label_value(s) for s in labels)
    if len(v) < 2:
        return
    d = [b - a for a, b in zip(v, v[1:])]
    assert all(abs(x - d[0]) <= 1e-6 * abs(d[0]) for x in d), f"{where}: ticks {labels} are not evenly spaced"
    mant = d[0] / 10 ** math.floor(math.log10(d[0]) + 1e-9)
    assert any(abs(mant - m) < 1e-6 for m in (1, 2, 5)), f"{where}: tick step {d[0]:g} is not 1, 2 or 5 x 10^k ({labels})"


def check_axes(svgs):
    n = 0
    for i, svg in enumerate(svgs):
        texts = [t for t in svg["texts"] if t["s"]]
        if svg["series"]:  # a line chart: y ticks end-anchored, x ticks centred (and the "step" title)
            check_ticks([t["s"] for t in texts if t["attrs"].get("text-anchor") == "end"], f"chart #{i} y axis")
            check_ticks([t["s"] for t in texts if t["attrs"].get("text-anchor") == "middle" and t["s"] != "step"],
                        f"chart #{i} x axis")
            n += 1
        elif any(t["s"] == "rank 0" for t in texts):  # the trace timeline: its time axis
            check_ticks([t["s"] for t in texts if t["attrs"].get("text-anchor") == "middle"], f"timeline #{i} axis")
            n += 1
    return n


def check_timeline_lanes(svgs):
    """Blocks (rects with a tooltip) on one lane (same y) must not overlap."""
    lines = [s for s in svgs if any(t["s"] == "rank 0" for t in s["texts"])]
    assert lines, "no trace timeline"
    blocks = 0
    for svg in lines:
        lanes = {}
        for r in svg["rects"]:
            if r["title"]:
                a = r["attrs"]
                lanes.setdefault(float(a["y"]), []).append((float(a["x"]), float(a["width"])))
        for y, rs in lanes.items():
            rs.sort()
            blocks += len(rs)
            for (xa, wa), (xb, wb) in zip(rs, rs[1:]):
                assert xa + wa <= xb + 0.02, (
                    f"timeline lane y={y}: block [{xa}, {xa + wa:.2f}] overlaps block [{xb}, {xb + wb:.2f}]")
    return blocks


def check_eval_consistency(run_dir, text):
    e = json.load(open(os.path.join(run_dir, "eval.json")))
    rows = list(csv.reader(open(os.path.join(run_dir, "confusion.csv"), newline="")))
    conf = [[int(v) for v in r[1:]] for r in rows[1:]]
    diag = [conf[k][k] for k in range(len(conf))]
    correct = [c["correct"] for c in e["per_class"]]
    assert correct == diag, f"per-class correct {correct} != confusion diagonal {diag}"
    assert e["top1_correct"] == sum(diag), f"top1_correct {e['top1_correct']} != diagonal sum {sum(diag)}"
    # the preprocessing the run recorded, stated in the report
    ck = os.path.join(run_dir, "checkpoints")
    step = open(os.path.join(ck, "latest")).read().strip()
    x = json.load(open(os.path.join(ck, step, "index.json")))["eval_transform"]
    m = re.search(r"Preprocessing: (.*?)\(", text)
    assert m, "the evaluation section does not state its preprocessing"
    resize = math.floor(x["img"] / x["crop_pct"] + 1e-9)
    want = [f"resize the shorter side to {resize} px", f"crop_pct {x['crop_pct']:g}", x["interpolation"],
            f"crop {x['img']:g}", "mean " + ", ".join(f"{v:g}" for v in x["mean"]),
            "std " + ", ".join(f"{v:g}" for v in x["std"])]
    line = text[m.start(): m.start() + 600]
    for w in want:
        assert w in line, f"preprocessing line lacks {w!r}: {line[:300]!r}"


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
        "train loss, window mean": sum("loss_avg" in l for l in lines),
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
    ntext = check_text_boxes(c.svgs)
    naxes = check_axes(c.svgs)
    nblocks = check_timeline_lanes(c.svgs)
    check_eval_consistency(os.path.dirname(os.path.abspath(metrics)), text)
    print(f"ok: report well-formed and self-contained; {len(c.series)} curves with the logged point counts; "
          f"{ntext} SVG texts inside their viewBox; nice ticks on {naxes} axes; {nblocks} timeline blocks, "
          f"no overlap on a lane; per-class == confusion diagonal; preprocessing stated")


if __name__ == "__main__":
    main()
