/* core/gpus: which GPU a rank uses (the rule the CUDA backend and the NCCL communicator share;
 * plain C, so it runs without a GPU). A process that sees all of a node's GPUs takes its
 * node-local rank; one that sees a single GPU (Slurm --gpus-per-task / --gpu-bind,
 * CUDA_VISIBLE_DEVICES per rank) takes device 0 whatever its local rank (before, every rank but
 * local rank 0 failed at start-up there); more ranks than visible GPUs is refused; two ranks of a
 * node whose devices have the same UUID are found. */
#include <string.h>

#include "check.h"
#include "core/gpus.h"

int main(void) {
    /* one process sees all 8 GPUs of the node: local rank r uses device r */
    for (int r = 0; r < 8; r++) CHECK(sv_gpu_for_local_rank(r, 8) == r);
    /* one GPU bound to each rank: device 0 for every local rank */
    for (int r = 0; r < 8; r++) CHECK(sv_gpu_for_local_rank(r, 1) == 0);
    /* more ranks than the devices this process sees */
    CHECK(sv_gpu_for_local_rank(2, 2) == -1 && sv_gpu_for_local_rank(7, 4) == -1);
    CHECK(sv_gpu_for_local_rank(0, 0) == -1 && sv_gpu_for_local_rank(-1, 8) == -1);

    unsigned char u[4][16];
    for (int i = 0; i < 4; i++) memset(u[i], 0x10 + i, 16);
    int a = -1, b = -1;
    CHECK(!sv_gpu_shared((const unsigned char(*)[16])u, 4, &a, &b) && a == -1 && b == -1);
    u[3][15] = u[1][15]; /* differs from u[1] in the other bytes still */
    CHECK(!sv_gpu_shared((const unsigned char(*)[16])u, 4, &a, &b));
    memcpy(u[3], u[1], 16); /* ranks 1 and 3 on one GPU */
    CHECK(sv_gpu_shared((const unsigned char(*)[16])u, 4, &a, &b) && a == 1 && b == 3);
    memcpy(u[2], u[0], 16); /* the first pair in local-rank order */
    CHECK(sv_gpu_shared((const unsigned char(*)[16])u, 4, &a, &b) && a == 0 && b == 2);
    CHECK(!sv_gpu_shared((const unsigned char(*)[16])u, 1, &a, &b));
    printf("gpus: all passed\n");
    return 0;
}
