#include "app/bench_ops.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "app/backend_env.h"
#include "app/env_overrides.h"
#include "fsdp/fsdp.h"
#include "core/log.h"
#include "core/rng.h"

/* A device buffer of n compute-dtype (or f32) values drawn from N(0, scale^2). */
static sv_status rand_buf(sv_backend *be, size_t n, int compute, uint64_t key, double scale, void **out) {
    size_t es = compute ? sv_be_compute_elem_size(be) : 4;
    float *h = malloc(n * 4), *stage = NULL;
    if (!h) return SV_FAIL(SV_ERR_OOM, "bench buffer of %zu floats", n);
    for (size_t i = 0; i < n; i++) h[i] = (float)(scale * sv_rand_normal(key, i));
    sv_status st = sv_be_alloc(be, n * es, out);
    if (st == SV_OK && compute) st = sv_be_alloc(be, n * 4, (void **)&stage);
    if (st == SV_OK) st = sv_be_upload(be, compute ? (void *)stage : *out, h, n * 4);
    if (st == SV_OK && compute) st = sv_be_f32_to_compute(be, *out, stage, n);
    if (st == SV_OK) st = sv_be_sync(be);
    if (stage) sv_be_free(be, stage);
    free(h);
    return st;
}

/* Timing of one variant of an op: best and mean seconds per call. */
typedef struct timing {
    double best, mean;
} timing;

enum { MAX_BUFS = 16 };
typedef struct op_ctx {
    sv_backend *be;
    void *b[MAX_BUFS];
    int nb;
    int B, T, D, H, Hd, K;
    size_t n;     /* the model's parameter count: adamw's length */
    size_t elems; /* gelu's length: B*T*hidden (0 for the other ops) */
} op_ctx;

static sv_status buf(op_ctx *x, size_t n, int compute, double scale, void **out) {
    if (x->nb == MAX_BUFS) return SV_FAIL(SV_ERR_INVALID, "bench: too many buffers");
    SV_TRY(rand_buf(x->be, n, compute, 1000 + (uint64_t)x->nb, scale, out));
    x->b[x->nb++] = *out;
    return SV_OK;
}

typedef sv_status (*op_fn)(op_ctx *x, int variant);

/* ---- the ops; each variant is one backend call ---- */
typedef struct op_bufs {
    void *in, *W, *bias, *out, *pre, *d_in, *d_out, *dW, *db, *saved, *scratch, *mean, *rstd, *m, *v;
    int32_t *labels;
} op_bufs;

static sv_status run_matmul(op_ctx *x, op_bufs *p, int v) {
    int M = x->B * x->T, N = x->Hd, K = x->D;
    if (v == 0) return sv_be_linear_fwd(x->be, p->out, NULL, p->in, p->W, NULL, M, N, K);
    if (v == 1) return sv_be_linear_fwd(x->be, p->out, p->pre, p->in, p->W, p->bias, M, N, K);
    return sv_be_linear_bwd(x->be, p->d_in, p->dW, NULL, p->d_out, p->in, p->W, NULL, M, N, K);
}
static sv_status run_attention(op_ctx *x, op_bufs *p, int v) {
    if (v == 0) return sv_be_attention_fwd(x->be, p->out, p->saved, p->scratch, p->in, x->B, x->T, x->D, x->H);
    return sv_be_attention_bwd(x->be, p->d_in, p->scratch, p->d_out, p->in, p->out, p->saved, x->B, x->T, x->D, x->H);
}
static sv_status run_layernorm(op_ctx *x, op_bufs *p, int v) {
    int M = x->B * x->T, C = x->D;
    if (v == 0) return sv_be_layernorm_fwd(x->be, p->out, p->mean, p->rstd, p->in, p->W, p->bias, M, C);
    return sv_be_layernorm_bwd(x->be, p->d_in, p->dW, p->db, p->d_out, p->in, p->W, p->mean, p->rstd, M, C);
}
static sv_status run_gelu(op_ctx *x, op_bufs *p, int v) {
    if (v == 0) return sv_be_gelu_fwd(x->be, p->out, p->in, x->elems);
    return sv_be_gelu_bwd(x->be, p->d_in, p->d_out, p->in, x->elems);
}
static sv_status run_xent(op_ctx *x, op_bufs *p, int v) {
    (void)v;
    return sv_be_softmax_xent(x->be, p->mean, p->d_in, p->in, p->labels, NULL, x->B, x->K, 0.1f, 1.0f / x->B);
}
static sv_status run_adamw(op_ctx *x, op_bufs *p, int v) {
    (void)v;
    sv_adamw_hparams h = {1e-4f, 0.9f, 0.999f, 1e-8f, 0.05f, 0.1f, 0.001f, 1.0f};
    return sv_be_adamw(x->be, p->out, p->d_out, p->m, p->v, x->n, &h, 0.05f);
}

