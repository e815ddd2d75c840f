/* CUDA backend: linear layers through cuBLASLt (fp32 accumulation, CUBLAS_COMPUTE_32F, no TF32).
 *
 * Row-major shapes map onto cuBLASLt's column-major view without copies (a row-major (R, C)
 * matrix is a column-major (C, R) one):
 *   forward  out(M,N)  = in(M,K) W(N,K)^T   -> D(N x M) = op_T(W: K x N) * in(K x M)
 *   dgrad    d_in(M,K) = d_out(M,N) W(N,K)  -> D(K x M) = W(K x N) * d_out(N x M)
 *   wgrad    dW(N,K)  += d_out^T in         -> D(K x N) = in(K x M) * op_T(d_out: N x M), beta 1
 * Weight gradients use bf16 A/B with fp32 C/D (beta = 1): they accumulate in fp32.
 *
 * Forward epilogues. The CPU backend adds the bias to the GEMM's fp32 sum and takes GELU of
 * that unrounded fp32 value (model/backend/cpu/cpu_linear.c); this file does the same:
 *  - bias only: cuBLASLt's BIAS epilogue (bias added in fp32 before D is rounded);
 *  - GELU (cuBLASLt's GELU epilogues are the tanh approximation; the model is timm's exact
 *    erf GELU), or a bias no algorithm takes as an epilogue: the GEMM writes its fp32 result
 *    (into the destination itself with fp32 compute, else into the backend's staging buffer,
 *    SV_CUDA_STAGE_BYTES, in row chunks that fit) and one kernel adds the bias, applies
 *    sv_gelu to the unrounded sum and rounds out and the pre-activation once each
 *    (sv_cuk_linear_epilogue, core/elementwise.h sv_bias_gelu_elem).
 *
 * Algorithms: a plan keeps up to SV_CUDA_GEMM_ALGOS heuristic results and tries them in order
 * at its first run (cuBLASLt can refuse one at launch, e.g. for a leading dimension whose
 * alignment the heuristic did not account for: the 10-class head has ld 20 bytes in bf16). When
 * every one fails, the plan runs cublasGemmEx (cuBLAS, the same CUBLAS_COMPUTE_32F), or for a
 * bias-epilogue plan the staged path. Once an algorithm has run, the plan keeps it: a later
 * failure is an error. What runs is noted per GEMM kind (sv_be_last_path).
 *
 * Descriptors and algorithms are cached per problem signature (shape, kind, epilogue, D type,
 * pointer alignment), so a training step does no heuristic queries after the first. */
#include <stdio.h>
#include <string.h>

#include "core/log.h"
#include "model/backend/cuda/cuda_backend.h"

static const char *const kind_name[] = {"forward", "dgrad", "wgrad"};

sv_status sv_cuda_gemm_init(sv_cuda_backend *cb) {
    memset(cb->gemm, 0, sizeof cb->gemm);
    cb->gemm_next_evict = 0;
    return SV_OK;
}

static void plan_release(sv_cuda_gemm_plan *p) {
    if (p->op) cublasLtMatmulDescDestroy(p->op);
    if (p->a) cublasLtMatrixLayoutDestroy(p->a);
    if (p->b) cublasLtMatrixLayoutDestroy(p->b);
    if (p->c) cublasLtMatrixLayoutDestroy(p->c);
    memset(p, 0, sizeof *p);
}

void sv_cuda_gemm_free(sv_cuda_backend *cb) {
    for (int i = 0; i < SV_CUDA_GEMM_PLANS; i++) plan_release(&cb->gemm[i]);
    if (cb->blas) cublasDestroy(cb->blas);
    cb->blas = NULL;
}

/* Largest power of two <= 256 dividing every address (NULLs ignored). */
static int common_alignment(const void *a, const void *b, const void *c, const void *d) {
    uintptr_t bits = (uintptr_t)a | (uintptr_t)b | (uintptr_t)c | (uintptr_t)d | 256u;
    return (int)(bits & (~bits + 1));
}

static int key_eq(const sv_cuda_gemm_key *x, const sv_cuda_gemm_key *y) {
    return x->kind == y->kind && x->M == y->M && x->N == y->N && x->K == y->K && x->bias == y->bias &&
        x->d_f32 == y->d_f32 && x->align == y->align;
}

