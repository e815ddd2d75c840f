/* Test helper for tests/eval: write ViT weights as a timm-named safetensors file + config.json.
 *
 *   eval_tool write SOURCE OUT.safetensors DIM DEPTH HEADS IMG PATCH CHANS CLASSES [BIAS...]
 *
 * SOURCE: a train --save-params dump (all fp32 parameters in canonical order), or "init" for the
 * deterministic initialisation (seed 5). With BIAS values (one per class) head.weight is zeroed
 * and head.bias set to them: the logits are then exactly the biases for every image, so the
 * evaluation results are known without running the model (constant prediction). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "formats/safetensors.h"
#include "model/params.h"

int main(int argc, char **argv) {
    if (argc < 11 || strcmp(argv[1], "write")) {
        fprintf(stderr, "usage: eval_tool write SOURCE OUT DIM DEPTH HEADS IMG PATCH CHANS CLASSES [BIAS...]\n");
        return 2;
    }
    sv_vit_config c = {.name = "custom", .mlp_ratio = 4.0};
    c.dim = atoi(argv[4]), c.depth = atoi(argv[5]), c.heads = atoi(argv[6]), c.img = atoi(argv[7]);
    c.patch = atoi(argv[8]), c.in_chans = atoi(argv[9]), c.num_classes = atoi(argv[10]);
    int nb = argc - 11;
    CHECK(nb == 0 || nb == c.num_classes);
    int n = sv_vit_num_params(&c);
    sv_param_info *p = calloc((size_t)n, sizeof *p);
    CHECK(p);
    sv_vit_param_table(&c, 0, p);
    size_t total = sv_vit_param_count(&c);
    float *all = malloc(total * 4);
    CHECK(all);
    if (!strcmp(argv[2], "init")) {
        size_t off = 0;
        for (int i = 0; i < n; i++) sv_vit_param_init(5, &p[i], all + off, 0, p[i].numel), off += p[i].numel;
    } else {
        FILE *f = fopen(argv[2], "rb");
        CHECK(f);
        CHECK(fread(all, 4, total, f) == total);
        CHECK(fgetc(f) == EOF); /* the dump has exactly this model's size */
        fclose(f);
    }
    sv_st_entry *e = calloc((size_t)n, sizeof *e);
    CHECK(e);
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        float *t = all + off;
        if (nb && !strcmp(p[i].name, "head.weight")) memset(t, 0, p[i].numel * 4);
        if (nb && !strcmp(p[i].name, "head.bias"))
            for (int k = 0; k < nb; k++) t[k] = (float)atof(argv[11 + k]);
        e[i] = (sv_st_entry){p[i].name, SV_ST_F32, p[i].ndim, p[i].shape, t};
        off += p[i].numel;
    }
    CHECK_OK(sv_safetensors_write(argv[3], e, (size_t)n, NULL, 0, NULL, NULL));
    /* config.json beside it (timm keys), so the head count is known to eval/predict */
    char cj[4096];
    const char *slash = strrchr(argv[3], '/');
    snprintf(cj, sizeof cj, "%.*s/config.json", slash ? (int)(slash - argv[3]) : 1, slash ? argv[3] : ".");
    FILE *f = fopen(cj, "w");
    CHECK(f);
    fprintf(f,
            "{\"architecture\": \"vit_custom\", \"num_classes\": %d, \"embed_dim\": %d, \"depth\": %d, "
            "\"num_heads\": %d, \"img_size\": %d, \"patch_size\": %d, \"in_chans\": %d, \"mlp_ratio\": 4.0}\n",
            c.num_classes, c.dim, c.depth, c.heads, c.img, c.patch, c.in_chans);
    fclose(f);
    free(e);
    free(all);
    free(p);
    return 0;
}
