/* PyTorch's CPU generator (core/torch_rng.h) and timm's LR noise draw (core/lr_sched.h
 * sv_lr_sched_noise) against the real torch and timm.
 *
 * Always: the MT19937 known answer (the 10000th output of the default seed 5489 is 4123659995).
 * With $SHARDVIT_TEST_PYTHON (else exit 77 after the known answer): for 3000 seeds (small ones,
 * ones past 2^32 and near 2^63, whose low 32 bits alone seed torch's MT19937) the first three
 * torch.randn(1) of one generator (the r cos / cached r sin of one Box-Muller pair, then a new
 * pair) and the first two torch.rand(1) after a re-seed; and timm's Scheduler._calculate_noise
 * for 2000 (noise_seed, t, pct, std, type) cases, normal noise with redraws (|n| >= pct) and
 * uniform. argv[1]: torch_rng_ref.py, which compares every value exactly (== on the double). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "core/lr_sched.h"
#include "core/torch_rng.h"

static uint64_t seed_of(int i) {
    if (i % 5 == 1) return 0xffffffff00000000ull + (uint64_t)i * 977u; /* high bits torch ignores */
    if (i % 5 == 2) return 0x7fffffffffff0000ull + (uint64_t)i;        /* near 2^63 */
    return (uint64_t)i * 2654435761u % 100000u;
}

int main(int argc, char **argv) {
    sv_torch_gen g;
    sv_torch_gen_seed(&g, 5489);
    uint32_t x = 0;
    for (int i = 0; i < 10000; i++) x = sv_torch_gen_u32(&g);
    CHECK(x == 4123659995u);
    printf("mt19937 known answer: ok\n");
    const char *py = getenv("SHARDVIT_TEST_PYTHON");
    if (!py || !*py) {
        printf("SHARDVIT_TEST_PYTHON unset: torch comparison skipped\n");
        return 77;
    }
    CHECK(argc == 2);
    char path[] = "/tmp/shardvit-torch-rng-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    FILE *f = fdopen(fd, "w");
    CHECK(f != NULL);
    for (int i = 0; i < 3000; i++) {
        uint64_t s = seed_of(i);
        sv_torch_gen_seed(&g, s);
        double a = sv_torch_randn1(&g), b = sv_torch_randn1(&g), c = sv_torch_randn1(&g);
        sv_torch_gen_seed(&g, s);
        double u = sv_torch_rand1(&g), v = sv_torch_rand1(&g);
        fprintf(f, "gen %llu %.17g %.17g %.17g %.17g %.17g\n", (unsigned long long)s, a, b, c, u, v);
    }
    static const double pct_std[][2] = {{0.67, 1.0}, {0.3, 0.5}, {0.1, 1.0}, {0.5, 0.05}, {1.0, 2.0}};
    sv_lr_sched s = {.kind = SV_SCHED_COSINE, .t_initial = 1, .noise = SV_NOISE_FROM};
    for (int i = 0; i < 2000; i++) {
        s.noise_seed = (uint64_t)(i % 7) * 1000003u + (i % 3 ? 42 : 0);
        s.noise_pct = pct_std[i % 5][0];
        s.noise_std = pct_std[i % 5][1];
        s.noise_type = i % 4 == 3 ? SV_NOISE_UNIFORM : SV_NOISE_NORMAL;
        int64_t t = 1 + (int64_t)(i * 7919 % 50000);
        fprintf(f, "noise %llu %lld %.17g %.17g %s %.17g\n", (unsigned long long)s.noise_seed, (long long)t,
                s.noise_pct, s.noise_std, s.noise_type == SV_NOISE_UNIFORM ? "uniform" : "normal",
                sv_lr_sched_noise(&s, t));
    }
    /* outside the range, and at t = 0 (timm's constructor value), no noise */
    s.noise = SV_NOISE_RANGE;
    s.t_initial = 100;
    s.noise_range[0] = 0.2, s.noise_range[1] = 0.5;
    CHECK(sv_lr_sched_noise(&s, 19) == 0 && sv_lr_sched_noise(&s, 50) == 0 && sv_lr_sched_noise(&s, 20) != 0 &&
          sv_lr_sched_noise(&s, 49) != 0);
    s.noise_range[0] = 0;
    CHECK(sv_lr_sched_noise(&s, 0) == 0 && sv_lr_sched_noise(&s, 1) != 0);
    CHECK(fclose(f) == 0);
    fflush(stdout);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        execl(py, py, argv[1], path, (char *)NULL);
        _exit(127);
    }
    int ws;
    CHECK(waitpid(pid, &ws, 0) == pid);
    int rc = WIFEXITED(ws) ? WEXITSTATUS(ws) : 1;
    if (rc == 0)
        unlink(path);
    else
        fprintf(stderr, "torch generator check failed (rc %d); values kept in %s\n", rc, path);
    return rc == 0 ? 0 : 1;
}
