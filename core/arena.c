#include "core/arena.h"

#include "core/checked.h"

void sv_arena_init(sv_arena *a, const char *name, void *base, size_t cap) {
    a->base = (uint8_t *)base;
    a->cap = cap;
    a->used = 0;
    a->peak = 0;
    a->name = name;
}

sv_status sv_arena_alloc(sv_arena *a, size_t bytes, size_t align, void **out) {
    SV_ASSERT(align > 0 && (align & (align - 1)) == 0);
    /* checked: a counting arena sizes whatever a plan asks for, and an end that wrapped past 2^64
     * would count as a small arena */
    uint64_t start, end;
    if (!sv_add_u64(a->used, align - 1, &start) || !sv_add_u64(start & ~(uint64_t)(align - 1), bytes, &end)) {
        *out = NULL;
        return SV_FAIL(SV_ERR_OOM, "arena '%s' exhausted: %zu bytes at offset %zu would end past 2^64 bytes", a->name,
                       bytes, a->used);
    }
    start &= ~(uint64_t)(align - 1);
    if (a->base && end > a->cap) {
        *out = NULL;
        return SV_FAIL(SV_ERR_OOM, "arena '%s' exhausted: need %zu bytes at offset %zu, capacity %zu", a->name, bytes,
                       (size_t)start, a->cap);
    }
    *out = a->base ? a->base + start : NULL;
    a->used = (size_t)end;
    if (a->used > a->peak) a->peak = a->used;
    return SV_OK;
}
