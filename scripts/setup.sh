#!/usr/bin/env bash
# Install what shardvit needs from Debian's packages (only what is missing), as root or via sudo.
# The CUDA toolkit, cuDNN and NCCL are optional and not installed here (found under
# /usr/local/cuda or CUDAToolkit_ROOT when present). python3-torchvision and python3-venv are for
# the test venv of the third-party readers (scripts/test_venv.sh: tensorboard, webdataset, timm).
# slurm-wlm and munge are for the single-node Slurm of tests/slurm (docs/slurm.md); the tests start
# and stop their own daemons (the packages' services are not used).
# patchelf is for tests/gpu/pack.sh (run paths of the archive for a GPU machine); strace for
# tests/fsdp/heap_kept.sh (the ranks' heap trims, traced).
set -euo pipefail
source "$(dirname "$0")/usage.sh" "$@"
[ $# -eq 0 ] || sv_usage_refuse "takes no arguments (got '$1')"
PKGS=(build-essential cmake pkg-config mpich libmpich-dev libturbojpeg0-dev libjpeg62-turbo-dev
      libopenblas-dev zlib1g-dev dataset-fashion-mnist python3 python3-numpy python3-torch patchelf
      python3-torchvision python3-venv clang-format-14 slurm-wlm munge strace)
missing=()
for p in "${PKGS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
    echo "setup: all packages present"
    exit 0
fi
echo "setup: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
$SUDO apt-get update -q
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
