#!/usr/bin/env bash
# Run libFuzzer targets for a while, two at a time, niced so the machine stays usable.
#   tests/fuzz/run_fuzz.sh BUILD_DIR SECONDS_PER_TARGET WORK_DIR [target ...]
# BUILD_DIR was configured with -DCMAKE_C_COMPILER=clang -DSHARDVIT_FUZZ=ON. New corpus
# entries go to WORK_DIR/<target>/ (the seed corpus in tests/fuzz/corpus/ is only read), crash
# inputs to WORK_DIR/<target>-crash-*, logs to WORK_DIR/<target>.log; the last lines of each
# log give executions and coverage.
set -u
build=${1:?build dir}; secs=${2:?seconds}; work=${3:?work dir}; shift 3
here=$(cd "$(dirname "$0")" && pwd)
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(json safetensors tar tensorboard jpeg idx cifar classes flags)
mkdir -p "$work"
# quoted inside the value: the sanitizer runtime splits its options at spaces, ':' and ','
supp=$here/../sanitize/lsan.supp
case "$supp" in *'"'*) q="'" ;; *) q='"' ;; esac
export LSAN_OPTIONS=suppressions=$q$supp$q
run_one() {
    local t=$1
    mkdir -p "$work/$t"
    nice -n 15 "$build/tests/fuzz/fuzz_$t" -max_total_time="$secs" -timeout=25 -rss_limit_mb=2560 \
        -max_len=65536 -print_final_stats=1 -artifact_prefix="$work/$t-" \
        "$work/$t" "$here/corpus/$t" >"$work/$t.log" 2>&1
    echo "$t exit $?" >>"$work/status"
}
i=0
for t in "${targets[@]}"; do
    run_one "$t" &
    i=$((i + 1))
    if [ $((i % 2)) -eq 0 ]; then wait; fi
done
wait
