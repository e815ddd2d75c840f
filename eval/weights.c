#include "eval/weights.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/checked.h"
#include "core/fileio.h"
#include "core/json.h"
#include "core/log.h"
#include "ckpt/checkpoint.h"
#include "ckpt/ckpt_adapt.h"
#include "formats/safetensors.h"
#include "fsdp/load.h"
#include "model/params.h"

/* The values config.json states for `key`, the top level's first and then "model_args"'s (a JSON
 * null states nothing): up to two, their count returned; where[i] is the prefix that names each
 * in a message ("" or "model_args."). */
static int declared(const sv_json *root, const char *key, const sv_json *out[2], const char *where[2]) {
    int n = 0;
    const sv_json *ma = sv_json_member_get(root, "model_args");
    const sv_json *v[2] = {sv_json_member_get(root, key), ma ? sv_json_member_get(ma, key) : NULL};
    for (int i = 0; i < 2; i++)
        if (v[i] && v[i]->type != SV_JSON_NULL) out[n] = v[i], where[n++] = i ? "model_args." : "";
    return n;
}

/* a and b state the same value: equal numbers, booleans or strings; arrays of the same values;
 * or a number and an array of only that number (img_size 224 and [224, 224]). */
static int same_value(const sv_json *a, const sv_json *b) {
    if (a->type == SV_JSON_ARRAY && b->type != SV_JSON_ARRAY) {
        const sv_json *t = a;
        a = b, b = t;
    }
    if (a->type != SV_JSON_ARRAY && b->type == SV_JSON_ARRAY) {
        size_t n = sv_json_count(b);
        for (size_t i = 0; i < n; i++)
            if (!same_value(a, sv_json_index(b, i))) return 0;
        return n > 0;
    }
    if (a->type != b->type) return 0;
    switch (a->type) {
    case SV_JSON_NULL: return 1;
    case SV_JSON_BOOL: return !a->u.boolean == !b->u.boolean;
    case SV_JSON_NUMBER:
        return a->u.num.is_int && b->u.num.is_int ? a->u.num.i == b->u.num.i : a->u.num.d == b->u.num.d;
    case SV_JSON_STRING: return a->u.str.len == b->u.str.len && !memcmp(a->u.str.s, b->u.str.s, a->u.str.len);
    case SV_JSON_ARRAY:
        if (sv_json_count(a) != sv_json_count(b)) return 0;
        for (size_t i = 0; i < sv_json_count(a); i++)
            if (!same_value(sv_json_index(a, i), sv_json_index(b, i))) return 0;
        return 1;
    default: return 0; /* objects: never a value of these keys */
    }
}

/* v as compact JSON text, escaped and cut to fit buf (SV_ESC_CAP bytes), for a message. */
static const char *value_text(const sv_json *v, char *buf) {
    sv_json_writer w;
    sv_json_writer_init(&w, 0);
    sv_json_value(&w, v);
    const char *text;
    char cut[64];
    if (sv_json_writer_finish(&w, &text, NULL) == SV_OK)
        snprintf(cut, sizeof cut, "%.56s%s", text, strlen(text) > 56 ? "..." : "");
    else
        snprintf(cut, sizeof cut, "?");
    sv_json_writer_free(&w);
    sv_err_clear();
    return sv_log_esc(cut, buf, SV_ESC_CAP);
}

/* Every key shardvit reads from config.json, at the top level or under "model_args". */
static const char *const k_config_keys[] = {"embed_dim",      "depth",       "num_heads", "patch_size",  "img_size",
                                            "num_classes",    "in_chans",    "mlp_ratio", "init_values", "reg_tokens",
                                            "no_embed_class", "class_token", "fc_norm",   "global_pool"};

/* A key stated at the top level and under "model_args" must state one value: timm builds the
 * model from model_args, so applying the top level's value (or either) when they differ would
 * answer for a model the file does not describe. */
