/* Import Debian's real Fashion-MNIST (dataset-fashion-mnist) into an ImageFolder tree and
 * check counts, per-class counts, labels against the source label file, and the time it takes.
 * Skips (77) when the package is not installed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "check.h"
#include "data/dataset.h"
#include "data/prep.h"

int main(void) {
    if (access(SV_FASHION_MNIST_DIR "/train-images-idx3-ubyte.gz", R_OK) != 0)
        SKIP("%s not present (install dataset-fashion-mnist)", SV_FASHION_MNIST_DIR);
    char root[] = "/tmp/sv_test_fmnist_XXXXXX";
    CHECK(mkdtemp(root));
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    sv_prep_opts o = sv_prep_opts_default();
    o.out = root;
    CHECK_OK(sv_prep_idx(&o, 1));
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double dt = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    fprintf(stderr, "imported 70000 Fashion-MNIST images in %.1f s\n", dt);
    CHECK(o.n_train == 60000 && o.n_test == 10000);
    CHECK(dt < 120); /* about 6 s on an idle 2-core machine; the bound only catches pathologies */
    for (int split = 0; split < 2; split++) {
        char spec[4200];
        snprintf(spec, sizeof spec, "%s/%s", root, split ? "test" : "train");
        sv_dataset *d;
        CHECK_OK(sv_dataset_open(spec, NULL, &d));
        size_t n = split ? 10000 : 60000;
        CHECK(sv_dataset_len(d) == n && sv_dataset_num_classes(d) == 10);
        /* source labels */
        gzFile f = gzopen(split ? SV_FASHION_MNIST_DIR "/t10k-labels-idx1-ubyte.gz"
                                : SV_FASHION_MNIST_DIR "/train-labels-idx1-ubyte.gz",
                          "rb");
        CHECK(f);
        uint8_t *lab = malloc(n + 8);
        CHECK(gzread(f, lab, (unsigned)(n + 8)) == (int)(n + 8));
        gzclose(f);
        int per[10] = {0};
        for (size_t i = 0; i < n; i++) {
            char name[4200];
            sv_dataset_sample_name(d, i, name, sizeof name);
            long s = strtol(strrchr(name, '/') + 1, NULL, 10);
            CHECK(s >= 0 && (size_t)s < n);
            int y = sv_dataset_label(d, i);
            CHECK(strcmp(sv_dataset_class_name(d, y), sv_fashion_mnist_classes[lab[8 + s]]) == 0);
            per[y]++;
        }
        for (int k = 0; k < 10; k++) CHECK(per[k] == (int)n / 10);
        free(lab);
        sv_dataset_close(d);
    }
    char cmd[4300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    CHECK(system(cmd) == 0);
    return 0;
}
