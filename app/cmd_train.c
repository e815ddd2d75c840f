/* shardvit train: FSDP training loop (data -> micro-steps -> optimizer -> logs/outputs). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/commands.h"
#include "app/cpu_peak.h"
#include "app/provenance.h"
#include "app/mpi_env.h"
#include "app/run.h"
#include "app/train_step.h"
#include "app/train_log.h"
#include "app/train_ema.h"
#include "app/cmd_ckpt.h"
#include "app/preempt.h"
#include "app/run_dir.h"
#include "app/xform.h"
#include "app/aug_flags.h"
#include "app/train_optim.h"
#include "app/train_flags.h"
#include "app/train_outputs.h"
#include "fsdp/optim.h"
#include "core/fileio.h"
#include "core/log.h"
#include "core/procstat.h"
#include "data/loader.h"

/* What ended the loop early: a preemption signal (its number; 0: none). */
typedef struct train_end {
    int signal;
    long step;
    int saved;
} train_end;

/* Loader options shared by training and evaluation for this run's shapes and ranks. */
static sv_loader_opts loader_opts(const sv_run *r, const sv_train_opts *o, const sv_dataset *ds,
                                  sv_transform_mode mode) {
    sv_loader_opts lo = sv_loader_opts_for(ds, mode, r->micro_batch, r->rank, r->world, (uint64_t)o->run.seed,
                                           r->vcfg.img, r->vcfg.in_chans);
    lo.threads = o->workers;
    lo.interp = o->xf.interp && !strcmp(o->xf.interp, "bicubic") ? SV_INTERP_BICUBIC : SV_INTERP_BILINEAR;
    sv_loader_opts_host_alloc(&lo, r->be);
    return lo;
}

/* Open --data or --val-data on every rank, agreed, then compared over the ranks (collective). */
static sv_status open_dataset(const char *flag, const char *spec, sv_run *r, const sv_train_opts *o, sv_dataset **ds) {
    sv_dataset_opts dopts = sv_dataset_opts_default();
    dopts.synth_samples = (uint64_t)o->synth_samples;
    dopts.synth_classes = r->vcfg.num_classes;
    dopts.synth_img = r->vcfg.img;
    dopts.synth_channels = r->vcfg.in_chans;
    dopts.synth_seed = 1234;
    SV_TRY(sv_run_agree(r, sv_dataset_open(spec, &dopts, ds)));
    return sv_run_same_data(r, *ds, flag, spec);
}

/* The label names of the training data (none for synthetic data) into meta (an array of
 * pointers into the dataset, freed by the caller with free(meta->labels)). */
static sv_status record_labels(const sv_dataset *ds, sv_ckpt_meta *meta) {
    int n = sv_dataset_num_classes(ds);
    if (sv_dataset_kind_of(ds) == SV_DATASET_SYNTHETIC || n <= 0) return SV_OK;
    meta->labels = malloc((size_t)n * sizeof *meta->labels);
    if (!meta->labels) return SV_FAIL(SV_ERR_OOM, "%d label names", n);
    for (int k = 0; k < n; k++) meta->labels[k] = (char *)sv_dataset_class_name(ds, k);
    meta->n_labels = n;
    return SV_OK;
}

/* Training and evaluation data must name the same classes in the same order (label k of one is
 * label k of the other); synthetic data has no names. */
static sv_status same_classes(const sv_dataset *a, const sv_dataset *b, const char *an, const char *bn) {
    if (sv_dataset_kind_of(a) == SV_DATASET_SYNTHETIC || sv_dataset_kind_of(b) == SV_DATASET_SYNTHETIC) return SV_OK;
    int na = sv_dataset_num_classes(a), nb = sv_dataset_num_classes(b);
    for (int k = 0; k < na && k < nb; k++) {
        const char *x = sv_dataset_class_name(a, k), *y = sv_dataset_class_name(b, k);
        if (x && y && strcmp(x, y)) {
            char ex[160], ey[160];
            return SV_FAIL(SV_ERR_INVALID, "--val-data %s names class %d '%s' but --data %s names it '%s'", bn, k,
                           sv_log_esc(y, ey, sizeof ey), an, sv_log_esc(x, ex, sizeof ex));
        }
    }
    if (nb > na)
        return SV_FAIL(SV_ERR_INVALID, "--val-data %s has %d classes, more than the %d of --data %s", bn, nb, na, an);
    return SV_OK;
}

static sv_status flush_logs(void *lg) { return sv_train_log_sync(lg); }

