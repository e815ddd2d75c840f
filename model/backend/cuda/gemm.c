/* CUDA backend: linear layers through cuBLASLt (fp32 accumulation, CUBLAS_COMPUTE_32F).
 *
 * Row-major shapes map onto cuBLASLt's column-major view without copies (a row-major (R, C)
 * matrix is a column-major (C, R) one):
 *   forward  out(M,N)  = in(M,K) W(N,K)^T   -> D(N x M) = op_T(W: K x N) * in(K x M)
 *   dgrad    d_in(M,K) = d_out(M,N) W(N,K)  -> D(K x M) = W(K x N) * d_out(N x M)
 *   wgrad    dW(N,K)  += d_out^T in         -> D(K x N) = in(K x M) * op_T(d_out: N x M), beta 1
 * The bias rides the BIAS epilogue in the forward. GELU is NOT fused into the GEMM: cuBLASLt's
 * GELU epilogues use the tanh approximation, while the model uses exact erf GELU
 * (core/elementwise.h), so the GEMM writes the pre-activation and a kernel applies sv_gelu.
 * Weight gradients use bf16 A/B with fp32 C/D (beta = 1), i.e. they accumulate in fp32.
 *
 * Descriptors and the heuristic's algorithm are cached per problem signature (shape, kind,
 * epilogue, pointer alignment), so a training step does no heuristic queries after the first. */
#include <string.h>

#include "core/log.h"
#include "model/backend/cuda/cuda_backend.h"

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
}

/* Largest power of two <= 256 dividing every address (NULLs ignored). */
static int common_alignment(const void *a, const void *b, const void *c, const void *d) {
    uintptr_t bits = (uintptr_t)a | (uintptr_t)b | (uintptr_t)c | (uintptr_t)d | 256u;
    return (int)(bits & (~bits + 1));
}

static int key_eq(const sv_cuda_gemm_key *x, const sv_cuda_gemm_key *y) {
    return x->kind == y->kind && x->M == y->M && x->N == y->N && x->K == y->K && x->bias == y->bias &&
        x->align == y->align;
}

/* Build descriptors for a signature and pick an algorithm. With `epilogue_bias` the BIAS
 * epilogue is requested; when no algorithm supports it the plan falls back to the default
 * epilogue and bias_by_kernel is set. */
