/* Test helper: valid progressive JPEGs with an exact number of scans (libjpeg's compressor with
 * a custom scan script), for the decode-cost limit SV_JPEG_MAX_SCANS.
 *
 * A grayscale progressive JPEG can legally hold up to 704 scans: the DC scan plus up to 10
 * successive-approximation refinements of it (libjpeg allows Al <= 10 for 8-bit samples), and
 * each of the 63 AC coefficients in its own spectral band with up to 10 refinements. This
 * writes exactly `nscans` (2..704) such scans; every one is valid, so libjpeg decodes the file
 * without a warning and only a scan limit refuses it. restart > 0 puts a restart marker after
 * every `restart` MCUs (RSTn inside the entropy-coded data). */
#ifndef SV_TESTS_DATA_SCAN_JPEG_H
#define SV_TESTS_DATA_SCAN_JPEG_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
/* jpeglib.h needs FILE and size_t first */
#include <jpeglib.h>

#define SCAN_JPEG_MAX 704

static int scan_jpeg_add(jpeg_scan_info *s, int n, int ss, int se, int ah, int al) {
    s[n].comps_in_scan = 1;
    s[n].component_index[0] = 0;
    s[n].Ss = ss, s[n].Se = se, s[n].Ah = ah, s[n].Al = al;
    return n + 1;
}

/* The scan script: DC first (+ dc_ref refinements), then AC bands, each with its refinements. */
static int scan_jpeg_script(int nscans, jpeg_scan_info *s) {
    int ac = nscans - 1, dc_ref = 0;
    if (ac > 693) dc_ref = ac - 693, ac = 693;
    int n = scan_jpeg_add(s, 0, 0, 0, 0, dc_ref);
    for (int k = dc_ref; k >= 1; k--) n = scan_jpeg_add(s, n, 0, 0, k, k - 1);
    int bands = ac < 63 ? ac : 63, extra = ac - bands;
    for (int b = 0; b < bands; b++) {
        int ss = 1 + b * 63 / bands, se = (b + 1) * 63 / bands;
        int r = extra / bands + (b < extra % bands);
        n = scan_jpeg_add(s, n, ss, se, 0, r);
        for (int k = r; k >= 1; k--) n = scan_jpeg_add(s, n, ss, se, k, k - 1);
    }
    return n;
}

/* Encode a w x h grayscale test pattern with exactly nscans scans (1 = baseline, sequential);
 * *out is malloc'd (free it). Returns 0 on success. nscans = -1: a valid progressive file whose
 * two scans (DC, then AC 1-63 at Al = 1 with no refinement) leave the AC's last bit unsent,
 * which libjpeg's block smoothing fills in when decoding. */
static int scan_jpeg_make(int w, int h, int nscans, int restart, uint8_t **out, size_t *len) {
    if (nscans == 0 || nscans < -1 || nscans > SCAN_JPEG_MAX || w < 1 || h < 1) return -1;
    static jpeg_scan_info script[SCAN_JPEG_MAX];
    struct jpeg_compress_struct c;
    struct jpeg_error_mgr em;
    c.err = jpeg_std_error(&em);
    jpeg_create_compress(&c);
    unsigned char *buf = NULL;
    unsigned long blen = 0;
    jpeg_mem_dest(&c, &buf, &blen);
    c.image_width = (JDIMENSION)w;
    c.image_height = (JDIMENSION)h;
    c.input_components = 1;
    c.in_color_space = JCS_GRAYSCALE;
    jpeg_set_defaults(&c);
    jpeg_set_quality(&c, 90, TRUE);
    c.restart_interval = (unsigned)restart;
    if (nscans > 1) {
        int n = scan_jpeg_script(nscans, script);
        if (n != nscans) return -1;
        c.scan_info = script;
        c.num_scans = n;
    } else if (nscans == -1) {
        c.scan_info = script;
        c.num_scans = scan_jpeg_add(script, scan_jpeg_add(script, 0, 0, 0, 0, 0), 1, 63, 0, 1);
    }
    jpeg_start_compress(&c, TRUE);
    uint8_t *row = malloc((size_t)w);
    for (int y = 0; y < h; y++) {
        for (int x = 0; x < w; x++) row[x] = (uint8_t)((x * 7 + y * 13 + ((x ^ y) & 31) * 5) & 255);
        JSAMPROW rp = row;
        jpeg_write_scanlines(&c, &rp, 1);
    }
    free(row);
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
    *out = malloc(blen);
    memcpy(*out, buf, blen);
    *len = blen;
    free(buf);
    return 0;
}

/* Count SOS markers the simple way (for test assertions on well-formed files made here: no
 * FF DA can occur inside their entropy-coded data or segments). */
static inline int scan_jpeg_count_sos(const uint8_t *p, size_t n) {
    int k = 0;
    for (size_t i = 0; i + 1 < n; i++) k += p[i] == 0xFF && p[i + 1] == 0xDA;
    return k;
}

#endif
