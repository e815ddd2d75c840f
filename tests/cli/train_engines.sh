#!/usr/bin/env bash
# A short training run with every CPU GEMM engine this machine has (SHARDVIT_CPU_GEMM or the
# --cpu-gemm flag forces one; docs/backend_cpu.md): each engine gives a bitwise-identical loss
# sequence run to run (the second run chooses it by the flag over another SHARDVIT_CPU_GEMM), and
# the same loss curve as OpenBLAS within tolerance (fp32 mode: 1e-4 per step; bf16 mode: 1e-2,
# the GEMMs sum in other orders, so bf16 roundings of the outputs differ now and then). Engines
# the CPU lacks are skipped with a line naming them. On an AMX machine: the kernel refusing the
# tile state (simulated) makes the automatic choice fall back to the next engine and log why, and
# forcing amx-bf16 then fails with a clear error. bf16 storage and fp32 storage give the same
# loss bits, and a bad SHARDVIT_CPU_BF16_STORAGE is refused.
set -euo pipefail
SV=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
A="--model vit-28 --dim 48 --depth 2 --heads 3 --batch-size 32 --steps 25 --lr 2e-3 --warmup 3 --smoothing 0.1
   --synth-samples 512 --log-every 1 --seed 5 --workers 1 --threads 2"

# run NAME DTYPE ENGINE: trains into $tmp/NAME with SHARDVIT_CPU_GEMM=ENGINE (and --cpu-gemm
# $CPU_GEMM_FLAG when that is set: the engine expected in the log); returns 3 when the engine is
# not available here
run() {
    local name=$1 dt=$2 eng=$3 flag=()
    if [ -n "${CPU_GEMM_FLAG:-}" ]; then flag=(--cpu-gemm "$CPU_GEMM_FLAG"); eng=$CPU_GEMM_FLAG; fi
    if ! SHARDVIT_CPU_GEMM=$3 "$SV" train $A "${flag[@]}" --param-dtype "$dt" --out "$tmp/$name" >"$tmp/$name.log" 2>&1; then
        if grep -q "not available on this CPU\|not usable here" "$tmp/$name.log"; then
            echo "SKIP engine $eng ($dt): $(grep -o 'GEMM engine.*' "$tmp/$name.log" | head -1)"
            return 3
        fi
        tail "$tmp/$name.log"
        echo "FAIL: training with SHARDVIT_CPU_GEMM=$eng ($dt)"
        exit 1
    fi
    grep -q "gemm $eng," "$tmp/$name.log" ||
        { grep arena "$tmp/$name.log"; echo "FAIL: the log does not name engine $eng"; exit 1; }
    grep '"loss":' "$tmp/$name/metrics.jsonl" | sed -E 's/.*"step":([0-9]+).*"loss":([0-9.eE+-]+).*/\1 \2/' >"$tmp/$name.loss"
}

# compare REF OTHER TOL: per-step loss difference
compare() {
    paste "$tmp/$1.loss" "$tmp/$2.loss" | awk -v tol="$3" -v what="$2 vs $1" '
        { if ($1 != $3) { print "FAIL: step mismatch " what; exit 1 }
          d = $2 - $4; if (d < 0) d = -d; if (d > m) m = d; n++ }
        END { if (n < 25) { print "FAIL: " what ": only " n " steps"; exit 1 }
              printf "%s: max per-step loss difference %.2e (tolerance %g)\n", what, m, tol; exit !(m <= tol) }'
}

ran=0
for dt in fp32 bf16; do
    run "$dt-openblas" "$dt" openblas
    engines="avx512-f32 avx2-f32"
    [ "$dt" = bf16 ] && engines="amx-bf16 avx512-bf16 $engines"
    tol=1e-4
    [ "$dt" = bf16 ] && tol=1e-2
    for eng in $engines; do
        rc=0
        run "$dt-$eng" "$dt" "$eng" || rc=$?
        [ $rc -eq 3 ] && continue
        # the same engine chosen by the flag, which wins over the variable
        CPU_GEMM_FLAG=$eng run "$dt-$eng-again" "$dt" openblas
        cmp -s "$tmp/$dt-$eng.loss" "$tmp/$dt-$eng-again.loss" ||
            { echo "FAIL: $eng ($dt): same seed, different loss sequence"; exit 1; }
        echo "$eng ($dt): bitwise-identical loss sequence run to run (SHARDVIT_CPU_GEMM=$eng, then --cpu-gemm $eng over SHARDVIT_CPU_GEMM=openblas)"
        compare "$dt-openblas" "$dt-$eng" "$tol"
        ran=$((ran + 1))
    done
done
[ $ran -gt 0 ] || { echo "SKIP: no own GEMM engine runs on this CPU (only OpenBLAS)"; exit 77; }

