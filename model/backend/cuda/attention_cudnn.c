/* CUDA backend: attention. cuDNN fused SDPA (non-causal) through the cuDNN backend graph C API,
 * with the plain kernels of attention_fallback.cu where cuDNN is not used.
 *
 * Graph: one SDPA_FWD operation (Q, K, V -> O, Stats; attention scale passed by value) and one
 * SDPA_BWD operation (Q, K, V, O, dO, Stats -> dQ, dK, dV). Q/K/V are read in place from the
 * packed qkv (B,T,3D) buffer through strides: logical dims [B, H, T, dh] with strides
 * [T*3D, dh, 3D, 1] (K and V start D and 2D elements further); O/dO are [B,H,T,dh] with strides
 * [T*D, dh, D, 1]; Stats [B,H,T,1] f32 = natural-log log-sum-exp of each scaled score row.
 *
 * Planning happens on the first call for a (B,T,D,H) shape (warm-up step): operation graph,
 * heuristics (mode A), first engine config whose execution plan finalises. When cuDNN refuses
 * a direction (fp32 compute, head dim not a multiple of 8, an engine missing for the shape or
 * this cuDNN version), that direction runs the fallback kernels instead; the refusal is logged
 * once per shape. Both paths save the same statistics, so a cuDNN forward pairs with a
 * fallback backward. cfg->attn_fallback forces the kernels for both.
 *
 * Attention-probability dropout (a non-NULL sv_drop, backend.h sv_be_attention_fwd_drop):
 * both directions of such a call run the fallback kernels, whatever cuDNN would accept. cuDNN
 * SDPA's own dropout draws its mask from its own Philox generator (seed and offset tensors),
 * which cannot reproduce our mask sv_drop_mult(key, sample, (h T + i) T + j, keep): that mask is
 * what makes the backward, activation recompute, the CPU backend and every world size agree.
 * The pairing is therefore always fallback forward -> fallback backward: the forward saves the
 * softmax log-sum-exp and writes O = (P M) v, which is exactly what the fallback backward with
 * the same mask consumes (a cuDNN forward could not have produced that O). Calls without a
 * mask (evaluation, rate 0) take the paths above unchanged. */
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "core/log.h"
#include "model/backend/cuda/cuda_backend.h"

enum { UID_Q = 1, UID_K, UID_V, UID_O, UID_STATS, UID_SCALE, UID_DO, UID_DQ, UID_DK, UID_DV };

/* ---- descriptor helpers: every descriptor goes into a list that its owner frees ---- */
typedef sv_cuda_desc_list desc_list;

static void list_free(desc_list *l) {
    while (l->n > 0) cudnnBackendDestroyDescriptor(l->d[--l->n]);
}

static void plan_drop(cudnnBackendDescriptor_t *plan, desc_list *keep) {
    if (*plan) cudnnBackendDestroyDescriptor(*plan);
    *plan = NULL;
    list_free(keep);
}

sv_status sv_cuda_attn_init(sv_cuda_backend *cb) {
    memset(cb->attn, 0, sizeof cb->attn);
    if (cb->base.cfg.attn_fallback || !cb->bf16) return SV_OK; /* cuDNN never used */
    cudnnStatus_t st = cudnnCreate(&cb->dnn);
    if (st != CUDNN_STATUS_SUCCESS) {
        SV_WARN("cuDNN unavailable (%s); attention uses the fallback kernels", cudnnGetErrorString(st));
        cb->dnn = NULL;
        return SV_OK;
    }
    SV_CUDNN_TRY(cudnnSetStream(cb->dnn, cb->stream));
    return SV_OK;
}

