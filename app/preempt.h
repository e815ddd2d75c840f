/* Preemption signals of `shardvit train` (docs/checkpoints.md "Preemption").
 *
 * Slurm sends SIGTERM before it preempts a job or at its time limit (`--signal=B:USR1@120` asks
 * for SIGUSR1 ahead of it), mpiexec forwards SIGTERM/SIGINT/SIGUSR1 to every rank, a user may
 * signal one rank. The first signal of the configured set (`--preempt-signal`, default
 * TERM,INT,USR1) only records itself (async-signal-safe flag). The training loop reads it at the
 * next step boundary, where all ranks agree on it in one small all-reduce: every rank finishes
 * the step it is in, saves a checkpoint, flushes its logs and the process exits with
 * SV_EXIT_PREEMPTED. A second signal of the set restores the default action and re-raises it:
 * the process ends at once (mpiexec then ends the other ranks) — unless it comes within
 * SV_PREEMPT_REPEAT_S of the first: then it is the same event delivered twice (a terminal's
 * Ctrl-C or a `kill -- -PGID` reaches the ranks directly and again through mpiexec) and is
 * ignored.
 *
 * Handlers are installed with SA_RESTART, so system calls that the signal interrupts resume. */
#ifndef SV_APP_PREEMPT_H
#define SV_APP_PREEMPT_H

#include "core/status.h"

/* Exit status of a run that stopped on a preemption signal after saving its checkpoint:
 * EX_TEMPFAIL of sysexits.h ("try again later"): resume it with `--resume auto`. */
#define SV_EXIT_PREEMPTED 75
/* A repeat of a preemption signal sooner than this many seconds after the first is ignored. */
#define SV_PREEMPT_REPEAT_S 1.0

#define SV_PREEMPT_MAX_SIGNALS 8

typedef struct sv_preempt {
    int sig[SV_PREEMPT_MAX_SIGNALS];
    int n; /* 0: no signal handled ("none") */
} sv_preempt;

/* "TERM,INT,USR1" (names with or without SIG, case-insensitive, or numbers), or "none".
 * SV_ERR_INVALID naming the bad entry; SIGKILL/SIGSTOP and duplicates are refused. */
sv_status sv_preempt_parse(const char *spec, sv_preempt *out);
/* Start-up (app/main.c, for train: before MPI's initialisation, and again after it): every signal
 * a set can name (one ignored at the start stays ignored) gets the recording handler until
 * sv_preempt_install, so that one arriving in between (MPI_Init takes seconds on many nodes) is
 * kept for the run's handlers, which stop the run after its first step, instead of killing the
 * rank before they exist (SIGTERM, SIGINT) or being taken by MPICH's own SIGUSR1 handler (a lost
 * time-limit warning). Handlers act for every thread: a mask would not (OpenBLAS's threads, made
 * before main, would take the signal with its default action). Calling it again re-takes a
 * signal whose handler was replaced since (MPICH's initialisation), keeping the replacement as
 * what the release gives back, or, with drop_replaced, dropping a replaced SIGUSR1 handler: the
 * release then leaves the hold's handler, which passes over a SIGUSR1 outside the run's set (an
 * MPI singleton: MPICH's SIGUSR1 handler there reaches for a process manager that does not exist
 * and waits for ever).
 * A second signal more than SV_PREEMPT_REPEAT_S after the first ends the process as it does
 * during the run. */
void sv_preempt_hold_startup(int drop_replaced);
/* Is sig's current handler this module's (the start-up hold's or an installed set's)? */
int sv_preempt_handles(int sig);
/* Give back the dispositions the hold replaced (a no-op without it): a command that ended before
 * sv_preempt_install (app/main.c, after the command returns). */
void sv_preempt_release_startup(void);
/* Install the handlers (replaces earlier ones), then give back the hold's other signals. A signal
 * recorded during the hold stays recorded when the set holds it (the run stops after its first
 * step); one outside the set is raised again, to the disposition from before the hold. */
sv_status sv_preempt_install(const sv_preempt *p);
/* Restore the dispositions sv_preempt_install replaced. */
void sv_preempt_uninstall(void);
/* The first signal received since install, or 0. */
int sv_preempt_received(void);
/* For the end of a run, after its teardown: a signal of p's set from now on ends the process at
 * once with exit status rc (the run's own outcome) instead of killing it (app/preempt.c). Replaces
 * the preemption handlers without a gap; returns rc. */
int sv_preempt_exit_on_signal(const sv_preempt *p, int rc);
/* "SIGTERM" etc. (static storage), "signal N" for others. */
const char *sv_preempt_signal_name(int sig);

#endif
