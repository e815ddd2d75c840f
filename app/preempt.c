/* Preemption signals: a flag set by the first signal, default action on the second (preempt.h). */
#include "app/preempt.h"

#include <ctype.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

static const struct {
    const char *name;
    int sig;
} k_names[] = {{"TERM", SIGTERM}, {"INT", SIGINT},   {"USR1", SIGUSR1}, {"USR2", SIGUSR2},
               {"HUP", SIGHUP},   {"QUIT", SIGQUIT}, {"XCPU", SIGXCPU}, {"ALRM", SIGALRM}};

static volatile sig_atomic_t g_received;
static sv_preempt g_installed;
static struct sigaction g_old[SV_PREEMPT_MAX_SIGNALS];

const char *sv_preempt_signal_name(int sig) {
    static const char *const full[] = {"SIGTERM", "SIGINT",  "SIGUSR1", "SIGUSR2",
                                       "SIGHUP",  "SIGQUIT", "SIGXCPU", "SIGALRM"};
    for (size_t i = 0; i < sizeof k_names / sizeof k_names[0]; i++)
        if (k_names[i].sig == sig) return full[i];
    return "signal";
}

static int parse_one(const char *tok, size_t len) {
    char buf[16];
    if (len == 0 || len >= sizeof buf) return -1;
    memcpy(buf, tok, len);
    buf[len] = 0;
    if (isdigit((unsigned char)buf[0])) {
        char *end;
        long v = strtol(buf, &end, 10);
        return *end || v <= 0 || v >= NSIG ? -1 : (int)v;
    }
    const char *n = strncasecmp(buf, "SIG", 3) ? buf : buf + 3;
    for (size_t i = 0; i < sizeof k_names / sizeof k_names[0]; i++)
        if (!strcasecmp(n, k_names[i].name)) return k_names[i].sig;
    return -1;
}

/* 1 when p (nullable) lists sig */
static int in_set(const sv_preempt *p, int sig) {
    for (int i = 0; p && i < p->n; i++)
        if (p->sig[i] == sig) return 1;
    return 0;
}

sv_status sv_preempt_parse(const char *spec, sv_preempt *out) {
    memset(out, 0, sizeof *out);
    if (!spec || !strcasecmp(spec, "none")) return SV_OK;
    const char *p = spec;
    while (*p) {
        size_t len = strcspn(p, ",");
        int s = parse_one(p, len);
        if (s < 0 || s == SIGKILL || s == SIGSTOP)
            return SV_FAIL(
                SV_ERR_INVALID,
                "--preempt-signal: '%.*s' is not a signal that can be handled (names: TERM INT USR1 USR2 HUP "
                "QUIT XCPU ALRM, or a number; 'none' for no handler)",
                (int)(len > 32 ? 32 : len), p);
        if (in_set(out, s)) return SV_FAIL(SV_ERR_INVALID, "--preempt-signal: %.*s is listed twice", (int)len, p);
        if (out->n == SV_PREEMPT_MAX_SIGNALS)
            return SV_FAIL(SV_ERR_INVALID, "--preempt-signal: at most %d signals", SV_PREEMPT_MAX_SIGNALS);
        out->sig[out->n++] = s;
        p += len;
        if (*p == ',') p++;
    }
    return SV_OK;
}

static struct timespec g_first; /* when the first signal arrived (written before g_received) */

/* First signal: remember it. A repeat within SV_PREEMPT_REPEAT_S is the same event delivered
 * twice (Ctrl-C or `kill -- -PGID` reach mpiexec and the ranks, and mpiexec forwards it again):
 * ignored. A later one: the default action, now (a user who insists, or a scheduler's final
 * warning). Only async-signal-safe calls here (clock_gettime is one). */
static volatile sig_atomic_t g_armed[NSIG]; /* on_signal acts for these; others it leaves alone */

static void on_signal(int sig) {
    /* a signal outside the run's set that reaches this handler through another one that called
     * it (MPICH's SIGUSR1 handler calls the handler it replaced at MPI_Init): nothing */
    if (sig <= 0 || sig >= NSIG || !g_armed[sig]) return;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (!g_received) {
        g_first = now;
        g_received = sig;
        return;
    }
    double since = (double)(now.tv_sec - g_first.tv_sec) + 1e-9 * (double)(now.tv_nsec - g_first.tv_nsec);
    if (since < SV_PREEMPT_REPEAT_S) return;
    signal(sig, SIG_DFL);
    raise(sig);
}

#define N_NAMED (sizeof k_names / sizeof k_names[0])
static struct sigaction g_hold_old[N_NAMED]; /* the dispositions sv_preempt_hold_startup replaced */
static int g_held[N_NAMED];                  /* 1: k_names[i] has on_signal from the hold */
static int g_holding;

static int named_index(int sig) {
    for (size_t i = 0; i < N_NAMED; i++)
        if (k_names[i].sig == sig) return (int)i;
    return -1;
}

