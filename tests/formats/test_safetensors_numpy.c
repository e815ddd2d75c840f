/* safetensors cross-check against an independent numpy implementation
 * (tests/formats/safetensors_check.py): the C writer's file is parsed and checked in Python,
 * and a Python-written file is read and checked here. Skipped (77) without /usr/bin/python3
 * or numpy. Usage: test_safetensors_numpy SCRIPT */
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/elementwise.h"
#include "fmt_util.h"
#include "formats/safetensors.h"

#define PYTHON "/usr/bin/python3"

/* Same formula as values() in the script: multiples of 1/8, exact in F32/BF16/F16. */
static double value(int64_t i, int mul, int mod, double shift) { return (double)((i * mul) % mod) / 8.0 - shift; }

static uint16_t to_f16(float f) { /* exact for the small multiples of 1/8 used here */
    uint32_t u;
    memcpy(&u, &f, 4);
    uint32_t sign = (u >> 16) & 0x8000u;
    if ((u & 0x7fffffffu) == 0) return (uint16_t)sign;
    int exp = (int)((u >> 23) & 0xff) - 127 + 15;
    CHECK(exp > 0 && exp < 31 && (u & 0x1fffu) == 0);
    return (uint16_t)(sign | (uint32_t)exp << 10 | ((u >> 13) & 0x3ffu));
}

static int run_script(const char *script, const char *mode, const char *file) {
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        execl(PYTHON, PYTHON, script, mode, file, (char *)NULL);
        _exit(127);
    }
    int st;
    CHECK(waitpid(pid, &st, 0) == pid);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

int main(int argc, char **argv) {
    CHECK(argc == 2);
    if (access(PYTHON, X_OK) != 0) SKIP("%s not found", PYTHON);
    char dir[256], path[512];
    fmt_tmpdir(dir, sizeof dir, "stnp");

    /* C -> Python */
    float w[48], hw[21];
    uint16_t nb[5], hh[21];
    for (int i = 0; i < 48; i++) w[i] = (float)value(i, 37, 101, 3.0);
    for (int i = 0; i < 5; i++) nb[i] = sv_f32_to_bf16((float)value(i, 11, 29, 1.0));
    for (int i = 0; i < 21; i++) hh[i] = to_f16(hw[i] = (float)value(i, 13, 61, 2.0));
    int64_t s_w[4] = {4, 3, 2, 2}, s_nb[1] = {5}, s_h[2] = {3, 7}, s_pos[3] = {1, 0, 8};
    sv_st_entry e[4] = {{"patch_embed.proj.weight", SV_ST_F32, 4, s_w, w},
                        {"blocks.0.norm1.weight", SV_ST_BF16, 1, s_nb, nb},
                        {"head.weight", SV_ST_F16, 2, s_h, hh},
                        {"pos_embed", SV_ST_F32, 3, s_pos, w}};
    const char *meta[] = {"format", "pt", "producer", "shardvit"};
    snprintf(path, sizeof path, "%s/c.safetensors", dir);
    CHECK_OK(sv_safetensors_write(path, e, 4, meta, 2, NULL, NULL));
    int rc = run_script(argv[1], "check", path);
    if (rc == 77) {
        fmt_rmdir(dir);
        SKIP("numpy not available to %s", PYTHON);
    }
    CHECK(rc == 0);

    /* Python -> C */
    snprintf(path, sizeof path, "%s/py.safetensors", dir);
    CHECK(run_script(argv[1], "write", path) == 0);
    sv_st_file f;
    CHECK_OK(sv_safetensors_open(&f, path));
    CHECK(f.n_tensors == 4);
    CHECK(!strcmp(sv_safetensors_meta(&f, "source"), "numpy"));
    static const struct {
        const char *name;
        int64_t numel;
        int mul, mod;
        double shift;
    } want[3] = {{"z.bf16", 10, 7, 41, 2.5}, {"a.f32", 12, 5, 23, 1.0}, {"m.f16", 6, 3, 17, 0.5}};
    CHECK(!strcmp(f.tensors[0].name, "z.bf16") && f.tensors[0].dtype == SV_ST_BF16);
    CHECK(f.tensors[0].ndim == 2 && f.tensors[0].shape[0] == 2 && f.tensors[0].shape[1] == 5);
    for (int k = 0; k < 3; k++) {
        const sv_st_tensor *t = sv_safetensors_find(&f, want[k].name);
        CHECK(t && (int64_t)t->numel == want[k].numel);
        float out[16];
        CHECK_OK(sv_safetensors_read_f32(&f, t, 0, t->numel, out));
        for (int64_t i = 0; i < want[k].numel; i++)
            CHECK(out[i] == (float)value(i, want[k].mul, want[k].mod, want[k].shift));
    }
    const sv_st_tensor *t = sv_safetensors_find(&f, "steps");
    CHECK(t && t->dtype == SV_ST_I64 && t->numel == 3);
    int64_t steps[3];
    CHECK_OK(sv_safetensors_read_raw(&f, t, 0, 24, steps));
    CHECK(steps[0] == -1 && steps[1] == 0 && steps[2] == (int64_t)1 << 40);
    /* data laid out in reverse header order: the first header entry holds the last bytes */
    CHECK(f.tensors[0].offset + f.tensors[0].nbytes == f.file_size);
    sv_safetensors_close(&f);
    fmt_rmdir(dir);
    printf("test_safetensors_numpy: ok\n");
    return 0;
}
