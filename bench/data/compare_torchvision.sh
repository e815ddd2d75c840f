#!/usr/bin/env bash
# The data-pipeline comparison of docs/data.md "Benchmark" in one command: shardvit's loader
# transforms (bench/data/bench_data) against torchvision + PIL (bench/data/bench_torchvision.py)
# on the same 500x375 JPEGs, one core each, on two sets of the same images: as bench_data makes
# them (no restart markers) and rewritten by `shardvit prep synthetic --restart-mcus 4` (region
# decodes read only the restart intervals over the crop). Rounds are interleaved (each round:
# shardvit then torchvision on one set, then the other set), so load changes hit both alike;
# every ratio is of two numbers from the same round.
#
# Usage: bench/data/compare_torchvision.sh BUILD_DIR WORK_DIR     (-h, --help: this text)
#   BUILD_DIR  a build with app/shardvit and bench/data/bench_data
#   WORK_DIR   where the two image sets are made (kept for reruns; a set of this script with
#              fewer than N images is made again, one from elsewhere is refused)
# Environment: TORCH_PY (the Python with torch, torchvision and Pillow; default: the venv of
# bench/torch_venv.sh when it exists, else /usr/bin/python3; set but empty is refused),
# ROUNDS (2), N (400 images), REPS (7 for shardvit; torchvision takes the best of 3): positive
# integers. The header names the binary measured (`shardvit version`) and the image count used;
# a failing step is named with its log, whose tail is shown. Ctrl-C / SIGTERM stop the running step
# and the script (exit 130 / 143).
set -euo pipefail
usage() { sed -n '2,/^set /{/^#/s/^# \{0,1\}//p}' "$0"; }
die() { echo "compare_torchvision: $*" >&2; exit 2; }
case "${1:-}" in
-h | --help) usage; exit 0 ;;
-*) die "unknown option '$1' (usage: compare_torchvision.sh BUILD_DIR WORK_DIR; --help)" ;;
esac
[ $# = 2 ] || { usage >&2; echo "compare_torchvision: expected BUILD_DIR WORK_DIR (got $# arguments)" >&2; exit 2; }
build=$1 work=$2
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
ROUNDS=${ROUNDS:-2} N=${N:-400} REPS=${REPS:-7}
for v in ROUNDS N REPS; do
    case "${!v}" in '' | *[!0-9]* | 0*) die "$v must be a positive integer (got '${!v}')" ;; esac
done
SV=$build/app/shardvit
BD=$build/bench/data/bench_data
for f in "$SV" "$BD"; do [ -x "$f" ] || die "$f is not built"; done
if [ -n "${TORCH_PY+set}" ] && [ -z "$TORCH_PY" ]; then
    die "TORCH_PY is set but empty (did bench/torch_venv.sh fail?): unset it for the default, or name an interpreter"
fi
if [ -z "${TORCH_PY:-}" ]; then
    TORCH_PY=/usr/bin/python3
    [ -x "$root/.venv-torch/bin/python" ] && TORCH_PY=$root/.venv-torch/bin/python
fi
"$TORCH_PY" -c "import torch, torchvision, PIL" 2>/dev/null ||
    die "$TORCH_PY lacks torch/torchvision/PIL (bench/torch_venv.sh makes a venv)"
