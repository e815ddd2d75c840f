/* shardvit prep: import IDX (MNIST, Fashion-MNIST), CIFAR binaries or an existing ImageFolder tree
 * of JPEGs, or generate a synthetic ImageNet-like set, as JPEG ImageFolder trees or WebDataset tar
 * shards. */
#include <stdio.h>
#include <string.h>

#include "app/commands.h"
#include "app/flags.h"
#include "ckpt/ckpt_out.h"
#include "core/log.h"
#include "data/prep.h"

int sv_cmd_prep(int argc, char **argv, const sv_proc *proc) {
    (void)proc;
    sv_prep_opts o = sv_prep_opts_default();
    const char *format = "folder";
    long long limit = 0, seed = 0;
    /* clang-format off: one flag per line */
    sv_flag flags[] = {
        {"out", SV_FLAG_STR, &o.out, 0, 0, "output directory (required)", 0},
        {"src", SV_FLAG_STR, &o.src, 0, 0,
         "source directory (fashion-mnist default: " SV_FASHION_MNIST_DIR "; imagefolder: "
         "SRC holding train/<class>/*.jpg, and val/ or test/ alike)",
         0},
        {"format", SV_FLAG_STR, &format, 0, 0, "folder (ImageFolder tree) | tar (WebDataset shards)", 0},
        {"quality", SV_FLAG_INT, &o.quality, 1, 100, "JPEG quality (not imagefolder: it copies the JPEGs)", 0},
        {"restart-mcus", SV_FLAG_INT, &o.restart_mcus, 0, 65535,
         "restart markers every at most N MCUs (region decodes skip what lies outside the crop; 0 = none; "
         "imagefolder: a lossless rewrite, else the bytes are copied)",
         0},
        {"shard-size", SV_FLAG_INT, &o.shard_size, 1, 1 << 30, "tar: samples per shard", 0},
        {"limit", SV_FLAG_I64, &limit, 0, 1e12,
         "at most this many samples per split (0 = all; imagefolder: spread over the classes)", 0},
        {"workers", SV_FLAG_INT, &o.workers, 1, SV_PREP_MAX_WORKERS,
         "imagefolder: threads that read, check and rewrite the images while one writes them in order "
         "(default: the CPUs the process may use; 1 = one image at a time; the output is the same for any N)",
         0},
        {"classes", SV_FLAG_INT, &o.classes, 1, 100000, "synthetic: number of classes", 0},
        {"per-class", SV_FLAG_INT, &o.per_class, 1, 1 << 24, "synthetic: train images per class", 0},
        {"test-per-class", SV_FLAG_INT, &o.test_per_class, 0, 1 << 24, "synthetic: test images per class", 0},
        {"width", SV_FLAG_INT, &o.width, 8, 8192, "synthetic: image width", 0},
        {"height", SV_FLAG_INT, &o.height, 8, 8192, "synthetic: image height", 0},
        {"seed", SV_FLAG_I64, &seed, 0, 9.2e18, "synthetic: content seed", 0},
        SV_FLAG_END};
    /* clang-format on */
    sv_cmd_spec spec = {"prep",
                        "shardvit prep fashion-mnist|mnist|cifar10|cifar100|synthetic|imagefolder --out DIR [flags]",
                        "Convert a dataset into JPEG files shardvit trains on: DIR/train/<class>/*.jpg and "
                        "DIR/test/<class>/*.jpg (or tar shards with --format tar), plus DIR/classes.txt and "
                        "DIR/" SV_PREP_MARKER " (written last). DIR must be new or empty; a DIR holding the same "
                        "import is left as it is, anything else is refused. Datasets: fashion-mnist, mnist (IDX "
                        "files), cifar10, cifar100 (binary batches), synthetic (generated), imagefolder (an "
                        "ImageFolder tree of JPEGs, --src SRC: SRC/train/<class>/*.jpg and, if present, SRC/val or "
                        "else SRC/test, which becomes DIR/test; each file is checked by decoding it and copied "
                        "unchanged, or rewritten losslessly with --restart-mcus N).",
                        1};
    char *pos[1];
    int npos;
    int rc = sv_cmd_parse(&spec, flags, argc, argv, pos, &npos, 1,
                          "missing dataset (fashion-mnist|mnist|cifar10|cifar100|synthetic|imagefolder)");
    if (rc >= 0) return rc;
    if (!o.out) return sv_cmd_usage_error("prep", "--out: missing (output directory)");
    if (!strcmp(format, "folder"))
        o.format = SV_PREP_FOLDER;
    else if (!strcmp(format, "tar"))
        o.format = SV_PREP_TAR;
    else
        return sv_cmd_usage_error("prep", "--format: invalid value '%s' (expected folder or tar)", format);
    o.limit = (uint64_t)limit;
    o.seed = (uint64_t)seed;
    const char *what = pos[0];
    if (strcmp(what, "fashion-mnist") && strcmp(what, "mnist") && strcmp(what, "cifar10") && strcmp(what, "cifar100") &&
        strcmp(what, "synthetic") && strcmp(what, "imagefolder"))
        return sv_cmd_usage_error(
            "prep", "unknown dataset '%s' (fashion-mnist|mnist|cifar10|cifar100|synthetic|imagefolder)", what);
    if (!strcmp(what, "mnist") && !o.src)
        return sv_cmd_usage_error("prep", "--src: required for mnist (directory of the IDX files)");
    if (!strncmp(what, "cifar", 5) && !o.src)
        return sv_cmd_usage_error("prep", "--src: required for %s (directory of the binary batches)", what);
    if (!strcmp(what, "imagefolder") && !o.src)
        return sv_cmd_usage_error("prep", "--src: required for imagefolder (the directory holding train/<class>/)");
    /* flags that would be ignored are refused: the user asked for something prep would not do */
    if (!strcmp(what, "synthetic") && (o.limit || o.src))
        return sv_cmd_usage_error("prep",
                                  "%s does not apply to synthetic (its sizes are --classes, --per-class and "
                                  "--test-per-class)",
                                  o.limit ? "--limit" : "--src");
    if (strcmp(what, "imagefolder") && sv_flag_seen(flags, "workers"))
        return sv_cmd_usage_error(
            "prep", "--workers applies to imagefolder only (%s is converted on the calling thread)", what);
    if (!strcmp(what, "imagefolder")) { /* it copies what the source holds */
        static const char *const synth_only[] = {"classes", "per-class", "test-per-class", "width",
                                                 "height",  "seed",      "quality"};
        for (size_t i = 0; i < sizeof synth_only / sizeof *synth_only; i++)
            if (sv_flag_seen(flags, synth_only[i]))
                return sv_cmd_usage_error("prep",
                                          "--%s does not apply to imagefolder (it copies the source's JPEG files, "
                                          "their classes and sizes as they are)",
                                          synth_only[i]);
    }
    if (o.format != SV_PREP_TAR && o.shard_size != sv_prep_opts_default().shard_size)
        SV_WARN("prep: --shard-size applies to --format tar; the image folders ignore it");
    /* never into a checkpoint: its retention (--keep) deletes step directories */
    char ck[4096];
    int in = sv_ckpt_out_in_step_dir(o.out, ck, sizeof ck);
    if (in)
        return sv_cmd_usage_error("prep", "--out %s is %s the checkpoint %s %s: choose a directory outside it", o.out,
                                  in == 1 ? "inside" : "the `latest` file of", in == 1 ? "step directory" : "root", ck);
    /* --out must be new, empty, or this very import done before: anything else is refused
     * before a byte is written (the importers check again) */
    int done;
    sv_status st = sv_prep_check_out(&o, what, &done);
    if (st != SV_OK) {
        fprintf(stderr, "shardvit prep: error: %s\n", sv_err_msg());
        return 2;
    }
    if (!strcmp(what, "fashion-mnist") || !strcmp(what, "mnist"))
        st = sv_prep_idx(&o, !strcmp(what, "fashion-mnist"));
    else if (!strncmp(what, "cifar", 5))
        st = sv_prep_cifar(&o, !strcmp(what, "cifar10") ? 10 : 100);
    else if (!strcmp(what, "imagefolder"))
        st = sv_prep_imagefolder(&o);
    else
        st = sv_prep_synthetic(&o);
    if (st != SV_OK) return sv_app_fail("prep", st);
    if (!o.reused) /* else the importer said "already prepared" */
        SV_INFO("prep %s: %llu train + %llu test images in %s", what, (unsigned long long)o.n_train,
                (unsigned long long)o.n_test, o.out);
    return 0;
}
