#!/usr/bin/env bash
# Every rank reads its own part of --weights / --init-from, so the ranks must have opened one
# file: a file replaced between two ranks' opens (an export onto the same path) gave a model
# mixed from both, with exit 0. Deterministically here: MPMD ranks in two working directories
# open the same relative path m.safetensors, which names another file in each.
#   1. two different exports: eval and train --init-from fail on every rank (exit 1) naming the
#      two ranks; nothing is written to eval's --out;
#   2. a byte-identical copy (another inode and time: a node-local copy on each node) is
#      accepted, and evaluates to the same eval.json numbers as the original on both ranks.
SV=$1
source "$(dirname "$0")/lib.sh"
fail() {
    echo "FAIL: $*"
    exit 1
}
for s in 1 2; do
    run "$WORK/train$s.log" "$SV" train $MODEL $COMMON --data "$WORK/data/train" --steps 2 --batch-size 6 \
        --warmup 1 --seed $s --out "$WORK/run$s"
    mkdir -p "$WORK/w$s"
    run "$WORK/export$s.log" "$SV" export "$WORK/run$s" "$WORK/w$s/m.safetensors"
done
mkdir -p "$WORK/copy"
sleep 1.1 # another modification time
cp "$WORK/w1/m.safetensors" "$WORK/w1/config.json" "$WORK/copy/"
cmp -s "$WORK/w1/m.safetensors" "$WORK/w2/m.safetensors" && fail "the two exports are identical"
EV="eval --threads 1 --workers 1 --comm-timeout 60 --weights m.safetensors --data $WORK/data/test"
# mpmd DIR0 DIR1 ARGS...: rank 0 in DIR0, rank 1 in DIR1 (a script: run / expect_fail use timeout)
cat >"$WORK/mpmd" <<EOF
#!/usr/bin/env bash
d0=\$1 d1=\$2
shift 2
exec "$MPIEXEC" -n 1 -wdir "\$d0" "$SV" "\$@" : -n 1 -wdir "\$d1" "$SV" "\$@"
EOF
chmod +x "$WORK/mpmd"
mpmd=$WORK/mpmd
expect_fail eval_mixed 120 "$mpmd" "$WORK/w1" "$WORK/w2" $EV --out "$WORK/e_mixed"
error_says eval_mixed "rank 0 and rank 1 opened different files"
[ ! -e "$WORK/e_mixed/eval.json" ] || fail "eval wrote a result from two files"
expect_fail init_mixed 120 "$mpmd" "$WORK/w1" "$WORK/w2" train $MODEL $COMMON --data "$WORK/data/train" --steps 1 \
    --batch-size 6 --warmup 0 --init-from m.safetensors --out "$WORK/t_mixed"
error_says init_mixed "m.safetensors: rank 0 and rank 1 opened different files"

run "$WORK/eval_copy.log" "$mpmd" "$WORK/w1" "$WORK/copy" $EV --out "$WORK/e_copy"
run "$WORK/eval_one.log" "$MPIEXEC" -n 2 -wdir "$WORK/w1" "$SV" $EV --out "$WORK/e_one"
"$PY" - "$WORK/e_copy/eval.json" "$WORK/e_one/eval.json" <<'PYEOF' || fail "the copy evaluated differently"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
for k in ("top1", "top5", "loss", "num_samples", "top1_correct"):
    assert a[k] == b[k], (k, a[k], b[k])
PYEOF
echo "ok: a byte-identical copy on another rank is accepted"
echo PASS