/* The column-major problem of a signature (file comment). */
static sv_cuda_gemm_dims dims_of(const sv_cuda_gemm_key *key, int bf16) {
    sv_cuda_gemm_dims d;
    int M = key->M, N = key->N, K = key->K;
    d.ab = bf16 ? CUDA_R_16BF : CUDA_R_32F;
    d.dt = key->d_f32 ? CUDA_R_32F : d.ab;
    switch (key->kind) {
    case SV_GEMM_FWD: /* D(N x M) = W^T(stored K x N)^T * in(K x M) */
        d.ta = CUBLAS_OP_T, d.tb = CUBLAS_OP_N, d.m = N, d.n = M, d.k = K, d.lda = K, d.ldb = K;
        break;
    case SV_GEMM_DGRAD: /* D(K x M) = W(K x N) * d_out(N x M) */
        d.ta = CUBLAS_OP_N, d.tb = CUBLAS_OP_N, d.m = K, d.n = M, d.k = N, d.lda = K, d.ldb = N;
        break;
    default: /* WGRAD: D(K x N) += in(K x M) * d_out(N x M)^T */
        d.ta = CUBLAS_OP_N, d.tb = CUBLAS_OP_T, d.m = K, d.n = N, d.k = M, d.lda = K, d.ldb = N;
        break;
    }
    d.ldc = d.m;
    return d;
}

/* Stored (column-major) rows x cols of an operand with leading dimension ld and op t that
 * contributes rows x k (A) or k x cols (B) to the product. */
static sv_status layout(cublasLtMatrixLayout_t *out, cudaDataType_t t, int ld, int rows_op, int cols_op,
                        cublasOperation_t op) {
    uint64_t rows = op == CUBLAS_OP_N ? (uint64_t)rows_op : (uint64_t)cols_op;
    uint64_t cols = op == CUBLAS_OP_N ? (uint64_t)cols_op : (uint64_t)rows_op;
    SV_CUBLAS_TRY(cublasLtMatrixLayoutCreate(out, t, rows, cols, (int64_t)ld));
    return SV_OK;
}

