/* The two functions of sv_comm that every transport uses, the NCCL transport included: in sv_comm
 * and, compiled a second time, inside the CUDA module (fsdp/cuda/CMakeLists.txt), so that the
 * module takes nothing from the program but sv_core (core/cuda_module.h). */
#include "fsdp/comm_impl.h"

#include <stdio.h>
#include <string.h>

#include "core/clock.h"

size_t sv_comm_dtype_size(sv_comm_dtype d) {
    switch (d) {
    case SV_COMM_F32: return 4;
    case SV_COMM_BF16: return 2;
    case SV_COMM_F64: return 8;
    case SV_COMM_I64: return 8;
    case SV_COMM_U8: return 1;
    }
    return 0;
}

void sv_comm_base_init(sv_comm *c, const sv_comm_ops *ops, const sv_comm_config *cfg, int rank, int size,
                       const char *label) {
    memset(c, 0, sizeof *c);
    c->ops = ops;
    c->cfg = *cfg;
    c->rank = rank;
    c->size = size;
    snprintf(c->label, sizeof c->label, "%s", label ? label : "world");
    c->t0 = sv_now_s();
    c->next_seq = 1;
}
