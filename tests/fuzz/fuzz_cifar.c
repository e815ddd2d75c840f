/* Fuzz target: CIFAR-10/100 binary import through sv_prep_cifar, including the optional class
 * name list (batches.meta.txt / fine_label_names.txt), whose names become directory names: an
 * accepted list must never place anything outside the output directory. Input: flag byte,
 * u16 names-file length (0xffff = no file), names, then the batch bytes (every batch file gets
 * them). */
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
    int K = flags & 1 ? 100 : 10;
    uint16_t nl = fuzz_u16(&in);
    size_t nlen = 0;
    const uint8_t *names = nl == 0xffff ? NULL : fuzz_take(&in, nl, &nlen);
    char base[600], src[700], out[700], p[800];
    fuzz_path(base, sizeof base, "cifar");
    fuzz_rm_tree(base);
    mkdir(base, 0755);
    snprintf(src, sizeof src, "%s/src", base);
    snprintf(out, sizeof out, "%s/out", base);
    mkdir(src, 0755);
    static const char *const files[8] = {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin",
                                         "data_batch_5.bin", "test_batch.bin",   "train.bin",        "test.bin"};
    for (int i = 0; i < 8; i++) {
        snprintf(p, sizeof p, "%s/%s", src, files[i]);
        fuzz_write_file(p, in.p, in.n);
    }
    if (names) {
        snprintf(p, sizeof p, "%s/%s", src, K == 10 ? "batches.meta.txt" : "fine_label_names.txt");
        fuzz_write_file(p, names, nlen);
    }
    sv_prep_opts o = sv_prep_opts_default();
    o.src = src;
    o.out = out;
    o.format = flags & 2 ? SV_PREP_TAR : SV_PREP_FOLDER;
    o.shard_size = 2;
    o.limit = 2;
    o.quality = 50;
    (void)sv_prep_cifar(&o, K);
    /* nothing may appear in the scratch directory besides the source and output trees, nor
     * beside it */
    snprintf(p, sizeof p, "%s/evil", base);
    struct stat st;
    if (stat(p, &st) == 0) abort();
    char up[800];
    snprintf(up, sizeof up, "%s/../evil", base);
    if (stat(up, &st) == 0) abort();
    return 0;
}
