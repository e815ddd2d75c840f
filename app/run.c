#include "app/run.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app/backend_env.h"
#include "app/env_overrides.h"
#include "ckpt/ckpt_out.h"
#include "core/cpus.h"
#include "core/log.h"
#include "data/dataset.h"
#include "fsdp/agree.h"

sv_status sv_model_opts_resolve(const sv_model_opts *o, sv_vit_config *c) {
    SV_TRY(sv_vit_preset(o->model ? o->model : "vit-28", c));
#define OVR(field, v) \
    if (v) c->field = v
    OVR(img, o->img);
    OVR(patch, o->patch);
    OVR(in_chans, o->in_chans);
    OVR(num_classes, o->num_classes);
    OVR(dim, o->dim);
    OVR(depth, o->depth);
    OVR(heads, o->heads);
    OVR(mlp_ratio, o->mlp_ratio);
    OVR(layer_scale, o->layer_scale);
    OVR(reg_tokens, o->reg_tokens);
    OVR(no_embed_class, o->no_embed_class);
#undef OVR
    if (o->global_pool) SV_TRY(sv_vit_pool_parse(o->global_pool, &c->global_pool));
    if (o->class_token) {
        if (strcmp(o->class_token, "0") && strcmp(o->class_token, "1"))
            return SV_FAIL(SV_ERR_INVALID, "--class-token '%s': choose 1 or 0", o->class_token);
        c->no_class_token = o->class_token[0] == '0';
    }
    return sv_vit_config_validate(c);
}

static sv_status parse_dtype(const char *flag, const char *s, sv_dtype *out) {
    if (!strcmp(s, "fp32"))
        *out = SV_F32;
    else if (!strcmp(s, "bf16"))
        *out = SV_BF16;
    else
        return SV_FAIL(SV_ERR_INVALID, "--%s '%s' (choose fp32|bf16)", flag, s);
    return SV_OK;
}

static sv_status parse_wrap(const char *s, size_t *bytes) {
    if (!strcmp(s, "block")) {
        *bytes = 0;
        return SV_OK;
    }
    if (!strncmp(s, "auto:", 5)) {
        char *end;
        double mb = strtod(s + 5, &end);
        if (end != s + 5 && !*end && mb > 0 && mb < 1e7) {
            *bytes = (size_t)(mb * 1024 * 1024);
            return SV_OK;
        }
    }
    return SV_FAIL(SV_ERR_INVALID, "--wrap '%s' (expected block or auto:<MB>, e.g. auto:64)", s);
}

static sv_status pick_device(const char *s, sv_device_kind *out) {
    if (!strcmp(s, "cpu"))
        *out = SV_DEVICE_CPU;
    else if (!strcmp(s, "cuda"))
        *out = SV_DEVICE_CUDA;
    else if (!strcmp(s, "auto")) {
        *out = sv_backend_available(SV_DEVICE_CUDA) ? SV_DEVICE_CUDA : SV_DEVICE_CPU;
        SV_INFO("device: %s (auto: %s)", *out == SV_DEVICE_CUDA ? "cuda" : "cpu",
                *out == SV_DEVICE_CUDA ? "a CUDA device is usable" : "no usable CUDA device");
    } else
        return SV_FAIL(SV_ERR_INVALID, "--device '%s' (choose auto|cpu|cuda)", s);
    return SV_OK;
}