static sv_status check_agree(const sv_json *root, const char *cj) {
    for (size_t k = 0; k < sizeof k_config_keys / sizeof k_config_keys[0]; k++) {
        const sv_json *v[2];
        const char *where[2];
        if (declared(root, k_config_keys[k], v, where) < 2 || same_value(v[0], v[1])) continue;
        char a[SV_ESC_CAP], b[SV_ESC_CAP];
        return SV_FAIL(SV_ERR_FORMAT,
                       "%s: %s = %s but model_args.%s = %s: config.json contradicts itself (timm builds the model "
                       "from model_args); make the two agree or remove the top-level one",
                       cj, k_config_keys[k], value_text(v[0], a), k_config_keys[k], value_text(v[1], b));
    }
    return SV_OK;
}

/* The other arguments of timm's VisionTransformer that a config.json's model_args may hold. Those
 * that change what the model computes and that shardvit does not implement are accepted only at
 * timm's default (`dflt`: "true", "false", a string, or NULL for JSON null); the training-only
 * ones (dropout rates, initialisation; `ignore`) do not matter here. Any key outside this table
 * and k_config_keys is refused: the file would describe a model shardvit does not compute. */
static const struct {
    const char *key, *dflt, *also; /* also: a second accepted value */
    int ignore;
} k_model_args_other[] = {
    {"qkv_bias", "true", NULL, 0},
    {"qk_norm", "false", NULL, 0},
    {"scale_attn_norm", "false", NULL, 0},
    {"scale_mlp_norm", "false", NULL, 0},
    {"proj_bias", "true", NULL, 0},
    {"pos_embed", "learn", NULL, 0},
    {"pre_norm", "false", NULL, 0},
    {"final_norm", "true", NULL, 0},
    {"pool_include_prefix", "false", NULL, 0},
    {"dynamic_img_size", "false", NULL, 0},
    {"dynamic_img_pad", "false", NULL, 0},
    {"act_layer", NULL, "gelu", 0},
    {"norm_layer", NULL, NULL, 0},
    {"embed_layer", NULL, NULL, 0},
    {"embed_norm_layer", NULL, NULL, 0},
    {"block_fn", NULL, NULL, 0},
    {"mlp_layer", NULL, NULL, 0},
    {"attn_layer", NULL, NULL, 0},
    {"drop_rate", NULL, NULL, 1},
    {"pos_drop_rate", NULL, NULL, 1},
    {"patch_drop_rate", NULL, NULL, 1},
    {"proj_drop_rate", NULL, NULL, 1},
    {"attn_drop_rate", NULL, NULL, 1},
    {"drop_path_rate", NULL, NULL, 1},
    {"weight_init", NULL, NULL, 1},
    {"fix_init", NULL, NULL, 1},
    {"device", NULL, NULL, 1},
    {"dtype", NULL, NULL, 1},
};

/* v states the value `want` ("true", "false", a string; NULL: JSON null). */
static int is_value(const sv_json *v, const char *want) {
    if (!want) return v->type == SV_JSON_NULL;
    if (v->type == SV_JSON_BOOL) return !strcmp(want, v->u.boolean ? "true" : "false");
    return v->type == SV_JSON_STRING && !strcmp(v->u.str.s, want);
}

/* Every member of model_args is a key shardvit applies (k_config_keys), a training-only one, or
 * one at timm's default; anything else is refused naming it. */
