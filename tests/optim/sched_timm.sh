#!/usr/bin/env bash
# Every --sched against timm's scheduler classes stepped per update (--sched-on-updates), and
# shardvit's --warmup-steps form against its formula: the LR of every optimizer step as logged in
# metrics.jsonl. 96 synthetic samples at batch 24: 4 steps per epoch. Skipped (77) without
# SHARDVIT_TEST_PYTHON (timm). Then timm's cycles, k-decay and noise (--lr-cycle-*, --lr-k-decay,
# --lr-noise*) in every stepping and warmup form, and a run resumed mid-cycle and mid-noise.
SHARDVIT=$1
source "$(dirname "$0")/../fsdp/lib.sh"
[ -n "${SHARDVIT_TEST_PYTHON:-}" ] || { echo "SHARDVIT_TEST_PYTHON unset: skipped"; exit 77; }
SMALL="--model vit-28 --dim 12 --depth 1 --heads 2 --batch-size 24 --synth-samples 96 --log-every 1 --seed 3 --workers 1 --lr 1e-3"
n=0
sched() { # sched NAME REF SCHED "shardvit flags" reference KEY=VALUE...
    local name=$1 ref=$2 s=$3 flags=$4
    shift 4
    if ! "$SHARDVIT" train $SMALL $flags --out "$WORK/$name" >"$WORK/$name.log" 2>&1; then
        echo "FAIL: $name ($flags)"; tail -5 "$WORK/$name.log"; exit 1
    fi
    # compared with the reference at the end, all in one Python process (timm imported once); the
    # run directory relative to $WORK, where the checker runs (the records are split at spaces)
    echo "$name $name 4 $ref $s lr=1e-3 $*" >>"$WORK/checks"
    n=$((n + 1))
}
sched cos timm cosine "--epochs 5 --warmup-epochs 1.5 --warmup-lr 1e-4 --min-lr 1e-5" \
    num_epochs=5 warmup_epochs=1.5 warmup_lr=1e-4 min_lr=1e-5
sched cos_prefix_cool timm cosine "--epochs 5 --warmup-epochs 1 --warmup-prefix --cooldown-epochs 2 --min-lr 2e-5" \
    num_epochs=5 warmup_epochs=1 warmup_prefix=1 cooldown_epochs=2 min_lr=2e-5 warmup_lr=0
sched step timm step "--sched step --epochs 6 --decay-epochs 2 --decay-rate 0.5 --warmup-epochs 1 --warmup-lr 1e-5" \
    num_epochs=6 decay_epochs=2 decay_rate=0.5 warmup_epochs=1 warmup_lr=1e-5
sched step_frac timm step "--sched step --epochs 4 --decay-epochs 0.75 --decay-rate 0.7 --warmup 0" \
    num_epochs=4 decay_epochs=0.75 decay_rate=0.7 warmup_lr=0
sched multistep timm multistep "--sched multistep --epochs 6 --decay-milestones 2,3,5 --decay-rate 0.3 --warmup-epochs 1 --warmup-prefix --warmup-lr 1e-6" \
    num_epochs=6 decay_milestones=2,3,5 decay_rate=0.3 warmup_epochs=1 warmup_prefix=1 warmup_lr=1e-6
sched poly timm poly "--sched poly --epochs 5 --decay-rate 2 --warmup-epochs 1 --cooldown-epochs 1 --min-lr 1e-5" \
    num_epochs=5 decay_rate=2 warmup_epochs=1 cooldown_epochs=1 min_lr=1e-5 warmup_lr=0
sched poly_power timm poly "--sched poly --epochs 4 --poly-power 0.7 --warmup 0 --min-lr 0" \
    num_epochs=4 decay_rate=0.7 warmup_lr=0
sched constant timm constant "--sched constant --epochs 3 --warmup-epochs 1 --warmup-lr 1e-5" \
    num_epochs=3 warmup_epochs=1 warmup_lr=1e-5
