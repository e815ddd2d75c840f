/* shardvit data: crop geometry, resampling + normalisation (training and evaluation transforms).
 *
 * Geometry follows torchvision exactly: RandomResizedCrop.get_params (10 tries, then the
 * central-crop fallback) and Resize(shorter side = floor(img/crop_pct)) + CenterCrop(img).
 * Resampling is Pillow's antialiased bilinear or bicubic (data/resample.h) straight from the
 * crop box of the decoded region to an 8-bit img x img crop (flip folded into the tables), then
 * RandAugment on those bytes (train, optional), then normalisation to (C, img, img) floats.
 * Mixup/CutMix live in data/mixup.h. */
#ifndef SV_DATA_TRANSFORM_H
#define SV_DATA_TRANSFORM_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "data/erase.h"
#include "data/jpeg.h"
#include "data/randaug.h"
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
    /* Recipe options, all off when zero (train only; data/randaug.h, augment3.h, erase.h): */
    const sv_randaug_timm *aa; /* timm --aa RandAugment (NULL or n == 0: off), key hash(key, 0x7a4e) */
    int three_aug;             /* DeiT III 3-Augment, key hash(key, 0x3a6) */
    float color_jitter;        /* ColorJitter(b, b, b) when > 0, key hash(key, 0xc17) */
    int simple_crop;           /* DeiT III Resize + RandomCrop(padding 4, reflect) instead of RRC */
    sv_erase_opts erase;       /* RandomErasing after normalisation (prob 0: off), key hash(key, 0xe7a5) */
} sv_image_xform;

/* The byte-level training augmentations of x after the crop, in this order: RandAugment
 * (randaug_n), timm RandAugment (aa), three-augment, colour jitter. img: (side, side, c),
 * scratch of the same size, fill: c bytes for geometric ops. */
void sv_augment_u8(const sv_image_xform *x, uint64_t key, uint8_t *img, int side, int c, const uint8_t *fill,
                   uint8_t *scratch);

/* The float-level ones after normalisation: RandomErasing. img: (c, side, side). */
void sv_augment_f32(const sv_image_xform *x, uint64_t key, float *img, int side, int c);

/* Header -> guard (width*height <= max_pixels) -> crop box on full-size coordinates (train: RRC,
 * or with simple_crop the resized-image crop box of data/augment3.h, resampled like eval with
 * the reflected border filled afterwards and the flip applied after that) -> pick a
 * DCT scale 1/2, 1/4 or 1/8 when the crop stays >= img at that scale -> resampling plan ->
 * decode only the source rectangle the plan reads -> resample to bytes -> RandAugment (train,
 * key hash(x->key, 0x7a4d)) and the other byte augmentations (sv_augment_u8) -> normalise ->
 * RandomErasing (sv_augment_f32). dst: (channels, img, img). Errors name no file: the
 * caller adds it. Without DCT scaling the bytes before normalisation equal torchvision's
 * resized_crop / Resize+CenterCrop on PIL (docs/data.md). */
sv_status sv_load_image(sv_jpeg_ctx *jc, sv_resample_scratch *rs, const uint8_t *data, size_t len,
                        const sv_image_xform *x, float *dst);

#endif
