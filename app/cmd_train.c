/* shardvit train: FSDP training loop (data -> micro-steps -> optimizer -> logs/outputs). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "app/commands.h"
#include "app/mpi_env.h"
#include "app/run.h"
#include "core/log.h"
#include "data/loader.h"

typedef struct train_opts {
    sv_run_opts run;
    const char *data, *val_data, *out;
    long long steps;
    int epochs;
    double lr, min_lr, weight_decay, beta1, beta2, eps, clip, smoothing;
    int warmup, log_every, workers, synth_samples, max_skipped;
    double mixup, cutmix;
    const char *save_params;
    long long debug_nan_step;
    int debug_nan_rank;
} train_opts;

static double lr_at(const train_opts *o, long step, long total) {
    if (step < o->warmup) return o->lr * (double)(step + 1) / (double)o->warmup;
    double span = (double)(total - o->warmup);
    double p = span > 0 ? (double)(step - o->warmup) / span : 1.0;
    if (p > 1) p = 1;
    return o->min_lr + 0.5 * (o->lr - o->min_lr) * (1.0 + cos(M_PI * p));
}

static sv_status mkdir_p(const char *path) {
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(buf, 0755) && errno != EEXIST) return SV_FAIL(SV_ERR_IO, "cannot create %s: %s", buf, strerror(errno));
        *p = '/';
    }
    if (mkdir(buf, 0755) && errno != EEXIST) return SV_FAIL(SV_ERR_IO, "cannot create %s: %s", buf, strerror(errno));
    return SV_OK;
}

/* Loader options shared by training and evaluation for this run's shapes and ranks. */
static sv_loader_opts loader_opts(const sv_run *r, const train_opts *o, const sv_dataset *ds, sv_transform_mode mode) {
    sv_loader_opts lo = sv_loader_opts_default();
    lo.dataset = ds;
    lo.batch_local = r->micro_batch;
    lo.rank = r->rank;
    lo.world = r->world;
    lo.seed = (uint64_t)o->run.seed;
    lo.img = r->vcfg.img;
    lo.channels = r->vcfg.in_chans;
    lo.mode = mode;
    lo.norm = r->vcfg.in_chans == 1 ? SV_NORM_HALF : SV_NORM_IMAGENET;
    lo.threads = o->workers;
    return lo;
}

/* Evaluate on the whole validation set (every sample once across ranks). */
static sv_status evaluate(sv_run *r, const train_opts *o, const sv_dataset *ds, float *d_images, double *top1,
                          double *loss) {
    sv_loader_opts lo = loader_opts(r, o, ds, SV_TRANSFORM_EVAL);
    sv_loader *ld;
    SV_TRY(sv_loader_create(&lo, &ld));
    int B = r->micro_batch, K = r->vcfg.num_classes;
    float *logits = malloc((size_t)B * K * sizeof(float));
    float *tmp = NULL;
    double sums[3] = {0, 0, 0}; /* correct, loss sum, count */
    sv_status st = SV_OK;
    for (;;) {
        const sv_batch *b;
        if ((st = sv_loader_next(ld, &b)) != SV_OK || !b) break;
        size_t img_bytes = (size_t)B * r->vcfg.in_chans * r->vcfg.img * r->vcfg.img * 4;
        if ((st = sv_be_upload(r->be, d_images, b->images, img_bytes)) != SV_OK) break;
        if ((st = sv_fsdp_forward(&r->fsdp, d_images)) != SV_OK) break;
        if (sv_be_compute_elem_size(r->be) == 4) {
            st = sv_be_download(r->be, logits, r->model.logits, (size_t)B * K * 4);
        } else {
            if (!tmp && (st = sv_be_alloc(r->be, (size_t)B * K * 4, (void **)&tmp)) != SV_OK) break;
            if ((st = sv_be_compute_to_f32(r->be, tmp, r->model.logits, (size_t)B * K)) != SV_OK) break;
            st = sv_be_download(r->be, logits, tmp, (size_t)B * K * 4);
        }
        if (st != SV_OK) break;
        for (int i = 0; i < B; i++) {
            if (!b->valid[i]) continue;
            const float *z = logits + (size_t)i * K;
            int arg = 0;
            double mx = z[0];
            for (int k = 1; k < K; k++)
                if (z[k] > mx) mx = z[k], arg = k;
            double se = 0;
            for (int k = 0; k < K; k++) se += exp(z[k] - mx);
            sums[0] += arg == b->labels[i];
            sums[1] += log(se) + mx - z[b->labels[i]];
            sums[2] += 1;
        }
    }
    if (tmp) sv_be_free(r->be, tmp);
    free(logits);
    sv_loader_destroy(ld);
    SV_TRY(st);
    SV_TRY(sv_comm_all_reduce_sync(r->world_comm, sums, 3, SV_COMM_F64, SV_COMM_SUM));
    *top1 = sums[2] > 0 ? sums[0] / sums[2] : 0;
    *loss = sums[2] > 0 ? sums[1] / sums[2] : 0;
    return SV_OK;
}

