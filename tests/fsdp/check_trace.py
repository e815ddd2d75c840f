#!/usr/bin/env python3
"""Validate a shardvit --trace file: well-formed Chrome trace JSON, events from every rank,
per-unit forward/backward compute, collectives, optimizer and data-wait spans, and forward
prefetch visible as overlap (the all-gather of unit u+1 is issued before unit u's forward ends).
usage: check_trace.py TRACE WORLD DEPTH"""
import json
import sys


def main():
    path, world, depth = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    with open(path) as f:
        doc = json.load(f)
    ev = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
    ranks = sorted({e["pid"] for e in ev})
    assert ranks == list(range(world)), f"ranks in trace {ranks}, expected 0..{world - 1}"
    for r in ranks:
        mine = [e for e in ev if e["pid"] == r]
        names = {e["name"] for e in mine}
        for need in ("forward", "backward", "all_gather", "reduce_scatter", "optimizer", "data_wait", "embed", "head"):
            assert need in names, f"rank {r}: no '{need}' events (have {sorted(names)})"
        fwd_units = {e["args"]["unit"] for e in mine if e["name"] == "forward"}
        assert fwd_units == set(range(1, depth + 1)), f"rank {r}: forward units {fwd_units}"
        for e in mine:
            assert e["dur"] >= 0 and e["ts"] >= 0, e
        # prefetch: some all_gather of unit u+1 starts before forward(u) ends, within one step
        fwd = sorted((e for e in mine if e["name"] == "forward"), key=lambda e: e["ts"])
        gathers = [e for e in mine if e["name"] == "all_gather"]
        overlapped = 0
        for f in fwd:
            u = f["args"]["unit"]
            end = f["ts"] + f["dur"]
            if any(g["args"].get("unit") == u + 1 and g["ts"] <= f["ts"] + 1 and g["ts"] + g["dur"] >= f["ts"]
                   for g in gathers):
                overlapped += 1
        assert overlapped > 0, f"rank {r}: no all-gather issued before the previous unit's forward"
        print(f"rank {r}: {len(mine)} events, {overlapped} forward units overlapped by the next unit's all-gather")
    return 0


if __name__ == "__main__":
    sys.exit(main())