/* The run's test hooks (app/train_step.h), in one place: --debug-nan-step/--debug-nan-rank, and
 * from the environment (docs/reliability.md):
 *   SHARDVIT_TEST_POISON_BATCH=STEP[:RANK]          NaN into the first pixel of that rank's batch
 *                                                   (default rank 0) at 0-based step STEP;
 *   SHARDVIT_TEST_SIGNAL_AT=STEP[:RANK[:SIGNAL[:STALL]]]  raise SIGNAL (default SIGTERM) in
 *                                                   that rank while it loads step STEP's first
 *                                                   batch, then stay there STALL seconds more.
 * Each active environment hook is announced with a WARN line. */
static sv_train_hooks hooks_for(const sv_train_opts *o) {
    sv_train_hooks h = sv_train_hooks_off();
    h.debug_nan_step = (long)o->debug_nan_step;
    h.debug_nan_rank = o->debug_nan_rank;
    const char *poison = getenv("SHARDVIT_TEST_POISON_BATCH"), *sigat = getenv("SHARDVIT_TEST_SIGNAL_AT");
    if (poison && sscanf(poison, "%ld:%d", &h.poison_step, &h.poison_rank) < 1) h.poison_step = -1;
    if (h.poison_step >= 0) SV_WARN("test hook SHARDVIT_TEST_POISON_BATCH=%s active", poison);
    if (sigat && sscanf(sigat, "%ld:%d:%d:%lf", &h.signal_step, &h.signal_rank, &h.signal_sig, &h.signal_stall_s) < 1)
        h.signal_step = -1;
    if (h.signal_step >= 0) SV_WARN("test hook SHARDVIT_TEST_SIGNAL_AT=%s active", sigat);
    return h;
}

/* Everything one training run holds between set-up and tear-down. */
typedef struct trainer {
    sv_run *r;
    const sv_train_opts *o;
    sv_dataset *ds, *vds;
    sv_loader *ld;
    sv_loader_opts lo;
    sv_ckpt_xform tx; /* the evaluation transform of this run, recorded in its checkpoints */
    float mean[3], stdv[3];
    uint64_t spe; /* optimizer steps per epoch */
    sv_lr_sched sched;
    float *lr_scale; /* --layer-decay: per-tensor LR multipliers (NULL: off) */
    long total, last_eval;
    long skip_run; /* steps skipped in a row up to the current one (non-finite gradients) */
    sv_train_hooks hooks;
    sv_train_ckpt ck;
    sv_train_log lg;
    sv_evaluator ev;
    /* throughput window of the log line */
    double t_log, wait_log, t_train, flops_step, peak, final_loss;
    double loss_window; /* sum of the finite step losses since the last logged step */
    long steps_trained; /* steps this process trained (0: --steps 0, or a resume with none left) */
    long steps_since_log;
    long losses_in_window;     /* the finite ones among them: a skipped step's loss may be NaN / Inf */
    sv_cpu_peak cpu_peak;      /* the CPU ISA peak MFU is stated against (peak_kind "isa"), when measured */
    char *prov_json;           /* rank 0: the run's provenance (metrics.jsonl header, eval.json) */
    const sv_train_resume *rs; /* rank 0: the checkpoint --resume continues, found at start-up */
} trainer;

/* The recorded transform of a run of model c: flags, else the --init-from file's normalisation,
 * else defaults (resolved once, before the start-up checks: a resume compares it). */
static sv_status resolve_transform(const sv_train_opts *o, const sv_vit_config *c, sv_ckpt_xform *tx) {
    SV_TRY(sv_xform_flags_check(&o->xf, c->in_chans));
    sv_ckpt_meta init_meta = {0}; /* --init-from: a timm file's pretrained_cfg (normalisation) */
    int init_found = 0;
    char init_src[600] = "";
    if (o->init_from) {
        SV_TRY(sv_ckpt_read_config_meta(o->init_from, &init_meta, &init_found));
        free(init_meta.labels);
        snprintf(init_src, sizeof init_src, "--init-from %.500s config.json", o->init_from);
    }
    return sv_xform_for_training(&o->xf, init_found ? &init_meta.xform : NULL, init_src, o->run.model.model, c->img,
                                 c->in_chans, tx);
}

/* Rank 0, before the run directories are touched: the checkpoint a resume continues must have
 * been trained on inputs of this run's normalisation (the loading checks it again). */
static sv_status resume_norm_fits(const sv_train_resume *rs, const sv_ckpt_xform *tx) {
    if (!rs->found) return SV_OK;
    char where[SV_CKPT_PATH_MAX + 16];
    snprintf(where, sizeof where, "%s/index.json", rs->step_dir);
    return sv_ckpt_xform_same_norm(&rs->idx.meta.xform, tx, where);
}