typedef struct op_desc {
    const char *name;
    sv_status (*run)(op_ctx *, op_bufs *, int);
    int variants;
    const char *vname[3];
    int gemm; /* 1: report GFLOP/s, 0: GB/s */
} op_desc;

static const op_desc k_ops[] = {
    {"matmul", run_matmul, 3, {"fwd", "fwd_bias_gelu", "bwd"}, 1},
    {"attention", run_attention, 2, {"fwd", "bwd"}, 1},
    {"layernorm", run_layernorm, 2, {"fwd", "bwd"}, 0},
    {"gelu", run_gelu, 2, {"fwd", "bwd"}, 0},
    {"softmax_xent", run_xent, 1, {"fwd_bwd"}, 0},
    {"adamw", run_adamw, 1, {"step"}, 0},
};

/* FLOPs (gemm ops) or compulsory bytes (others) of one call of variant v. */
static double op_work(const op_desc *d, const op_ctx *x, int v) {
    double M = (double)x->B * x->T, es = (double)sv_be_compute_elem_size(x->be);
    if (!strcmp(d->name, "matmul")) return (v == 2 ? 4.0 : 2.0) * M * x->Hd * x->D;
    if (!strcmp(d->name, "attention")) return (v == 0 ? 4.0 : 8.0) * x->B * (double)x->T * x->T * x->D;
    if (!strcmp(d->name, "layernorm")) return (v == 0 ? 2.0 : 4.0) * M * x->D * es;
    if (!strcmp(d->name, "gelu")) return (v == 0 ? 2.0 : 3.0) * (double)x->elems * es;
    if (!strcmp(d->name, "softmax_xent")) return 2.0 * x->B * x->K * es;
    return 7.0 * 4.0 * (double)x->n; /* adamw: read p g m v, write p m v */
}

