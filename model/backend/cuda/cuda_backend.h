/* CUDA backend host-side state and the helpers shared by backend_cuda.c (core, memory, simple
 * ops), gemm.c (cuBLASLt) and attention_cudnn.c (cuDNN graph + fallback dispatch). C11 only. */
#ifndef SV_MODEL_BACKEND_CUDA_BACKEND_H
#define SV_MODEL_BACKEND_CUDA_BACKEND_H

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "model/backend/backend_impl.h"
#include "model/backend/cuda/cuda_internal.h"

struct sv_cuda_libs;
/* The module's library report (core/cuda_module.h sv_cuda_module.libs; gpu_info.c): the versions
 * of the CUDA libraries this module loaded and the devices the runtime sees, without a device. */
void sv_cuda_libs_query(struct sv_cuda_libs *out);

/* Library errors become SV_ERR_BACKEND with the library's own message and the failing call. */
#define SV_CUDA_TRY(call) \
    do { \
        cudaError_t sv_ce_ = (call); \
        if (sv_ce_ != cudaSuccess) { \
            cudaGetLastError(); /* cleared: the next kernel launch must not report this error as its own */ \
            return SV_FAIL(SV_ERR_BACKEND, "CUDA error in %s: %s (%s)", #call, cudaGetErrorString(sv_ce_), \
                           cudaGetErrorName(sv_ce_)); \
        } \
    } while (0)

