/* The JSON report of tests/gpu/gpu_ops_vs_cpu (ops.json), written so that the file is valid JSON
 * whenever the run stops:
 *
 *   {"results":[
 *   {...},
 *   {...}
 *   ],"checks":N,"failures":F,"aborted":B[,"abort_reason":"..."]}
 *
 * Every record is appended over the previous closing part, and the closing part is written again
 * after it at once, so the file always ends with a closing part: while the run goes on it says
 * "aborted":true, "abort_reason":"the run did not finish" (what a SIGKILL leaves), and counts the
 * abort as one more failure. SIGTERM, SIGINT, SIGHUP and SIGALRM (`timeout` sends SIGTERM first)
 * are caught: the handler rewrites the closing part with the signal's name, using only
 * async-signal-safe calls, then the signal takes its default action. An exit without
 * opsrep_close (a failed CHECK) leaves "exited before the end". opsrep_close writes the final
 * part, "aborted":false.
 *
 * One report per process; not thread-safe (the op test is single-threaded). */
#ifndef SV_TESTS_GPU_OPS_REPORT_H
#define SV_TESTS_GPU_OPS_REPORT_H

/* Create (truncate) `path`, write the opening and a closing part, reset the counts, install the
 * signal handlers and an exit handler. Returns 0, or -1 with errno set. */
int opsrep_open(const char *path);

/* Append one result: `object` is one complete JSON object (no trailing newline), `ok` counts
 * it as passed (else as a failure). Counts also when no report is open (then writes nothing). */
void opsrep_result(const char *object, int ok);

/* Write the final closing part ("aborted":false) and close the file. No-op when none is open. */
void opsrep_close(void);

/* Results and failures recorded so far (for the summary line). */
int opsrep_checks(void);
int opsrep_failures(void);

#endif