static sv_status make_pref(const sv_cuda_backend *cb, int align, cublasLtMatmulPreference_t *out) {
    SV_CUBLAS_TRY(cublasLtMatmulPreferenceCreate(out));
    uint64_t ws = cb->lt_ws_bytes;
    uint32_t al = (uint32_t)align;
    cublasStatus_t st =
        cublasLtMatmulPreferenceSetAttribute(*out, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
    const cublasLtMatmulPreferenceAttributes_t al_attrs[] = {
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
    for (int i = 0; i < 4 && st == CUBLAS_STATUS_SUCCESS; i++)
        st = cublasLtMatmulPreferenceSetAttribute(*out, al_attrs[i], &al, sizeof al);
    /* split-K partial sums are reduced in fp32 or not split at all: the default mask also allows
     * reducing in place or in the output type, which rounds every partial sum of a bf16 output
     * to bf16 (the one-rounding-per-tensor contract, docs/gpu.md) */
    uint32_t red = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulPreferenceSetAttribute(*out, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &red, sizeof red);
    if (st != CUBLAS_STATUS_SUCCESS) {
        cublasLtMatmulPreferenceDestroy(*out);
        return SV_FAIL(SV_ERR_BACKEND, "cuBLASLt preference set-up failed: %s", cublasLtGetStatusString(st));
    }
    return SV_OK;
}

/* Descriptors of p->key (dims, op, layouts; the BIAS epilogue when key.bias). */
static sv_status plan_descs(sv_cuda_gemm_plan *p) {
    const sv_cuda_gemm_dims *d = &p->dims;
    SV_CUBLAS_TRY(cublasLtMatmulDescCreate(&p->op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    SV_CUBLAS_TRY(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &d->ta, sizeof d->ta));
    SV_CUBLAS_TRY(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &d->tb, sizeof d->tb));
    SV_TRY(layout(&p->a, d->ab, d->lda, d->m, d->k, d->ta));
    SV_TRY(layout(&p->b, d->ab, d->ldb, d->k, d->n, d->tb));
    SV_TRY(layout(&p->c, d->dt, d->ldc, d->m, d->n, CUBLAS_OP_N));
    if (p->key.bias) {
        cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
        SV_CUBLAS_TRY(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
    }
    return SV_OK;
}

/* Build a plan: descriptors, then up to SV_CUDA_GEMM_ALGOS heuristic results. None (or a failed
 * query) is not an error here: a bias plan is marked no_bias_epi, any other plan runs the
 * cublasGemmEx fallback (n_algo 0). */
static sv_status plan_build(sv_cuda_backend *cb, sv_cuda_gemm_plan *p, const sv_cuda_gemm_key *key) {
    memset(p, 0, sizeof *p);
    p->key = *key;
    p->dims = dims_of(key, cb->bf16);
    sv_status s = plan_descs(p);
    cublasLtMatmulPreference_t pref = NULL;
    if (s == SV_OK) s = make_pref(cb, key->align, &pref);
    if (s != SV_OK) {
        plan_release(p);
        return s;
    }
    cublasLtMatmulHeuristicResult_t res[SV_CUDA_GEMM_ALGOS];
    int found = 0;
    cublasStatus_t st =
        cublasLtMatmulAlgoGetHeuristic(cb->lt, p->op, p->a, p->b, p->c, p->c, pref, SV_CUDA_GEMM_ALGOS, res, &found);
    cublasLtMatmulPreferenceDestroy(pref);
    if (st != CUBLAS_STATUS_SUCCESS) found = 0;
    for (int i = 0; i < found; i++)
        if (res[i].state == CUBLAS_STATUS_SUCCESS && res[i].workspaceSize <= cb->lt_ws_bytes)
            p->algo[p->n_algo++] = res[i].algo;
    if (p->n_algo == 0) {
        SV_DEBUG("cuBLASLt: no %salgorithm for the %s GEMM M=%d N=%d K=%d (alignment %d): %s",
                 key->bias ? "bias-epilogue " : "", kind_name[key->kind], key->M, key->N, key->K, key->align,
                 st != CUBLAS_STATUS_SUCCESS ? cublasLtGetStatusString(st) : "no heuristic result");
        p->no_bias_epi = key->bias;
    }
    p->used = 1;
    return SV_OK;
}

static sv_status plan_get(sv_cuda_backend *cb, const sv_cuda_gemm_key *key, sv_cuda_gemm_plan **out) {
    for (int i = 0; i < SV_CUDA_GEMM_PLANS; i++)
        if (cb->gemm[i].used && key_eq(&cb->gemm[i].key, key)) {
            *out = &cb->gemm[i];
            return SV_OK;
        }
    sv_cuda_gemm_plan *slot = NULL;
    for (int i = 0; i < SV_CUDA_GEMM_PLANS && !slot; i++)
        if (!cb->gemm[i].used) slot = &cb->gemm[i];
    if (!slot) { /* more signatures than slots: recycle round-robin (descriptors are host-only) */
        slot = &cb->gemm[cb->gemm_next_evict];
        cb->gemm_next_evict = (cb->gemm_next_evict + 1) % SV_CUDA_GEMM_PLANS;
        plan_release(slot);
    }
    SV_TRY(plan_build(cb, slot, key));
    *out = slot;
    return SV_OK;
}

/* Algorithm i's identity for the note: algo id, tile, stages, split-K and reduction scheme. */
static void note_algo(sv_cuda_gemm_plan *p, int i) {
    int id = -1, tile = -1, stages = -1, splitk = -1;
    uint32_t red = 0;
    size_t w;
    const cublasLtMatmulAlgo_t *a = &p->algo[i];
    cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id, &w);
    cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile, &w);
    cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages, sizeof stages, &w);
    cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splitk, sizeof splitk, &w);
    cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &red, sizeof red, &w);
    snprintf(p->note, sizeof p->note,
             "cublasLt algo %d tile %d stages %d splitK %d reduction %u (heuristic %d of %d)%s", id, tile, stages,
             splitk, (unsigned)red, i + 1, p->n_algo, p->key.bias ? ", bias epilogue" : "");
}

/* The cublasGemmEx handle, created on first need on the compute stream, sharing lt_ws
 * (cublasSetStream resets the workspace, so the workspace is set after it). */
static sv_status blas_handle(sv_cuda_backend *cb) {
    if (cb->blas) return SV_OK;
    SV_CUBLAS_V2_TRY(cublasCreate(&cb->blas));
    SV_CUBLAS_V2_TRY(cublasSetStream(cb->blas, cb->stream));
    SV_CUBLAS_V2_TRY(cublasSetWorkspace(cb->blas, cb->lt_ws, cb->lt_ws_bytes));
    return SV_OK;
}

