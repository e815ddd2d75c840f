#!/usr/bin/env bash
# --aa-interp against Pillow and timm (tests/data/ra_interp_check.py) with $SHARDVIT_TEST_PYTHON
# (the test venv of scripts/test_venv.sh); skipped (77) when it is unset or timm is not importable.
set -euo pipefail
[ -n "${SHARDVIT_TEST_PYTHON:-}" ] || { echo "SKIP: SHARDVIT_TEST_PYTHON is not set"; exit 77; }
exec "$SHARDVIT_TEST_PYTHON" "$(dirname "$0")/ra_interp_check.py" "$1"