static sv_status check_model_args(const sv_json *root, const char *cj) {
    const sv_json *ma = sv_json_member_get(root, "model_args");
    if (!ma || ma->type != SV_JSON_OBJECT) return SV_OK;
    for (size_t i = 0; i < ma->u.obj.n; i++) {
        const char *key = ma->u.obj.members[i].key;
        const sv_json *v = &ma->u.obj.members[i].value;
        int known = 0;
        for (size_t k = 0; k < sizeof k_config_keys / sizeof k_config_keys[0] && !known; k++)
            known = !strcmp(key, k_config_keys[k]);
        for (size_t k = 0; k < sizeof k_model_args_other / sizeof k_model_args_other[0] && !known; k++) {
            if (strcmp(key, k_model_args_other[k].key)) continue;
            known = 1;
            if (k_model_args_other[k].ignore || is_value(v, k_model_args_other[k].dflt) ||
                (k_model_args_other[k].also && is_value(v, k_model_args_other[k].also)))
                continue;
            char a[SV_ESC_CAP];
            return SV_FAIL(SV_ERR_FORMAT,
                           "%s: model_args.%s = %s: shardvit computes this timm model argument only at timm's "
                           "default (%s), so that file describes another model; refused rather than evaluated as one",
                           cj, key, value_text(v, a), k_model_args_other[k].dflt ? k_model_args_other[k].dflt : "null");
        }
        if (!known) {
            char e[SV_ESC_CAP], a[SV_ESC_CAP];
            return SV_FAIL(SV_ERR_FORMAT,
                           "%s: model_args.%s = %s: a model argument shardvit does not know, so it cannot tell whether "
                           "the model computes what shardvit runs; refused (remove it if it is timm's default)",
                           cj, sv_log_esc(key, e, sizeof e), value_text(v, a));
        }
    }
    return SV_OK;
}

/* The config.json value applied for `key`: the declared() one (top level and "model_args" agree,
 * check_agree), NULL when none. */
static const sv_json *cfg_value(const sv_json *root, const char *key, const char **where) {
    const sv_json *v[2];
    const char *w[2];
    if (!declared(root, key, v, w)) return NULL;
    if (where) *where = w[0];
    return v[0];
}

/* An integer size from config.json: a number, or (img_size [h, w]) an array whose first element
 * is applied (check_int compares every element with the weights). */
static sv_status cfg_int(const sv_json *root, const char *key, const char *cj, int *out) {
    const char *where = "";
    const sv_json *v = cfg_value(root, key, &where);
    if (!v) return SV_OK;
    if (v->type == SV_JSON_ARRAY && !sv_json_count(v))
        return SV_FAIL(SV_ERR_FORMAT, "%s: %s%s = [] is an empty array, expected an integer (or [h, w])", cj, where,
                       key);
    if (v->type == SV_JSON_ARRAY) v = sv_json_index(v, 0); /* img_size [h, w] */
    int64_t x;
    SV_TRY(sv_json_as_i64(v, &x));
    if (x < 1 || x > 1000000)
        return SV_FAIL(SV_ERR_FORMAT, "%s: %s%s = %lld out of range", cj, where, key, (long long)x);
    *out = (int)x;
    return SV_OK;
}

/* 1 when 1 <= n <= 10^12 is the square of an integer, its root in *g; else 0. */
static int exact_sqrt(int64_t n, uint64_t *g) {
    return n >= 1 && n <= 1000000000000LL && sv_exact_sqrt_u64((uint64_t)n, g);
}

/* config.json next to `path` (its name into cj, 4096 bytes), parsed into doc; *found 0 when
 * there is none (ckpt/checkpoint.h sv_ckpt_config_read). */
static sv_status read_config_json(const char *path, char *cj, sv_json_doc *doc, int *found) {
    char *text = NULL;
    size_t len = 0;
    SV_TRY(sv_ckpt_config_read(path, cj, 4096, &text, &len, found));
    if (!*found) return SV_OK;
    *found = 0;
    sv_status st = sv_json_parse(doc, text, len, cj, NULL);
    free(text);
    SV_TRY(st);
    if (doc->root.type != SV_JSON_OBJECT) {
        sv_json_doc_free(doc);
        return SV_FAIL(SV_ERR_FORMAT, "%s: expected a JSON object", cj);
    }
    *found = 1;
    return SV_OK;
}

