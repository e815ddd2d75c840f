/* Fuzz target: command-line flags and --config files (app/flags.c). Input: u16 config length,
 * the config file bytes, then NUL-separated argv words (argv[0] is the subcommand). The flag
 * table covers every flag type the commands use. Parsed values must respect their ranges. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "app/flags.h"
#include "fuzz_util.h"

#define MAX_ARGS 24

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_quiet();
    fuzz_in in = {data, size};
    size_t clen;
    const uint8_t *cfg = fuzz_take(&in, fuzz_u16(&in), &clen);
    char cpath[600];
    fuzz_path(cpath, sizeof cpath, "run.toml");
    fuzz_write_file(cpath, cfg, clen);

    /* argv words live in one NUL-terminated copy of the rest of the input */
    char *words = malloc(in.n + 1);
    if (!words) abort();
    memcpy(words, in.p, in.n);
    words[in.n] = 0;
    char *argv[MAX_ARGS + 3];
    int argc = 0;
    argv[argc++] = "train";
    argv[argc++] = "--config";
    argv[argc++] = cpath;
    for (char *w = words; w < words + in.n && argc < MAX_ARGS + 3; w += strlen(w) + 1) argv[argc++] = w;

    int steps = 10, recompute = 0;
    long long seed = 0;
    double lr = 1e-3;
    const char *model = "vit-ti16", *out = NULL;
    /* clang-format off: one flag per line */
    sv_flag flags[] = {{"steps", SV_FLAG_INT, &steps, 0, 1000000, "steps", 0},
                       {"seed", SV_FLAG_I64, &seed, -1e15, 1e15, "seed", 0},
                       {"lr", SV_FLAG_DOUBLE, &lr, 0, 10, "learning rate", 0},
                       {"model", SV_FLAG_STR, &model, 0, 0, "model", 0},
                       {"out", SV_FLAG_STR, &out, 0, 0, "output dir", 0},
                       {"recompute", SV_FLAG_BOOL, &recompute, 0, 0, "recompute", 0},
                       {"batch-size", SV_FLAG_INT, &steps, 1, 4096, "batch", 0},
                       SV_FLAG_END};
    /* clang-format on */
    sv_cmd_spec spec = {"train", "shardvit train [flags]", "fuzzing", 2};
    char *pos[2];
    int npos = -1;
    int rc = sv_flags_parse(&spec, flags, argc, argv, pos, &npos);
    if (rc != 0 && rc != 1 && rc != 2) abort();
    if (rc == 0) {
        if (npos < 0 || npos > 2) abort();
        if (steps < 0 || steps > 1000000 || !(lr >= 0 && lr <= 10) || seed < -1000000000000000LL ||
            seed > 1000000000000000LL || (recompute != 0 && recompute != 1) || !model || !*model)
            abort();
        sv_flags_dump(flags, stdout);
        (void)sv_flag_seen(flags, "lr");
        for (int i = 0; i < npos; i++) (void)sv_parse_bytes(pos[i]);
    }
    free(words);
    return 0;
}
