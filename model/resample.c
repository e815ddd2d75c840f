/* pos_embed resampling (model/resample.h). */
#include "model/resample.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

/* ---- pos_embed resampling (PyTorch upsample_bicubic2d, align_corners=False, A = -0.75) ---- */

static void cubic_coeffs(float t, float w[4]) {
    const float A = -0.75f;
    float x1 = t + 1.0f, x2 = 1.0f - t, x3 = 2.0f - t;
    w[0] = ((A * x1 - 5.0f * A) * x1 + 8.0f * A) * x1 - 4.0f * A;
    w[1] = ((A + 2.0f) * t - (A + 3.0f)) * t * t + 1.0f;
    w[2] = ((A + 2.0f) * x2 - (A + 3.0f)) * x2 * x2 + 1.0f;
    w[3] = ((A * x3 - 5.0f * A) * x3 + 8.0f * A) * x3 - 4.0f * A;
}

static int clampi(int v, int hi) { return v < 0 ? 0 : v > hi ? hi : v; }

void sv_vit_resample_pos_embed(const float *src, int gi, float *dst, int go, int D) {
    memcpy(dst, src, (size_t)D * sizeof(float)); /* class position */
    const float *g = src + D;
    float scale = (float)gi / (float)go;
    for (int oy = 0; oy < go; oy++) {
        float ry = scale * ((float)oy + 0.5f) - 0.5f;
        int iy = (int)floorf(ry);
        float wy[4];
        cubic_coeffs(ry - (float)iy, wy);
        for (int ox = 0; ox < go; ox++) {
            float rx = scale * ((float)ox + 0.5f) - 0.5f;
            int ix = (int)floorf(rx);
            float wx[4];
            cubic_coeffs(rx - (float)ix, wx);
            float *o = dst + (1 + (size_t)oy * (size_t)go + (size_t)ox) * (size_t)D;
            for (int d = 0; d < D; d++) {
                float rows[4];
                for (int k = 0; k < 4; k++) {
                    int y = clampi(iy - 1 + k, gi - 1);
                    const float *row = g + (size_t)y * (size_t)gi * (size_t)D + d;
                    rows[k] = row[(size_t)clampi(ix - 1, gi - 1) * D] * wx[0] +
                        row[(size_t)clampi(ix, gi - 1) * D] * wx[1] + row[(size_t)clampi(ix + 1, gi - 1) * D] * wx[2] +
                        row[(size_t)clampi(ix + 2, gi - 1) * D] * wx[3];
                }
                o[d] = rows[0] * wy[0] + rows[1] * wy[1] + rows[2] * wy[2] + rows[3] * wy[3];
            }
        }
    }
}