/* Datasets (training, evaluation: opened and compared on every rank, collective), the training
 * loader and the step count; on rank 0 the start-up checks of a resume, then config.toml and
 * classes.txt. Rank 0 writes: the caller agrees on the result. */
static sv_status open_data(trainer *t) {
    const sv_train_opts *o = t->o;
    sv_run *r = t->r;
    const sv_vit_config *c = &r->vcfg;
    SV_TRY(open_dataset("--data", o->data, r, o, &t->ds));
    if (sv_dataset_num_classes(t->ds) > c->num_classes)
        return SV_FAIL(SV_ERR_INVALID, "dataset %s has %d classes but the model has --num-classes %d", o->data,
                       sv_dataset_num_classes(t->ds), c->num_classes);
    if (o->val_data) SV_TRY(open_dataset("--val-data", o->val_data, r, o, &t->vds));
    if (t->vds) SV_TRY(same_classes(t->ds, t->vds, o->data, o->val_data));
    sv_loader_opts lo = loader_opts(r, o, t->ds, SV_TRANSFORM_TRAIN);
    lo.mean = t->mean;
    lo.std = t->stdv;
    lo.mixup_alpha = (float)o->mixup;
    lo.cutmix_alpha = (float)o->cutmix;
    lo.smoothing = (float)o->smoothing;
    lo.num_classes = r->vcfg.num_classes; /* soft-target rows as wide as the model's output */
    lo.randaug_n = o->randaug_n;
    lo.randaug_m = (float)o->randaug_m;
    lo.scale_min = (float)o->crop_scale_min;
    lo.hflip = (float)o->hflip;
    SV_TRY(sv_aug_flags_apply(&o->aug, &lo));
    if (sv_dataset_kind_of(t->ds) == SV_DATASET_SYNTHETIC) { /* the synthetic task is learned as rendered */
        lo.scale_min = 1.0f;
        lo.ratio_min = lo.ratio_max = 1.0f;
        lo.hflip = -1.0f;
    }
    lo.step_batches = o->run.accum; /* an epoch holds whole optimizer steps (no step spans two epochs) */
    t->lo = lo;
    SV_TRY(sv_loader_create(&t->lo, &t->ld));
    t->spe = sv_loader_steps_per_epoch(t->ld) / (uint64_t)o->run.accum; /* exact, >= 1 */
    SV_TRY(sv_train_sched_build(&o->of, o->lr, o->min_lr, o->warmup, o->steps, o->epochs, t->spe, (uint64_t)o->run.seed,
                                &t->total, &t->sched));
    if (o->of.layer_decay > 0) {
        const sv_layout *L = &r->fsdp.L;
        if (!(t->lr_scale = malloc((size_t)L->n_params * sizeof *t->lr_scale)))
            return SV_FAIL(SV_ERR_OOM, "layer-decay scales");
        sv_layer_decay_scales(L, o->of.layer_decay, t->lr_scale);
    }
    if (r->rank != 0) return SV_OK;
    if (t->rs->found) SV_TRY(sv_train_resume_fits(t->rs, t->ds, o->data, t->total, o->resume_data_changed));
    /* every start-up check has passed: the run directory's own files */
    SV_TRY(sv_train_outputs_write_config(o->out, o->flags));
    if (o->out) {
        char p[4096];
        snprintf(p, sizeof p, "%s/classes.txt", o->out);
        SV_TRY(sv_classes_write(p, t->ds));
    }
    return SV_OK;
}

/* MFU's peak on the CPU (the device's own on a GPU; collective), the provenance and the
 * metrics.jsonl header record (rank 0). */
static sv_status provenance_begin(trainer *t) {
    const sv_train_opts *o = t->o;
    sv_run *r = t->r;
    int cpu = !strcmp(sv_be_name(r->be), "cpu");
    const char *kind = t->peak > 0 ? "device" : NULL;
    if (t->peak <= 0 && cpu && o->mfu_calib_s > 0) {
        SV_TRY(sv_cpu_peak_measure(r, o->mfu_calib_s, &t->cpu_peak));
        t->peak = sv_cpu_peak_flops(&t->cpu_peak);
        if (t->peak > 0) kind = "isa";
    }
    sv_cpu_peak_cores(r, &t->cpu_peak);
    if (r->rank != 0) return SV_OK;
    sv_proc proc = {r->rank, r->world, r->local_rank, r->local_size};
    sv_provenance p;
    sv_provenance_fill(&p, "train", &proc, t->cpu_peak.threads_rank, cpu ? -1 : r->local_rank);
    if (!(t->prov_json = sv_provenance_json(&p, o->flags))) return SV_FAIL(SV_ERR_OOM, "provenance");
    sv_train_log_peak peak = {.kind = kind,
                              .engine = t->cpu_peak.engine,
                              .per_core_flops = t->cpu_peak.per_core,
                              .cores_used = t->cpu_peak.cores_used,
                              .flops = t->peak,
                              .calib_seconds = o->mfu_calib_s};
    return sv_train_log_header(&t->lg, t->prov_json, &peak);
}

