#!/usr/bin/env bash
# Optimizer / schedule flags on the command line: --help lists them, bad values and combinations
# fail with exit 2 and a message naming the flag, the checkpoint index records the optimizer and
# the schedule (cycles, k-decay and noise included), and a resume that changes --opt is refused
# (the same --opt resumes).
SHARDVIT=$1
source "$(dirname "$0")/../fsdp/lib.sh"
SMALL="--model vit-28 --dim 12 --depth 1 --heads 2 --batch-size 24 --synth-samples 96 --log-every 1 --seed 3 --workers 1"
fail=0
help=$("$SHARDVIT" train --help 2>&1)
for f in opt momentum nesterov layer-decay sched warmup-epochs warmup-lr warmup-prefix cooldown-epochs decay-epochs \
    decay-milestones decay-rate poly-power sched-on-updates lr-cycle-limit lr-cycle-mul lr-cycle-decay lr-k-decay \
    lr-noise lr-noise-pct lr-noise-std lr-noise-type; do
    grep -q -- "--$f " <<<"$help" || { echo "FAIL: --help lacks --$f"; fail=1; }
done
# bad NAME EXPECTED-TEXT flags...: exit status 2 and the text on stderr
bad() {
    local want=$1
    shift
    local out rc=0
    out=$("$SHARDVIT" train $SMALL --steps 1 "$@" 2>&1) || rc=$?
    if [ "$rc" != 2 ] || ! grep -qF -- "$want" <<<"$out"; then
        echo "FAIL: '$*' gave exit $rc, expected 2 with '$want':"
        tail -3 <<<"$out"
        fail=1
    else
        echo "refused as expected: $* -> $(grep -F -- "$want" <<<"$out" | head -1)"
    fi
}
bad "--opt: invalid value 'adam'" --opt adam
bad "--sched: invalid value 'cosin'" --sched cosin
bad "--nesterov applies to --opt sgd only" --nesterov
bad "--momentum applies to --opt sgd only" --opt lion --momentum 0.5
bad "--nesterov needs --momentum > 0" --opt sgd --nesterov --momentum 0
# the mirror rules: settings the optimizer / schedule has none of (they were accepted and ignored)
bad "--beta1 / --beta2 apply to --opt adamw, lamb and lion (this run has --opt sgd)" --opt sgd --beta1 0.5
bad "--beta1 / --beta2 apply to --opt adamw, lamb and lion (this run has --opt sgd)" --opt sgd --beta2 0.5
bad "--eps applies to --opt adamw and lamb (this run has --opt sgd)" --opt sgd --eps 0.5
bad "--eps applies to --opt adamw and lamb (this run has --opt lion)" --opt lion --eps 0.5
bad "--min-lr applies to --sched cosine and poly" --sched step --min-lr 5e-4
bad "--min-lr applies to --sched cosine and poly" --sched constant --min-lr 5e-4
bad "give --warmup (steps) or --warmup-epochs, not both" --warmup 5 --warmup-epochs 1
bad "--warmup-prefix needs --warmup-epochs" --warmup-prefix
bad "--decay-milestones: '3,2' must be ascending" --sched multistep --decay-milestones 3,2
bad "--decay-milestones: '1,x' is not a comma list" --sched multistep --decay-milestones 1,x
bad "--layer-decay" --layer-decay 1.5
bad "--momentum" --opt sgd --momentum 1.5
bad "--sched poly: the power" --sched poly --decay-rate 0
bad "no steps left to decay over" --sched cosine --steps 4 --warmup-epochs 1 --warmup-prefix
# --sched-on-updates 0 (per-epoch LR): whole epochs only, no step-valued warmup or run length
bad "--sched-on-updates" --sched-on-updates 2
bad "--sched-on-updates 0: --warmup 5 counts steps" --sched-on-updates 0 --warmup 5
bad "--sched-on-updates 0: --warmup-epochs 1.5 is not a whole number" --sched-on-updates 0 --warmup-epochs 1.5
bad "--sched-on-updates 0: --cooldown-epochs 0.5 is not a whole number" --sched-on-updates 0 --cooldown-epochs 0.5
bad "has 2.5, not a whole epoch" --sched-on-updates 0 --sched multistep --decay-milestones 1,2.5
bad "--sched-on-updates 0 steps the LR per epoch of --epochs; --steps 1" --sched-on-updates 0
# cycles, k-decay and noise (timm's): which schedules take them, ranges, combinations
bad "--lr-cycle-limit / --lr-cycle-mul / --lr-cycle-decay apply to --sched cosine and poly only" --sched step \
    --lr-cycle-limit 2
