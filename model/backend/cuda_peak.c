/* sv_cuda_peak_flops_for (backend_impl.h): a pure function of the device name, in every build
 * (tests/model/test_cuda_peak.c checks it without a GPU) and, compiled a second time, inside the
 * CUDA module (model/backend/cuda/CMakeLists.txt), whose backend states MFU against it. */
#include "model/backend/backend_impl.h"

#include <string.h>

/* pat in name as a whole word: at the start or after a space, followed by the end, a space or '-'. */
static int has_word(const char *name, const char *pat) {
    const size_t L = strlen(pat);
    for (const char *p = strstr(name, pat); p; p = strstr(p + 1, pat))
        if ((p == name || p[-1] == ' ') && (p[L] == 0 || p[L] == ' ' || p[L] == '-')) return 1;
    return 0;
}

double sv_cuda_peak_flops_for(const char *name, int bf16) {
    static const struct {
        const char *pat;
        double bf16, fp32;
    } table[] = {
        /* the more specific names first; 0: a variant not in the table (unknown, not a wrong figure) */
        {"H100 NVL", 0.0, 0.0},    {"H100 PCIe", 756e12, 51.2e12}, {"H100", 989.4e12, 66.9e12}, /* SXM */
        {"H200 NVL", 0.0, 0.0},    {"H200", 989.4e12, 66.9e12},                                 /* SXM */
        {"A100", 312e12, 19.5e12}, {"L40S", 362.05e12, 91.6e12},   {"RTX 4090", 165.2e12, 82.6e12},
    };
    for (size_t i = 0; name && i < sizeof table / sizeof table[0]; i++)
        if (has_word(name, table[i].pat)) return bf16 ? table[i].bf16 : table[i].fp32;
    return 0.0;
}