/* Logs, evaluator and checkpoints; --resume / --init-from applied. *start: the first step. */
static sv_status begin(trainer *t, long *start) {
    const sv_train_opts *o = t->o;
    sv_run *r = t->r;
    t->ck = (sv_train_ckpt){.resume = o->resume,
                            .init_from = o->init_from,
                            .every = o->ckpt_every,
                            .keep = o->keep,
                            .every_minutes = o->ckpt_minutes,
                            .async = o->async_ckpt};
    t->ck.meta.xform = t->tx;
    t->ck.state = (sv_ckpt_train_state){.seed = (uint64_t)o->run.seed,
                                        .total_steps = t->total,
                                        .lr = o->lr,
                                        .min_lr = o->min_lr,
                                        .warmup = o->warmup,
                                        .global_batch = o->run.batch_size,
                                        .ema_decay = o->ema.decay,
                                        .ema_warmup = o->ema.warmup,
                                        .data_known = 1, /* the same on every rank (sv_run_same_data) */
                                        .data_samples = sv_dataset_len(t->ds),
                                        .data_fingerprint = sv_dataset_fingerprint(t->ds)};
    t->ck.state.sched = t->sched;
    t->ck.state.opt = sv_train_optim_record(&o->of, o->beta1, o->beta2, o->eps, o->weight_decay);
    sv_eval_opts eo = {.workers = o->workers,
                       .crop_pct = t->tx.crop_pct,
                       .norm = -1,
                       .mean = t->mean,
                       .std = t->stdv,
                       .interp = sv_xform_interp_id(&t->tx),
                       .seed = (uint64_t)o->run.seed,
                       .xform = &t->tx};
    /* rank 0 opens and writes the logs: agreed before the next collective */
    SV_TRY(sv_run_agree(r, sv_train_log_open(&t->lg, r->rank, o->out, o->resume != NULL)));
    SV_TRY(sv_run_agree(r, provenance_begin(t)));
    SV_TRY(record_labels(t->ds, &t->ck.meta));
    sv_eval_bufs eb = sv_run_eval_bufs(r);
    if (t->vds) SV_TRY(sv_run_agree(r, sv_eval_init(&t->ev, &r->fsdp, t->vds, &eo, &eb)));
    t->ev.provenance_json = t->prov_json;
    SV_TRY(sv_run_agreed(r, sv_train_ckpt_setup(&t->ck, o->ckpt_dir, o->out))); /* flags: alike */
    SV_TRY(sv_train_ckpt_begin(r, &t->ck, t->rs, t->ld, start));
    if (o->resume) SV_TRY(sv_run_agree(r, sv_train_log_resume(&t->lg, *start)));
    if (o->resume && *start == t->total && t->total > 0)
        SV_INFO("resume: the checkpoint is at step %ld, this run's last: no step is left to train; the end-of-run "
                "work (final evaluation, outputs) is done again",
                *start);
    return SV_OK;
}

/* The log line, metrics.jsonl record and TensorBoard scalars of step `step` (0-based) when it is
 * a logged one, and the progress line. */
