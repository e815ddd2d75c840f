# Shared by the prep shell tests (prep_out.sh, prep_imagefolder.sh): failures counted per case,
# and a command runner with a hang limit. Source it after setting WORK; RUN_LIMIT (seconds,
# default 30) bounds each command run through `run`.
NFAIL=0
fail() { echo "FAIL: $*"; NFAIL=$((NFAIL + 1)); }
begin() { F0=$NFAIL; }                              # a case starts
ok() { [ $NFAIL -eq $F0 ] && echo "ok $*"; return 0; } # it passed if nothing failed since begin

# run NAME CMD...: CMD's output in $WORK/NAME.log, within RUN_LIMIT seconds; sets RC
run() {
    local name=$1 limit=${RUN_LIMIT:-30}
    shift
    timeout -k 5 "$limit" "$@" >"$WORK/$name.log" 2>&1
    RC=$?
    if [ $RC -eq 124 ] || [ $RC -eq 137 ]; then fail "$name: still running after $limit s (hang)"; fi
}
