/* shardvit predict: top-k classes with softmax probabilities for JPEG files, using the eval
 * transform the model recorded (resize shorter side to img/crop_pct, center crop, normalise;
 * app/xform.h), flags overriding it. Every rank runs the same
 * images (so it works under mpiexec too); rank 0 prints. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/backend_env.h"
#include "app/commands.h"
#include "app/model_load.h"
#include "app/run.h"
#include "app/xform.h"
#include "core/fileio.h"
#include "core/json.h"
#include "core/log.h"
#include "data/transform.h"

typedef struct predict_opts {
    sv_run_opts run;
    const char *classes;
    sv_model_source src; /* --weights | --ckpt [--ema] */
    int topk, json;
    sv_xform_flags xf; /* unset unless given: the model's transform applies */
} predict_opts;

typedef struct scored {
    double p;
    int k;
} scored;

static int by_prob_desc(const void *a, const void *b) {
    const scored *x = a, *y = b;
    if (x->p != y->p) return x->p < y->p ? 1 : -1;
    return x->k - y->k;
}

static void print_one(const predict_opts *o, const char *img, const float *z, int K, char **names, int n_names,
                      scored *tmp) {
    double mx = -INFINITY, se = 0;
    for (int k = 0; k < K; k++) mx = z[k] > mx ? z[k] : mx;
    for (int k = 0; k < K; k++) se += exp((double)z[k] - mx);
    for (int k = 0; k < K; k++) tmp[k] = (scored){exp((double)z[k] - mx) / se, k};
    qsort(tmp, (size_t)K, sizeof *tmp, by_prob_desc);
    int n = o->topk > 0 && o->topk < K ? o->topk : K;
    char num[16];
    if (o->json) {
        sv_json_writer w;
        sv_json_writer_init(&w, 0);
        sv_json_obj_begin(&w);
        sv_json_key(&w, "image");
        sv_json_str(&w, img);
        sv_json_key(&w, "top");
        sv_json_arr_begin(&w);
        for (int i = 0; i < n; i++) {
            snprintf(num, sizeof num, "%d", tmp[i].k);
            sv_json_obj_begin(&w);
            sv_json_key(&w, "class");
            sv_json_str(&w, tmp[i].k < n_names ? names[tmp[i].k] : num);
            sv_json_key(&w, "index");
            sv_json_i64(&w, tmp[i].k);
            sv_json_key(&w, "prob");
            sv_json_f64(&w, tmp[i].p);
            sv_json_obj_end(&w);
        }
        sv_json_arr_end(&w);
        sv_json_obj_end(&w);
        const char *text;
        if (sv_json_writer_finish(&w, &text, NULL) == SV_OK) printf("%s\n", text);
        sv_json_writer_free(&w);
        return;
    }
    char esc[SV_ESC_CAP]; /* class names come from files: never raw control characters */
    printf("%s\n", sv_log_esc(img, esc, sizeof esc));
    for (int i = 0; i < n; i++) {
        snprintf(num, sizeof num, "%d", tmp[i].k);
        printf("  %2d. %6.2f%%  %s", i + 1, 100.0 * tmp[i].p,
               tmp[i].k < n_names ? sv_log_esc(names[tmp[i].k], esc, sizeof esc) : num);
        if (tmp[i].k < n_names) printf(" (%d)", tmp[i].k);
        printf("\n");
    }
}

