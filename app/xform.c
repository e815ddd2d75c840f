#include "app/xform.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "data/resample.h"
#include "model/config.h"

sv_status sv_xform_parse_norm(const char *spec, int is_std, int channels, double out[3]) {
    static const double im[3] = {0.485, 0.456, 0.406}, is[3] = {0.229, 0.224, 0.225};
    const char *flag = is_std ? "--std" : "--mean";
    if (!strcmp(spec, "imagenet")) {
        for (int c = 0; c < 3; c++) out[c] = channels == 1 ? (is_std ? 0.226 : 0.449) : is_std ? is[c] : im[c];
        return SV_OK;
    }
    if (!strcmp(spec, "half")) {
        for (int c = 0; c < 3; c++) out[c] = 0.5;
        return SV_OK;
    }
    int n = 0;
    const char *p = spec;
    while (*p) {
        char *end;
        double v = strtod(p, &end);
        if (end == p || n == 3 || (*end && *end != ',') || !(v > -1e6 && v < 1e6) || (is_std && !(v > 0)))
            return SV_FAIL(SV_ERR_INVALID,
                           "%s: invalid value '%s' (expected imagenet, half or a comma list of %d "
                           "number%s%s)",
                           flag, spec, channels, channels > 1 ? "s" : "", is_std ? " > 0" : "");
        out[n++] = v;
        p = *end ? end + 1 : end;
    }
    if (n != 1 && n != channels)
        return SV_FAIL(SV_ERR_INVALID, "%s: '%s' has %d values for a %d-channel model (give 1 or %d)", flag, spec, n,
                       channels, channels);
    for (int c = n; c < 3; c++) out[c] = out[0];
    return SV_OK;
}

sv_status sv_xform_flags_check(const sv_xform_flags *fl, int channels) {
    double tmp[3];
    if (fl->crop_pct != -1 && !(fl->crop_pct >= SV_CKPT_CROP_PCT_MIN && fl->crop_pct <= SV_CKPT_CROP_PCT_MAX))
        return SV_FAIL(SV_ERR_INVALID, "--crop-pct: invalid value '%g' (expected a number in [%g, %g], or -1: unset)",
                       fl->crop_pct, SV_CKPT_CROP_PCT_MIN, SV_CKPT_CROP_PCT_MAX);
    if (fl->interp && strcmp(fl->interp, "bilinear") && strcmp(fl->interp, "bicubic"))
        return SV_FAIL(SV_ERR_INVALID, "--interp: invalid value '%s' (expected bilinear or bicubic)", fl->interp);
    if (fl->mean) SV_TRY(sv_xform_parse_norm(fl->mean, 0, channels, tmp));
    if (fl->std) SV_TRY(sv_xform_parse_norm(fl->std, 1, channels, tmp));
    return SV_OK;
}

static void vec_text(char *o, size_t cap, const double *v, int n) {
    size_t k = 0;
    for (int c = 0; c < n && k < cap; c++) k += (size_t)snprintf(o + k, cap - k, c ? ",%g" : "%g", v[c]);
}

/* Apply the flags that are set to *x; src[i] = "flag" for each one applied. */
static sv_status apply_flags(const sv_xform_flags *fl, sv_ckpt_xform *x, const char *src[4]) {
    if (fl->crop_pct > 0) x->crop_pct = fl->crop_pct, src[0] = "flag";
    if (fl->interp) snprintf(x->interp, sizeof x->interp, "%s", fl->interp), src[1] = "flag";
    if (fl->mean) {
        SV_TRY(sv_xform_parse_norm(fl->mean, 0, x->channels, x->mean));
        src[2] = "flag";
    }
    if (fl->std) {
        SV_TRY(sv_xform_parse_norm(fl->std, 1, x->channels, x->std));
        src[3] = "flag";
    }
    return SV_OK;
}

