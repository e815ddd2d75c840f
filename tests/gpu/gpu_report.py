#!/usr/bin/env python3
"""Report of tests/gpu/run.sh.

  gpu_report.py report WORK OUT --state S --deadline D --elapsed E [--device cuda|cpu] [--bin DIR]
      reads WORK (steps.tsv, nvidia-smi.csv, device_op.json, ops.json, cmp_*.json, bench_*.json,
      runs/*/metrics.jsonl, logs/) and writes OUT/report.md and OUT/report.json, each by a rename
      (never half-written).
  gpu_report.py line KIND FILE
      one line for a stage's detail: KIND device | ops | compare | bench | sanitized_ops (the op
      test's report from under compute-sanitizer: "ran: ..." when its checks ran, else
      "not run: ...").

Library versions come from the provenance of the first CUDA process (device_op.json); when that
one failed, from the first other result that has one: bench_*.json, then the header record of a
training run's metrics.jsonl (the device runs first). report.md says which file they came from.

Works on partial input: a missing file is reported as missing; an ops.json that a killed test
left unterminated is read row by row."""
import glob
import json
import os
import re
import sys

H200_SXM_PEAK = 989e12  # dense bf16 tensor-core FLOP/s of an H100/H200 SXM
STANDARD_OP_KEYS = {"op", "variant", "output", "rel_err", "tol", "ok", "error"}


def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def load_ops(path):
    """ops.json of gpu_ops_vs_cpu; when it is unterminated (a killed run), the rows that are
    complete, with "truncated": true."""
    doc = load_json(path)
    if doc is not None or not os.path.exists(path):
        return doc
    rows = []
    with open(path, errors="replace") as f:
        for line in f:
            line = line.strip().rstrip(",")
            if line.startswith("{") and line.endswith("}"):
                try:
                    rows.append(json.loads(line))
                except ValueError:
                    pass
    return {"results": rows, "checks": len(rows), "failures": sum(not r.get("ok") for r in rows), "truncated": True}


