/* shardvit: one binary, git-style subcommands (README.md "Commands"). The only place that exits. */
#include <errno.h>
#include <signal.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/commands.h"
#include "app/env_overrides.h"
#include "app/flags.h"
#include "app/mpi_env.h"
#include "app/preempt.h"
#include "app/provenance.h"
#include "core/fileio.h"
#include "core/log.h"

typedef struct {
    const char *name;
    int (*run)(int, char **, const sv_proc *);
    int uses_mpi;
    int tmp_cleanup; /* a signal removes its unfinished temporaries (core/fileio.h) */
    int preempt;     /* handles preemption signals itself (app/preempt.h): held from the start */
    const char *help;
} command;

static const command k_commands[] = {
    {"train", sv_cmd_train, 1, 0, 1, "train a ViT with FSDP (use mpiexec -n N for N ranks)"},
    {"bench", sv_cmd_bench, 1, 1, 0,
     "throughput (img/s, TFLOP/s, MFU, memory), single ops (--op), collectives (--comm), grids (--sweep)"},
    {"info", sv_cmd_info, 0, 0, 0, "parameter table, counts and FLOPs of a model"},
    {"plan", sv_cmd_plan, 0, 0, 0, "per-rank memory plan of a run and whether it fits"},
    {"prep", sv_cmd_prep, 0, 1, 0, "import Fashion-MNIST/MNIST/CIFAR or generate a synthetic JPEG set"},
    {"eval", sv_cmd_eval, 1, 1, 0, "top-1/top-5/loss/per-class accuracy of trained weights (any world size)"},
    {"predict", sv_cmd_predict, 1, 1, 0, "top-k classes with probabilities for image files"},
    {"report", sv_cmd_report, 0, 1, 0, "one self-contained HTML report of a run directory"},
    {"reshard", sv_cmd_reshard, 0, 1, 0, "rewrite a checkpoint for another world size (offline, bounded memory)"},
    {"export", sv_cmd_export, 0, 1, 0, "checkpoint -> timm safetensors (+ config.json)"},
    {"import", sv_cmd_import, 0, 1, 0, "check a timm safetensors file against a model (use with train --init-from)"},
    {"bench-compare", sv_cmd_bench_compare, 0, 0, 0,
     "ratio of two bench results (refuses unlike model/batch/precision)"},
    {"version", sv_cmd_version, 0, 0, 0, "version, git commit, build options, loaded libraries (also --version)"},
};

int sv_app_fail(const char *cmd, sv_status st) {
    char msg[2048];
    snprintf(msg, sizeof msg, "%s", sv_err_msg());
    fprintf(stderr, "shardvit %s: error: %s (%s) [at %s]\n", cmd, sv_log_term_safe(msg), sv_status_str(st),
            sv_err_trace());
    return 1;
}

int sv_cmd_exit(const char *cmd, sv_status st, int usage) {
    if (st == SV_OK) return 0;
    if (st == SV_ERR_INVALID && usage) return sv_cmd_usage_error(cmd, "%s", sv_err_msg());
    return sv_app_fail(cmd, st);
}

/* What a command printed must have reached standard output (a full disk, a closed pipe, /dev/full):
 * a result lost there is a failure, not exit status 0. */
static int stdout_done(const char *cmd, int rc) {
    errno = 0;
    if (fflush(stdout) == 0 && !ferror(stdout)) return rc;
    int e = errno;
    fprintf(stderr, "shardvit %s: error: cannot write standard output%s%s\n", cmd, e ? ": " : "", e ? strerror(e) : "");
    return rc ? rc : 1;
}

/* Test hook SHARDVIT_TEST_SIGNAL_STARTUP=SIGNAL[@mpi] (docs/environment.md): the process signals
 * itself (kill: the whole process, any of its threads may take it, as mpiexec's forwarding) with
 * SIGNAL, a name of --preempt-signal, before MPI's initialisation, or with @mpi right after it
 * (tests/train/preempt.sh). */
static void startup_signal_hook(int after_mpi) {
    const char *s = getenv("SHARDVIT_TEST_SIGNAL_STARTUP");
    if (!s || !*s) return;
    char name[16];
    const char *at = strchr(s, '@');
    size_t n = at ? (size_t)(at - s) : strlen(s);
    if (n >= sizeof name || (at ? strcmp(at, "@mpi") : 0) || !after_mpi != !at) return;
    memcpy(name, s, n);
    name[n] = '\0';
    sv_preempt p;
    if (sv_preempt_parse(name, &p) == SV_OK && p.n == 1) kill(getpid(), p.sig[0]);
}

/* Every exit of the process (main's return, an exit() in a library: libgomp's when it cannot start
 * a thread) ends here, before the libraries' destructors: the streams are flushed and the process
 * ends with its status. OpenBLAS's destructor joins its worker threads, and under an
 * address-space limit close to the process's size (ulimit -v) a worker that could not allocate
 * its buffer retries for ever: eval wrote its results and then never ended. The sanitizer builds
 * keep the normal exit, whose leak check runs after this would. */
