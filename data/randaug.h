/* shardvit data: RandAugment on 8-bit crops (Cubuk et al. 2019; torchvision/timm semantics).
 *
 * N ops per image, each drawn uniformly (with replacement) from the 16 below and always applied
 * (torchvision's RandAugment; Identity in the list plays the role of timm's p = 0.5 per op).
 * Magnitude M is on timm's 0..10 scale with the "increasing" mappings (timm rand-inc), so M = 0
 * leaves every op but AutoContrast/Equalize/Invert as the identity and larger is stronger;
 * values up to 30 extrapolate linearly, as timm allows. Signed ops are negated with p = 0.5.
 *
 *   op            parameter at magnitude m (f = m / 10)
 *   Identity      -
 *   AutoContrast  per channel: stretch [min, max] to [0, 255] (PIL ImageOps.autocontrast)
 *   Equalize      per channel histogram equalisation (PIL ImageOps.equalize)
 *   Invert        255 - v
 *   Rotate        +-30 f degrees about the centre (PIL Image.rotate)
 *   Posterize     keep 8 - round(4 f) bits (torchvision's bins), at least 1
 *   Solarize      invert v >= 256 - 256 f (timm solarize_increasing)
 *   SolarizeAdd   v < 128: v + floor(110 f), clipped (timm)
 *   Color         saturation blend factor 1 +- 0.9 f (PIL ImageEnhance.Color)
 *   Contrast      blend with the mean grey, factor 1 +- 0.9 f (PIL ImageEnhance.Contrast)
 *   Brightness    blend with black, factor 1 +- 0.9 f (PIL ImageEnhance.Brightness)
 *   Sharpness     blend with PIL's SMOOTH filter, factor 1 +- 0.9 f (PIL ImageEnhance.Sharpness)
 *   ShearX/Y      shear +-0.3 f (PIL affine (1, s, 0, 0, 1, 0) / (1, 0, 0, s, 1, 0))
 *   TranslateX/Y  +-0.45 f * side pixels (timm translate_rel; torchvision 150/331 = 0.453)
 *
 * Geometric ops map output pixel centres through PIL's affine convention and sample the nearest
 * pixel (torchvision's default interpolation) with Pillow's own coordinate stepping; uncovered
 * pixels take `fill` (the loader passes the normalisation mean, i.e. 0 after normalisation, as
 * timm's fill colour does). Every op gives the same bytes as the Pillow 9.4 call named above
 * (checked; docs/data.md). Images are (side, side, c) HWC bytes, c = 1 or 3; Color is the
 * identity on 1 channel. */
#ifndef SV_DATA_RANDAUG_H
#define SV_DATA_RANDAUG_H

#include <stdint.h>

typedef enum {
    SV_RA_IDENTITY,
    SV_RA_AUTOCONTRAST,
    SV_RA_EQUALIZE,
    SV_RA_INVERT,
    SV_RA_ROTATE,
    SV_RA_POSTERIZE,
    SV_RA_SOLARIZE,
    SV_RA_SOLARIZE_ADD,
    SV_RA_COLOR,
    SV_RA_CONTRAST,
    SV_RA_BRIGHTNESS,
    SV_RA_SHARPNESS,
    SV_RA_SHEAR_X,
    SV_RA_SHEAR_Y,
    SV_RA_TRANSLATE_X,
    SV_RA_TRANSLATE_Y,
    SV_RA_NUM_OPS
} sv_ra_op;

/* Name of an op ("Rotate", ...), or "?" */
const char *sv_randaug_op_name(sv_ra_op op);

/* Apply one op in place at magnitude m (0..30), negated when `negate` (signed ops only).
 * img: (side, side, c); scratch: side*side*c bytes; fill: c bytes. */
void sv_randaug_apply(sv_ra_op op, double m, int negate, uint8_t *img, int side, int c, const uint8_t *fill,
                      uint8_t *scratch);

/* Apply n ops drawn from the random stream `key` (counters 0..2n-1): op i is
 * sv_rand_u64(key, 2i) % SV_RA_NUM_OPS, negated when sv_rand_unit(key, 2i+1) < 0.5. */
void sv_randaug(uint64_t key, int n, double m, uint8_t *img, int side, int c, const uint8_t *fill, uint8_t *scratch);

#endif