static sv_status alloc_op(const op_desc *d, op_ctx *x, op_bufs *p) {
    size_t M = (size_t)x->B * x->T, D = (size_t)x->D, Hd = (size_t)x->Hd;
    if (!strcmp(d->name, "matmul")) {
        SV_TRY(buf(x, M * D, 1, 1.0, &p->in));
        SV_TRY(buf(x, Hd * D, 1, 0.02, &p->W));
        SV_TRY(buf(x, Hd, 1, 0.02, &p->bias));
        SV_TRY(buf(x, M * Hd, 1, 1.0, &p->out));
        SV_TRY(buf(x, M * Hd, 1, 1.0, &p->pre));
        SV_TRY(buf(x, M * D, 1, 1.0, &p->d_in));
        SV_TRY(buf(x, M * Hd, 1, 1e-3, &p->d_out));
        SV_TRY(buf(x, Hd * D, 0, 0.0, &p->dW));
    } else if (!strcmp(d->name, "attention")) {
        SV_TRY(buf(x, M * 3 * D, 1, 1.0, &p->in));
        SV_TRY(buf(x, M * D, 1, 1.0, &p->out));
        SV_TRY(buf(x, M * 3 * D, 1, 1.0, &p->d_in));
        SV_TRY(buf(x, M * D, 1, 1e-3, &p->d_out));
        size_t sb = sv_be_attention_saved_bytes(x->be, x->B, x->T, x->D, x->H);
        size_t cb = sv_be_attention_scratch_bytes(x->be, x->B, x->T, x->D, x->H);
        SV_TRY(buf(x, sb / 4 + 1, 0, 0.0, &p->saved));
        SV_TRY(buf(x, cb / 4 + 1, 0, 0.0, &p->scratch));
    } else if (!strcmp(d->name, "layernorm")) {
        SV_TRY(buf(x, M * D, 1, 1.0, &p->in));
        SV_TRY(buf(x, D, 1, 1.0, &p->W));
        SV_TRY(buf(x, D, 1, 0.1, &p->bias));
        SV_TRY(buf(x, M * D, 1, 1.0, &p->out));
        SV_TRY(buf(x, M, 0, 0.0, &p->mean));
        SV_TRY(buf(x, M, 0, 0.0, &p->rstd));
        SV_TRY(buf(x, M * D, 1, 0.0, &p->d_in));
        SV_TRY(buf(x, M * D, 1, 1e-3, &p->d_out));
        SV_TRY(buf(x, D, 0, 0.0, &p->dW));
        SV_TRY(buf(x, D, 0, 0.0, &p->db));
    } else if (!strcmp(d->name, "gelu")) {
        x->elems = M * Hd; /* x->n stays the model's parameter count (the result's "params") */
        SV_TRY(buf(x, x->elems, 1, 1.0, &p->in));
        SV_TRY(buf(x, x->elems, 1, 1.0, &p->out));
        SV_TRY(buf(x, x->elems, 1, 1.0, &p->d_in));
        SV_TRY(buf(x, x->elems, 1, 1e-3, &p->d_out));
    } else if (!strcmp(d->name, "softmax_xent")) {
        SV_TRY(buf(x, (size_t)x->B * x->K, 1, 1.0, &p->in));
        SV_TRY(buf(x, (size_t)x->B * x->K, 1, 0.0, &p->d_in));
        SV_TRY(buf(x, (size_t)x->B, 0, 0.0, &p->mean));
        int32_t *h = malloc((size_t)x->B * 4);
        if (!h) return SV_FAIL(SV_ERR_OOM, "labels");
        for (int i = 0; i < x->B; i++) h[i] = (int32_t)(sv_rand_u64(5, (uint64_t)i) % (uint64_t)x->K);
        void *dl;
        sv_status st = buf(x, (size_t)x->B, 0, 0.0, &dl);
        if (st == SV_OK) st = sv_be_upload(x->be, dl, h, (size_t)x->B * 4);
        free(h);
        SV_TRY(st);
        p->labels = dl;
    } else {
        SV_TRY(buf(x, x->n, 0, 0.02, &p->out));
        SV_TRY(buf(x, x->n, 0, 1e-3, &p->d_out));
        SV_TRY(buf(x, x->n, 0, 0.0, &p->m));
        SV_TRY(buf(x, x->n, 0, 0.0, &p->v));
    }
    return SV_OK;
}

