#include "data/jpeg_restart.h"

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
/* jpeglib.h needs FILE and size_t first */
#include <jpeglib.h>

#include "data/jpeg_markers.h"

/* ---- cutting a stream at its restart markers ---- */

/* Offsets of the frame header (SOF marker) and of the first entropy-coded byte (after the SOS
 * segment), walking marker segments by their lengths; 0 when the walk does not reach a
 * baseline or extended sequential Huffman frame (SOF0 / SOF1) followed by a scan. */
static int find_scan(const uint8_t *p, size_t n, size_t *sof, size_t *es) {
    size_t i = 2, at;
    uint8_t m;
    *sof = 0;
    while (sv_jm_next(p, n, &i, &m, &at)) {
        if (sv_jm_standalone(m)) return 0;
        if (m == 0xC0 || m == 0xC1) {
            if (i - at < 2 + 8) return 0;
            *sof = at;
        } else if (m >= 0xC2 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC) {
            return 0; /* progressive, lossless, arithmetic or hierarchical */
        } else if (m == 0xDA) {
            *es = i;
            return *sof != 0;
        }
    }
    return 0;
}

/* Grow *buf to hold `need` bytes. */
static int reserve(uint8_t **buf, size_t *cap, size_t need) {
    if (need <= *cap) return 1;
    uint8_t *q = realloc(*buf, need);
    if (!q) return 0;
    *buf = q;
    *cap = need;
    return 1;
}

static unsigned long g_cuts;
unsigned long sv_jpeg_restart_cuts(void) { return __atomic_load_n(&g_cuts, __ATOMIC_RELAXED); }

static int imin(int a, int b) { return a < b ? a : b; }
static int imax(int a, int b) { return a > b ? a : b; }

int sv_jpeg_restart_sub(const uint8_t *p, size_t n, const sv_jpeg_rst_layout *lay, int x0, int y0, int x1, int y1,
                        uint8_t **buf, size_t *cap, sv_jpeg_rst_sub *sub, sv_status *st) {
    const int W = lay->w, H = lay->h, ri = lay->interval;
    if (ri <= 0 || lay->mcu_w <= 0 || lay->mcu_h <= 0 || W <= 0 || H <= 0) return 0;
    const int mpr = (W + lay->mcu_w - 1) / lay->mcu_w, mrows = (H + lay->mcu_h - 1) / lay->mcu_h;
    /* interval geometry: `cols` intervals per MCU row, or one interval of `krows` MCU rows */
    int cols, krows, iw, ih;
    if (mpr % ri == 0) {
        cols = mpr / ri, krows = 1;
        iw = ri * lay->mcu_w, ih = lay->mcu_h;
    } else if (ri % mpr == 0) {
        cols = 1, krows = ri / mpr;
        iw = mpr * lay->mcu_w, ih = krows * lay->mcu_h;
    } else {
        return 0;
    }
    const long total = (long)cols * (((long)mrows + krows - 1) / krows);
    x0 = imax(0, imin(x0, W)), x1 = imax(0, imin(x1, W));
    y0 = imax(0, imin(y0, H)), y1 = imax(0, imin(y1, H));
    if (x1 <= x0 || y1 <= y0) return 0;
    const int ca = x0 / iw, cb = (x1 + iw - 1) / iw, ra = y0 / ih, rb = (y1 + ih - 1) / ih;
    if (ra == 0 && ca == 0 && cb == cols) return 0; /* the plain region decode reads the same */

    if (total > (long)(n / 2)) return 0; /* more intervals than the data has room for markers */
    size_t sof, es;
    if (!find_scan(p, n, &sof, &es)) return 0;
    /* The start of every interval, and where the scan ends. The whole scan is walked: the markers
     * are numbered modulo 8 only, so 8 lost or extra ones before or inside the region would map
     * an interval onto another's bytes, which decode without complaint. Exactly total - 1 markers
     * in sequence, then the marker that ends the scan, or no cut (libjpeg then meets the damage). */
    size_t *starts = malloc(sizeof(size_t) * (size_t)(total + 1));
    if (!starts) {
        *st = SV_FAIL(SV_ERR_OOM, "jpeg: restart index of %ld intervals", total + 1);
        return -1;
    }
    long k = 0;
    size_t i = es;
    starts[0] = es;
    while (k < total) {
        i = sv_jm_entropy_marker(p, n, i);
        if (i >= n) break;
        const uint8_t m = p[i + 1];
        if (sv_jm_is_rst(m)) {
            if (m != 0xD0 + (k & 7) || k + 1 >= total) break; /* out of sequence, or one too many */
            starts[++k] = i + 2;
            i += 2;
            continue;
        }
        /* the marker that ends the scan (or fill bytes: not cut) */
        if (m != 0xFF && k == total - 1) starts[++k] = i + 2;
        break;
    }
    if (k < total) { /* the intervals are not all there, or not all in sequence */
        free(starts);
        return 0;
    }
    /* the end of interval j is starts[j + 1] - 2 (its closing marker) */
    size_t body = 0;
    for (int r = ra; r < rb; r++)
        for (int c = ca; c < cb; c++) {
            const long j = (long)r * cols + c;
            body += starts[j + 1] - 2 - starts[j] + 2;
        }
    if (!reserve(buf, cap, es + body + 2)) {
        free(starts);
        *st = SV_FAIL(SV_ERR_OOM, "jpeg: cannot allocate %zu bytes for a restart cut", es + body + 2);
        return -1;
    }
    uint8_t *q = *buf;
    memcpy(q, p, es);
    const int sx = ca * iw, sy = ra * ih, sw = imin(W, cb * iw) - sx, sh = imin(H, rb * ih) - sy;
    q[sof + 5] = (uint8_t)(sh >> 8), q[sof + 6] = (uint8_t)sh;
    q[sof + 7] = (uint8_t)(sw >> 8), q[sof + 8] = (uint8_t)sw;
    size_t o = es;
    long out = 0;
    for (int r = ra; r < rb; r++)
        for (int c = ca; c < cb; c++, out++) {
            const long j = (long)r * cols + c;
            if (out > 0) {
                q[o++] = 0xFF;
                q[o++] = (uint8_t)(0xD0 + ((out - 1) & 7));
            }
            const size_t len = starts[j + 1] - 2 - starts[j];
            memcpy(q + o, p + starts[j], len);
            o += len;
        }
    q[o++] = 0xFF;
    q[o++] = 0xD9;
    free(starts);
    *sub = (sv_jpeg_rst_sub){sx, sy, sw, sh, o};
    __atomic_add_fetch(&g_cuts, 1, __ATOMIC_RELAXED);
    return 1;
}

