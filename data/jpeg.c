#include "data/jpeg.h"

#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <turbojpeg.h>
/* jpeglib.h needs FILE and size_t first */
#include <jpeglib.h>

#include "core/checked.h"
#include "data/jpeg_markers.h"
#include "data/jpeg_restart.h"

void sv_jpeg_ctx_init(sv_jpeg_ctx *c) { memset(c, 0, sizeof *c); }

static void lj_destroy(sv_jpeg_ctx *c);

void sv_jpeg_ctx_free(sv_jpeg_ctx *c) {
    lj_destroy(c);
    if (c->dec) tjDestroy(c->dec);
    if (c->enc) tjDestroy(c->enc);
    free(c->pix);
    free(c->jbuf);
    free(c->sub);
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
    if (len < 4 || data[0] != 0xFF || data[1] != 0xD8) return SV_FAIL(SV_ERR_FORMAT, "not a JPEG (no SOI marker)");
    /* TurboJPEG 2.1 can report success without writing the sizes (a primed handle meeting a
     * stream without a frame): 0 x 0 then, refused below, never the caller's stack garbage */
    *w = *h = 0;
    if (tjDecompressHeader3(c->dec, data, (unsigned long)len, w, h, &subsamp, &cs) != 0) {
        sv_status s = SV_FAIL(SV_ERR_FORMAT, "JPEG header: %s", tjGetErrorStr2(c->dec));
        /* a handle whose header read failed fails the next header too (the error is kept): the
         * next image gets a fresh one */
        tjDestroy(c->dec);
        c->dec = NULL;
        return s;
    }
    /* a tables-only stream "succeeds" (sizes left 0 x 0 above) and leaves the handle primed for the
     * next call */
    if (*w <= 0 || *h <= 0) {
        tjDestroy(c->dec);
        c->dec = NULL;
        return SV_FAIL(SV_ERR_FORMAT, "JPEG header: no image frame (%d x %d)", *w, *h);
    }
    *comps = cs == TJCS_GRAY ? 1 : (cs == TJCS_CMYK || cs == TJCS_YCCK) ? 4 : 3;
    return SV_OK;
}

/* Scans (SOS markers) in a JPEG stream, walking its marker segments by their lengths and
 * skipping entropy-coded data; counting stops once it exceeds `stop`. Where the structure is
 * broken the walk stops with what it has counted: libjpeg meets the same bytes and reports them
 * (any warning is an error here). */
static int count_scans(const uint8_t *p, size_t n, int stop) {
    size_t i = 2, at;
    int scans = 0;
    uint8_t m;
    while (scans <= stop && sv_jm_next(p, n, &i, &m, &at) && m != 0xD9) /* to EOI */
        if (m == 0xDA) {
            scans++;
            i = sv_jm_entropy_end(p, n, i);
        }
    return scans;
}

static sv_status check_scans(const uint8_t *data, size_t len) {
    if (count_scans(data, len, SV_JPEG_MAX_SCANS) > SV_JPEG_MAX_SCANS)
        return SV_FAIL(SV_ERR_CORRUPT, "JPEG decode: more than %d scans (the decode-cost limit SV_JPEG_MAX_SCANS)",
                       SV_JPEG_MAX_SCANS);
    return SV_OK;
}

/* RGB pixels to luma in place, as Pillow's convert("L") (ITU-R 601-2 weights in 16-bit fixed
 * point, rounded): what timm feeds a 1-channel model from a colour JPEG, which differs from the
 * JPEG's own Y channel (up to 34 levels on saturated colours). p[i] = L(p[3i .. 3i + 2]). */
static void rgb_to_l(uint8_t *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)((p[3 * i] * 19595u + p[3 * i + 1] * 38470u + p[3 * i + 2] * 7471u + 0x8000u) >> 16);
}