/* Apply config.json (root, read from cj) to c (*nec_known: it settles no_embed_class). */
static sv_status apply_config_json(const sv_json *root, const char *cj, sv_vit_config *c, int *have_heads,
                                   int *nec_known) {
    sv_status st;
    int heads = 0;
    if ((st = check_agree(root, cj)) == SV_OK && (st = check_model_args(root, cj)) == SV_OK &&
        (st = cfg_int(root, "embed_dim", cj, &c->dim)) == SV_OK &&
        (st = cfg_int(root, "depth", cj, &c->depth)) == SV_OK &&
        (st = cfg_int(root, "num_heads", cj, &heads)) == SV_OK &&
        (st = cfg_int(root, "patch_size", cj, &c->patch)) == SV_OK &&
        (st = cfg_int(root, "img_size", cj, &c->img)) == SV_OK &&
        (st = cfg_int(root, "num_classes", cj, &c->num_classes)) == SV_OK &&
        (st = cfg_int(root, "in_chans", cj, &c->in_chans)) == SV_OK) {
        const sv_json *mr = cfg_value(root, "mlp_ratio", NULL);
        if (mr) st = sv_json_as_f64(mr, &c->mlp_ratio);
        const sv_json *iv = cfg_value(root, "init_values", NULL);
        if (st == SV_OK && iv) st = sv_json_as_f64(iv, &c->layer_scale);
        if (st == SV_OK && !(c->layer_scale >= 0 && c->layer_scale <= 1e3))
            st = SV_FAIL(SV_ERR_FORMAT, "%s: init_values %g out of range [0, 1000]", cj, c->layer_scale);
        const sv_json *nec = cfg_value(root, "no_embed_class", NULL);
        if (st == SV_OK && nec) {
            st = sv_json_as_bool(nec, &c->no_embed_class);
            *nec_known = 1;
        } else if (st == SV_OK && cfg_value(root, "embed_dim", NULL))
            *nec_known = 1; /* a config.json without the key: timm's default, False */
    }
    SV_TRY(st);
    if (heads) {
        c->heads = heads;
        if (have_heads) *have_heads = 1;
    }
    return SV_OK;
}

/* Every integer config.json states for key (an img_size [h, w] element by element) equals what
 * the weights hold. */
static sv_status check_int(const sv_json *root, const char *key, int64_t actual, const char *cj, const char *what) {
    const sv_json *v[2];
    const char *where[2];
    int n = declared(root, key, v, where);
    for (int i = 0; i < n; i++) {
        size_t m = v[i]->type == SV_JSON_ARRAY ? sv_json_count(v[i]) : 1;
        if (!m)
            return SV_FAIL(SV_ERR_FORMAT, "%s: %s%s = [] is an empty array, expected an integer", cj, where[i], key);
        for (size_t j = 0; j < m; j++) {
            int64_t x;
            SV_TRY(sv_json_as_i64(v[i]->type == SV_JSON_ARRAY ? sv_json_index(v[i], j) : v[i], &x));
            if (x != actual)
                return SV_FAIL(SV_ERR_FORMAT,
                               "%s: %s%s = %lld, but the weights hold %s %lld: config.json and weights disagree", cj,
                               where[i], key, (long long)x, what, (long long)actual);
        }
    }
    return SV_OK;
}

static sv_status check_bool(const sv_json *root, const char *key, int actual, const char *cj, const char *what) {
    const sv_json *v[2];
    const char *where[2];
    int n = declared(root, key, v, where);
    for (int i = 0; i < n; i++) {
        int x;
        SV_TRY(sv_json_as_bool(v[i], &x));
        if (!x != !actual)
            return SV_FAIL(SV_ERR_FORMAT, "%s: %s%s = %s, but the weights %s: config.json and weights disagree", cj,
                           where[i], key, x ? "true" : "false", what);
    }
    return SV_OK;
}

/* config.json next to the weights (r, read from cj) must describe the model the tensors hold:
 * timm builds its model from config.json, so a contradiction means timm would refuse the file or
 * (for the pooling) compute something else than shardvit would from the same file. hidden: the
 * MLP width the weights hold (0: unknown). */