void sv_cuda_attn_free(sv_cuda_backend *cb) {
    for (int i = 0; i < SV_CUDA_ATTN_PLANS; i++) {
        plan_drop(&cb->attn[i].fwd, &cb->attn[i].fwd_keep);
        plan_drop(&cb->attn[i].bwd, &cb->attn[i].bwd_keep);
    }
    memset(cb->attn, 0, sizeof cb->attn);
    cudaFree(cb->dnn_ws);
    cb->dnn_ws = NULL;
    cb->dnn_ws_bytes = 0;
    if (cb->dnn) cudnnDestroy(cb->dnn);
    cb->dnn = NULL;
}

static sv_status make_desc(desc_list *l, cudnnBackendDescriptorType_t type, cudnnBackendDescriptor_t *out) {
    SV_ASSERT(l->n < (int)(sizeof l->d / sizeof l->d[0]));
    SV_CUDNN_TRY(cudnnBackendCreateDescriptor(type, out));
    l->d[l->n++] = *out;
    return SV_OK;
}

static sv_status set_desc(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t a, cudnnBackendDescriptor_t v) {
    SV_CUDNN_TRY(cudnnBackendSetAttribute(d, a, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &v));
    return SV_OK;
}

static sv_status tensor(desc_list *l, cudnnBackendDescriptor_t *out, int64_t uid, cudnnDataType_t dt,
                        const int64_t dims[4], const int64_t strides[4], bool by_value) {
    cudnnBackendDescriptor_t t;
    SV_TRY(make_desc(l, CUDNN_BACKEND_TENSOR_DESCRIPTOR, &t));
    int64_t align = by_value ? 4 : 16;
    SV_CUDNN_TRY(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt));
    SV_CUDNN_TRY(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims));
    SV_CUDNN_TRY(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides));
    SV_CUDNN_TRY(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid));
    SV_CUDNN_TRY(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align));
    if (by_value)
        SV_CUDNN_TRY(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &by_value));
    SV_CUDNN_TRY(cudnnBackendFinalize(t));
    *out = t;
    return SV_OK;
}

/* The tensors of one attention shape. */
typedef struct attn_tensors {
    cudnnBackendDescriptor_t q, k, v, o, stats, scale, dO, dq, dk, dv;
} attn_tensors;

static sv_status make_tensors(desc_list *l, attn_tensors *t, int B, int T, int D, int H, int bwd) {
    int64_t dh = D / H;
    int64_t dims[4] = {B, H, T, dh};
    int64_t s_qkv[4] = {(int64_t)T * 3 * D, dh, 3 * (int64_t)D, 1};
    int64_t s_o[4] = {(int64_t)T * D, dh, D, 1};
    int64_t d_st[4] = {B, H, T, 1}, s_st[4] = {(int64_t)H * T, T, 1, 1};
    int64_t one[4] = {1, 1, 1, 1};
    cudnnDataType_t bf = CUDNN_DATA_BFLOAT16, f32 = CUDNN_DATA_FLOAT;
    SV_TRY(tensor(l, &t->q, UID_Q, bf, dims, s_qkv, false));
    SV_TRY(tensor(l, &t->k, UID_K, bf, dims, s_qkv, false));
    SV_TRY(tensor(l, &t->v, UID_V, bf, dims, s_qkv, false));
    SV_TRY(tensor(l, &t->o, UID_O, bf, dims, s_o, false));
    SV_TRY(tensor(l, &t->stats, UID_STATS, f32, d_st, s_st, false));
    SV_TRY(tensor(l, &t->scale, UID_SCALE, f32, one, one, true));
    if (bwd) {
        SV_TRY(tensor(l, &t->dO, UID_DO, bf, dims, s_o, false));
        SV_TRY(tensor(l, &t->dq, UID_DQ, bf, dims, s_qkv, false));
        SV_TRY(tensor(l, &t->dk, UID_DK, bf, dims, s_qkv, false));
        SV_TRY(tensor(l, &t->dv, UID_DV, bf, dims, s_qkv, false));
    }
    return SV_OK;
}

/* Operation graph -> heuristics -> first execution plan that finalises. The plan itself is not
 * in the list; the caller keeps the list alive as long as the plan. */