bad "--lr-cycle-limit / --lr-cycle-mul / --lr-cycle-decay apply to --sched cosine and poly only" --sched constant \
    --lr-cycle-decay 0.1
bad "--lr-k-decay applies to --sched cosine and poly only" --sched multistep --lr-k-decay 2
bad "--lr-k-decay must be > 0" --lr-k-decay 0
bad "--lr-cycle-mul must be > 0" --lr-cycle-limit 2 --lr-cycle-mul 0
bad "they need --lr-cycle-limit > 1" --lr-cycle-mul 2
bad "they need --lr-cycle-limit > 1" --sched poly --lr-cycle-decay 0.1
bad "--lr-cycle-limit" --lr-cycle-limit 0
bad "--lr-cycle-limit 2 sets the run's length" --lr-cycle-limit 2
bad "--lr-noise: '0.5,0.2': the start must come before the stop" --lr-noise 0.5,0.2
bad "--lr-noise: '0.1,0.2,0.3' has more than two numbers" --lr-noise 0.1,0.2,0.3
bad "--lr-noise: 'x' is not A or A,B" --lr-noise x
bad "--lr-noise: '-0.1' is not A or A,B" --lr-noise -0.1
bad "--lr-noise: '0.1,' ends with a comma" --lr-noise 0.1,
bad "--lr-noise-pct / --lr-noise-std / --lr-noise-type need --lr-noise" --lr-noise-pct 0.3
bad "--lr-noise-pct / --lr-noise-std / --lr-noise-type need --lr-noise" --lr-noise-type uniform
bad "--lr-noise-type: invalid value 'gauss'" --lr-noise 0.1 --lr-noise-type gauss
bad "--lr-noise-pct must be > 0" --lr-noise 0.1 --lr-noise-pct 0
bad "--lr-noise-pct: invalid value '1.5'" --lr-noise 0.1 --lr-noise-pct 1.5
bad "--lr-noise-std 50 is over 100 x --lr-noise-pct 0.1" --lr-noise 0.1 --lr-noise-pct 0.1 --lr-noise-std 50
# known once the run's length is: (--steps -1 replaces bad's --steps 1; 4 steps per epoch)
bad "--lr-noise 2: the noise starts at step 8 (x 4, the decay length), after the run's last step 3" \
    --steps -1 --epochs 1 --warmup 0 --lr-noise 2
bad "--lr-noise 0.5: the noise range is a fraction of the decay length" --warmup 3 --lr-noise 0.5
bad "--lr-cycle-mul 0.5 < 1: the cycles shrink towards 8 steps" --steps -1 --epochs 1 --warmup 0 --lr-cycle-limit 3 \
    --lr-cycle-mul 0.5 --cooldown-epochs 2
# a noise range that holds only step 0 (never noised, as in timm): no noise at all
bad "--lr-noise 0,0.2: the noise range [0, 0.8) steps (x 4, the decay length) holds no step that is noised" \
    --steps -1 --epochs 1 --warmup 0 --lr-noise 0,0.2
# cycles growing past any run (4 x (2^60 - 1) steps: no int64 holds it; it used to wrap to a negative
# length and train 0 steps with exit 0)
bad "--lr-cycle-limit 60 with --lr-cycle-mul 2: 60 cycles of 4 steps growing by 2 make a schedule of more than 2^40" \
    --steps -1 --epochs 1 --warmup 0 --lr-cycle-limit 60 --lr-cycle-mul 2
