/* shardvit data: DeiT III's "3-Augment" and simple random crop, and torchvision ColorJitter,
 * on 8-bit (side, side, c) HWC crops (data/randaug.h building blocks).
 *
 * Three-augment (DeiT III, augment.py new_data_aug_generator): one of
 *   Grayscale(3)          PIL convert("L") replicated on the three channels,
 *   Solarization          ImageOps.solarize(threshold 128),
 *   GaussianBlur          radius ~ U(0.1, 2.0): separable Gaussian, sigma = radius (PIL's
 *                         GaussianBlur radius is the standard deviation), taps to ceil(3 sigma),
 *                         edge pixels repeated, each pass rounded to bytes
 * chosen uniformly per image (torchvision RandomChoice; each with p = 1 inside it).
 * ColorJitter(b, b, b) (torchvision, hue 0): brightness, contrast and saturation factors each
 * ~ U(max(0, 1 - b), 1 + b), applied in a random order (torchvision's randperm of its four
 * slots, hue skipped) with PIL ImageEnhance Brightness / Contrast / Color.
 * Randomness: key counters 0 (choice), 1 (blur radius), 8..10 (jitter factors), 11.. (order). */
#ifndef SV_DATA_AUGMENT3_H
#define SV_DATA_AUGMENT3_H

#include <stdint.h>

typedef enum { SV_AUG3_GRAY = 0, SV_AUG3_SOLARIZE = 1, SV_AUG3_BLUR = 2 } sv_aug3_op;

/* The op three-augment picks for key, and the blur radius it would use. */
sv_aug3_op sv_three_augment_choice(uint64_t key, double *radius);

/* Apply three-augment. scratch: side * side * c bytes. */
void sv_three_augment(uint64_t key, uint8_t *img, int side, int c, uint8_t *scratch);

/* Gaussian blur with standard deviation sigma (as above). */
void sv_gaussian_blur(uint8_t *img, int side, int c, double sigma, uint8_t *scratch);

/* ColorJitter(b, b, b, 0) from key; factors[3] (may be NULL): brightness, contrast,
 * saturation drawn; order[3] (may be NULL): the order applied (0 b, 1 c, 2 s). */
void sv_color_jitter(uint64_t key, double b, uint8_t *img, int side, int c, uint8_t *scratch, double *factors,
                     int *order);

/* DeiT III simple random crop: Resize(shorter side -> img) then RandomCrop(img, padding 4,
 * reflect). For a W x H source: the resized size (*nw, *nh) as torchvision Resize computes it,
 * the crop offset in the padded image (*top, *left: uniform in [0, nh + 8 - img] and
 * [0, nw + 8 - img], key counters 40, 41) and the crop box in source pixels of the resized
 * region [left - 4, left - 4 + img) x [top - 4, top - 4 + img) (which may stick out of the
 * image by up to 4 resized pixels: those rows/columns are then filled by sv_reflect_fix). */
void sv_simple_crop_box(uint64_t key, int W, int H, int img, long *nw, long *nh, long *top, long *left, double box[4]);

/* Replace the output rows/columns that map outside the resized nw x nh image by their
 * reflection ("reflect" padding: resized index -k -> k, nw - 1 + k -> nw - 1 - k).
 * img: (side, side, c), its pixel (x, y) = resized pixel (left - 4 + x, top - 4 + y). */
void sv_reflect_fix(uint8_t *img, int side, int c, long nw, long nh, long top, long left);

#endif
