/* The sharded update rules against their reference implementations (docs/testing.md).
 *
 * For each case a tiny ViT's fp32 masters (world 1, local communicator, CPU backend) take three
 * optimizer steps through sv_fsdp_optimizer_step with given gradients and per-step learning
 * rates; the initial weights, the gradients, shardvit's per-tensor layer-decay multipliers and
 * weight-decay flags, and the weights after every step go into a case directory. optim_ref.py
 * then builds timm's VisionTransformer of the same shape, takes the parameter groups from
 * timm's param_groups_layer_decay (or the decay / no-decay split), runs timm.optim.Lamb,
 * torch.optim.SGD, timm.optim.Lion or torch.optim.AdamW on the same tensors and compares every
 * step. Some tensors are set to zero weights (and one to zero gradients as well) so LAMB's
 * zero-norm rules are exercised.
 *
 * Python: $SHARDVIT_TEST_PYTHON (skip, exit 77, when unset); argv[1]: optim_ref.py. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fsdp/optim.h"
#include "model/model_rig.h"

#define STEPS 3
#define PATH_CAP 4096

typedef struct tcase {
    const char *name;
    sv_opt_kind kind;
    float lr, beta1, beta2, eps, wd, clip, momentum;
    int nesterov;
    double layer_decay; /* 0: off */
    const char *ref;    /* reference variant for optim_ref.py */
} tcase;

static const tcase cases[] = {
    {"lamb", SV_OPT_LAMB, 2e-2f, 0.9f, 0.999f, 1e-6f, 0.05f, 0.0f, 0, 0, 0, "lamb"},
    {"lamb_clip", SV_OPT_LAMB, 2e-2f, 0.9f, 0.999f, 1e-6f, 0.1f, 0.5f, 0, 0, 0, "lamb"},
    {"lamb_own_clip", SV_OPT_LAMB, 2e-2f, 0.8f, 0.99f, 1e-6f, 0.05f, 1.0f, 0, 0, 0, "lamb_max_grad_norm"},
    {"lamb_layer_decay", SV_OPT_LAMB, 2e-2f, 0.9f, 0.999f, 1e-6f, 0.05f, 0.0f, 0, 0, 0.65, "lamb"},
    {"lamb_no_wd", SV_OPT_LAMB, 2e-2f, 0.9f, 0.999f, 1e-6f, 0.0f, 0.0f, 0, 0, 0, "lamb"},
    {"sgd_nesterov", SV_OPT_SGD, 5e-2f, 0, 0, 0, 1e-2f, 0.0f, 0.9f, 1, 0, "sgd"},
    {"sgd_momentum", SV_OPT_SGD, 5e-2f, 0, 0, 0, 1e-2f, 0.7f, 0.8f, 0, 0.75, "sgd"},
    {"sgd_plain", SV_OPT_SGD, 5e-2f, 0, 0, 0, 1e-2f, 0.0f, 0.0f, 0, 0, "sgd"},
    {"lion", SV_OPT_LION, 1e-3f, 0.9f, 0.99f, 0, 0.1f, 0.0f, 0, 0, 0, "lion"},
    {"lion_layer_decay", SV_OPT_LION, 1e-3f, 0.95f, 0.98f, 0, 0.1f, 0.5f, 0, 0, 0.8, "lion"},
    {"adamw_layer_decay", SV_OPT_ADAMW, 1e-2f, 0.9f, 0.999f, 1e-8f, 0.05f, 0.0f, 0, 0, 0.7, "adamw"},
};

static void join(char *path, const char *dir, const char *name) {
    CHECK(snprintf(path, PATH_CAP, "%s/%s", dir, name) < PATH_CAP);
}

static FILE *open_in(const char *dir, const char *name, const char *mode) {
    char path[PATH_CAP];
    join(path, dir, name);
    FILE *f = fopen(path, mode);
    if (!f) {
        fprintf(stderr, "cannot open %s: %s\n", path, strerror(errno));
        exit(1);
    }
    return f;
}

/* Overwrite every gradient shard from canonical order (padding zero). */
static void set_grads(rig *r, const float *src) {
    const sv_layout *L = &r->f.L;
    for (int u = 0; u < L->n_units; u++) {
        const sv_unit *un = &L->units[u];
        memset(r->h_flat, 0, un->padded * 4);
        for (int k = 0; k < un->n_entries; k++) {
            const sv_flat_entry *e = &L->entries[un->first_entry + k];
            memcpy(r->h_flat + e->offset, src + r->canon_off[e->param], e->numel * 4);
        }
        CHECK_OK(sv_be_upload(r->be, r->f.us[u].grad, r->h_flat, un->shard * 4));
    }
}

static int find_param(const rig *r, const char *name) {
    for (int p = 0; p < r->f.L.n_params; p++)
        if (!strcmp(r->f.L.params[p].name, name)) return p;
    CHECK(!"tensor not found");
    return -1;
}

