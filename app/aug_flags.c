#include "app/aug_flags.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/erase.h"
#include "data/mixup.h"
#include "data/randaug.h"

static sv_status parse_minmax(const char *s, float mm[2]) {
    char *e1, *e2;
    double a = strtod(s, &e1);
    if (e1 == s || *e1 != ',') goto bad;
    double b = strtod(e1 + 1, &e2);
    if (e2 == e1 + 1 || *e2) goto bad;
    if (!(a >= 0 && a < b && b <= 1)) goto bad;
    mm[0] = (float)a;
    mm[1] = (float)b;
    return SV_OK;
bad:
    return SV_FAIL(SV_ERR_INVALID, "--cutmix-minmax: invalid value '%s' (expected MIN,MAX with 0 <= MIN < MAX <= 1)",
                   s);
}

static int mix_mode(const char *s) {
    if (!s || !strcmp(s, "pair")) return SV_MIX_PAIR;
    if (!strcmp(s, "batch")) return SV_MIX_BATCH;
    if (!strcmp(s, "elem")) return SV_MIX_ELEM;
    return -1;
}

sv_status sv_aug_flags_check(const sv_aug_flags *f, int mixing, int randaug_n) {
    float mm[2];
    if (f->cutmix_minmax) SV_TRY(parse_minmax(f->cutmix_minmax, mm));
    if (mix_mode(f->mixup_mode) < 0)
        return SV_FAIL(SV_ERR_INVALID, "--mixup-mode: invalid value '%s' (expected batch, pair or elem)",
                       f->mixup_mode);
    int any_mix = mixing || f->cutmix_minmax;
    if (!any_mix && (f->mixup_mode || f->mixup_off_epoch > 0 || f->mixup_prob != 1 || f->mixup_switch_prob != 0.5))
        return SV_FAIL(SV_ERR_INVALID,
                       "--mixup-mode/--mixup-prob/--mixup-switch-prob/--mixup-off-epoch need --mixup, "
                       "--cutmix or --cutmix-minmax");
    if (f->remode && sv_erase_mode_parse(f->remode) < 0)
        return SV_FAIL(SV_ERR_INVALID, "--remode: invalid value '%s' (expected pixel, rand or const)", f->remode);
    if (f->reprob <= 0 && (f->remode || f->recount != 1))
        return SV_FAIL(SV_ERR_INVALID, "--remode/--recount need --reprob > 0");
    if (f->aa) {
        sv_randaug_timm t;
        SV_TRY(sv_randaug_timm_parse(f->aa, &t));
        if (randaug_n > 0)
            return SV_FAIL(SV_ERR_INVALID, "--aa and --randaug-n are two RandAugments: give one of them");
        /* timm's transform factory turns colour jitter off under an --aa policy (its train.py
         * default --color-jitter 0.4 then does nothing): a translated command must not add it */
        if (f->color_jitter > 0)
            return SV_FAIL(SV_ERR_INVALID,
                           "--color-jitter with --aa: timm applies no colour jitter with a RandAugment policy "
                           "(its transform factory disables it), so the translation of such a command leaves "
                           "--color-jitter out");
    }
    if (f->aa_interp) {
        sv_ra_interp ri;
        SV_TRY(sv_randaug_interp_parse(f->aa_interp, &ri));
        if (!f->aa) return SV_FAIL(SV_ERR_INVALID, "--aa-interp needs --aa (it resamples timm RandAugment's geometry)");
    }
    if (f->train_crop && strcmp(f->train_crop, "rrc") && strcmp(f->train_crop, "simple"))
        return SV_FAIL(SV_ERR_INVALID, "--train-crop: invalid value '%s' (expected rrc or simple)", f->train_crop);
    return SV_OK;
}

sv_status sv_aug_flags_apply(const sv_aug_flags *f, sv_loader_opts *lo) {
    if (f->reprob > 0) {
        lo->reprob = (float)f->reprob;
        lo->remode = f->remode ? sv_erase_mode_parse(f->remode) : SV_ERASE_PIXEL;
        lo->recount = f->recount;
    }
    lo->aug_repeats = f->aug_repeats;
    lo->mixup_prob = (float)f->mixup_prob;
    lo->mixup_switch_prob = (float)f->mixup_switch_prob;
    lo->mixup_mode = mix_mode(f->mixup_mode);
    lo->mixup_off_epoch = f->mixup_off_epoch;
    if (f->cutmix_minmax) SV_TRY(parse_minmax(f->cutmix_minmax, lo->cutmix_minmax));
    if (f->aa) SV_TRY(sv_randaug_timm_parse(f->aa, &lo->aa));
    if (f->aa && f->aa_interp) SV_TRY(sv_randaug_interp_parse(f->aa_interp, &lo->aa.interp));
    lo->three_augment = f->three_augment;
    lo->color_jitter = f->color_jitter >= 0 ? (float)f->color_jitter : f->three_augment ? 0.3f : 0.f;
    lo->simple_crop = f->train_crop && !strcmp(f->train_crop, "simple");
    return SV_OK;
}
