/* Fuzz target: the JPEG decode path of the loader: header, decompression-bomb guard (max
 * pixels), crop, DCT-scaled decode, resample; train and eval transforms, 1 and 3 channels. */
#include <stdint.h>
#include <stdlib.h>

#include "data/jpeg.h"
#include "data/transform.h"
#include "fuzz_util.h"

#define IMG 24
#define MAX_PIXELS (1u << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_quiet();
    if (size < 1) return 0;
    /* the last byte picks the transform, so the JPEG itself starts at byte 0 */
    uint8_t mode = data[size - 1];
    size--;
    static const float mean[3] = {0.5f, 0.5f, 0.5f}, std[3] = {0.5f, 0.5f, 0.5f};
    sv_jpeg_ctx jc;
    sv_jpeg_ctx_init(&jc);
    sv_resample_scratch rs = {0};
    float out[3 * IMG * IMG];
    sv_image_xform x = {.train = mode & 1,
                        .key = mode,
                        .img = IMG,
                        .channels = mode & 2 ? 1 : 3,
                        .scale_min = 0.08,
                        .scale_max = 1.0,
                        .ratio_min = 0.75,
                        .ratio_max = 4.0 / 3.0,
                        .hflip = 0.5,
                        .crop_pct = 0.875,
                        .max_pixels = MAX_PIXELS,
                        .mean = mean,
                        .std = std};
    int w, h, comps, rw, rh, rcomps;
    sv_status hs = sv_jpeg_header(&jc, data, size, &w, &h, &comps);
    /* the loader decodes through the libjpeg region path, which accepts some subsamplings the
     * TurboJPEG header call rejects: its own header is what the pixel guard must have checked */
    sv_status rhs = sv_jpeg_region_open(&jc, data, size, &rw, &rh, &rcomps);
    sv_status s = sv_load_image(&jc, &rs, data, size, &x, out);
    if (s == SV_OK) {
        /* the guard must have held, and the output must be finite */
        if (rhs != SV_OK || (uint64_t)rw * (uint64_t)rh > MAX_PIXELS) abort();
        for (int i = 0; i < x.channels * IMG * IMG; i++)
            if (!(out[i] >= -1.001f && out[i] <= 1.001f)) abort();
    }
    if (hs == SV_OK && (uint64_t)w * (uint64_t)h <= MAX_PIXELS && (mode & 4)) {
        int dw, dh;
        int denom = 1 << ((mode >> 3) & 3);
        if (sv_jpeg_decode(&jc, data, size, x.channels, denom, &dw, &dh) == SV_OK && (dw <= 0 || dh <= 0)) abort();
    }
    sv_resample_scratch_free(&rs);
    sv_jpeg_ctx_free(&jc);
    return 0;
}
