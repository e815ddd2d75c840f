/* Fuzz target: IDX (MNIST / Fashion-MNIST) import through sv_prep_idx. The input is split into
 * an image file and a label file (first two bytes: image file length); both splits (train,
 * t10k) get the same files; the output tree is written below the scratch directory and must
 * stay there. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "data/prep.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_quiet();
    fuzz_in in = {data, size};
    uint8_t flags = fuzz_u8(&in);
    size_t ilen;
    const uint8_t *img = fuzz_take(&in, fuzz_u16(&in), &ilen);
    char src[600], out[600], p[700];
    fuzz_path(src, sizeof src, "idx");
    fuzz_path(out, sizeof out, "idx-out");
    fuzz_rm_tree(src);
    fuzz_rm_tree(out);
    mkdir(src, 0755);
    static const char *const names[4] = {"train-images-idx3-ubyte", "t10k-images-idx3-ubyte", "train-labels-idx1-ubyte",
                                         "t10k-labels-idx1-ubyte"};
    for (int i = 0; i < 4; i++) {
        snprintf(p, sizeof p, "%s/%s", src, names[i]);
        if (i < 2)
            fuzz_write_file(p, img, ilen);
        else
            fuzz_write_file(p, in.p, in.n);
    }
    sv_prep_opts o = sv_prep_opts_default();
    o.src = src;
    o.out = out;
    o.format = flags & 1 ? SV_PREP_TAR : SV_PREP_FOLDER;
    o.shard_size = 2;
    o.limit = 3;
    o.quality = 50;
    if (sv_prep_idx(&o, (flags >> 1) & 1) == SV_OK && (o.n_train > 3 || o.n_test > 3)) abort();
    return 0;
}
