/* shardvit data: RandomErasing (Zhong et al. 2017) with timm's semantics
 * (timm.data.random_erasing.RandomErasing), on normalised (C, H, W) float images.
 *
 * With probability `prob` the image is erased: count = 1, or randint(1, max_count) when
 * max_count > 1; each of the count boxes makes up to 10 attempts of
 *   target area = U(0.02, 1/3) * H * W / count,  aspect = exp(U(log 0.3, log 1/0.3)),
 *   h = round(sqrt(area * aspect)), w = round(sqrt(area / aspect))   (round half even)
 * and takes the first with w < W and h < H: top = randint(0, H - h), left = randint(0, W - w)
 * (inclusive), then fills the box with 0 (const), one N(0, 1) value per channel (rand) or an
 * N(0, 1) value per pixel and channel (pixel). Boxes may overlap; h or w may be 0 (nothing
 * erased), as in timm.
 *
 * Randomness: a pure function of `key` (the loader passes a per-sample key, so erasing is the
 * same at any world size or thread count): counter 0 decides, 1 the count, 2 + 4 (10 k + t) ..
 * + 3 the attempt t of box k; fill values come from sv_hash2(key, 0x1000 + k). */
#ifndef SV_DATA_ERASE_H
#define SV_DATA_ERASE_H

#include <stdint.h>

typedef enum { SV_ERASE_CONST = 0, SV_ERASE_RAND = 1, SV_ERASE_PIXEL = 2 } sv_erase_mode;

enum { SV_ERASE_MAX_COUNT = 64 };

typedef struct sv_erase_opts {
    float prob;    /* 0 = off */
    int mode;      /* sv_erase_mode */
    int max_count; /* 1..SV_ERASE_MAX_COUNT */
} sv_erase_opts;

typedef struct sv_erase_box {
    int top, left, h, w;
} sv_erase_box;

/* The boxes erased for key on an H x W image: returns their number (0: not erased), boxes
 * filled (room for SV_ERASE_MAX_COUNT); *count (may be NULL) gets the drawn count (boxes whose
 * 10 attempts all failed are not returned). */
int sv_erase_plan(uint64_t key, const sv_erase_opts *o, int H, int W, sv_erase_box *boxes, int *count);

/* Plan and fill img (C, H, W) in place. */
void sv_random_erase(uint64_t key, const sv_erase_opts *o, float *img, int C, int H, int W);

/* "const" | "rand" | "pixel" -> mode; -1 if unknown. */
int sv_erase_mode_parse(const char *s);

#endif
