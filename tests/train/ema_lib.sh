# Shared by tests/train/model_ema.sh and model_ema_timm.sh (source after tests/fsdp/lib.sh).
CHECK=("$PY" "$HERE/../train/ema_check.py")
# a constant learning rate (--min-lr = --lr) makes the first k steps of any run the same steps
CONST="--lr 1e-3 --min-lr 1e-3 --warmup 0"
K=5
fail() { echo "FAIL: $*"; exit 1; }

# exports DIR NAME K: raw_k / ema_k exports of every step's checkpoint of run NAME into DIR
exports() {
    local dir=$1 name=$2 k step
    mkdir -p "$dir"
    for k in $(seq 1 "$3"); do
        step=$(printf "step_%08d" "$k")
        "$SHARDVIT" export "$WORK/$name/checkpoints/$step" "$dir/raw_$k.safetensors" >/dev/null 2>&1 ||
            fail "export $name $step"
        "$SHARDVIT" export "$WORK/$name/checkpoints/$step" "$dir/ema_$k.safetensors" --ema >/dev/null 2>&1 ||
            fail "export --ema $name $step"
    done
}
