/* Which GPU a rank uses: pure functions of what the process sees, shared by the CUDA backend
 * (model/backend/cuda/) and the NCCL communicator (fsdp/cuda/), and testable without a GPU. */
#ifndef SV_CORE_GPUS_H
#define SV_CORE_GPUS_H

/* The CUDA device (index among the ndev this process sees) of the rank with node-local index
 * local_rank: that index when the process sees at least local_rank + 1 devices (one process per
 * GPU, each seeing all of them), device 0 when it sees exactly one (the launcher bound one GPU to
 * each rank: Slurm --gpus-per-task / --gpu-bind, CUDA_VISIBLE_DEVICES set per rank), else -1
 * (more ranks on the node than GPUs). */
int sv_gpu_for_local_rank(int local_rank, int ndev);

/* Two of the n ranks of a node on the same GPU (uuid: their devices' 16-byte UUIDs, in local-rank
 * order): 1 with *a < *b the first such pair, else 0. */
int sv_gpu_shared(const unsigned char (*uuid)[16], int n, int *a, int *b);

#endif
