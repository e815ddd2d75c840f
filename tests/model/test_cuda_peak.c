/* The peak the CUDA backend states MFU against (model/backend/backend_impl.h
 * sv_cuda_peak_flops_for): by device name as cudaDeviceProp reports it, and by precision (the
 * bf16 tensor-core rate, the CUDA-core fp32 rate for fp32 runs, which use no TF32). Runs on any
 * machine: the table is plain C. */
#include "check.h"
#include "model/backend/backend_impl.h"

int main(void) {
    static const struct {
        const char *name;
        double bf16, fp32;
    } cases[] = {
        {"NVIDIA H100 80GB HBM3", 989.4e12, 66.9e12},
        {"NVIDIA H100 PCIe", 756e12, 51.2e12},
        {"NVIDIA H100 NVL", 0, 0},
        {"NVIDIA H200", 989.4e12, 66.9e12},
        {"NVIDIA H200 NVL", 0, 0},
        {"NVIDIA A100-SXM4-80GB", 312e12, 19.5e12},
        {"NVIDIA A100 80GB PCIe", 312e12, 19.5e12},
        {"NVIDIA RTX A1000", 0, 0}, /* not an A100: a whole-word match */
        {"NVIDIA L40S", 362.05e12, 91.6e12},
        {"NVIDIA GeForce RTX 4090", 165.2e12, 82.6e12},
        {"NVIDIA GeForce RTX 40900", 0, 0},
        {"Tesla V100-SXM2-16GB", 0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        double b = sv_cuda_peak_flops_for(cases[i].name, 1), f = sv_cuda_peak_flops_for(cases[i].name, 0);
        printf("%-28s bf16 %7.1f fp32 %6.1f TFLOP/s\n", cases[i].name, b / 1e12, f / 1e12);
        CHECK(b == cases[i].bf16 && f == cases[i].fp32);
    }
    CHECK(sv_cuda_peak_flops_for(NULL, 1) == 0);
    printf("test_cuda_peak: OK\n");
    return 0;
}