sv_status sv_bench_op(const char *op, const sv_vit_config *c, int micro_batch, int threads, const char *dtype,
                      const char *device, const char *cpu_gemm, int iters, int warmup, sv_json_writer *w) {
    const op_desc *d = NULL;
    for (size_t i = 0; i < sizeof k_ops / sizeof k_ops[0]; i++)
        if (!strcmp(op, k_ops[i].name)) d = &k_ops[i];
    if (!d) return SV_FAIL(SV_ERR_INVALID, "--op '%s' (choose matmul|attention|layernorm|gelu|softmax_xent|adamw)", op);
    sv_backend_config bc = {.threads = threads};
    if (!strcmp(dtype, "fp32"))
        bc.compute_dtype = SV_F32;
    else if (!strcmp(dtype, "bf16"))
        bc.compute_dtype = SV_BF16;
    else
        return SV_FAIL(SV_ERR_INVALID, "--param-dtype '%s' (choose fp32|bf16)", dtype);
    if (!strcmp(device, "cpu"))
        bc.device = SV_DEVICE_CPU;
    else if (!strcmp(device, "cuda"))
        bc.device = SV_DEVICE_CUDA;
    else if (!strcmp(device, "auto"))
        bc.device = sv_backend_available(SV_DEVICE_CUDA) ? SV_DEVICE_CUDA : SV_DEVICE_CPU;
    else
        return SV_FAIL(SV_ERR_INVALID, "--device '%s' (choose auto|cpu|cuda)", device);
    sv_backend_env_apply(&bc, cpu_gemm); /* --cpu-gemm / SHARDVIT_CPU_GEMM: A/B runs of one op */
    op_ctx x = {0};
    SV_TRY(sv_backend_create(&bc, &x.be));
    x.B = micro_batch;
    x.T = sv_vit_tokens(c);
    x.D = c->dim;
    x.H = c->heads;
    x.Hd = sv_vit_hidden(c);
    x.K = c->num_classes;
    x.n = sv_vit_param_count(c);
    op_bufs p = {0};
    timing t[3];
    sv_status st = alloc_op(d, &x, &p);
    for (int v = 0; st == SV_OK && v < d->variants; v++) {
        for (int i = 0; st == SV_OK && i < warmup; i++) st = d->run(&x, &p, v);
        if (st == SV_OK) st = sv_be_sync(x.be);
        double best = INFINITY, sum = 0;
        for (int i = 0; st == SV_OK && i < iters; i++) {
            double t0 = sv_now_s();
            st = d->run(&x, &p, v);
            if (st == SV_OK) st = sv_be_sync(x.be);
            double dt = sv_now_s() - t0;
            sum += dt;
            if (dt < best) best = dt;
        }
        t[v].best = best;
        t[v].mean = sum / (iters > 0 ? iters : 1);
    }
    if (st == SV_OK) {
        sv_json_obj_begin(w);
        sv_json_key(w, "mode"), sv_json_str(w, "op");
        sv_json_key(w, "op"), sv_json_str(w, d->name);
        sv_json_key(w, "model"), sv_json_str(w, c->name);
        sv_json_key(w, "device"), sv_json_str(w, sv_be_device_name(x.be));
        sv_json_key(w, "param_dtype"), sv_json_str(w, dtype);
        sv_json_key(w, "threads"), sv_json_i64(w, threads);
        sv_json_key(w, "micro_batch"), sv_json_i64(w, x.B);
        sv_json_key(w, "tokens"), sv_json_i64(w, x.T);
        sv_json_key(w, "dim"), sv_json_i64(w, x.D);
        sv_json_key(w, "heads"), sv_json_i64(w, x.H);
        sv_json_key(w, "hidden"), sv_json_i64(w, x.Hd);
        sv_json_key(w, "params"), sv_json_u64(w, (uint64_t)x.n);
        if (x.elems) sv_json_key(w, "elements"), sv_json_u64(w, (uint64_t)x.elems);
        sv_json_key(w, "num_classes"), sv_json_i64(w, x.K);
        sv_json_key(w, "iters"), sv_json_i64(w, iters);
        sv_json_key(w, "unit"), sv_json_str(w, d->gemm ? "GFLOP/s" : "GB/s");
        sv_json_key(w, "results");
        sv_json_arr_begin(w);
        for (int v = 0; v < d->variants; v++) {
            double work = op_work(d, &x, v);
            sv_json_obj_begin(w);
            sv_json_key(w, "variant"), sv_json_str(w, d->vname[v]);
            sv_json_key(w, "best_s"), sv_json_f64(w, t[v].best);
            sv_json_key(w, "mean_s"), sv_json_f64(w, t[v].mean);
            sv_json_key(w, d->gemm ? "flops" : "bytes"), sv_json_f64(w, work);
            sv_json_key(w, "rate_best"), sv_json_f64(w, work / t[v].best / 1e9);
            sv_json_obj_end(w);
            fprintf(stderr, "bench op %s %s (B=%d T=%d D=%d H=%d hidden=%d): best %.3f ms, mean %.3f ms, %.1f %s\n",
                    d->name, d->vname[v], x.B, x.T, x.D, x.H, x.Hd, 1e3 * t[v].best, 1e3 * t[v].mean,
                    work / t[v].best / 1e9, d->gemm ? "GFLOP/s" : "GB/s");
        }
        sv_json_arr_end(w);
        sv_json_obj_end(w);
    }
    for (int i = 0; i < x.nb; i++) sv_be_free(x.be, x.b[i]);
    sv_backend_destroy(x.be);
    return st;
}

/* ---- collectives ---- */

/* The collectives timed, in output order, with nccl-tests' bus-bandwidth factors for a group of n:
 * all_gather / reduce_scatter (n-1)/n, all_reduce 2(n-1)/n, broadcast 1; 0 for every collective
 * of a one-rank group (no bus: nothing leaves the rank). */
enum { C_ALL_GATHER, C_REDUCE_SCATTER, C_ALL_REDUCE, C_BROADCAST, C_N };
static const char *const k_coll[C_N] = {"all_gather", "reduce_scatter", "all_reduce", "broadcast"};

double sv_bench_busbw_factor(const char *collective, int n) {
    if (n < 2) return 0; /* a one-rank group moves nothing between ranks, broadcast included */
    if (!strcmp(collective, "all_reduce")) return 2.0 * (n - 1) / n;
    if (!strcmp(collective, "broadcast")) return 1.0;
    return (double)(n - 1) / n; /* all_gather, reduce_scatter */
}

