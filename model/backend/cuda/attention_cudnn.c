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
 * heuristics (mode A), then the first engine config that cuDNN does not note as
 * nondeterministic (CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC; an engine whose notes cannot be read
 * is skipped too) and whose execution plan finalises. When cuDNN refuses a direction (fp32
 * compute, head dim not a multiple of 8, no engine for the shape or this cuDNN version, only
 * nondeterministic engines), that direction runs the fallback kernels instead; the refusal is
 * logged once per shape with cuDNN's last-error text and kept for sv_be_last_path. Both paths
 * save the same statistics, so a cuDNN forward pairs with a fallback backward.
 * cfg->attn_fallback forces the kernels for both.
 *
 * Every call notes which path ran (sv_be_last_path: "cudnn engine N ..." or "fallback: why"). 
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
#include <stdio.h>
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
    cb->dnn_off[0] = 0;
    if (cb->base.cfg.attn_fallback || !cb->bf16) { /* cuDNN never used */
        snprintf(cb->dnn_off, sizeof cb->dnn_off, "%s",
                 cb->base.cfg.attn_fallback ? "forced (attn_fallback)" : "fp32 compute (cuDNN SDPA is bf16 here)");
        return SV_OK;
    }
    cudnnStatus_t st = cudnnCreate(&cb->dnn);
    if (st != CUDNN_STATUS_SUCCESS) {
        SV_WARN("cuDNN unavailable (%s); attention uses the fallback kernels", cudnnGetErrorString(st));
        snprintf(cb->dnn_off, sizeof cb->dnn_off, "cuDNN unavailable: %s", cudnnGetErrorString(st));
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

/* The engine behind engine config `cfg`: its global index and whether cuDNN notes it as
 * nondeterministic. */
static sv_status engine_info(cudnnBackendDescriptor_t cfg, int64_t *index, int *nondet) {
    cudnnBackendDescriptor_t eng;
    SV_CUDNN_TRY(cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &eng));
    cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
    int64_t n = 0, n_notes = 0;
    cudnnStatus_t st =
        cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &eng);
    if (st == CUDNN_STATUS_SUCCESS)
        st = cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n, index);
    if (st == CUDNN_STATUS_SUCCESS)
        st = cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                                      CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &n_notes, notes);
    cudnnBackendDestroyDescriptor(eng);
    if (st != CUDNN_STATUS_SUCCESS) return sv_cuda_cudnn_fail(st, "engine numerical notes", __FILE__, __LINE__);
    *nondet = 0;
    for (int64_t i = 0; i < n_notes && i < CUDNN_NUMERICAL_NOTE_TYPE_COUNT; i++)
        if (notes[i] == CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC) *nondet = 1;
    return SV_OK;
}

/* An execution plan for engine config `cfg`, finalised, and its workspace bytes. */
static cudnnStatus_t try_plan(cudnnHandle_t dnn, cudnnBackendDescriptor_t cfg, cudnnBackendDescriptor_t *plan_out,
                              int64_t *ws_out) {
    cudnnBackendDescriptor_t plan;
    int64_t n_ws = 0; /* the element count it returns (cuDNN's own frontend never passes NULL for it) */
    cudnnStatus_t st = cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan);
    if (st != CUDNN_STATUS_SUCCESS) return st;
    st =
        cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg);
    if (st == CUDNN_STATUS_SUCCESS)
        st = cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &dnn);
    if (st == CUDNN_STATUS_SUCCESS) st = cudnnBackendFinalize(plan);
    if (st == CUDNN_STATUS_SUCCESS)
        st = cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n_ws,
                                      ws_out);
    if (st == CUDNN_STATUS_SUCCESS)
        *plan_out = plan;
    else
        cudnnBackendDestroyDescriptor(plan);
    return st;
}

/* Operation graph -> heuristics -> the first engine config that is not noted nondeterministic
 * and whose execution plan finalises. The plan itself is not in the list; the caller keeps the
 * list alive as long as the plan. `why` receives the engine chosen, or on failure the reasons. */
