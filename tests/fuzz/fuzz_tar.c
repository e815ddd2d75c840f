/* Fuzz target: WebDataset tar shards (ustar/pax/GNU headers, member names, .cls labels) through
 * sv_dataset_open on a shard file, then reading every indexed sample back. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "data/dataset.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_quiet();
    char path[600];
    fuzz_path(path, sizeof path, "shard-0.tar");
    fuzz_write_file(path, data, size);
    sv_dataset_opts o = sv_dataset_opts_default();
    sv_dataset *d;
    if (sv_dataset_open(path, &o, &d) != SV_OK) return 0;
    size_t n = sv_dataset_len(d);
    int K = sv_dataset_num_classes(d);
    if (n == 0 || K <= 0) abort();
    for (int k = 0; k < K && k < 64; k++)
        if (sv_dataset_class_name(d, k) == NULL) abort();
    uint8_t *buf = NULL;
    size_t cap = 0, len;
    for (size_t i = 0; i < n && i < 64; i++) {
        int lab = sv_dataset_label(d, i);
        if (lab < 0 || lab >= K) abort();
        char name[256];
        sv_dataset_sample_name(d, i, name, sizeof name);
        /* every indexed member lies inside the archive, so reading it must succeed */
        if (sv_dataset_read(d, i, &buf, &cap, &len) != SV_OK) abort();
        if (len > size) abort();
    }
    free(buf);
    sv_dataset_close(d);
    return 0;
}
