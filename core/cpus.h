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

/* Record the start-up measure of this rank's share (app/mpi_env.c: from the affinity masks of the
 * ranks on this node). n < 1 clears it. */
void sv_cpus_set_rank_share(int n);

/* Default compute threads of one of `local_size` ranks on this node: the recorded share where
 * there is one, else sv_cpus_usable() / local_size; >= 1. */
int sv_cpus_rank_share(int local_size);

#endif