static sv_status open_dataset(const char *spec, const sv_run *r, const train_opts *o, sv_dataset **ds) {
    sv_dataset_opts dopts = sv_dataset_opts_default();
    dopts.synth_samples = (uint64_t)o->synth_samples;
    dopts.synth_classes = r->vcfg.num_classes;
    dopts.synth_img = r->vcfg.img;
    dopts.synth_channels = r->vcfg.in_chans;
    dopts.synth_seed = 1234;
    return sv_dataset_open(spec, &dopts, ds);
}

static sv_status train(sv_run *r, const train_opts *o, FILE *metrics) {
    const sv_vit_config *c = &r->vcfg;
    sv_dataset *ds = NULL, *vds = NULL;
    SV_TRY(open_dataset(o->data, r, o, &ds));
    if (sv_dataset_num_classes(ds) > c->num_classes)
        return SV_FAIL(SV_ERR_INVALID, "dataset %s has %d classes but the model has --num-classes %d", o->data,
                       sv_dataset_num_classes(ds), c->num_classes);
    if (o->val_data) SV_TRY(open_dataset(o->val_data, r, o, &vds));
    if (r->rank == 0 && o->out) {
        char p[4096];
        snprintf(p, sizeof p, "%s/classes.txt", o->out);
        SV_TRY(sv_classes_write(p, ds));
    }

    sv_loader_opts lo = loader_opts(r, o, ds, SV_TRANSFORM_TRAIN);
    lo.mixup_alpha = (float)o->mixup;
    lo.cutmix_alpha = (float)o->cutmix;
    lo.smoothing = (float)o->smoothing;
    if (sv_dataset_kind_of(ds) == SV_DATASET_SYNTHETIC) { /* the synthetic task is learned as rendered */
        lo.scale_min = 1.0f;
        lo.ratio_min = lo.ratio_max = 1.0f;
        lo.hflip = -1.0f;
    }
    sv_loader *ld;
    SV_TRY(sv_loader_create(&lo, &ld));
    uint64_t spe = sv_loader_steps_per_epoch(ld) / (uint64_t)o->run.accum;
    if (spe == 0) spe = 1;
    long total = o->steps > 0 ? (long)o->steps : (long)(spe * (uint64_t)(o->epochs > 0 ? o->epochs : 1));

    int B = r->micro_batch, K = c->num_classes;
    size_t img_elems = (size_t)B * c->in_chans * c->img * c->img;
    float *d_images = NULL, *d_soft = NULL;
    int32_t *d_labels = NULL;
    SV_TRY(sv_be_alloc(r->be, img_elems * 4, (void **)&d_images));
    SV_TRY(sv_be_alloc(r->be, (size_t)B * 4, (void **)&d_labels));
    SV_TRY(sv_be_alloc(r->be, (size_t)B * K * 4, (void **)&d_soft));

    r->fsdp.inject_nan_step = o->debug_nan_step;
    r->fsdp.inject_nan_rank = o->debug_nan_rank;
    double flops_step = 3.0 * sv_vit_flops_fwd(c) * o->run.batch_size;
    double peak = sv_be_peak_flops(r->be) * r->world;
    SV_INFO("training %s (%zu params) for %ld steps (%llu per epoch), global batch %d = %d ranks x %d micro x %d accum",
            c->name, sv_vit_param_count(c), total, (unsigned long long)spe, o->run.batch_size, r->world, B,
            o->run.accum);
    double t_log = sv_now_s(), wait_log = 0;
    long steps_since_log = 0;
    sv_status st = SV_OK;
    double final_loss = NAN;
    for (long step = 0; step < total && st == SV_OK; step++) {
        double lr = lr_at(o, step, total);
        double loss_sum = 0, wait = 0;
        uint64_t epoch = 0;
        SV_TRY_GOTO(st, sv_fsdp_zero_grad(&r->fsdp), done);
        for (int micro = 0; micro < o->run.accum; micro++) {
            const sv_batch *b;
            double tw = sv_now_s(), tw_us = r->fsdp.trace ? sv_trace_now(r->fsdp.trace) : 0;
            SV_TRY_GOTO(st, sv_loader_next(ld, &b), done);
            wait += sv_now_s() - tw;
            if (r->fsdp.trace) sv_trace_add(r->fsdp.trace, "data_wait", "data", 2, -1, tw_us, sv_trace_now(r->fsdp.trace));
            epoch = b->epoch;
            SV_TRY_GOTO(st, sv_be_upload(r->be, d_images, b->images, img_elems * 4), done);
            SV_TRY_GOTO(st, sv_be_upload(r->be, d_labels, b->labels, (size_t)B * 4), done);
            if (b->soft_targets) SV_TRY_GOTO(st, sv_be_upload(r->be, d_soft, b->soft_targets, (size_t)B * K * 4), done);
            double ls;
            SV_TRY_GOTO(st,
                        sv_fsdp_forward_backward(&r->fsdp, d_images, b->soft_targets ? NULL : d_labels,
                                                 b->soft_targets ? d_soft : NULL, (float)o->smoothing,
                                                 1.0f / (float)o->run.batch_size, micro, o->run.accum, &ls),
                        done);
            loss_sum += ls;
        }
        sv_optim_config oc = {(float)lr, (float)o->beta1, (float)o->beta2, (float)o->eps, (float)o->weight_decay,
                              (float)o->clip};
        double gnorm;
        int skipped;
        SV_TRY_GOTO(st, sv_fsdp_optimizer_step(&r->fsdp, &oc, &gnorm, &skipped), done);
        SV_TRY_GOTO(st, sv_comm_all_reduce_sync(r->world_comm, &loss_sum, 1, SV_COMM_F64, SV_COMM_SUM), done);
        double loss = loss_sum / o->run.batch_size;
        final_loss = loss;
        if (o->max_skipped >= 0 && r->fsdp.ctr.skipped_steps > (uint64_t)o->max_skipped) {
            st = SV_FAIL(SV_ERR_NONFINITE, "%llu steps skipped for non-finite gradients (limit --max-skipped-steps %d)",
                         (unsigned long long)r->fsdp.ctr.skipped_steps, o->max_skipped);
            break;
        }
        wait_log += wait;
        steps_since_log++;
        if ((step + 1) % o->log_every == 0 || step == 0 || step + 1 == total) {
            double dt = sv_now_s() - t_log;
            double ips = steps_since_log * o->run.batch_size / dt;
            double tflops = flops_step * steps_since_log / dt / 1e12;
            SV_INFO("step %ld/%ld epoch %llu loss %.4f lr %.3e grad_norm %.3f img/s %.1f TFLOP/s %.3f%s", step + 1, total,
                    (unsigned long long)epoch, loss, lr, gnorm, ips, tflops, skipped ? " (skipped)" : "");
            if (metrics) {
                fprintf(metrics,
                        "{\"step\":%ld,\"epoch\":%llu,\"loss\":%.9g,\"lr\":%.9g,\"grad_norm\":%.9g,\"img_per_s\":%.6g,"
                        "\"tflops\":%.6g,\"mfu\":",
                        step + 1, (unsigned long long)epoch, loss, lr, gnorm, ips, tflops);
                if (peak > 0) fprintf(metrics, "%.6g", tflops * 1e12 / peak);
                else fputs("null", metrics);
                fprintf(metrics, ",\"mem_bytes\":%zu,\"data_wait_frac\":%.4f,\"skipped_steps\":%llu}\n", r->dev.used,
                        dt > 0 ? wait_log / dt : 0, (unsigned long long)r->fsdp.ctr.skipped_steps);
                fflush(metrics);
            }
            t_log = sv_now_s();
            wait_log = 0;
            steps_since_log = 0;
        }
    }
    if (st == SV_OK) {
        /* Collective counts and memory, as the FSDP layer accounted them (tests assert these). */
        sv_comm_stats ss, rs;
        sv_comm_get_stats(r->shard_comm, &ss);
        sv_comm_get_stats(r->repl_comm, &rs);
        SV_INFO("collectives: shard all_gather %llu reduce_scatter %llu all_reduce %llu; replica all_reduce %llu "
                "(%ld steps)",
                (unsigned long long)ss.all_gathers, (unsigned long long)ss.reduce_scatters,
                (unsigned long long)ss.all_reduces, (unsigned long long)rs.all_reduces, total);
        SV_INFO("memory: persistent %zu bytes per rank (16 B x %zu sharded elements), max gathered block units %d",
                sv_fsdp_persistent_bytes(&r->fsdp), sv_fsdp_persistent_bytes(&r->fsdp) / 16,
                r->fsdp.ctr.max_live_gathered);
    }
    if (st == SV_OK && vds) {
        double top1, vloss;
        st = evaluate(r, o, vds, d_images, &top1, &vloss);
        if (st == SV_OK) {
            SV_INFO("eval: top1 %.4f loss %.4f on %zu samples of %s", top1, vloss, sv_dataset_len(vds), o->val_data);
            if (metrics) fprintf(metrics, "{\"step\":%ld,\"eval_top1\":%.6f,\"eval_loss\":%.6f}\n", total, top1, vloss);
        }
    }
    if (st == SV_OK && o->save_params) {
        size_t n = sv_vit_param_count(c);
        float *all = malloc(n * 4);
        if (!all) st = SV_FAIL(SV_ERR_OOM, "parameter dump");
        else st = sv_fsdp_gather_full_params(&r->fsdp, all);
        if (st == SV_OK && r->rank == 0) {
            FILE *f = fopen(o->save_params, "wb");
            if (!f || fwrite(all, 4, n, f) != n) st = SV_FAIL(SV_ERR_IO, "cannot write %s", o->save_params);
            if (f) fclose(f);
        }
        free(all);
    }
    if (st == SV_OK) {
        sv_loader_stats ls;
        sv_loader_stats_get(ld, &ls);
        SV_INFO("done: final loss %.4f, skipped steps %llu, substituted samples %llu, peak arena %.1f MiB", final_loss,
                (unsigned long long)r->fsdp.ctr.skipped_steps, (unsigned long long)ls.substituted,
                r->dev.peak / 1048576.0);
    }
done:
    sv_be_free(r->be, d_images);
    sv_be_free(r->be, d_labels);
    sv_be_free(r->be, d_soft);
    sv_loader_destroy(ld);
    sv_dataset_close(ds);
    if (vds) sv_dataset_close(vds);
    return st;
}