sched cos_nowarm timm cosine "--epochs 4 --warmup 0 --min-lr 1e-5" num_epochs=4 min_lr=1e-5 warmup_lr=0
# timm's --warmup-epochs 0 is no warmup: never the default --warmup of 10 steps
sched cos_warm_ep0 timm cosine "--epochs 6 --warmup-epochs 0 --min-lr 0" num_epochs=6 min_lr=0 warmup_lr=0
sched cos_default steps cosine "--epochs 5" warmup=10 min_lr=1e-5
sched cos_steps_wlr steps cosine "--steps 14 --warmup 4 --warmup-lr 1e-4 --min-lr 0" warmup=4 warmup_lr=1e-4 min_lr=0
sched step_steps steps step "--sched step --steps 14 --warmup 3 --decay-epochs 1 --decay-rate 0.5" \
    warmup=3 decay_steps=4 decay_rate=0.5
# --sched-on-updates 0: timm's default, the schedule stepped once per epoch (constant inside one)
sched ep_cos timm-epochs cosine "--sched-on-updates 0 --epochs 6 --warmup-epochs 2 --warmup-lr 1e-4 --min-lr 1e-5" \
    num_epochs=6 warmup_epochs=2 warmup_lr=1e-4 min_lr=1e-5
sched ep_cos_prefix_cool timm-epochs cosine "--sched-on-updates 0 --epochs 5 --warmup-epochs 1 --warmup-prefix --cooldown-epochs 2 --min-lr 2e-5" \
    num_epochs=5 warmup_epochs=1 warmup_prefix=1 cooldown_epochs=2 min_lr=2e-5 warmup_lr=0
sched ep_cos_nowarm timm-epochs cosine "--sched-on-updates 0 --epochs 4 --min-lr 1e-5" num_epochs=4 min_lr=1e-5 warmup_lr=0
sched ep_step timm-epochs step "--sched-on-updates 0 --sched step --epochs 6 --decay-epochs 2 --decay-rate 0.5 --warmup-epochs 1 --warmup-lr 1e-5" \
    num_epochs=6 decay_epochs=2 decay_rate=0.5 warmup_epochs=1 warmup_lr=1e-5
sched ep_multistep timm-epochs multistep "--sched-on-updates 0 --sched multistep --epochs 6 --decay-milestones 2,3,5 --decay-rate 0.3 --warmup-epochs 1 --warmup-prefix --warmup-lr 1e-6" \
    num_epochs=6 decay_milestones=2,3,5 decay_rate=0.3 warmup_epochs=1 warmup_prefix=1 warmup_lr=1e-6
sched ep_poly timm-epochs poly "--sched-on-updates 0 --sched poly --epochs 5 --decay-rate 2 --warmup-epochs 1 --cooldown-epochs 1 --min-lr 1e-5" \
    num_epochs=5 decay_rate=2 warmup_epochs=1 cooldown_epochs=1 min_lr=1e-5 warmup_lr=0
# the same cosine stepped per update, asked for explicitly (the default), against timm's per-update curve
sched up_cos timm cosine "--sched-on-updates 1 --epochs 6 --warmup-epochs 2 --warmup-lr 1e-4 --min-lr 1e-5" \
    num_epochs=6 warmup_epochs=2 warmup_lr=1e-4 min_lr=1e-5
cmp <(grep -o '"lr":[^,]*' "$WORK/ep_cos/metrics.jsonl") <(grep -o '"lr":[^,]*' "$WORK/up_cos/metrics.jsonl") >/dev/null &&
    { echo "FAIL: per-epoch and per-update cosine logged the same LRs"; exit 1; }

# timm's cycles, k-decay and noise, per update (the noise seed is --seed 3, train.py's args.seed)
sched cyc_cos timm cosine "--epochs 2 --lr-cycle-limit 3 --lr-cycle-decay 0.6 --warmup-epochs 1 --warmup-lr 1e-4 --min-lr 1e-5" \
    num_epochs=2 cycle_limit=3 cycle_decay=0.6 warmup_epochs=1 warmup_lr=1e-4 min_lr=1e-5
