#include "fsdp/layout.h"

#include <stdlib.h>
#include <string.h>

#include "core/arena.h"

static void finish_unit(sv_layout *L, sv_unit *u, size_t *cursor) {
    size_t quantum = (size_t)L->shard_world * SV_FLAT_ALIGN;
    u->padded = (u->numel + quantum - 1) / quantum * quantum;
    if (u->padded == 0) u->padded = quantum;
    u->shard = u->padded / (size_t)L->shard_world;
    (void)cursor;
}

static void add_entries(sv_layout *L, sv_unit *u, int first_param, int count, int *next_entry) {
    for (int i = 0; i < count; i++) {
        sv_flat_entry *e = &L->entries[(*next_entry)++];
        e->param = first_param + i;
        e->offset = sv_align_up(u->numel, SV_FLAT_ALIGN);
        e->numel = L->params[first_param + i].numel;
        u->numel = e->offset + e->numel;
        u->n_entries++;
    }
}

sv_status sv_layout_build(sv_layout *L, const sv_vit_config *cfg, int head_zero_init, int shard_world,
                          size_t wrap_bytes) {
    memset(L, 0, sizeof *L);
    if (shard_world < 1) return SV_FAIL(SV_ERR_INVALID, "shard world %d must be >= 1", shard_world);
    if (cfg->depth + 1 > SV_MAX_UNITS) return SV_FAIL(SV_ERR_INVALID, "depth %d exceeds unit limit", cfg->depth);
    L->cfg = *cfg;
    L->shard_world = shard_world;
    L->n_params = sv_vit_num_params(cfg);
    L->params = calloc((size_t)L->n_params, sizeof *L->params);
    L->entries = calloc((size_t)L->n_params, sizeof *L->entries);
    if (!L->params || !L->entries) {
        sv_layout_free(L);
        return SV_FAIL(SV_ERR_OOM, "layout tables");
    }
    sv_vit_param_table(cfg, head_zero_init, L->params);
    int next = 0;
    sv_unit *root = &L->units[0];
    root->first_block = root->last_block = -1;
    root->first_entry = 0;
    const int root_nt = sv_vit_group_nt(cfg, -1), blk_nt = sv_vit_group_nt(cfg, 0);
    add_entries(L, root, 0, root_nt, &next);
    finish_unit(L, root, NULL);
    L->n_units = 1;

    size_t block_bytes = 0;
    for (int k = 0; k < blk_nt; k++) block_bytes += L->params[root_nt + k].numel * 4;
    int l = 0;
    while (l < cfg->depth) {
        sv_unit *u = &L->units[L->n_units++];
        u->first_block = l;
        u->first_entry = next;
        size_t bytes = 0;
        do {
            add_entries(L, u, sv_vit_param_index(cfg, l, 0), blk_nt, &next);
            bytes += block_bytes;
            l++;
        } while (l < cfg->depth && wrap_bytes > 0 && bytes + block_bytes <= wrap_bytes);
        u->last_block = l - 1;
        finish_unit(L, u, NULL);
        if (u->padded > L->max_padded) L->max_padded = u->padded;
    }
    for (int u = 0; u < L->n_units; u++) L->total_padded += L->units[u].padded;
    return SV_OK;
}

void sv_layout_free(sv_layout *L) {
    free(L->params);
    free(L->entries);
    L->params = NULL;
    L->entries = NULL;
}

sv_shard_piece sv_layout_piece(const sv_unit *u, const sv_flat_entry *e, int rank) {
    sv_shard_piece p = {0, 0, 0};
    size_t s0 = (size_t)rank * u->shard, s1 = s0 + u->shard;
    size_t t0 = e->offset, t1 = e->offset + e->numel;
    size_t b = t0 > s0 ? t0 : s0, end = t1 < s1 ? t1 : s1;
    if (b >= end) return p;
    p.tensor_begin = b - t0;
    p.count = end - b;
    p.shard_offset = b - s0;
    return p;
}

int sv_layout_unit_of_block(const sv_layout *L, int l) {
    for (int u = 1; u < L->n_units; u++)
        if (l >= L->units[u].first_block && l <= L->units[u].last_block) return u;
    return -1;
}

size_t sv_layout_max_shard(const sv_layout *L) {
    size_t m = 0;
    for (int u = 0; u < L->n_units; u++)
        if (L->units[u].shard > m) m = L->units[u].shard;
    return m;
}

size_t sv_layout_max_padded(const sv_layout *L) {
    size_t m = 0;
    for (int u = 0; u < L->n_units; u++)
        if (L->units[u].padded > m) m = L->units[u].padded;
    return m;
}
