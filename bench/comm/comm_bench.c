/* Collective bandwidth through sv_comm next to the raw MPI call of the same size, in the style
 * of nccl-tests. Not a test: run by hand, e.g.
 *   mpiexec -n 2 build/bench/comm/comm_bench [--min 1K] [--max 64M] [--trials 3]
 * Size = bytes of the full (gathered / pre-reduction) buffer, as nccl-tests reports it;
 * count = size / 4 / ranks floats per rank. algbw = size / time, busbw = algbw * (n-1)/n for
 * both all_gather and reduce_scatter. Raw MPI is MPI_Iallgather / MPI_Ireduce_scatter_block +
 * MPI_Wait on a separate dup of MPI_COMM_WORLD, unchunked. Each size runs `trials` interleaved
 * rounds of (sv_comm, raw); the time columns are each side's best round, and sv/raw is the
 * median over rounds of raw/sv within the round (adjacent in time, so a machine-wide slow
 * phase hits both sides of a pair), which is steadier than best/best on a shared machine.
 * Time per round = slowest rank's mean over `iters` iterations. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "fsdp/comm.h"

/* "64K", "1M", "2G", "4096": bytes, or 0 when s is no size (a number, optionally K/M/G, > 0). */
static size_t parse_size(const char *s) {
    char *end = NULL;
    double v = strtod(s, &end);
    if (end == s) return 0;
    if (*end == 'K' || *end == 'k')
        v *= 1024, end++;
    else if (*end == 'M' || *end == 'm')
        v *= 1024 * 1024, end++;
    else if (*end == 'G' || *end == 'g')
        v *= 1024.0 * 1024 * 1024, end++;
    return *end || !(v >= 1 && v < 1e15) ? 0 : (size_t)v;
}

static const char k_usage[] =
    "usage: mpiexec -n N comm_bench [--min SIZE] [--max SIZE] [--trials T]\n\n"
    "Collective bandwidth of sv_comm next to the raw MPI call of the same size (all_gather, reduce_scatter;\n"
    "docs/comm.md). SIZE: bytes of the full buffer, e.g. 1K, 64M.\n\n"
    "flags:\n"
    "  --min SIZE     smallest buffer [1K]\n"
    "  --max SIZE     largest buffer (sizes double from --min) [64M]\n"
    "  --trials T     interleaved rounds per size, 1..101 [3]\n"
    "  --help         this text\n";

static void die(sv_status st) {
    fprintf(stderr, "comm_bench: %s: %s\n", sv_status_str(st), sv_err_msg());
    MPI_Abort(MPI_COMM_WORLD, 1);
}

typedef enum { AG, RS } coll;

#define MAX_TRIALS 101

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Mean seconds per iteration, slowest rank. */
static double run(coll k, int use_sv, sv_comm *c, MPI_Comm raw, float *send, float *recv, size_t count, int iters) {
    MPI_Barrier(raw);
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; i++) {
        if (use_sv) {
            sv_comm_req q;
            sv_status st = k == AG ? sv_comm_all_gather(c, recv, send, count, SV_COMM_F32, &q)
                                   : sv_comm_reduce_scatter(c, recv, send, count, SV_COMM_F32, SV_COMM_SUM, &q);
            if (st || (st = sv_comm_wait(c, &q))) die(st);
        } else {
            MPI_Request r;
            if (k == AG)
                MPI_Iallgather(send, (int)count, MPI_FLOAT, recv, (int)count, MPI_FLOAT, raw, &r);
            else
                MPI_Ireduce_scatter_block(send, recv, (int)count, MPI_FLOAT, MPI_SUM, raw, &r);
            MPI_Wait(&r, MPI_STATUS_IGNORE);
        }
    }
    double t = (MPI_Wtime() - t0) / iters, tmax = 0;
    MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, raw);
    return tmax;
}

