/* The environment overrides of shardvit's libraries (docs/environment.md lists every variable).
 * app/ is the only place that reads them: each goes into a library setter or configuration
 * field, so the libraries never consult the environment. The SHARDVIT_CPU_* backend overrides
 * are app/backend_env.h; the training test hooks SHARDVIT_TEST_POISON_BATCH and
 * SHARDVIT_TEST_SIGNAL_AT are read by app/cmd_train.c into sv_train_hooks (app/train_step.h),
 * SHARDVIT_TEST_SIGNAL_STARTUP by app/main.c. */
#ifndef SV_APP_ENV_OVERRIDES_H
#define SV_APP_ENV_OVERRIDES_H

#include "core/status.h"
#include "fsdp/comm.h"

/* The process-wide overrides, applied once before a command runs (before the first clock read):
 *   SHARDVIT_CLOCK=mono|auto                 mono: sv_clock_use_mono (core/clock.h)
 *   SHARDVIT_RA_ISA=scalar|avx2|avx512       sv_ra_simd_set_level (data/randaug_simd.h)
 *   SHARDVIT_FAULT_WRITE_FAIL_AFTER_BYTES=N  sv_fileio_inject_write_fault(N) (core/fileio.h)
 *   SHARDVIT_FAULT_WRITE_STALL_AFTER_BYTES=N sv_fileio_inject_write_stall(N)
 *   SHARDVIT_TEST_CRASH_AT=POINT[@STEP]      sv_ckpt_set_crash_point (ckpt/checkpoint.h)
 * An unset or empty variable changes nothing. Another value, or a malformed byte count, is
 * SV_ERR_INVALID naming the variable and its value. */
sv_status sv_env_overrides_apply(void);

/* The world communicator's configuration: kind (app/mpi_env.h), timeout_s, and chunk_bytes
 * from SHARDVIT_COMM_CHUNK_BYTES=N (decimal; N < 64 counts as 64; unset or not a number: 0, the
 * transport's default; fsdp/comm.h). */
sv_comm_config sv_env_comm_config(double timeout_s);

#endif
