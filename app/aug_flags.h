/* The data-augmentation recipe flags of `shardvit train` (timm / DeiT equivalents in
 * docs/training.md "Data augmentation"): RandomErasing, repeated augmentation, timm Mixup
 * controls, timm --aa RandAugment strings, DeiT III 3-Augment / colour jitter / simple random
 * crop. All off by default (a command line without them trains bitwise as before).
 * sv_aug_flags_check validates them after parsing (SV_ERR_INVALID, the message names the flag);
 * sv_aug_flags_apply writes them into the training loader's options (data/loader.h). */
#ifndef SV_APP_AUG_FLAGS_H
#define SV_APP_AUG_FLAGS_H

#include "core/status.h"
#include "data/loader.h"

typedef struct sv_aug_flags {
    double reprob;             /* --reprob */
    const char *remode;        /* --remode const | rand | pixel (NULL: pixel) */
    int recount;               /* --recount */
    int aug_repeats;           /* --aug-repeats */
    double mixup_prob;         /* --mixup-prob */
    double mixup_switch_prob;  /* --mixup-switch-prob */
    const char *mixup_mode;    /* --mixup-mode batch | pair | elem (NULL: pair, the historic behaviour) */
    int mixup_off_epoch;       /* --mixup-off-epoch */
    const char *cutmix_minmax; /* --cutmix-minmax MIN,MAX */
    const char *aa;            /* --aa rand-... */
    const char *aa_interp;     /* --aa-interp nearest | bilinear | bicubic | random (NULL: nearest) */
    int three_augment;         /* --three-augment */
    double color_jitter;       /* --color-jitter (< 0: unset, 0.3 with --three-augment, else off) */
    const char *train_crop;    /* --train-crop rrc | simple (NULL: rrc) */
} sv_aug_flags;

#define SV_AUG_FLAGS_DEFAULT \
    { .reprob = 0, .recount = 1, .mixup_prob = 1, .mixup_switch_prob = 0.5, .color_jitter = -1 }

/* one flag per line */
// clang-format off
#define SV_AUG_FLAGS(x) \
    {"reprob", SV_FLAG_DOUBLE, &(x).reprob, 0, 1, "RandomErasing probability per training image (0 = off; timm --reprob)", 0}, \
    {"remode", SV_FLAG_STR, &(x).remode, 0, 0, "RandomErasing fill: pixel | rand | const (unset: pixel)", 0}, \
    {"recount", SV_FLAG_INT, &(x).recount, 1, 64, "RandomErasing: up to N boxes, count = randint(1, N)", 0}, \
    {"aug-repeats", SV_FLAG_INT, &(x).aug_repeats, 0, 64, "repeated augmentation: each sample K times per epoch on different ranks (0/1 = off; DeiT --repeated-aug uses 3)", 0}, \
    {"mixup-prob", SV_FLAG_DOUBLE, &(x).mixup_prob, 0, 1, "probability a mixing unit (batch/pair/element) is mixed", 0}, \
    {"mixup-switch-prob", SV_FLAG_DOUBLE, &(x).mixup_switch_prob, 0, 1, "probability of CutMix instead of Mixup when both are on", 0}, \
    {"mixup-mode", SV_FLAG_STR, &(x).mixup_mode, 0, 0, "mixup/cutmix parameters per batch | pair | elem (unset: pair)", 0}, \
    {"mixup-off-epoch", SV_FLAG_INT, &(x).mixup_off_epoch, 0, 1 << 30, "stop mixing from this epoch on (0 = never)", 0}, \
    {"cutmix-minmax", SV_FLAG_STR, &(x).cutmix_minmax, 0, 0, "MIN,MAX: CutMix box sides uniform in [MIN, MAX) of the image (turns CutMix on)", 0}, \
    {"aa", SV_FLAG_STR, &(x).aa, 0, 0, "timm RandAugment string, e.g. rand-m9-mstd0.5-inc1 (sections m n mstd mmax inc p)", 0}, \
    {"aa-interp", SV_FLAG_STR, &(x).aa_interp, 0, 0, "--aa geometry resampling: nearest | bilinear | bicubic | random (timm's default, per op; unset: nearest)", 0}, \
    {"three-augment", SV_FLAG_BOOL, &(x).three_augment, 0, 1, "DeiT III 3-Augment: grayscale | solarize | blur per image, then colour jitter", 0}, \
    {"color-jitter", SV_FLAG_DOUBLE, &(x).color_jitter, -1, 1, "ColorJitter(b, b, b) strength (-1: 0.3 with --three-augment, else off)", 0}, \
    {"train-crop", SV_FLAG_STR, &(x).train_crop, 0, 0, "training crop: rrc (RandomResizedCrop) | simple (DeiT III resize + random crop, reflect pad 4)", 0}
// clang-format on

/* Check strings and combinations (mixing controls need --mixup/--cutmix/--cutmix-minmax;
 * --remode/--recount need --reprob; --aa excludes --randaug-n; --aa-interp needs --aa). mixing: --mixup or --cutmix > 0;
 * randaug_n: --randaug-n. */
sv_status sv_aug_flags_check(const sv_aug_flags *f, int mixing, int randaug_n);

/* Fill the recipe fields of a training loader's options (after sv_aug_flags_check). */
sv_status sv_aug_flags_apply(const sv_aug_flags *f, sv_loader_opts *lo);

#endif
