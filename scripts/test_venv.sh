#!/usr/bin/env bash
# The Python environment of the third-party reader tests: a virtual environment at
# ${SHARDVIT_TEST_VENV:-<repo>/.venv-test} made from Debian's interpreter with
# --system-site-packages (Debian's python3-torch 1.13, python3-torchvision 0.14, numpy, PIL and
# PyYAML stay visible; PyPI's torch would be gigabytes), plus these packages from PyPI:
#   tensorboard  (EventAccumulator reads our event files: test_tfevents_tensorboard)
#   webdataset   (reads the tar shards of `shardvit prep --format tar`: data_wds_webdataset)
#   timm         (builds the ViT our export names: ckpt_timm_real), with --no-deps so pip never
#                replaces Debian's torch/torchvision; its light dependencies huggingface_hub and
#                safetensors are listed explicitly. timm 1.0.x declares an unversioned torch
#                requirement and runs on torch 1.13 (checked by importing it below).
# numpy is held at the system version (a constraint) so nothing upgrades it under torch 1.13.
#
#   bash scripts/test_venv.sh     -> prints the venv's interpreter path on stdout (the last line)
#
# Idempotent: the requirement list and interpreter version are written to a stamp file inside
# the venv after a complete install; when they match, the script only prints the path. A package
# that cannot be installed is named on stderr and no stamp is written (the next run tries again);
# the script still exits 0 and the tests that need the package skip (77) naming it. When no venv
# can be made at all, nothing is printed on stdout and the tests fall back to /usr/bin/python3.
set -uo pipefail
source "$(dirname "$0")/usage.sh" "$@"
[ $# -eq 0 ] || sv_usage_refuse "takes no arguments (got '$1')"
root=$(cd "$(dirname "$0")/.." && pwd)
venv=${SHARDVIT_TEST_VENV:-$root/.venv-test}
base=/usr/bin/python3
# One pip invocation per line: "PIP ARGUMENTS|modules that must then be importable".
REQS=(
    "tensorboard==2.21.0|tensorboard.backend.event_processing.event_accumulator"
    "webdataset==1.0.2|webdataset"
    "huggingface_hub==2.4.0 safetensors==0.8.0|huggingface_hub safetensors.torch"
    "--no-deps timm==1.0.31|timm"
)
log() { echo "test-venv: $*" >&2; }

if [ ! -x "$base" ]; then
    log "$base not found; no test venv (tests use what they find)"
    exit 0
fi
want=$({ "$base" --version 2>&1; printf '%s\n' "${REQS[@]}"; })
stamp=$venv/.shardvit-test-reqs
if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    echo "$venv/bin/python"
    exit 0
fi

start=$(date +%s)
if [ ! -x "$venv/bin/python" ]; then
    log "creating $venv"
    if ! "$base" -m venv --system-site-packages "$venv" >&2; then
        log "cannot create a venv with $base -m venv (Debian package python3-venv missing?)"
        rm -rf "$venv"
        exit 0
    fi
fi
py=$venv/bin/python
cons=$venv/.shardvit-constraints.txt
"$py" -c 'import numpy; print("numpy==" + numpy.__version__)' >"$cons" 2>/dev/null || : >"$cons"
ok=1
for r in "${REQS[@]}"; do
    args=${r%%|*} mods=${r#*|}
    # shellcheck disable=SC2086
    if ! "$py" -m pip install -q --disable-pip-version-check --no-input -c "$cons" $args >&2; then
        log "cannot install '$args' (the tests that need it will skip)"
        ok=0
        continue
    fi
    for m in $mods; do
        "$py" -c "import $m" 2>/dev/null || { log "'$args' installed but 'import $m' fails"; ok=0; }
    done
done
"$py" -c 'import torch, numpy' 2>/dev/null || { log "torch + numpy not importable in $venv (Debian python3-torch?)"; ok=0; }
if [ $ok -eq 1 ]; then
    echo "$want" >"$stamp"
    log "ready in $(( $(date +%s) - start )) s"
else
    rm -f "$stamp"
fi
echo "$py"
