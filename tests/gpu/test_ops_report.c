/* The ops.json writer of gpu_ops_vs_cpu (ops_report.c) without a device: the file parses as JSON
 * with the right counts after a finished run, after SIGTERM (the handler's closing part), after
 * SIGKILL (the closing part kept after every record) and after an exit without closing (a
 * failed CHECK); record text with quotes, backslashes and control characters survives.
 *
 *   test_ops_report                      the writer checks above
 *   test_ops_report --no-gpu-skip BIN    BIN (gpu_ops_vs_cpu) must exit 77 within 30 s on a
 *                                        machine without a usable CUDA device; exits 77 itself
 *                                        where a device is usable (then BIN runs for real). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "core/json.h"
#include "model/backend/backend.h"
#include "ops_report.h"

static char path[256];

/* One record as gpu_ops_vs_cpu writes it (op name with characters JSON must escape). */
static void record(int i, int ok) {
    sv_json_writer w;
    char op[64];
    snprintf(op, sizeof op, "op \"%d\" \\ tab\there\nline", i);
    sv_json_writer_init(&w, 0);
    sv_json_obj_begin(&w);
    sv_json_key(&w, "op"), sv_json_str(&w, op);
    sv_json_key(&w, "rel_err"), sv_json_f64(&w, 1e-3 * i);
    sv_json_key(&w, "ok"), sv_json_bool(&w, ok);
    sv_json_obj_end(&w);
    const char *text;
    CHECK_OK(sv_json_writer_finish(&w, &text, NULL));
    opsrep_result(text, ok);
    sv_json_writer_free(&w);
}

/* Parse the report and check results/checks/failures/aborted (and the reason, when aborted). */
static void expect(int results, int failures, const char *reason) {
    FILE *f = fopen(path, "rb");
    CHECK(f);
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    sv_json_doc doc;
    memset(&doc, 0, sizeof doc);
    sv_status st = sv_json_parse(&doc, buf, n, path, NULL);
    if (st != SV_OK) fprintf(stderr, "report text:\n%.*s\n", (int)n, buf);
    CHECK_OK(st);
    const sv_json *arr;
    CHECK_OK(sv_json_get(&doc.root, "results", SV_JSON_ARRAY, &arr));
    CHECK((int)sv_json_count(arr) == results);
    for (int i = 0; i < results; i++) {
        const char *op;
        char want[64];
        snprintf(want, sizeof want, "op \"%d\" \\ tab\there\nline", i);
        CHECK_OK(sv_json_get_str(sv_json_index(arr, (size_t)i), "op", &op, NULL));
        CHECK(!strcmp(op, want));
    }
    int64_t checks, fails;
    int aborted;
    CHECK_OK(sv_json_get_i64(&doc.root, "checks", &checks));
    CHECK_OK(sv_json_get_i64(&doc.root, "failures", &fails));
    CHECK_OK(sv_json_get_bool(&doc.root, "aborted", &aborted));
    CHECK(checks == results);
    CHECK(fails == failures + (reason ? 1 : 0)); /* an abort counts as one more failure */
    CHECK(aborted == (reason != NULL));
    if (reason) {
        const char *why;
        CHECK_OK(sv_json_get_str(&doc.root, "abort_reason", &why, NULL));
        if (!strstr(why, reason)) fprintf(stderr, "abort_reason '%s', expected '%s'\n", why, reason);
        CHECK(strstr(why, reason));
    }
    sv_json_doc_free(&doc);
}

/* In a child: open the report, write `k` records (record 1 failing), then end by `how`. */
static void child_run(int k, const char *how) {
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        if (opsrep_open(path) != 0) _exit(3);
        for (int i = 0; i < k; i++) record(i, i != 1);
        if (!strcmp(how, "sigterm")) raise(SIGTERM);
        if (!strcmp(how, "sigkill")) raise(SIGKILL);
        if (!strcmp(how, "exit")) exit(1); /* as a failed CHECK: the exit handler closes */
        _exit(4);
    }
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    if (!strcmp(how, "sigterm")) CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
    if (!strcmp(how, "sigkill")) CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    if (!strcmp(how, "exit")) CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 1);
}

static void writer_checks(void) {
    snprintf(path, sizeof path, "/tmp/sv_ops_report_%d.json", (int)getpid());
    /* a finished run, in this process */
    CHECK(opsrep_open(path) == 0);
    expect(0, 0, "did not finish"); /* valid before the first record */
    for (int i = 0; i < 5; i++) record(i, i != 1 && i != 3);
    expect(5, 2, "did not finish");
    opsrep_close();
    expect(5, 2, NULL);
    CHECK(opsrep_checks() == 5 && opsrep_failures() == 2);
    /* runs stopped from outside or by an early exit, in children */
    child_run(3, "sigterm");
    expect(3, 1, "SIGTERM");
    child_run(4, "sigkill");
    expect(4, 1, "did not finish");
    child_run(2, "exit");
    expect(2, 1, "exited before the end");
    child_run(0, "sigterm");
    expect(0, 0, "SIGTERM");
    unlink(path);
    printf("ops report: valid JSON after close, SIGTERM, SIGKILL and an early exit\n");
}

/* gpu_ops_vs_cpu on a machine without a usable CUDA device: exit 77, quickly. */
static int no_gpu_skip(const char *bin) {
    if (sv_backend_available(SV_DEVICE_CUDA))
        SKIP("a CUDA device is usable here: gpu_ops_vs_cpu runs for real (ctest -R gpu_ops_vs_cpu)");
    snprintf(path, sizeof path, "/tmp/sv_ops_skip_%d.json", (int)getpid());
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        alarm(60); /* a hang ends as SIGALRM, which the parent reports */
        execl(bin, bin, "--json", path, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    if (!WIFEXITED(status)) fprintf(stderr, "%s ended by signal %d\n", bin, WTERMSIG(status));
    CHECK(WIFEXITED(status));
    if (WEXITSTATUS(status) != 77) fprintf(stderr, "%s exited %d, expected 77\n", bin, WEXITSTATUS(status));
    CHECK(WEXITSTATUS(status) == 77);
    CHECK(secs < 30.0);
    unlink(path);
    printf("gpu_ops_vs_cpu without a CUDA device: exit 77 after %.2f s\n", secs);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 3 && !strcmp(argv[1], "--no-gpu-skip")) return no_gpu_skip(argv[2]);
    CHECK(argc == 1);
    writer_checks();
    return 0;
}
