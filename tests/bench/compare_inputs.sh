#!/usr/bin/env bash
# Usage: compare_inputs.sh SHARDVIT [MPIEXEC]
# bench-compare with result files edited by hand (docs/performance.md "Comparing results"). Real
# `shardvit bench` results (train, --op gelu, --comm on 2 ranks, or 1 without MPIEXEC), edited
# with Python's json:
# - strings of the files holding terminal controls (ESC ] 0;...BEL, ESC [2J, ESC [31m, the C1
#   CSI U+009B) in the model, provenance commit, op, --op variants, --comm collective and mode:
#   no control character reaches standard output or standard error, in a table line, a note or an
#   error, each string shown escaped (\x1B, \x07, \u{009B}: core/log.h sv_log_esc); errors take
#   the commands' usual form (`shardvit bench-compare: error: MESSAGE (status) [at ...]`) (before:
#   the strings and the error were printed raw);
# - --comm: a result with a (collective, size) row repeated is refused (exit 1) naming the file
#   and both rows, compared with itself or with the result it was copied from, on either side
#   (before: the rows were paired crosswise, so a file compared with itself showed a speed-up,
#   exit 0); the original compared with itself shows a ratio of 1 (or n/a for a busbw of 0) on
#   every line.
set -euo pipefail
SV=$1
MPIEXEC=${2:-}
PY=${PYTHON:-python3}
T=$(mktemp -d "${TMPDIR:-/tmp}/shardvit-compare.XXXXXX")
trap 'rm -rf "$T"' EXIT
fail() {
    echo "FAIL: $*"
    exit 1
}
ok=0
# cmp_run NAME RC A B: bench-compare A B exits RC; its stdout in $T/NAME.out, stderr in $T/NAME.err,
# neither holding a control character other than the line feed (C0, DEL, C1)
cmp_run() {
    local name=$1 want=$2 rc=0
    timeout 60 "$SV" bench-compare "$T/$3" "$T/$4" >"$T/$name.out" 2>"$T/$name.err" || rc=$?
    [ "$rc" = "$want" ] || {
        cat "$T/$name.out" "$T/$name.err"
        fail "$name: bench-compare $3 $4 exited $rc, expected $want"
    }
    "$PY" - "$T/$name.out" "$T/$name.err" <<'P' || fail "$name: control characters printed"
import re, sys
for path in sys.argv[1:]:
    text = open(path, "rb").read().decode("utf-8", "replace")
    bad = re.findall(r".{0,30}[\x00-\x09\x0b-\x1f\x7f-\x9f].{0,10}", text)
    assert not bad, f"{path}: {bad[:3]!r}"
P
    ok=$((ok + 1))
}
# says NAME FILE TEXT: $T/NAME.FILE (out or err) holds TEXT
says() {
    grep -qF -- "$3" "$T/$1.$2" || {
        cat "$T/$1.out" "$T/$1.err"
        fail "$1: its std$2 does not say: $3"
    }
}
TINY=(--model vit-28 --dim 64 --depth 2 --heads 2 --threads 1)
for r in ta tb; do
    timeout 120 "$SV" bench "${TINY[@]}" --batch-size 32 --steps 3 --warmup 1 --calib-seconds 0.05 \
        --json "$T/$r.json" >"$T/$r.log" 2>&1 || { cat "$T/$r.log"; fail "bench $r"; }
done
for r in oa ob; do
    timeout 120 "$SV" bench "${TINY[@]}" --op gelu --json "$T/$r.json" >"$T/$r.log" 2>&1 ||
        { cat "$T/$r.log"; fail "bench --op $r"; }
done
COMM=(bench --comm --comm-min 64K --comm-max 128K --threads 1 --json "$T/c1.json")
if [ -n "$MPIEXEC" ]; then
    timeout 120 "$MPIEXEC" -n 2 "$SV" "${COMM[@]}" >"$T/c1.log" 2>&1 || { cat "$T/c1.log"; fail "bench --comm"; }
else
    timeout 120 "$SV" "${COMM[@]}" >"$T/c1.log" 2>&1 || { cat "$T/c1.log"; fail "bench --comm"; }
fi

