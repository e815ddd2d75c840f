#!/usr/bin/env bash
# The data-pipeline comparison of docs/data.md "Benchmark" in one command: shardvit's loader
# transforms (bench/data/bench_data) against torchvision + PIL (bench/data/bench_torchvision.py)
# on the same 500x375 JPEGs, one core each, on two sets of the same images: as bench_data makes
# them (no restart markers) and rewritten by `shardvit prep synthetic --restart-mcus 4` (region
# decodes read only the restart intervals over the crop). Rounds are interleaved (each round:
# shardvit then torchvision on one set, then the other set), so load changes hit both alike;
# every ratio is of two numbers from the same round.
#
# Usage: bench/data/compare_torchvision.sh BUILD_DIR WORK_DIR
#   BUILD_DIR  a build with app/shardvit and bench/data/bench_data
#   WORK_DIR   where the two image sets are made (kept for reruns)
# Environment: TORCH_PY (the Python with torch, torchvision and Pillow; default: the venv of
# bench/torch_venv.sh when it exists, else /usr/bin/python3), ROUNDS (2), N (400 images),
# REPS (7 for shardvit; torchvision takes the best of 3).
set -euo pipefail
build=${1:?usage: compare_torchvision.sh BUILD_DIR WORK_DIR}
work=${2:?usage: compare_torchvision.sh BUILD_DIR WORK_DIR}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
SV=$build/app/shardvit
BD=$build/bench/data/bench_data
for f in "$SV" "$BD"; do [ -x "$f" ] || { echo "compare_torchvision: $f is not built" >&2; exit 2; }; done
if [ -z "${TORCH_PY:-}" ]; then
    TORCH_PY=/usr/bin/python3
    [ -x "$root/.venv-torch/bin/python" ] && TORCH_PY=$root/.venv-torch/bin/python
fi
"$TORCH_PY" -c "import torch, torchvision, PIL" 2>/dev/null ||
    { echo "compare_torchvision: $TORCH_PY lacks torch/torchvision/PIL (bench/torch_venv.sh makes a venv)" >&2; exit 2; }
ROUNDS=${ROUNDS:-2} N=${N:-400} REPS=${REPS:-7}
per=$(((N + 9) / 10))
mkdir -p "$work"
plain=$work/plain rst=$work/restart4
# bench_data's own set (quality 90, 10 classes), and the same images with restart markers
prep() { # prep DIR [flags]: the set, once (a later run reuses it); its log shown on failure
    local dir=$1
    shift
    [ -d "$dir/train" ] && return 0
    "$SV" prep synthetic --out "$dir" --quality 90 --per-class "$per" --test-per-class 0 "$@" >"$dir.prep.log" 2>&1 ||
        { cat "$dir.prep.log" >&2; exit 1; }
}
prep "$plain"
prep "$rst" --restart-mcus 4

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(lscpu | sed -n 's/^Model name: *//p' | head -1)" \
    "(family $(lscpu | sed -n 's/^CPU family: *//p'), model $(lscpu | sed -n 's/^Model: *//p')), $(nproc) CPUs," \
    "load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# shardvit $(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown);" \
    "$("$TORCH_PY" -c 'import torch, torchvision, PIL; print("torch", torch.__version__, "torchvision", torchvision.__version__, "Pillow", PIL.__version__)')"
echo "# $N images of 500x375 per set, one core each; shardvit best of $REPS, torchvision best of 3 (CPU time)"
# rows LOG: "label<TAB>img/s" for every pipeline line of a bench output
rows() { sed -n 's/^ *\(decode[^:]*[^ ]\) *: *\([0-9.]*\) img\/s.*/\1\t\2/p' "$1"; }
for r in $(seq "$ROUNDS"); do
    for set in plain restart4; do
        dir=$work/$set
        "$BD" "$dir" "$N" "$REPS" >"$work/sv.$set.$r.log" 2>&1
        "$TORCH_PY" "$here/bench_torchvision.py" "$dir" "$N" 3 >"$work/tv.$set.$r.log" 2>&1
        printf '\nround %d, %s files\n%-58s %10s %12s %7s\n' "$r" "$set" pipeline shardvit torchvision ratio
        join -t $'\t' <(rows "$work/sv.$set.$r.log" | sort) <(rows "$work/tv.$set.$r.log" | sort) |
            awk -F'\t' '{ printf "%-58s %10.1f %12.1f %6.2fx\n", $1, $2, $3, $2 / $3 }'
    done
done