static sv_status log_step(trainer *t, long step, double lr, const sv_step_result *sr) {
    const sv_train_opts *o = t->o;
    sv_run *r = t->r;
    double loss = sr->loss_sum / o->run.batch_size;
    t->final_loss = loss;
    t->steps_trained++;
    t->wait_log += sr->data_wait_s;
    if (isfinite(loss)) t->loss_window += loss, t->losses_in_window++;
    t->steps_since_log++;
    if ((step + 1) % o->log_every == 0 || step == 0 || step + 1 == t->total) {
        double dt = sv_now_s() - t->t_log;
        double ips = t->steps_since_log * o->run.batch_size / dt;
        double tflops = t->flops_step * t->steps_since_log / dt / 1e12;
        char mfu[32] = "";
        if (t->peak > 0) snprintf(mfu, sizeof mfu, " MFU %.1f%%", 100.0 * tflops * 1e12 / t->peak);
        /* the window mean of the finite losses (NaN when there is none): one skipped step whose
         * loss overflowed does not hide the others */
        double loss_avg = t->losses_in_window ? t->loss_window / (double)t->losses_in_window : NAN;
        char left_out[48] = "";
        if (t->losses_in_window < t->steps_since_log)
            snprintf(left_out, sizeof left_out, ", %ld non-finite left out", t->steps_since_log - t->losses_in_window);
        if (!t->lg.tty) /* a terminal gets the progress line instead */
            SV_INFO("step %ld/%ld epoch %llu loss %.4f (mean of %ld%s: %.4f) lr %.3e grad_norm %.3f img/s %.1f "
                    "TFLOP/s %.3f%s%s",
                    step + 1, t->total, (unsigned long long)sr->epoch, loss, t->losses_in_window, left_out, loss_avg,
                    lr, sr->grad_norm, ips, tflops, mfu, sr->skipped ? " (skipped)" : "");
        sv_train_log_step rec = {.step = step + 1,
                                 .epoch = (unsigned long long)sr->epoch,
                                 .skipped_steps = (unsigned long long)r->fsdp.ctr.skipped_steps,
                                 .loss = loss,
                                 .loss_avg = loss_avg,
                                 .loss_avg_steps = t->losses_in_window,
                                 .lr = lr,
                                 .grad_norm = sr->grad_norm,
                                 .img_per_s = ips,
                                 .tflops = tflops,
                                 .mfu = t->peak > 0 ? tflops * 1e12 / t->peak : NAN,
                                 .data_wait_frac = dt > 0 ? t->wait_log / dt : 0,
                                 .mem_bytes = r->dev.used};
        SV_TRY(sv_train_log_record(&t->lg, &rec));
        t->t_log = sv_now_s();
        t->wait_log = 0;
        t->loss_window = 0;
        t->steps_since_log = 0;
        t->losses_in_window = 0;
    }
    sv_train_log_progress(&t->lg, step, t->total, t->spe, loss, o->run.batch_size);
    return SV_OK;
}

/* Collective counts, exposed communication and memory, as the FSDP layer accounted them (tests
 * assert these lines). */
static void log_summary(const trainer *t) {
    const sv_run *r = t->r;
    sv_comm_stats ss, rs;
    sv_comm_get_stats(r->shard_comm, &ss);
    sv_comm_get_stats(r->repl_comm, &rs);
    SV_INFO("collectives: shard all_gather %llu reduce_scatter %llu all_reduce %llu; replica all_reduce %llu "
            "(%ld steps)",
            (unsigned long long)ss.all_gathers, (unsigned long long)ss.reduce_scatters,
            (unsigned long long)ss.all_reduces, (unsigned long long)rs.all_reduces, t->total);
    double wall = sv_now_s() - t->t_train, waited = ss.wait_seconds + rs.wait_seconds;
    SV_INFO("exposed communication: %.3f s waiting in collectives of %.3f s training (%.1f%%)", waited, wall,
            wall > 0 ? 100.0 * waited / wall : 0.0);
    SV_INFO("memory: persistent %zu bytes per rank (16 B x %zu sharded elements), max gathered block units %d",
            sv_fsdp_persistent_bytes(&r->fsdp), sv_fsdp_persistent_bytes(&r->fsdp) / 16, r->fsdp.ctr.max_live_gathered);
}

/* After the last step: final checkpoint, final evaluation and its outputs, --save-params,
 * --dump-logits, the closing line. */
static sv_status finish(trainer *t) {
    const sv_train_opts *o = t->o;
    sv_run *r = t->r;
    SV_TRY(sv_train_ckpt_end(r, &t->ck, r->fsdp.step));
    if (t->vds && t->last_eval != t->total) SV_TRY(sv_train_ema_eval(&t->lg, &t->ev, &r->fsdp, t->total, o->val_data));
    /* Each output below is written by rank 0 alone, and a collective follows: its status is
     * agreed first, so that a failed write (a FIFO put in place of eval.json during the run, a
     * full disk) ends every rank with rank 0's message instead of leaving the others waiting in
     * the next gather until the communication timeout. */
    if (t->vds && o->out) SV_TRY(sv_run_agree(r, r->rank == 0 ? sv_eval_write_outputs(&t->ev, o->out, NULL) : SV_OK));
    if (o->save_params) {
        size_t n = sv_vit_param_count(&r->vcfg);
        float *all = malloc(n * 4);
        sv_status st = all ? sv_fsdp_gather_full_params(&r->fsdp, all) : SV_FAIL(SV_ERR_OOM, "parameter dump");
        if (st == SV_OK && r->rank == 0) st = sv_fileio_write_atomic(o->save_params, all, n * 4);
        free(all);
        SV_TRY(sv_run_agree(r, st));
    }
    if (o->ema.save_path) SV_TRY(sv_run_agree(r, sv_train_ema_save_params(r, o->ema.save_path)));
    if (o->dump_logits) { /* the run's evaluation transform (its crop_pct and interpolation), as --val-data's */
        sv_loader_opts dl = t->lo;
        dl.crop_pct = t->tx.crop_pct;
        dl.interp = sv_xform_interp_id(&t->tx);
        SV_TRY(sv_run_agree(r, sv_train_outputs_dump_logits(r, &dl, o->dump_logits)));
    }
    sv_loader_stats ls;
    sv_loader_stats_get(t->ld, &ls);
    size_t dev_peak;
    sv_be_mem_stats(r->be, NULL, &dev_peak);
    char fin[64] = "no step trained (no final loss)"; /* --steps 0: a nan loss would look like divergence */
    if (t->steps_trained) snprintf(fin, sizeof fin, "final loss %.4f", t->final_loss);
    SV_INFO("done: %s, skipped steps %llu, substituted samples %llu; measured peak per rank: arena "
            "%.1f MiB (planned %.1f MiB), device memory allocated %zu bytes (plan %zu bytes), process RSS %.1f MiB",
            fin, (unsigned long long)r->fsdp.ctr.skipped_steps, (unsigned long long)ls.substituted,
            r->dev.peak / 1048576.0, r->dev.cap / 1048576.0, dev_peak, r->bytes_total,
            sv_proc_max_rss_bytes() / 1048576.0);
    return SV_OK;
}

