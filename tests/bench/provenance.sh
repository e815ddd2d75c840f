#!/bin/bash
# Usage: provenance.sh SHARDVIT MPIEXEC SOURCE_DIR CMAKE CUDA(ON|OFF) MPI(ON|OFF)
# Reproducible results (docs/performance.md "Provenance"): checks that the fields are there AND
# right, not only present:
# - shardvit --version / version --json: the commit equals `git rev-parse HEAD` of the source
#   directory (or "unknown" outside git), the dirty flag equals `git status`, the build options
#   equal the CMake options; cmake/build_info.cmake on a tree without .git says "unknown";
# - bench (train, --op, --comm) results carry the provenance: world size, ranks per node,
#   threads, the resolved config, start time within this test's run, CPU ISA features as
#   /proc/cpuinfo lists them, the loaded MPI / OpenBLAS, CUDA libraries null on the CPU;
# - bench --comm: all four collectives, busbw recomputed from algbw with nccl-tests' factors
#   for the group's size, --comm-group intra / inter sizes, bad values refused naming the flag;
# - train: one metrics.jsonl header record (kept on resume), wall-clock time on every record,
#   non-decreasing and inside the run's start/end, CPU MFU = achieved / the header's peak,
#   eval.json provenance, the report's provenance sections;
# - bench --sweep: one CSV row and one JSONL row per configuration, in grid order, columns
#   equal to the JSON results; bench-compare prints B/A and refuses another model / batch /
#   precision / mode with a non-zero exit.
# Exit 77 without python3 or without MPI.
set -u
SV=$1
MPIEXEC=${2:-}
SRC=$3
CMAKE=$4
CUDA=$5
MPI=$6
PY=$(command -v python3 || true)
[ -n "$PY" ] || { echo "SKIP: no python3 to check JSON"; exit 77; }
[ -n "$MPIEXEC" ] || { echo "SKIP: single-process build (the checks need 2 and 4 ranks)"; exit 77; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
T0=$(date +%s.%N)

# ---- version: the commit and dirty flag of the source tree, the build options ----
if command -v git >/dev/null && git -C "$SRC" rev-parse --verify HEAD >/dev/null 2>&1 && [ -e "$SRC/.git" ]; then
    COMMIT=$(git -C "$SRC" rev-parse HEAD)
    if [ -z "$(git -C "$SRC" status --porcelain --untracked-files=no)" ]; then DIRTY=false; else DIRTY=true; fi
else
    COMMIT=unknown
    DIRTY=null
fi
"$SV" --version >"$TMP/v.txt" || fail "shardvit --version exited $?"
"$SV" version >"$TMP/v2.txt" || fail "shardvit version exited $?"
cmp -s "$TMP/v.txt" "$TMP/v2.txt" || fail "--version and version differ"
grep -q "^shardvit [0-9]*\.[0-9]*\.[0-9]* (commit $COMMIT" "$TMP/v.txt" || { cat "$TMP/v.txt"; fail "version line does not name commit $COMMIT"; }
grep -q "CUDA $( [ "$CUDA" = ON ] && echo on || echo off)" "$TMP/v.txt" || fail "version: CUDA option"
"$SV" version --json >"$TMP/v.json" || fail "version --json"
"$SV" version --bogus >/dev/null 2>&1 && fail "version --bogus accepted"
"$PY" - "$TMP/v.json" "$COMMIT" "$DIRTY" "$CUDA" "$MPI" <<'PYEOF' || fail "version --json"
import json, sys
d = json.load(open(sys.argv[1]))
commit, dirty, cuda, mpi = sys.argv[2], json.loads(sys.argv[3]), sys.argv[4] == "ON", sys.argv[5] == "ON"
assert d["commit"] == commit, (d["commit"], commit)
# a clean tree now was clean at build time (CI: clone, build, test); a tree edited since the
# build may have been either (the generator's dirty logic is checked on a scratch repository)
assert d["dirty"] == dirty if dirty is not True else d["dirty"] in (True, False), (d["dirty"], dirty)
assert d["build"]["cuda"] == cuda and d["build"]["mpi"] == mpi, d["build"]
assert d["build"]["compiler"].split()[0] in ("gcc", "clang"), d["build"]["compiler"]
assert set(d["build"]["cpu_kernels_compiled"]) == {"generic", "avx2", "avx512"}
assert d["cpu"]["cpu_kernels_dispatch"] in d["build"]["cpu_kernels_compiled"]
print("ok version: commit", commit, "dirty", dirty)
PYEOF
# the generator on a scratch repository: its commit, clean, then dirty after an edit of a tracked
# file (an untracked file does not count)
if command -v git >/dev/null; then
    R=$TMP/repo
    git init -q "$R" && echo a >"$R/f" && git -C "$R" add f &&
        git -C "$R" -c user.name=t -c user.email=t@t commit -qm init || fail "scratch repository"
    "$CMAKE" -DSRC="$R" -DOUT="$TMP/r.h" -P "$SRC/cmake/build_info.cmake" || fail "build_info.cmake on a repository"
    grep -q "#define SV_BUILD_COMMIT \"$(git -C "$R" rev-parse HEAD)\"" "$TMP/r.h" && grep -q '#define SV_BUILD_DIRTY 0' "$TMP/r.h" ||
        { cat "$TMP/r.h"; fail "build_info.cmake: commit / clean"; }
    echo b >"$R/untracked"
    "$CMAKE" -DSRC="$R" -DOUT="$TMP/r.h" -P "$SRC/cmake/build_info.cmake" && grep -q '#define SV_BUILD_DIRTY 0' "$TMP/r.h" ||
        fail "build_info.cmake: an untracked file made the tree dirty"
    echo c >"$R/f"
    "$CMAKE" -DSRC="$R" -DOUT="$TMP/r.h" -P "$SRC/cmake/build_info.cmake" && grep -q '#define SV_BUILD_DIRTY 1' "$TMP/r.h" ||
        { cat "$TMP/r.h"; fail "build_info.cmake: an edited tracked file is not dirty"; }
fi
# a source tree without .git (a tarball): commit unknown, dirty unknown
mkdir -p "$TMP/tarball"
"$CMAKE" -DSRC="$TMP/tarball" -DOUT="$TMP/bi.h" -DVERSION=9.9.9 -P "$SRC/cmake/build_info.cmake" || fail "build_info.cmake"
grep -q '#define SV_BUILD_COMMIT "unknown"' "$TMP/bi.h" && grep -q '#define SV_BUILD_DIRTY -1' "$TMP/bi.h" ||
    { cat "$TMP/bi.h"; fail "build_info.cmake outside git"; }

# ---- bench results: train (2 ranks), --op, --comm ----
TINY="--model vit-28 --dim 32 --depth 2 --heads 2 --device cpu --threads 1"
"$MPIEXEC" -n 2 "$SV" bench $TINY --batch-size 8 --steps 2 --warmup 1 --calib-seconds 0.02 --json "$TMP/train.json" \
    2>"$TMP/train.err" || { cat "$TMP/train.err"; fail "bench"; }
"$SV" bench --op layernorm $TINY --batch-size 4 --steps 2 --warmup 1 --json "$TMP/op.json" 2>/dev/null || fail "bench --op"
"$MPIEXEC" -n 4 "$SV" bench --comm --comm-min 4K --comm-max 16K --device cpu --threads 1 --comm-group intra:2 \
    --json "$TMP/intra.json" 2>/dev/null || fail "bench --comm --comm-group intra:2"
"$MPIEXEC" -n 4 "$SV" bench --comm --comm-min 4K --comm-max 16K --device cpu --threads 1 --comm-group inter:2 \
    --json "$TMP/inter.json" 2>/dev/null || fail "bench --comm --comm-group inter:2"
"$MPIEXEC" -n 4 "$SV" bench --comm --comm-min 4K --comm-max 4K --device cpu --threads 1 \
    --json "$TMP/world.json" 2>/dev/null || fail "bench --comm"
"$SV" bench --comm --comm-group bogus --device cpu >/dev/null 2>"$TMP/bad.err"
[ $? = 2 ] && grep -q -- "--comm-group 'bogus'" "$TMP/bad.err" || { cat "$TMP/bad.err"; fail "--comm-group bogus not refused"; }
"$MPIEXEC" -n 4 "$SV" bench --comm --comm-group 3 --device cpu >/dev/null 2>"$TMP/bad3.err" &&
    fail "--comm-group 3 accepted on 4 ranks"
grep -q "group size 3 must divide the world size 4" "$TMP/bad3.err" || { cat "$TMP/bad3.err"; fail "--comm-group 3 message"; }
T1=$(date +%s.%N)
"$PY" - "$TMP" "$COMMIT" "$T0" "$T1" "$MPI" <<'PYEOF' || fail "bench provenance"
import datetime, json, sys
tmp, commit, t0, t1, mpi = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), sys.argv[5] == "ON"
flags = next((l.split(":", 1)[1].split() for l in open("/proc/cpuinfo") if l.startswith("flags")), [])

