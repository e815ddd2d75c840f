#include "data/jpeg.h"

#include <stdlib.h>
#include <string.h>
#include <turbojpeg.h>

void sv_jpeg_ctx_init(sv_jpeg_ctx *c) { memset(c, 0, sizeof *c); }

void sv_jpeg_ctx_free(sv_jpeg_ctx *c) {
    if (c->dec) tjDestroy(c->dec);
    if (c->enc) tjDestroy(c->enc);
    free(c->pix);
    free(c->jbuf);
    memset(c, 0, sizeof *c);
}

static sv_status ensure(uint8_t **buf, size_t *cap, size_t need) {
    if (need <= *cap) return SV_OK;
    uint8_t *p = realloc(*buf, need);
    if (!p) return SV_FAIL(SV_ERR_OOM, "jpeg: cannot allocate %zu bytes", need);
    *buf = p;
    *cap = need;
    return SV_OK;
}

static sv_status dec_handle(sv_jpeg_ctx *c) {
    if (!c->dec && !(c->dec = tjInitDecompress()))
        return SV_FAIL(SV_ERR_BACKEND, "TurboJPEG: tjInitDecompress failed: %s", tjGetErrorStr2(NULL));
    return SV_OK;
}

sv_status sv_jpeg_header(sv_jpeg_ctx *c, const uint8_t *data, size_t len, int *w, int *h, int *comps) {
    SV_TRY(dec_handle(c));
    int subsamp = 0, cs = 0;
    if (len < 4 || data[0] != 0xFF || data[1] != 0xD8)
        return SV_FAIL(SV_ERR_FORMAT, "not a JPEG (no SOI marker)");
    if (tjDecompressHeader3(c->dec, data, (unsigned long)len, w, h, &subsamp, &cs) != 0)
        return SV_FAIL(SV_ERR_FORMAT, "JPEG header: %s", tjGetErrorStr2(c->dec));
    *comps = cs == TJCS_GRAY ? 1 : (cs == TJCS_CMYK || cs == TJCS_YCCK) ? 4 : 3;
    return SV_OK;
}

sv_status sv_jpeg_decode(sv_jpeg_ctx *c, const uint8_t *data, size_t len, int channels, int denom,
                         int *w, int *h) {
    int fw, fh, comps;
    SV_TRY(sv_jpeg_header(c, data, len, &fw, &fh, &comps));
    if (comps == 4) return SV_FAIL(SV_ERR_UNSUPPORTED, "CMYK JPEG is not supported");
    tjscalingfactor sf = {1, denom};
    int sw = TJSCALED(fw, sf), sh = TJSCALED(fh, sf);
    SV_TRY(ensure(&c->pix, &c->pix_cap, (size_t)sw * (size_t)sh * (size_t)channels));
    int pf = channels == 1 ? TJPF_GRAY : TJPF_RGB;
    if (tjDecompress2(c->dec, data, (unsigned long)len, c->pix, sw, 0, sh, pf, TJFLAG_STOPONWARNING) != 0) {
        sv_status s = SV_FAIL(SV_ERR_CORRUPT, "JPEG decode: %s", tjGetErrorStr2(c->dec));
        /* a decompressor that stopped mid-image can mis-decode the next one: start afresh */
        tjDestroy(c->dec);
        c->dec = NULL;
        return s;
    }
    *w = sw;
    *h = sh;
    return SV_OK;
}

sv_status sv_jpeg_encode(sv_jpeg_ctx *c, const uint8_t *pix, int w, int h, int channels, int quality,
                         int progressive, const uint8_t **out, size_t *len) {
    if (channels != 1 && channels != 3) return SV_FAIL(SV_ERR_INVALID, "jpeg encode: channels %d not 1 or 3", channels);
    if (quality < 1 || quality > 100) return SV_FAIL(SV_ERR_INVALID, "jpeg quality %d not in 1..100", quality);
    if (!c->enc && !(c->enc = tjInitCompress()))
        return SV_FAIL(SV_ERR_BACKEND, "TurboJPEG: tjInitCompress failed: %s", tjGetErrorStr2(NULL));
    int ss = channels == 1 ? TJSAMP_GRAY : TJSAMP_420;
    unsigned long cap = tjBufSize(w, h, ss);
    SV_TRY(ensure(&c->jbuf, &c->jbuf_cap, cap));
    unsigned char *dst = c->jbuf;
    unsigned long size = (unsigned long)c->jbuf_cap;
    int flags = TJFLAG_NOREALLOC | (progressive ? TJFLAG_PROGRESSIVE : 0);
    int r = tjCompress2(c->enc, pix, w, 0, h, channels == 1 ? TJPF_GRAY : TJPF_RGB, &dst, &size, ss, quality, flags);
    sv_status s = r != 0 ? SV_FAIL(SV_ERR_BACKEND, "JPEG encode: %s", tjGetErrorStr2(c->enc)) : SV_OK;
    if (progressive || r != 0) { /* a progressive scan script outlives the call in TurboJPEG 2.x */
        tjDestroy(c->enc);
        c->enc = NULL;
    }
    if (s != SV_OK) return s;
    *out = dst;
    *len = size;
    return SV_OK;
}
