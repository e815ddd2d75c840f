/* Walking a JPEG stream's structure (ISO/IEC 10918-1 B.1): marker segments by their lengths, and
 * entropy-coded data up to the marker that ends it. Shared by the scan-count guard (jpeg.c) and
 * the restart-marker cut (jpeg_restart.c); byte offsets into p[0, n), never read past n. */
#ifndef SV_DATA_JPEG_MARKERS_H
#define SV_DATA_JPEG_MARKERS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline int sv_jm_is_rst(uint8_t m) { return m >= 0xD0 && m <= 0xD7; }

/* Markers without a length field: TEM, SOI, EOI, RST0-7. */
static inline int sv_jm_standalone(uint8_t m) { return m == 0x01 || m == 0xD8 || m == 0xD9 || sv_jm_is_rst(m); }

/* The marker at p[*i], after any fill bytes (FF FF ...): its code in *m and the offset of its FF
 * in *at; *i moves past the marker and its segment (a standalone marker has none). 0 when p[*i]
 * is not a marker, or a segment's length is below 2 or runs past n (*i unchanged then). */
static inline int sv_jm_next(const uint8_t *p, size_t n, size_t *i, uint8_t *m, size_t *at) {
    size_t k = *i;
    if (k + 1 >= n || p[k] != 0xFF) return 0;
    while (k + 2 < n && p[k + 1] == 0xFF) k++; /* fill bytes */
    const uint8_t c = p[k + 1];
    if (c == 0xFF || c == 0x00) return 0;
    size_t end = k + 2;
    if (!sv_jm_standalone(c)) {
        if (k + 4 > n) return 0;
        const size_t seg = (size_t)p[k + 2] << 8 | p[k + 3];
        if (seg < 2 || k + 2 + seg > n) return 0;
        end = k + 2 + seg;
    }
    *m = c, *at = k, *i = end;
    return 1;
}

/* In entropy-coded data from p[i]: the offset of the next FF that is not a stuffed data byte
 * (FF 00), i.e. of a restart marker, a fill byte or the marker that ends the data; n when there
 * is none (an FF as the very last byte counts as none). */
static inline size_t sv_jm_entropy_marker(const uint8_t *p, size_t n, size_t i) {
    while (i < n) {
        const uint8_t *ff = memchr(p + i, 0xFF, n - i);
        if (!ff || (size_t)(ff - p) + 1 >= n) return n;
        i = (size_t)(ff - p);
        if (p[i + 1] != 0x00) return i;
        i += 2;
    }
    return n;
}

/* The end of entropy-coded data from p[i]: the offset of the first marker other than RSTn (n
 * when the data runs to the end). */
static inline size_t sv_jm_entropy_end(const uint8_t *p, size_t n, size_t i) {
    for (;;) {
        i = sv_jm_entropy_marker(p, n, i);
        if (i >= n || !sv_jm_is_rst(p[i + 1])) return i;
        i += 2;
    }
}

#endif