static sv_status check_config_json(const sv_json *r, const char *cj, const sv_st_file *f, const sv_vit_config *c,
                                   int64_t hidden) {
    int avg = c->global_pool == SV_POOL_AVG;
    sv_status st = check_int(r, "embed_dim", c->dim, cj, "width (patch_embed.proj.weight rows)");
    if (st == SV_OK) st = check_int(r, "depth", c->depth, cj, "blocks: depth");
    if (st == SV_OK) st = check_int(r, "patch_size", c->patch, cj, "patch_embed.proj.weight of patch");
    if (st == SV_OK) st = check_int(r, "in_chans", c->in_chans, cj, "patch_embed.proj.weight for input channels");
    if (st == SV_OK) st = check_int(r, "num_classes", c->num_classes, cj, "head.weight rows: classes");
    if (st == SV_OK) st = check_int(r, "img_size", c->img, cj, "pos_embed for an image side of");
    if (st == SV_OK) st = check_int(r, "reg_tokens", c->reg_tokens, cj, "reg_token rows: register tokens");
    if (st == SV_OK)
        st = check_bool(r, "class_token", !c->no_class_token, cj,
                        c->no_class_token ? "have no cls_token" : "have a cls_token");
    if (st == SV_OK)
        st = check_bool(r, "fc_norm", avg, cj, avg ? "have fc_norm.*" : "have no fc_norm.* (norm.* instead)");
    const sv_json *v[2];
    const char *where[2];
    int n = st == SV_OK ? declared(r, "global_pool", v, where) : 0;
    for (int i = 0; i < n && st == SV_OK; i++) {
        const char *gp;
        if ((st = sv_json_as_str(v[i], &gp, NULL)) != SV_OK) break;
        if (strcmp(gp, sv_vit_pool_name(c->global_pool)))
            st =
                SV_FAIL(SV_ERR_FORMAT,
                        "%s: %sglobal_pool = \"%.40s\", but the weights hold the layout of global_pool \"%s\" (%s): "
                        "shardvit pools as \"token\" with norm.* or as \"avg\" with fc_norm.* (timm's defaults for "
                        "each); config.json and weights disagree",
                        cj, where[i], gp, sv_vit_pool_name(c->global_pool), avg ? "fc_norm.*" : "norm.*, no fc_norm.*");
    }
    n = st == SV_OK ? declared(r, "mlp_ratio", v, where) : 0;
    for (int i = 0; i < n && st == SV_OK && hidden > 0; i++) {
        double x;
        if ((st = sv_json_as_f64(v[i], &x)) != SV_OK) break;
        if (!(x > 0 && x < 1e6) || (int64_t)(c->dim * x) != hidden)
            st =
                SV_FAIL(SV_ERR_FORMAT,
                        "%s: %smlp_ratio = %g, but the weights hold an MLP of width %lld for width %d: config.json and "
                        "weights disagree",
                        cj, where[i], x, (long long)hidden, c->dim);
    }
    n = st == SV_OK ? declared(r, "num_heads", v, where) : 0;
    for (int i = 0; i < n && st == SV_OK; i++) {
        int64_t h;
        if ((st = sv_json_as_i64(v[i], &h)) == SV_OK && (h < 1 || c->dim % h))
            st = SV_FAIL(SV_ERR_FORMAT, "%s: %snum_heads = %lld does not divide the weights' width %d", cj, where[i],
                         (long long)h, c->dim);
    }
    n = st == SV_OK ? declared(r, "init_values", v, where) : 0;
    for (int i = 0; i < n && st == SV_OK; i++) {
        double x;
        if ((st = sv_json_as_f64(v[i], &x)) == SV_OK && x > 0 && !sv_safetensors_find(f, "blocks.0.ls1.gamma"))
            st = SV_FAIL(SV_ERR_FORMAT,
                         "%s: %sinit_values = %g (LayerScale), but the weights hold no blocks.*.ls1.gamma: config.json "
                         "and weights disagree",
                         cj, where[i], x);
    }
    return st;
}

static const sv_st_tensor *need(const sv_st_file *f, const char *name, int ndim) {
    const sv_st_tensor *t = sv_safetensors_find(f, name);
    if (!t) {
        SV_FAIL(SV_ERR_FORMAT, "%s: tensor %s missing (not a timm VisionTransformer state dict?)", f->path, name);
        return NULL;
    }
    if (t->ndim != ndim) {
        SV_FAIL(SV_ERR_FORMAT, "%s: tensor %s has %d dimensions, expected %d", f->path, name, t->ndim, ndim);
        return NULL;
    }
    return t;
}

