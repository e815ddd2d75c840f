/* ra_interp_dump: the RandAugment geometry of data/randaug.h on raw bytes, for
 * tests/data/ra_interp_check.py to compare with Pillow and timm.
 *
 *   ra_interp_dump geom SIDE C OP ARG INTERP < in.raw > out.raw
 *       one op (sv_randaug_op_name, e.g. Rotate) with its final argument and resampling
 *   ra_interp_dump run SIDE C KEY AA INTERP < in.raw > out.raw
 *       timm's RandAugment string AA with --aa-interp INTERP on stream KEY; the applied layers
 *       are printed to stderr, one "OP ARG INTERP" line each (ARG with 17 digits)
 *
 * in.raw / out.raw: SIDE x SIDE x C bytes (HWC); the fill is 124, 116, 104 (C = 3) or 124. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "data/randaug.h"

static int read_img(uint8_t *img, size_t n) { return fread(img, 1, n, stdin) == n; }

int main(int argc, char **argv) {
    if (argc != 7 || (strcmp(argv[1], "geom") && strcmp(argv[1], "run"))) {
        fprintf(stderr, "usage: ra_interp_dump geom|run SIDE C OP|KEY ARG|AA INTERP < in > out\n");
        return 2;
    }
    int side = atoi(argv[2]), c = atoi(argv[3]);
    sv_ra_interp interp;
    if (side < 1 || side > 4096 || (c != 1 && c != 3) || sv_randaug_interp_parse(argv[6], &interp) != SV_OK) {
        fprintf(stderr, "ra_interp_dump: bad SIDE, C or INTERP\n");
        return 2;
    }
    size_t n = (size_t)side * (size_t)side * (size_t)c;
    uint8_t *img = malloc(n), *scratch = malloc(n), fill[3] = {124, 116, 104};
    if (!img || !scratch || !read_img(img, n)) {
        fprintf(stderr, "ra_interp_dump: could not read %zu bytes\n", n);
        return 1;
    }
    if (!strcmp(argv[1], "geom")) {
        sv_ra_layer l = {SV_RA_NUM_OPS, strtod(argv[5], NULL), interp};
        for (int op = 0; op < SV_RA_NUM_OPS; op++)
            if (!strcmp(argv[4], sv_randaug_op_name((sv_ra_op)op))) l.op = (sv_ra_op)op;
        if (l.op == SV_RA_NUM_OPS) {
            fprintf(stderr, "ra_interp_dump: unknown op %s\n", argv[4]);
            return 2;
        }
        sv_randaug_layer_apply(&l, img, side, c, fill, scratch);
    } else {
        sv_randaug_timm t;
        if (sv_randaug_timm_parse(argv[5], &t) != SV_OK || t.n > 16) {
            fprintf(stderr, "ra_interp_dump: %s\n", sv_err_msg());
            return 2;
        }
        t.interp = interp;
        uint64_t key = strtoull(argv[4], NULL, 0);
        sv_ra_layer layers[16];
        int k = sv_randaug_timm_plan(&t, key, side, layers);
        for (int i = 0; i < k; i++)
            fprintf(stderr, "%s %.17g %s\n", sv_randaug_op_name(layers[i].op), layers[i].arg,
                    sv_randaug_interp_name(layers[i].interp));
        sv_randaug_timm_run(&t, key, img, side, c, fill, scratch);
    }
    fwrite(img, 1, n, stdout);
    free(img);
    free(scratch);
    return 0;
}
