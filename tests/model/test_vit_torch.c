/* Whole-model cross-check against an independent PyTorch ViT (docs/testing.md).
 *
 * For each case a tiny ViT runs one micro-step through the FSDP engine at world 1 (fp32 CPU
 * backend); its weights (timm names, canonical order), images, labels, logits, mean loss and
 * every gradient go into a case directory, and tests/model/vit_ref.py rebuilds the model in
 * PyTorch, loads the weights and requires relative error <= 1e-4 on everything (see the
 * script's header for the file formats). Skipped (exit 77) when the Python interpreter cannot
 * import torch.
 *
 * argv[1]: the Python interpreter (Debian's python3-torch lives under /usr/bin/python3),
 * argv[2]: path of vit_ref.py. The case directories are removed when the comparison passes and
 * kept (path printed) when it fails. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "model_rig.h"

typedef struct tcase {
    const char *name;
    sv_vit_config vc;
    int B;
    float smoothing;
    int random_weights; /* 0: shardvit's deterministic (timm) initialisation */
} tcase;

#define PATH_CAP 4096

/* dir/name into path (PATH_CAP bytes); a path that does not fit is a test failure. */
static void join(char *path, const char *dir, const char *name) {
    CHECK(snprintf(path, PATH_CAP, "%s/%s", dir, name) < PATH_CAP);
}

static void write_file(const char *dir, const char *name, const void *data, size_t bytes) {
    char path[PATH_CAP];
    join(path, dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) {
        fprintf(stderr, "cannot create %s: %s\n", path, strerror(errno));
        exit(1);
    }
    CHECK(fwrite(data, 1, bytes, f) == bytes);
    CHECK(fclose(f) == 0);
}

static void rm_case(const char *dir) {
    static const char *files[] = {"config.txt", "manifest.txt", "params.bin", "grads.bin",
                                  "images.bin", "labels.bin",   "logits.bin", "result.txt"};
    char path[PATH_CAP];
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        join(path, dir, files[i]);
        unlink(path);
    }
    rmdir(dir);
}

/* Run one case through shardvit and write its directory. */
static void write_case(const tcase *tc, const char *dir) {
    CHECK(mkdir(dir, 0700) == 0 || errno == EEXIST);
    rig r;
    rig_opts o = {.B = tc->B, .recompute = 0, .wrap_bytes = 0, .seed = 2024, .threads = 1};
    rig_init(&r, &tc->vc, &o);
    const sv_vit_config *c = &tc->vc;
    size_t N = r.n_total, img_n = (size_t)tc->B * c->in_chans * c->img * c->img;
    size_t nl = (size_t)tc->B * c->num_classes;
    float *w = malloc(N * 4), *g = malloc(N * 4), *images = malloc(img_n * 4), *logits = malloc(nl * 4);
    int32_t *labels = malloc((size_t)tc->B * 4);
    CHECK(w && g && images && logits && labels);
    if (tc->random_weights) {
        rig_random_weights(&r, 77, w);
        rig_set_masters(&r, w);
    }
    rig_get_masters(&r, w);
    rig_make_batch(&r, 4242, images, labels);
    rig_set_batch(&r, images, labels);
    double loss = rig_grad_step(&r, tc->smoothing);
    rig_get_grads(&r, g);
    CHECK_OK(sv_be_download(r.be, logits, r.m.logits, nl * 4));

    char buf[PATH_CAP];
    FILE *f;
    join(buf, dir, "config.txt");
    CHECK((f = fopen(buf, "w")) != NULL);
    fprintf(f,
            "img %d\npatch %d\nin_chans %d\nnum_classes %d\ndim %d\ndepth %d\nheads %d\nhidden %d\nbatch %d\n"
            "smoothing %.9g\nloss %.17g\n",
            c->img, c->patch, c->in_chans, c->num_classes, c->dim, c->depth, c->heads, sv_vit_hidden(c), tc->B,
            (double)tc->smoothing, loss);
    CHECK(fclose(f) == 0);
    join(buf, dir, "manifest.txt");
    CHECK((f = fopen(buf, "w")) != NULL);
    for (int p = 0; p < r.f.L.n_params; p++) {
        const sv_param_info *pi = rig_param(&r, p);
        fprintf(f, "%s %zu %zu %d", pi->name, r.canon_off[p], pi->numel, pi->ndim);
        for (int d = 0; d < pi->ndim; d++) fprintf(f, " %lld", (long long)pi->shape[d]);
        fprintf(f, "\n");
    }
    CHECK(fclose(f) == 0);
    write_file(dir, "params.bin", w, N * 4);
    write_file(dir, "grads.bin", g, N * 4);
    write_file(dir, "images.bin", images, img_n * 4);
    write_file(dir, "labels.bin", labels, (size_t)tc->B * 4);
    write_file(dir, "logits.bin", logits, nl * 4);
    printf("case %s: %zu parameters, mean loss %.9f\n", tc->name, N, loss);
    free(w), free(g), free(images), free(logits), free(labels);
    rig_free(&r);
}

