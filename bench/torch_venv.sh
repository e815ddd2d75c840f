#!/bin/bash
# A virtual environment with the newest PyPI PyTorch, for bench/compare_pytorch.sh (TORCH_PY=...).
#
# Usage: bench/torch_venv.sh [VENV_DIR]     (default: .venv-torch in the repository root, gitignored)
#   env PYTHON (the interpreter that creates the environment, default python3).
#
# Idempotent: an existing environment whose torch imports is kept as it is; otherwise the
# environment is created (python3 -m venv) and torch, torchvision, pillow and numpy are
# installed with pip. The default torch wheel also brings the CUDA libraries (several GB); only
# the CPU is used. The last line printed is the interpreter to pass as TORCH_PY; on a failure it
# prints nothing on stdout and exits non-zero (so TORCH_PY=$(bench/torch_venv.sh) comes out empty,
# which bench/compare_pytorch.sh and bench/data/compare_torchvision.sh refuse).
# -h/--help prints this text; any other argument starting with '-' is refused.
set -eu
usage() { sed -n '2,/^set /{/^#/s/^# \{0,1\}//p}' "$0"; }
case "${1:-}" in
-h | --help) usage; exit 0 ;;
-*) echo "torch_venv.sh: unknown option '$1' (usage: bench/torch_venv.sh [VENV_DIR]; --help)" >&2; exit 2 ;;
esac
[ $# -le 1 ] || { echo "torch_venv.sh: at most one argument, VENV_DIR (got $#)" >&2; exit 2; }
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
VENV=${1:-$ROOT/.venv-torch}
PYTHON=${PYTHON:-python3}
PYBIN=$VENV/bin/python
if [ -x "$PYBIN" ] && "$PYBIN" -c "import torch, torchvision, PIL, numpy" 2>/dev/null; then
    echo "# $VENV already has torch $("$PYBIN" -c 'import torch; print(torch.__version__)')" >&2
else
    [ -x "$PYBIN" ] || "$PYTHON" -m venv "$VENV"
    "$PYBIN" -m pip install --upgrade pip >&2
    "$PYBIN" -m pip install --upgrade torch torchvision pillow numpy >&2
    "$PYBIN" -c "import torch, torchvision; print('# torch', torch.__version__, 'torchvision', torchvision.__version__)" >&2
fi
echo "$PYBIN"
