#include "app/mpi_env.h"

#include <mpi.h>
#include <sched.h>
#include <signal.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/cpus.h"

/* MPICH allocates the temporary buffers of a nonblocking collective when it starts and frees them
 * when MPI_Test completes it, every call of every step. With glibc's defaults each free that
 * leaves more than 128 KiB at the top of the heap gives it back to the kernel (brk), and the next
 * collective faults the same pages in again, zeroed: ~20 brk calls and their page faults per
 * step, 5% of a bf16 vit-28 step at 2 ranks (docs/performance.md change 23). A fixed trim
 * threshold keeps the freed top (the heap never grows past its peak use; it is only not shrunk),
 * and a fixed mmap threshold keeps blocks up to 32 MiB on the heap (glibc's own dynamic threshold
 * reaches that size too, but setting the trim threshold switches the dynamic one off). A user's
 * GLIBC_TUNABLES malloc settings win. */
static void keep_heap_pages(void) {
#if defined(__GLIBC__)
    const char *t = getenv("GLIBC_TUNABLES");
    if (t && strstr(t, "glibc.malloc.")) return;
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 512 << 20);
#endif
}

void sv_mpi_env_init(int *argc, char ***argv, int *rank, int *size) {
    keep_heap_pages();
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited) {
        int provided;
        MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, size);
}

int sv_mpi_env_singleton(void) {
    int inited = 0, size = 0;
    MPI_Initialized(&inited);
    if (!inited || MPI_Comm_size(MPI_COMM_WORLD, &size) != MPI_SUCCESS || size != 1) return 0;
    static const char *const pmi[] = {"PMI_FD", "PMI_PORT"}; /* MPICH's own test (hydra, srun's PMI) */
    for (size_t i = 0; i < sizeof pmi / sizeof pmi[0]; i++)
        if (getenv(pmi[i])) return 0;
    return 1;
}

sv_comm_kind sv_mpi_env_comm_kind(void) { return SV_COMM_KIND_MPI; }

void sv_mpi_env_finalize(void) {
    int inited = 0, fin = 0;
    MPI_Initialized(&inited);
    MPI_Finalized(&fin);
    if (inited && !fin) MPI_Finalize();
}

/* MPI_Abort asks the process manager to kill the job and waits for it to do so (MPICH's PMI-1
 * abort blocks reading the reply). A rank whose host is cut off from mpiexec (its link is down)
 * would wait there forever; after this many seconds it leaves on its own. */
#define SV_ABORT_WAIT_S 3
static volatile sig_atomic_t g_abort_code = 1;
static void abort_watchdog(int sig) {
    (void)sig;
    _exit(g_abort_code);
}

void sv_mpi_env_abort(int code) {
    int inited = 0, fin = 0;
    MPI_Initialized(&inited);
    MPI_Finalized(&fin);
    fflush(stdout);
    fflush(stderr);
    /* Give the launcher a moment to forward this rank's last lines before it tears the job down. */
    usleep(300 * 1000);
    if (inited && !fin) {
        g_abort_code = code;
        signal(SIGALRM, abort_watchdog);
        alarm(SV_ABORT_WAIT_S);
        MPI_Abort(MPI_COMM_WORLD, code);
    }
    exit(code);
}

/* The node's CPUs (the union of its ranks' affinity masks) and this rank's share of them: with
 * one mask shared by all (a job's cpuset, no binding) its CPUs / the ranks; with each rank bound
 * to CPUs of its own (srun's or a launcher's binding) its own mask; in between the smaller of the
 * two. Every rank takes part in the reduction, also one whose mask cannot be read (it adds none
 * and records nothing). */
static void record_node_cpus(MPI_Comm node, int local_size) {
    cpu_set_t own, all;
    CPU_ZERO(&own);
    int ok = sched_getaffinity(0, sizeof own, &own) == 0 && CPU_COUNT(&own) > 0;
    if (!ok) CPU_ZERO(&own);
    if (MPI_Allreduce(&own, &all, (int)sizeof own, MPI_BYTE, MPI_BOR, node) != MPI_SUCCESS || !ok) return;
    int n_node = CPU_COUNT(&all), n_own = CPU_COUNT(&own), n_fair = n_node / (local_size > 0 ? local_size : 1);
    int share = n_own < n_fair ? n_own : n_fair;
    sv_cpus_set_node(n_node, share > 0 ? share : 1);
}

void sv_mpi_env_local(int *local_rank, int *local_size) {
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, local_rank);
    MPI_Comm_size(node, local_size);
    record_node_cpus(node, *local_size);
    MPI_Comm_free(&node);
}

void sv_mpi_env_library_version(char *buf, size_t n) {
    char v[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    if (n == 0) return;
    buf[0] = 0;
    if (MPI_Get_library_version(v, &len) != MPI_SUCCESS) return;
    v[len < (int)sizeof v ? len : (int)sizeof v - 1] = 0;
    /* the first line, runs of blanks as one space ("MPICH Version:\t4.0.2" -> "MPICH Version: 4.0.2") */
    size_t o = 0;
    for (const char *c = v; *c && *c != '\n' && o + 1 < n; c++) {
        int blank = *c == ' ' || *c == '\t';
        if (blank && (o == 0 || buf[o - 1] == ' ')) continue;
        buf[o++] = blank ? ' ' : *c;
    }
    while (o > 0 && buf[o - 1] == ' ') o--;
    buf[o] = 0;
}
