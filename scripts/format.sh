#!/usr/bin/env bash
# Apply the project's C style (.clang-format) to every tracked C/CUDA source, or with --check list
# the files that differ and exit 1. Pinned to clang-format 14 (Debian's clang-format-14, installed
# by scripts/setup.sh): other versions format some constructs differently.
set -euo pipefail
source "$(dirname "$0")/usage.sh" "$@"
[ $# -eq 0 ] || { [ $# -eq 1 ] && [ "$1" = --check ]; } || sv_usage_refuse "unknown arguments '$*' (only --check)"
cd "$(dirname "$0")/.."
CF=$(command -v clang-format-14 || true)
[ -n "$CF" ] || { echo "format: clang-format-14 not found (bash scripts/setup.sh installs it)" >&2; exit 2; }
mapfile -t files < <(git ls-files '*.c' '*.h' '*.cu' '*.cuh')
if [ "${1:-}" = --check ]; then
    bad=()
    for f in "${files[@]}"; do
        "$CF" --style=file "$f" | cmp -s - "$f" || bad+=("$f")
    done
    if [ ${#bad[@]} -gt 0 ]; then
        echo "format: ${#bad[@]} file(s) differ from .clang-format (run bash scripts/format.sh):" >&2
        printf '  %s\n' "${bad[@]}" >&2
        exit 1
    fi
    echo "format: ${#files[@]} files match .clang-format"
else
    "$CF" --style=file -i "${files[@]}"
fi
