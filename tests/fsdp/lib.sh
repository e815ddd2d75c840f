# Shared helpers for the FSDP/CLI shell tests. Source after setting SHARDVIT (binary path).
set -euo pipefail
WORK=$(mktemp -d "${TMPDIR:-/tmp}/shardvit-test.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PY=${PYTHON:-python3}
# A small model and data set: every world size 1..4 divides the global batch of 24.
TINY="--model vit-28 --dim 36 --depth 3 --heads 3 --batch-size 24 --synth-samples 480 --log-every 1 --seed 7 --workers 1 --comm-timeout 60 --mfu-calib-seconds 0"
MPIEXEC=${MPIEXEC:-mpiexec}

# run NAME WORLD [flags...]: train into $WORK/NAME, params into $WORK/NAME.bin, log into $WORK/NAME.log
run() {
    local name=$1 world=$2
    shift 2
    # a name used again starts a new run: train refuses to start over an earlier run's directory
    case " $* " in *" --resume "*) ;; *) rm -rf "${WORK:?}/$name" ;; esac
    if ! timeout 300 "$MPIEXEC" -n "$world" "$SHARDVIT" train $TINY --out "$WORK/$name" \
        --save-params "$WORK/$name.bin" "$@" >"$WORK/$name.log" 2>&1; then
        echo "FAIL: run $name (world $world, $*) failed:"
        tail -20 "$WORK/$name.log"
        exit 1
    fi
}

# compare A B [compare_runs.py flags]
compare() {
    local a=$1 b=$2
    shift 2
    echo -n "$a vs $b: "
    "$PY" "$HERE/compare_runs.py" "$WORK/$a" "$WORK/$b" "$WORK/$a.bin" "$WORK/$b.bin" "$@"
}

# logline NAME PATTERN: the first log line of run NAME matching PATTERN
logline() { grep -m1 -E "$2" "$WORK/$1.log" || { echo "FAIL: no '$2' in $1.log"; exit 1; }; }

# export_roundtrip NAME [architecture flags...]: run NAME (trained with --val-data synthetic) is
# exported; a world-2 run with the same architecture flags and --init-from the export must hold
# the same parameters bit for bit; `shardvit eval --weights` (no architecture flags: read off the
# file) must reproduce the run's final eval; at --img 32 the 7x7 pos_embed grid is resampled.
export_roundtrip() {
    local name=$1
    shift
    mkdir -p "$WORK/$name-export"
    "$SHARDVIT" export "$WORK/$name" "$WORK/$name-export/model.safetensors" >"$WORK/$name-export.log" 2>&1 ||
        { cat "$WORK/$name-export.log"; echo "FAIL: export $name"; exit 1; }
    run "$name-back" 2 --steps 0 "$@" --init-from "$WORK/$name-export/model.safetensors"
    cmp "$WORK/$name-back.bin" "$WORK/$name.bin" || { echo "FAIL: export -> import round trip of $name differs"; exit 1; }
    "$SHARDVIT" eval --weights "$WORK/$name-export/model.safetensors" --data synthetic --synth-samples 480 \
        --out "$WORK/$name-eval" >"$WORK/$name-eval.log" 2>&1 || { cat "$WORK/$name-eval.log"; echo "FAIL: eval of the export"; exit 1; }
    local want got
    want=$("$PY" -c "import json,sys;print(json.load(open(sys.argv[1]))['top1'])" "$WORK/$name/eval.json")
    got=$("$PY" -c "import json,sys;print(json.load(open(sys.argv[1]))['top1'])" "$WORK/$name-eval/eval.json")
    echo "final eval of the run: top-1 $want; shardvit eval of its export: $got"
    test "$want" = "$got" || { echo "FAIL: eval of the export ($got) differs from the run's final eval ($want)"; exit 1; }
    "$SHARDVIT" eval --weights "$WORK/$name-export/model.safetensors" --data synthetic --synth-samples 96 --img 32 \
        --out "$WORK/$name-eval32" >"$WORK/$name-eval32.log" 2>&1 ||
        { cat "$WORK/$name-eval32.log"; echo "FAIL: eval at --img 32"; exit 1; }
    grep -q "pos_embed grid 7x7 resampled to 8x8" "$WORK/$name-eval32.log" ||
        { cat "$WORK/$name-eval32.log"; echo "FAIL: no resampling logged"; exit 1; }
}

# need_timm: PYT = $SHARDVIT_TEST_PYTHON (else /usr/bin/python3), or skip (exit 77) when it cannot
# import timm + safetensors + torch.
need_timm() {
    PYT=${SHARDVIT_TEST_PYTHON:-/usr/bin/python3}
    "$PYT" -c "import timm, safetensors.torch, torch" 2>/dev/null || {
        echo "SKIP: $PYT cannot import timm + safetensors + torch (scripts/test_venv.sh installs them)"
        exit 77
    }
}