# cycles of 8, 12 and 18 updates: 38 = floor(8 (1.5^3 - 1) / 0.5), + 4 prefixed warmup + 4 cooldown = 46, 11.5 epochs
sched cyc_cos_mul timm cosine "--epochs 2 --lr-cycle-limit 3 --lr-cycle-mul 1.5 --lr-cycle-decay 0.7 --warmup-epochs 1 --warmup-prefix --cooldown-epochs 1 --min-lr 1e-5" \
    num_epochs=2 cycle_limit=3 cycle_mul=1.5 cycle_decay=0.7 warmup_epochs=1 warmup_prefix=1 cooldown_epochs=1 min_lr=1e-5 warmup_lr=0
sched cyc_poly_k timm poly "--sched poly --epochs 2 --lr-cycle-limit 2 --lr-cycle-mul 2 --lr-cycle-decay 0.5 --decay-rate 1.5 --lr-k-decay 2 --warmup 0 --min-lr 1e-5" \
    num_epochs=2 cycle_limit=2 cycle_mul=2.0 cycle_decay=0.5 decay_rate=1.5 k_decay=2.0 min_lr=1e-5 warmup_lr=0
sched kdec_cos timm cosine "--epochs 4 --lr-k-decay 0.5 --warmup-epochs 1 --cooldown-epochs 1 --min-lr 1e-5" \
    num_epochs=4 k_decay=0.5 warmup_epochs=1 cooldown_epochs=1 min_lr=1e-5 warmup_lr=0
sched kdec_poly timm poly "--sched poly --epochs 3 --decay-rate 2 --lr-k-decay 3 --warmup-epochs 1 --warmup-prefix --cooldown-epochs 1 --min-lr 1e-5" \
    num_epochs=3 decay_rate=2 k_decay=3.0 warmup_epochs=1 warmup_prefix=1 cooldown_epochs=1 min_lr=1e-5 warmup_lr=0
# normal noise redrawn often (|n| >= 0.3 for half the draws at std 0.5): the cached second
# Box-Muller value and the next pair are both used
sched noise_cos timm cosine "--epochs 4 --warmup-epochs 1 --lr-noise 0.2,0.8 --lr-noise-pct 0.3 --lr-noise-std 0.5 --min-lr 1e-5" \
    num_epochs=4 warmup_epochs=1 noise=0.2,0.8 noise_pct=0.3 noise_std=0.5 noise_seed=3 min_lr=1e-5 warmup_lr=0
sched noise_from_uni timm cosine "--epochs 4 --warmup 0 --lr-noise 0.3 --lr-noise-type uniform --lr-noise-pct 0.4" \
    num_epochs=4 noise=0.3 noise_type=uniform noise_pct=0.4 noise_seed=3 min_lr=1e-5 warmup_lr=0
# the noise from t = 0: the first step keeps the scheduler's constructor value
sched noise_step timm step "--sched step --epochs 4 --decay-epochs 1 --decay-rate 0.5 --warmup 0 --lr-noise 0,1" \
    num_epochs=4 decay_epochs=1 decay_rate=0.5 noise=0,1 noise_seed=3 warmup_lr=0
sched noise_multistep timm multistep "--sched multistep --epochs 5 --decay-milestones 2,4 --decay-rate 0.3 --warmup-epochs 1 --warmup-prefix --lr-noise 0.5" \
    num_epochs=5 decay_milestones=2,4 decay_rate=0.3 warmup_epochs=1 warmup_prefix=1 noise=0.5 noise_seed=3 warmup_lr=0
sched noise_constant timm constant "--sched constant --epochs 3 --warmup-epochs 1 --lr-noise 0.1 --lr-noise-std 0.2" \
    num_epochs=3 warmup_epochs=1 noise=0.1 noise_std=0.2 noise_seed=3 warmup_lr=0