sv_status sv_xform_resolve(const sv_xform_flags *fl, const sv_ckpt_xform *model, const char *model_src, int img,
                           int channels, sv_ckpt_xform *out) {
    const char *src[4] = {"default", "default", "default", "default"};
    int use_model = model && model->present;
    if (use_model && model->channels != channels) {
        SV_WARN("the recorded eval transform of %s is for input (%d, %d, %d) but the model runs (%d, %d, %d): using "
                "its crop_pct/interpolation, default mean/std",
                model_src, model->channels, model->img, model->img, channels, img, img);
    } else if (use_model && model->img != img) { /* eval --img at another resolution, as timm's img_size */
        SV_INFO("the recorded eval transform of %s is for %dx%d input; the model runs at %dx%d: its crop_pct, "
                "interpolation, mean and std apply at that size",
                model_src, model->img, model->img, img, img);
    }
    sv_ckpt_xform_default(out, img, channels);
    if (use_model) {
        out->crop_pct = model->crop_pct;
        snprintf(out->interp, sizeof out->interp, "%s", model->interp);
        src[0] = src[1] = "model";
        if (model->channels == channels) {
            memcpy(out->mean, model->mean, sizeof out->mean);
            memcpy(out->std, model->std, sizeof out->std);
            src[2] = src[3] = "model";
        }
    } else {
        SV_INFO("eval transform: %s records none (no pretrained_cfg, or an export made before shardvit recorded the "
                "transform): defaults apply unless flags say otherwise",
                model_src);
    }
    SV_TRY(apply_flags(fl, out, src));
    out->present = 1;
    SV_TRY(sv_ckpt_xform_check(out, "eval transform"));
    char m[96], s[96];
    vec_text(m, sizeof m, out->mean, channels);
    vec_text(s, sizeof s, out->std, channels);
    SV_INFO("eval transform: crop_pct %g (%s), interpolation %s (%s), mean %s (%s), std %s (%s), input (%d, %d, %d); "
            "model = %s",
            out->crop_pct, src[0], out->interp, src[1], m, src[2], s, src[3], channels, img, img, model_src);
    return SV_OK;
}

sv_status sv_xform_for_training(const sv_xform_flags *fl, const sv_ckpt_xform *init, const char *init_src,
                                const char *timm_name, int img, int channels, sv_ckpt_xform *out) {
    const char *src[4] = {"default", "default", "default", "default"};
    sv_ckpt_xform_default(out, img, channels);
    sv_vit_timm_data_cfg tc;
    char named[160] = "";
    if (channels == 3 && sv_vit_timm_data(timm_name, &tc)) { /* timm's train.py: resolve_data_config */
        snprintf(named, sizeof named, "timm's data config of %s", timm_name);
        memcpy(out->mean, tc.mean, sizeof out->mean);
        memcpy(out->std, tc.std, sizeof out->std);
        snprintf(out->interp, sizeof out->interp, "%s", tc.interp);
        out->crop_pct = tc.crop_pct;
        src[0] = src[1] = src[2] = src[3] = named;
    }
    int from_init = init && init->present && init->channels == channels && !(fl->mean && fl->std);
    if (from_init) {
        memcpy(out->mean, init->mean, sizeof out->mean);
        memcpy(out->std, init->std, sizeof out->std);
        src[2] = src[3] = init_src;
    }
    SV_TRY(apply_flags(fl, out, src));
    if (named[0] && fl->crop_pct == tc.crop_pct) src[0] = named; /* train sets its crop_pct from the name */
    out->present = 1;
    SV_TRY(sv_ckpt_xform_check(out, "training transform"));
    if (from_init || named[0]) {
        char m[96], s[96];
        vec_text(m, sizeof m, out->mean, channels);
        vec_text(s, sizeof s, out->std, channels);
        SV_INFO("normalisation: mean %s (%s), std %s (%s)", m, src[2], s, src[3]);
        if (named[0])
            SV_INFO("evaluation transform: crop_pct %g (%s), interpolation %s (%s)", out->crop_pct, src[0], out->interp,
                    src[1]);
    } else if (init && init->present && init->channels != channels) {
        SV_WARN("%s records a %d-channel normalisation; this model has %d channels: defaults apply", init_src,
                init->channels, channels);
    }
    return SV_OK;
}

int sv_xform_interp_id(const sv_ckpt_xform *x) {
    return strcmp(x->interp, "bicubic") ? SV_INTERP_BILINEAR : SV_INTERP_BICUBIC;
}
