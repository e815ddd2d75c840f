/* The GELU derivative of every bf16 value, as a table, and where the backward pass reads it.
 *
 * With bf16 activation storage the GELU backward multiplies d_out by gelu'(x) of a stored bf16
 * pre-activation x: a function of x's 16 bits alone, so the AVX-512 table's gelu_bwd16
 * (gelu_avx512.h) can gather it from a table instead of evaluating the erfc and exp chains per
 * element. Which is faster depends on the core: on the AMD EPYC Zen 4 (family 0x19) the gather
 * is 2.6-2.8x faster (0.45-0.49 against 1.26-1.29 ns per element, one thread, in L2 and from
 * memory); on the Zen 5 (family 0x1A) it was slower (0.99-1.21 against 0.83-0.92 ns), and on the
 * Intel Xeon with AMX the step was slower with it (measured against GCC's loop of the formula,
 * before the intrinsics kernel of change 14; not measured again since: docs/performance.md
 * changes 13 and 31, "Not changed"). So the gather is used on AMD family 0x19 only, the formula
 * everywhere else; both give the same bits, so the choice changes speed, never a result.
 *
 * Contract: sv_cpu_gelu_grad16()[h] == sv_gelu_grad(sv_bf16_to_f32(h)) (core/elementwise.h) bit
 * for bit, for all 65536 h (NaN patterns give that function's NaN for that input). The table
 * (256 KiB) is filled once, on the first call from any thread (pthread_once), with the scalar
 * formula. */
#ifndef SV_MODEL_BACKEND_CPU_GELU_GRAD16_H
#define SV_MODEL_BACKEND_CPU_GELU_GRAD16_H

/* The table, indexed by a bf16 value's bits; never NULL. */
const float *sv_cpu_gelu_grad16(void);

/* 1 when gelu_bwd16 gathers from the table on this CPU (the rule above, or the forced mode). */
int sv_cpu_gelu_bwd16_gather(void);

/* Tests and measurements: force the form (1 gather, 0 compute) or restore the CPU's rule (-1). */
void sv_cpu_gelu_bwd16_force(int mode);

#endif
