/* The transport-independent body of the comm tests on backend buffers: every collective kind on
 * buffers from a compute backend, checked against values computed on the host, bf16 sums, host
 * buffers, several requests in flight waited out of order, a chain of dependent collectives
 * longer than the request pool with no host synchronisation in between, progress calls between
 * issue and wait, a split communicator, and the stream-ordering contract of comm.h (a
 * collective sees what the compute stream was given before its issue; compute enqueued after
 * its wait sees the result).
 *
 * The same body runs over MPI and the local world with the CPU backend (tests/comm/
 * comm_body_cpu.c, ctest on every build) and over NCCL with the CUDA backend
 * (tests/gpu/gpu_comm_nccl.c). The statistics it checks at the end are counted by the helpers
 * that issue its collectives, so they follow whatever the body does. */
#ifndef SV_TESTS_COMM_BODY_H
#define SV_TESTS_COMM_BODY_H

#include <stdint.h>

#include "fsdp/comm.h"
#include "model/backend/backend.h"

/* Run every check on `c` with buffers from `be` (the backend whose compute stream c orders
 * against; device memory for NCCL). Collective: every rank of c calls it. Exits 1 (CHECK) on the
 * first failure. Returns how many collectives it issued on c. */
uint64_t comm_body_run(sv_comm *c, sv_backend *be);

#endif