def cpuinfo_field(name):  # the first processor's value of a /proc/cpuinfo field
    return next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.split(":", 1)[0].strip() == name)

def prov(d, world, rpn, threads, command="bench"):
    p = d["provenance"]
    assert p["commit"] == commit and p["command"] == command, (p["commit"], p["command"])
    assert p["world_size"] == world and p["ranks_per_node"] == rpn and p["threads_per_rank"] == threads, p
    assert t0 - 1 <= p["start_unix"] <= t1 + 1, (t0, p["start_unix"], t1)
    utc = datetime.datetime.strptime(p["start_utc"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)
    assert abs(utc.timestamp() - p["start_unix"]) < 0.002, (p["start_utc"], p["start_unix"])
    # /proc/cpuinfo's names; amx-bf16 also needs the kernel's grant of the tile state
    names = {"sse4.2": "sse4_2", "avx": "avx", "avx2": "avx2", "fma": "fma", "avx512f": "avx512f",
             "avx512bw": "avx512bw", "avx512dq": "avx512dq", "avx512vl": "avx512vl", "avx512bf16": "avx512_bf16"}
    for isa, cpuinfo in names.items():
        assert (isa in p["cpu"]["isa"]) == (cpuinfo in flags), (isa, p["cpu"]["isa"])
    assert "amx-bf16" not in p["cpu"]["isa"] or "amx_bf16" in flags
    # CPUID's identity as /proc/cpuinfo decodes it; the GELU backward's form follows the rule of
    # model/backend/cpu/gelu_grad16.h (AMD family 0x19 gathers where the AVX-512 table runs)
    assert p["cpu"]["vendor"] == cpuinfo_field("vendor_id"), (p["cpu"]["vendor"], cpuinfo_field("vendor_id"))
    for key, field in (("family", "cpu family"), ("model_number", "model"), ("stepping", "stepping")):
        assert p["cpu"][key] == int(cpuinfo_field(field)), (key, p["cpu"][key], cpuinfo_field(field))
    gather = p["cpu"]["vendor"] == "AuthenticAMD" and p["cpu"]["family"] == 0x19 and p["cpu"]["cpu_kernels_dispatch"] == "avx512"
    assert p["cpu"]["gelu_bwd16"] == ("gather" if gather else "compute"), p["cpu"]
    libs = p["libraries"]
    assert libs["openblas"]["version"].startswith("OpenBLAS"), libs["openblas"]
    assert "turbojpeg" in libs["libjpeg_turbo"]["file"], libs["libjpeg_turbo"]
    if mpi:
        assert libs["mpi"]["version"] and "mpi" in libs["mpi"]["file"].lower(), libs["mpi"]
    for k in ("nccl", "cuda_runtime", "cudnn", "cublaslt"):  # the CPU backend: no CUDA libraries
        assert libs[k] is None, (k, libs[k])
    assert p["gpu"] is None
    return p

d = json.load(open(tmp + "/train.json"))
p = prov(d, 2, 2, 1)
assert p["config"]["batch-size"] == 8 and p["config"]["model"] == "vit-28" and p["config"]["steps"] == 2, p["config"]
assert d["world"] == p["world_size"]
op = json.load(open(tmp + "/op.json"))
prov(op, 1, 1, 1)
assert op["provenance"]["config"]["op"] == "layernorm"

factor = lambda op, n: {"all_reduce": 2 * (n - 1) / n, "broadcast": 1.0}.get(op, (n - 1) / n)
for name, group, n in (("intra", "intra", 2), ("inter", "inter", 2), ("world", "world", 4)):
    c = json.load(open("%s/%s.json" % (tmp, name)))
    prov(c, 4, 4, 1)
    assert c["group"] == group and c["group_size"] == n and c["groups"] == 4 // n, c
    ops = [r["op"] for r in c["results"]]
    assert set(ops) == {"all_gather", "reduce_scatter", "all_reduce", "broadcast"}, ops
    for r in c["results"]:
        per_rank = r["op"] in ("all_gather", "reduce_scatter")
        assert r["size_bytes"] == r["count_per_rank"] * 4 * (n if per_rank else 1), r
        alg = r["size_bytes"] / (r["time_us"] * 1e-6) / 1e9
        assert abs(r["algbw_gbps"] - alg) <= 1e-9 * alg, r
        assert abs(r["busbw_gbps"] - alg * factor(r["op"], n)) <= 1e-9 * alg, (r, factor(r["op"], n))
print("ok bench provenance and --comm (world, intra:2, inter:2)")
PYEOF

# ---- train: metrics.jsonl header, wall clock, CPU MFU, eval.json, report; resume keeps one header ----
RUN="--model vit-28 --dim 36 --depth 2 --heads 3 --batch-size 16 --synth-samples 256 --log-every 1 --seed 5 --workers 1 --threads 1 --val-data synthetic --ckpt-every 3"
T2=$(date +%s.%N)
"$MPIEXEC" -n 2 "$SV" train $RUN --steps 3 --out "$TMP/run" >"$TMP/run1.log" 2>&1 || { tail "$TMP/run1.log"; fail "train"; }
"$MPIEXEC" -n 2 "$SV" train $RUN --steps 5 --out "$TMP/run" --resume auto >"$TMP/run2.log" 2>&1 ||
    { tail "$TMP/run2.log"; fail "train --resume"; }
T3=$(date +%s.%N)
"$SV" report "$TMP/run" --out "$TMP/report.html" 2>/dev/null || fail "report"
"$PY" - "$TMP" "$COMMIT" "$T2" "$T3" <<'PYEOF' || fail "train provenance"
import json, sys
tmp, commit, t0, t1 = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
lines = [json.loads(l) for l in open(tmp + "/run/metrics.jsonl")]
heads = [r for r in lines if r.get("record") == "header"]
assert len(heads) == 1 and lines[0] is heads[0], "one header record, the first line"
h = heads[0]
assert "step" not in h and "loss" not in h
p = h["provenance"]
assert p["commit"] == commit and p["command"] == "train" and p["world_size"] == 2 and p["threads_per_rank"] == 1, p
assert p["config"]["steps"] == 3 and p["config"]["batch-size"] == 16, p["config"]  # the run that wrote it
assert t0 - 1 <= p["start_unix"] <= t1
peak = h["mfu_peak"]
assert peak["kind"] == "isa" and peak["flops"] > 0 and abs(peak["flops"] - peak["per_core_flops"] * peak["cores_used"]) <= 1e-5 * peak["flops"], peak
steps = [r for r in lines if "loss" in r]
assert [r["step"] for r in steps] == [1, 2, 3, 4, 5], [r["step"] for r in steps]
times = [r["time"] for r in lines[1:]]
assert all(t0 <= t <= t1 for t in times), (t0, times, t1)
assert times == sorted(times), times
for r in steps:  # MFU against the peak in the header (the resumed run measured its own, close to it)
    assert r["mfu"] is not None and r["mfu"] > 0
    assert abs(r["mfu"] - r["tflops"] * 1e12 / peak["flops"]) <= 0.5 * r["mfu"], (r, peak)
for r in steps[:3]:
    assert abs(r["mfu"] - r["tflops"] * 1e12 / peak["flops"]) <= 1e-5 * r["mfu"], (r, peak)
e = json.load(open(tmp + "/run/eval.json"))
assert e["provenance"]["command"] == "train" and e["provenance"]["commit"] == commit
assert e["provenance"]["config"]["steps"] == 5  # written by the resumed run
html = open(tmp + "/report.html").read()
for sid in ("provenance-run", "provenance-eval", "provenance-report"):
    assert 'id="%s"' % sid in html, sid
assert commit in html
print("ok train: header, %d timed records, MFU vs ISA peak %.3g FLOP/s, eval.json, report" % (len(times), peak["flops"]))
PYEOF

# ---- sweep rows, bench-compare ----
"$SV" bench $TINY --steps 1 --warmup 0 --calib-seconds 0.01 --sweep models=vit-28,vit-32 batch=8,16 param-dtype=fp32,bf16 \
    --sweep-csv "$TMP/s.csv" --sweep-jsonl "$TMP/s.jsonl" 2>"$TMP/sweep.err" || { tail "$TMP/sweep.err"; fail "bench --sweep"; }
"$SV" bench $TINY --sweep bogus=1 >/dev/null 2>&1 && fail "--sweep bogus=1 accepted"
"$SV" bench $TINY --sweep batch=8,x --sweep-csv "$TMP/bad.csv" >/dev/null 2>"$TMP/badb.err"
[ $? = 2 ] && grep -q -- "--sweep: batch 'x'" "$TMP/badb.err" && [ ! -e "$TMP/bad.csv" ] ||
    { cat "$TMP/badb.err"; fail "--sweep batch=8,x: not refused before running"; }
"$SV" bench $TINY models=vit-28 >/dev/null 2>&1 && fail "a KEY=V positional without --sweep accepted"
"$PY" - "$TMP" <<'PYEOF' || fail "sweep rows"
import csv, itertools, json, sys
tmp = sys.argv[1]
rows = list(csv.DictReader(open(tmp + "/s.csv")))
js = [json.loads(l) for l in open(tmp + "/s.jsonl")]
grid = list(itertools.product(["vit-28", "vit-32"], [8, 16], ["fp32", "bf16"]))
assert len(rows) == len(js) == len(grid), (len(rows), len(js))
timm = ["model", "train_samples_per_sec", "train_step_time", "train_batch_size", "train_img_size", "param_count", "infer_gmacs"]
assert list(rows[0])[:len(timm)] == timm, list(rows[0])
for (m, b, dt), r, j in zip(grid, rows, js):
    assert (r["model"], int(r["train_batch_size"]), r["param_dtype"]) == (m, b, dt), r
    assert (j["model"], j["batch_size"], j["param_dtype"]) == (m, b, dt)
    c = j["provenance"]["config"]
    assert (c["model"], c["batch-size"], c["param-dtype"]) == (m, b, dt), c
    close = lambda x, y: abs(float(x) - y) <= 1e-5 * abs(y)
    assert close(r["train_samples_per_sec"], j["img_per_s"]) and close(r["train_step_time"], 1e3 * j["step_time_s"])
    assert close(r["param_count"], j["params"] / 1e6) and int(r["train_img_size"]) == j["img"]
    assert close(r["infer_gmacs"], j["flops_per_image"] / 6 / 1e9)
    assert r["commit"] == j["provenance"]["commit"]
for i, j in enumerate(js):
    json.dump(j, open("%s/row%d.json" % (tmp, i), "w"))
print("ok sweep: %d CSV and JSONL rows" % len(rows))
PYEOF
# same configuration, two runs: B/A printed
"$SV" bench $TINY --batch-size 8 --steps 1 --warmup 0 --calib-seconds 0 --json "$TMP/again.json" 2>/dev/null || fail "bench again"
"$SV" bench-compare "$TMP/row0.json" "$TMP/again.json" >"$TMP/cmp.txt" || { cat "$TMP/cmp.txt"; fail "bench-compare refused a like pair"; }
"$PY" - "$TMP" <<'PYEOF' || fail "bench-compare ratio"
import json, re, sys
tmp = sys.argv[1]
a, b = json.load(open(tmp + "/row0.json")), json.load(open(tmp + "/again.json"))
line = next(l for l in open(tmp + "/cmp.txt") if l.split()[:1] == ["img_per_s"])
got = float(re.search(r"B/A ([0-9.]+)", line).group(1))
assert abs(got - b["img_per_s"] / a["img_per_s"]) <= 1e-4 + 1e-4 * got, (got, line)
print("ok bench-compare ratio", got)
PYEOF
refuse() { # A B FIELD
    "$SV" bench-compare "$1" "$2" >/dev/null 2>"$TMP/refuse.err"
    rc=$?
    [ $rc = 1 ] || fail "bench-compare $1 $2: exit $rc, expected 1"
    grep -q "refusing to compare: $3 differs" "$TMP/refuse.err" || { cat "$TMP/refuse.err"; fail "no refusal naming $3"; }
}
refuse "$TMP/row0.json" "$TMP/row1.json" param_dtype
refuse "$TMP/row0.json" "$TMP/row2.json" batch_size
refuse "$TMP/row0.json" "$TMP/row4.json" model
refuse "$TMP/row0.json" "$TMP/world.json" mode
echo "ok bench-compare refuses other precision, batch, model and mode"
# measured figures must be finite numbers in a sane range, present where bench always writes them
"$PY" - "$TMP" <<'PYEOF' || fail "bad figure files"
import json, sys
tmp = sys.argv[1]
a, op, cm = (json.load(open(tmp + f)) for f in ("/again.json", "/op.json", "/intra.json"))
def put(name, base, path, value):
    d = json.loads(json.dumps(base))
    o = d
    for k in path[:-1]:
        o = o[k]
    if value is KeyError:
        del o[path[-1]]
    else:
        o[path[-1]] = value
    json.dump(d, open("%s/%s.json" % (tmp, name), "w"))
put("neg", a, ["img_per_s"], -5)
put("str", a, ["img_per_s"], "fast")
put("gone", a, ["img_per_s"], KeyError)
put("huge", a, ["img_per_s"], 1e308)
put("zstep", a, ["step_time_s"], 0)
put("mfustr", a, ["mfu"], "high")
put("opneg", op, ["results", 0, "rate_best"], -1)
put("opgone", op, ["results", 0, "best_s"], KeyError)
put("comstr", cm, ["results", 0, "busbw_gbps"], "fast")
put("comnan", cm, ["results", 0, "size_bytes"], None)
put("slow", a, ["img_per_s"], 1e-6)
put("fast", a, ["img_per_s"], 1e9)
PYEOF
bad_figure() { # A B FIELD-PATTERN
    "$SV" bench-compare "$1" "$2" >"$TMP/bad.out" 2>"$TMP/bad.err"
    rc=$?
    [ $rc = 1 ] || { cat "$TMP/bad.out"; fail "bench-compare $2: exit $rc, expected 1"; }
    grep -qE "error: $2: $3" "$TMP/bad.err" || { cat "$TMP/bad.err"; fail "$2: no error naming the file and $3"; }
    [ ! -s "$TMP/bad.out" ] || fail "$2: printed a comparison before refusing"
}
bad_figure "$TMP/again.json" "$TMP/neg.json" "img_per_s -5 is not a measurement"
bad_figure "$TMP/again.json" "$TMP/str.json" "img_per_s must be a number"
bad_figure "$TMP/again.json" "$TMP/gone.json" "img_per_s is missing"
bad_figure "$TMP/again.json" "$TMP/huge.json" "img_per_s 1e\\+308 is not a measurement"
bad_figure "$TMP/again.json" "$TMP/zstep.json" "step_time_s 0 is not a measurement"
bad_figure "$TMP/again.json" "$TMP/mfustr.json" "mfu must be a number"
bad_figure "$TMP/op.json" "$TMP/opneg.json" "results\\[0\\]\\.rate_best -1 is not a measurement"
bad_figure "$TMP/op.json" "$TMP/opgone.json" "results\\[0\\]\\.best_s is missing"
bad_figure "$TMP/intra.json" "$TMP/comstr.json" "results\\[0\\]\\.busbw_gbps must be a number"
bad_figure "$TMP/intra.json" "$TMP/comnan.json" "results\\[0\\]\\.size_bytes is null"
# the widest ratio of two accepted figures prints in a few characters
"$SV" bench-compare "$TMP/slow.json" "$TMP/fast.json" >"$TMP/wide.txt" || fail "bench-compare of extreme figures"
grep -qE "img_per_s .* B/A 1\.0000e\+15$" "$TMP/wide.txt" || { cat "$TMP/wide.txt"; fail "extreme ratio not printed in e-notation"; }
awk 'length > 100 { exit 1 }' "$TMP/wide.txt" || fail "an absurdly long comparison line"
echo "ok bench-compare refuses missing, mistyped, negative, zero and absurd figures, naming the file and field"
