# The shared start of the checks of tests/gpu/run.sh that need a machine without a GPU
# (run_nogpu.sh, run_faults.sh); sourced after `set -u` with the build directory as $1 and
# NAME set to the script's name. Exits 77 where python3 is missing or nvidia-smi lists a GPU,
# 1 without BUILD/app/shardvit. Sets BUILD (absolute), HERE, RUN (run.sh), PY, T (a temporary
# directory removed at exit, also TMPDIR) and defines fail MESSAGE and status DIR STAGE.
BUILD=${1:?usage: $NAME BUILD_DIR}
HERE=$(cd "$(dirname "$0")" && pwd)
RUN=$HERE/run.sh
PY=$(command -v python3) || { echo "SKIP: no python3"; exit 77; }
if command -v nvidia-smi > /dev/null 2>&1 && nvidia-smi -L 2> /dev/null | grep -q '^GPU'; then
    echo "SKIP: this machine has a GPU: run tests/gpu/run.sh itself"
    exit 77
fi
[ -x "$BUILD/app/shardvit" ] || { echo "FAIL: no $BUILD/app/shardvit" >&2; exit 1; }
case "$BUILD" in /*) ;; *) BUILD=$PWD/$BUILD ;; esac
T=$(mktemp -d "${TMPDIR:-/tmp}/sv-$NAME.XXXXXX")
trap 'rm -rf "$T"' EXIT
# run.sh's work directories go inside T: the one of a run killed with SIGKILL (which cannot remove
# its own) is removed with it
export TMPDIR=$T
fail() {
    echo "FAIL: $*" >&2
    exit 1
}
# status DIR STAGE: "status" or "status: detail" of STAGE in DIR/report.json
status() {
    "$PY" - "$1/report.json" "$2" << 'EOF'
import json, sys
rep = json.load(open(sys.argv[1]))
for s in rep["stages"]:
    if s["name"] == sys.argv[2]:
        print(s["status"] + (": " + s["detail"] if s["detail"] else ""))
EOF
}
