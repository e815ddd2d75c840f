/* shardvit data: PIL-exact separable resampling of 8-bit images, and normalisation.
 *
 * The filters, coefficient tables and 22-bit fixed-point arithmetic are Pillow's
 * (libImaging/Resample.c, Pillow 7-10): antialiased when shrinking (the kernel widens by the
 * scale factor), half-pixel centres, a horizontal pass into 8-bit rows then a vertical pass into
 * 8-bit output, each rounded and clipped as Pillow does. Given the same source pixels and box,
 * the output equals Image.resize(..., box=...) of the cropped image byte for byte.
 * Bicubic is Pillow's (Keys kernel with a = -0.5, support 2); torch's tensor bicubic uses
 * a = -0.75, but torchvision on PIL images, which is what RandomResizedCrop/Resize reproduce
 * here, goes through Pillow.
 *
 * Use: sv_resample_plan() (tables; says which source pixels are read) -> obtain those pixels ->
 * sv_resample_run(). Scratch grows to the largest request and is then reused (no allocation in
 * steady state); one per thread. */
#ifndef SV_DATA_RESAMPLE_H
#define SV_DATA_RESAMPLE_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

typedef enum { SV_INTERP_BILINEAR = 0, SV_INTERP_BICUBIC = 1 } sv_interp;

/* A crop box in source pixels: left x, top y, width w, height h. */
typedef struct sv_box {
    double x, y, w, h;
} sv_box;

typedef struct sv_resample_scratch {
    void *mem; /* tables, intermediate rows, the 8-bit output and augmentation scratch */
    size_t cap;
    int out, c, flip;
    int32_t *bx, *by, *kx, *ky; /* per output coordinate: first tap, tap count; fixed-point taps */
    int ksx, ksy;               /* taps per table row */
    int32_t *kp;                /* horizontal taps in pairs, 8 lanes per pair (3-channel SIMD) */
    int npair;
    /* 3-channel AVX-512 VBMI pass: outputs in groups of `gsz` (<= 5: 15 of 16 lanes), each
     * group's source pixels within one 64-byte window. gsz 0: that pass does not apply. Per
     * group g: ginfo[4g..4g+3] = first source pixel of the window, bytes of the window, first
     * output, outputs; gidx + 64g: lane l's byte offset in the window at tap 0 in byte 4l;
     * gk + 16 (g ksx + t): the lanes' fixed-point taps t. */
    int gsz, ngroup;
    int32_t *ginfo, *gk;
    uint8_t *gidx;
    int x0, y0, x1, y1;  /* source pixels read by the plan */
    uint8_t *tmp;        /* horizontally filtered rows (y1 - y0, out, c) */
    uint8_t *img, *img2; /* (out, out, c) output of run and scratch of the same size */
} sv_resample_scratch;
void sv_resample_scratch_free(sv_resample_scratch *s);

/* Plan resampling box b of a source image to out x out with c channels. Source pixels outside
 * [clip_x0, clip_x1) x [clip_y0, clip_y1) are never read (edge taps renormalise), which is
 * Pillow's behaviour at the border of the image it resizes: pass the integer crop box for
 * crop-then-resize (torchvision resized_crop), the whole image for resize-then-crop.
 * flip mirrors the output horizontally. On return s->x0..y1 is the source rectangle read.
 * out in 1..1024, c in 1..4; the box must overlap the clip rectangle. */
sv_status sv_resample_plan(sv_resample_scratch *s, const sv_box *b, int clip_x0, int clip_y0, int clip_x1, int clip_y1,
                           int out, int c, int flip, sv_interp interp);

/* Run the plan on pixels covering s->x0..y1: src points at source pixel (ox, oy), rows are
 * `stride` bytes apart, HWC with the plan's c; the 8 bytes after the last pixel read must be
 * readable (their values do not matter). Output: s->img, (out, out, c) HWC bytes. */
void sv_resample_run(sv_resample_scratch *s, const uint8_t *src, int ox, int oy, size_t stride);

/* (side, side, c) HWC bytes -> (c, side, side) floats (v/255 - mean[ch]) / std[ch]. */
void sv_normalize_u8(const uint8_t *src, int side, int c, const float *mean, const float *std, float *dst);

/* The same with the portable loops only. The run-time selected vectorised paths must give
 * identical bytes/floats; tests compare the two. */
void sv_resample_run_portable(sv_resample_scratch *s, const uint8_t *src, int ox, int oy, size_t stride);
void sv_normalize_u8_portable(const uint8_t *src, int side, int c, const float *mean, const float *std, float *dst);

#endif