def ver_int(v):
    """cuDNN 9 / cuBLASLt encode major*10000 + minor*100 + patch."""
    if not isinstance(v, int) or v <= 0:
        return None
    return "%d.%d.%d (%d)" % (v // 10000, v // 100 % 100, v % 100, v)


def provenance_versions(doc):
    prov = (doc or {}).get("provenance") or {}
    libs = prov.get("libraries") or {}
    gpu = prov.get("gpu") or {}
    return {
        "gpu": gpu.get("name"),
        "cuda_driver_api": gpu.get("driver"),
        "cuda_runtime": libs.get("cuda_runtime"),
        "cublaslt": ver_int(libs.get("cublaslt")),
        "cudnn": ver_int(libs.get("cudnn")),
        "nccl": libs.get("nccl"),
        "openblas": (libs.get("openblas") or {}).get("version"),
        "mpi": (libs.get("mpi") or {}).get("version"),
        "commit": prov.get("describe"),
    }


def read_provenance(path):
    """The "provenance" object of a result: a bench JSON, or the header record (the first line,
    "record": "header") of a training run's metrics.jsonl. None when there is none."""
    if path.endswith(".jsonl"):
        try:
            with open(path, errors="replace") as f:
                first = f.readline()
            doc = json.loads(first)
        except (OSError, ValueError):
            return None
        if not isinstance(doc, dict) or doc.get("record") != "header":
            return None
    else:
        doc = load_json(path)
    prov = doc.get("provenance") if isinstance(doc, dict) else None
    return prov if isinstance(prov, dict) else None


def versions_with_source(work):
    """(versions, source): the library versions of the first result whose provenance names a GPU
    (device_op.json, bench_*.json, the device runs' metrics.jsonl headers, the other runs'), else
    of the first result with any provenance (a CPU-only run: OpenBLAS, MPI, the commit); source is
    the file's path relative to WORK, or None when no result has a provenance."""
    runs = sorted(glob.glob(os.path.join(work, "runs", "*", "metrics.jsonl")))
    candidates = [os.path.join(work, "device_op.json")] + sorted(glob.glob(os.path.join(work, "bench_*.json"))) + \
        [p for p in runs if os.path.basename(os.path.dirname(p)).endswith("_dev")] + \
        [p for p in runs if not os.path.basename(os.path.dirname(p)).endswith("_dev")]
    first = None
    for path in candidates:
        prov = read_provenance(path)
        if prov is None:
            continue
        rel = os.path.relpath(path, work)
        if prov.get("gpu"):
            return provenance_versions({"provenance": prov}), rel
        if first is None:
            first = (provenance_versions({"provenance": prov}), rel)
    return first or (provenance_versions(None), None)


def line_sanitized_ops(path):
    """The op test's report written under compute-sanitizer: "ran: N checks, F outside tolerance"
    when every variant created its backends and recorded checks (memcheck watched them), else
    "not run: why" (the backend creation's error: the sanitizer could not attach to the device,
    say, or no report at all)."""
    doc = load_ops(path)
    if doc is None:
        return "not run: no report from the op test (%s)" % os.path.basename(path)
    rows = doc.get("results", [])
    backend = [r for r in rows if r.get("op") == "backend"]
    checks = [r for r in rows if r.get("op") != "backend"]
    stopped = ""
    if doc.get("aborted") or doc.get("truncated"):
        stopped = ", stopped: %s" % (doc.get("abort_reason") or "output cut off")
    if backend:
        b = backend[0]
        return "not run: %d of its variants could not create a backend (%s %s: %s); %d checks ran%s" % (
            len(backend), b.get("variant"), b.get("output"), str(b.get("error", "?"))[:200], len(checks), stopped)
    if not checks:
        return "not run: no checks recorded%s" % stopped
    return "ran: %d checks, %d outside tolerance%s" % (len(checks), sum(not r.get("ok") for r in checks), stopped)


def line_device(path):
    doc = load_json(path)
    if doc is None:
        return "no result (%s)" % os.path.basename(path)
    v = provenance_versions(doc)
    if not v["gpu"]:
        return "%s (no CUDA device in use)" % doc.get("device", "?")
    return "%s, CUDA driver API %s, runtime %s, cuBLASLt %s, cuDNN %s, NCCL %s" % (
        v["gpu"], v["cuda_driver_api"], v["cuda_runtime"], v["cublaslt"], v["cudnn"], v["nccl"])


def ops_per_op(rows):
    """Per op: checks, failures, the largest relative error and the row with the largest error
    relative to its tolerance, extra fields (path / algorithm) when the rows carry them."""
    per = {}
    for r in rows:
        p = per.setdefault(r.get("op", "?"), {"op": r.get("op", "?"), "checks": 0, "failures": 0, "max_rel_err": None,
                                               "worst": None, "worst_ratio": -1.0, "extra": []})
        p["checks"] += 1
        p["failures"] += not r.get("ok")
        rel, tol = r.get("rel_err"), r.get("tol")
        if isinstance(rel, (int, float)):
            p["max_rel_err"] = rel if p["max_rel_err"] is None else max(p["max_rel_err"], rel)
            ratio = rel / tol if tol else (0.0 if rel == 0 else float("inf"))
        else:
            ratio = float("inf")  # an op call that failed
        if ratio > p["worst_ratio"]:
            p["worst_ratio"], p["worst"] = ratio, r
        for k, val in r.items():
            item = "%s=%s" % (k, val)
            if k not in STANDARD_OP_KEYS and val not in ("", None) and item not in p["extra"] and len(p["extra"]) < 6:
                p["extra"].append(item)
    return list(per.values())


def worst_text(w, limit):
    """One row of ops.json as "op variant output: what went wrong": the failing call's message,
    a non-finite result (rel_err null), or rel_err against its tolerance."""
    where = "%s %s %s" % (w.get("op"), w.get("variant"), w.get("output"))
    if "error" in w:
        return "%s: error: %s" % (where, str(w["error"])[:limit])
    rel, tol = w.get("rel_err"), w.get("tol")
    if not isinstance(rel, (int, float)):
        return "%s: non-finite result (%s non-finite values)" % (where, w.get("nonfinite", "?"))
    return "%s: %.2e (tol %s)" % (where, rel, fmt(tol, "%.0e"))


def line_ops(path):
    doc = load_ops(path)
    if doc is None:
        return "no ops.json"
    rows = doc.get("results", [])
    s = "%d checks, %d failed" % (doc.get("checks", len(rows)), doc.get("failures", 0))
    if doc.get("aborted"):
        s += ", stopped by a CHECK"
    if doc.get("truncated"):
        s += ", output cut off"
    worst = max(ops_per_op(rows), key=lambda p: p["worst_ratio"], default=None)
    if worst and worst["worst"]:
        s += "; worst: " + worst_text(worst["worst"], 120)
    return s


def line_compare(path):
    r = load_json(path)
    if r is None:
        return "no comparison (%s)" % os.path.basename(path)
    if "error" in r:
        return "%s: %s" % (r.get("name"), r["error"])
    return "%s %d steps max rel %.2e (tol %g)%s%s" % (
        r.get("key"), r.get("steps", 0), r.get("max_rel_diff", float("nan")), r.get("tol"),
        "" if r.get("finite", True) else " NON-FINITE", "" if r.get("ok") else " FAIL")


def bench_numbers(doc):
    on_gpu = bool(((doc.get("provenance") or {}).get("gpu")))
    tflops = doc.get("tflops") or 0.0
    return {
        "model": doc.get("model"), "device": doc.get("device"), "batch_size": doc.get("batch_size"),
        "steps": doc.get("steps"), "img_per_s": doc.get("img_per_s"), "tflops": tflops,
        "mfu_989": tflops * 1e12 / H200_SXM_PEAK if on_gpu else None, "mfu_reported": doc.get("mfu"),
        "peak_kind": doc.get("peak_kind"), "step_time_s": doc.get("step_time_s"),
        "peak_mem_bytes": doc.get("peak_mem_bytes"), "max_rss_bytes": doc.get("max_rss_bytes"),
        "loss_first": doc.get("loss_first"), "loss_last": doc.get("loss_last"), "time_split": doc.get("time_split"),
    }


def fmt(v, spec="%.3g", none="-"):
    return none if v is None else spec % v


def line_bench(path):
    doc = load_json(path)
    if doc is None:
        return "no bench JSON"
    b = bench_numbers(doc)
    mfu = "MFU %s of 989 TF/s" % fmt(b["mfu_989"] and 100 * b["mfu_989"], "%.1f%%") if b["mfu_989"] is not None \
        else "MFU (%s peak) %s" % (b["peak_kind"], fmt(b["mfu_reported"]))
    return "%s img/s, %s TFLOP/s, %s, peak mem (arena) %s GiB, loss %s -> %s" % (
        fmt(b["img_per_s"], "%.1f"), fmt(b["tflops"], "%.2f"), mfu, fmt((b["peak_mem_bytes"] or 0) / 2**30, "%.2f"),
        fmt(b["loss_first"], "%.4f"), fmt(b["loss_last"], "%.4f"))


def read_steps(work):
    steps = []
    try:
        with open(os.path.join(work, "steps.tsv")) as f:
            for ln in f:
                name, status, secs, detail = (ln.rstrip("\n").split("\t") + ["", "", "", ""])[:4]
                steps.append({"name": name, "status": status, "seconds": int(secs or 0), "detail": detail})
    except OSError:
        pass
    return steps


def read_smi(work):
    """nvidia-smi --query-gpu CSV -> list of dicts (header names without units)."""
    try:
        with open(os.path.join(work, "nvidia-smi.csv")) as f:
            lines = [ln.strip() for ln in f if ln.strip() and not ln.startswith("[gpu-check]")]
    except OSError:
        return []
    if len(lines) < 2:
        return []
    keys = [re.sub(r"\s*\[.*\]", "", k.strip()) for k in lines[0].split(",")]
    return [dict(zip(keys, [v.strip() for v in ln.split(",")])) for ln in lines[1:]]


def form_factor(name, power):
    if not name:
        return None
    if "NVL" in name:
        return "NVL (PCIe card)"
    if "PCIe" in name:
        return "PCIe"
    if re.search(r"H100|H200", name):
        return "SXM (name without NVL/PCIe; power limit %s)" % (power or "?")
    return "?"


def backend_notes(work):
    """Backend lines worth reading (device, attention path, cuDNN refusals), once each."""
    notes, seen = [], set()
    pat = re.compile(r"cuda backend:|cudnn|fallback|attention dropout|NCCL WARN|cublasLt.*error", re.I)
    for path in sorted(glob.glob(os.path.join(work, "logs", "*.log"))):
        try:
            with open(path, errors="replace") as f:
                for ln in f:
                    if not pat.search(ln) or ln.startswith("[gpu-check]"):
                        continue
                    key = re.sub(r"[0-9]+", "#", ln.strip())[:160]
                    if key not in seen and len(notes) < 24:
                        seen.add(key)
                        notes.append("%s: %s" % (os.path.basename(path), ln.strip()[:300]))
        except OSError:
            pass
    return notes


CUDA_LIB = re.compile(r"lib(cuda|cudart|cublas|cublasLt|cudnn\w*|nccl|nvrtc\S*|nvJitLink)\.so")


def libraries(work):
    """What the loader found: every 'not found' of the binaries' ldd, where the CUDA libraries
    resolve for the CUDA module (lib/libshardvit_cuda.so, which links them; the binaries do not), and the CUDA libraries a CUDA process really loaded (LD_DEBUG, which
    also sees what cudart and cuDNN open at run time)."""
    out = {"not_found": [], "module_cuda": [], "loaded_cuda": []}
    for path in sorted(glob.glob(os.path.join(work, "logs", "ldd_*.txt"))):
        who = os.path.basename(path)[4:-4]
        with open(path, errors="replace") as f:
            for ln in f:
                ln = ln.strip()
                if "not found" in ln and not ln.startswith("[gpu-check]"):
                    out["not_found"].append("%s: %s" % (who, ln))
                elif who == "libshardvit_cuda.so" and "=>" in ln and CUDA_LIB.search(ln.split("=>")[0]):
                    out["module_cuda"].append(re.sub(r"\s*\(0x[0-9a-f]+\)$", "", ln))
    seen = set()
    for path in sorted(glob.glob(os.path.join(work, "logs", "ld_debug.*"))):
        with open(path, errors="replace") as f:
            for ln in f:
                m = re.search(r"calling init: (\S+)", ln)
                if m and CUDA_LIB.search(os.path.basename(m.group(1))) and m.group(1) not in seen:
                    seen.add(m.group(1))
                    out["loaded_cuda"].append(m.group(1))
    return out


def verdict(state, steps):
    if state != "final":
        running = [s["name"] for s in steps if s["status"] == "running"]
        return "incomplete", "state: %s%s" % (state, "; running: " + ", ".join(running) if running else "")
    bad = [s["name"] for s in steps if s["status"] in ("fail",) or
           (s["name"] != "sanitizer" and (s["status"] == "timeout" or
                                          (s["status"] == "skipped" and s["detail"].startswith("deadline"))))]
    return ("fail", "not passed: " + ", ".join(bad)) if bad else ("pass", "no stage failed")


def write_atomic(path, text):
    tmp = os.path.join(os.path.dirname(path), "." + os.path.basename(path) + ".tmp")
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def build_report(work, args):
    steps = read_steps(work)
    smi = read_smi(work)
    versions, versions_source = versions_with_source(work)
    g = smi[0] if smi else {}
    summary = dict(versions)
    summary["versions_from"] = versions_source
    if not summary["commit"]:  # no CUDA process ran: the version line run.sh recorded
        try:
            with open(os.path.join(work, "environment.txt"), errors="replace") as f:
                m = re.search(r"shardvit \S+ \(commit [^)]*\)", f.read())
            summary["commit"] = m.group(0) if m else None
        except OSError:
            pass
    summary.update({
        "gpu": g.get("name") or versions["gpu"], "gpus": len(smi), "driver": g.get("driver_version"),
        "form_factor": form_factor(g.get("name") or versions["gpu"], g.get("power.limit")),
        "memory_total": g.get("memory.total"), "clocks_max_sm": g.get("clocks.max.sm"),
        "clocks_max_memory": g.get("clocks.max.memory"), "power_limit": g.get("power.limit"),
        "compute_cap": g.get("compute_cap"), "pci_bus_id": g.get("pci.bus_id"),
    })
    ops = load_ops(os.path.join(work, "ops.json"))
    comps = {os.path.basename(p)[4:-5]: load_json(p) for p in sorted(glob.glob(os.path.join(work, "cmp_*.json")))}
    bench = {}
    for p in sorted(glob.glob(os.path.join(work, "bench_*.json"))):
        doc = load_json(p)
        if doc:
            bench[os.path.basename(p)[6:-5]] = bench_numbers(doc)
    v, why = verdict(args["state"], steps)
    rep = {"verdict": v, "verdict_reason": why, "state": args["state"], "elapsed_s": args["elapsed"],
           "deadline_s": args["deadline"], "device_mode": args["device"], "binaries": args["bin"],
           "summary": summary, "stages": steps, "comparisons": comps, "bench": bench,
           "notes": backend_notes(work), "libraries": libraries(work), "ops": None}
    if ops is not None:
        per = ops_per_op(ops.get("results", []))
        for p in per:
            p.pop("worst_ratio", None)
        rep["ops"] = {k: ops.get(k) for k in ("checks", "failures", "aborted", "truncated")}
        rep["ops"].update({"per_op": per, "failing": [r for r in ops.get("results", []) if not r.get("ok")],
                           "results": ops.get("results", [])})
    return rep


def md_cell(s):
    return str(s if s is not None else "-").replace("|", "/").replace("\n", " ")


def table(head, rows):
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(md_cell(c) for c in r) + " |" for r in rows]
    return out