int sv_cmd_train(int argc, char **argv, const sv_proc *proc) {
    train_opts o = {.run = SV_RUN_OPTS_DEFAULT,
                    .data = "synthetic",
                    .out = NULL,
                    .steps = 0,
                    .epochs = 0,
                    .lr = 1e-3,
                    .min_lr = 1e-5,
                    .weight_decay = 0.05,
                    .beta1 = 0.9,
                    .beta2 = 0.999,
                    .eps = 1e-8,
                    .clip = 1.0,
                    .smoothing = 0.1,
                    .warmup = 10,
                    .log_every = 10,
                    .workers = 0,
                    .synth_samples = 10000,
                    .max_skipped = -1,
                    .debug_nan_step = -1,
                    .debug_nan_rank = 0};
    sv_flag flags[] = {
        SV_RUN_FLAGS(o.run),
        {"data", SV_FLAG_STR, &o.data, 0, 0, "training data: synthetic | ImageFolder dir | tar pattern", 0},
        {"val-data", SV_FLAG_STR, &o.val_data, 0, 0, "evaluation data (evaluated at the end)", 0},
        {"out", SV_FLAG_STR, &o.out, 0, 0, "output directory (metrics.jsonl, config, classes)", 0},
        {"steps", SV_FLAG_I64, &o.steps, 0, 1e12, "optimizer steps (0: use --epochs)", 0},
        {"epochs", SV_FLAG_INT, &o.epochs, 0, 100000, "epochs when --steps is 0 (0 = 1)", 0},
        {"lr", SV_FLAG_DOUBLE, &o.lr, 0, 10, "peak learning rate", 0},
        {"min-lr", SV_FLAG_DOUBLE, &o.min_lr, 0, 10, "final learning rate of the cosine schedule", 0},
        {"warmup", SV_FLAG_INT, &o.warmup, 0, 1 << 30, "linear warmup steps", 0},
        {"weight-decay", SV_FLAG_DOUBLE, &o.weight_decay, 0, 10, "AdamW decoupled weight decay", 0},
        {"beta1", SV_FLAG_DOUBLE, &o.beta1, 0, 0.999999, "AdamW beta1", 0},
        {"beta2", SV_FLAG_DOUBLE, &o.beta2, 0, 0.999999999, "AdamW beta2", 0},
        {"eps", SV_FLAG_DOUBLE, &o.eps, 1e-30, 1, "AdamW epsilon", 0},
        {"clip", SV_FLAG_DOUBLE, &o.clip, 0, 1e9, "global gradient-norm clip (0 = off)", 0},
        {"smoothing", SV_FLAG_DOUBLE, &o.smoothing, 0, 0.999, "label smoothing", 0},
        {"mixup", SV_FLAG_DOUBLE, &o.mixup, 0, 100, "mixup alpha (0 = off)", 0},
        {"cutmix", SV_FLAG_DOUBLE, &o.cutmix, 0, 100, "cutmix alpha (0 = off)", 0},
        {"log-every", SV_FLAG_INT, &o.log_every, 1, 1 << 30, "log every N steps", 0},
        {"workers", SV_FLAG_INT, &o.workers, 0, 256, "data loader threads per rank (0 = cores)", 0},
        {"synth-samples", SV_FLAG_INT, &o.synth_samples, 1, 1 << 30, "samples in --data synthetic", 0},
        {"max-skipped-steps", SV_FLAG_INT, &o.max_skipped, -1, 1 << 30, "abort when more than N steps were skipped for non-finite gradients (-1 = never)", 0},
        {"save-params", SV_FLAG_STR, &o.save_params, 0, 0, "write all final fp32 parameters (canonical order) here", 0},
        {"debug-nan-step", SV_FLAG_I64, &o.debug_nan_step, -1, 1e12, "testing: poison one gradient at this step", 0},
        {"debug-nan-rank", SV_FLAG_INT, &o.debug_nan_rank, 0, 1 << 20, "testing: rank that poisons it", 0},
        SV_FLAG_END};
    sv_cmd_spec spec = {"train", "[mpiexec -n N] shardvit train [flags]",
                        "Train a ViT with FSDP (every block its own unit). Rank 0 logs and writes outputs.", 0};
    char *pos[1];
    int npos;
    int rc = sv_flags_parse(&spec, flags, argc, argv, pos, &npos);
    if (rc) return rc == 1 ? 0 : 2;
    if (o.run.accum_mode && strcmp(o.run.accum_mode, "shard") && strcmp(o.run.accum_mode, "local")) {
        fprintf(stderr, "shardvit train: --accum-mode: invalid value '%s' (expected shard or local)\n", o.run.accum_mode);
        return 2;
    }
    FILE *metrics = NULL;
    sv_run r;
    sv_status st = SV_OK;
    if (proc->rank == 0) {
        fprintf(stderr, "[shardvit r0] info resolved configuration:\n");
        sv_flags_dump(flags, stderr);
    }
    if (o.out && proc->rank == 0) {
        st = mkdir_p(o.out);
        char p[4096];
        if (st == SV_OK) {
            snprintf(p, sizeof p, "%s/config.toml", o.out);
            FILE *cf = fopen(p, "w");
            if (cf) {
                sv_flags_dump(flags, cf);
                fclose(cf);
            }
            snprintf(p, sizeof p, "%s/metrics.jsonl", o.out);
            metrics = fopen(p, "w");
            if (!metrics) st = SV_FAIL(SV_ERR_IO, "cannot write %s: %s", p, strerror(errno));
        }
    }
    if (st == SV_OK) st = sv_run_setup(&r, &o.run, proc->rank, proc->world, proc->local_rank, proc->local_size);
    if (st == SV_OK) st = train(&r, &o, metrics);
    if (st == SV_OK && o.run.trace) st = sv_run_finish_trace(&r, o.run.trace);
    if (metrics) fclose(metrics);
    if (st == SV_ERR_INVALID) { /* a bad flag value found while setting up: a usage error */
        fprintf(stderr, "shardvit train: %s\n", sv_err_msg());
        return 2;
    }
    if (st != SV_OK) return sv_app_fail("train", st);
    sv_run_teardown(&r);
    return 0;
}