/* on_signal, as a handler that holds off its own signals and restarts system calls */
static void record_action(struct sigaction *sa, const int *sigs, int n) {
    memset(sa, 0, sizeof *sa);
    sa->sa_handler = on_signal;
    sa->sa_flags = SA_RESTART;
    sigemptyset(&sa->sa_mask);
    for (int i = 0; i < n; i++) sigaddset(&sa->sa_mask, sigs[i]); /* one handler at a time */
}

int sv_preempt_handles(int sig) {
    struct sigaction cur;
    return sigaction(sig, NULL, &cur) == 0 && !(cur.sa_flags & SA_SIGINFO) && cur.sa_handler == on_signal;
}

void sv_preempt_hold_startup(int drop_replaced) {
    int all[N_NAMED];
    for (size_t i = 0; i < N_NAMED; i++) all[i] = k_names[i].sig;
    struct sigaction sa, cur;
    record_action(&sa, all, (int)N_NAMED);
    for (size_t i = 0; i < N_NAMED; i++) {
        if (sigaction(all[i], NULL, &cur) != 0) continue;
        if (cur.sa_handler == SIG_IGN) continue; /* ignored at the start (nohup): stays ignored */
        if (g_held[i] && cur.sa_handler == on_signal) continue;
        /* not held yet, or replaced since (MPICH's initialisation installs a SIGUSR1 handler):
         * what is there now is what the release gives back, unless MPICH's SIGUSR1 handler is
         * dropped: then the hold's own handler stays, unarmed once released (it passes the signal
         * over); another signal's replacement is kept */
        const int drop = drop_replaced && g_held[i] && all[i] == SIGUSR1;
        g_armed[all[i]] = 1;
        if (sigaction(all[i], &sa, drop ? NULL : &g_hold_old[i]) == 0) {
            if (drop) g_hold_old[i] = sa;
            g_held[i] = 1;
        }
    }
    g_holding = 1;
}

/* Give back the dispositions the hold replaced, except those of the installed set (`keep`). */
static void release_except(const sv_preempt *keep) {
    if (!g_holding) return;
    g_holding = 0;
    for (size_t i = 0; i < N_NAMED; i++) {
        if (!g_held[i]) continue;
        g_held[i] = 0;
        if (!in_set(keep, k_names[i].sig)) {
            g_armed[k_names[i].sig] = 0;
            sigaction(k_names[i].sig, &g_hold_old[i], NULL);
        }
    }
}

void sv_preempt_release_startup(void) { release_except(NULL); }

sv_status sv_preempt_install(const sv_preempt *p) {
    sv_preempt_uninstall();
    const int early = g_holding ? (int)g_received : 0; /* a signal that came during the start-up */
    g_received = 0;
    struct sigaction sa;
    record_action(&sa, p->sig, p->n);
    for (int i = 0; i < p->n; i++) {
        g_armed[p->sig[i]] = 1;
        if (sigaction(p->sig[i], &sa, &g_old[i]) != 0) {
            g_installed.n = i;
            sv_preempt_uninstall();
            sv_preempt_release_startup();
            return SV_FAIL(SV_ERR_INVALID, "cannot handle %s", sv_preempt_signal_name(p->sig[i]));
        }
        /* what uninstall restores: the disposition from before the hold, not its handler */
        int k = named_index(p->sig[i]);
        if (g_holding && k >= 0 && g_held[k]) g_old[i] = g_hold_old[k];
    }
    g_installed = *p;
    release_except(p);
    if (early) {
        if (in_set(p, early))
            g_received = early; /* the run stops after its first step */
        else
            raise(early); /* not in the set: what this process did with it before the hold */
    }
    return SV_OK;
}

void sv_preempt_uninstall(void) {
    for (int i = 0; i < g_installed.n; i++) {
        g_armed[g_installed.sig[i]] = 0;
        sigaction(g_installed.sig[i], &g_old[i], NULL);
    }
    g_installed.n = 0;
}

int sv_preempt_received(void) { return (int)g_received; }

/* sv_preempt_exit_on_signal: after the teardown only MPI's finalization is left (app/main.c), and
 * the outcome is known: a signal of the preemption set then ends the process at once with the run's own
 * exit status (0 for a completed run, 75 for a preempted one whose checkpoint is saved), not by
 * the signal: a finished run that gets SIGTERM while it finalizes did finish. It does end the
 * process (neither ignored nor recorded): a rank stuck in finalization (a peer gone, MPICH
 * 4.0.2's finalize deadlock, tests/multihost/lib.sh) still stops on the one SIGTERM mpiexec
 * forwards. Replaces the preemption handlers without a gap; returns rc. */
static volatile sig_atomic_t g_final_status;
static void exit_with_status(int sig) {
    (void)sig;
    _exit(g_final_status); /* async-signal-safe: the run's work and teardown are done */
}
int sv_preempt_exit_on_signal(const sv_preempt *p, int rc) {
    g_final_status = rc;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = exit_with_status;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < p->n; i++) sigaction(p->sig[i], &sa, NULL);
    return rc;
}
