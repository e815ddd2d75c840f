/* shardvit data: restart markers for region decodes (docs/data.md "Restart markers").
 *
 * A baseline JPEG's entropy-coded data is one bit stream: to reach a crop, every row above it,
 * and every column of those rows, must be Huffman-decoded. Restart markers cut the stream into
 * byte-aligned intervals of a fixed number of MCUs, each starting with fresh DC predictors, so
 * the intervals that cover a crop can be copied into a smaller, valid JPEG of their own and
 * decoded alone. sv_jpeg_restart_sub builds that smaller stream (the region decoder in jpeg.c
 * uses it when it saves work); sv_jpeg_add_restarts writes restart markers into a JPEG without
 * changing a coefficient (`shardvit prep --restart-mcus`), so a file decodes to the same pixels
 * with and without them. */
#ifndef SV_DATA_JPEG_RESTART_H
#define SV_DATA_JPEG_RESTART_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "data/jpeg.h"

/* Layout of a single-scan sequential Huffman JPEG, from its parsed header: image size, MCU size
 * in pixels, restart interval in MCUs (the DRI value). */
typedef struct sv_jpeg_rst_layout {
    int w, h, mcu_w, mcu_h, interval;
} sv_jpeg_rst_layout;

/* The smaller stream: image pixels [sx, sx + w) x [sy, sy + h) of the original, as a JPEG of
 * `len` bytes in the caller's buffer. */
typedef struct sv_jpeg_rst_sub {
    int sx, sy, w, h;
    size_t len;
} sv_jpeg_rst_sub;

/* Build into *buf (grown with realloc, *cap bytes) a JPEG holding just the restart intervals of
 * `p` (n bytes, layout `lay`) that cover [x0, x1) x [y0, y1) (clamped to the image): the
 * original's headers with the frame size changed, the intervals' bytes unchanged, the restart
 * markers between them renumbered, an end-of-image marker. The intervals must be whole MCU
 * rows or divide an MCU row; a stream whose markers are missing, out of sequence or preceded by
 * fill bytes is not cut (libjpeg then meets it whole and reports it); the whole scan is walked, so
 * a file with markers lost or added anywhere (the numbering is modulo 8) is not cut either. One
 * damage stays invisible without Huffman-decoding everything: markers all present and in
 * sequence but at the wrong places make the intervals decode as other parts of the image (a
 * corrupt file that libjpeg might also decode silently). Decoded, the smaller
 * stream gives the original's pixels except within 2 pixels of a side that is a cut (fancy
 * chroma upsampling treats it as an image edge): the caller widens its request by that.
 * Returns 1 (built), 0 (not applicable, or it would not save decoding: nothing to skip), or -1
 * with *st set (out of memory). */
int sv_jpeg_restart_sub(const uint8_t *p, size_t n, const sv_jpeg_rst_layout *lay, int x0, int y0, int x1, int y1,
                        uint8_t **buf, size_t *cap, sv_jpeg_rst_sub *sub, sv_status *st);

/* How many streams sv_jpeg_restart_sub has cut in this process (for tests and benchmarks). */
unsigned long sv_jpeg_restart_cuts(void);

/* Rewrite a JPEG (any libjpeg reads: baseline or progressive) as a sequential Huffman JPEG with a
 * restart marker every `mcus` MCUs (1..65535), optimised Huffman tables and the same DCT
 * coefficients and quantisation tables, so it decodes to exactly the same pixels; APPn and COM
 * segments are kept. With fit_row the interval is instead the largest that the region decoder
 * can cut at and that is at most `mcus`: a divisor of the MCUs in a row, or a whole number of
 * rows when `mcus` reaches a row. *out points into c->jbuf (valid until the next encode), *len is its size.
 * `data` may itself point into c->jbuf (an encode's output). SV_ERR_CORRUPT / SV_ERR_FORMAT for
 * input libjpeg refuses (any warning is an error); SV_ERR_UNSUPPORTED for a progressive JPEG
 * whose scans leave coefficient bits unsent (valid, but libjpeg's block smoothing fills them in
 * when decoding it, which a sequential copy cannot reproduce): keep such a file as it is. */
sv_status sv_jpeg_add_restarts(sv_jpeg_ctx *c, const uint8_t *data, size_t len, int mcus, int fit_row,
                               const uint8_t **out, size_t *out_len);

#endif