static sv_status run_predict(predict_opts *o, char **imgs, int n_imgs, const sv_proc *proc, int *usage) {
    sv_model_opts mo;
    *usage = 1;
    char pinned[SV_CKPT_PATH_MAX]; /* --ckpt's step directory, read once (its `latest` may move) */
    SV_TRY(sv_model_source_pin(&o->src, pinned, sizeof pinned));
    SV_TRY(sv_app_model_config(&o->run.model, o->src.weights, o->src.ckpt, &mo));
    o->run.model = mo;
    int W = proc->world;
    int micro = n_imgs < o->run.batch_size ? n_imgs : o->run.batch_size;
    o->run.batch_size = micro * W; /* every rank runs the same `micro` images */
    SV_TRY(sv_xform_flags_check(&o->xf, mo.in_chans));
    char **names = NULL;
    int n_names = 0;
    sv_ckpt_meta meta;
    sv_ckpt_xform xf;
    char msrc[4200], lsrc[4200];
    *usage = 0;
    SV_TRY(sv_app_model_meta(o->src.weights, o->src.ckpt, &meta, msrc, lsrc, sizeof msrc));
    sv_status mst = sv_xform_resolve(&o->xf, &meta.xform, msrc, mo.img, mo.in_chans, &xf);
    if (mst == SV_OK)
        mst =
            sv_app_class_names(o->classes, o->src.weights, o->src.ckpt, &meta, lsrc, mo.num_classes, &names, &n_names);
    free(meta.labels);
    SV_TRY(mst);
    *usage = 1;
    sv_run r;
    sv_status st = sv_run_setup(&r, &o->run, proc->rank, proc->world, proc->local_rank, proc->local_size);
    if (st != SV_OK) {
        free(names);
        return st;
    }
    *usage = 0;
    st = sv_app_load_model(&r, o->src.weights, o->src.ckpt, o->src.ema);
    const sv_vit_config *c = &r.vcfg;
    int K = c->num_classes;
    size_t per = (size_t)c->in_chans * c->img * c->img;
    float *h_img = calloc((size_t)micro * per, 4), *h_logits = malloc((size_t)micro * K * 4);
    /* the run's micro-batch buffers (r.micro_batch == micro): images, and the soft targets as
     * the fp32 logits, as the evaluator uses them (sv_run_eval_bufs) */
    sv_eval_bufs eb = sv_run_eval_bufs(&r);
    float *d_img = eb.images, *d_l32 = eb.logits32;
    scored *tmp = malloc((size_t)K * sizeof *tmp);
    if (st == SV_OK && (!h_img || !h_logits || !tmp)) st = SV_FAIL(SV_ERR_OOM, "predict buffers");
    if (st == SV_OK && r.micro_batch != micro)
        st = SV_FAIL(SV_ERR_INVALID, "predict: micro-batch %d != the run's %d", micro, r.micro_batch);
    float mean[3], stdv[3];
    for (int ch = 0; ch < 3; ch++) mean[ch] = (float)xf.mean[ch], stdv[ch] = (float)xf.std[ch];
    sv_image_xform x = {.train = 0,
                        .img = c->img,
                        .channels = c->in_chans,
                        .crop_pct = xf.crop_pct,
                        .max_pixels = 89478485ull,
                        .mean = mean,
                        .std = stdv,
                        .interp = (sv_interp)sv_xform_interp_id(&xf)};
    sv_jpeg_ctx jc;
    sv_jpeg_ctx_init(&jc);
    sv_resample_scratch rs = {0};
    for (int i0 = 0; i0 < n_imgs && st == SV_OK; i0 += micro) {
        int n = n_imgs - i0 < micro ? n_imgs - i0 : micro;
        memset(h_img, 0, (size_t)micro * per * 4);
        for (int i = 0; i < n && st == SV_OK; i++) {
            char *bytes = NULL;
            size_t len = 0;
            st = sv_fileio_read_small(imgs[i0 + i], (size_t)1 << 28, &bytes, &len);
            if (st == SV_OK &&
                (st = sv_load_image(&jc, &rs, (const uint8_t *)bytes, len, &x, h_img + i * per)) != SV_OK) {
                char why[1024]; /* sv_err_msg() is the buffer SV_FAIL writes: copy it first */
                snprintf(why, sizeof why, "%s", sv_err_msg());
                st = SV_FAIL(st, "%s: %s", imgs[i0 + i], why);
            }
            free(bytes);
        }
        if (st == SV_OK) st = sv_be_upload(r.be, d_img, h_img, (size_t)micro * per * 4);
        if (st == SV_OK) st = sv_fsdp_forward(&r.fsdp, d_img);
        if (st == SV_OK) st = sv_be_compute_to_f32(r.be, d_l32, r.model.logits, (size_t)micro * K);
        if (st == SV_OK) st = sv_be_download(r.be, h_logits, d_l32, (size_t)micro * K * 4);
        if (st == SV_OK) st = sv_be_sync(r.be);
        for (int i = 0; i < n && st == SV_OK; i++) /* every rank computed the same logits */
            for (int k = 0; k < K && st == SV_OK; k++)
                if (!isfinite(h_logits[(size_t)i * K + k]))
                    st = SV_FAIL(SV_ERR_NONFINITE,
                                 "%s: the model gave a non-finite logit (%s for class %d): the weights (or the input) "
                                 "produce it, so no probabilities are reported",
                                 imgs[i0 + i], isnan(h_logits[(size_t)i * K + k]) ? "NaN" : "Inf", k);
        for (int i = 0; i < n && st == SV_OK && r.rank == 0; i++)
            print_one(o, imgs[i0 + i], h_logits + (size_t)i * K, K, names, n_names, tmp);
    }
    fflush(stdout);
    sv_jpeg_ctx_free(&jc);
    sv_resample_scratch_free(&rs);
    free(h_img);
    free(h_logits);
    free(tmp);
    free(names);
    return sv_run_end(&r, st);
}

