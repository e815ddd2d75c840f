/* Linked instead of cuda_absent.c in CUDA builds: the backend entry points of backend_impl.h and
 * gpu_info.h, answered by the CUDA module (core/cuda_module.h), loaded when first needed. */
#include <string.h>

#include "core/cuda_module.h"
#include "core/log.h"
#include "model/backend/backend_impl.h"
#include "model/backend/gpu_info.h"

sv_status sv_cuda_backend_create(const sv_backend_config *cfg, sv_backend **out) {
    const sv_cuda_module *m;
    *out = NULL;
    SV_TRY(sv_cuda_module_get(&m));
    return m->backend_create(cfg, out);
}

/* The module, when a CUDA device may be usable: none without the NVIDIA driver's library (the
 * module is then not loaded); a module that cannot be loaded is reported once and counts as no
 * device. */
static const sv_cuda_module *module_if_driver(void) {
    static int warned;
    const sv_cuda_module *m;
    if (!sv_cuda_driver_present()) return NULL;
    if (sv_cuda_module_get(&m) != SV_OK) {
        if (!__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED)) SV_WARN("no CUDA device usable: %s", sv_err_msg());
        sv_err_clear();
        return NULL;
    }
    return m;
}

int sv_cuda_backend_available(void) {
    const sv_cuda_module *m = module_if_driver();
    return m ? m->backend_available() : 0;
}

void sv_gpu_info_query(int device, sv_gpu_info *out) {
    const sv_cuda_module *m = module_if_driver();
    if (m)
        m->gpu_info_query(device, out);
    else
        memset(out, 0, sizeof *out);
}