static sv_status close_trainer(trainer *t) {
    sv_train_hooks_remove(t->r);
    if (t->ev.f) sv_eval_free(&t->ev);
    free(t->ck.meta.labels);
    free(t->lr_scale);
    free(t->prov_json);
    sv_train_ckpt_free(&t->ck);
    sv_status st = sv_train_log_close(&t->lg);
    if (t->ld) sv_loader_destroy(t->ld);
    if (t->ds) sv_dataset_close(t->ds);
    if (t->vds) sv_dataset_close(t->vds);
    return st;
}

/* One optimizer step after another; checkpoints, evaluation and preemption at step boundaries. */
static sv_status run_steps(trainer *t, long start, train_end *end) {
    const sv_train_opts *o = t->o;
    sv_run *r = t->r;
    for (long step = start; step < t->total; step++) {
        double lr = sv_lr_sched_at(&t->sched, step);
        sv_optim_config oc = {.lr = (float)lr,
                              .beta1 = (float)o->beta1,
                              .beta2 = (float)o->beta2,
                              .eps = (float)o->eps,
                              .weight_decay = (float)o->weight_decay,
                              .max_grad_norm = (float)o->clip,
                              .kind = t->ck.state.opt.kind,
                              .momentum = (float)o->of.momentum,
                              .nesterov = o->of.nesterov,
                              .lr_scale = t->lr_scale};
        sv_loader_feed feed = {.r = r, .ld = t->ld, .hooks = &t->hooks, .step = step};
        sv_step_result sr;
        SV_TRY(sv_train_step(r, &oc, (float)o->smoothing, o->run.accum, o->run.batch_size, sv_loader_feed_next, &feed,
                             &sr));
        SV_TRY(sv_ema_update(&r->fsdp, &(sv_ema_opts){o->ema.decay, o->ema.warmup}, sr.skipped)); /* --model-ema */
        t->ck.state.epoch = feed.next_epoch;
        t->ck.state.cursor = feed.next_cursor;
        if (o->max_skipped >= 0 && r->fsdp.ctr.skipped_steps > (uint64_t)o->max_skipped)
            return SV_FAIL(SV_ERR_NONFINITE,
                           "%llu steps skipped for non-finite gradients (limit --max-skipped-steps %d)",
                           (unsigned long long)r->fsdp.ctr.skipped_steps, o->max_skipped);
        t->skip_run = sr.skipped ? t->skip_run + 1 : 0;
        t->ck.hold = t->skip_run > 0;
        if (o->max_skip_run >= 0 && t->skip_run > o->max_skip_run)
            return SV_FAIL(SV_ERR_NONFINITE,
                           "training diverged: steps %ld-%ld were all skipped for non-finite gradients (limit "
                           "--max-consecutive-skips %d); the weights have not changed since step %ld and produce "
                           "them",
                           step + 2 - t->skip_run, step + 1, o->max_skip_run, step + 1 - t->skip_run);
        SV_TRY(log_step(t, step, lr, &sr));
        if (t->vds && o->eval_every > 0 && ((step + 1) % o->eval_every == 0 || step + 1 == t->total)) {
            SV_TRY(sv_train_ema_eval(&t->lg, &t->ev, &r->fsdp, step + 1, o->val_data));
            t->t_log += t->ev.seconds; /* throughput counts training time only */
            t->last_eval = step + 1;
        }
        SV_TRY(sv_train_ckpt_after_step(r, &t->ck, step + 1, &end->signal, flush_logs, &t->lg));
        if (end->signal) {
            end->step = step + 1;
            end->saved = t->ck.last_saved == step + 1;
            return SV_OK;
        }
    }
    return SV_OK;
}