bad "--lr-cycle-limit 60 with --lr-cycle-mul 2: 60 cycles of 1 epochs growing by 2" --steps -1 --epochs 1 --warmup 0 \
    --sched-on-updates 0 --lr-cycle-limit 60 --lr-cycle-mul 2
# the default warmup (10 steps) named: a documented example without --warmup 0 met it unexplained
bad "no steps left to decay over after the warmup of 10 (--warmup, 10 steps unless given" --steps -1 --epochs 2 \
    --lr-cycle-limit 3 --lr-cycle-mul 1.5
bad "--sched cosine with cycles or k-decay: no steps left to decay over" --steps -1 --epochs 1 --warmup 4 \
    --lr-k-decay 2

# the index records the optimizer and the schedule
A=$WORK/a
"$SHARDVIT" train $SMALL --steps 4 --opt lamb --layer-decay 0.75 --sched step --decay-epochs 0.5 --out "$A" \
    >"$WORK/a.log" 2>&1 || { echo "FAIL: lamb run"; tail -5 "$WORK/a.log"; exit 1; }
"$PY" - "$A/checkpoints/step_00000004/index.json" <<'PYEOF' || fail=1
import json, sys
ix = json.load(open(sys.argv[1]))
o, s = ix["optimizer"], ix["lr_schedule"]
ok = o["kind"] == "lamb" and o["layer_decay"] == 0.75 and o["eps"] == 1e-6 and s["kind"] == "step" \
    and s["decay_steps"] == 2 and s["warmup"] == 10
print(("" if ok else "FAIL: ") + f"index records optimizer {o} and schedule {s['kind']}")
sys.exit(0 if ok else 1)
PYEOF
# a changed optimizer is refused; the same one resumes
rc=0
out=$("$SHARDVIT" train $SMALL --steps 6 --opt sgd --sched step --decay-epochs 0.5 --out "$A" --resume auto 2>&1) || rc=$?
if [ "$rc" != 2 ] || ! grep -qF "trained with --opt lamb but this run asks for --opt sgd" <<<"$out"; then
    echo "FAIL: resume with a changed --opt gave exit $rc:"; tail -3 <<<"$out"; fail=1
else
    echo "resume with --opt sgd refused: $(grep -F -- "--opt lamb" <<<"$out" | head -1)"
fi
"$SHARDVIT" train $SMALL --steps 6 --opt lamb --layer-decay 0.75 --sched step --decay-epochs 0.5 --out "$A" \
    --resume auto >"$WORK/a2.log" 2>&1 || { echo "FAIL: resume with the same --opt"; tail -5 "$WORK/a2.log"; fail=1; }
grep -q "resume: step 4" "$WORK/a2.log" || { echo "FAIL: no resume from step 4"; fail=1; }
# a per-epoch schedule is recorded as such; resuming it per update is warned about
E=$WORK/e
"$SHARDVIT" train $SMALL --sched-on-updates 0 --epochs 2 --warmup-epochs 1 --out "$E" >"$WORK/e.log" 2>&1 ||
    { echo "FAIL: per-epoch run"; tail -5 "$WORK/e.log"; exit 1; }
"$PY" - "$E/checkpoints/step_00000008/index.json" <<'PYEOF' || fail=1
import json, sys
s = json.load(open(sys.argv[1]))["lr_schedule"]
ok = s.get("sched_on_updates") is False and s.get("steps_per_epoch") == 4 and s["t_initial"] == 2 \
    and s["warmup"] == 0 and s["warmup_form"] == "timm"
print(("" if ok else "FAIL: ") + f"per-epoch index records {s}")
sys.exit(0 if ok else 1)
PYEOF
"$SHARDVIT" train $SMALL --epochs 3 --out "$E" --resume auto >"$WORK/e2.log" 2>&1 ||
    { echo "FAIL: per-update resume of a per-epoch run"; tail -5 "$WORK/e2.log"; fail=1; }
