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

#include "core/status.h"

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

/* ---- timm's RandAugment (rand_augment_transform), --aa rand-m9-mstd0.5-inc1 ----
 *
 * n ops drawn uniformly with replacement from timm's 15 (_RAND_TRANSFORMS, or
 * _RAND_INCREASING_TRANSFORMS with inc1; no Identity), each applied with probability p; the
 * magnitude of each applied op is m + mstd * N(0, 1) (uniform in [0, m] when mstd > 100),
 * clipped to [0, mmax] (mmax 0 = timm's default 10). Arguments at magnitude v (f = v / 10):
 *   Rotate +-30 f deg; ShearX/Y +-0.3 f; TranslateX/YRel +-0.45 f * side (signs p = 0.5);
 *   Posterize int(4 f) bits kept (inc1: 4 - int(4 f)); Solarize threshold min(256, int(256 f))
 *   (inc1: 256 minus that); SolarizeAdd min(128, int(110 f)) below 128;
 *   Color/Contrast/Brightness/Sharpness factor 1.8 f + 0.1 (inc1: max(0.1, 1 +- 0.9 f));
 *   AutoContrast, Equalize, Invert take none.
 * Pixel work is the same code as the ops above (fill = the mean). The geometric ops (Rotate,
 * ShearX/Y, TranslateX/Y) resample with `interp`: nearest (shardvit's original, the default),
 * bilinear or bicubic as Pillow's Image.transform / rotate with BILINEAR / BICUBIC (its
 * ImagingGenericTransform filters: bilinear truncated to a byte, the a = -1 cubic clipped to
 * [0, 255]; a source point outside the image keeps the fill), or random: per applied geometric
 * op one of bilinear / bicubic with probability 1/2 each, timm's _RANDOM_INTERPOLATION (what its
 * RandAugment does when the training interpolation is 'random', timm's train.py default). */
enum { SV_RA_TIMM_NUM_OPS = 15 };

typedef enum { SV_RA_NEAREST = 0, SV_RA_BILINEAR, SV_RA_BICUBIC, SV_RA_RANDOM } sv_ra_interp;

/* "nearest" | "bilinear" | "bicubic" | "random" (SV_ERR_INVALID naming --aa-interp otherwise). */
sv_status sv_randaug_interp_parse(const char *s, sv_ra_interp *out);
const char *sv_randaug_interp_name(sv_ra_interp i);

typedef struct sv_randaug_timm {
    int n;               /* ops per image [2]; 0 = off */
    double m;            /* magnitude [10] */
    double mstd;         /* magnitude noise std [0]; INFINITY = uniform */
    double p;            /* per-op probability [0.5] */
    double mmax;         /* magnitude upper bound, 0 = 10 */
    int inc;             /* 1: increasing-severity op set */
    sv_ra_interp interp; /* geometric ops' resampling [SV_RA_NEAREST] (not part of the string) */
} sv_randaug_timm;

/* One applied layer: the op, its final argument and (geometric ops) its resampling. */
typedef struct sv_ra_layer {
    sv_ra_op op;
    double arg;
    sv_ra_interp interp; /* never SV_RA_RANDOM: the drawn choice */
} sv_ra_layer;

/* Parse timm's "rand-..." string: sections m<int> n<int> mstd<float> mmax<int> inc<0|1>
 * p<float> in any order, unset ones at timm's defaults (m10 n2 mstd0 p0.5 inc0). Errors
 * (SV_ERR_INVALID) name --aa, the string and the bad section. */
sv_status sv_randaug_timm_parse(const char *spec, sv_randaug_timm *t);

/* Op i (0..14) of timm's list, in timm's order. */
sv_ra_op sv_randaug_timm_op(int i);

/* timm's level -> argument of op at magnitude mag (already clipped), the value apply takes. */
double sv_randaug_timm_arg(sv_ra_op op, double mag, int increasing, int negate, int side);

/* Magnitude of layer i from key: noise (normal on sv_hash2(key, 4i+2), counter 0, or uniform
 * on key counter 4i+2) then clipping, as timm's AugmentOp. */
double sv_randaug_timm_magnitude(const sv_randaug_timm *t, uint64_t key, uint64_t i);

/* The layers t applies for the random stream key, in order (at most t->n into out); returns
 * their count. Layer i uses counters 4i (op), 4i+1 (apply when < p), 4i+2 (magnitude noise),
 * 4i+3 (negate when > 0.5); with SV_RA_RANDOM a geometric op is bicubic when
 * sv_rand_unit(sv_hash2(key, 0x1e7b), i) >= 0.5, else bilinear (a stream of its own, so the other
 * draws are those of every other interp). Non-geometric ops carry SV_RA_NEAREST. */
int sv_randaug_timm_plan(const sv_randaug_timm *t, uint64_t key, int side, sv_ra_layer *out);

/* Apply one layer to img (scratch: side*side*c bytes; fill: c bytes). */
void sv_randaug_layer_apply(const sv_ra_layer *l, uint8_t *img, int side, int c, const uint8_t *fill, uint8_t *scratch);

/* Apply t to img from the random stream key: the layers of sv_randaug_timm_plan, one after
 * another. */
void sv_randaug_timm_run(const sv_randaug_timm *t, uint64_t key, uint8_t *img, int side, int c, const uint8_t *fill,
                         uint8_t *scratch);

/* Building blocks shared with the DeiT III three-augment and colour jitter (data/augment3.h):
 * PIL ImageEnhance blend of op (Color, Contrast, Brightness or Sharpness) with `factor`;
 * ImageOps.solarize(threshold); Grayscale(3) (PIL convert("L") replicated; identity on c = 1). */
void sv_image_enhance(sv_ra_op op, double factor, uint8_t *img, int side, int c, uint8_t *scratch);
void sv_image_solarize(uint8_t *img, int side, int c, int thresh);
void sv_image_grayscale(uint8_t *img, int side, int c);

#endif