static sv_status train(sv_run *r, const sv_train_opts *o, const sv_train_resume *rs, const sv_ckpt_xform *tx,
                       train_end *end) {
    trainer t = {.r = r, .o = o, .last_eval = -1, .final_loss = NAN, .rs = rs, .tx = *tx};
    for (int k = 0; k < 3; k++) t.mean[k] = (float)t.tx.mean[k], t.stdv[k] = (float)t.tx.std[k];
    const sv_vit_config *c = &r->vcfg;
    long start = 0;
    sv_status st = sv_run_agree(r, open_data(&t)); /* rank 0's checks and files included */
    if (st == SV_OK) {
        t.hooks = hooks_for(o);
        sv_train_hooks_install(r, &t.hooks);
        t.flops_step = 3.0 * sv_vit_flops_fwd(c) * o->run.batch_size;
        t.peak = sv_be_peak_flops(r->be) * r->world;
        SV_INFO("training %s (%zu params) for %ld steps (%llu per epoch), global batch %d = %d ranks x %d micro x %d "
                "accum",
                c->name, sv_vit_param_count(c), t.total, (unsigned long long)t.spe, o->run.batch_size, r->world,
                r->micro_batch, o->run.accum);
        st = begin(&t, &start);
        /* throughput and the progress line count from the first step: not the set-up (the MFU
         * peak's calibration, opening the logs, loading a checkpoint), nor a resumed run's steps */
        t.t_log = t.t_train = sv_now_s();
        if (st == SV_OK) sv_train_log_start(&t.lg, start);
    }
    if (st == SV_OK) st = run_steps(&t, start, end);
    if (st == SV_OK && !end->signal) {
        log_summary(&t);
        st = finish(&t);
    }
    sv_status cs = close_trainer(&t);
    return st != SV_OK ? st : cs;
}

/* The --init-from file (and the config.json beside it) checked as its loading will check it
 * (names, shapes, the head, finite values, the transform), before the run directory is written: a
 * refused file leaves --out as it was, so the same command with a good file is not refused as "an
 * earlier run". Not when resuming: a checkpoint found then is loaded instead and the file is never
 * read. */
static sv_status check_init_from(const sv_run *r, const sv_train_opts *o) {
    if (!o->init_from || o->resume || (!o->out && !o->ckpt_dir)) return SV_OK;
    sv_ckpt_meta m;
    int found, n;
    SV_TRY(sv_ckpt_read_config_meta(o->init_from, &m, &found));
    free(m.labels);
    return sv_ckpt_check_import(&r->fsdp.L, o->init_from, 0, &n);
}