sv_status sv_weights_infer_config(const char *path, sv_vit_config *c, int *have_heads) {
    if (have_heads) *have_heads = 0;
    sv_st_file f;
    SV_TRY(sv_safetensors_open(&f, path));
    int nec_known = 0; /* config.json said whether pos_embed covers the prefix tokens */
    /* config.json beside the weights, parsed once: applied here, checked against the tensors
     * once their shapes are known */
    char cj[4096];
    sv_json_doc doc;
    int found = 0;
    sv_status st = read_config_json(path, cj, &doc, &found);
    if (st == SV_OK && found) st = apply_config_json(&doc.root, cj, c, have_heads, &nec_known);
    const sv_st_tensor *pw = NULL, *pos = NULL, *hw = NULL, *fc1;
    if (st == SV_OK &&
        (!(pw = need(&f, "patch_embed.proj.weight", 4)) || !(pos = need(&f, "pos_embed", 3)) ||
         !(hw = need(&f, "head.weight", 2))))
        st = SV_ERR_FORMAT;
    /* Shapes come from the file: every value is range-checked before it becomes an int (a
     * hostile 2^32 + 36 must not turn into 36). */
    if (st == SV_OK) {
        const struct {
            const sv_st_tensor *t;
            int d;
        } dims[] = {{pw, 0}, {pw, 1}, {pw, 2}, {hw, 0}};
        for (int i = 0; i < 4 && st == SV_OK; i++)
            if (dims[i].t->shape[dims[i].d] < 1 || dims[i].t->shape[dims[i].d] > 1000000) {
                char e[SV_ESC_CAP];
                st = SV_FAIL(SV_ERR_FORMAT, "%s: tensor %s dimension %d is %lld, outside [1, 1000000]", path,
                             sv_log_esc(dims[i].t->name, e, sizeof e), dims[i].d,
                             (long long)dims[i].t->shape[dims[i].d]);
            }
    }
    if (st == SV_OK) {
        c->dim = (int)pw->shape[0];
        c->in_chans = (int)pw->shape[1];
        c->patch = (int)pw->shape[2];
        c->num_classes = (int)hw->shape[0];
        /* timm's optional parts, read off the tensor names: no cls_token = class_token False,
         * fc_norm = global_pool avg, blocks.0.ls1.gamma = LayerScale (config.json's init_values
         * when given; any positive value marks it, the file holds the trained gammas), reg_token =
         * register tokens */
        c->no_class_token = !sv_safetensors_find(&f, "cls_token");
        c->global_pool = sv_safetensors_find(&f, "fc_norm.weight") ? SV_POOL_AVG : SV_POOL_TOKEN;
        if (!sv_safetensors_find(&f, "blocks.0.ls1.gamma"))
            c->layer_scale = 0;
        else if (!(c->layer_scale > 0))
            c->layer_scale = 1e-5;
        /* reg_token (1, R, D): timm's register tokens */
        const sv_st_tensor *reg = sv_safetensors_find(&f, "reg_token");
        c->reg_tokens = 0;
        if (reg &&
            (reg->ndim != 3 || reg->shape[0] != 1 || reg->shape[1] < 1 || reg->shape[1] > SV_VIT_MAX_REG_TOKENS ||
             reg->shape[2] != pw->shape[0]))
            st = SV_FAIL(SV_ERR_FORMAT, "%s: reg_token shape is not (1, R, %lld) with 1 <= R <= %d", path,
                         (long long)pw->shape[0], SV_VIT_MAX_REG_TOKENS);
        else if (reg)
            c->reg_tokens = (int)reg->shape[1];
    }
    if (st == SV_OK) {
        /* pos_embed covers the prefix tokens (timm's default) or, with no_embed_class, the patches
         * only; without config.json the shape decides: a square grid behind the prefix rows, else
         * a square grid alone */
        if (!nec_known) {
            int64_t n = pos->shape[1], q = n - sv_vit_prefix_tokens(c);
            uint64_t r;
            c->no_embed_class = sv_vit_prefix_tokens(c) > 0 && !exact_sqrt(q, &r) && exact_sqrt(n, &r);
        }
        int prefix = sv_vit_pos_prefix(c);
        int64_t P = pos->shape[1] - prefix;
        uint64_t g = 0, img = 0;
        if (!exact_sqrt(P, &g) || pos->shape[2] != pw->shape[0] || !sv_mul_u64(g, (uint64_t)c->patch, &img) ||
            img > 1000000)
            st = SV_FAIL(SV_ERR_FORMAT,
                         "%s: pos_embed shape (1, %lld, %lld) is not (1, %d + g*g, %d) for an image of at "
                         "most 1000000 pixels per side",
                         path, (long long)pos->shape[1], (long long)pos->shape[2], prefix, c->dim);
        else
            c->img = (int)img;
    }
    if (st == SV_OK) {
        /* depth: the blocks present, counted up to one past the largest depth a model may have */
        int depth = 0;
        char name[64];
        for (; depth <= SV_VIT_MAX_DEPTH; depth++) {
            snprintf(name, sizeof name, "blocks.%d.norm1.weight", depth);
            if (!sv_safetensors_find(&f, name)) break;
        }
        if (depth > SV_VIT_MAX_DEPTH)
            st = SV_FAIL(SV_ERR_FORMAT,
                         "%s: the file holds %s: more than %d blocks (the largest depth a model may have)", path, name,
                         SV_VIT_MAX_DEPTH);
        else if (depth > 0)
            c->depth = depth;
        fc1 = sv_safetensors_find(&f, "blocks.0.mlp.fc1.weight");
        if (st == SV_OK && fc1 && fc1->ndim == 2 && (fc1->shape[0] < 1 || fc1->shape[0] > 1000000))
            st = SV_FAIL(SV_ERR_FORMAT, "%s: tensor blocks.0.mlp.fc1.weight dimension 0 is %lld, outside [1, 1000000]",
                         path, (long long)fc1->shape[0]);
        if (st == SV_OK && fc1 && fc1->ndim == 2 && c->dim > 0) {
            double r = (double)fc1->shape[0] / c->dim;
            c->mlp_ratio = (int)(c->dim * r) == fc1->shape[0] ? r : (fc1->shape[0] + 0.25) / c->dim;
        }
        if (st == SV_OK && found)
            st = check_config_json(&doc.root, cj, &f, c, fc1 && fc1->ndim == 2 ? fc1->shape[0] : 0);
    }
    if (found) sv_json_doc_free(&doc);
    sv_safetensors_close(&f);
    if (st != SV_OK) sv_err_frame(__FILE__, __LINE__);
    return st;
}