static sv_status finish_plan(sv_cuda_backend *cb, desc_list *l, cudnnBackendDescriptor_t op,
                             cudnnBackendDescriptor_t *plan_out, int64_t *ws_out, char *why, size_t why_len) {
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
    int nondet = 0, unreadable = 0, refused = 0;
    cudnnStatus_t last = CUDNN_STATUS_NOT_SUPPORTED;
    char detail[256] = "";
    for (int64_t i = 0; i < got; i++) {
        int64_t index = -1;
        int nd = 1;
        if (engine_info(cfgs[i], &index, &nd) != SV_OK) { /* notes unknown: no determinism claim */
            snprintf(detail, sizeof detail, "%s", sv_err_msg());
            sv_err_clear();
            unreadable++;
            continue;
        }
        if (nd) {
            nondet++;
            continue;
        }
        last = try_plan(cb->dnn, cfgs[i], plan_out, ws_out);
        if (last == CUDNN_STATUS_SUCCESS) {
            snprintf(why, why_len,
                     "cudnn engine %lld (heuristic %lld of %lld; skipped: %d nondeterministic, %d "
                     "unreadable notes, %d refused)",
                     (long long)index, (long long)i + 1, (long long)got, nondet, unreadable, refused);
            return SV_OK;
        }
        cudnnGetLastErrorString(detail, sizeof detail);
        refused++;
    }
    return SV_FAIL(SV_ERR_UNSUPPORTED,
                   "no usable cuDNN engine among %lld heuristic results (%d nondeterministic, %d with unreadable "
                   "notes, %d refused at plan finalisation: %s%s%s)",
                   (long long)got, nondet, unreadable, refused, cudnnGetErrorString(last), detail[0] ? ": " : "",
                   detail);
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
    if (st == SV_OK) {
        cudnnStatus_t fs = cudnnBackendFinalize(op);
        if (fs != CUDNN_STATUS_SUCCESS)
            st = sv_cuda_cudnn_fail(fs, bwd ? "SDPA_BWD operation finalisation" : "SDPA_FWD operation finalisation",
                                    __FILE__, __LINE__);
    }
    if (st == SV_OK)
        st = finish_plan(cb, &l, op, bwd ? &p->bwd : &p->fwd, bwd ? &p->bwd_ws : &p->fwd_ws, p->why[bwd],
                         sizeof p->why[bwd]);
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
    if (e != cudaSuccess) {
        cudaGetLastError(); /* a failed allocation stays the last error: the next launch would report it */
        return SV_FAIL(SV_ERR_OOM, "cuDNN attention workspace of %lld bytes: %s", (long long)bytes,
                       cudaGetErrorString(e));
    }
    cb->dnn_ws_bytes = (size_t)bytes;
    return SV_OK;
}

/* The plan for a shape, building it on first use. *out is NULL (both directions fall back) when
 * cuDNN is off, the head dim is not a multiple of 8 or the plan cache is full; `why` then says
 * which. A direction cuDNN refused has a NULL plan and its reason in p->why. Fails only on real
 * errors (the workspace cannot be allocated: then the shape's plans are dropped). */