/* Mean seconds per collective on the slowest rank of the world (every group runs at once).
 * count: per-rank elements for all_gather / reduce_scatter, the whole buffer otherwise. */
static sv_status time_coll(sv_comm *cm, sv_comm *world, int kind, void *recv, void *send, size_t count, int iters,
                           double *t) {
    SV_TRY(sv_comm_barrier_sync(world));
    double t0 = sv_now_s();
    for (int i = 0; i < iters; i++) {
        sv_comm_req q;
        if (kind == C_REDUCE_SCATTER)
            SV_TRY(sv_comm_reduce_scatter(cm, recv, send, count, SV_COMM_F32, SV_COMM_SUM, &q));
        else if (kind == C_ALL_GATHER)
            SV_TRY(sv_comm_all_gather(cm, recv, send, count, SV_COMM_F32, &q));
        else if (kind == C_ALL_REDUCE)
            SV_TRY(sv_comm_all_reduce(cm, recv, count, SV_COMM_F32, SV_COMM_SUM, &q));
        else
            SV_TRY(sv_comm_broadcast(cm, recv, count, SV_COMM_F32, 0, &q));
        SV_TRY(sv_comm_wait(cm, &q));
    }
    double dt = (sv_now_s() - t0) / iters;
    SV_TRY(sv_comm_all_reduce_sync(world, &dt, 1, SV_COMM_F64, SV_COMM_MAX));
    *t = dt;
    return SV_OK;
}

/* --comm-group: world | intra | inter | intra:G | inter:G | G (= intra:G). *G = 0: the world. */
static sv_status parse_group(const char *g, const sv_proc *p, int *intra, int *G) {
    *intra = 1;
    *G = 0;
    if (!g || !strcmp(g, "world")) return SV_OK;
    const char *num = g;
    if (!strncmp(g, "intra", 5) || !strncmp(g, "inter", 5)) {
        *intra = !strncmp(g, "intra", 5);
        num = g[5] == ':' ? g + 6 : g[5] ? NULL : "";
    }
    char *end = NULL;
    long v = num && *num ? strtol(num, &end, 10) : 0;
    if (!num || (*num && (*end || v < 1)))
        return SV_FAIL(SV_ERR_INVALID,
                       "--comm-group '%s' (choose world | intra | inter | intra:G | inter:G | G, G a group size)", g);
    *G = *num ? (int)v : (p->local_size > 0 ? p->local_size : 1);
    if (p->world % *G)
        return SV_FAIL(SV_ERR_INVALID, "--comm-group '%s': group size %d must divide the world size %d", g, *G,
                       p->world);
    return SV_OK;
}