static int run_cmd(char *const argv[]) {
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        execv(argv[0], argv);
        _exit(127);
    }
    int st;
    CHECK(waitpid(pid, &st, 0) == pid);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

static sv_vit_config cfg(int img, int patch, int C, int K, int D, int depth, int H, double mlp) {
    sv_vit_config c = {.img = img,
                       .patch = patch,
                       .in_chans = C,
                       .num_classes = K,
                       .dim = D,
                       .depth = depth,
                       .heads = H,
                       .mlp_ratio = mlp};
    snprintf(c.name, sizeof c.name, "custom");
    return c;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s PYTHON vit_ref.py\n", argv[0]);
        return 2;
    }
    const char *py = argv[1], *script = argv[2];
    uint32_t one = 1;
    unsigned char lsb;
    memcpy(&lsb, &one, 1);
    if (lsb != 1) SKIP("the case files are little-endian raw floats; this host is big-endian");
    if (access(py, X_OK) != 0) SKIP("%s not found (Debian python3-torch belongs to /usr/bin/python3)", py);
    {
        char *chk[] = {(char *)py, "-c", "import torch, numpy", NULL};
        if (run_cmd(chk) != 0) SKIP("%s cannot import torch and numpy (install python3-torch python3-numpy)", py);
    }
    CHECK(access(script, R_OK) == 0);

    tcase cases[] = {
        {"init_gray", cfg(8, 4, 1, 5, 12, 2, 3, 2.0), 3, 0.1f, 0},
        {"random_rgb", cfg(8, 4, 3, 5, 12, 2, 3, 2.0), 3, 0.1f, 1},
        {"random_rgb_t10", cfg(12, 4, 3, 7, 16, 3, 4, 2.5), 4, 0.0f, 1},
    };
    enum { NC = sizeof cases / sizeof cases[0] };
    const char *tmp = getenv("TMPDIR");
    char root[PATH_CAP];
    join(root, tmp && *tmp ? tmp : "/tmp", "sv_vit_torch_XXXXXX");
    CHECK(mkdtemp(root) != NULL);
    char dirs[NC][PATH_CAP];
    char *pyargv[NC + 3];
    pyargv[0] = (char *)py;
    pyargv[1] = (char *)script;
    for (int i = 0; i < NC; i++) {
        join(dirs[i], root, cases[i].name);
        write_case(&cases[i], dirs[i]);
        pyargv[2 + i] = dirs[i];
    }
    pyargv[2 + NC] = NULL;
    int rc = run_cmd(pyargv);

    /* The script must have compared logits, loss and every tensor of every case. */
    int complete = 1;
    for (int i = 0; i < NC && rc == 0; i++) {
        char path[PATH_CAP];
        join(path, dirs[i], "result.txt");
        FILE *f = fopen(path, "r");
        int compared = -1, mismatched = -1;
        if (!f || fscanf(f, "compared %d mismatched %d", &compared, &mismatched) != 2) complete = 0;
        if (f) fclose(f);
        int want = 2 + sv_vit_num_params(&cases[i].vc);
        if (compared != want || mismatched != 0) {
            fprintf(stderr, "case %s: result.txt reports %d compared (want %d), %d mismatched\n", cases[i].name,
                    compared, want, mismatched);
            complete = 0;
        }
    }
    if (rc != 0 || !complete) {
        fprintf(stderr, "PyTorch comparison failed (exit %d); case files kept in %s\n", rc, root);
        return 1;
    }
    for (int i = 0; i < NC; i++) rm_case(dirs[i]);
    rmdir(root);
    printf("test_vit_torch: OK\n");
    return 0;
}
