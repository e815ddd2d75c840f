/* Fuzz target: class-list files (sv_classes_read), as found next to tar shards or given with
 * --classes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "data/dataset.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_quiet();
    char path[600];
    fuzz_path(path, sizeof path, "classes.txt");
    fuzz_write_file(path, data, size);
    char **names;
    int n;
    if (sv_classes_read(path, &names, &n) != SV_OK) return 0;
    if (n <= 0) abort();
    for (int k = 0; k < n; k++) {
        size_t L = strlen(names[k]);
        if (L == 0 || memchr(names[k], '\n', L)) abort();
    }
    free(names);
    return 0;
}
