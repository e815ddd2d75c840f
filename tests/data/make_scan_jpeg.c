/* make_scan_jpeg OUT W H NSCANS: write a valid grayscale progressive JPEG with exactly NSCANS
 * scans (1..704) to OUT, for the shell tests of the decode-cost limit (tests/faults/
 * hostile_readers.sh); NSCANS "partial": two scans that leave coefficient bits unsent
 * (tests/data/prep_imagefolder.sh). See scan_jpeg.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scan_jpeg.h"

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: make_scan_jpeg OUT W H NSCANS\n");
        return 2;
    }
    uint8_t *j;
    size_t len;
    const int nscans = strcmp(argv[4], "partial") ? atoi(argv[4]) : -1;
    if (scan_jpeg_make(atoi(argv[2]), atoi(argv[3]), nscans, 0, &j, &len) != 0) {
        fprintf(stderr, "make_scan_jpeg: bad size or scan count (1..%d)\n", SCAN_JPEG_MAX);
        return 2;
    }
    FILE *f = fopen(argv[1], "wb");
    if (!f || fwrite(j, 1, len, f) != len || fclose(f) != 0) {
        perror(argv[1]);
        return 1;
    }
    printf("%s: %zu bytes, %d scans\n", argv[1], len, scan_jpeg_count_sos(j, len));
    free(j);
    return 0;
}