# noise fractions past 1 reach the later cycles
sched cyc_noise_poly timm poly "--sched poly --epochs 2 --decay-rate 1 --lr-cycle-limit 3 --lr-cycle-decay 0.5 --lr-k-decay 1.5 --cooldown-epochs 1 --warmup 0 --lr-noise 0.5,2.5" \
    num_epochs=2 decay_rate=1 cycle_limit=3 cycle_decay=0.5 k_decay=1.5 cooldown_epochs=1 noise=0.5,2.5 noise_seed=3 min_lr=1e-5 warmup_lr=0
# per epoch: the cycles, k-decay and noise in epochs (9 = floor(2 (1.5^3 - 1) / 0.5) epochs of cycles)
sched ep_cyc_cos timm-epochs cosine "--sched-on-updates 0 --epochs 2 --lr-cycle-limit 3 --lr-cycle-mul 1.5 --lr-cycle-decay 0.5 --warmup-epochs 1 --warmup-prefix --cooldown-epochs 1 --min-lr 1e-5" \
    num_epochs=2 cycle_limit=3 cycle_mul=1.5 cycle_decay=0.5 warmup_epochs=1 warmup_prefix=1 cooldown_epochs=1 min_lr=1e-5 warmup_lr=0
sched ep_cyc_poly_k timm-epochs poly "--sched-on-updates 0 --sched poly --epochs 3 --decay-rate 2 --lr-cycle-limit 2 --lr-cycle-decay 0.5 --lr-k-decay 1.5 --warmup-epochs 1 --min-lr 1e-5" \
    num_epochs=3 decay_rate=2 cycle_limit=2 cycle_decay=0.5 k_decay=1.5 warmup_epochs=1 min_lr=1e-5 warmup_lr=0
sched ep_noise timm-epochs cosine "--sched-on-updates 0 --epochs 8 --warmup-epochs 1 --lr-noise 0.25,0.75 --lr-noise-pct 0.5 --lr-k-decay 1.5" \
    num_epochs=8 warmup_epochs=1 noise=0.25,0.75 noise_pct=0.5 noise_seed=3 k_decay=1.5 min_lr=1e-5 warmup_lr=0
sched ep_noise_step timm-epochs step "--sched-on-updates 0 --sched step --epochs 6 --decay-epochs 2 --decay-rate 0.5 --lr-noise 0.3 --lr-noise-type uniform" \
    num_epochs=6 decay_epochs=2 decay_rate=0.5 noise=0.3 noise_type=uniform noise_seed=3 warmup_lr=0
sched ep_cyc_noise timm-epochs cosine "--sched-on-updates 0 --epochs 2 --lr-cycle-limit 3 --lr-cycle-decay 0.8 --warmup-epochs 1 --lr-noise 0.5 --lr-noise-pct 0.2" \
    num_epochs=2 cycle_limit=3 cycle_decay=0.8 warmup_epochs=1 noise=0.5 noise_pct=0.2 noise_seed=3 min_lr=1e-5 warmup_lr=0
# shardvit's --warmup-steps form: the ramp, then timm's cycles / k-decay over T = epochs x 4 - W,
# the noise timm draws at the step
sched st_cyc steps cosine "--epochs 2 --warmup 3 --lr-cycle-limit 3 --lr-cycle-mul 1.5 --lr-cycle-decay 0.6" \
    num_epochs=2 warmup=3 cycle_limit=3 cycle_mul=1.5 cycle_decay=0.6 min_lr=1e-5
sched st_noise steps cosine "--epochs 4 --warmup 4 --lr-k-decay 2 --lr-noise 0.1,0.9 --lr-noise-std 0.4" \
    num_epochs=4 warmup=4 k_decay=2.0 noise=0.1,0.9 noise_std=0.4 noise_seed=3 min_lr=1e-5