sv_status sv_run_resolve(const sv_run_opts *o, int world, sv_vit_config *vcfg, sv_fsdp_config *fc,
                         sv_backend_config *bc, int local_size, int *micro_batch) {
    SV_TRY(sv_model_opts_resolve(&o->model, vcfg));
    memset(fc, 0, sizeof *fc);
    SV_TRY(sv_strategy_parse(o->strategy, &fc->strategy));
    fc->shard_group = o->shard_group;
    if (fc->strategy == SV_HYBRID_SHARD && o->shard_group < 1)
        return SV_FAIL(SV_ERR_INVALID, "--strategy hybrid_shard needs --shard-group G (G divides %d)", world);
    /* only hybrid_shard has groups: the others shard over all ranks (or none), whatever G says */
    if (fc->strategy != SV_HYBRID_SHARD && o->shard_group > 0)
        return SV_FAIL(SV_ERR_INVALID,
                       "--shard-group %d applies to --strategy hybrid_shard only (this run has --strategy %s, which "
                       "does not use it): drop --shard-group, or use --strategy hybrid_shard",
                       o->shard_group, o->strategy);
    int shard_size;
    SV_TRY(sv_fsdp_shard_size(fc->strategy, fc->shard_group, world, &shard_size));
    SV_TRY(parse_dtype("reduce-dtype", o->reduce_dtype, &fc->reduce_dtype));
    if (!strcmp(o->accum_mode, "shard"))
        fc->accum_mode = SV_ACCUM_SHARD;
    else if (!strcmp(o->accum_mode, "local"))
        fc->accum_mode = SV_ACCUM_LOCAL;
    else
        return SV_FAIL(SV_ERR_INVALID, "--accum-mode '%s' (choose shard|local)", o->accum_mode);
    SV_TRY(parse_wrap(o->wrap, &fc->wrap_bytes));
    fc->head_zero_init = o->head_zero_init;
    fc->ema = o->model_ema;
    fc->seed = (uint64_t)o->seed;

    long per = (long)world * o->accum;
    if (o->batch_size % per)
        return SV_FAIL(SV_ERR_INVALID, "--batch-size %d must be divisible by world size x --accum = %ld", o->batch_size,
                       per);
    *micro_batch = (int)(o->batch_size / per);

    memset(bc, 0, sizeof *bc);
    SV_TRY(pick_device(o->device, &bc->device));
    SV_TRY(parse_dtype("param-dtype", o->param_dtype, &bc->compute_dtype));
    bc->threads = o->threads ? o->threads : sv_cpus_rank_share(local_size); /* the rank's CPUs (affinity) */
    if (bc->threads < 1) bc->threads = 1;
    sv_backend_env_apply(bc, o->cpu_gemm); /* the documented SHARDVIT_CPU_* overrides, --cpu-gemm */
    return SV_OK;
}

/* The input batch, carved after the model (counting or real arena). */
static sv_status carve_batch(sv_arena *a, const sv_vit_config *c, int B, sv_run_batch *b) {
    size_t n = (size_t)B;
    SV_TRY(sv_arena_alloc(a, n * c->in_chans * c->img * c->img * 4, 64, (void **)&b->images));
    SV_TRY(sv_arena_alloc(a, n * 4, 64, (void **)&b->labels));
    SV_TRY(sv_arena_alloc(a, n * (size_t)c->num_classes * 4, 64, (void **)&b->soft));
    return sv_arena_alloc(a, sv_eval_metrics_bytes(c->num_classes), 64, &b->metrics);
}

sv_eval_bufs sv_run_eval_bufs(const sv_run *r) {
    return (sv_eval_bufs){.images = r->batch.images, .logits32 = r->batch.soft, .metrics = r->batch.metrics};
}

sv_status sv_run_plan(const sv_vit_config *vcfg, const sv_fsdp_config *fc, const sv_backend_config *bc, int world,
                      int micro_batch, int recompute, sv_run_mem *out) {
    int shard_size;
    SV_TRY(sv_fsdp_shard_size(fc->strategy, fc->shard_group, world, &shard_size));
    sv_fsdp f;
    SV_TRY(sv_fsdp_setup_sizes(&f, fc, bc, 0, shard_size, world / shard_size, vcfg));
    sv_arena dev, host;
    sv_arena_init(&dev, "count", NULL, 0);
    sv_arena_init(&host, "count", NULL, 0);
    sv_status st = sv_fsdp_carve(&f, &dev, &host);
    size_t fsdp_bytes = dev.used;
    sv_vit m;
    if (st == SV_OK) st = sv_vit_carve(&m, vcfg, bc, micro_batch, recompute, &dev, &host);
    size_t model_end = dev.used;
    sv_run_batch b;
    if (st == SV_OK) st = carve_batch(&dev, vcfg, micro_batch, &b);
    out->fsdp = f.mem;
    out->activations = model_end - fsdp_bytes;
    out->batch = dev.used - model_end;
    out->total = dev.used;
    sv_fsdp_free(&f);
    return st;
}

void sv_run_log_plan(const sv_run_mem *m) {
    const double MiB = 1048576.0;
    SV_INFO("memory plan per rank: params %.1f MiB, grads %.1f MiB, optimizer %.1f MiB, gathered params %.1f MiB, "
            "grad buffers %.1f MiB, activations %.1f MiB, input batch %.1f MiB, total %.1f MiB (%zu bytes)",
            m->fsdp.params / MiB, m->fsdp.grads / MiB, m->fsdp.optimizer / MiB, m->fsdp.gathered / MiB,
            m->fsdp.grad_buffers / MiB, m->activations / MiB, m->batch / MiB, m->total / MiB, m->total);
    if (m->fsdp.ema) SV_INFO("memory plan per rank: of which weight EMA %.1f MiB (--model-ema)", m->fsdp.ema / MiB);
}

static sv_status setup_rest(sv_run *r, const sv_run_opts *o, const sv_fsdp_config *fc, int rank, int world,
                            int local_rank, int local_size, int init_params);

