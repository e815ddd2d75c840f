/* The flags of `shardvit train` and their checks (app/train_flags.h). */
#include "app/train_flags.h"

#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "app/backend_env.h"
#include "app/cmd_ckpt.h"
#include "app/run_dir.h"
#include "app/train_outputs.h"
#include "core/log.h"
#include "model/vit.h"

/* `--config RUN/config.toml` of a run directory (its lock marker beside it) whose recorded --out is
 * another directory, with no --out on the command line: the run directory was moved or copied,
 * and the run would go on (or, with --resume auto finding nothing there, start from scratch) in
 * the recorded place, not in RUN. A usage error naming both (-1: nothing to refuse). */
static int config_out_moved(const sv_train_opts *o) {
    const char *cfg = sv_flags_config_path();
    if (sv_flag_seen(o->table, "out") == SV_FLAG_FROM_ARGV) return -1; /* given: it wins */
    if (!cfg || !o->out) return -1;
    char dir[PATH_MAX], real_dir[PATH_MAX], real_out[PATH_MAX], marker[PATH_MAX + 32];
    if (sv_fileio_real_path(cfg, dir) != SV_OK || sv_fileio_parent(dir, real_dir) != SV_OK) {
        sv_err_clear();
        return -1;
    }
    snprintf(marker, sizeof marker, "%s/%s", real_dir, SV_RUN_DIR_MARKER);
    if (access(marker, F_OK) != 0) return -1; /* not a run directory's configuration */
    if (sv_fileio_real_path(o->out, real_out) != SV_OK) {
        sv_err_clear();
        return -1;
    }
    if (!strcmp(real_out, real_dir)) return -1;
    return sv_cmd_usage_error("train",
                              "--config %s is the configuration of the run directory %s, but it records --out %s: "
                              "the run directory was moved or copied? To continue it where it is now, add --out %s "
                              "(and --ckpt-dir, if the configuration records one there); to write into %s, pass "
                              "--out %s",
                              cfg, real_dir, o->out, real_dir, o->out, o->out);
}

