#!/usr/bin/env bash
# The data-augmentation recipe flags (docs/training.md "Data augmentation"): bad values and bad
# combinations exit 2 with a message naming the flag; a DeiT-style recipe (repeated
# augmentation, RandomErasing, timm --aa, batch-mode mixup/cutmix, mixup-off-epoch, 3-Augment)
# trains to finite losses, is bitwise repeatable and trains differently from no recipe.
set -euo pipefail
SV=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { # expected-substring flags...
    local want=$1
    shift
    set +e
    "$SV" train --steps 1 "$@" >"$tmp/bad.log" 2>&1
    local rc=$?
    set -e
    if [ $rc -ne 2 ] || ! grep -q -- "$want" "$tmp/bad.log"; then
        echo "FAIL: train $* -> rc $rc, wanted 2 and '$want':"
        tail -2 "$tmp/bad.log"
        fail=1
    fi
}
bad "--aa" --aa rand-m9-foo
bad "--aa" --aa rand-m9.5
bad "--aa" --aa augmix-m5
bad "--aa and --randaug-n" --aa rand-m9 --randaug-n 2
bad "--aa-interp: invalid value 'lanczos'" --aa rand-m9 --aa-interp lanczos
bad "--aa-interp needs --aa" --aa-interp random
bad "--remode" --reprob 0.25 --remode blue
bad "--remode/--recount need --reprob" --recount 3
bad "--reprob" --reprob 1.5
bad "--mixup-mode" --mixup 0.8 --mixup-mode flip
bad "need --mixup" --mixup-mode batch
bad "need --mixup" --mixup-off-epoch 3
bad "--cutmix-minmax" --cutmix-minmax 0.9,0.1
bad "--cutmix-minmax" --cutmix-minmax 0.2
bad "--train-crop" --train-crop center
bad "--aug-repeats" --aug-repeats 5 --batch-size 8 --synth-samples 64
bad "--color-jitter" --color-jitter 2
[ $fail -eq 0 ] && echo "ok: bad recipe flags exit 2 naming the flag"

A="--model vit-28 --dim 36 --depth 2 --heads 3 --batch-size 24 --steps 12 --synth-samples 96 --log-every 1 --seed 5 --workers 2 --threads 1"
R="--aug-repeats 3 --reprob 0.25 --recount 2 --aa rand-m9-mstd0.5-inc1 --mixup 0.8 --cutmix 1.0 --mixup-mode batch --mixup-off-epoch 2 --three-augment"
for run in a b; do
    "$SV" train $A $R --out "$tmp/$run" >"$tmp/$run.log" 2>&1 || { tail "$tmp/$run.log"; exit 1; }
done
"$SV" train $A --out "$tmp/plain" >"$tmp/plain.log" 2>&1 || { tail "$tmp/plain.log"; exit 1; }
grep -o '"loss":[^,]*' "$tmp/a/metrics.jsonl" >"$tmp/a.loss"
grep -o '"loss":[^,]*' "$tmp/b/metrics.jsonl" >"$tmp/b.loss"
grep -o '"loss":[^,]*' "$tmp/plain/metrics.jsonl" >"$tmp/plain.loss"
[ "$(wc -l <"$tmp/a.loss")" -eq 12 ] || { echo "FAIL: expected 12 logged losses"; fail=1; }
if grep -qi 'nan\|inf' "$tmp/a.loss"; then echo "FAIL: non-finite loss with the recipe"; fail=1; fi
cmp -s "$tmp/a.loss" "$tmp/b.loss" || { echo "FAIL: recipe run not repeatable"; fail=1; }
if cmp -s "$tmp/a.loss" "$tmp/plain.loss"; then echo "FAIL: recipe flags changed nothing"; fail=1; fi
grep -q '^aa = "rand-m9-mstd0.5-inc1"' "$tmp/a/config.toml" || { echo "FAIL: config.toml lacks --aa"; fail=1; }
# --aa-interp random (timm's per-op bilinear/bicubic draw): repeatable, and not nearest's bits
for run in c d; do
    "$SV" train $A $R --aa-interp random --out "$tmp/$run" >"$tmp/$run.log" 2>&1 || { tail "$tmp/$run.log"; exit 1; }
    grep -o '"loss":[^,]*' "$tmp/$run/metrics.jsonl" >"$tmp/$run.loss"
done
cmp -s "$tmp/c.loss" "$tmp/d.loss" || { echo "FAIL: --aa-interp random run not repeatable"; fail=1; }
if cmp -s "$tmp/a.loss" "$tmp/c.loss"; then echo "FAIL: --aa-interp random trained like nearest"; fail=1; fi
[ $fail -eq 0 ] && echo "ok: recipe run finite, bitwise repeatable, different from the plain run; --aa-interp random too"
exit $fail
