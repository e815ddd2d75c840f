/* shardvit info: parameter table (timm names/shapes), counts and FLOPs per image. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/commands.h"
#include "app/run.h"
#include "model/params.h"

/* Each preset with its shape and the timm names that alias it (model/config.h). */
static int list_models(void) {
    char names[256];
    snprintf(names, sizeof names, "%s", sv_vit_preset_names());
    for (char *save = NULL, *p = strtok_r(names, " ", &save); p; p = strtok_r(NULL, " ", &save)) {
        sv_vit_config c;
        if (sv_vit_preset(p, &c) != SV_OK) return sv_app_fail("info", SV_ERR_INVALID);
        printf("%-9s img %4d patch %2d in_chans %d classes %4d dim %4d depth %2d heads %2d mlp_ratio %g  timm:", p,
               c.img, c.patch, c.in_chans, c.num_classes, c.dim, c.depth, c.heads, c.mlp_ratio);
        const char *preset;
        int any = 0;
        for (int i = 0; sv_vit_timm_alias(i, &preset); i++)
            if (!strcmp(preset, p)) printf(" %s", sv_vit_timm_alias(i, NULL)), any = 1;
        printf("%s\n", any ? "" : " -");
    }
    return 0;
}

/* Each timm name with the data config train takes from it (model/config.h sv_vit_timm_data). */
static int list_timm_data(void) {
    for (int i = 0; sv_vit_timm_alias(i, NULL); i++) {
        const char *name = sv_vit_timm_alias(i, NULL);
        sv_vit_timm_data_cfg t;
        if (!sv_vit_timm_data(name, &t)) continue;
        printf("%s mean %g,%g,%g std %g,%g,%g interpolation %s crop_pct %g\n", name, t.mean[0], t.mean[1], t.mean[2],
               t.std[0], t.std[1], t.std[2], t.interp, t.crop_pct);
    }
    return 0;
}

int sv_cmd_info(int argc, char **argv, const sv_proc *proc) {
    (void)proc;
    sv_model_opts mo = {.model = "vit-b16"};
    int table = 1, models = 0, timm_data = 0;
    /* clang-format off: one flag per line */
    sv_flag flags[] = {
        SV_MODEL_FLAGS(mo),
        {"table", SV_FLAG_BOOL, &table, 0, 0, "print the per-tensor table", 0},
        {"models", SV_FLAG_BOOL, &models, 0, 0, "list the presets, their shapes and the timm names that alias them", 0},
        {"timm-data", SV_FLAG_BOOL, &timm_data, 0, 0,
         "list the timm names with their data config (mean, std, interpolation, crop_pct: train's defaults for "
         "--model NAME, as timm's train.py resolves them)",
         0},
        SV_FLAG_END};
    /* clang-format on */
    sv_cmd_spec spec = {"info", "shardvit info --model NAME [shape flags] | --models | --timm-data",
                        "Print the parameter table (timm VisionTransformer names and shapes), the parameter "
                        "count and the FLOPs per image. --model takes a preset or a timm model name with the same "
                        "shapes (--models lists them).",
                        0};
    char *pos[1];
    int npos;
    int rc = sv_cmd_parse(&spec, flags, argc, argv, pos, &npos, -1, NULL);
    if (rc >= 0) return rc;
    if (models) return list_models();
    if (timm_data) return list_timm_data();
    sv_vit_config c;
    sv_status st = sv_model_opts_resolve(&mo, &c);
    if (st != SV_OK) return sv_cmd_usage_error("info", "%s", sv_err_msg());
    int n = sv_vit_num_params(&c);
    sv_param_info *p = calloc((size_t)n, sizeof *p);
    if (!p) return sv_app_fail("info", SV_FAIL(SV_ERR_OOM, "parameter table"));
    sv_vit_param_table(&c, 0, p);
    printf("model %s: img %d patch %d in_chans %d classes %d dim %d depth %d heads %d mlp_ratio %g tokens %d\n", c.name,
           c.img, c.patch, c.in_chans, c.num_classes, c.dim, c.depth, c.heads, c.mlp_ratio, sv_vit_tokens(&c));
    printf("  global_pool %s, class_token %d, reg_tokens %d, no_embed_class %d, layer_scale %g\n",
           sv_vit_pool_name(c.global_pool), !c.no_class_token, c.reg_tokens, c.no_embed_class, c.layer_scale);
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        total += p[i].numel;
        if (!table) continue;
        char shape[96];
        int o = snprintf(shape, sizeof shape, "(");
        for (int d = 0; d < p[i].ndim; d++)
            o += snprintf(shape + o, sizeof shape - (size_t)o, "%s%lld", d ? ", " : "", (long long)p[i].shape[d]);
        snprintf(shape + o, sizeof shape - (size_t)o, ")");
        printf("  %-32s %-22s %12zu%s\n", p[i].name, shape, p[i].numel, p[i].no_decay ? "  no-decay" : "");
    }
    double f = sv_vit_flops_fwd(&c);
    printf("parameters: %zu\n", total);
    printf("flops per image: forward %.4g GFLOP, training step (3x) %.4g GFLOP\n", f / 1e9, 3 * f / 1e9);
    free(p);
    return 0;
}