static sv_status finish_plan(sv_cuda_backend *cb, desc_list *l, cudnnBackendDescriptor_t op,
                             cudnnBackendDescriptor_t *plan_out, int64_t *ws_out) {
    cudnnBackendDescriptor_t graph, heur;
    SV_TRY(make_desc(l, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &graph));
    SV_CUDNN_TRY(cudnnBackendSetAttribute(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &op));
    SV_CUDNN_TRY(cudnnBackendSetAttribute(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &cb->dnn));
    SV_CUDNN_TRY(cudnnBackendFinalize(graph));
    SV_TRY(make_desc(l, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, &heur));
    SV_TRY(set_desc(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph));
    cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
    SV_CUDNN_TRY(cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode));
    SV_CUDNN_TRY(cudnnBackendFinalize(heur));
    int64_t count = 0;
    SV_CUDNN_TRY(
        cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, NULL));
    if (count <= 0) return SV_FAIL(SV_ERR_UNSUPPORTED, "cuDNN heuristics returned no engine for this graph");
    enum { MAX_CFG = 8 };
    cudnnBackendDescriptor_t cfgs[MAX_CFG];
    if (count > MAX_CFG) count = MAX_CFG;
    for (int64_t i = 0; i < count; i++) SV_TRY(make_desc(l, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &cfgs[i]));
    int64_t got = 0;
    SV_CUDNN_TRY(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, count,
                                          &got, cfgs));
    cudnnStatus_t last = CUDNN_STATUS_NOT_SUPPORTED;
    for (int64_t i = 0; i < got; i++) {
        cudnnBackendDescriptor_t plan;
        SV_CUDNN_TRY(cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan));
        last = cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                        &cfgs[i]);
        if (last == CUDNN_STATUS_SUCCESS)
            last = cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &cb->dnn);
        if (last == CUDNN_STATUS_SUCCESS) last = cudnnBackendFinalize(plan);
        int64_t ws = 0;
        if (last == CUDNN_STATUS_SUCCESS)
            last = cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, NULL,
                                            &ws);
        if (last == CUDNN_STATUS_SUCCESS) {
            *plan_out = plan;
            *ws_out = ws;
            return SV_OK;
        }
        cudnnBackendDestroyDescriptor(plan);
    }
    return sv_cuda_cudnn_fail(last, "execution plan finalisation (every engine config refused)", __FILE__, __LINE__);
}

/* One attribute of an SDPA operation and the tensor it names. */
typedef struct op_attr {
    cudnnBackendAttributeName_t attr;
    cudnnBackendDescriptor_t desc;
} op_attr;

/* The plan of one direction (bwd: 0 forward, 1 backward) for p's shape: the SDPA operation over
 * the shape's tensors, then finish_plan. On success the plan, its workspace bytes and the
 * descriptors it needs are stored in p (fwd, fwd_ws, fwd_keep or the bwd ones); on failure
 * nothing is kept (every descriptor made here is destroyed). */