grep -qF "stepped per epoch, now per update" "$WORK/e2.log" || { echo "FAIL: no warning for the changed stepping"; fail=1; }
# cycles, k-decay and noise are recorded (only when on); resuming with others is warned about
C=$WORK/c
"$SHARDVIT" train $SMALL --epochs 1 --warmup 0 --lr-cycle-limit 2 --lr-cycle-mul 1.5 --lr-cycle-decay 0.3 \
    --lr-k-decay 2 --lr-noise 0.25,1.5 --lr-noise-pct 0.4 --lr-noise-std 0.2 --lr-noise-type uniform --out "$C" \
    >"$WORK/c.log" 2>&1 || { echo "FAIL: cycles / noise run"; tail -5 "$WORK/c.log"; exit 1; }
"$PY" - "$C/checkpoints/step_00000010/index.json" "$A/checkpoints/step_00000004/index.json" \
    "$C/config.toml" <<'PYEOF' || fail=1
import json, sys
s = json.load(open(sys.argv[1]))["lr_schedule"]
ok = s["cycle_limit"] == 2 and s["cycle_mul"] == 1.5 and s["cycle_decay"] == 0.3 and s["k_decay"] == 2 \
    and s["noise_range"] == [0.25, 1.5] and s["noise_pct"] == 0.4 and s["noise_std"] == 0.2 \
    and s["noise_type"] == "uniform" and s["noise_seed"] == 3 and s["total_steps"] == 10 and s["t_initial"] == 4
print(("" if ok else "FAIL: ") + f"cycles / noise index records {s}")
plain = json.load(open(sys.argv[2]))["lr_schedule"]
extra = [k for k in ("cycle_limit", "cycle_mul", "cycle_decay", "k_decay", "noise_range", "noise_pct", "noise_std",
                     "noise_type", "noise_seed") if k in plain]
print(("FAIL: " if extra else "") + f"a run without them records none: {extra}")
conf = open(sys.argv[3]).read()
want = ['lr-cycle-limit = 2', 'lr-cycle-mul = 1.5', 'lr-cycle-decay = 0.29999999999999999', 'lr-k-decay = 2',
        'lr-noise = "0.25,1.5"', 'lr-noise-pct = 0.40000000000000002', 'lr-noise-std = 0.20000000000000001',
        'lr-noise-type = "uniform"']
missing = [w for w in want if w + "\n" not in conf]
print(("FAIL: config.toml lacks " if missing else "config.toml records the flags ") + str(missing or want))
sys.exit(0 if ok and not extra and not missing else 1)
PYEOF
# the recorded config.toml runs again (no default value is refused on reading back)
"$SHARDVIT" train --config "$C/config.toml" --out "$WORK/c_again" --ckpt-dir "$WORK/c_again/checkpoints" \
    >"$WORK/c_again.log" 2>&1 || { echo "FAIL: --config of the cycles / noise run"; tail -5 "$WORK/c_again.log"; fail=1; }
cmp <(grep -o '"lr":[^,]*' "$C/metrics.jsonl") <(grep -o '"lr":[^,]*' "$WORK/c_again/metrics.jsonl") ||
    { echo "FAIL: the run from config.toml logged other LRs"; fail=1; }
"$SHARDVIT" train $SMALL --epochs 1 --warmup 0 --lr-cycle-limit 3 --out "$C" --resume auto >"$WORK/c2.log" 2>&1 ||
    { echo "FAIL: resume with other cycles"; tail -5 "$WORK/c2.log"; fail=1; }
grep -qF "the LR schedule's cycles, k-decay or noise changed" "$WORK/c2.log" ||
    { echo "FAIL: no warning for the changed cycles / noise"; fail=1; }