#define SV_CUBLAS_TRY(call) \
    do { \
        cublasStatus_t sv_bs_ = (call); \
        if (sv_bs_ != CUBLAS_STATUS_SUCCESS) \
            return SV_FAIL(SV_ERR_BACKEND, "cuBLASLt error in %s: %s", #call, cublasLtGetStatusString(sv_bs_)); \
    } while (0)

/* cuDNN keeps a more detailed last-error string; include it. */
sv_status sv_cuda_cudnn_fail(cudnnStatus_t st, const char *call, const char *file, int line);
#define SV_CUDNN_TRY(call) \
    do { \
        cudnnStatus_t sv_ds_ = (call); \
        if (sv_ds_ != CUDNN_STATUS_SUCCESS) return sv_cuda_cudnn_fail(sv_ds_, #call, __FILE__, __LINE__); \
    } while (0)

#define SV_CUBLAS_V2_TRY(call) \
    do { \
        cublasStatus_t sv_bs_ = (call); \
        if (sv_bs_ != CUBLAS_STATUS_SUCCESS) \
            return SV_FAIL(SV_ERR_BACKEND, "cuBLAS error in %s: %s", #call, cublasGetStatusString(sv_bs_)); \
    } while (0)

/* Cached GEMM: descriptors and the heuristic's algorithms for one problem signature. */
typedef struct sv_cuda_gemm_key {
    int kind; /* SV_GEMM_FWD, SV_GEMM_DGRAD, SV_GEMM_WGRAD */
    int M, N, K;
    int bias;  /* bias epilogue requested */
    int d_f32; /* D (and C) fp32 whatever the compute dtype: wgrad, and the staged forward */
    int align; /* common alignment (bytes, power of two <= 256) of the operand pointers */
} sv_cuda_gemm_key;

enum { SV_GEMM_FWD = 0, SV_GEMM_DGRAD = 1, SV_GEMM_WGRAD = 2 };

/* The column-major problem a plan computes: D(m x n) = op(A) op(B) (+ beta C), as both
 * cuBLASLt's layouts and the cublasGemmEx fallback take it. */
typedef struct sv_cuda_gemm_dims {
    cublasOperation_t ta, tb;
    int m, n, k, lda, ldb, ldc;
    cudaDataType_t ab, dt; /* A/B and C/D types */
} sv_cuda_gemm_dims;

#define SV_CUDA_GEMM_ALGOS 8 /* heuristic results kept per plan, tried in order */
#define SV_CUDA_NOTE 256     /* bytes of a path note (sv_be_last_path) */

typedef struct sv_cuda_gemm_plan {
    sv_cuda_gemm_key key;
    int used;
    sv_cuda_gemm_dims dims;
    /* key.bias only: no algorithm ran the BIAS epilogue (none offered, or every one failed), so
     * the forward takes the staged path (fp32 GEMM, then the epilogue kernel) instead. */
    int no_bias_epi;
    int n_algo;   /* heuristic results in algo[] */
    int cur;      /* the algorithm in use; cur == n_algo: the cublasGemmEx fallback */
    int verified; /* algorithm `cur` has run once: a later failure is an error, not a refusal */
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t a, b, c;
    cublasLtMatmulAlgo_t algo[SV_CUDA_GEMM_ALGOS];
    char note[SV_CUDA_NOTE]; /* what runs (set when it first ran) */
} sv_cuda_gemm_plan;

#define SV_CUDA_GEMM_PLANS 64
/* Staging buffer of the forward's epilogue kernel (bf16 compute: the GEMM's fp32 result, in row
 * chunks that fit): allocated once at create, like the cuBLASLt workspace. */
#define SV_CUDA_STAGE_BYTES (32u << 20)

/* Attention plan for one (B, T, D, H): the cuDNN execution plans when cuDNN accepted the graph,
 * otherwise NULL (that direction runs the fallback kernels). Both directions save/consume the
 * same (B,H,T) log-sum-exp statistics, so either forward pairs with either backward. */
/* Descriptors a cuDNN plan was built from; kept alive as long as the plan (the backend API does
 * not promise that a finalised plan no longer refers to its engine config and graph). */
typedef struct sv_cuda_desc_list {
    cudnnBackendDescriptor_t d[24];
    int n;
} sv_cuda_desc_list;

typedef struct sv_cuda_attn_plan {
    int B, T, D, H;
    int used;
    cudnnBackendDescriptor_t fwd, bwd;
    int64_t fwd_ws, bwd_ws;
    sv_cuda_desc_list fwd_keep, bwd_keep;
    /* per direction: the cuDNN engine that runs, or why the fallback kernels run instead (the
     * refusal with cuDNN's own last-error text) */
    char why[2][SV_CUDA_NOTE];
} sv_cuda_attn_plan;

#define SV_CUDA_ATTN_PLANS 16

typedef struct sv_cuda_backend {
    sv_backend base;
    int device;
    int bf16;                          /* compute dtype is bf16 */
    double peak;                       /* dense bf16 FLOP/s from the device-name table, 0 if unknown */
    cudaStream_t stream;               /* compute stream: every op and copy is enqueued here */
    cudaStream_t copy_stream;          /* host-to-device batch uploads (sv_be_upload_async) */
    cudaEvent_t ev_compute, ev_copied; /* ordering between the two streams */

    cublasLtHandle_t lt;
    void *lt_ws; /* cuBLASLt workspace, sized once at create */
    size_t lt_ws_bytes;
    sv_cuda_gemm_plan gemm[SV_CUDA_GEMM_PLANS];
    int gemm_next_evict;
    cublasHandle_t blas; /* cublasGemmEx fallback: created on first need, shares lt_ws */
    float *stage;        /* SV_CUDA_STAGE_BYTES: fp32 GEMM results for the epilogue kernel */

    cudnnHandle_t dnn; /* NULL when cuDNN could not be initialised (fallback attention only) */
    void *dnn_ws;      /* cuDNN workspace: grown only when a new attention shape is planned */
    size_t dnn_ws_bytes;
    sv_cuda_attn_plan attn[SV_CUDA_ATTN_PLANS];
    int attn_drop_noted;                       /* the "dropout runs the fallback kernels" note was logged */
    char dnn_off[SV_CUDA_NOTE];                /* why cuDNN is not used at all (dnn == NULL), else "" */
    char note[SV_BE_PATH_KINDS][SV_CUDA_NOTE]; /* sv_be_last_path, per kind */

    float *red; /* column-reduction partials (bias / LayerNorm grads), grown per new shape */
    size_t red_floats;
    double *sumsq_dev;  /* SV_CUDA_SUMSQ_BLOCKS partials + 1 result */
    double *sumsq_host; /* pinned, 1 double */
} sv_cuda_backend;

static inline sv_cuda_backend *sv_cuda_be(sv_backend *be) { return (sv_cuda_backend *)be; }
static inline const sv_cuda_backend *sv_cuda_cbe(const sv_backend *be) { return (const sv_cuda_backend *)be; }

/* Set the path note of `kind` (sv_be_last_path), printf-style. */
void sv_cuda_note(sv_cuda_backend *cb, sv_be_path_kind kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Turn a kernel launcher's result into a status naming the op. */
sv_status sv_cuda_launch_check(cudaError_t e, const char *op);
/* Make sure the reduction scratch holds at least `floats` floats (synchronising growth; only
 * the first use of a larger shape grows it). */
sv_status sv_cuda_reserve_red(sv_cuda_backend *cb, size_t floats);

/* gemm.c */
sv_status sv_cuda_gemm_init(sv_cuda_backend *cb);
void sv_cuda_gemm_free(sv_cuda_backend *cb);
sv_status sv_cuda_linear_fwd(sv_backend *be, void *out, void *pre_gelu, const void *in, const void *W, const void *bias,
                             int M, int N, int K);
sv_status sv_cuda_linear_bwd(sv_backend *be, void *d_in, float *dW, float *db, void *d_out, const void *in,
                             const void *W, const void *pre_gelu, int M, int N, int K);

/* attention_cudnn.c */
sv_status sv_cuda_attn_init(sv_cuda_backend *cb);
void sv_cuda_attn_free(sv_cuda_backend *cb);
/* drop: attention-probability dropout (backend.h sv_be_attention_fwd_drop); a non-NULL drop runs
 * both directions on the fallback kernels (attention_fallback.cu), never cuDNN. */
sv_status sv_cuda_attention_fwd(sv_backend *be, void *out, void *saved, void *scratch, const void *qkv, int B, int T,
                                int D, int H, const sv_drop *drop);
sv_status sv_cuda_attention_bwd(sv_backend *be, void *d_qkv, void *scratch, const void *d_out, const void *qkv,
                                const void *out, const void *saved, int B, int T, int D, int H, const sv_drop *drop);

#endif