# the edited copies; prints the number of rows of c1.json and its first row's collective and size
read -r N OP0 SIZE0 < <("$PY" - "$T" <<'P'
import copy, json, sys
t = sys.argv[1]
load = lambda n: json.load(open(f"{t}/{n}.json"))
def save(n, j):
    json.dump(j, open(f"{t}/{n}.json", "w"))
MODEL, COMMIT = "vit-28\x1b]0;PWNED\x07\x1b[2J", "\x1b[31mRED\x1b[0m\u009b2J"
a, b = load("ta"), load("tb")
a["model"] = b["model"] = MODEL
b["provenance"]["commit"] = COMMIT
save("ta_esc", a), save("tb_esc", b)
b = load("tb")
save("tb_plain", b)
r = load("tb")
del r["max_rss_scope"]  # a result from before the scope was recorded: the process's peak
save("tb_noscope", r)
b["mode"] = "train\x1b[2J"
save("tb_mode", b)
a, b = load("oa"), load("ob")
a["op"] = b["op"] = "gelu\x1b[1m"
a["results"][0]["variant"] = b["results"][0]["variant"] = "fwd\x1b[2J"
b["results"][1]["variant"] = "bwd\x1b[31m"
save("oa_esc", a), save("ob_esc", b)
b["results"].append(copy.deepcopy(b["results"][1]))
save("ob_rep", b)
c = load("c1")
n = len(c["results"])
assert n >= 4 and len({(r["op"], r["size_bytes"]) for r in c["results"]}) == n, c["results"]
e = copy.deepcopy(c)
e["results"][0]["op"] = "all_gather\x1b[5m"
save("c_esc", e)
r = copy.deepcopy(c["results"][0])
r["busbw_gbps"] = 100.0
c["results"].append(r)
save("c2", c)
print(n, r["op"], r["size_bytes"])
P
)
[ -n "${SIZE0:-}" ] || fail "editing the results"

# ---- strings of the files, escaped ----
cmp_run train_esc 0 ta_esc.json tb_esc.json
says train_esc out 'train vit-28\x1B]0;PWNED\x07\x1B[2J, batch'
says train_esc out 'note: provenance commit differs: A '
says train_esc out ', B \x1B[31mRED\x1B[0m\u{009B}2J'
cmp_run train_model 1 ta_esc.json tb_plain.json
says train_model err "shardvit bench-compare: error: refusing to compare: model differs ($T/ta_esc.json: vit-28\\x1B]0;PWNED\\x07\\x1B[2J, $T/tb_plain.json: vit-28)"
# max_rss_bytes of another span (the whole process, calibration included) has no ratio
cmp_run train_rss_scope 0 ta.json tb_noscope.json
says train_rss_scope out "note: the results' max_rss_bytes cover different spans (A: run, B: process"
grep -E "^ *max_rss_bytes .* n/a" "$T/train_rss_scope.out" >/dev/null || { cat "$T/train_rss_scope.out"; fail "train_rss_scope: a max_rss_bytes ratio shown"; }
cmp_run train_rss_same 0 ta.json tb.json
grep -q "max_rss_bytes cover different spans" "$T/train_rss_same.out" && fail "train_rss_same: a note for one scope"
cmp_run train_mode 1 ta.json tb_mode.json
says train_mode err 'refusing to compare: mode differs'
says train_mode err 'tb_mode.json: train\x1B[2J)'
cmp_run op_esc 0 oa_esc.json ob_esc.json
says op_esc out 'op gelu\x1B[1m:'
says op_esc out '  fwd\x1B[2J rate_best'
says op_esc out "note: variant bwd is only in $T/oa_esc.json (not compared)"
says op_esc out "note: variant bwd\\x1B[31m is only in $T/ob_esc.json (not compared)"
cmp_run op_repeat 1 oa_esc.json ob_rep.json
says op_repeat err "$T/ob_rep.json: results[2].variant bwd\\x1B[31m repeats an earlier row's"
cmp_run comm_esc 0 c_esc.json c_esc.json
says comm_esc out '  all_gather\x1B[5m 65536 B'
echo "ok: strings of the result files escaped on stdout and stderr"

# ---- --comm: one row per (collective, size) ----
REP="results[$N].op $OP0 with size_bytes $SIZE0 repeats results[0]'s"
cmp_run comm_self 1 c2.json c2.json
says comm_self err "shardvit bench-compare: error: $T/c2.json: $REP"
cmp_run comm_ab 1 c1.json c2.json
says comm_ab err "$T/c2.json: $REP"
cmp_run comm_ba 1 c2.json c1.json
says comm_ba err "$T/c2.json: $REP"
cmp_run comm_same 0 c1.json c1.json
"$PY" - "$T/comm_same.out" "$N" <<'P' || fail "c1.json compared with itself"
import re, sys
rows = [l for l in open(sys.argv[1]) if "B/A" in l]
assert len(rows) == int(sys.argv[2]), rows
assert all(re.search(r"B/A (1\.0000|n/a)$", l.rstrip()) for l in rows), rows
P
[ -s "$T/comm_self.out" ] && fail "comm_self: printed before refusing: $(cat "$T/comm_self.out")"
echo "ok: a repeated (collective, size) row refused, naming the file and both rows"
echo "compare_inputs: ok ($ok comparisons)"
