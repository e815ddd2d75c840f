/* Event files read by independent Python readers (tests/formats/tfevents_check.py): MODE
 * "stdlib" decodes with its own CRC32C/protobuf code, MODE "tensorboard" with TensorBoard's
 * own EventAccumulator (PyPI's tensorboard in the test venv, scripts/test_venv.sh; skipped, 77,
 * only when that package is not importable). The interpreter is $SHARDVIT_TEST_PYTHON (set by
 * scripts/test.sh), else /usr/bin/python3. Usage: test_tfevents_python SCRIPT MODE */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "formats/tensorboard.h"
#include "fmt_util.h"

int main(int argc, char **argv) {
    CHECK(argc == 3);
    const char *PYTHON = getenv("SHARDVIT_TEST_PYTHON");
    if (!PYTHON || !*PYTHON) PYTHON = "/usr/bin/python3";
    if (access(PYTHON, X_OK) != 0) SKIP("%s not found", PYTHON);
    char dir[256];
    fmt_tmpdir(dir, sizeof dir, "tfev");
    sv_tb_writer w;
    CHECK_OK(sv_tb_open(&w, dir, 1699999999.0));
    for (int s = 0; s < 25; s++) { /* the script's EXPECTED table */
        CHECK_OK(sv_tb_scalar(&w, "train/loss", s, (float)(1.0 / (s + 1)), 1700000000.0 + s));
        CHECK_OK(sv_tb_scalar(&w, "train/lr", s, (float)(s * 1e-4), 1700000000.0 + s));
    }
    CHECK_OK(sv_tb_close(&w));
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        execl(PYTHON, PYTHON, argv[1], argv[2], sv_tb_path(&w), (char *)NULL);
        _exit(127);
    }
    int st;
    CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st));
    fmt_rmdir(dir);
    if (WEXITSTATUS(st) == 77) SKIP("Python reader '%s' not available in %s", argv[2], PYTHON);
    CHECK(WEXITSTATUS(st) == 0);
    printf("test_tfevents_python (%s, %s): ok\n", argv[2], PYTHON);
    return 0;
}