# AMX refused by the kernel (simulated): the automatic choice falls back and says so
if [ -f "$tmp/bf16-amx-bf16.loss" ]; then
    SHARDVIT_CPU_AMX_DENY=1 "$SV" train $A --param-dtype bf16 --out "$tmp/deny" >"$tmp/deny.log" 2>&1 ||
        { tail "$tmp/deny.log"; echo "FAIL: training with AMX refused"; exit 1; }
    grep -q "AMX-BF16 not used: the kernel refused" "$tmp/deny.log" ||
        { cat "$tmp/deny.log"; echo "FAIL: no log line says AMX was refused"; exit 1; }
    grep -q "gemm avx512-bf16" "$tmp/deny.log" || { grep arena "$tmp/deny.log"; echo "FAIL: no fallback engine"; exit 1; }
    echo "AMX refused: fell back to avx512-bf16 and logged it"
    if SHARDVIT_CPU_AMX_DENY=1 SHARDVIT_CPU_GEMM=amx-bf16 "$SV" train $A --param-dtype bf16 --out "$tmp/deny2" \
        >"$tmp/deny2.log" 2>&1; then
        echo "FAIL: forcing amx-bf16 with AMX refused succeeded"; exit 1
    fi
    grep -q "amx-bf16 is not usable here: the kernel refused" "$tmp/deny2.log" ||
        { cat "$tmp/deny2.log"; echo "FAIL: unclear error for a forced, refused AMX"; exit 1; }
    echo "AMX refused + forced: clear error"
else
    echo "SKIP AMX refusal check: this CPU has no AMX-BF16"
fi
# bf16 storage (docs/backend_cpu.md "Storage"): with a bf16 engine the compute buffers are bf16
# arrays by default; SHARDVIT_CPU_BF16_STORAGE=0 keeps fp32 arrays: the same loss bits either way
for eng in amx-bf16 avx512-bf16; do
    [ -f "$tmp/bf16-$eng.loss" ] || continue
    grep -q "gemm $eng, attn $eng, bf16 storage" "$tmp/bf16-$eng.log" ||
        { grep arena "$tmp/bf16-$eng.log"; echo "FAIL: $eng (bf16) does not use bf16 storage"; exit 1; }
    SHARDVIT_CPU_BF16_STORAGE=0 SHARDVIT_CPU_GEMM=$eng "$SV" train $A --param-dtype bf16 --out "$tmp/f32s-$eng" \
        >"$tmp/f32s-$eng.log" 2>&1 || { tail "$tmp/f32s-$eng.log"; echo "FAIL: fp32 storage run ($eng)"; exit 1; }
    if grep -q "bf16 storage" "$tmp/f32s-$eng.log"; then echo "FAIL: SHARDVIT_CPU_BF16_STORAGE=0 ignored"; exit 1; fi
    grep '"loss":' "$tmp/f32s-$eng/metrics.jsonl" | sed -E 's/.*"step":([0-9]+).*"loss":([0-9.eE+-]+).*/\1 \2/' \
        >"$tmp/f32s-$eng.loss"
    cmp -s "$tmp/bf16-$eng.loss" "$tmp/f32s-$eng.loss" ||
        { echo "FAIL: $eng: bf16 and fp32 storage give different losses"; exit 1; }
    echo "$eng: bf16 storage and fp32 storage give the same loss bits"
done
# an unknown engine named by the flag: refused before any work (exit 2), naming the value and the choices
rc=0
"$SV" train $A --cpu-gemm nope --out "$tmp/badgemm" >"$tmp/badgemm.log" 2>&1 || rc=$?
[ $rc -eq 2 ] || { cat "$tmp/badgemm.log"; echo "FAIL: --cpu-gemm nope exited $rc, expected 2"; exit 1; }
grep -q "^shardvit train: --cpu-gemm: invalid value 'nope' (expected amx-bf16|" "$tmp/badgemm.log" ||
    { cat "$tmp/badgemm.log"; echo "FAIL: unclear error for --cpu-gemm nope"; exit 1; }
echo "--cpu-gemm nope: refused with the choices"
rc=0
SHARDVIT_CPU_BF16_STORAGE=yes "$SV" train $A --param-dtype bf16 --out "$tmp/badstore" >"$tmp/badstore.log" 2>&1 || rc=$?
[ $rc -eq 2 ] || { cat "$tmp/badstore.log"; echo "FAIL: SHARDVIT_CPU_BF16_STORAGE=yes exited $rc, expected 2"; exit 1; }
grep -q "SHARDVIT_CPU_BF16_STORAGE: invalid value 'yes' (expected 0 or 1" "$tmp/badstore.log" ||
    { cat "$tmp/badstore.log"; echo "FAIL: unclear error for a bad SHARDVIT_CPU_BF16_STORAGE"; exit 1; }
echo "ok: $ran engine/precision combinations"
