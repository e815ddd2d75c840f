#!/usr/bin/env python3
"""Validate a shardvit --trace file: well-formed Chrome trace JSON, events from every rank,
per-unit forward/backward compute, collectives, optimizer and data-wait spans, and forward
prefetch visible as overlap (the all-gather of unit u+1 is issued before unit u's forward ends).

Track layout (docs/fsdp.md "Trace tracks"): complete ("X") events on one (pid, tid) must nest or
be disjoint, as the Chrome trace format requires (Perfetto drops or mis-draws the others), so
collectives that are in flight at the same time must sit on different tracks; every track used
is named by a thread_name metadata event, and compute slices have a track of their own.
With --all-reduce STEPS (hybrid_shard / no_shard): every rank has one cross-replica all_reduce per
unit (root + DEPTH blocks) per step, each starting after a reduce_scatter of its unit has ended
(it reduces the shard that the reduce-scatter produced).
usage: check_trace.py [--tracks-only] [--all-reduce STEPS] TRACE WORLD DEPTH
       (--tracks-only: the track checks alone)"""
import json
import sys
from collections import defaultdict

EPS_US = 0.05  # timestamps are written with 0.1 us resolution


def partial_overlaps(events):
    """Pairs of events on one track that overlap without one containing the other. Sorted by
    start (longest first on equal starts), a well-nested track is checked with a stack: an event
    must end before the innermost open event ends, else it straddles that event's end."""
    bad = []
    evs = sorted(events, key=lambda e: (e["ts"], -e["dur"]))
    stack = []
    for e in evs:
        a, z = e["ts"], e["ts"] + e["dur"]
        while stack and stack[-1]["ts"] + stack[-1]["dur"] <= a + EPS_US:
            stack.pop()
        if stack and z > stack[-1]["ts"] + stack[-1]["dur"] + EPS_US:
            bad.append((stack[-1], e))
            continue  # report, and keep checking the rest against the outer events
        stack.append(e)
    return bad


def check_tracks(doc, ev):
    """Strict nesting per (pid, tid); named tracks; compute alone on its track(s)."""
    tracks = defaultdict(list)
    for e in ev:
        tracks[(e["pid"], e["tid"])].append(e)
    names = {(m["pid"], m["tid"]): m["args"]["name"] for m in doc["traceEvents"]
             if m.get("ph") == "M" and m.get("name") == "thread_name"}
    total = 0
    for key, evs in sorted(tracks.items()):
        assert key in names, f"track pid {key[0]} tid {key[1]} has no thread_name metadata"
        cats = {e["cat"] for e in evs}
        assert len(cats) == 1, f"track {key} ({names[key]}) mixes categories {sorted(cats)}"
        bad = partial_overlaps(evs)
        total += len(bad)
        for a, b in bad[:3]:
            print(f"  partial overlap on pid {key[0]} tid {key[1]} ({names[key]}): "
                  f"{a['name']} unit {a.get('args', {}).get('unit')} [{a['ts']}, {a['ts'] + a['dur']:.1f}] and "
                  f"{b['name']} unit {b.get('args', {}).get('unit')} [{b['ts']}, {b['ts'] + b['dur']:.1f}]")
    assert total == 0, f"{total} pairs of complete events partially overlap on one track (of {len(ev)} events)"
    return len(tracks)


def self_test():
    """The nesting check itself must catch a straddling pair and accept nesting and touching."""
    X = lambda ts, dur: {"ts": ts, "dur": dur, "name": "x"}
    assert partial_overlaps([X(0, 10), X(5, 10)]), "straddling pair not detected"
    assert partial_overlaps([X(0, 100), X(10, 10), X(15, 10)]), "straddling pair inside a parent not detected"
    assert not partial_overlaps([X(0, 10), X(10, 5), X(2, 3), X(20, 0)])
    assert not partial_overlaps([X(0, 100), X(0, 50), X(10, 10), X(60, 40)])


def check_all_reduce(rank, mine, depth, steps):
    """One all_reduce per unit (0 = root, 1..depth blocks) per step, each after a reduce_scatter
    of the same unit has completed."""
    ars = [e for e in mine if e["name"] == "all_reduce"]
    per_unit = defaultdict(int)
    for e in ars:
        per_unit[e["args"]["unit"]] += 1
    want = {u: steps for u in range(depth + 1)}
    assert dict(per_unit) == want, f"rank {rank}: all_reduce events per unit {dict(per_unit)}, expected {want}"
    rs_end = defaultdict(list)
    for e in mine:
        if e["name"] == "reduce_scatter":
            rs_end[e["args"]["unit"]].append(e["ts"] + e["dur"])
    # the all-reduce is issued right after the reduce-scatter's wait returns, so the two can be
    # less than a microsecond apart: ts and dur are each rounded to 0.1 us, an end up to 0.1 us
    for e in ars:
        u = e["args"]["unit"]
        assert any(z <= e["ts"] + 0.2 for z in rs_end[u]), \
            (f"rank {rank}: all_reduce of unit {u} at {e['ts']} before any reduce_scatter of it ended "
             f"(first end {min(rs_end[u], default=None)})")
    print(f"rank {rank}: {len(ars)} all_reduce events ({steps} per unit), each after its unit's reduce_scatter")


def main():
    args = sys.argv[1:]
    tracks_only = "--tracks-only" in args
    args = [a for a in args if a != "--tracks-only"]
    ar_steps = None
    if "--all-reduce" in args:
        i = args.index("--all-reduce")
        ar_steps = int(args[i + 1])
        del args[i:i + 2]
    path, world, depth = args[0], int(args[1]), int(args[2])
    self_test()
    with open(path) as f:
        doc = json.load(f)
    ev = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
    ranks = sorted({e["pid"] for e in ev})
    assert ranks == list(range(world)), f"ranks in trace {ranks}, expected 0..{world - 1}"
    ntracks = check_tracks(doc, ev)
    print(f"{len(ev)} complete events on {ntracks} tracks: every track well nested")
    if tracks_only:
        return 0
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
        if ar_steps is not None:
            check_all_reduce(r, mine, depth, ar_steps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