sv_status sv_jpeg_decode(sv_jpeg_ctx *c, const uint8_t *data, size_t len, int channels, int denom, int *w, int *h) {
    int fw, fh, comps;
    SV_TRY(sv_jpeg_header(c, data, len, &fw, &fh, &comps));
    if (comps == 4) return SV_FAIL(SV_ERR_UNSUPPORTED, "CMYK JPEG is not supported");
    SV_TRY(check_scans(data, len)); /* TurboJPEG 2.1 has no scan limit of its own */
    tjscalingfactor sf = {1, denom};
    int sw = TJSCALED(fw, sf), sh = TJSCALED(fh, sf);
    const int dch = channels == 1 && comps == 3 ? 3 : channels; /* a colour file for 1 channel: RGB, then L */
    uint64_t need;
    if (sw <= 0 || sh <= 0 || !sv_mul3_u64((uint64_t)sw, (uint64_t)sh, (uint64_t)dch, &need) || need > SIZE_MAX)
        return SV_FAIL(SV_ERR_FORMAT, "JPEG decode: %d x %d x %d pixels do not fit in memory", sw, sh, dch);
    SV_TRY(ensure(&c->pix, &c->pix_cap, (size_t)need));
    int pf = dch == 1 ? TJPF_GRAY : TJPF_RGB;
    if (tjDecompress2(c->dec, data, (unsigned long)len, c->pix, sw, 0, sh, pf, TJFLAG_STOPONWARNING) != 0) {
        sv_status s = SV_FAIL(SV_ERR_CORRUPT, "JPEG decode: %s", tjGetErrorStr2(c->dec));
        /* a decompressor that stopped mid-image can mis-decode the next one: start afresh */
        tjDestroy(c->dec);
        c->dec = NULL;
        return s;
    }
    if (dch != channels) rgb_to_l(c->pix, (size_t)sw * (size_t)sh);
    *w = sw;
    *h = sh;
    return SV_OK;
}