static sv_status plan_build(sv_cuda_backend *cb, sv_cuda_gemm_plan *p, const sv_cuda_gemm_key *key) {
    int bf = cb->bf16;
    cudaDataType_t ab = bf ? CUDA_R_16BF : CUDA_R_32F;
    cudaDataType_t dt = key->kind == SV_GEMM_WGRAD ? CUDA_R_32F : ab;
    cublasOperation_t ta, tb;
    uint64_t m, n, k, arows, acols, brows, bcols;
    int M = key->M, N = key->N, K = key->K;
    switch (key->kind) {
    case SV_GEMM_FWD: /* D(N x M) = W^T(stored K x N)^T * in(K x M) */
        ta = CUBLAS_OP_T, tb = CUBLAS_OP_N, m = N, n = M, k = K;
        arows = K, acols = N, brows = K, bcols = M;
        break;
    case SV_GEMM_DGRAD: /* D(K x M) = W(K x N) * d_out(N x M) */
        ta = CUBLAS_OP_N, tb = CUBLAS_OP_N, m = K, n = M, k = N;
        arows = K, acols = N, brows = N, bcols = M;
        break;
    default: /* WGRAD: D(K x N) += in(K x M) * d_out(N x M)^T */
        ta = CUBLAS_OP_N, tb = CUBLAS_OP_T, m = K, n = N, k = M;
        arows = K, acols = M, brows = N, bcols = M;
        break;
    }
    memset(p, 0, sizeof *p);
    p->key = *key;
    SV_CUBLAS_TRY(cublasLtMatmulDescCreate(&p->op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    SV_CUBLAS_TRY(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    SV_CUBLAS_TRY(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    SV_CUBLAS_TRY(cublasLtMatrixLayoutCreate(&p->a, ab, arows, acols, (int64_t)arows));
    SV_CUBLAS_TRY(cublasLtMatrixLayoutCreate(&p->b, ab, brows, bcols, (int64_t)brows));
    SV_CUBLAS_TRY(cublasLtMatrixLayoutCreate(&p->c, dt, m, n, (int64_t)m));
    (void)k;

    cublasLtMatmulPreference_t pref;
    SV_CUBLAS_TRY(cublasLtMatmulPreferenceCreate(&pref));
    uint64_t ws = cb->lt_ws_bytes;
    uint32_t al = (uint32_t)key->align;
    cublasStatus_t st =
        cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
    const cublasLtMatmulPreferenceAttributes_t al_attrs[] = {
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
    for (int i = 0; i < 4 && st == CUBLAS_STATUS_SUCCESS; i++)
        st = cublasLtMatmulPreferenceSetAttribute(pref, al_attrs[i], &al, sizeof al);
    if (st != CUBLAS_STATUS_SUCCESS) {
        cublasLtMatmulPreferenceDestroy(pref);
        return SV_FAIL(SV_ERR_BACKEND, "cuBLASLt preference set-up failed: %s", cublasLtGetStatusString(st));
    }

    cublasLtMatmulHeuristicResult_t res;
    int found = 0;
    if (key->bias) {
        cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
        st = cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi);
        if (st == CUBLAS_STATUS_SUCCESS)
            st = cublasLtMatmulAlgoGetHeuristic(cb->lt, p->op, p->a, p->b, p->c, p->c, pref, 1, &res, &found);
        if (st != CUBLAS_STATUS_SUCCESS || found == 0) {
            epi = CUBLASLT_EPILOGUE_DEFAULT;
            cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi);
            p->bias_by_kernel = 1;
            found = 0;
        }
    }
    if (!found) st = cublasLtMatmulAlgoGetHeuristic(cb->lt, p->op, p->a, p->b, p->c, p->c, pref, 1, &res, &found);
    cublasLtMatmulPreferenceDestroy(pref);
    if (st != CUBLAS_STATUS_SUCCESS || found == 0) {
        sv_status s =
            SV_FAIL(SV_ERR_BACKEND, "cuBLASLt has no algorithm for %s GEMM M=%d N=%d K=%d (%s, alignment %d): %s",
                    key->kind == SV_GEMM_FWD         ? "forward"
                        : key->kind == SV_GEMM_DGRAD ? "dgrad"
                                                     : "wgrad",
                    M, N, K, bf ? "bf16" : "fp32", key->align,
                    st != CUBLAS_STATUS_SUCCESS ? cublasLtGetStatusString(st) : "no heuristic result");
        plan_release(p);
        return s;
    }
    p->algo = res.algo;
    p->used = 1;
    if (p->bias_by_kernel)
        SV_DEBUG("cuBLASLt: no bias-epilogue algorithm for M=%d N=%d K=%d; bias added by a kernel", M, N, K);
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

static sv_status run(sv_cuda_backend *cb, sv_cuda_gemm_plan *p, const void *A, const void *B, void *D, const void *bias,
                     float beta) {
    float alpha = 1.0f;
    if (p->key.bias && !p->bias_by_kernel)
        SV_CUBLAS_TRY(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
    SV_CUBLAS_TRY(cublasLtMatmul(cb->lt, p->op, &alpha, A, p->a, B, p->b, &beta, D, p->c, D, p->c, &p->algo, cb->lt_ws,
                                 cb->lt_ws_bytes, cb->stream));
    return SV_OK;
}

sv_status sv_cuda_linear_fwd(sv_backend *be, void *out, void *pre_gelu, const void *in, const void *W, const void *bias,
                             int M, int N, int K) {
    sv_cuda_backend *cb = sv_cuda_be(be);
    void *dst = pre_gelu ? pre_gelu : out;
    sv_cuda_gemm_key key = {SV_GEMM_FWD, M, N, K, bias != NULL, common_alignment(in, W, dst, bias)};
    sv_cuda_gemm_plan *p;
    SV_TRY(plan_get(cb, &key, &p));
    SV_TRY(run(cb, p, W, in, dst, bias, 0.0f));
    if (bias && p->bias_by_kernel)
        SV_TRY(sv_cuda_launch_check(sv_cuk_add_bias(cb->stream, cb->bf16, dst, bias, M, N), "linear bias"));
    if (pre_gelu)
        SV_TRY(
            sv_cuda_launch_check(sv_cuk_gelu_fwd(cb->stream, cb->bf16, out, pre_gelu, (size_t)M * N), "linear gelu"));
    return SV_OK;
}

sv_status sv_cuda_linear_bwd(sv_backend *be, void *d_in, float *dW, float *db, void *d_out, const void *in,
                             const void *W, const void *pre_gelu, int M, int N, int K) {
    sv_cuda_backend *cb = sv_cuda_be(be);
    if (pre_gelu)
        SV_TRY(sv_cuda_launch_check(sv_cuk_gelu_bwd(cb->stream, cb->bf16, d_out, d_out, pre_gelu, (size_t)M * N),
                                    "linear gelu backward"));
    sv_cuda_gemm_plan *p;
    if (d_in) {
        sv_cuda_gemm_key key = {SV_GEMM_DGRAD, M, N, K, 0, common_alignment(W, d_out, d_in, NULL)};
        SV_TRY(plan_get(cb, &key, &p));
        SV_TRY(run(cb, p, W, d_out, d_in, NULL, 0.0f));
    }
    sv_cuda_gemm_key key = {SV_GEMM_WGRAD, M, N, K, 0, common_alignment(in, d_out, dW, NULL)};
    SV_TRY(plan_get(cb, &key, &p));
    SV_TRY(run(cb, p, in, d_out, dW, NULL, 1.0f));
    if (db) {
        SV_TRY(sv_cuda_reserve_red(cb, sv_cuk_colsum_partials(M, N)));
        SV_TRY(sv_cuda_launch_check(sv_cuk_colsum_acc(cb->stream, cb->bf16, db, d_out, M, N, cb->red),
                                    "linear bias gradient"));
    }
    return SV_OK;
}