# the rest of a schedule changed on resume: warned, naming each change (--warmup-epochs was not
# even recorded, and --warmup-lr / step's --decay-epochs / --decay-rate changed silently); the
# same flags again: no warning
W="$WORK/wu"
rc=0
SHARDVIT_TEST_SIGNAL_AT=2 "$SHARDVIT" train $SMALL --epochs 3 --warmup-epochs 2 --out "$W" >"$WORK/wu1.log" 2>&1 || rc=$?
[ $rc = 75 ] || { echo "FAIL: the --warmup-epochs run did not stop and save (exit $rc)"; fail=1; }
"$SHARDVIT" train $SMALL --epochs 3 --warmup-epochs 1 --warmup-lr 1e-4 --out "$W" --resume auto >"$WORK/wu2.log" 2>&1 ||
    { echo "FAIL: resume with another warmup"; tail -5 "$WORK/wu2.log"; fail=1; }
grep -qF "the LR schedule changed (warmup 8 -> 4 steps; warmup-lr 0 -> 0.0001)" "$WORK/wu2.log" ||
    { echo "FAIL: no warning naming the changed warmup:"; grep WARN "$WORK/wu2.log"; fail=1; }
S="$WORK/st"
SHARDVIT_TEST_SIGNAL_AT=2 "$SHARDVIT" train $SMALL --epochs 3 --sched step --decay-epochs 1 --warmup 0 --out "$S" \
    >"$WORK/st1.log" 2>&1 || true
"$SHARDVIT" train $SMALL --epochs 3 --sched step --decay-epochs 2 --decay-rate 0.5 --warmup 0 --out "$S" \
    --resume auto >"$WORK/st2.log" 2>&1 || { echo "FAIL: resume with another step decay"; fail=1; }
grep -qF "the LR schedule changed (decay interval 4 -> 8 steps; decay-rate 0.1 -> 0.5)" "$WORK/st2.log" ||
    { echo "FAIL: no warning naming the changed step decay:"; grep WARN "$WORK/st2.log"; fail=1; }
SHARDVIT_TEST_SIGNAL_AT=2 "$SHARDVIT" train $SMALL --epochs 3 --warmup-epochs 2 --out "$WORK/same" >"$WORK/same1.log" \
    2>&1 || true
"$SHARDVIT" train $SMALL --epochs 3 --warmup-epochs 2 --out "$WORK/same" --resume auto >"$WORK/same2.log" 2>&1 ||
    { echo "FAIL: resume with the same schedule"; fail=1; }
if grep -q "LR schedule" "$WORK/same2.log"; then echo "FAIL: a warning for an unchanged schedule"; fail=1; fi
# an index written before the schedule's members (only kind / step / total_steps / lr / min_lr /
# warmup): an unchanged resume is not warned about (its missing decay length read as 0 did)
SHARDVIT_TEST_SIGNAL_AT=2 "$SHARDVIT" train $SMALL --epochs 3 --warmup 2 --out "$WORK/old" >"$WORK/old1.log" 2>&1 || true
"$PY" - "$WORK/old/checkpoints/$(cat "$WORK/old/checkpoints/latest")/index.json" <<'PYEOF'
import json, sys
j = json.load(open(sys.argv[1]))
j["lr_schedule"] = {k: j["lr_schedule"][k] for k in ("kind", "step", "total_steps", "lr", "min_lr", "warmup")}
json.dump(j, open(sys.argv[1], "w"))
PYEOF
"$SHARDVIT" train $SMALL --epochs 3 --warmup 2 --out "$WORK/old" --resume auto >"$WORK/old2.log" 2>&1 ||
    { echo "FAIL: resume of an index in the old format"; tail -5 "$WORK/old2.log"; fail=1; }
if grep -q "LR schedule" "$WORK/old2.log"; then echo "FAIL: an old index warned: $(grep "LR schedule" "$WORK/old2.log")"; fail=1; fi
echo "resume: changed warmup / warmup-lr / step decay warned with each change, an unchanged schedule not (also from an old index)"
[ "$fail" = 0 ] && echo "optim_cli: all passed"
exit $fail