/* ---- writing restart markers (lossless transcode) ---- */

typedef struct tc_state {
    struct jpeg_decompress_struct d;
    struct jpeg_compress_struct c;
    struct jpeg_error_mgr de, ce;
    jmp_buf jb; /* both error managers return here */
    char msg[JMSG_LENGTH_MAX];
    unsigned char *out;
    unsigned long out_len;
    int incomplete; /* a progressive input with coefficient bits never sent (tc_run) */
} tc_state;

static void tc_error_exit(j_common_ptr ci) {
    tc_state *s = ci->client_data;
    (*ci->err->format_message)(ci, s->msg);
    longjmp(s->jb, 1);
}

static void tc_emit(j_common_ptr ci, int level) {
    if (level < 0) tc_error_exit(ci); /* warnings are errors, as in every decode */
}

/* The transcode proper; errors longjmp to tc_call's frame. */
static void tc_run(tc_state *s, const uint8_t *data, size_t len, int mcus, int fit_row) {
    jpeg_mem_src(&s->d, data, (unsigned long)len);
    jpeg_save_markers(&s->d, JPEG_COM, 0xFFFF);
    for (int m = 0; m < 16; m++) jpeg_save_markers(&s->d, JPEG_APP0 + m, 0xFFFF);
    jpeg_read_header(&s->d, TRUE);
    jvirt_barray_ptr *coef = jpeg_read_coefficients(&s->d);
    /* A progressive file whose scans leave coefficient bits unsent decodes with libjpeg's block
     * smoothing filling them in; a sequential copy holds only the sent bits, so its pixels would
     * differ. Such a file is refused (the caller may keep it as it is). */
    if (s->d.progressive_mode && s->d.coef_bits)
        for (int c = 0; c < s->d.num_components; c++)
            for (int k = 0; k < DCTSIZE2; k++)
                if (s->d.coef_bits[c][k] != 0) {
                    s->incomplete = 1;
                    return;
                }
    jpeg_copy_critical_parameters(&s->d, &s->c);
    s->c.optimize_coding = TRUE;
    if (fit_row) { /* MCUs per row of the (interleaved, or single-component) output scan */
        const int mcu_w = s->d.num_components == 1 ? 8 : 8 * s->d.max_h_samp_factor;
        const int mpr = ((int)s->d.image_width + mcu_w - 1) / mcu_w;
        if (mcus >= mpr) {
            mcus = mcus / mpr * mpr;
        } else {
            while (mpr % mcus) mcus--;
        }
    }
    s->c.restart_interval = (unsigned)mcus;
    jpeg_mem_dest(&s->c, &s->out, &s->out_len);
    jpeg_write_coefficients(&s->c, coef);
    for (jpeg_saved_marker_ptr m = s->d.marker_list; m; m = m->next) {
        /* libjpeg writes its own JFIF and Adobe markers from the copied parameters */
        if (s->c.write_JFIF_header && m->marker == JPEG_APP0 && m->data_length >= 5 && !memcmp(m->data, "JFIF", 5))
            continue;
        if (s->c.write_Adobe_marker && m->marker == JPEG_APP0 + 14 && m->data_length >= 5 &&
            !memcmp(m->data, "Adobe", 5))
            continue;
        jpeg_write_marker(&s->c, m->marker, m->data, m->data_length);
    }
    jpeg_finish_compress(&s->c);
    jpeg_finish_decompress(&s->d);
}

