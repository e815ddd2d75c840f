#!/usr/bin/env bash
# `shardvit prep --format tar` (WebDataset shards) read by the real `webdataset` package
# (tests/data/wds_check.py, run with $SHARDVIT_TEST_PYTHON, the test venv of
# scripts/test_venv.sh, else /usr/bin/python3): for a synthetic RGB set (several shards per split)
# and 100 + 100 Fashion-MNIST images (grayscale, class order of the source), every sample's key,
# JPEG bytes and label equal the ImageFolder tree `shardvit prep` writes from the same source.
# Skipped (77) only when webdataset is not importable.
set -euo pipefail
SHARDVIT=$1
PYT=${SHARDVIT_TEST_PYTHON:-/usr/bin/python3}
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/shardvit-wds.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
"$PYT" -c "import webdataset" 2>/dev/null || {
    echo "SKIP: webdataset not importable by $PYT (scripts/test_venv.sh installs it)"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
prep() {  # prep NAME FLAGS...: the same source as tar shards and as a folder tree
    local name=$1
    shift
    "$SHARDVIT" prep "$@" --format tar --out "$WORK/$name-tar" >"$WORK/$name-tar.log" 2>&1 ||
        { cat "$WORK/$name-tar.log"; fail "prep $name --format tar"; }
    "$SHARDVIT" prep "$@" --format folder --out "$WORK/$name-dir" >"$WORK/$name-dir.log" 2>&1 ||
        { cat "$WORK/$name-dir.log"; fail "prep $name --format folder"; }
}
prep synth synthetic --classes 4 --per-class 9 --test-per-class 3 --width 40 --height 30 --seed 5 --shard-size 7
"$PYT" "$HERE/wds_check.py" "$WORK/synth-tar" "$WORK/synth-dir" 7 || fail "synthetic shards"
if [ -d /usr/share/datasets/fashion-mnist ]; then
    prep fm fashion-mnist --limit 100 --shard-size 32
    "$PYT" "$HERE/wds_check.py" "$WORK/fm-tar" "$WORK/fm-dir" 32 || fail "fashion-mnist shards"
else
    echo "note: /usr/share/datasets/fashion-mnist absent, only the synthetic set checked"
fi
echo "wds: all passed"
