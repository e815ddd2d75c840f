/* CPU backend: the hardware ceiling of a GEMM engine, measured.
 *
 * The peak of one core for the one instruction a GEMM engine (gemm_engine.h) is built on, from an
 * in-register loop: independent accumulators (enough to cover the instruction's latency on the
 * CPUs the project runs on), no loads or stores inside the loop. It is the ISA ceiling that MFU is
 * stated against, as opposed to the speed of the project's own GEMM kernel. */
#ifndef SV_MODEL_BACKEND_CPU_ISA_PEAK_H
#define SV_MODEL_BACKEND_CPU_ISA_PEAK_H

#include <stddef.h>

/* Peak FLOP/s of ONE core (the calling thread) for the instruction `engine` uses, counting two
 * FLOPs per multiply-add:
 *   "avx512-f32"  VFMADD231PS zmm                      32 FLOP per instruction
 *   "avx2-f32"    VFMADD231PS ymm                      16
 *   "avx512-bf16" VDPBF16PS zmm                        64
 *   "amx-bf16"    TDPBF16PS, 16x16 fp32 tile += 16x32 bf16 x 32x16 bf16   16384
 *   "openblas", "openblas-threaded" (OpenBLAS threading inside a call, SHARDVIT_CPU_GEMM=blas) or
 *   NULL: the widest fp32 FMA this CPU has (avx512-f32, else avx2-f32).
 * Runs for about `seconds` (at least a few milliseconds) and returns the best of the ~0.5 ms
 * repetitions within that time, after a short warm-up (frequency and power-state transitions).
 * Returns 0 for an unknown name, when the CPU (or OS) lacks the feature, when the kernel refuses
 * the AMX tile state (sv_gemm_amx_permission), and on non-x86-64 builds. The binary needs no
 * -march: each loop is compiled for its own target and only run after a CPU check. */
double sv_cpu_isa_peak_flops(const char *engine, double seconds);

/* The GEMM engine named in a CPU device name (sv_be_device_name), whose bracket lists items
 * separated by ", ", one of them "gemm NAME", e.g.
 *   "Intel Xeon (1 thread) [avx512, gemm amx-bf16, attn bf16]"  ->  "amx-bf16".
 * Only the last [...] bracket of the name is searched (a CPU model string may contain brackets
 * of its own). Writes NAME (truncated to n - 1 bytes) to out and returns 1; returns 0 with out = ""
 * when there is no such item (the CPU backend in fp32 mode used to name none: OpenBLAS sgemm),
 * or when name is NULL. out may be NULL (then only the return value is meaningful). */
int sv_cpu_gemm_engine_of_device(const char *device_name, char *out, size_t n);

#endif
