/* CPU backend: the fp32 GEMM engines of gemm_f32.c (the interface and the numerics contract
 * are gemm_engine.h's):
 *   avx512-f32  AVX-512F + FMA, 12 x 32 register tile, panels of 32 columns
 *   avx2-f32    AVX2 + FMA, 6 x 16 register tile, panels of 16 columns
 * Each output is one fp32 accumulator c = fma(a_k, b_k, c) for k = 0, 1, ... in order, so
 * red_block is 1 (any reduction chunking gives the same bits). */
#ifndef SV_MODEL_BACKEND_CPU_GEMM_F32_H
#define SV_MODEL_BACKEND_CPU_GEMM_F32_H

#include "model/backend/cpu/gemm_engine.h"

extern const sv_gemm_engine sv_gemm_engine_avx512_f32;
extern const sv_gemm_engine sv_gemm_engine_avx2_f32;

#endif