[ ! -e "$work" ] || [ -d "$work" ] || die "WORK_DIR $work exists and is not a directory"
per=$(((N + 9) / 10))
mkdir -p "$work"
plain=$work/plain rst=$work/restart4
# Every step runs in the background (bench/lib.sh), so that SIGINT / SIGTERM stop it at once and
# the script ends (130 / 143); the image sets and the logs so far stay in WORK_DIR (a set whose
# import was cut short is made again by the next run).
source "$here/../lib.sh"
on_stop() { echo "compare_torchvision: interrupted ($1): the running step stopped; $work keeps the image sets and logs" >&3; }
sv_bg_traps on_stop
# step LABEL LOG CMD...: run CMD with its output in LOG; on failure name the step and its log
step() {
    local label=$1 log=$2 rc=0
    shift 2
    sv_bg_run "$@" >"$log" 2>&1 || rc=$?
    [ $rc = 0 ] && return 0
    echo "compare_torchvision: $label failed (exit $rc); its log $log ends:" >&2
    tail -n 8 "$log" | sed 's/^/  /' >&2
    exit 1
}
count() { find "$1/train" -name '*.jpg' 2>/dev/null | wc -l; }
# bench_data's own set (quality 90, 10 classes), and the same images with restart markers
prep() { # prep DIR [flags]: the set, once (a later run reuses it when it has N images or more)
    local dir=$1 have
    shift
    if [ -d "$dir" ]; then
        have=$(count "$dir")
        [ "$have" -ge "$N" ] && return 0
        [ -f "$dir/.compare_torchvision" ] || [ -f "$dir.prep.log" ] ||
            die "$dir has $have images, fewer than N=$N, and was not made by this script: remove it or lower N"
        echo "# $dir has $have images, fewer than N=$N: made again" >&2
        rm -rf -- "$dir"
    fi
    step "shardvit prep synthetic ($dir)" "$dir.prep.log" \
        "$SV" prep synthetic --out "$dir" --quality 90 --per-class "$per" --test-per-class 0 "$@"
    : >"$dir/.compare_torchvision"
}
prep "$plain"
prep "$rst" --restart-mcus 4
np=$(count "$plain") nr=$(count "$rst")
used=$N
[ "$np" -lt "$used" ] && used=$np
[ "$nr" -lt "$used" ] && used=$nr

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(lscpu | sed -n 's/^Model name: *//p' | head -1)" \
    "(family $(lscpu | sed -n 's/^CPU family: *//p'), model $(lscpu | sed -n 's/^Model: *//p')), $(nproc) CPUs," \
    "load $(cut -d' ' -f1-3 /proc/loadavg)"
svv=$("$SV" version 2>/dev/null | sed -n 1p) || svv=""
echo "# ${svv:-shardvit (\`$SV version\` failed: version unknown)} [$SV];" \
    "$("$TORCH_PY" -c 'import torch, torchvision, PIL; print("torch", torch.__version__, "torchvision", torchvision.__version__, "Pillow", PIL.__version__)')"
echo "# $used images of 500x375 per set (plain set: $np files, restart4 set: $nr), one core each;" \
    "shardvit best of $REPS, torchvision best of 3 (CPU time)"
# rows LOG: "label<TAB>img/s" for every pipeline line of a bench output
rows() { sed -n 's/^ *\(decode[^:]*[^ ]\) *: *\([0-9.]*\) img\/s.*/\1\t\2/p' "$1"; }
for r in $(seq "$ROUNDS"); do
    for set in plain restart4; do
        dir=$work/$set
        step "bench_data ($set set, round $r)" "$work/sv.$set.$r.log" "$BD" "$dir" "$N" "$REPS"
        step "bench_torchvision.py ($set set, round $r)" "$work/tv.$set.$r.log" \
            "$TORCH_PY" "$here/bench_torchvision.py" "$dir" "$N" 3
        ns=$(sed -n 's/^images: \([0-9]*\) from .*/\1/p' "$work/sv.$set.$r.log")
        nt=$(sed -n 's/^torchvision+PIL, \([0-9]*\) images.*/\1/p' "$work/tv.$set.$r.log")
        [ "$ns" = "$used" ] && [ "$nt" = "$used" ] ||
            die "image counts differ: bench_data ${ns:-?}, torchvision ${nt:-?}, expected $used ($work/sv.$set.$r.log, $work/tv.$set.$r.log)"
        printf '\nround %d, %s files, %d images\n%-58s %10s %12s %7s\n' "$r" "$set" "$used" pipeline shardvit \
            torchvision ratio
        join -t $'\t' <(rows "$work/sv.$set.$r.log" | sort) <(rows "$work/tv.$set.$r.log" | sort) |
            awk -F'\t' '{ printf "%-58s %10.1f %12.1f %6.2fx\n", $1, $2, $3, $2 / $3 }'
    done
done
