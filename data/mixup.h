/* shardvit data: Mixup / CutMix with timm's controls (timm.data.mixup.Mixup), world-size
 * independent.
 *
 * Mixing partners are neighbouring global epoch positions (2k, 2k+1) (the loader's pairs; the
 * epoch order is a random permutation, so this plays the role of timm's x.flip(0) partner). One
 * draw (sv_mix_draw) decides for a mixing unit: whether it mixes at all (probability prob),
 * CutMix or Mixup (CutMix with probability switch_prob when both alphas are > 0, else whichever
 * is enabled), and lambda ~ Beta(alpha, alpha) of the chosen one. The unit is
 *   pair  (SV_MIX_PAIR, the historic behaviour): each pair, key (seed, epoch, position 2k);
 *         both members get the same lambda and the same box (swapped) -- timm mode 'pair';
 *   batch (SV_MIX_BATCH): each optimizer step's global batch, key (seed, epoch, the cursor of the
 *         step's first micro-batch): one lambda and one box for every pair of the step on every
 *         rank, whatever the accumulation -- timm mode 'batch' on the bigger batch;
 *   elem  (SV_MIX_ELEM): each element, key (seed, epoch, position): element i is mixed with its
 *         partner's unmixed image using its own lambda/box -- timm mode 'elem'.
 * CutMix boxes: timm rand_bbox (square side int(S sqrt(1 - lam)), centre uniform, clipped; the
 * half-extents are cut/2 on both sides, as this project always did) or, with minmax, timm
 * rand_bbox_minmax (each side randint(int(S lo), int(S hi)), position uniform); lambda becomes
 * 1 - box area / S^2 (timm correct_lam). With minmax CutMix is on with alpha 1, as timm forces.
 * Targets: y = lam * smooth(y_self) + (1 - lam) * smooth(y_partner), smooth = timm one-hot
 * with off = smoothing / K, on = 1 - smoothing + off. */
#ifndef SV_DATA_MIXUP_H
#define SV_DATA_MIXUP_H

#include <stdint.h>

typedef enum { SV_MIX_PAIR = 0, SV_MIX_BATCH = 1, SV_MIX_ELEM = 2 } sv_mix_mode;

typedef struct sv_mix_cfg {
    float mixup_alpha, cutmix_alpha; /* > 0 enables */
    float prob;                      /* probability a unit mixes [1] */
    float switch_prob;               /* CutMix instead of Mixup when both enabled [0.5] */
    float minmax_lo, minmax_hi;      /* hi > 0: timm cutmix_minmax box */
    int mode;                        /* sv_mix_mode */
} sv_mix_cfg;

typedef struct sv_mix_box {
    int y0, y1, x0, x1; /* rows [y0, y1), columns [x0, x1) */
} sv_mix_box;

/* Beta(alpha, alpha) sample from the random stream (key, counters >= base). */
double sv_rand_beta(uint64_t key, uint64_t base, double alpha);

/* 1 when c mixes anything (an alpha > 0 or minmax). */
int sv_mix_enabled(const sv_mix_cfg *c);

/* The unit's decision from key: counter 0 CutMix vs Mixup, Beta on counters >= 16, counter 1
 * the prob test (lam = 1, no CutMix when it fails). */
void sv_mix_draw(const sv_mix_cfg *c, uint64_t key, int *cutmix, double *lam);

/* CutMix box on side x side for lam from key (counters 200, 201; minmax 202..205); returns
 * the area-corrected lambda. */
double sv_mix_box_draw(const sv_mix_cfg *c, uint64_t key, int side, double lam, sv_mix_box *b);

/* Symmetric: a' = lam a + (1-lam) b, b' = lam b + (1-lam) a, or swap box b between them.
 * a, b: (C, side, side). */
void sv_mix_pair(float *a, float *b, int C, int side, int cutmix, const sv_mix_box *box, double lam);

/* One direction: dst = lam dst + (1-lam) src, or src's box pasted into dst. */
void sv_mix_into(float *dst, const float *src, int C, int side, int cutmix, const sv_mix_box *box, double lam);

#endif