/* Every model tensor present with the model's shape, or one ckpt/ckpt_adapt.h resamples to it
 * (kind[entry], in layout entry order); nothing else in the file. */
static sv_status check_tensors(const sv_st_file *sf, const sv_layout *L, sv_adapt_kind *kind) {
    for (int e = 0; e < L->n_params; e++) {
        const sv_param_info *p = &L->params[L->entries[e].param];
        const sv_st_tensor *t = sv_safetensors_find(sf, p->name);
        if (!t) return SV_FAIL(SV_ERR_FORMAT, "%s: tensor %s missing", sf->path, p->name);
        int same = t->ndim == p->ndim;
        for (int d = 0; same && d < p->ndim; d++) same = t->shape[d] == p->shape[d];
        kind[e] = SV_ADAPT_NONE;
        if (!same) SV_TRY(sv_ckpt_adapt_kind(sf, t, p, &L->cfg, &kind[e]));
        if (!same && kind[e] == SV_ADAPT_NONE) {
            char a[96] = "", b[96] = "";
            for (int d = 0; d < t->ndim; d++)
                snprintf(a + strlen(a), sizeof a - strlen(a), "%s%lld", d ? ", " : "", (long long)t->shape[d]);
            for (int d = 0; d < p->ndim; d++)
                snprintf(b + strlen(b), sizeof b - strlen(b), "%s%lld", d ? ", " : "", (long long)p->shape[d]);
            return SV_FAIL(SV_ERR_FORMAT,
                           "%s: tensor %s has shape (%s) but the model needs (%s) (check --dim/--depth/"
                           "--num-classes/--img/--patch)",
                           sf->path, p->name, a, b);
        }
    }
    if (sf->n_tensors == (size_t)L->n_params) return SV_OK; /* each parameter found once: nothing else */
    /* the first tensor in the header that no parameter found (linear however many there are) */
    unsigned char *used = calloc(sf->n_tensors, 1);
    if (!used) return SV_FAIL(SV_ERR_OOM, "weights tables");
    for (int e = 0; e < L->n_params; e++) used[sv_safetensors_find(sf, L->params[e].name) - sf->tensors] = 1;
    size_t k = 0;
    while (k < sf->n_tensors && used[k]) k++;
    free(used);
    if (k == sf->n_tensors) return SV_OK;
    char e[SV_ESC_CAP];
    return SV_FAIL(SV_ERR_FORMAT, "%s: tensor %s is not part of this model (%s, depth %d): a different architecture?",
                   sf->path, sv_log_esc(sf->tensors[k].name, e, sizeof e), L->cfg.name, L->cfg.depth);
}

