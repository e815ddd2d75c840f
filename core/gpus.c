#include "core/gpus.h"

#include <string.h>

int sv_gpu_for_local_rank(int local_rank, int ndev) {
    if (local_rank >= 0 && local_rank < ndev) return local_rank;
    return local_rank >= 0 && ndev == 1 ? 0 : -1;
}

int sv_gpu_shared(const unsigned char (*uuid)[16], int n, int *a, int *b) {
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if (!memcmp(uuid[i], uuid[j], 16)) {
                *a = i, *b = j;
                return 1;
            }
    return 0;
}