int sv_train_flags_parse(sv_train_opts *o, int argc, char **argv, const sv_proc *proc) {
    *o = (sv_train_opts){.run = SV_RUN_OPTS_DEFAULT,
                         .data = "synthetic",
                         .out = NULL,
                         .steps = -1,
                         .epochs = 0,
                         .crop_scale_min = 0.08,
                         .xf = {.crop_pct = SV_CKPT_DEFAULT_CROP_PCT}, /* config.toml must read back */
                         .hflip = 0.5,
                         .aug = SV_AUG_FLAGS_DEFAULT,
                         .lr = 1e-3,
                         .min_lr = SV_TRAIN_DEFAULT_MIN_LR,
                         .weight_decay = 0.05,
                         .beta1 = SV_TRAIN_DEFAULT_BETA1,
                         .beta2 = SV_TRAIN_DEFAULT_BETA2,
                         .eps = SV_TRAIN_DEFAULT_EPS,
                         .clip = 1.0,
                         .smoothing = 0.1,
                         .bce_thresh = -1,
                         .warmup = 10,
                         .log_every = 10,
                         .workers = 0,
                         .synth_samples = 10000,
                         .max_skipped = -1,
                         .max_skip_run = 10,
                         .debug_nan_step = -1,
                         .debug_nan_rank = 0,
                         .ckpt_minutes = 30,
                         .ema = {.decay = SV_EMA_DEFAULT_DECAY},
                         .preempt_signal = "TERM,INT,USR1",
                         .of = SV_TRAIN_OPTIM_FLAGS_DEFAULT,
                         .mfu_calib_s = 0.05};
    /* clang-format off: one flag per line */
    sv_flag flags[] = {
        SV_RUN_FLAGS(o->run),
        {"data", SV_FLAG_STR, &o->data, 0, 0, "training data: synthetic | ImageFolder dir | tar pattern", 0},
        {"val-data", SV_FLAG_STR, &o->val_data, 0, 0,
         "evaluation data (evaluated at the end and every --eval-every steps)", 0},
        {"eval-every", SV_FLAG_INT, &o->eval_every, 0, 1 << 30,
         "evaluate --val-data every N steps (0 = at the end only)", 0},
        {"out", SV_FLAG_STR, &o->out, 0, 0, "output directory (metrics.jsonl, config, classes)", 0},
        {"steps", SV_FLAG_I64, &o->steps, -1, 1e12,
         "optimizer steps (-1: use --epochs; 0: none, e.g. --init-from + --save-params)", 0},
        {"epochs", SV_FLAG_INT, &o->epochs, 0, 100000, "epochs when --steps is -1 (0 = 1)", 0},
        {"lr", SV_FLAG_DOUBLE, &o->lr, 0, 10, "peak learning rate", 0},
        {"min-lr", SV_FLAG_DOUBLE, &o->min_lr, 0, 10, "final learning rate of the cosine / poly schedule", 0},
        {"warmup", SV_FLAG_INT, &o->warmup, 0, 1 << 30, "linear warmup steps", 0},
        {"weight-decay", SV_FLAG_DOUBLE, &o->weight_decay, 0, 10,
         "weight decay (decoupled: AdamW, Lion; coupled: SGD, LAMB)", 0},
        {"beta1", SV_FLAG_DOUBLE, &o->beta1, 0, 0.999999, "beta1 of AdamW, LAMB, Lion", 0},
        {"beta2", SV_FLAG_DOUBLE, &o->beta2, 0, 0.999999999, "beta2 of AdamW, LAMB, Lion (unset: 0.99 for Lion)", 0},
        {"eps", SV_FLAG_DOUBLE, &o->eps, 1e-30, 1, "AdamW / LAMB epsilon (unset: 1e-6 for LAMB)", 0},
        {"clip", SV_FLAG_DOUBLE, &o->clip, 0, 1e9, "global gradient-norm clip (0 = off)", 0},
        SV_TRAIN_OPTIM_FLAGS(o->of),
        {"smoothing", SV_FLAG_DOUBLE, &o->smoothing, 0, 0.999, "label smoothing", 0},
        {"drop-path", SV_FLAG_DOUBLE, &o->drop_path, 0, 0.999,
         "stochastic depth rate (timm --drop-path; linear over blocks: 0 in the first, this in the last)", 0},
        {"drop-path-uniform", SV_FLAG_BOOL, &o->drop_path_uniform, 0, 1,
         "with --drop-path: that rate in every block (DeiT III's own models, dpr_constant) instead of timm's "
         "linear rule",
         0},
        {"drop", SV_FLAG_DOUBLE, &o->drop, 0, 0.999, "dropout before the head (timm --drop, drop_rate)", 0},
        {"proj-drop", SV_FLAG_DOUBLE, &o->proj_drop, 0, 0.999,
         "dropout after attn.proj and in the MLP (timm proj_drop_rate)", 0},
        {"attn-drop", SV_FLAG_DOUBLE, &o->attn_drop, 0, 0.999,
         "dropout of the attention probabilities (timm attn_drop_rate; CUDA: training attention then runs "
         "the plain kernels instead of cuDNN, slower; CUDA path not yet run on a GPU)",
         0},
        {"bce-loss", SV_FLAG_BOOL, &o->bce, 0, 1, "binary cross-entropy loss (timm --bce-loss, DeiT III)", 0},
        {"bce-sum", SV_FLAG_BOOL, &o->bce_sum, 0, 1,
         "with --bce-loss: sum over classes instead of the mean (timm --bce-sum)", 0},
        {"bce-target-thresh", SV_FLAG_DOUBLE, &o->bce_thresh, -1, 1,
         "with --bce-loss: binarise targets, 1 above this, else 0 (timm --bce-target-thresh; 0: every "
         "positive target, DeiT III's BCE; -1 = off)",
         0},
        {"mixup", SV_FLAG_DOUBLE, &o->mixup, 0, 100, "mixup alpha (0 = off)", 0},
        {"cutmix", SV_FLAG_DOUBLE, &o->cutmix, 0, 100, "cutmix alpha (0 = off)", 0},
        {"crop-scale-min", SV_FLAG_DOUBLE, &o->crop_scale_min, 0.01, 1,
         "RandomResizedCrop: smallest crop area fraction", 0},
        {"hflip", SV_FLAG_DOUBLE, &o->hflip, 0, 1, "horizontal flip probability", 0},
        {"crop-pct", SV_FLAG_DOUBLE, &o->xf.crop_pct, SV_CKPT_CROP_PCT_MIN, SV_CKPT_CROP_PCT_MAX,
         "evaluation: resize the shorter side to img/crop-pct, then center crop; recorded in checkpoints", 0},
        {"randaug-n", SV_FLAG_INT, &o->randaug_n, 0, 16, "RandAugment ops per training image (0 = off)", 0},
        {"randaug-m", SV_FLAG_DOUBLE, &o->randaug_m, 0, 30, "RandAugment magnitude (timm scale, 0..10 usual)", 0},
        {"interp", SV_FLAG_STR, &o->xf.interp, 0, 0,
         "crop/resize interpolation (training and evaluation): bilinear | bicubic (unset: bilinear; the "
         "evaluation of a --model given as a timm name: its data config's, bicubic); recorded",
         0},
        SV_AUG_FLAGS(o->aug),
        {"mean", SV_FLAG_STR, &o->xf.mean, 0, 0,
         "normalisation mean: comma list | imagenet | half (unset: half for 1 channel, imagenet for 3); recorded", 0},
        {"std", SV_FLAG_STR, &o->xf.std, 0, 0,
         "normalisation std: comma list | imagenet | half (unset: as --mean); recorded", 0},
        {"log-every", SV_FLAG_INT, &o->log_every, 1, 1 << 30, "log every N steps", 0},
        {"workers", SV_FLAG_INT, &o->workers, 0, 256, "data loader threads per rank (0 = the CPUs it may use)", 0},
        {"synth-samples", SV_FLAG_INT, &o->synth_samples, 1, 1 << 30, "samples in --data synthetic", 0},
        {"max-skipped-steps", SV_FLAG_INT, &o->max_skipped, -1, 1 << 30,
         "abort when more than N steps were skipped for non-finite gradients (-1 = never)", 0},
        {"max-consecutive-skips", SV_FLAG_INT, &o->max_skip_run, -1, 1 << 30,
         "stop with an error when more than N steps in a row were skipped for non-finite gradients: the weights "
         "stopped changing and produce them (-1 = never)",
         0},
        {"save-params", SV_FLAG_STR, &o->save_params, 0, 0,
         "write all final fp32 parameters (canonical order) here; an existing file only when it is an earlier dump "
         "of this model (4 bytes per parameter)",
         0},
        {"debug-nan-step", SV_FLAG_I64, &o->debug_nan_step, -1, 1e12, "testing: poison one gradient at this step", 0},
        {"debug-nan-rank", SV_FLAG_INT, &o->debug_nan_rank, 0, 1 << 20, "testing: rank that poisons it", 0},
        {"ckpt-dir", SV_FLAG_STR, &o->ckpt_dir, 0, 0, "checkpoint root (default OUT/checkpoints; docs/checkpoints.md)",
         0},
        {"ckpt-every", SV_FLAG_INT, &o->ckpt_every, 0, 1 << 30, "save a checkpoint every N steps (0: only at the end)",
         0},
        {"async-ckpt", SV_FLAG_BOOL, &o->async_ckpt, 0, 1,
         "write checkpoint shards in a background thread (training blocks only for a host copy)", 0},
        {"ckpt-every-minutes", SV_FLAG_DOUBLE, &o->ckpt_minutes, 0, 1e7,
         "also save when this many minutes have passed since the last save (0: off); all ranks agree on the step", 0},
        {"preempt-signal", SV_FLAG_STR, &o->preempt_signal, 0, 0,
         "signals that stop training cleanly: finish the step, save, exit 75 (comma list, or none)", 0},
        {"keep", SV_FLAG_INT, &o->keep, 0, 1 << 20, "keep the newest N checkpoints (0: all)", 0},
        {"resume", SV_FLAG_STR, &o->resume, 0, 0,
         "auto (latest in --ckpt-dir, if any; without latest the newest complete step directory, warned) | run "
         "dir | checkpoint root | step dir",
         0},
        {"resume-data-changed", SV_FLAG_BOOL, &o->resume_data_changed, 0, 1,
         "with --resume: continue on a --data other than the checkpoint's (another sample count, other files or "
         "labels) with a warning instead of the refusal; its data position then picks other samples",
         0},
        {"init-from", SV_FLAG_STR, &o->init_from, 0, 0,
         "seed the weights from a timm safetensors file (optimizer state zero; pos_embed / patch_embed resampled "
         "as timm does at another --img / --patch)",
         0},
        {"dump-logits", SV_FLAG_STR, &o->dump_logits, 0, 0,
         "debug: write rank 0's first eval-transform batch and its logits (safetensors; replaces only an earlier "
         "dump)",
         0},
        {"model-ema", SV_FLAG_BOOL, &o->run.model_ema, 0, 1,
         "keep an fp32 EMA of the weights, sharded like the masters (timm --model-ema); saved in checkpoints", 0},
        {"model-ema-decay", SV_FLAG_DOUBLE, &o->ema.decay, 0, 1, "weight EMA decay (timm default 0.9998)", 0},
        {"model-ema-warmup", SV_FLAG_BOOL, &o->ema.warmup, 0, 1,
         "warm the EMA decay up: min(decay, 1 - (1 + n)^(-2/3)) at update n + 1 (timm ModelEmaV3)", 0},
        {"save-ema-params", SV_FLAG_STR, &o->ema.save_path, 0, 0,
         "write all final fp32 weight-EMA values (canonical order, as --save-params) here", 0},
        {"mfu-calib-seconds", SV_FLAG_DOUBLE, &o->mfu_calib_s, 0, 60,
         "CPU: seconds of the start-up measurement of the per-core ISA peak that the logged MFU is stated against "
         "(bench's calibration, app/cpu_peak.h; 0 = no CPU MFU)",
         0},
        SV_FLAG_END};
    /* clang-format on */
    sv_cmd_spec spec = {"train", "[mpiexec -n N] shardvit train [flags]",
                        "Train a ViT with FSDP (every block its own unit). Rank 0 logs and writes outputs.", 0};
    char *pos[1];
    int npos;
    /* the table lives in *o: its "seen" marks are read after this function (provenance) */
    _Static_assert(sizeof flags <= sizeof o->table, "sv_train_opts.table: SV_TRAIN_FLAGS_MAX too small");
    memcpy(o->table, flags, sizeof flags);
    o->flags = o->table;
    int rc = sv_cmd_parse(&spec, o->table, argc, argv, pos, &npos, -1, NULL);
    if (rc >= 0) return rc;
    if ((rc = sv_backend_env_check("train", o->run.cpu_gemm)) >= 0) return rc;
    /* every relative path is used, and recorded in config.toml, as an absolute path
     * (app/train_outputs.h): `train --config RUN/config.toml --resume auto` from another
     * directory reads the same data and writes the same files (a relative --data there trained
     * on another directory's data set of that name) */
    const char *synth = "synthetic";
    const struct {
        const char *flag, **path;
    } paths[] = {{"--out", &o->out},
                 {"--ckpt-dir", &o->ckpt_dir},
                 {"--data", o->data && strcmp(o->data, synth) ? &o->data : NULL},
                 {"--val-data", o->val_data && strcmp(o->val_data, synth) ? &o->val_data : NULL},
                 {"--init-from", &o->init_from},
                 {"--save-params", &o->save_params},
                 {"--save-ema-params", &o->ema.save_path},
                 {"--dump-logits", &o->dump_logits}};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++)
        if (paths[i].path && (rc = sv_train_outputs_absolute(paths[i].flag, paths[i].path, o->abs_paths[i])) >= 0)
            return rc;
    if ((rc = sv_train_outputs_absolute("--trace", &o->run.trace, o->abs_paths[8])) >= 0) return rc;
    if ((rc = config_out_moved(o)) >= 0) return rc;
    if (o->xf.interp && strcmp(o->xf.interp, "bilinear") && strcmp(o->xf.interp, "bicubic"))
        return sv_cmd_usage_error("train", "--interp: invalid value '%s' (expected bilinear or bicubic)", o->xf.interp);
    if (sv_aug_flags_check(&o->aug, o->mixup > 0 || o->cutmix > 0, o->randaug_n) != SV_OK)
        return sv_cmd_usage_error("train", "%s", sv_err_msg());
    if (o->run.accum_mode && strcmp(o->run.accum_mode, "shard") && strcmp(o->run.accum_mode, "local"))
        return sv_cmd_usage_error("train", "--accum-mode: invalid value '%s' (expected shard or local)",
                                  o->run.accum_mode);
    if (o->drop_path_uniform && !(o->drop_path > 0))
        return sv_cmd_usage_error("train", "--drop-path-uniform needs --drop-path > 0 (the rate it spreads)");
    if (o->bce_thresh < 0 && o->bce_thresh != -1)
        return sv_cmd_usage_error("train", "--bce-target-thresh %g: a threshold in [0, 1], or -1 (off)", o->bce_thresh);
    if (!o->bce && (o->bce_sum || o->bce_thresh >= 0))
        return sv_cmd_usage_error("train", "--bce-sum and --bce-target-thresh apply to --bce-loss only");
    if (o->bce && o->bce_thresh == 0 && sv_flag_seen(o->table, "bce-target-thresh"))
        SV_WARN("--bce-target-thresh 0 binarises every positive target (timm's target.gt(0), DeiT III's BCE); "
                "a config.toml written before 0 took that meaning records 0 for off: pass -1 to train on the "
                "targets as they are");
    /* a --model given as a timm name evaluates at its data config's crop_pct, as timm's train.py
     * (the default crop_pct is a value, not "unset": config.toml lists it and must read back) */
    sv_vit_timm_data_cfg tdc;
    if (!sv_flag_seen(o->table, "crop-pct") && sv_vit_timm_data(o->run.model.model, &tdc))
        o->xf.crop_pct = tdc.crop_pct;
    o->ema.on = o->run.model_ema;
    if ((rc = sv_train_ema_check(&o->ema)) != 0) return rc;
    if (sv_train_optim_check(&o->of, o->table, &o->warmup, o->steps, o->lr, o->min_lr, o->beta1, &o->beta2, &o->eps) !=
        SV_OK)
        return sv_cmd_usage_error("train", "%s", sv_err_msg());
    /* flags that would be ignored: refused (a value other than the default counts as given, so
     * that a run's own config.toml, which lists every flag, reads back) */
    if (o->steps >= 0 && o->epochs > 0)
        return sv_cmd_usage_error(
            "train",
            "--epochs %d and --steps %lld: give one (--steps sets the length and --epochs would be "
            "ignored; --steps -1 uses --epochs)",
            o->epochs, o->steps);
    if (o->eval_every > 0 && !o->val_data)
        return sv_cmd_usage_error("train", "--eval-every %d needs --val-data (there is nothing to evaluate)",
                                  o->eval_every);
    if (o->resume_data_changed && !o->resume)
        return sv_cmd_usage_error("train", "--resume-data-changed applies to --resume only (nothing is resumed)");
    if (o->debug_nan_rank >= proc->world)
        return sv_cmd_usage_error("train", "--debug-nan-rank %d: this run has %d rank%s (0..%d)", o->debug_nan_rank,
                                  proc->world, proc->world == 1 ? "" : "s", proc->world - 1);
    { /* --ckpt-every, --keep, --async-ckpt, --resume auto need a checkpoint directory */
        sv_train_ckpt cc = {.resume = o->resume, .every = o->ckpt_every, .keep = o->keep, .async = o->async_ckpt};
        if (sv_train_ckpt_setup(&cc, o->ckpt_dir, o->out) != SV_OK)
            return sv_cmd_usage_error("train", "%s", sv_err_msg());
    }
    return -1;
}