int sv_cmd_train(int argc, char **argv, const sv_proc *proc) {
    sv_train_opts o;
    int rc = sv_train_flags_parse(&o, argc, argv, proc);
    if (rc >= 0) return rc;
    sv_preempt pre;
    if (sv_preempt_parse(o.preempt_signal, &pre) != SV_OK) return sv_cmd_usage_error("train", "%s", sv_err_msg());
    sv_run r;
    sv_run_lock locks[2] = {SV_RUN_LOCK_NONE, SV_RUN_LOCK_NONE};
    sv_train_resume rs = {0}; /* rank 0: what --resume continues (sv_train_ckpt_precheck) */
    sv_ckpt_xform tx;         /* the run's evaluation transform (resolve_transform) */
    /* Handlers first: a signal during set-up stops the run at the first step boundary. They stay
     * installed until the run is torn down: a signal after the last step boundary (final save,
     * evaluation, outputs, the done: line, teardown) finds the run complete and is only recorded,
     * so a finished run exits 0 rather than dying of it. Then sv_preempt_exit_on_signal (app/preempt.h). */
    sv_status st = sv_preempt_install(&pre);
    int set_up = 0; /* r is set up (and must be torn down) */
    if (proc->rank == 0) {
        fprintf(stderr, "[shardvit r0] info resolved configuration:\n");
        sv_flags_dump(o.table, stderr);
    }
    if (st == SV_OK) st = sv_run_setup(&r, &o.run, proc->rank, proc->world, proc->local_rank, proc->local_size);
    set_up = st == SV_OK;
    if (st == SV_OK) { /* the recipe's regularisation and loss (model/vit.h); all off by default */
        sv_vit_set_drops(&r.model,
                         &(sv_vit_drops){.drop_path = (float)o.drop_path,
                                         .proj_drop = (float)o.proj_drop,
                                         .head_drop = (float)o.drop,
                                         .attn_drop = (float)o.attn_drop,
                                         .drop_path_uniform = o.drop_path_uniform},
                         (uint64_t)o.run.seed);
        r.model.loss = (sv_vit_loss){.bce = o.bce, .bce_sum = o.bce_sum, .bce_thresh = (float)o.bce_thresh};
    }
    if (st == SV_OK) {
        sv_train_outputs outs = {.out = o.out,
                                 .ckpt_dir = o.ckpt_dir,
                                 .data = o.data,
                                 .val_data = o.val_data,
                                 .resuming = o.resume != NULL,
                                 .save_params = o.save_params,
                                 .save_ema_params = o.ema.save_path,
                                 .dump_logits = o.dump_logits,
                                 .trace = o.run.trace,
                                 .world = proc->world,
                                 .params = sv_vit_param_count(&r.vcfg)};
        sv_train_recipe now = {.mixup = o.mixup, .smoothing = o.smoothing, .drop_path = o.drop_path};
        sv_ckpt_optim opt = sv_train_optim_record(&o.of, o.beta1, o.beta2, o.eps, o.weight_decay);
        /* agreed: the --init-from config.json read on one rank only failing (node-local storage)
         * must not leave the others waiting in the next collective */
        sv_status ts = sv_run_agree(&r, resolve_transform(&o, &r.vcfg, &tx));
        /* rank 0's checks, then the run directories: a refused start creates and rewrites nothing
         * there (a resume of another model or update rule among them) */
        sv_status ps = ts != SV_OK ? ts : proc->rank == 0 ? check_init_from(&r, &o) : SV_OK;
        if (ps == SV_OK && proc->rank == 0) ps = sv_train_outputs_check(&outs);
        if (ps == SV_OK && proc->rank == 0) ps = sv_train_ckpt_precheck(o.resume, o.ckpt_dir, o.out, &now, &rs);
        if (ps == SV_OK && proc->rank == 0) ps = sv_train_resume_model_fits(&rs, &r.fsdp.L, &opt);
        if (ps == SV_OK && proc->rank == 0) ps = resume_norm_fits(&rs, &tx);
        if (ps == SV_OK && proc->rank == 0) ps = sv_train_outputs_lock(&outs, locks);
        if (ps == SV_OK && proc->rank == 0) ps = sv_train_ckpt_still_latest(o.resume, o.ckpt_dir, o.out, &rs);
        st = sv_run_agree(&r, ps);
        if (st == SV_OK) st = sv_train_outputs_shared(&r, &outs);
    }
    train_end end = {0};
    if (st == SV_OK) st = train(&r, &o, &rs, &tx, &end);
    if (st == SV_OK && o.run.trace) st = sv_run_finish_trace(&r, o.run.trace); /* agreed */
    sv_train_resume_free(&rs);
    /* a refused start: no directory left (--ckpt-dir first: it may lie inside --out, or beside it in a
     * parent both made) */
    for (int i = 1; i >= 0; i--) sv_run_dir_unlock(&locks[i], st != SV_OK);
    if (st != SV_OK) {
        /* SV_ERR_INVALID is a usage error (exit 2, and main does not abort the other ranks: each
         * tears down and finalizes) only when every rank is known to fail alike: before the run was
         * set up (the flags, the same on every rank) or with a failure the ranks agreed on
         * (sv_run_agree). Any other failure, a rank-0-only one above all, exits 1, and main aborts
         * every rank: none is left waiting in a collective for a rank that has gone. */
        int alike = !set_up || proc->world == 1 || r.failure_agreed;
        rc = sv_cmd_exit("train", st, alike);
        if (rc == 2 && set_up) sv_run_teardown(&r);
        return sv_preempt_exit_on_signal(&pre, rc);
    }
    sv_run_teardown(&r);
    if (!end.signal && sv_preempt_received())
        SV_INFO("%s received after the last step: the run had completed (its outputs written); exit status 0",
                sv_preempt_signal_name(sv_preempt_received()));
    if (end.signal && end.saved) {
        SV_INFO("stopped by %s after step %ld with its checkpoint saved: continue with the same command and "
                "--resume auto (exit status %d)",
                sv_preempt_signal_name(end.signal), end.step, SV_EXIT_PREEMPTED);
        return sv_preempt_exit_on_signal(&pre, SV_EXIT_PREEMPTED);
    }
    if (end.signal) {
        fprintf(stderr, "shardvit train: stopped by %s after step %ld; nothing saved (no --out or --ckpt-dir)\n",
                sv_preempt_signal_name(end.signal), end.step);
        return sv_preempt_exit_on_signal(&pre, 128 + end.signal);
    }
    return sv_preempt_exit_on_signal(&pre, 0);
}