sched st_noise_steps steps cosine "--steps 14 --warmup 3 --lr-noise 0 --min-lr 0" warmup=3 noise=0 noise_seed=3 min_lr=0
sched st_poly_cyc steps poly "--sched poly --epochs 2 --warmup 2 --decay-rate 2 --lr-cycle-limit 2 --lr-cycle-decay 0.5 --cooldown-epochs 1 --lr-noise 0.5" \
    num_epochs=2 warmup=2 decay_rate=2 cycle_limit=2 cycle_decay=0.5 cooldown_epochs=1 noise=0.5 noise_seed=3 min_lr=1e-5
sched st_step_noise steps step "--sched step --steps 14 --warmup 3 --decay-epochs 1 --decay-rate 0.5 --lr-noise 0.2,0.7 --lr-noise-type uniform" \
    warmup=3 decay_steps=4 decay_rate=0.5 noise=0.2,0.7 noise_type=uniform noise_seed=3
# the noise changes the LRs it covers, nothing else
"$SHARDVIT_TEST_PYTHON" - "$WORK/cos_nowarm/metrics.jsonl" "$WORK/noise_from_uni/metrics.jsonl" <<'PYEOF' || exit 1
import json, sys
a, b = ([json.loads(l)["lr"] for l in open(p) if '"loss"' in l] for p in sys.argv[1:3])
same = [k for k in range(len(a)) if a[k] == b[k]]
print(("" if same == list(range(5)) else "FAIL: ") + f"noise from step 5 (0.3 x 16): unchanged steps {same}")
sys.exit(0 if same == list(range(5)) else 1)
PYEOF

# resumed mid-cycle and mid-noise (from the checkpoint of step 10 of 46 / of epoch 2 of 11), the
# LRs of the remaining steps are the uninterrupted run's
resumed() { # resumed NAME "flags": the run NAME again from its step-10 checkpoint, into NAME_r
    local name=$1 flags=$2
    "$SHARDVIT" train $SMALL $flags --resume "$WORK/$name/checkpoints/step_00000010" --out "$WORK/${name}_r" \
        >"$WORK/${name}_r.log" 2>&1 || { echo "FAIL: resume of $name"; tail -5 "$WORK/${name}_r.log"; exit 1; }
    "$SHARDVIT_TEST_PYTHON" - "$WORK/$name/metrics.jsonl" "$WORK/${name}_r/metrics.jsonl" <<'PYEOF' || exit 1
import json, sys
full, res = ({r["step"]: r["lr"] for r in map(json.loads, open(p)) if "loss" in r} for p in sys.argv[1:3])
ok = min(res) == 11 and max(res) == max(full) and all(res[k] == full[k] for k in res)
print(("" if ok else "FAIL: ") + f"resumed at step 10: steps {min(res)}..{max(res)} as the full run's: {ok}")
sys.exit(0 if ok else 1)
PYEOF
    n=$((n + 1))
}
CN="--epochs 2 --lr-cycle-limit 3 --lr-cycle-mul 1.5 --lr-cycle-decay 0.7 --warmup-epochs 1 --warmup-prefix --cooldown-epochs 1 --lr-k-decay 1.5 --lr-noise 0.5,4 --ckpt-every 5"
sched cn timm cosine "$CN" num_epochs=2 cycle_limit=3 cycle_mul=1.5 cycle_decay=0.7 warmup_epochs=1 warmup_prefix=1 \
    cooldown_epochs=1 k_decay=1.5 noise=0.5,4 noise_seed=3 min_lr=1e-5 warmup_lr=0
resumed cn "$CN"
sched ep_cn timm-epochs cosine "--sched-on-updates 0 $CN" num_epochs=2 cycle_limit=3 cycle_mul=1.5 cycle_decay=0.7 \
    warmup_epochs=1 warmup_prefix=1 cooldown_epochs=1 k_decay=1.5 noise=0.5,4 noise_seed=3 min_lr=1e-5 warmup_lr=0
resumed ep_cn "--sched-on-updates 0 $CN"
(cd "$WORK" && "$SHARDVIT_TEST_PYTHON" "$HERE/../optim/sched_check.py" --batch checks) || exit 1
echo "sched_timm: $n schedules passed"