/* The setjmp frame: nothing here changes after setjmp. */
static int tc_call(tc_state *s, const uint8_t *data, size_t len, int mcus, int fit_row) {
    if (setjmp(s->jb)) return -1;
    tc_run(s, data, len, mcus, fit_row);
    return 0;
}

sv_status sv_jpeg_add_restarts(sv_jpeg_ctx *c, const uint8_t *data, size_t len, int mcus, int fit_row,
                               const uint8_t **out, size_t *out_len) {
    if (mcus < 1 || mcus > 65535) return SV_FAIL(SV_ERR_INVALID, "jpeg restarts: %d MCUs not in 1..65535", mcus);
    if (len < 4 || data[0] != 0xFF || data[1] != 0xD8) return SV_FAIL(SV_ERR_FORMAT, "not a JPEG (no SOI marker)");
    tc_state *s = calloc(1, sizeof *s);
    if (!s) return SV_FAIL(SV_ERR_OOM, "jpeg restarts: transcoder state");
    s->d.err = jpeg_std_error(&s->de);
    s->c.err = jpeg_std_error(&s->ce);
    s->de.error_exit = s->ce.error_exit = tc_error_exit;
    s->de.emit_message = s->ce.emit_message = tc_emit;
    s->d.client_data = s->c.client_data = s;
    jpeg_create_decompress(&s->d);
    jpeg_create_compress(&s->c);
    sv_status st = SV_OK;
    if (tc_call(s, data, len, mcus, fit_row) < 0) {
        st = SV_FAIL(SV_ERR_CORRUPT, "jpeg restarts: %s", s->msg);
    } else if (s->incomplete) {
        st = SV_FAIL(SV_ERR_UNSUPPORTED,
                     "jpeg restarts: a progressive JPEG whose scans leave coefficient bits unsent (libjpeg smooths "
                     "them when decoding): a sequential rewrite would change its pixels");
    } else {
        if (s->out_len > c->jbuf_cap) {
            uint8_t *q = realloc(c->jbuf, s->out_len);
            if (!q)
                st = SV_FAIL(SV_ERR_OOM, "jpeg restarts: cannot allocate %lu bytes", s->out_len);
            else
                c->jbuf = q, c->jbuf_cap = s->out_len;
        }
        if (st == SV_OK) {
            memcpy(c->jbuf, s->out, s->out_len);
            *out = c->jbuf;
            *out_len = s->out_len;
        }
    }
    jpeg_destroy_compress(&s->c);
    jpeg_destroy_decompress(&s->d);
    free(s->out);
    free(s);
    return st;
}
