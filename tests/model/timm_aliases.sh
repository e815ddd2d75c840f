#!/usr/bin/env bash
# timm model names for --model against timm.create_model's shapes (tests/model/timm_aliases.py);
# skipped (77) unless $SHARDVIT_TEST_PYTHON imports timm + torch.
PYT=${SHARDVIT_TEST_PYTHON:-}
if [ -z "$PYT" ] || ! "$PYT" -c "import timm, torch" 2>/dev/null; then
    echo "SKIP: SHARDVIT_TEST_PYTHON (a python with timm + torch) is not set or cannot import them"
    exit 77
fi
exec "$PYT" "$(dirname "$0")/timm_aliases.py" "$1"
