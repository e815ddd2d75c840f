/* The bump arena (core/arena.h sv_arena_alloc): an end past 2^64 bytes is SV_ERR_OOM, in a real
 * arena and in a counting one (the planner's), with `used` unchanged; it never wraps to a small
 * offset that a plan would count as a small arena or a real arena would hand out. Aligned
 * offsets and the peak as before. */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "core/arena.h"

int main(void) {
    void *p;
    /* counting arena: sizes, alignment and peak */
    sv_arena c;
    sv_arena_init(&c, "count", NULL, 0);
    CHECK_OK(sv_arena_alloc(&c, 10, 1, &p));
    CHECK(p == NULL && c.used == 10);
    CHECK_OK(sv_arena_alloc(&c, 1, 64, &p));
    CHECK(c.used == 65 && c.peak == 65);

    /* an end past 2^64 bytes */
    CHECK(sv_arena_alloc(&c, SIZE_MAX - 10, 1, &p) == SV_ERR_OOM);
    CHECK(strstr(sv_err_msg(), "2^64") && strstr(sv_err_msg(), "count"));
    CHECK(c.used == 65 && c.peak == 65);
    CHECK(sv_arena_alloc(&c, SIZE_MAX, 256, &p) == SV_ERR_OOM);
    CHECK(c.used == 65);

    /* the largest end that fits, then the alignment itself past 2^64 */
    CHECK_OK(sv_arena_alloc(&c, SIZE_MAX - 65, 1, &p));
    CHECK(c.used == SIZE_MAX && c.peak == SIZE_MAX);
    sv_arena_release(&c, SIZE_MAX - 3);
    CHECK(sv_arena_alloc(&c, 0, 64, &p) == SV_ERR_OOM);
    CHECK(c.used == SIZE_MAX - 3);
    CHECK_OK(sv_arena_alloc(&c, 3, 1, &p));
    CHECK(c.used == SIZE_MAX);

    /* real arena: a wrapped end would lie inside the block and pass the capacity check */
    static uint8_t block[256];
    sv_arena r;
    sv_arena_init(&r, "dev", block, sizeof block);
    CHECK_OK(sv_arena_alloc(&r, 16, 16, &p));
    CHECK(p == block);
    CHECK_OK(sv_arena_alloc(&r, 8, 64, &p));
    CHECK(p == block + 64 && r.used == 72);
    CHECK(sv_arena_alloc(&r, SIZE_MAX - 8, 1, &p) == SV_ERR_OOM);
    CHECK(p == NULL && r.used == 72);
    CHECK(sv_arena_alloc(&r, 256, 1, &p) == SV_ERR_OOM); /* the ordinary shortfall */
    CHECK(strstr(sv_err_msg(), "capacity 256"));
    CHECK(r.used == 72 && r.peak == 72);
    printf("test_arena: all passed\n");
    return 0;
}
