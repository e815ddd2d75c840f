# Sourced first by the project's scripts: `source "$(dirname "$0")/usage.sh" "$@"` (a script in
# another folder names its path). -h or --help as the first argument prints the script's header
# comment (the lines after the shebang up to the first line that is not a comment, without their
# leading "# ") on stdout and exits 0, before the script does anything.
#   sv_usage_refuse MESSAGE   "<script>: MESSAGE (see <script> --help)" on stderr, exit 2
sv_usage_refuse() {
    echo "$(basename "$0"): $* (see $(basename "$0") --help)" >&2
    exit 2
}
case "${1:-}" in
-h | --help)
    awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0"
    exit 0
    ;;
esac
