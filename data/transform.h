/* shardvit data: crop geometry, resampling + normalisation, mixup/cutmix.
 *
 * Geometry follows torchvision exactly: RandomResizedCrop.get_params (10 tries, then the
 * central-crop fallback) and Resize(shorter side = floor(img/crop_pct)) + CenterCrop(img).
 * Resampling is Pillow's antialiased bilinear or bicubic (data/resample.h) straight from the
 * crop box of the decoded region to an 8-bit img x img crop (flip folded into the tables), then
 * RandAugment on those bytes (train, optional), then normalisation to (C, img, img) floats. */
#ifndef SV_DATA_TRANSFORM_H
#define SV_DATA_TRANSFORM_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "data/jpeg.h"
#include "data/resample.h"

/* torchvision RandomResizedCrop.get_params on a W x H image with the random stream `key`
 * (counters 0..39 are used). Integer-valued box inside the image. */
void sv_rrc_box(uint64_t key, int W, int H, double scale_min, double scale_max, double ratio_min, double ratio_max,
                sv_box *b);

/* Eval: Resize(shorter side -> floor(img/crop_pct)) then CenterCrop(img), expressed as one box
 * in source pixels (sub-pixel exact). */
void sv_eval_box(int W, int H, int img, double crop_pct, sv_box *b);

/* What sv_load_image does to one encoded image. */
typedef struct sv_image_xform {
    int train;    /* 1: RandomResizedCrop + flip; 0: eval resize + center crop */
    uint64_t key; /* random stream of this sample (train) */
    int img, channels;
    double scale_min, scale_max, ratio_min, ratio_max, hflip, crop_pct;
    uint64_t max_pixels;
    const float *mean, *std;
    sv_interp interp; /* zero: bilinear */
    int randaug_n;    /* train: RandAugment ops per image, 0 = off (data/randaug.h) */
    float randaug_m;  /* RandAugment magnitude, timm scale 0..10 (<= 30) */
} sv_image_xform;

/* Header -> guard (width*height <= max_pixels) -> crop box on full-size coordinates -> pick a
 * DCT scale 1/2, 1/4 or 1/8 when the crop stays >= img at that scale -> resampling plan ->
 * decode only the source rectangle the plan reads -> resample to bytes -> RandAugment (train,
 * key hash(x->key, 0x7a4d)) -> normalise. dst: (channels, img, img). Errors name no file: the
 * caller adds it. Without DCT scaling the bytes before normalisation equal torchvision's
 * resized_crop / Resize+CenterCrop on PIL (docs/data.md). */
sv_status sv_load_image(sv_jpeg_ctx *jc, sv_resample_scratch *rs, const uint8_t *data, size_t len,
                        const sv_image_xform *x, float *dst);

/* Beta(alpha, alpha) sample from the random stream (key, counters >= base). */
double sv_rand_beta(uint64_t key, uint64_t base, double alpha);

/* Mix a pair of images (a, b: each n floats, shape (C, S, S) with S = side) in place.
 * cutmix = 0: a' = lam a + (1-lam) b, b' = lam b + (1-lam) a.
 * cutmix = 1: a box (timm rand_bbox from key) is swapped between a and b; *lam becomes the
 * area-corrected value. */
void sv_mix_pair(float *a, float *b, int C, int side, int cutmix, uint64_t key, double *lam);

#endif
