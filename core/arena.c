#include "core/arena.h"

void sv_arena_init(sv_arena *a, const char *name, void *base, size_t cap) {
    a->base = (uint8_t *)base;
    a->cap = cap;
    a->used = 0;
    a->peak = 0;
    a->name = name;
}

sv_status sv_arena_alloc(sv_arena *a, size_t bytes, size_t align, void **out) {
    SV_ASSERT(align > 0 && (align & (align - 1)) == 0);
    size_t start = sv_align_up(a->used, align);
    size_t end = start + bytes;
    if (a->base && end > a->cap) {
        *out = NULL;
        return SV_FAIL(SV_ERR_OOM, "arena '%s' exhausted: need %zu bytes at offset %zu, capacity %zu", a->name, bytes,
                       start, a->cap);
    }
    *out = a->base ? a->base + start : NULL;
    a->used = end;
    if (end > a->peak) a->peak = end;
    return SV_OK;
}