int sv_cmd_predict(int argc, char **argv, const sv_proc *proc) {
    predict_opts o = {.run = SV_RUN_OPTS_DEFAULT, .topk = 5, .xf = SV_XFORM_FLAGS_UNSET};
    o.run.model.model = NULL;
    o.run.batch_size = 16;
    /* clang-format off: one flag per line */
    sv_flag flags[] = {
        SV_MODEL_FLAGS(o.run.model),
        SV_MODEL_SOURCE_FLAGS(o.src),
        {"classes", SV_FLAG_STR, &o.classes, 0, 0,
         "class names, one per line (default: classes.txt beside the weights); must agree with the model's "
         "recorded label names",
         0},
        {"topk", SV_FLAG_INT, &o.topk, 0, 1000000, "classes shown per image (0 = all)", 0},
        {"json", SV_FLAG_BOOL, &o.json, 0, 0, "one JSON object per image instead of text", 0},
        {"batch-size", SV_FLAG_INT, &o.run.batch_size, 1, 4096, "images per forward pass", 0},
        SV_XFORM_FLAGS(o.xf),
        {"param-dtype", SV_FLAG_STR, &o.run.param_dtype, 0, 0, "compute dtype fp32 | bf16", 0},
        {"device", SV_FLAG_STR, &o.run.device, 0, 0, "auto | cpu | cuda", 0},
        {"threads", SV_FLAG_INT, &o.run.threads, 0, 1024, "CPU threads (0 = the CPUs it may use)", 0},
        SV_FLAG_END};
    /* clang-format on */
    sv_cmd_spec spec = {"predict", "shardvit predict --weights FILE.safetensors | --ckpt PATH [flags] IMG.jpg...",
                        "Print the top-k classes with probabilities for each image. Class names come from --classes, "
                        "or classes.txt beside the weights / in the run directory, or the label names the model "
                        "recorded (config.json / index.json), else class indices are shown. A list must hold exactly "
                        "the recorded label names in their order (else an error names both files), or without them "
                        "one name per class. The transform is the "
                        "model's recorded one unless --crop-pct/--interp/--mean/--std override it (see eval --help). "
                        "--img / --patch other than the weights' run them at that size (pos_embed / patch_embed "
                        "resampled as timm does; --weights only).",
                        1 << 16};
    char **pos = malloc((size_t)(argc + 1) * sizeof *pos);
    if (!pos) return 1;
    int npos = 0, rc = sv_cmd_parse(&spec, flags, argc, argv, pos, &npos, -1, NULL);
    if (rc < 0 && npos == 0) rc = sv_cmd_usage_error("predict", "no image files given");
    if (rc < 0 && sv_model_source_check("predict", &o.src) != 0) rc = 2;
    if (rc < 0) rc = sv_backend_env_check("predict", NULL);
    if (rc >= 0) {
        free(pos);
        return rc;
    }
    int usage;
    sv_status st = run_predict(&o, pos, npos, proc, &usage);
    free(pos);
    return sv_cmd_exit("predict", st, usage);
}