sv_status sv_jpeg_encode(sv_jpeg_ctx *c, const uint8_t *pix, int w, int h, int channels, int quality, int progressive,
                         const uint8_t **out, size_t *len) {
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

/* ---- region decode through the libjpeg API ---- */

typedef struct lj_state {
    struct jpeg_decompress_struct d;
    struct jpeg_error_mgr em;
    struct jpeg_progress_mgr pm; /* counts scans: SV_JPEG_MAX_SCANS */
    jmp_buf jb;
    char msg[JMSG_LENGTH_MAX];
    int open;            /* a header has been read and the decode not yet finished */
    const uint8_t *data; /* the stream of the open header (borrowed) */
    size_t len;
} lj_state;

static void lj_error_exit(j_common_ptr ci) {
    lj_state *s = (lj_state *)ci->client_data;
    (*ci->err->format_message)(ci, s->msg);
    longjmp(s->jb, 1);
}

/* Warnings (level -1: corrupt data, premature end) are errors, as TJFLAG_STOPONWARNING;
 * trace messages (level >= 0) are ignored. */
static void lj_emit(j_common_ptr ci, int level) {
    if (level < 0) lj_error_exit(ci);
}

/* libjpeg calls this between units of work (each iMCU row of input while it absorbs a
 * multi-scan file, each output pass step); input_scan_number counts the SOS markers read so
 * far, so a stream stops as soon as scan SV_JPEG_MAX_SCANS + 1 starts. */
static void lj_progress(j_common_ptr ci) {
    const j_decompress_ptr d = (j_decompress_ptr)ci;
    if (d->input_scan_number <= SV_JPEG_MAX_SCANS) return;
    lj_state *s = (lj_state *)ci->client_data;
    snprintf(s->msg, sizeof s->msg, "more than %d scans (the decode-cost limit SV_JPEG_MAX_SCANS)", SV_JPEG_MAX_SCANS);
    longjmp(s->jb, 1);
}

static void lj_destroy(sv_jpeg_ctx *c) {
    lj_state *s = c->lj;
    if (!s) return;
    jpeg_destroy_decompress(&s->d);
    free(s);
    c->lj = NULL;
}

static sv_status lj_get(sv_jpeg_ctx *c, lj_state **out) {
    if (!c->lj) {
        lj_state *volatile s = calloc(1, sizeof *s);
        if (!s) return SV_FAIL(SV_ERR_OOM, "jpeg: decompressor state");
        s->d.err = jpeg_std_error(&s->em);
        s->em.error_exit = lj_error_exit;
        s->em.emit_message = lj_emit;
        s->d.client_data = s;
        if (setjmp(s->jb)) {
            free(s);
            return SV_FAIL(SV_ERR_BACKEND, "libjpeg: cannot create a decompressor");
        }
        jpeg_create_decompress(&s->d);
        s->pm.progress_monitor = lj_progress;
        s->d.progress = &s->pm;
        c->lj = s;
    }
    *out = c->lj;
    return SV_OK;
}

/* Whether the data after the first scan header holds an EOI marker: entropy-coded bytes never
 * contain FF D9 (an FF there is followed by 00 or a restart marker), so its absence means the
 * file was cut short. A complete file has it at the very end (or before trailing bytes), so the
 * backward scan is short. */
static int has_eoi(const uint8_t *p, size_t n) {
    for (size_t i = n; i >= 2; i--)
        if (p[i - 1] == 0xD9 && p[i - 2] == 0xFF) return 1;
    return 0;
}

static int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

/* Whether skipping rows (jpeg_skip_scanlines) and columns (jpeg_crop_scanline) keeps the
 * pixels of a full decode at 1/denom scale. At scale 1 it does for every sampling tested; at a
 * reduced DCT scale only for the layouts TurboJPEG names (chroma 1x1 beside luma 1x1, 2x1, 1x2,
 * 2x2 or 4x1): libjpeg-turbo 2.1.5 gets others wrong there (luma 2x4 or 4x2 at 1/2: most
 * regions differ, by up to 255; chroma with factors of its own: some), so those decode from
 * the top at full width (tested against plain libjpeg decodes). */
static int cut_exact(const struct jpeg_decompress_struct *d, int denom) {
    if (denom == 1 || d->num_components == 1) return 1;
    for (int i = 1; i < d->num_components; i++)
        if (d->comp_info[i].h_samp_factor != 1 || d->comp_info[i].v_samp_factor != 1) return 0;
    const int h = d->comp_info[0].h_samp_factor, v = d->comp_info[0].v_samp_factor;
    return (h <= 2 && v <= 2) || (h == 4 && v == 1);
}

/* Arguments and results of one libjpeg call sequence (kept out of locals of the setjmp frame). */
typedef struct lj_args {
    int op; /* 0: header, 1: region */
    const uint8_t *data;
    size_t len;
    int w, h, comps;
    int channels, denom, x0, y0, x1, y1;
    sv_jpeg_region *r;
    sv_status st;
} lj_args;

/* Any libjpeg error longjmps out of these to lj_call with s->msg set. */
static void lj_header(lj_state *s, lj_args *a) {
    j_decompress_ptr d = &s->d;
    jpeg_mem_src(d, a->data, (unsigned long)a->len);
    jpeg_read_header(d, TRUE);
    s->open = 1;
    s->data = a->data;
    s->len = a->len;
    if (!has_eoi(d->src->next_input_byte, (size_t)(a->data + a->len - d->src->next_input_byte))) {
        a->st = SV_FAIL(SV_ERR_CORRUPT, "JPEG decode: truncated file (no end-of-image marker)");
        return;
    }
    a->w = (int)d->image_width;
    a->h = (int)d->image_height;
    a->comps = d->jpeg_color_space == JCS_GRAYSCALE                          ? 1
        : d->jpeg_color_space == JCS_CMYK || d->jpeg_color_space == JCS_YCCK ? 4
                                                                             : 3;
}

static void lj_region(sv_jpeg_ctx *c, lj_state *s, lj_args *a) {
    j_decompress_ptr d = &s->d;
    if (d->jpeg_color_space == JCS_CMYK || d->jpeg_color_space == JCS_YCCK) {
        a->st = SV_FAIL(SV_ERR_UNSUPPORTED, "CMYK JPEG is not supported");
        return;
    }
    const int channels = a->channels;
    /* Fancy (triangle) chroma upsampling treats the cut as an image edge: the first/last output
     * row or column of a cropped or resumed decode can differ from a full decode. Two pixels of
     * margin keep that off the request (tested against full decodes). */
    const int mx = 2, my = 2;
    int rx0 = a->x0 - mx, rx1 = a->x1 + mx;
    /* libjpeg upsamples a chroma row of 2 samples or fewer by replication, not the triangle: a
     * decoded width of at least two MCUs keeps a region at the right edge from getting that
     * (counted from the image's right edge for a request that runs past it) */
    const int min_w = 16 * d->max_h_samp_factor, sw = ((int)d->image_width + a->denom - 1) / a->denom;
    if (rx1 > sw) rx1 = sw;
    if (rx1 - rx0 < min_w) rx0 = rx1 - min_w;
    /* a stream with restart markers: decode only the intervals over the region (same pixels) */
    int ox = 0, oy = 0, full_w = 0, full_h = 0;
    if (a->denom == 1 && !d->progressive_mode && !d->arith_code && d->restart_interval > 0 &&
        d->comps_in_scan == d->num_components) {
        const int one = d->num_components == 1;
        sv_jpeg_rst_layout lay = {(int)d->image_width, (int)d->image_height, one ? 8 : 8 * d->max_h_samp_factor,
                                  one ? 8 : 8 * d->max_v_samp_factor, (int)d->restart_interval};
        sv_jpeg_rst_sub sub;
        int got = sv_jpeg_restart_sub(s->data, s->len, &lay, rx0, a->y0 - my, rx1, a->y1 + my, &c->sub, &c->sub_cap,
                                      &sub, &a->st);
        if (got < 0) return;
        if (got > 0) {
            jpeg_abort_decompress(d);
            jpeg_mem_src(d, c->sub, (unsigned long)sub.len);
            jpeg_read_header(d, TRUE);
            ox = sub.sx, oy = sub.sy, full_w = lay.w, full_h = lay.h;
        }
    }
    /* a colour file for a 1-channel model: decoded as RGB, then Pillow's luma (rgb_to_l) */
    const int dch = channels == 1 && d->num_components > 1 ? 3 : channels;
    d->out_color_space = dch == 1 ? JCS_GRAYSCALE : JCS_RGB;
    d->scale_num = 1;
    d->scale_denom = (unsigned)a->denom;
    jpeg_start_decompress(d);
    int fw = (int)d->output_width, fh = (int)d->output_height;
    int x0 = clampi(rx0 - ox, 0, fw), x1 = clampi(rx1 - ox, 0, fw);
    int y0 = clampi(a->y0 - my - oy, 0, fh), y1 = clampi(a->y1 + my - oy, 0, fh);
    if (x1 <= x0) x0 = 0, x1 = fw;
    if (y1 <= y0) y0 = 0, y1 = fh;
    if (!cut_exact(d, a->denom)) x0 = 0, x1 = fw, y0 = 0;
    JDIMENSION cx = (JDIMENSION)x0, cw = (JDIMENSION)(x1 - x0);
    if (x0 > 0 || x1 < fw) jpeg_crop_scanline(d, &cx, &cw);                           /* widens to iMCU boundaries */
    size_t stride = (size_t)cw * (size_t)dch, need = stride * (size_t)(y1 - y0) + 16; /* resampler slack */
    if (need > c->pix_cap) {
        uint8_t *p = realloc(c->pix, need);
        if (!p) {
            a->st = SV_FAIL(SV_ERR_OOM, "jpeg: cannot allocate %zu bytes", need);
            return;
        }
        c->pix = p;
        c->pix_cap = need;
    }
    if (y0 > 0) jpeg_skip_scanlines(d, (JDIMENSION)y0);
    while ((int)d->output_scanline < y1) { /* several rows per call: no spare-row copies */
        JSAMPROW rows[16];
        int k = y1 - (int)d->output_scanline < 16 ? y1 - (int)d->output_scanline : 16;
        for (int i = 0; i < k; i++) rows[i] = c->pix + (size_t)((int)d->output_scanline + i - y0) * stride;
        jpeg_read_scanlines(d, rows, (JDIMENSION)k);
    }
    /* A region that reaches the last row: read on to EOI, so that what libjpeg reports only
     * there (entropy data it could not use: "extraneous bytes before marker", the sign of a
     * stream decoded with the wrong coding or a damaged tail) is the error every warning is.
     * Rows below a region that stops higher are never decoded: the data there only matters for
     * truncation, which lj_header caught before decoding. */
    if (y1 == fh) jpeg_finish_decompress(d);
    if (dch != channels) /* row by row, in place: row r's luma ends before row r + 1's RGB starts */
        for (int r = 0; r < y1 - y0; r++) {
            uint8_t *row = c->pix + (size_t)r * cw;
            memmove(row, c->pix + (size_t)r * stride, (size_t)cw * 3);
            rgb_to_l(row, cw);
        }
    if (full_w) /* back to the whole image's coordinates */
        *a->r = (sv_jpeg_region){c->pix, (int)cx + ox, y0 + oy, (int)cw, y1 - y0, full_w, full_h};
    else
        *a->r = (sv_jpeg_region){c->pix, (int)cx, y0, (int)cw, y1 - y0, fw, fh};
}

/* The setjmp frame: nothing here changes after setjmp, so nothing can be clobbered. */
static int lj_call(sv_jpeg_ctx *c, lj_state *s, lj_args *a) {
    if (setjmp(s->jb)) return -1;
    if (a->op == 0)
        lj_header(s, a);
    else
        lj_region(c, s, a);
    return 0;
}

sv_status sv_jpeg_region_open(sv_jpeg_ctx *c, const uint8_t *data, size_t len, int *w, int *h, int *comps) {
    if (len < 4 || data[0] != 0xFF || data[1] != 0xD8) return SV_FAIL(SV_ERR_FORMAT, "not a JPEG (no SOI marker)");
    lj_state *s;
    SV_TRY(lj_get(c, &s));
    if (s->open) jpeg_abort_decompress(&s->d);
    s->open = 0;
    lj_args a = {.op = 0, .data = data, .len = len, .st = SV_OK};
    if (lj_call(c, s, &a) < 0) {
        sv_status st = SV_FAIL(SV_ERR_FORMAT, "JPEG header: %s", s->msg);
        lj_destroy(c);
        return st;
    }
    if (a.st != SV_OK) {
        jpeg_abort_decompress(&s->d);
        s->open = 0;
        return a.st;
    }
    *w = a.w;
    *h = a.h;
    *comps = a.comps;
    return SV_OK;
}

sv_status sv_jpeg_region_decode(sv_jpeg_ctx *c, int channels, int denom, int x0, int y0, int x1, int y1,
                                sv_jpeg_region *r) {
    lj_state *s = c->lj;
    if (!s || !s->open) return SV_FAIL(SV_ERR_INVALID, "jpeg: region decode without a successful sv_jpeg_region_open");
    if (channels != 1 && channels != 3) return SV_FAIL(SV_ERR_INVALID, "jpeg decode: channels %d not 1 or 3", channels);
    if (denom != 1 && denom != 2 && denom != 4 && denom != 8)
        return SV_FAIL(SV_ERR_INVALID, "jpeg decode: scale 1/%d not one of 1, 1/2, 1/4, 1/8", denom);
    lj_args a = {
        .op = 1, .channels = channels, .denom = denom, .x0 = x0, .y0 = y0, .x1 = x1, .y1 = y1, .r = r, .st = SV_OK};
    if (lj_call(c, s, &a) < 0) {
        sv_status st = SV_FAIL(SV_ERR_CORRUPT, "JPEG decode: %s", s->msg);
        /* a decompressor that stopped mid-image is rebuilt rather than trusted */
        lj_destroy(c);
        return st;
    }
    jpeg_abort_decompress(&s->d);
    s->open = 0;
    return a.st;
}

sv_status sv_jpeg_decode_region(sv_jpeg_ctx *c, const uint8_t *data, size_t len, int channels, int denom, int x0,
                                int y0, int x1, int y1, sv_jpeg_region *r) {
    int w, h, comps;
    SV_TRY(sv_jpeg_region_open(c, data, len, &w, &h, &comps));
    return sv_jpeg_region_decode(c, channels, denom, x0, y0, x1, y1, r);
}