static sv_status run_gemmex(sv_cuda_backend *cb, const sv_cuda_gemm_plan *p, const void *A, const void *B, void *D,
                            float beta) {
    const sv_cuda_gemm_dims *d = &p->dims;
    float alpha = 1.0f;
    SV_TRY(blas_handle(cb));
    SV_CUBLAS_V2_TRY(cublasGemmEx(cb->blas, d->ta, d->tb, d->m, d->n, d->k, &alpha, A, d->ab, d->lda, B, d->ab, d->ldb,
                                  &beta, D, d->dt, d->ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    return SV_OK;
}

/* Run p: D = A B (+ beta D; + bias through the epilogue when key.bias). Tries the algorithms
 * from p->cur on until one launches (file comment); then cublasGemmEx, except for a bias plan:
 * that one is marked no_bias_epi and returns with *ran = 0 and nothing enqueued. */
static sv_status plan_run(sv_cuda_backend *cb, sv_cuda_gemm_plan *p, const void *A, const void *B, void *D,
                          const void *bias, float beta, int *ran) {
    float alpha = 1.0f;
    *ran = 0;
    if (p->key.bias && !p->no_bias_epi)
        SV_CUBLAS_TRY(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
    for (; p->cur < p->n_algo; p->cur++) {
        cublasStatus_t st = cublasLtMatmul(cb->lt, p->op, &alpha, A, p->a, B, p->b, &beta, D, p->c, D, p->c,
                                           &p->algo[p->cur], cb->lt_ws, cb->lt_ws_bytes, cb->stream);
        if (st == CUBLAS_STATUS_SUCCESS) {
            if (!p->verified) note_algo(p, p->cur);
            p->verified = 1;
            *ran = 1;
            return SV_OK;
        }
        if (p->verified)
            return SV_FAIL(SV_ERR_BACKEND, "cuBLASLt error in cublasLtMatmul (%s GEMM M=%d N=%d K=%d): %s",
                           kind_name[p->key.kind], p->key.M, p->key.N, p->key.K, cublasLtGetStatusString(st));
        SV_WARN("cuBLASLt algorithm %d of %d refused the %s GEMM M=%d N=%d K=%d (%s); trying the next", p->cur + 1,
                p->n_algo, kind_name[p->key.kind], p->key.M, p->key.N, p->key.K, cublasLtGetStatusString(st));
        cudaGetLastError(); /* a refused launch may set the runtime's last error: the next kernel
                             * launcher would report it as its own */
    }
    if (p->key.bias) {
        p->no_bias_epi = 1;
        return SV_OK;
    }
    SV_TRY(run_gemmex(cb, p, A, B, D, beta));
    if (!p->verified) {
        snprintf(p->note, sizeof p->note, "cublasGemmEx fallback (CUBLAS_COMPUTE_32F; cuBLASLt: %s)",
                 p->n_algo ? "every heuristic algorithm refused" : "no heuristic result");
        SV_WARN("%s GEMM M=%d N=%d K=%d: %s", kind_name[p->key.kind], p->key.M, p->key.N, p->key.K, p->note);
    }
    p->verified = 1;
    *ran = 1;
    return SV_OK;
}

/* One GEMM of kind/shape/pointers with its plan; the note of its kind says what ran (plus
 * `how`, e.g. the staged epilogue). *ran as plan_run (0 only for a bias plan without one). */
static sv_status gemm(sv_cuda_backend *cb, sv_cuda_gemm_key key, const void *A, const void *B, void *D,
                      const void *bias, float beta, const char *how, int *ran) {
    sv_cuda_gemm_plan *p;
    SV_TRY(plan_get(cb, &key, &p));
    *ran = 0;
    if (p->no_bias_epi) return SV_OK;
    SV_TRY(plan_run(cb, p, A, B, D, bias, beta, ran));
    if (*ran) sv_cuda_note(cb, (sv_be_path_kind)(SV_BE_PATH_GEMM_FWD + key.kind), "%s%s", p->note, how);
    return SV_OK;
}

/* A GEMM without the bias epilogue: always runs (cublasGemmEx at worst). */
static sv_status gemm_plain(sv_cuda_backend *cb, sv_cuda_gemm_key key, const void *A, const void *B, void *D,
                            float beta, const char *how) {
    int ran;
    SV_ASSERT(!key.bias);
    SV_TRY(gemm(cb, key, A, B, D, NULL, beta, how, &ran));
    SV_ASSERT(ran);
    return SV_OK;
}

/* Rows per staged chunk for outputs of N columns: a multiple of 128 rows (so chunk offsets keep
 * the operands' alignment) whose fp32 result fits the staging buffer. */
static int stage_rows(int N) {
    size_t rows = SV_CUDA_STAGE_BYTES / sizeof(float) / (size_t)N;
    return rows >= 128 ? (int)(rows / 128 * 128) : (int)rows;
}

/* The staged forward (file comment): fp32 GEMM result, then sv_cuk_linear_epilogue. */
static sv_status fwd_staged(sv_cuda_backend *cb, void *out, void *pre_gelu, const void *in, const void *W,
                            const void *bias, int M, int N, int K) {
    const char *how = pre_gelu ? ", fp32 result + epilogue kernel (bias, GELU)" : ", fp32 result + bias kernel";
    if (!cb->bf16) { /* the fp32 result lands in the destination; the kernel works in place */
        float *acc = pre_gelu ? pre_gelu : out;
        sv_cuda_gemm_key key = {SV_GEMM_FWD, M, N, K, 0, 1, common_alignment(in, W, acc, NULL)};
        SV_TRY(gemm_plain(cb, key, W, in, acc, 0.0f, how));
        return sv_cuda_launch_check(sv_cuk_linear_epilogue(cb->stream, 0, out, pre_gelu, acc, bias, M, N),
                                    "linear epilogue");
    }
    int rows = stage_rows(N);
    if (rows < 1)
        return SV_FAIL(SV_ERR_UNSUPPORTED, "CUDA linear: N=%d columns exceed the %u-byte epilogue staging buffer", N,
                       SV_CUDA_STAGE_BYTES);
    const size_t e = 2; /* bf16 bytes */
    for (int m0 = 0; m0 < M; m0 += rows) {
        int mr = M - m0 < rows ? M - m0 : rows;
        const char *in_c = (const char *)in + (size_t)m0 * K * e;
        char *out_c = (char *)out + (size_t)m0 * N * e;
        char *pre_c = pre_gelu ? (char *)pre_gelu + (size_t)m0 * N * e : NULL;
        sv_cuda_gemm_key key = {SV_GEMM_FWD, mr, N, K, 0, 1, common_alignment(in_c, W, cb->stage, NULL)};
        SV_TRY(gemm_plain(cb, key, W, in_c, cb->stage, 0.0f, how));
        SV_TRY(sv_cuda_launch_check(sv_cuk_linear_epilogue(cb->stream, 1, out_c, pre_c, cb->stage, bias, mr, N),
                                    "linear epilogue"));
    }
    return SV_OK;
}

sv_status sv_cuda_linear_fwd(sv_backend *be, void *out, void *pre_gelu, const void *in, const void *W, const void *bias,
                             int M, int N, int K) {
    sv_cuda_backend *cb = sv_cuda_be(be);
    if (!pre_gelu) { /* the bias (if any) as cuBLASLt's epilogue, when an algorithm takes it */
        int ran;
        sv_cuda_gemm_key key = {SV_GEMM_FWD, M, N, K, bias != NULL, 0, common_alignment(in, W, out, bias)};
        SV_TRY(gemm(cb, key, W, in, out, bias, 0.0f, "", &ran));
        if (ran) return SV_OK;
    }
    return fwd_staged(cb, out, pre_gelu, in, W, bias, M, N, K);
}

sv_status sv_cuda_linear_bwd(sv_backend *be, void *d_in, float *dW, float *db, void *d_out, const void *in,
                             const void *W, const void *pre_gelu, int M, int N, int K) {
    sv_cuda_backend *cb = sv_cuda_be(be);
    if (pre_gelu)
        SV_TRY(sv_cuda_launch_check(sv_cuk_gelu_bwd(cb->stream, cb->bf16, d_out, d_out, pre_gelu, (size_t)M * N),
                                    "linear gelu backward"));
    if (d_in) {
        sv_cuda_gemm_key key = {SV_GEMM_DGRAD, M, N, K, 0, 0, common_alignment(W, d_out, d_in, NULL)};
        SV_TRY(gemm_plain(cb, key, W, d_out, d_in, 0.0f, ""));
    }
    sv_cuda_gemm_key key = {SV_GEMM_WGRAD, M, N, K, 0, 1, common_alignment(in, d_out, dW, NULL)};
    SV_TRY(gemm_plain(cb, key, in, d_out, dW, 1.0f, ""));
    if (db) {
        SV_TRY(sv_cuda_reserve_red(cb, sv_cuk_colsum_partials(M, N)));
        SV_TRY(sv_cuda_launch_check(sv_cuk_colsum_acc(cb->stream, cb->bf16, db, d_out, M, N, cb->red),
                                    "linear bias gradient"));
    }
    return SV_OK;
}