sv_status sv_run_setup(sv_run *r, const sv_run_opts *o, int rank, int world, int local_rank, int local_size) {
    memset(r, 0, sizeof *r);
    sv_vit_config vcfg;
    sv_fsdp_config fc;
    sv_backend_config bc;
    int micro;
    SV_TRY(sv_run_resolve(o, world, &vcfg, &fc, &bc, local_size, &micro));
    bc.device_index = local_rank;
    sv_backend *be;
    SV_TRY(sv_backend_create(&bc, &be));
    r->be = be; /* owned by r from here: teardown destroys it */

    sv_comm_config cc = sv_env_comm_config(o->comm_timeout);
    if (bc.device == SV_DEVICE_CUDA) {
        cc.kind = SV_COMM_KIND_NCCL;
        cc.backend_stream = sv_be_native_stream(be);
        cc.device_index = local_rank;
    }
    sv_status st = sv_comm_create_world(&cc, &r->world_comm);
    if (st != SV_OK) { /* nothing collective exists yet: the backend goes back at once */
        sv_backend_destroy(be);
        r->be = NULL;
        return st;
    }
    SV_TRY(sv_fsdp_make_comms(r->world_comm, fc.strategy, fc.shard_group, &r->shard_comm, &r->repl_comm));
    r->vcfg = vcfg;
    r->micro_batch = micro;
    return setup_rest(r, o, &fc, rank, world, local_rank, local_size, 1);
}

sv_status sv_run_setup_parts(sv_run *r, const sv_run_opts *o, int rank, int world, int local_rank, int local_size,
                             const sv_run_parts *p) {
    memset(r, 0, sizeof *r);
    r->be = p->be;
    r->world_comm = p->world;
    r->shard_comm = p->shard;
    r->repl_comm = p->repl;
    sv_fsdp_config fc;
    sv_backend_config bc;
    SV_TRY(sv_run_resolve(o, world, &r->vcfg, &fc, &bc, local_size, &r->micro_batch));
    return setup_rest(r, o, &fc, rank, world, local_rank, local_size, p->init_params);
}

/* Everything after the backend and the communicators exist (r->be, r->*_comm, r->vcfg and
 * r->micro_batch set). */
static sv_status setup_rest(sv_run *r, const sv_run_opts *o, const sv_fsdp_config *fcp, int rank, int world,
                            int local_rank, int local_size, int init_params) {
    r->rank = rank;
    r->world = world;
    r->local_rank = local_rank;
    r->local_size = local_size;
    sv_fsdp_config fc = *fcp;
    SV_TRY(sv_fsdp_setup(&r->fsdp, &fc, r->be, r->world_comm, r->shard_comm, r->repl_comm, &r->vcfg));

    /* Size the arena with a counting pass over the very code that carves it. */
    sv_arena cnt_dev, cnt_host;
    sv_arena_init(&cnt_dev, "count", NULL, 0);
    sv_arena_init(&cnt_host, "count", NULL, 0);
    SV_TRY(sv_fsdp_carve(&r->fsdp, &cnt_dev, &cnt_host));
    r->bytes_fsdp = cnt_dev.used;
    SV_TRY(sv_vit_init(&r->model, &r->vcfg, r->be, r->micro_batch, o->recompute, &cnt_dev, &cnt_host));
    r->bytes_act = cnt_dev.used - r->bytes_fsdp;
    SV_TRY(carve_batch(&cnt_dev, &r->vcfg, r->micro_batch, &r->batch));
    r->bytes_batch = cnt_dev.used - r->bytes_fsdp - r->bytes_act;
    r->bytes_total = cnt_dev.used;
    size_t dev_bytes = cnt_dev.used + 4096, host_bytes = cnt_host.used + 4096;
    sv_status ast = sv_be_alloc(r->be, dev_bytes, &r->dev_block);
    if (ast == SV_ERR_OOM) {
        char why[512];
        snprintf(why, sizeof why, "%s", sv_err_msg());
        return SV_FAIL(ast,
                       "%s: the arena of %.2f GiB per rank (micro-batch %d: activations %.2f GiB, input batch %.2f "
                       "GiB, FSDP %.2f GiB) does not fit: lower --batch-size (train, bench: or split it with "
                       "--accum; shardvit plan prints the plan)",
                       why, dev_bytes / 1073741824.0, r->micro_batch, r->bytes_act / 1073741824.0,
                       r->bytes_batch / 1073741824.0, r->bytes_fsdp / 1073741824.0);
    }
    SV_TRY(ast);
    r->host_block = calloc(1, host_bytes);
    if (!r->host_block) return SV_FAIL(SV_ERR_OOM, "host arena of %zu bytes", host_bytes);
    sv_arena_init(&r->dev, "device", r->dev_block, dev_bytes);
    sv_arena_init(&r->host, "host", r->host_block, host_bytes);
    /* Refresh the FSDP slot state before the real carve (the counting pass wrote NULLs). */
    SV_TRY(sv_fsdp_carve(&r->fsdp, &r->dev, &r->host));
    SV_TRY(sv_vit_init(&r->model, &r->vcfg, r->be, r->micro_batch, o->recompute, &r->dev, &r->host));
    SV_TRY(carve_batch(&r->dev, &r->vcfg, r->micro_batch, &r->batch));
    SV_TRY(sv_trace_init(&r->trace, o->trace ? (size_t)o->trace_events : 0, rank));
    sv_fsdp_attach(&r->fsdp, &r->model, o->trace ? &r->trace : NULL);
    if (init_params) SV_TRY(sv_fsdp_init_params(&r->fsdp));
    sv_run_mem plan = {r->fsdp.mem, r->bytes_act, r->bytes_batch, cnt_dev.used};
    sv_run_log_plan(&plan);
    SV_INFO("arena: %.1f MiB on %s (%s) per rank", dev_bytes / 1048576.0, sv_be_name(r->be), sv_be_device_name(r->be));
    SV_INFO("ranks: world %d, %d on this node (MPI_COMM_TYPE_SHARED), node-local rank %d", world, local_size,
            local_rank);
    return SV_OK;
}

