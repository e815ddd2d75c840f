/* CPU backend: bf16 GEMM with fp32 accumulation on AVX-512 BF16 (VDPBF16PS), for the linear
 * layers in bf16 mode.
 *
 * Operands are fp32 arrays; packing converts them to bf16 with round-to-nearest-even (exact
 * for values that are already bf16-representable, which every compute buffer is in bf16
 * mode) and lays them out in pairs along the reduction dimension, as VDPBF16PS consumes them.
 * An odd reduction length is padded with a zero. Products of two bf16 values are exact in
 * fp32, so the result is the fp32-accumulated dot product of the bf16 inputs, in this order:
 * for each output element one fp32 accumulator adds the reduction pairs in index order
 * (pair p = elements 2p and 2p+1). The order depends only on the reduction length, never on
 * which rows a call covers, so splitting rows across threads gives identical bits.
 * Denormals are flushed: bf16 inputs below FLT_MIN count as zero and results below FLT_MIN
 * become zero (VDPBF16PS and VCVTNEPS2BF16 ignore MXCSR and always flush).
 *
 * Two-step use, so that the shared operand is packed once per layer call and shared by all
 * worker threads while each worker computes its own rows:
 *   1. sv_gemm_bf16_pack: the "B" operand (the one spanning the output columns) into a packed
 *      buffer of sv_gemm_bf16_pack_bytes bytes; workers may pack disjoint column panels.
 *   2. sv_gemm_bf16_run: C (m rows) = / += A (m rows) * packed B, single-threaded, using a
 *      per-thread scratch of sv_gemm_bf16_scratch_bytes() bytes (the packed A block).
 * sv_gemm_engine_gemm (gemm_engine.h) does both steps on one thread.
 *
 * Every function here except sv_gemm_bf16_available executes AVX-512 BF16 instructions:
 * call them only after sv_gemm_bf16_available() returned 1. No function allocates. */
#ifndef SV_MODEL_BACKEND_CPU_GEMM_BF16_H
#define SV_MODEL_BACKEND_CPU_GEMM_BF16_H

#include <stddef.h>

#include "model/backend/cpu/gemm_engine.h"

/* Columns per packed panel of B (two zmm of fp32 accumulators per row). */
#define SV_GEMM_BF16_NR 32

/* sv_gemm_mat (strided operand views) and the engine table entry sv_gemm_engine_avx512_bf16 are
 * in gemm_engine.h. */

/* 1 when this CPU (and OS) runs AVX-512 F/BW/VL + BF16, else 0. Cheap; no side effects. */
int sv_gemm_bf16_available(void);

/* Bytes of a packed B with n columns and reduction length r (n, r >= 0). */
size_t sv_gemm_bf16_pack_bytes(int n, int r);

/* Bytes of the per-thread scratch sv_gemm_bf16_run needs (a constant; any shapes). */
size_t sv_gemm_bf16_scratch_bytes(void);

/* Pack columns [j0, j1) of B (n columns, reduction r) into pb (sv_gemm_bf16_pack_bytes(n, r)
 * bytes, 64-byte aligned). j0 must be a multiple of SV_GEMM_BF16_NR and j1 a multiple of it or
 * n, so that workers packing disjoint ranges write disjoint bytes. */
void sv_gemm_bf16_pack(void *pb, sv_gemm_mat B, int n, int r, int j0, int j1);

/* The same panels with rp_alloc >= (r + 1) / 2 pairs per panel, the pairs past the data zeroed
 * (the AMX engine's k-steps of 16 pairs: gemm_amx.c). Panel jp starts at jp * rp_alloc * NR words. */
void sv_gemm_bf16_pack_padded(void *pb, sv_gemm_mat B, int n, int r, int j0, int j1, long rp_alloc);

/* Reduction pairs per block of sv_gemm_bf16_run: 128 or 256 pins that blocking, anything else
 * restores the default (256; the rows per A block follow so that the scratch stays the same). Results are the same bits either way; the
 * tests compare the two. Process-wide; not for use while another thread runs a GEMM. */
void sv_gemm_bf16_set_kcp(int kcp);

/* C (m, n) (row stride ldc) = A (m, r) * B (r, n), or += when accumulate, with B given packed
 * (sv_gemm_bf16_pack over all n columns with the same n, r). scratch: 64-byte aligned,
 * sv_gemm_bf16_scratch_bytes() bytes, private to the calling thread. m, n, r >= 0; with
 * r == 0, C is zeroed (or left as is when accumulate). */
void sv_gemm_bf16_run(float *C, size_t ldc, sv_gemm_mat A, int m, const void *pb, int n, int r, int accumulate,
                      void *scratch);

#endif