static sv_status build_dir(sv_cuda_backend *cb, sv_cuda_attn_plan *p, int bwd) {
    desc_list l = {.n = 0};
    attn_tensors t = {0}; /* the backward's tensors stay NULL for the forward */
    cudnnBackendDescriptor_t op;
    sv_status st = make_tensors(&l, &t, p->B, p->T, p->D, p->H, bwd);
    const op_attr fwd_attrs[] = {
        {CUDNN_ATTR_OPERATION_SDPA_FWD_QDESC, t.q},         {CUDNN_ATTR_OPERATION_SDPA_FWD_KDESC, t.k},
        {CUDNN_ATTR_OPERATION_SDPA_FWD_VDESC, t.v},         {CUDNN_ATTR_OPERATION_SDPA_FWD_ODESC, t.o},
        {CUDNN_ATTR_OPERATION_SDPA_FWD_STATSDESC, t.stats}, {CUDNN_ATTR_OPERATION_SDPA_FWD_SCALEDESC, t.scale},
    };
    const op_attr bwd_attrs[] = {
        {CUDNN_ATTR_OPERATION_SDPA_BWD_QDESC, t.q},         {CUDNN_ATTR_OPERATION_SDPA_BWD_KDESC, t.k},
        {CUDNN_ATTR_OPERATION_SDPA_BWD_VDESC, t.v},         {CUDNN_ATTR_OPERATION_SDPA_BWD_ODESC, t.o},
        {CUDNN_ATTR_OPERATION_SDPA_BWD_STATSDESC, t.stats}, {CUDNN_ATTR_OPERATION_SDPA_BWD_SCALEDESC, t.scale},
        {CUDNN_ATTR_OPERATION_SDPA_BWD_DODDESC, t.dO},      {CUDNN_ATTR_OPERATION_SDPA_BWD_DQDESC, t.dq},
        {CUDNN_ATTR_OPERATION_SDPA_BWD_DKDESC, t.dk},       {CUDNN_ATTR_OPERATION_SDPA_BWD_DVDESC, t.dv},
    };
    const op_attr *attrs = bwd ? bwd_attrs : fwd_attrs;
    const size_t n_attrs = bwd ? sizeof bwd_attrs / sizeof bwd_attrs[0] : sizeof fwd_attrs / sizeof fwd_attrs[0];
    if (st == SV_OK)
        st = make_desc(
            &l, bwd ? CUDNN_BACKEND_OPERATION_SDPA_BWD_DESCRIPTOR : CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR, &op);
    for (size_t i = 0; i < n_attrs && st == SV_OK; i++) st = set_desc(op, attrs[i].attr, attrs[i].desc);
    if (st == SV_OK && cudnnBackendFinalize(op) != CUDNN_STATUS_SUCCESS)
        st = SV_FAIL(SV_ERR_UNSUPPORTED, "cuDNN refused the SDPA %s operation", bwd ? "backward" : "forward");
    if (st == SV_OK) st = finish_plan(cb, &l, op, bwd ? &p->bwd : &p->fwd, bwd ? &p->bwd_ws : &p->fwd_ws);
    if (st == SV_OK)
        *(bwd ? &p->bwd_keep : &p->fwd_keep) = l;
    else
        list_free(&l);
    return st;
}

static sv_status reserve_ws(sv_cuda_backend *cb, int64_t bytes) {
    if ((size_t)bytes <= cb->dnn_ws_bytes) return SV_OK;
    SV_CUDA_TRY(cudaStreamSynchronize(cb->stream));
    cudaFree(cb->dnn_ws);
    cb->dnn_ws = NULL;
    cb->dnn_ws_bytes = 0;
    cudaError_t e = cudaMalloc(&cb->dnn_ws, (size_t)bytes);
    if (e != cudaSuccess)
        return SV_FAIL(SV_ERR_OOM, "cuDNN attention workspace of %lld bytes: %s", (long long)bytes,
                       cudaGetErrorString(e));
    cb->dnn_ws_bytes = (size_t)bytes;
    return SV_OK;
}

/* The plan for a shape, building it on first use. Returns NULL plans (fallback) when cuDNN is
 * off or refuses; fails only on real errors (out of memory). */