#if !defined(SV_SANITIZE) && !defined(__SANITIZE_ADDRESS__)
static void end_now(int status, void *arg) {
    (void)arg;
    fflush(NULL);
    _exit(status);
}
#endif

/* A hangup ends the process, as POSIX's default says: libucs (loaded with MPICH) installs a
 * SIGHUP handler of its own in a library constructor, before main (UCX's debug signal,
 * UCX_DEBUG_SIGNO), which made a SIGHUP do nothing (train ran on to its end; export, prep and the
 * others finished with exit 0). It replaces an ignored SIGHUP too, so what the parent set (nohup:
 * ignored) is read before any library constructor runs, from the executable's preinit function,
 * and put back: ignored stays ignored, anything else becomes the default. The commands' own
 * handlers (temporaries removed, --preempt-signal HUP) are installed afterwards; the start-up
 * hold of train's signals (app/preempt.h) is left in place. What remains is the library start-up
 * before main (tens of milliseconds), where only UCX_DEBUG_SIGNO=0 in the environment helps (a
 * setenv from the preinit function is lost: libc's own initialisation sets the environment again
 * after it). */
static int g_hup_ignored; /* SIGHUP was ignored when the process started */

static void hup_at_exec(int argc, char **argv, char **envp) {
    (void)argc, (void)argv, (void)envp;
    struct sigaction cur;
    g_hup_ignored = sigaction(SIGHUP, NULL, &cur) == 0 && !(cur.sa_flags & SA_SIGINFO) && cur.sa_handler == SIG_IGN;
}
__attribute__((section(".preinit_array"), used)) static void (*const k_preinit_hup)(int, char **,
                                                                                    char **) = hup_at_exec;

static void hup_default(void) {
    if (sv_preempt_handles(SIGHUP)) return; /* train's start-up hold: it gives back what it found */
    signal(SIGHUP, g_hup_ignored ? SIG_IGN : SIG_DFL);
}

static void usage(FILE *out) {
    fprintf(out, "usage: shardvit <command> [flags]   (shardvit <command> --help for its flags)\n\ncommands:\n");
    for (size_t i = 0; i < sizeof k_commands / sizeof k_commands[0]; i++)
        fprintf(out, "  %-13s %s\n", k_commands[i].name, k_commands[i].help);
}

int main(int argc, char **argv) {
    sv_provenance_mark_start();
#if !defined(SV_SANITIZE) && !defined(__SANITIZE_ADDRESS__)
    on_exit(end_now, NULL);
#endif
    /* A write past the file-size limit (ulimit -f) fails with EFBIG and takes the error paths of a
     * full disk (a message naming the file, temporaries removed), instead of SIGXFSZ killing the
     * process with the temporaries left */
    signal(SIGXFSZ, SIG_IGN);
    hup_default();
    static char version_cmd[] = "version";
    if (argc >= 2 && !strcmp(argv[1], "--version")) argv[1] = version_cmd;
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(argc < 2 ? stderr : stdout);
        return stdout_done("--help", argc < 2 ? 2 : 0);
    }
    const command *cmd = NULL;
    for (size_t i = 0; i < sizeof k_commands / sizeof k_commands[0]; i++)
        if (!strcmp(argv[1], k_commands[i].name)) cmd = &k_commands[i];
    if (!cmd) {
        fprintf(stderr, "shardvit: unknown command '%s' (see shardvit --help)\n", argv[1]);
        return 2;
    }
    if (sv_env_overrides_apply() != SV_OK) return sv_cmd_usage_error(cmd->name, "%s", sv_err_msg());
    sv_proc proc = {0, 1, 0, 1};
    /* train: a preemption signal from here until the command installs its handlers is recorded
     * and stops the run after its first step (app/preempt.h) */
    if (cmd->preempt) {
        sv_preempt_hold_startup(0);
        startup_signal_hook(0);
    }
    if (cmd->uses_mpi) {
        sv_mpi_env_init(&argc, &argv, &proc.rank, &proc.world);
        sv_mpi_env_local(&proc.local_rank, &proc.local_size);
        hup_default(); /* in case MPI's start-up put UCX's handler back (not train's hold) */
    }
    if (cmd->preempt) {
        /* again: MPICH's initialisation installed its own SIGUSR1 handler, which an MPI singleton
         * (no mpiexec) does not keep: there it would wait for ever on a process manager */
        sv_preempt_hold_startup(cmd->uses_mpi && sv_mpi_env_singleton());
        startup_signal_hook(1);
    }
    sv_log_setup(proc.rank, SV_LOG_INFO, 0);
    if (cmd->tmp_cleanup) sv_fileio_remove_tmp_on_signals();
    int rc = stdout_done(cmd->name, cmd->run(argc - 1, argv + 1, &proc));
    if (cmd->preempt) sv_preempt_release_startup(); /* a command that ended before installing them */
    if (cmd->uses_mpi) {
        /* A runtime failure on one rank must not leave the others waiting in a collective. */
        if (rc == 1 && proc.world > 1) sv_mpi_env_abort(1);
        sv_mpi_env_finalize();
    }
    return rc;
}