static sv_status plan_for(sv_cuda_backend *cb, int B, int T, int D, int H, sv_cuda_attn_plan **out, char *why,
                          size_t why_len) {
    *out = NULL;
    if (!cb->dnn) {
        snprintf(why, why_len, "fallback: %.200s", cb->dnn_off);
        return SV_OK;
    }
    if ((D / H) % 8 != 0) {
        snprintf(why, why_len, "fallback: head dim %d is not a multiple of 8", D / H);
        return SV_OK;
    }
    sv_cuda_attn_plan *slot = NULL;
    for (int i = 0; i < SV_CUDA_ATTN_PLANS; i++) {
        sv_cuda_attn_plan *p = &cb->attn[i];
        if (p->used && p->B == B && p->T == T && p->D == D && p->H == H) {
            *out = p;
            return SV_OK;
        }
        if (!p->used && !slot) slot = p;
    }
    if (!slot) { /* more shapes than slots: extra shapes take the fallback */
        snprintf(why, why_len, "fallback: more than %d attention shapes planned", SV_CUDA_ATTN_PLANS);
        return SV_OK;
    }
    memset(slot, 0, sizeof *slot);
    slot->B = B, slot->T = T, slot->D = D, slot->H = H, slot->used = 1;
    for (int bwd = 0; bwd < 2; bwd++)
        if (build_dir(cb, slot, bwd) != SV_OK) {
            SV_WARN("cuDNN SDPA %s unavailable for B=%d T=%d D=%d H=%d, using the fallback kernel: %s",
                    bwd ? "backward" : "forward", B, T, D, H, sv_err_msg());
            snprintf(slot->why[bwd], sizeof slot->why[bwd], "fallback: cuDNN refused: %s", sv_err_msg());
            sv_err_clear();
        }
    int64_t ws = slot->fwd_ws > slot->bwd_ws ? slot->fwd_ws : slot->bwd_ws;
    sv_status st = reserve_ws(cb, ws);
    if (st != SV_OK) { /* never execute a plan without its workspace */
        plan_drop(&slot->fwd, &slot->fwd_keep);
        plan_drop(&slot->bwd, &slot->bwd_keep);
        slot->used = 0;
        return st;
    }
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

/* The plain kernels keep a row of scores (forward, dQ) or two columns (dK/dV) in shared memory,
 * at most 48 KiB without opting in to more: refuse longer sequences with a clear error. The
 * largest need of the three kernels (attention_fallback.cu): the forward's dh + T floats beside
 * its static 32-float reduction buffer, dQ's 2 dh + T, dK/dV's 2 dh + 2 T. */
static sv_status fallback_fits(int T, int D, int H) {
    const size_t dh = (size_t)(D / H), fwd = dh + (size_t)T + 32, dq = 2 * dh + (size_t)T, dkv = 2 * dh + 2 * (size_t)T;
    size_t need = (fwd > dq ? fwd : dq) > dkv ? (fwd > dq ? fwd : dq) : dkv;
    need *= sizeof(float);
    if (need > 48u * 1024u)
        return SV_FAIL(SV_ERR_UNSUPPORTED,
                       "CUDA attention fallback kernels: T=%d, head dim %d need %zu bytes of shared memory per block "
                       "(limit 49152)",
                       T, D / H, need);
    return SV_OK;
}

static sv_status fallback_fwd(sv_cuda_backend *cb, void *out, void *saved, const void *qkv, int B, int T, int D, int H,
                              const sv_drop *drop) {
    SV_TRY(fallback_fits(T, D, H));
    return sv_cuda_launch_check(sv_cuk_attn_fwd(cb->stream, cb->bf16, out, saved, qkv, B, T, D, H, drop_key(drop),
                                                drop_sample0(drop), drop_keep(drop)),
                                "attention forward (fallback)");
}

static sv_status fallback_bwd(sv_cuda_backend *cb, void *d_qkv, void *scratch, const void *d_out, const void *qkv,
                              const void *out, const void *saved, int B, int T, int D, int H, const sv_drop *drop) {
    SV_TRY(fallback_fits(T, D, H));
    return sv_cuda_launch_check(sv_cuk_attn_bwd(cb->stream, cb->bf16, d_qkv, d_out, qkv, out, saved, scratch, B, T, D,
                                                H, drop_key(drop), drop_sample0(drop), drop_keep(drop)),
                                "attention backward (fallback)");
}

static const char *const dir_name[2] = {"forward", "backward"};

/* Run direction `bwd` of plan p through cuDNN: 1 when it ran (noted); otherwise 0, the reason
 * is noted and the caller runs the fallback kernels. A failure at execution (nothing enqueued)
 * drops that direction's plan for good. */
static int run_cudnn(sv_cuda_backend *cb, sv_cuda_attn_plan *p, int bwd, int aligned, int n, int64_t *uids,
                     void **ptrs) {
    const sv_be_path_kind kind = bwd ? SV_BE_PATH_ATTN_BWD : SV_BE_PATH_ATTN_FWD;
    cudnnBackendDescriptor_t plan = bwd ? p->bwd : p->fwd;
    if (!plan) {
        sv_cuda_note(cb, kind, "%s", p->why[bwd]);
        return 0;
    }
    if (!aligned) {
        sv_cuda_note(cb, kind, "fallback: buffers not 16-byte aligned");
        return 0;
    }
    if (execute(cb, plan, n, uids, ptrs) == SV_OK) {
        sv_cuda_note(cb, kind, "%s", p->why[bwd]);
        return 1;
    }
    SV_WARN("cuDNN SDPA %s failed for B=%d T=%d D=%d H=%d, switching to the fallback kernel: %s", dir_name[bwd], p->B,
            p->T, p->D, p->H, sv_err_msg());
    snprintf(p->why[bwd], sizeof p->why[bwd], "fallback: cuDNN failed at execution: %s", sv_err_msg());
    sv_err_clear();
    cudaGetLastError(); /* a refused launch may set the runtime's last error (see gemm.c) */
    if (bwd)
        plan_drop(&p->bwd, &p->bwd_keep);
    else
        plan_drop(&p->fwd, &p->fwd_keep);
    sv_cuda_note(cb, kind, "%s", p->why[bwd]);
    return 0;
}

sv_status sv_cuda_attention_fwd(sv_backend *be, void *out, void *saved, void *scratch, const void *qkv, int B, int T,
                                int D, int H, const sv_drop *drop) {
    sv_cuda_backend *cb = sv_cuda_be(be);
    (void)scratch;
    sv_cuda_attn_plan *p;
    char why[SV_CUDA_NOTE];
    /* Planned with or without a mask: the shape's cuDNN plans and workspace are then made in the
     * first training step as before (evaluation, without a mask, runs them). */
    SV_TRY(plan_for(cb, B, T, D, H, &p, why, sizeof why));
    if (drop) { /* the mask exists only in the fallback kernels (file comment) */
        note_drop_route(cb);
        sv_cuda_note(cb, SV_BE_PATH_ATTN_FWD, "fallback: attention dropout (cuDNN SDPA cannot draw this mask)");
        return fallback_fwd(cb, out, saved, qkv, B, T, D, H, drop);
    }
    if (!p) {
        sv_cuda_note(cb, SV_BE_PATH_ATTN_FWD, "%s", why);
        return fallback_fwd(cb, out, saved, qkv, B, T, D, H, NULL);
    }
    const char *base = qkv;
    size_t off = (size_t)D * 2; /* bf16 bytes from q to k, k to v */
    float scale = 1.0f / sqrtf((float)(D / H));
    int64_t uids[] = {UID_Q, UID_K, UID_V, UID_O, UID_STATS, UID_SCALE};
    void *ptrs[] = {(void *)base, (void *)(base + off), (void *)(base + 2 * off), out, saved, &scale};
    if (run_cudnn(cb, p, 0, aligned16(qkv, out, saved, NULL), 6, uids, ptrs)) return SV_OK;
    return fallback_fwd(cb, out, saved, qkv, B, T, D, H, NULL);
}

sv_status sv_cuda_attention_bwd(sv_backend *be, void *d_qkv, void *scratch, const void *d_out, const void *qkv,
                                const void *out, const void *saved, int B, int T, int D, int H, const sv_drop *drop) {
    sv_cuda_backend *cb = sv_cuda_be(be);
    if (drop) { /* the forward with this mask ran the fallback too (file comment) */
        sv_cuda_note(cb, SV_BE_PATH_ATTN_BWD, "fallback: attention dropout (cuDNN SDPA cannot draw this mask)");
        return fallback_bwd(cb, d_qkv, scratch, d_out, qkv, out, saved, B, T, D, H, drop);
    }
    sv_cuda_attn_plan *p;
    char why[SV_CUDA_NOTE];
    SV_TRY(plan_for(cb, B, T, D, H, &p, why, sizeof why));
    if (!p) {
        sv_cuda_note(cb, SV_BE_PATH_ATTN_BWD, "%s", why);
        return fallback_bwd(cb, d_qkv, scratch, d_out, qkv, out, saved, B, T, D, H, NULL);
    }
    const char *base = qkv;
    char *dbase = d_qkv;
    size_t off = (size_t)D * 2;
    float scale = 1.0f / sqrtf((float)(D / H));
    int64_t uids[] = {UID_Q, UID_K, UID_V, UID_O, UID_STATS, UID_SCALE, UID_DO, UID_DQ, UID_DK, UID_DV};
    void *ptrs[] = {
        (void *)base, (void *)(base + off), (void *)(base + 2 * off), (void *)out, (void *)saved, &scale, (void *)d_out,
        dbase,        dbase + off,          dbase + 2 * off};
    int aligned = aligned16(qkv, out, saved, d_out) && aligned16(d_qkv, NULL, NULL, NULL);
    if (run_cudnn(cb, p, 1, aligned, 10, uids, ptrs)) return SV_OK;
    return fallback_bwd(cb, d_qkv, scratch, d_out, qkv, out, saved, B, T, D, H, NULL);
}
