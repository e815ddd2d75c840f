/* The CPUs this process may use, and the default share of one rank.
 *
 * A process may run on fewer CPUs than the machine has online: a Slurm job's cpuset, `taskset`,
 * a container's --cpuset-cpus, an MPI launcher's binding. Every default thread count (compute
 * threads per rank, loader workers, import workers) is taken from here, never from the online
 * count, so that ranks do not oversubscribe the cores they were given. */
#ifndef SV_CORE_CPUS_H
#define SV_CORE_CPUS_H

/* CPUs in this process's affinity mask; the online count where the mask cannot be read; >= 1. */
int sv_cpus_usable(void);

/* Record the start-up measure over the ranks of this node (app/mpi_env.c, from their affinity
 * masks): node_cpus, the CPUs of the union of their masks, and this rank's share. Values < 1
 * clear them. */
void sv_cpus_set_node(int node_cpus, int rank_share);

/* The CPUs the ranks of this node may use together: the recorded union of their masks, else
 * sv_cpus_usable() (one process); >= 1. What MFU's peak counts and oversubscription is judged
 * against (bound ranks each see only their own CPUs in sv_cpus_usable). */
int sv_cpus_node(void);

/* Default compute threads of one of `local_size` ranks on this node: the recorded share where
 * there is one, else sv_cpus_usable() / local_size; >= 1. */
int sv_cpus_rank_share(int local_size);

#endif