static sv_status plan_for(sv_cuda_backend *cb, int B, int T, int D, int H, sv_cuda_attn_plan **out) {
    static const sv_cuda_attn_plan none = {0};
    *out = (sv_cuda_attn_plan *)&none;
    if (!cb->dnn || (D / H) % 8 != 0) return SV_OK;
    sv_cuda_attn_plan *slot = NULL;
    for (int i = 0; i < SV_CUDA_ATTN_PLANS; i++) {
        sv_cuda_attn_plan *p = &cb->attn[i];
        if (p->used && p->B == B && p->T == T && p->D == D && p->H == H) {
            *out = p;
            return SV_OK;
        }
        if (!p->used && !slot) slot = p;
    }
    if (!slot) return SV_OK; /* more shapes than slots: extra shapes take the fallback */
    memset(slot, 0, sizeof *slot);
    slot->B = B, slot->T = T, slot->D = D, slot->H = H, slot->used = 1;
    for (int bwd = 0; bwd < 2; bwd++)
        if (build_dir(cb, slot, bwd) != SV_OK) {
            SV_WARN("cuDNN SDPA %s unavailable for B=%d T=%d D=%d H=%d, using the fallback kernel: %s",
                    bwd ? "backward" : "forward", B, T, D, H, sv_err_msg());
            sv_err_clear();
        }
    int64_t ws = slot->fwd_ws > slot->bwd_ws ? slot->fwd_ws : slot->bwd_ws;
    SV_TRY(reserve_ws(cb, ws));
    *out = slot;
    return SV_OK;
}

/* The tensors were declared 16-byte aligned; a less aligned buffer takes the kernels. */
static int aligned16(const void *a, const void *b, const void *c, const void *d) {
    return (((uintptr_t)a | (uintptr_t)b | (uintptr_t)c | (uintptr_t)d) & 15u) == 0;
}

static sv_status execute(sv_cuda_backend *cb, cudnnBackendDescriptor_t plan, int n, int64_t *uids, void **ptrs) {
    cudnnBackendDescriptor_t vp;
    SV_CUDNN_TRY(cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &vp));
    cudnnStatus_t st = cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, n, uids);
    if (st == CUDNN_STATUS_SUCCESS)
        st = cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, n, ptrs);
    if (st == CUDNN_STATUS_SUCCESS)
        st = cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &cb->dnn_ws);
    if (st == CUDNN_STATUS_SUCCESS) st = cudnnBackendFinalize(vp);
    if (st == CUDNN_STATUS_SUCCESS) st = cudnnBackendExecute(cb->dnn, plan, vp);
    cudnnBackendDestroyDescriptor(vp);
    if (st != CUDNN_STATUS_SUCCESS) return sv_cuda_cudnn_fail(st, "cudnnBackendExecute (SDPA)", __FILE__, __LINE__);
    return SV_OK;
}

/* The fallback kernels' dropout arguments: drop's mask, or keep 1 (plain kernels) for NULL. */
static float drop_keep(const sv_drop *drop) { return drop ? drop->keep : 1.0f; }
static uint64_t drop_key(const sv_drop *drop) { return drop ? drop->key : 0; }
static uint64_t drop_sample0(const sv_drop *drop) { return drop ? drop->sample0 : 0; }

/* Say once per backend that the masked attention runs the slower fallback kernels. */
static void note_drop_route(sv_cuda_backend *cb) {
    if (cb->attn_drop_noted || !cb->dnn) return;
    cb->attn_drop_noted = 1;
    SV_INFO("attention dropout: training attention runs the plain CUDA kernels (cuDNN SDPA's dropout draws "
            "another mask); evaluation keeps cuDNN");
}

static sv_status fallback_fwd(sv_cuda_backend *cb, void *out, void *saved, const void *qkv, int B, int T, int D, int H,
                              const sv_drop *drop) {
    return sv_cuda_launch_check(sv_cuk_attn_fwd(cb->stream, cb->bf16, out, saved, qkv, B, T, D, H, drop_key(drop),
                                                drop_sample0(drop), drop_keep(drop)),
                                "attention forward (fallback)");
}

static sv_status fallback_bwd(sv_cuda_backend *cb, void *d_qkv, void *scratch, const void *d_out, const void *qkv,
                              const void *out, const void *saved, int B, int T, int D, int H, const sv_drop *drop) {
    return sv_cuda_launch_check(sv_cuk_attn_bwd(cb->stream, cb->bf16, d_qkv, d_out, qkv, out, saved, scratch, B, T, D,
                                                H, drop_key(drop), drop_sample0(drop), drop_keep(drop)),
                                "attention backward (fallback)");
}

