/* shardvit data: JPEG decode/encode (libjpeg-turbo): whole images and encoding through the
 * TurboJPEG API, region decodes (the loader's path) through the libjpeg API, which has
 * jpeg_skip_scanlines/jpeg_crop_scanline (TurboJPEG 2.1 has no partial decode).
 *
 * A sv_jpeg_ctx holds one TurboJPEG decompressor + compressor, one libjpeg decompressor and
 * growable pixel buffers; it is NOT thread-safe: each worker thread owns one. Buffers grow to
 * the largest image seen and are then reused (libjpeg allocates its per-image working memory
 * itself). */
#ifndef SV_DATA_JPEG_H
#define SV_DATA_JPEG_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

typedef struct sv_jpeg_ctx {
    void *dec, *enc; /* tjhandle, created lazily */
    void *lj;        /* libjpeg decompressor for region decodes, created lazily */
    uint8_t *pix;    /* decoded pixels (HWC) */
    size_t pix_cap;
    uint8_t *jbuf; /* encoder output */
    size_t jbuf_cap;
    uint8_t *sub; /* the restart intervals a region decode reads (data/jpeg_restart.h) */
    size_t sub_cap;
} sv_jpeg_ctx;

/* Decode-cost bound: a JPEG with more scans than this is refused (SV_ERR_CORRUPT, message "more
 * than 100 scans") by every decode below. Each scan of a progressive JPEG is a pass over the
 * whole coefficient buffer, so a valid but hostile file of a few MB with ~700 scans costs tens of
 * seconds; real encoders write at most ~10 (libjpeg's default script: 10 for colour, 6 for gray)
 * and baseline JPEGs 1-4. libjpeg-turbo's own fuzzers use 500 (TurboJPEG 3's TJPARAM_SCANLIMIT);
 * 100 keeps a tenfold margin over real files and a fifth of their worst case. The region
 * decoder counts scans as libjpeg reads them (progress monitor, libjpeg's input_scan_number);
 * the whole-image TurboJPEG 2.1 path, which has no scan limit, counts SOS markers first. */
#define SV_JPEG_MAX_SCANS 100

void sv_jpeg_ctx_init(sv_jpeg_ctx *c);
void sv_jpeg_ctx_free(sv_jpeg_ctx *c);

/* Parse the header only: image size and components (1 = grayscale, 3 = colour, 4 = CMYK).
 * Fails with SV_ERR_FORMAT (TurboJPEG's message) on anything that is not a JPEG. */
sv_status sv_jpeg_header(sv_jpeg_ctx *c, const uint8_t *data, size_t len, int *w, int *h, int *comps);

/* Decode at scale 1/denom (denom in {1, 2, 4, 8}: DCT-domain scaling) into c->pix as
 * (*w, *h, channels) HWC bytes; channels 1 = luminance, 3 = RGB (grayscale JPEGs expand).
 * Any libjpeg warning (truncated data, corrupt segment) is an error: SV_ERR_CORRUPT, and so is
 * a stream with more than SV_JPEG_MAX_SCANS scans (refused before decoding). */
sv_status sv_jpeg_decode(sv_jpeg_ctx *c, const uint8_t *data, size_t len, int channels, int denom, int *w, int *h);

/* Pixels of a decoded region: rows [y0, y0 + h) and columns [x0, x0 + w) of the image as
 * decoded at scale 1/denom (full size fw x fh), HWC bytes with row stride w * channels. */
typedef struct sv_jpeg_region {
    const uint8_t *pix; /* points into the context's buffer: valid until its next decode */
    int x0, y0, w, h;
    int fw, fh;
} sv_jpeg_region;

/* Decode only what covers [x0, x1) x [y0, y1) (coordinates of the 1/denom-scaled image,
 * clamped to it) through the libjpeg API: rows above are skipped (entropy-decoded only), columns
 * outside are not inverse-transformed (jpeg_crop_scanline), rows below are not decoded at all.
 * The returned region may be larger than asked (iMCU alignment plus a margin that keeps chroma
 * upsampling at the cut away from the requested pixels): inside the request the pixels equal
 * those of sv_jpeg_decode (for sampling layouts TurboJPEG does not name, at a reduced scale:
 * those of a plain libjpeg decode, the region then decoded from the top at full width). A sequential JPEG with restart markers (whole MCU rows per interval,
 * or intervals dividing an MCU row) at scale 1 is cut first: only the restart intervals that
 * cover the region are entropy-decoded (data/jpeg_restart.h), the rows above and the columns
 * beside them are not even Huffman-decoded; the pixels are the same. Errors: as sv_jpeg_decode for everything up to the region's last
 * row, and SV_ERR_CORRUPT for a file without an end-of-image marker after its scan data (cut
 * short anywhere); corrupt entropy data below the region goes unnoticed (it is not used). A
 * stream with more than SV_JPEG_MAX_SCANS scans stops with SV_ERR_CORRUPT as libjpeg reaches
 * scan SV_JPEG_MAX_SCANS + 1 (before decoding its data). */
sv_status sv_jpeg_decode_region(sv_jpeg_ctx *c, const uint8_t *data, size_t len, int channels, int denom, int x0,
                                int y0, int x1, int y1, sv_jpeg_region *r);

/* The same in two steps, so the region can depend on the image size: open parses the header
 * (errors as sv_jpeg_header, plus the truncation check) and keeps `data` borrowed until
 * region_decode (which needs a successful open just before it) or the next open. */
sv_status sv_jpeg_region_open(sv_jpeg_ctx *c, const uint8_t *data, size_t len, int *w, int *h, int *comps);
sv_status sv_jpeg_region_decode(sv_jpeg_ctx *c, int channels, int denom, int x0, int y0, int x1, int y1,
                                sv_jpeg_region *r);

/* Encode w x h x channels HWC bytes (channels 1 -> grayscale JPEG, 3 -> 4:2:0 colour) at
 * quality 1..100; progressive when asked. *out points into c->jbuf (valid until the next
 * encode), *len is its size. */
sv_status sv_jpeg_encode(sv_jpeg_ctx *c, const uint8_t *pix, int w, int h, int channels, int quality, int progressive,
                         const uint8_t **out, size_t *len);

#endif
