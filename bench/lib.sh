# Shared by the comparison scripts (bench/compare_pytorch.sh, bench/data/compare_torchvision.sh):
# their long steps run in the background and are waited for, so that SIGINT / SIGTERM reach the
# script's trap at once (a foreground mpiexec that handles SIGINT itself would let the script go
# on). Sourcing this file duplicates stderr to fd 3, for messages from a trap that may run inside
# a step's redirection.
#   sv_bg_run CMD...    run CMD in the background (fd 3 closed) and wait; CMD's exit status
#   sv_bg_traps ON_STOP on SIGINT / SIGTERM: stop the running step (SIGTERM, SIGKILL after 5 s),
#                       run ON_STOP with the signal's name, exit 130 / 143
exec 3>&2
SV_BG_CHILD=""
SV_BG_ON_STOP=true
sv_bg_run() {
    local rc=0
    "$@" 3>&- &
    SV_BG_CHILD=$!
    wait "$SV_BG_CHILD" || rc=$?
    SV_BG_CHILD=""
    return $rc
}
sv_bg_signal() { # NAME EXIT_CODE (a step that is already gone is no error here, also under set -e)
    trap '' INT TERM
    if [ -n "$SV_BG_CHILD" ]; then
        kill -TERM "$SV_BG_CHILD" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$SV_BG_CHILD" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$SV_BG_CHILD" 2>/dev/null || true
        wait "$SV_BG_CHILD" 2>/dev/null || true
    fi
    "$SV_BG_ON_STOP" "$1" || true
    exit "$2"
}
sv_bg_traps() {
    SV_BG_ON_STOP=$1
    trap 'sv_bg_signal SIGINT 130' INT
    trap 'sv_bg_signal SIGTERM 143' TERM
}