def versions_from_text(src):
    if src is None:
        return "no result with a provenance (no process of shardvit finished)"
    if src == "device_op.json":
        return "device_op.json (the device stage's first process)"
    return "%s (not device_op.json: the device stage wrote none, or one without a provenance)" % src


def render_md(rep):
    s, st = rep["summary"], {x["name"]: x for x in rep["stages"]}
    md = ["# shardvit GPU check: %s" % rep["verdict"].upper(), "",
          "%s. %d s of a %d s deadline; mode %s; binaries %s." % (
              rep["verdict_reason"], rep["elapsed_s"], rep["deadline_s"], rep["device_mode"], rep["binaries"]), "",
          "## Summary", ""]

    def bench_cell(m):
        b = rep["bench"].get(m)
        if not b:
            x = st.get("bench_" + m)
            return "%s%s" % (x["status"], ": " + x["detail"] if x and x["detail"] else "") if x else "-"
        return "%s img/s, %s TFLOP/s, MFU %s (989 TF/s), peak mem (arena) %s GiB" % (
            fmt(b["img_per_s"], "%.1f"), fmt(b["tflops"], "%.2f"), fmt(b["mfu_989"] and 100 * b["mfu_989"], "%.1f%%"),
            fmt((b["peak_mem_bytes"] or 0) / 2**30, "%.2f"))

    def stage_cell(name):
        x = st.get(name)
        return "%s: %s" % (x["status"], x["detail"]) if x else "-"

    n = {k: ("-" if v is None else v) for k, v in s.items()}
    md += table(["item", "value"], [
        ["device", "%s (%s GPU(s)), %s" % (n["gpu"], n["gpus"], n["form_factor"])],
        ["driver", "%s (CUDA driver API %s)" % (n["driver"], n["cuda_driver_api"])],
        ["memory / max clocks / power", "%s / SM %s, memory %s / %s" % (
            n["memory_total"], n["clocks_max_sm"], n["clocks_max_memory"], n["power_limit"])],
        ["CUDA runtime", s["cuda_runtime"]], ["cuBLASLt", s["cublaslt"]], ["cuDNN", s["cudnn"]],
        ["NCCL", s["nccl"]], ["OpenBLAS / MPI", "%s / %s" % (n["openblas"], n["mpi"])],
        ["library versions from", versions_from_text(s["versions_from"])], ["shardvit", s["commit"]],
        ["ops CUDA vs CPU", stage_cell("ops")], ["tiny ViT fp32 fwd/bwd", stage_cell("tiny_vit_fp32")],
        ["FSDP bf16 steps", stage_cell("fsdp_bf16")], ["attn-drop fp32", stage_cell("attn_drop_fp32")],
        ["attn-drop bf16", stage_cell("attn_drop_bf16")], ["NCCL comm", stage_cell("nccl")],
        ["vit-s16 bf16 bench", bench_cell("vit-s16")], ["vit-b16 bf16 bench", bench_cell("vit-b16")],
    ])
    md += ["", "## Stages", ""]
    md += table(["stage", "status", "s", "detail"], [
        [x["name"], x["status"] + (": " + x["detail"] if x["status"] == "skipped" else ""), x["seconds"],
         "" if x["status"] == "skipped" else x["detail"]] for x in rep["stages"]])
    ops = rep["ops"]
    if ops:
        md += ["", "## Ops, CUDA vs CPU: relative error max|cuda-cpu|/max|cpu| per op", "",
               "%s checks, %s failed%s%s." % (ops["checks"], ops["failures"], ", stopped by a CHECK" if ops["aborted"]
                                               else "", ", output cut off (killed)" if ops["truncated"] else ""), ""]
        md += table(["op", "checks", "failed", "max rel err", "worst vs tol (variant, output)", "extra fields"], [
            [p["op"], p["checks"], p["failures"], fmt(p["max_rel_err"], "%.2e"),
             worst_text(p["worst"], 100) if p["worst"] else "-",
             ", ".join(p["extra"])] for p in ops["per_op"]])
        if ops["failing"]:
            md += ["", "Failing checks:", ""]
            md += table(["op", "variant", "output", "rel err / error", "tol"], [
                [r.get("op"), r.get("variant"), r.get("output"),
                 r["error"] if "error" in r else fmt(r.get("rel_err"), "%.3e"), fmt(r.get("tol"), "%.0e")]
                for r in ops["failing"]])
    if rep["comparisons"]:
        md += ["", "## Training runs, device vs CPU (compare_losses.py)", ""]
        md += table(["comparison", "steps", "max rel diff", "tol", "worst step", "result"], [
            [n, c.get("steps"), fmt(c.get("max_rel_diff"), "%.3e"), c.get("tol"), c.get("worst_step"),
             "ok" if c.get("ok") else "FAIL" + (" (%s)" % c["error"] if "error" in c else "")]
            for n, c in rep["comparisons"].items() if c])
    if rep["bench"]:
        md += ["", "## Benchmarks (bf16)", ""]
        md += table(["model", "batch", "img/s", "TFLOP/s", "MFU of 989 TF/s", "MFU (bench's peak)", "step s",
                     "peak mem (arena) GiB", "loss first -> last"], [
            [m, b["batch_size"], fmt(b["img_per_s"], "%.1f"), fmt(b["tflops"], "%.2f"),
             fmt(b["mfu_989"] and 100 * b["mfu_989"], "%.1f%%"), "%s (%s)" % (fmt(b["mfu_reported"]), b["peak_kind"]),
             fmt(b["step_time_s"], "%.4f"), fmt((b["peak_mem_bytes"] or 0) / 2**30, "%.2f"),
             "%s -> %s" % (fmt(b["loss_first"], "%.4f"), fmt(b["loss_last"], "%.4f"))] for m, b in rep["bench"].items()])
    libs = rep["libraries"]
    if any(libs.values()):
        md += ["", "## CUDA libraries", ""]
        md += ["- not found: " + md_cell(x) for x in libs["not_found"]]
        md += ["- the CUDA module links " + md_cell(x) for x in libs["module_cuda"]]
        md += ["- loaded by the first CUDA process: " + md_cell(x) for x in libs["loaded_cuda"]]
    if rep["notes"]:
        md += ["", "## Backend notes from the logs", ""] + ["- " + md_cell(n) for n in rep["notes"]]
    md += ["", "Everything else: environment.txt (ldd of every binary, loaded libraries, nvidia-smi -q) and "
           "logs.tgz (each stage's log, ops.json, bench JSON, metrics of every run)."]
    return "\n".join(md) + "\n"


def main(argv):
    if len(argv) >= 3 and argv[0] == "line":
        kind, path = argv[1], argv[2]
        fn = {"device": line_device, "ops": line_ops, "compare": line_compare, "bench": line_bench,
              "sanitized_ops": line_sanitized_ops}.get(kind)
        if not fn:
            print("gpu_report.py: unknown line kind %r" % kind, file=sys.stderr)
            return 2
        print(fn(path))
        return 0
    if len(argv) >= 3 and argv[0] == "report":
        work, out = argv[1], argv[2]
        opts = {"state": "final", "deadline": 0, "elapsed": 0, "device": "cuda", "bin": ""}
        rest = argv[3:]
        for i in range(0, len(rest) - 1, 2):
            key = rest[i].lstrip("-")
            if key in opts:
                opts[key] = int(rest[i + 1]) if key in ("deadline", "elapsed") else rest[i + 1]
        rep = build_report(work, opts)
        write_atomic(os.path.join(out, "report.json"), json.dumps(rep, indent=1, default=str) + "\n")
        write_atomic(os.path.join(out, "report.md"), render_md(rep))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