/* File values for the master-shard loader: each piece read (converted to fp32) and checked
 * finite; a NaN/Inf is refused, naming the first non-finite element. Resampled tensors come
 * from adapted[entry]. */
typedef struct weights_source {
    const sv_st_file *sf;
    const sv_layout *L;
    float *const *adapted;
} weights_source;

static sv_status weights_piece(void *ctx, int u, int kind, int t, uint64_t tensor_begin, uint64_t shard_offset,
                               uint64_t count, float *dst) {
    const weights_source *c = ctx;
    (void)u, (void)kind, (void)shard_offset;
    if (c->adapted[t]) {
        memcpy(dst, c->adapted[t] + tensor_begin, count * sizeof *dst);
        return SV_OK;
    }
    const sv_st_tensor *tt = sv_safetensors_find(c->sf, c->L->params[c->L->entries[t].param].name);
    SV_TRY(sv_safetensors_read_f32(c->sf, tt, tensor_begin, count, dst));
    return sv_ckpt_values_finite(c->sf, tt, dst, count);
}

sv_status sv_weights_load(sv_fsdp *f, const char *path) {
    sv_st_file sf;
    sv_status os = sv_safetensors_open(&sf, path);
    sv_status as = sv_ckpt_agree_same_file(f, &sf, os, "--weights");
    if (as != SV_OK) {
        if (os == SV_OK) sv_safetensors_close(&sf);
        return as;
    }
    int n = f->L.n_params;
    sv_adapt_kind *kind = calloc((size_t)n, sizeof *kind);
    float **adapted = calloc((size_t)n, sizeof *adapted);
    sv_status st = kind && adapted ? check_tensors(&sf, &f->L, kind) : SV_FAIL(SV_ERR_OOM, "weights tables");
    for (int e = 0; e < n && st == SV_OK; e++)
        if (kind[e] != SV_ADAPT_NONE)
            st = sv_ckpt_adapt_read(&sf, sv_safetensors_find(&sf, f->L.params[f->L.entries[e].param].name),
                                    &f->L.params[f->L.entries[e].param], &f->L.cfg, kind[e], "weights", &adapted[e]);
    weights_source c = {.sf = &sf, .L = &f->L, .adapted = adapted};
    if (st == SV_OK) st = sv_fsdp_load_masters(f, weights_piece, &c, 0);
    for (int e = 0; adapted && e < n; e++) free(adapted[e]);
    free(adapted);
    free(kind);
    sv_safetensors_close(&sf);
    if (st != SV_OK) {
        sv_err_frame(__FILE__, __LINE__);
        return st;
    }
    SV_INFO("weights: loaded %d tensors from %s", f->L.n_params, path);
    return SV_OK;
}
