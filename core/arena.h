/* shardvit core: bump arena over one caller-provided block.
 *
 * One arena per device, sized at start-up from the config (see the memory planner); every
 * buffer of a run is carved from it so a training step never allocates. The arena does not own
 * `base` (the backend allocated it). Allocations are aligned to `align` (power of two, >= 1).
 * sv_arena_mark/sv_arena_release give stack-like scratch regions. Byte accounting (`used`,
 * `peak`) feeds the memory report. */
#ifndef SV_CORE_ARENA_H
#define SV_CORE_ARENA_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

typedef struct sv_arena {
    uint8_t *base;
    size_t cap;
    size_t used;
    size_t peak;
    const char *name;
} sv_arena;

/* base may be NULL with cap 0 for a "dry run" arena that only counts (sv_arena_alloc then
 * returns NULL pointers but advances `used`); the planner uses that to size real arenas. */
void sv_arena_init(sv_arena *a, const char *name, void *base, size_t cap);

/* Carve `bytes` aligned to `align`. Fails with SV_ERR_OOM naming the arena and the shortfall, or,
 * counting arenas included, when the end would lie past 2^64 bytes (it never wraps); on failure
 * `used` is unchanged. */
sv_status sv_arena_alloc(sv_arena *a, size_t bytes, size_t align, void **out);

static inline size_t sv_arena_mark(const sv_arena *a) { return a->used; }
static inline void sv_arena_release(sv_arena *a, size_t mark) { a->used = mark; }

/* Round n up to a multiple of align (power of two). */
static inline size_t sv_align_up(size_t n, size_t align) { return (n + align - 1) & ~(align - 1); }

#endif