static void write_case(const tcase *tc, const char *dir) {
    CHECK(mkdir(dir, 0700) == 0 || errno == EEXIST);
    sv_vit_config vc = {.name = "custom",
                        .img = 16,
                        .patch = 4,
                        .in_chans = 3,
                        .num_classes = 10,
                        .dim = 24,
                        .depth = 3,
                        .heads = 2,
                        .mlp_ratio = 2.0,
                        /* the layer-decay cases with register tokens: timm puts reg_token in the stem */
                        .reg_tokens = tc->layer_decay > 0 ? 2 : 0};
    rig r;
    rig_opts o = {.B = 2, .seed = 99, .threads = 2};
    rig_init(&r, &vc, &o);
    size_t N = r.n_total;
    float *w = malloc(N * 4), *g = malloc(N * 4 * STEPS), *scale = malloc((size_t)r.f.L.n_params * 4);
    CHECK(w && g && scale);
    rig_get_masters(&r, w);
    /* biases and norms away from their init, so the no-decay paths see non-trivial values */
    for (int p = 0; p < r.f.L.n_params; p++)
        for (size_t i = 0; i < r.f.L.params[p].numel; i++)
            w[r.canon_off[p] + i] += 0.05f * (float)sv_rand_normal(sv_hash2(5, (uint64_t)p), i);
    int pz = find_param(&r, "blocks.0.attn.proj.weight"), ph = find_param(&r, "head.weight");
    memset(w + r.canon_off[pz], 0, r.f.L.params[pz].numel * 4); /* ||w|| = 0 */
    memset(w + r.canon_off[ph], 0, r.f.L.params[ph].numel * 4); /* ||w|| = 0 and ||u|| = 0 */
    rig_set_masters(&r, w);
    for (int s = 0; s < STEPS; s++)
        for (int p = 0; p < r.f.L.n_params; p++)
            for (size_t i = 0; i < r.f.L.params[p].numel; i++)
                g[s * N + r.canon_off[p] + i] =
                    p == ph ? 0.0f : 0.3f * (float)sv_rand_normal(sv_hash2(100 + (uint64_t)s, (uint64_t)p), i);
    for (int p = 0; p < r.f.L.n_params; p++) scale[p] = 1.0f;
    if (tc->layer_decay > 0) sv_layer_decay_scales(&r.f.L, tc->layer_decay, scale);

    FILE *f = open_in(dir, "case.txt", "w");
    fprintf(f, "ref %s\nlr %.9g\nbeta1 %.9g\nbeta2 %.9g\neps %.9g\nweight_decay %.9g\nclip %.9g\nmomentum %.9g\n",
            tc->ref, (double)tc->lr, (double)tc->beta1, (double)tc->beta2, (double)tc->eps, (double)tc->wd,
            (double)tc->clip, (double)tc->momentum);
    fprintf(f, "nesterov %d\nlayer_decay %.9g\nsteps %d\n", tc->nesterov, tc->layer_decay, STEPS);
    fprintf(f, "img %d\npatch %d\nin_chans %d\nnum_classes %d\ndim %d\ndepth %d\nheads %d\nmlp_ratio %.9g\n", vc.img,
            vc.patch, vc.in_chans, vc.num_classes, vc.dim, vc.depth, vc.heads, vc.mlp_ratio);
    fprintf(f, "reg_tokens %d\n", vc.reg_tokens);
    CHECK(fclose(f) == 0);
    f = open_in(dir, "manifest.txt", "w");
    for (int p = 0; p < r.f.L.n_params; p++) {
        const sv_param_info *pi = rig_param(&r, p);
        fprintf(f, "%s %zu %zu %d %.9g\n", pi->name, r.canon_off[p], pi->numel, pi->no_decay, (double)scale[p]);
    }
    CHECK(fclose(f) == 0);
    FILE *fw = open_in(dir, "params.bin", "wb"); /* initial, then after every step */
    CHECK(fwrite(w, 4, N, fw) == N);
    for (int s = 0; s < STEPS; s++) {
        set_grads(&r, g + s * N);
        sv_optim_config oc = {.lr = tc->lr * (float)(s + 1) / STEPS, /* a schedule: the LR changes per step */
                              .beta1 = tc->beta1,
                              .beta2 = tc->beta2,
                              .eps = tc->eps,
                              .weight_decay = tc->wd,
                              .max_grad_norm = tc->clip,
                              .kind = tc->kind,
                              .momentum = tc->momentum,
                              .nesterov = tc->nesterov,
                              .lr_scale = tc->layer_decay > 0 ? scale : NULL};
        double norm;
        int skipped;
        CHECK_OK(sv_fsdp_optimizer_step(&r.f, &oc, &norm, &skipped));
        CHECK(!skipped);
        rig_get_masters(&r, w);
        CHECK(fwrite(w, 4, N, fw) == N);
    }
    CHECK(fclose(fw) == 0);
    f = open_in(dir, "grads.bin", "wb");
    CHECK(fwrite(g, 4, N * STEPS, f) == N * STEPS);
    CHECK(fclose(f) == 0);
    free(w), free(g), free(scale);
    rig_free(&r);
}

int main(int argc, char **argv) {
    const char *py = getenv("SHARDVIT_TEST_PYTHON");
    if (!py || !*py) {
        printf("SHARDVIT_TEST_PYTHON unset: skipped\n");
        return 77;
    }
    CHECK(argc == 2);
    char root[] = "/tmp/shardvit-optim-XXXXXX";
    CHECK(mkdtemp(root) != NULL);
    size_t nc = sizeof cases / sizeof cases[0];
    char *args[64];
    char dirs[sizeof cases / sizeof cases[0]][PATH_CAP];
    int na = 0;
    args[na++] = (char *)py;
    args[na++] = argv[1];
    for (size_t i = 0; i < nc; i++) {
        join(dirs[i], root, cases[i].name);
        write_case(&cases[i], dirs[i]);
        args[na++] = dirs[i];
    }
    args[na] = NULL;
    fflush(stdout);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        execv(py, args);
        _exit(127);
    }
    int ws;
    CHECK(waitpid(pid, &ws, 0) == pid);
    int rc = WIFEXITED(ws) ? WEXITSTATUS(ws) : 1;
    if (rc == 0) {
        char cmd[PATH_CAP + 16];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
        if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", root);
    } else {
        fprintf(stderr, "optimizer reference check failed (rc %d); cases kept in %s\n", rc, root);
    }
    return rc == 0 ? 0 : 1;
}