sv_status sv_cuda_attention_fwd(sv_backend *be, void *out, void *saved, void *scratch, const void *qkv, int B, int T,
                                int D, int H, const sv_drop *drop) {
    sv_cuda_backend *cb = sv_cuda_be(be);
    (void)scratch;
    sv_cuda_attn_plan *p;
    /* Planned with or without a mask: the shape's cuDNN plans and workspace are then made in the
     * first training step as before (evaluation, without a mask, runs them). */
    SV_TRY(plan_for(cb, B, T, D, H, &p));
    if (drop) { /* the mask exists only in the fallback kernels (file comment) */
        note_drop_route(cb);
        return fallback_fwd(cb, out, saved, qkv, B, T, D, H, drop);
    }
    if (p->fwd && aligned16(qkv, out, saved, NULL)) {
        const char *base = qkv;
        size_t e = 2; /* bf16 bytes */
        float scale = 1.0f / sqrtf((float)(D / H));
        int64_t uids[] = {UID_Q, UID_K, UID_V, UID_O, UID_STATS, UID_SCALE};
        void *ptrs[] = {(void *)base, (void *)(base + (size_t)D * e), (void *)(base + 2 * (size_t)D * e), out, saved,
                        &scale};
        if (execute(cb, p->fwd, 6, uids, ptrs) == SV_OK) return SV_OK;
        /* Refused at execution (nothing was enqueued): use the kernels from now on. */
        SV_WARN("cuDNN SDPA forward failed for B=%d T=%d D=%d H=%d, switching to the fallback kernel: %s", B, T, D, H,
                sv_err_msg());
        sv_err_clear();
        plan_drop(&p->fwd, &p->fwd_keep);
    }
    return fallback_fwd(cb, out, saved, qkv, B, T, D, H, NULL);
}

sv_status sv_cuda_attention_bwd(sv_backend *be, void *d_qkv, void *scratch, const void *d_out, const void *qkv,
                                const void *out, const void *saved, int B, int T, int D, int H, const sv_drop *drop) {
    sv_cuda_backend *cb = sv_cuda_be(be);
    if (drop) /* the forward with this mask ran the fallback too (file comment) */
        return fallback_bwd(cb, d_qkv, scratch, d_out, qkv, out, saved, B, T, D, H, drop);
    sv_cuda_attn_plan *p;
    SV_TRY(plan_for(cb, B, T, D, H, &p));
    if (p->bwd && aligned16(qkv, out, saved, d_out) && aligned16(d_qkv, NULL, NULL, NULL)) {
        const char *base = qkv;
        char *dbase = d_qkv;
        size_t off = (size_t)D * 2;
        float scale = 1.0f / sqrtf((float)(D / H));
        int64_t uids[] = {UID_Q, UID_K, UID_V, UID_O, UID_STATS, UID_SCALE, UID_DO, UID_DQ, UID_DK, UID_DV};
        void *ptrs[] = {(void *)base,
                        (void *)(base + off),
                        (void *)(base + 2 * off),
                        (void *)out,
                        (void *)saved,
                        &scale,
                        (void *)d_out,
                        dbase,
                        dbase + off,
                        dbase + 2 * off};
        if (execute(cb, p->bwd, 10, uids, ptrs) == SV_OK) return SV_OK;
        SV_WARN("cuDNN SDPA backward failed for B=%d T=%d D=%d H=%d, switching to the fallback kernel: %s", B, T, D, H,
                sv_err_msg());
        sv_err_clear();
        plan_drop(&p->bwd, &p->bwd_keep);
    }
    return fallback_bwd(cb, d_qkv, scratch, d_out, qkv, out, saved, B, T, D, H, NULL);
}