sv_status sv_bench_comm(const sv_run_opts *ro, const sv_proc *p, int threads, const char *min_s, const char *max_s,
                        const char *group, sv_json_writer *w) {
    long long lo = sv_parse_bytes(min_s), hi = sv_parse_bytes(max_s);
    if (lo < 4) return SV_FAIL(SV_ERR_INVALID, "--comm-min '%s' (a size such as 64K, at least 4 bytes)", min_s);
    if (hi < lo) return SV_FAIL(SV_ERR_INVALID, "--comm-max '%s' (a size such as 64M, >= --comm-min)", max_s);
    int intra, G;
    SV_TRY(parse_group(group, p, &intra, &G));
    sv_backend_config bc = {.threads = threads, .compute_dtype = SV_F32, .device_index = p->local_rank};
    bc.device = !strcmp(ro->device, "cuda") || (!strcmp(ro->device, "auto") && sv_backend_available(SV_DEVICE_CUDA))
        ? SV_DEVICE_CUDA
        : SV_DEVICE_CPU;
    sv_backend *be;
    SV_TRY(sv_backend_create(&bc, &be));
    sv_comm_config cc = sv_env_comm_config(ro->comm_timeout);
    if (bc.device == SV_DEVICE_CUDA) {
        cc.kind = SV_COMM_KIND_NCCL;
        cc.backend_stream = sv_be_native_stream(be);
        cc.device_index = p->local_rank;
    }
    sv_comm *world = NULL, *shard = NULL, *repl = NULL, *cm = NULL;
    void *a = NULL, *b = NULL;
    sv_status st = sv_comm_create_world(&cc, &world);
    /* the groups hybrid_shard forms: consecutive ranks (intra), and across them (inter) */
    if (st == SV_OK && G > 0) st = sv_fsdp_make_comms(world, SV_HYBRID_SHARD, G, &shard, &repl);
    cm = G > 0 ? (intra ? shard : repl) : world;
    int n = st == SV_OK ? sv_comm_size(cm) : 1;
    size_t cap = (size_t)hi + 4 * (size_t)n;
    if (st == SV_OK) st = sv_be_alloc(be, cap, &a);
    if (st == SV_OK) st = sv_be_alloc(be, cap, &b);
    if (st == SV_OK) st = sv_be_zero(be, a, cap);
    if (st == SV_OK) st = sv_be_zero(be, b, cap);
    if (st == SV_OK) {
        sv_json_obj_begin(w);
        sv_json_key(w, "mode"), sv_json_str(w, "comm");
        sv_json_key(w, "world"), sv_json_i64(w, p->world);
        sv_json_key(w, "comm"), sv_json_str(w, sv_comm_name(cm));
        sv_json_key(w, "group"), sv_json_str(w, G == 0 ? "world" : intra ? "intra" : "inter");
        sv_json_key(w, "group_size"), sv_json_i64(w, n);
        sv_json_key(w, "groups"), sv_json_i64(w, p->world / n);
        sv_json_key(w, "dtype"), sv_json_str(w, "f32");
        sv_json_key(w, "results");
        sv_json_arr_begin(w);
        if (p->rank == 0)
            fprintf(stderr, "group %s of %d ranks (%d groups)\n%14s %12s %12s %12s %10s %10s\n",
                    G == 0      ? "world"
                        : intra ? "intra"
                                : "inter",
                    n, p->world / n, "collective", "size(B)", "count/rank", "time(us)", "algbw GB/s", "busbw GB/s");
    }
    for (size_t size = (size_t)lo; st == SV_OK && size <= (size_t)hi; size *= 4) {
        for (int k = 0; st == SV_OK && k < C_N; k++) {
            /* all_gather / reduce_scatter: `count` per rank, n x count in all; else the whole buffer */
            int per_rank = k == C_ALL_GATHER || k == C_REDUCE_SCATTER;
            size_t count = per_rank ? size / 4 / (size_t)n : size / 4;
            if (count == 0) continue;
            size_t full = count * 4 * (per_rank ? (size_t)n : 1);
            int iters = (int)((256u << 20) / full);
            iters = iters < 3 ? 3 : iters > 100 ? 100 : iters;
            void *recv = k == C_REDUCE_SCATTER ? b : a, *send = k == C_REDUCE_SCATTER ? a : b;
            double t;
            st = time_coll(cm, world, k, recv, send, count, 1, &t); /* warm-up */
            if (st == SV_OK) st = time_coll(cm, world, k, recv, send, count, iters, &t);
            if (st != SV_OK) break;
            double factor = sv_bench_busbw_factor(k_coll[k], n);
            double alg = (double)full / t / 1e9, bus = alg * factor;
            sv_json_obj_begin(w);
            sv_json_key(w, "op"), sv_json_str(w, k_coll[k]);
            sv_json_key(w, "size_bytes"), sv_json_u64(w, full);
            sv_json_key(w, "count_per_rank"), sv_json_u64(w, count);
            sv_json_key(w, "iters"), sv_json_i64(w, iters);
            sv_json_key(w, "time_us"), sv_json_f64(w, t * 1e6);
            sv_json_key(w, "algbw_gbps"), sv_json_f64(w, alg);
            sv_json_key(w, "busbw_factor"), sv_json_f64(w, factor);
            sv_json_key(w, "busbw_gbps"), sv_json_f64(w, bus);
            sv_json_obj_end(w);
            if (p->rank == 0)
                fprintf(stderr, "%14s %12zu %12zu %12.1f %10.3f %10.3f\n", k_coll[k], full, count, t * 1e6, alg, bus);
        }
    }
    if (st == SV_OK) {
        sv_json_arr_end(w);
        sv_json_obj_end(w);
    }
    if (a) sv_be_free(be, a);
    if (b) sv_be_free(be, b);
    if (shard) sv_comm_destroy(shard);
    if (repl) sv_comm_destroy(repl);
    if (world) sv_comm_destroy(world);
    sv_backend_destroy(be);
    return st;
}