int main(int argc, char **argv) {
    int provided = 0, rank = 0, n = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    sv_log_setup(rank, SV_LOG_INFO, 0);
    size_t min_b = 1024, max_b = 64u << 20;
    int trials = 3;
    /* flags before any work: --help prints the usage (exit 0); an unknown flag or a bad value is
     * one line on rank 0's stderr and exit 2 */
    const char *bad = NULL;
    char why[256];
    for (int i = 1; i < argc && !bad; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            if (rank == 0) fputs(k_usage, stdout);
            MPI_Finalize();
            return 0;
        }
        const char *eq = strchr(a, '=');
        size_t len = eq ? (size_t)(eq - a) : strlen(a);
        const char *val = eq ? eq + 1 : i + 1 < argc ? argv[++i] : NULL;
        int is_min = len == 5 && !strncmp(a, "--min", 5), is_max = len == 5 && !strncmp(a, "--max", 5);
        int is_trials = len == 8 && !strncmp(a, "--trials", 8);
        if (!is_min && !is_max && !is_trials) {
            snprintf(why, sizeof why, "unknown flag or argument '%.*s' (see comm_bench --help)", (int)len, a);
            bad = why;
        } else if (!val) {
            snprintf(why, sizeof why, "%.*s: missing value", (int)len, a);
            bad = why;
        } else if (is_trials) {
            char *end;
            long t = strtol(val, &end, 10);
            trials = end != val && !*end && t >= 1 && t <= MAX_TRIALS ? (int)t : 0;
            if (!trials) {
                snprintf(why, sizeof why, "--trials: invalid value '%s' (expected 1..%d)", val, MAX_TRIALS);
                bad = why;
            }
        } else {
            size_t b = parse_size(val);
            if (!b) {
                snprintf(why, sizeof why, "%s: invalid value '%s' (expected bytes like 4096, 64K, 1M)",
                         is_min ? "--min" : "--max", val);
                bad = why;
            }
            *(is_min ? &min_b : &max_b) = b;
        }
    }
    if (!bad && min_b > max_b) {
        snprintf(why, sizeof why, "--min %zu is more than --max %zu", min_b, max_b);
        bad = why;
    }
    if (bad) {
        if (rank == 0) fprintf(stderr, "comm_bench: %s\n", bad);
        MPI_Finalize();
        return 2;
    }
    sv_comm_config cfg = {.kind = SV_COMM_KIND_MPI, .timeout_s = 300};
    sv_comm *c = NULL;
    sv_status st = sv_comm_create_world(&cfg, &c);
    if (st) die(st);
    MPI_Comm raw;
    MPI_Comm_dup(MPI_COMM_WORLD, &raw);

    size_t max_floats = max_b / 4 + (size_t)n;
    float *send = malloc(max_floats * 4), *recv = malloc(max_floats * 4);
    if (!send || !recv) MPI_Abort(MPI_COMM_WORLD, 1);
    for (size_t i = 0; i < max_floats; i++) send[i] = (float)(i % 97), recv[i] = 0;
    double bus = (double)(n - 1) / n;
    if (rank == 0) {
        printf("# shardvit comm_bench: %d ranks, f32, chunk %u bytes, %d trials: times = best trial, "
               "sv/raw = median of per-trial raw/sv\n",
               n, SV_COMM_CHUNK_BYTES, trials);
        printf("#                       |            sv_comm              |             raw MPI             |\n");
        printf("# %10s %12s | %10s %9s %9s | %10s %9s %9s | %6s\n", "size(B)", "count", "time(us)", "algbw", "busbw",
               "time(us)", "algbw", "busbw", "sv/raw");
        printf("# %10s %12s | %10s %9s %9s | %10s %9s %9s | %6s\n", "", "(per rank)", "", "(GB/s)", "(GB/s)", "",
               "(GB/s)", "(GB/s)", "");
    }
    for (int k = 0; k < 2; k++) {
        if (rank == 0) printf("%s\n", k == AG ? "all_gather" : "reduce_scatter");
        for (size_t b = min_b; b <= max_b; b *= 2) {
            size_t count = b / 4 / (size_t)n;
            if (count == 0) continue;
            size_t bytes = count * 4 * (size_t)n;
            int iters = (int)((size_t)(256u << 20) / bytes);
            if (iters < 5) iters = 5;
            if (iters > 20000) iters = 20000;              /* small sizes: enough calls to average out noise */
            run((coll)k, 1, c, raw, send, recv, count, 2); /* warm-up */
            run((coll)k, 0, c, raw, send, recv, count, 2);
            double best_sv = 1e30, best_raw = 1e30, ratio[MAX_TRIALS];
            for (int t = 0; t < trials; t++) {
                double a = run((coll)k, 1, c, raw, send, recv, count, iters);
                double r = run((coll)k, 0, c, raw, send, recv, count, iters);
                if (a < best_sv) best_sv = a;
                if (r < best_raw) best_raw = r;
                ratio[t] = r / a;
            }
            qsort(ratio, (size_t)trials, sizeof ratio[0], cmp_double);
            double med = trials % 2 ? ratio[trials / 2] : 0.5 * (ratio[trials / 2 - 1] + ratio[trials / 2]);
            if (rank == 0)
                printf("  %10zu %12zu | %10.1f %9.3f %9.3f | %10.1f %9.3f %9.3f | %5.0f%%\n", bytes, count,
                       best_sv * 1e6, bytes / best_sv / 1e9, bytes / best_sv / 1e9 * bus, best_raw * 1e6,
                       bytes / best_raw / 1e9, bytes / best_raw / 1e9 * bus, 100.0 * med);
        }
    }
    sv_comm_destroy(c);
    MPI_Comm_free(&raw);
    free(send);
    free(recv);
    MPI_Finalize();
    return 0;
}