sv_status sv_run_same_data(sv_run *r, const sv_dataset *ds, const char *flag, const char *spec) {
    if (r->world == 1) return SV_OK;
    int64_t id[SV_DATASET_ID_N], *all = calloc((size_t)r->world * SV_DATASET_ID_N, sizeof *all);
    sv_status st = sv_run_agree(r, all ? SV_OK : SV_FAIL(SV_ERR_OOM, "data set ids of %d ranks", r->world));
    sv_dataset_id(ds, id);
    if (st == SV_OK) st = sv_run_agreed(r, sv_fsdp_world_gather_i64(&r->fsdp, all, id, SV_DATASET_ID_N));
    if (st == SV_OK) st = sv_run_agreed(r, sv_dataset_ids_same(all, r->world, flag, spec));
    free(all);
    return st;
}

sv_status sv_run_agree(sv_run *r, sv_status st) { return sv_run_agreed(r, sv_fsdp_agree(&r->fsdp, st)); }

sv_status sv_run_agreed(sv_run *r, sv_status st) {
    if (st != SV_OK) r->failure_agreed = 1;
    return st;
}

void sv_run_trace_warn_full(const sv_trace *t, const char *path, int rank) {
    if (!t->dropped) return;
    char esc[SV_ESC_CAP];
    SV_WARN("--trace %s lacks the last %zu events of rank %d: its buffer of %zu events filled "
            "(--trace-events sets its size; bench's time split counts every event)",
            sv_log_esc(path, esc, sizeof esc), t->dropped, rank, t->cap);
}

sv_status sv_run_check_trace_parts(const char *trace, int world) {
    char part[4096];
    for (int r = 0; r < world; r++) {
        sv_trace_part_path(part, sizeof part, trace, r);
        SV_TRY(sv_ckpt_out_check_earlier(part, "--trace part", sv_trace_is_part, NULL, "trace part of a run"));
    }
    return SV_OK;
}

sv_status sv_run_finish_trace(sv_run *r, const char *path) {
    sv_run_trace_warn_full(&r->trace, path, r->rank);
    char part[4096];
    sv_trace_part_path(part, sizeof part, path, r->rank);
    /* the agreement is the barrier: every part is on disk, or every rank fails */
    SV_TRY(sv_run_agree(r, sv_trace_write_part(&r->trace, part)));
    sv_status st = sv_run_agree(r, r->rank == 0 ? sv_trace_merge(path, r->world) : SV_OK);
    sv_trace_part_done(part); /* merged and removed by rank 0 (or the merge failed) */
    return st;
}

void sv_run_teardown(sv_run *r) {
    sv_fsdp_free(&r->fsdp);
    sv_trace_free(&r->trace);
    if (r->be) sv_be_free(r->be, r->dev_block);
    free(r->host_block);
    if (r->repl_comm) sv_comm_destroy(r->repl_comm);
    if (r->shard_comm) sv_comm_destroy(r->shard_comm);
    if (r->world_comm) sv_comm_destroy(r->world_comm);
    sv_backend_destroy(r->be);
    memset(r, 0, sizeof *r);
}

sv_status sv_run_end(sv_run *r, sv_status st) {
    if (st != SV_OK) {
        sv_err_frame(__FILE__, __LINE__);
        return st;
    }
    sv_run_teardown(r);
    return SV_OK;
}
