/* aa_dump: prints what sv_randaug_timm_parse makes of each argument ("ok m n mstd mmax inc p" or
 * "error") and then timm's level -> argument table as this project computes it
 * ("arg inc i magnitude negate value" for op i of timm's list at side 100), for
 * tests/data/aa_timm_check.py to compare with timm itself. */
#include <math.h>
#include <stdio.h>

#include "core/status.h"
#include "data/randaug.h"

int main(int argc, char **argv) {
    for (int a = 1; a < argc; a++) {
        sv_randaug_timm t;
        if (sv_randaug_timm_parse(argv[a], &t) == SV_OK)
            printf("ok %g %d %g %g %d %g\n", t.m, t.n, isinf(t.mstd) ? 1e9 : t.mstd, t.mmax, t.inc, t.p);
        else
            printf("error\n");
        sv_err_clear();
    }
    static const double mags[] = {0, 1, 2.5, 3, 5, 7.3, 9, 10};
    for (int inc = 0; inc < 2; inc++)
        for (int i = 0; i < SV_RA_TIMM_NUM_OPS; i++)
            for (size_t k = 0; k < sizeof mags / sizeof mags[0]; k++)
                for (int neg = 0; neg < 2; neg++)
                    printf("arg %d %d %g %d %.17g\n", inc, i, mags[k], neg,
                           sv_randaug_timm_arg(sv_randaug_timm_op(i), mags[k], inc, neg, 100));
    return 0;
}
