/* Checkpoint index: built from an FSDP layout or another index, stored as index.json and read
 * back with full validation (ckpt/checkpoint.h, docs/checkpoints.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/checked.h"
#include "core/fileio.h"
#include "core/json.h"
#include "core/log.h"
#include "ckpt/checkpoint.h"
#include "ckpt/ckpt_meta.h"
#include "fsdp/fsdp.h"
#include "model/params.h"

#define FORMAT_NAME "shardvit-checkpoint"

void sv_ckpt_index_free(sv_ckpt_index *idx) {
    if (idx->files)
        for (int r = 0; r < idx->shard_world; r++) free(idx->files[r].chunks);
    free(idx->files);
    free(idx->units);
    free(idx->tensors);
    free(idx->meta.labels);
    memset(&idx->meta, 0, sizeof idx->meta);
    idx->files = NULL;
    idx->units = NULL;
    idx->tensors = NULL;
}

static void file_name(char *out, size_t cap, int rank, int world) {
    snprintf(out, cap, "shard_%05d-of-%05d.bin", rank, world);
}

/* Padding rule of fsdp/layout.c, and file offsets from the shard sizes. */
static void finish_units(sv_ckpt_index *idx) {
    uint64_t q = (uint64_t)idx->shard_world * SV_FLAT_ALIGN, off = 0;
    for (int u = 0; u < idx->n_units; u++) {
        sv_ckpt_unit *U = &idx->units[u];
        U->padded = (U->numel + q - 1) / q * q;
        if (U->padded == 0) U->padded = q;
        U->shard = U->padded / (uint64_t)idx->shard_world;
        U->file_offset = off;
        off += U->shard * 4 * (uint64_t)SV_CKPT_FILE_KINDS(idx);
    }
}

static uint64_t file_bytes(const sv_ckpt_index *idx) {
    const sv_ckpt_unit *U = &idx->units[idx->n_units - 1];
    return U->file_offset + U->shard * 4 * (uint64_t)SV_CKPT_FILE_KINDS(idx);
}

static sv_status alloc_tables(sv_ckpt_index *idx) {
    idx->units = calloc((size_t)idx->n_units, sizeof *idx->units);
    idx->tensors = calloc((size_t)idx->n_tensors, sizeof *idx->tensors);
    idx->files = calloc((size_t)idx->shard_world, sizeof *idx->files);
    if (!idx->units || !idx->tensors || !idx->files) {
        sv_ckpt_index_free(idx);
        return SV_FAIL(SV_ERR_OOM, "checkpoint index tables");
    }
    for (int r = 0; r < idx->shard_world; r++)
        file_name(idx->files[r].name, sizeof idx->files[r].name, r, idx->shard_world);
    return SV_OK;
}

static void finish_files(sv_ckpt_index *idx) {
    uint64_t b = file_bytes(idx);
    for (int r = 0; r < idx->shard_world; r++) idx->files[r].bytes = b;
}

sv_status sv_ckpt_index_from_layout(sv_ckpt_index *idx, const sv_layout *L, int world_size, const char *strategy,
                                    const sv_ckpt_train_state *st) {
    memset(idx, 0, sizeof *idx);
    idx->format_version = SV_CKPT_FORMAT_VERSION;
    idx->cfg = L->cfg;
    idx->world_size = world_size;
    snprintf(idx->strategy, sizeof idx->strategy, "%s", strategy);
    idx->shard_world = L->shard_world;
    if (st) idx->state = *st;
    idx->n_units = L->n_units;
    idx->n_tensors = L->n_params;
    SV_TRY(alloc_tables(idx));
    for (int u = 0; u < L->n_units; u++) {
        const sv_unit *lu = &L->units[u];
        idx->units[u].first_tensor = lu->first_entry;
        idx->units[u].n_tensors = lu->n_entries;
        idx->units[u].numel = lu->numel;
        for (int k = 0; k < lu->n_entries; k++) {
            const sv_flat_entry *e = &L->entries[lu->first_entry + k];
            const sv_param_info *p = &L->params[e->param];
            sv_ckpt_tensor *t = &idx->tensors[lu->first_entry + k];
            snprintf(t->name, sizeof t->name, "%s", p->name);
            t->ndim = p->ndim;
            for (int d = 0; d < p->ndim; d++) t->shape[d] = p->shape[d];
            t->offset = e->offset;
            t->numel = e->numel;
            t->unit = u;
        }
    }
    finish_units(idx);
    for (int u = 0; u < L->n_units; u++)
        if (idx->units[u].padded != L->units[u].padded) {
            sv_ckpt_index_free(idx);
            return SV_FAIL(SV_ERR_INVALID, "unit %d: layout padding %zu differs from the checkpoint rule %llu", u,
                           L->units[u].padded, (unsigned long long)idx->units[u].padded);
        }
    finish_files(idx);
    return SV_OK;
}

sv_status sv_ckpt_index_relayout(sv_ckpt_index *out, const sv_ckpt_index *in, int shard_world) {
    if (shard_world < 1 || shard_world > 99999)
        return SV_FAIL(SV_ERR_INVALID, "--world %d out of range [1, 99999]", shard_world);
    memset(out, 0, sizeof *out);
    out->format_version = SV_CKPT_FORMAT_VERSION;
    out->cfg = in->cfg;
    out->world_size = shard_world;
    /* the files a full_shard run of shard_world ranks saves (shard_grad_op's are the same files):
     * a no_shard (W = 1) or hybrid_shard (W = the group) name would contradict the new layout */
    snprintf(out->strategy, sizeof out->strategy, "%s",
             !strcmp(in->strategy, "shard_grad_op") ? "shard_grad_op" : "full_shard");
    out->shard_world = shard_world;
    out->state = in->state;
    out->n_units = in->n_units;
    out->n_tensors = in->n_tensors;
    SV_TRY(alloc_tables(out));
    sv_status mst = sv_ckpt_meta_copy(&out->meta, &in->meta);
    if (mst != SV_OK) {
        sv_ckpt_index_free(out);
        return mst;
    }
    memcpy(out->tensors, in->tensors, (size_t)in->n_tensors * sizeof *in->tensors);
    for (int u = 0; u < in->n_units; u++) {
        out->units[u].first_tensor = in->units[u].first_tensor;
        out->units[u].n_tensors = in->units[u].n_tensors;
        out->units[u].numel = in->units[u].numel;
    }
    finish_units(out);
    finish_files(out);
    return SV_OK;
}

int sv_ckpt_find_tensor(const sv_ckpt_index *idx, const char *name) {
    for (int t = 0; t < idx->n_tensors; t++)
        if (!strcmp(idx->tensors[t].name, name)) return t;
    return -1;
}

/* ---- index.json ------------------------------------------------------------------------ */

sv_status sv_ckpt_index_store(const sv_ckpt_index *idx, const char *dir) {
    sv_json_writer w;
    sv_json_writer_init(&w, 1);
    const sv_vit_config *c = &idx->cfg;
    const sv_ckpt_train_state *s = &idx->state;
    sv_json_obj_begin(&w);
    sv_json_key(&w, "format"), sv_json_str(&w, FORMAT_NAME);
    sv_json_key(&w, "format_version"), sv_json_i64(&w, SV_CKPT_FORMAT_VERSION);
    sv_json_key(&w, "model");
    sv_json_obj_begin(&w);
    sv_json_key(&w, "name"), sv_json_str(&w, c->name);
    sv_json_key(&w, "img"), sv_json_i64(&w, c->img);
    sv_json_key(&w, "patch"), sv_json_i64(&w, c->patch);
    sv_json_key(&w, "in_chans"), sv_json_i64(&w, c->in_chans);
    sv_json_key(&w, "num_classes"), sv_json_i64(&w, c->num_classes);
    sv_json_key(&w, "dim"), sv_json_i64(&w, c->dim);
    sv_json_key(&w, "depth"), sv_json_i64(&w, c->depth);
    sv_json_key(&w, "heads"), sv_json_i64(&w, c->heads);
    sv_json_key(&w, "mlp_ratio"), sv_json_f64(&w, c->mlp_ratio);
    /* timm options: written only when not the classic ViT's, so its index.json is unchanged */
    if (c->layer_scale > 0) sv_json_key(&w, "layer_scale"), sv_json_f64(&w, c->layer_scale);
    if (c->global_pool != SV_POOL_TOKEN)
        sv_json_key(&w, "global_pool"), sv_json_str(&w, sv_vit_pool_name(c->global_pool));
    if (c->no_class_token) sv_json_key(&w, "class_token"), sv_json_bool(&w, 0);
    if (c->reg_tokens > 0) sv_json_key(&w, "reg_tokens"), sv_json_i64(&w, c->reg_tokens);
    if (c->no_embed_class) sv_json_key(&w, "no_embed_class"), sv_json_bool(&w, 1);
    sv_json_obj_end(&w);
    sv_json_key(&w, "world_size"), sv_json_i64(&w, idx->world_size);
    sv_json_key(&w, "strategy"), sv_json_str(&w, idx->strategy);
    sv_json_key(&w, "shard_world"), sv_json_i64(&w, idx->shard_world);
    sv_json_key(&w, "flat_align"), sv_json_i64(&w, SV_FLAT_ALIGN);
    sv_json_key(&w, "dtype"), sv_json_str(&w, "F32");
    sv_json_key(&w, "byte_order"), sv_json_str(&w, "little");
    sv_json_key(&w, "step"), sv_json_i64(&w, s->step);
    sv_json_key(&w, "skipped_steps"), sv_json_i64(&w, s->skipped_steps);
    sv_json_key(&w, "epoch"), sv_json_u64(&w, s->epoch);
    sv_json_key(&w, "sample_cursor"), sv_json_u64(&w, s->cursor);
    sv_json_key(&w, "seed"), sv_json_u64(&w, s->seed);
    sv_json_key(&w, "rng");
    sv_json_obj_begin(&w);
    sv_json_key(&w, "kind"), sv_json_str(&w, "counter");
    sv_json_key(&w, "seed"), sv_json_u64(&w, s->seed);
    sv_json_obj_end(&w);
    sv_json_key(&w, "lr_schedule");
    sv_json_obj_begin(&w);
    sv_json_key(&w, "kind"), sv_json_str(&w, sv_ckpt_sched_kind(&s->sched));
    sv_json_key(&w, "step"), sv_json_i64(&w, s->step);
    sv_json_key(&w, "total_steps"), sv_json_i64(&w, s->total_steps);
    sv_json_key(&w, "lr"), sv_json_f64(&w, s->lr);
    sv_json_key(&w, "min_lr"), sv_json_f64(&w, s->min_lr);
    sv_json_key(&w, "warmup"), sv_json_i64(&w, s->warmup);
    sv_ckpt_sched_write(&w, &s->sched);
    sv_json_obj_end(&w);
    sv_ckpt_optim_write(&w, &s->opt);
    sv_json_key(&w, "global_batch"), sv_json_i64(&w, s->global_batch);
    if (s->data_known) { /* the fingerprint as 16 hex digits: a JSON number past 2^53 is not portable */
        char fp[24];
        snprintf(fp, sizeof fp, "%016llx", (unsigned long long)s->data_fingerprint);
        sv_json_key(&w, "train_data");
        sv_json_obj_begin(&w);
        sv_json_key(&w, "samples"), sv_json_u64(&w, s->data_samples);
        sv_json_key(&w, "fingerprint"), sv_json_str(&w, fp);
        sv_json_obj_end(&w);
    }
    if (s->ema) { /* only then: indexes without EMA stay as they were */
        sv_json_key(&w, "model_ema");
        sv_json_obj_begin(&w);
        sv_json_key(&w, "kind"), sv_json_str(&w, "weights_fp32");
        sv_json_key(&w, "decay"), sv_json_f64(&w, s->ema_decay);
        sv_json_key(&w, "warmup"), sv_json_bool(&w, s->ema_warmup);
        sv_json_obj_end(&w);
    }
    sv_ckpt_meta_write(&w, &idx->meta);
    sv_json_key(&w, "units");
    sv_json_arr_begin(&w);
    for (int u = 0; u < idx->n_units; u++) {
        const sv_ckpt_unit *U = &idx->units[u];
        sv_json_obj_begin(&w);
        sv_json_key(&w, "numel"), sv_json_u64(&w, U->numel);
        sv_json_key(&w, "padded"), sv_json_u64(&w, U->padded);
        sv_json_key(&w, "shard"), sv_json_u64(&w, U->shard);
        sv_json_key(&w, "file_offset"), sv_json_u64(&w, U->file_offset);
        sv_json_key(&w, "tensors");
        sv_json_arr_begin(&w);
        for (int k = 0; k < U->n_tensors; k++) {
            const sv_ckpt_tensor *t = &idx->tensors[U->first_tensor + k];
            sv_json_obj_begin(&w);
            sv_json_key(&w, "name"), sv_json_str(&w, t->name);
            sv_json_key(&w, "shape");
            sv_json_arr_begin(&w);
            for (int d = 0; d < t->ndim; d++) sv_json_i64(&w, t->shape[d]);
            sv_json_arr_end(&w);
            sv_json_key(&w, "offset"), sv_json_u64(&w, t->offset);
            sv_json_key(&w, "numel"), sv_json_u64(&w, t->numel);
            sv_json_obj_end(&w);
        }
        sv_json_arr_end(&w);
        sv_json_obj_end(&w);
    }
    sv_json_arr_end(&w);
    sv_json_key(&w, "files");
    sv_json_arr_begin(&w);
    for (int r = 0; r < idx->shard_world; r++) {
        const sv_ckpt_file *F = &idx->files[r];
        sv_json_obj_begin(&w);
        sv_json_key(&w, "name"), sv_json_str(&w, F->name);
        sv_json_key(&w, "rank"), sv_json_i64(&w, r);
        sv_json_key(&w, "bytes"), sv_json_u64(&w, F->bytes);
        sv_json_key(&w, "chunks"); /* [offset, bytes, crc32c] */
        sv_json_arr_begin(&w);
        for (size_t i = 0; i < F->n_chunks; i++) {
            sv_json_arr_begin(&w);
            sv_json_u64(&w, F->chunks[i].offset);
            sv_json_u64(&w, F->chunks[i].nbytes);
            sv_json_u64(&w, F->chunks[i].crc);
            sv_json_arr_end(&w);
        }
        sv_json_arr_end(&w);
        sv_json_obj_end(&w);
    }
    sv_json_arr_end(&w);
    sv_json_obj_end(&w);
    const char *text;
    size_t len;
    sv_status st = sv_json_writer_finish(&w, &text, &len);
    if (st == SV_OK) {
        char path[SV_CKPT_PATH_MAX + 16];
        snprintf(path, sizeof path, "%s/index.json", dir);
        st = sv_fileio_write_atomic(path, text, len);
    }
    sv_json_writer_free(&w);
    if (st != SV_OK) sv_err_frame(__FILE__, __LINE__);
    return st;
}

/* Typed member getters with a range check; messages name the JSON path. */
static sv_status get_int(const sv_json *o, const char *key, int64_t lo, int64_t hi, int64_t *out) {
    SV_TRY(sv_json_get_i64(o, key, out));
    if (*out < lo || *out > hi) {
        char p[128];
        sv_json_path(o, p, sizeof p);
        return SV_FAIL(SV_ERR_FORMAT, "%s.%s: %lld out of range [%lld, %lld]", p, key, (long long)*out, (long long)lo,
                       (long long)hi);
    }
    return SV_OK;
}

static sv_status bad(const char *src, const sv_json *at, const char *what) {
    char p[128];
    sv_json_path(at, p, sizeof p);
    return SV_FAIL(SV_ERR_FORMAT, "%s: %s: %s", src, p, what);
}

/* A descriptive member whose value this reader assumes: the one value it supports, else an
 * error naming the member (the file is attached by sv_ckpt_index_load). */
static sv_status expect_str(const sv_json *o, const char *key, const char *want) {
    const char *v;
    SV_TRY(sv_json_get_str(o, key, &v, NULL));
    if (strcmp(v, want)) {
        char p[128];
        sv_json_path(o, p, sizeof p);
        return SV_FAIL(SV_ERR_FORMAT, "%s.%s: \"%.64s\" is not supported (this build reads only \"%s\")", p, key, v,
                       want);
    }
    return SV_OK;
}

/* The storage format of the shards and the RNG: written by every version with the one value
 * this build reads, so any other value is a damaged or foreign index, never a format to guess. */
static sv_status check_storage(const sv_json *root) {
    const sv_json *rng;
    int64_t v, seed;
    SV_TRY(expect_str(root, "dtype", "F32"));
    SV_TRY(expect_str(root, "byte_order", "little"));
    SV_TRY(get_int(root, "flat_align", SV_FLAT_ALIGN, SV_FLAT_ALIGN, &v));
    SV_TRY(sv_json_get(root, "rng", SV_JSON_OBJECT, &rng));
    SV_TRY(expect_str(rng, "kind", "counter"));
    SV_TRY(get_int(root, "seed", 0, INT64_MAX, &seed));
    SV_TRY(get_int(rng, "seed", seed, seed, &v));
    return SV_OK;
}

/* Optional "train_data": {"samples": N >= 1, "fingerprint": 16 hex digits}; absent: not recorded
 * (an index written before it existed). */
static sv_status parse_train_data(const sv_json *root, sv_ckpt_train_state *s, const char *src) {
    const sv_json *d = sv_json_member_get(root, "train_data");
    s->data_known = 0;
    if (!d) return SV_OK;
    const char *fp;
    size_t n;
    int64_t samples;
    SV_TRY(sv_json_expect(d, SV_JSON_OBJECT));
    SV_TRY(get_int(d, "samples", 1, INT64_MAX, &samples));
    SV_TRY(sv_json_get_str(d, "fingerprint", &fp, &n));
    int ok = n == 16 && strlen(fp) == n;
    uint64_t v = 0;
    for (size_t i = 0; ok && i < n; i++) {
        char c = fp[i];
        int x = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        ok = x >= 0;
        v = v << 4 | (uint64_t)(x & 15);
    }
    if (!ok) return bad(src, d, "fingerprint must be 16 lowercase hex digits");
    s->data_known = 1;
    s->data_samples = (uint64_t)samples;
    s->data_fingerprint = v;
    return SV_OK;
}

static sv_status parse_state(const sv_json *root, sv_ckpt_train_state *s, const char *src) {
    int64_t v;
    const sv_json *lr;
    SV_TRY(get_int(root, "step", 0, INT64_MAX, &s->step));
    SV_TRY(get_int(root, "skipped_steps", 0, INT64_MAX, &s->skipped_steps));
    SV_TRY(get_int(root, "epoch", 0, INT64_MAX, &v));
    s->epoch = (uint64_t)v;
    SV_TRY(get_int(root, "sample_cursor", 0, INT64_MAX, &v));
    s->cursor = (uint64_t)v;
    SV_TRY(get_int(root, "seed", 0, INT64_MAX, &v));
    s->seed = (uint64_t)v;
    SV_TRY(sv_json_get(root, "lr_schedule", SV_JSON_OBJECT, &lr));
    SV_TRY(get_int(lr, "total_steps", 0, INT64_MAX, &s->total_steps));
    SV_TRY(sv_json_get_f64(lr, "lr", &s->lr));
    SV_TRY(sv_json_get_f64(lr, "min_lr", &s->min_lr));
    SV_TRY(get_int(lr, "warmup", 0, INT64_MAX, &s->warmup));
    SV_TRY(sv_ckpt_sched_parse(lr, &s->sched));
    SV_TRY(sv_ckpt_optim_parse(root, &s->opt));
    SV_TRY(sv_json_opt_i64(root, "global_batch", 0, &s->global_batch));
    SV_TRY(parse_train_data(root, s, src));
    const sv_json *ema = sv_json_member_get(root, "model_ema");
    s->ema = ema != NULL;
    if (ema) {
        const char *kind;
        SV_TRY(sv_json_expect(ema, SV_JSON_OBJECT));
        SV_TRY(sv_json_get_str(ema, "kind", &kind, NULL));
        if (strcmp(kind, "weights_fp32")) return bad(src, ema, "kind must be \"weights_fp32\"");
        SV_TRY(sv_json_get_f64(ema, "decay", &s->ema_decay));
        SV_TRY(sv_json_get_bool(ema, "warmup", &s->ema_warmup));
    }
    return SV_OK;
}

static sv_status parse_model(const sv_json *root, sv_vit_config *c) {
    const sv_json *m;
    const char *name;
    int64_t v[8];
    static const char *const keys[] = {"img", "patch", "in_chans", "num_classes", "dim", "depth", "heads"};
    SV_TRY(sv_json_get(root, "model", SV_JSON_OBJECT, &m));
    SV_TRY(sv_json_get_str(m, "name", &name, NULL));
    for (int i = 0; i < 7; i++) SV_TRY(get_int(m, keys[i], 1, 1000000, &v[i]));
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%s", name);
    c->img = (int)v[0], c->patch = (int)v[1], c->in_chans = (int)v[2], c->num_classes = (int)v[3];
    c->dim = (int)v[4], c->depth = (int)v[5], c->heads = (int)v[6];
    SV_TRY(sv_json_get_f64(m, "mlp_ratio", &c->mlp_ratio));
    /* optional timm options (absent: the classic ViT) */
    if (sv_json_member_get(m, "layer_scale")) SV_TRY(sv_json_get_f64(m, "layer_scale", &c->layer_scale));
    if (sv_json_member_get(m, "global_pool")) {
        const char *gp;
        SV_TRY(sv_json_get_str(m, "global_pool", &gp, NULL));
        SV_TRY(sv_vit_pool_parse(gp, &c->global_pool));
    }
    if (sv_json_member_get(m, "class_token")) {
        int ct;
        SV_TRY(sv_json_get_bool(m, "class_token", &ct));
        c->no_class_token = !ct;
    }
    if (sv_json_member_get(m, "reg_tokens")) {
        int64_t r;
        SV_TRY(sv_json_get_i64(m, "reg_tokens", &r));
        if (r < 0 || r > SV_VIT_MAX_REG_TOKENS)
            return SV_FAIL(SV_ERR_FORMAT, "model.reg_tokens: %lld out of range [0, %d]", (long long)r,
                           SV_VIT_MAX_REG_TOKENS);
        c->reg_tokens = (int)r;
    }
    if (sv_json_member_get(m, "no_embed_class")) SV_TRY(sv_json_get_bool(m, "no_embed_class", &c->no_embed_class));
    return sv_vit_config_validate(c);
}

static sv_status parse_units(sv_ckpt_index *idx, const sv_json *units, const char *src) {
    int t = 0;
    uint64_t off = 0;
    for (int u = 0; u < idx->n_units; u++) {
        const sv_json *uj = sv_json_index(units, (size_t)u), *tj;
        sv_ckpt_unit *U = &idx->units[u];
        int64_t numel, padded, shard, foff;
        SV_TRY(sv_json_expect(uj, SV_JSON_OBJECT));
        SV_TRY(get_int(uj, "numel", 0, INT64_MAX / 16, &numel));
        SV_TRY(get_int(uj, "padded", 1, INT64_MAX / 16, &padded));
        SV_TRY(get_int(uj, "shard", 1, INT64_MAX / 16, &shard));
        SV_TRY(get_int(uj, "file_offset", 0, INT64_MAX / 16, &foff));
        SV_TRY(sv_json_get(uj, "tensors", SV_JSON_ARRAY, &tj));
        U->numel = (uint64_t)numel, U->padded = (uint64_t)padded, U->shard = (uint64_t)shard;
        U->file_offset = (uint64_t)foff;
        uint64_t prod, ubytes;
        /* checked: shard x shard_world can wrap modulo 2^64 onto a small stated "padded" */
        if (!sv_mul_u64(U->shard, (uint64_t)idx->shard_world, &prod) || U->padded != prod || U->numel > U->padded)
            return bad(src, uj, "padded must equal shard x shard_world and hold numel");
        /* the padding rule of finish_units: a padded size the rule does not give for numel would
         * be carried into a reshard's layout (numel's own check follows the tensors) */
        uint64_t quantum = (uint64_t)idx->shard_world * SV_FLAT_ALIGN,
                 want = (U->numel + quantum - 1) / quantum * quantum;
        if (want == 0) want = quantum;
        if (U->padded != want) {
            char m[160];
            snprintf(m, sizeof m,
                     "padded %llu is not what the padding rule gives for numel %llu at shard_world %d (%llu)",
                     (unsigned long long)U->padded, (unsigned long long)U->numel, idx->shard_world,
                     (unsigned long long)want);
            return bad(src, uj, m);
        }
        if (U->file_offset != off) return bad(src, uj, "file_offset does not follow the previous unit");
        if (!sv_mul3_u64(U->shard, 4, (uint64_t)SV_CKPT_FILE_KINDS(idx), &ubytes) || !sv_add_u64(off, ubytes, &off))
            return bad(src, uj, "unit bytes overflow 64 bits");
        U->first_tensor = t;
        U->n_tensors = (int)sv_json_count(tj);
        uint64_t end = 0;
        for (int k = 0; k < U->n_tensors; k++, t++) {
            const sv_json *e = sv_json_index(tj, (size_t)k), *sh;
            if (t >= idx->n_tensors) return bad(src, e, "more tensors than the model has");
            sv_ckpt_tensor *T = &idx->tensors[t];
            const char *name;
            size_t nlen;
            int64_t o, n;
            SV_TRY(sv_json_expect(e, SV_JSON_OBJECT));
            SV_TRY(sv_json_get_str(e, "name", &name, &nlen));
            if (nlen == 0 || nlen >= sizeof T->name || strlen(name) != nlen) return bad(src, e, "bad tensor name");
            snprintf(T->name, sizeof T->name, "%s", name);
            SV_TRY(sv_json_get(e, "shape", SV_JSON_ARRAY, &sh));
            T->ndim = (int)sv_json_count(sh);
            if (T->ndim > 4) return bad(src, sh, "more than 4 dimensions");
            uint64_t prod;
            for (int d = 0; d < T->ndim; d++) {
                SV_TRY(sv_json_as_i64(sv_json_index(sh, (size_t)d), &T->shape[d]));
                if (T->shape[d] < 0 || T->shape[d] > (1ll << 40)) return bad(src, sh, "dimension out of range");
            }
            /* checked: a product that wraps modulo 2^64 could equal the stated numel */
            if (!sv_shape_numel(T->shape, (size_t)T->ndim, &prod))
                return bad(src, sh, "the product of the shape overflows 64 bits");
            SV_TRY(get_int(e, "offset", 0, INT64_MAX / 16, &o));
            SV_TRY(get_int(e, "numel", 0, INT64_MAX / 16, &n));
            T->offset = (uint64_t)o, T->numel = (uint64_t)n, T->unit = u;
            if (T->numel != prod) return bad(src, e, "numel is not the product of the shape");
            if (T->offset < end || T->offset + T->numel > U->numel)
                return bad(src, e, "offset overlaps the previous tensor or lies outside the unit");
            /* the tensors tile the unit, each at the previous one's end rounded up to flat_align */
            if (T->offset != (end + SV_FLAT_ALIGN - 1) / SV_FLAT_ALIGN * SV_FLAT_ALIGN)
                return bad(src, e, "offset is not the previous tensor's end rounded up to flat_align");
            end = T->offset + T->numel;
            for (int q = 0; q < t; q++)
                if (!strcmp(idx->tensors[q].name, T->name)) return bad(src, e, "duplicate tensor name");
        }
        if (U->numel != end) {
            char m[160];
            snprintf(m, sizeof m, "numel %llu is not the end of the unit's last tensor (%llu)",
                     (unsigned long long)U->numel, (unsigned long long)end);
            return bad(src, uj, m);
        }
    }
    if (t != idx->n_tensors)
        return SV_FAIL(SV_ERR_FORMAT, "%s: units list %d tensors, the model has %d", src, t, idx->n_tensors);
    return SV_OK;
}

static sv_status parse_files(sv_ckpt_index *idx, const sv_json *files, const char *src) {
    uint64_t bytes = file_bytes(idx);
    for (int r = 0; r < idx->shard_world; r++) {
        const sv_json *fj = sv_json_index(files, (size_t)r), *cj;
        sv_ckpt_file *F = &idx->files[r];
        const char *name;
        int64_t rank, b;
        SV_TRY(sv_json_expect(fj, SV_JSON_OBJECT));
        SV_TRY(sv_json_get_str(fj, "name", &name, NULL));
        SV_TRY(get_int(fj, "rank", r, r, &rank));
        SV_TRY(get_int(fj, "bytes", 0, INT64_MAX, &b));
        if (strcmp(name, F->name)) return bad(src, fj, "unexpected shard file name");
        if ((uint64_t)b != bytes) return bad(src, fj, "bytes do not match the unit table");
        F->bytes = bytes;
        SV_TRY(sv_json_get(fj, "chunks", SV_JSON_ARRAY, &cj));
        F->n_chunks = sv_json_count(cj);
        F->chunks = calloc(F->n_chunks ? F->n_chunks : 1, sizeof *F->chunks);
        if (!F->chunks) return SV_FAIL(SV_ERR_OOM, "%s: chunk table", src);
        uint64_t end = 0;
        for (size_t i = 0; i < F->n_chunks; i++) {
            const sv_json *c = sv_json_index(cj, i);
            int64_t v[3];
            if (!c || c->type != SV_JSON_ARRAY || sv_json_count(c) != 3)
                return bad(src, c ? c : cj, "a chunk must be [offset, bytes, crc32c]");
            for (int k = 0; k < 3; k++) SV_TRY(sv_json_as_i64(sv_json_index(c, (size_t)k), &v[k]));
            if (v[0] < (int64_t)end || v[1] <= 0 || (uint64_t)v[1] > SV_CKPT_MAX_CHUNK_BYTES ||
                (uint64_t)(v[0] + v[1]) > bytes || v[2] < 0 || v[2] > 0xffffffffll)
                return bad(src, c, "chunk out of order, overlapping, too large or outside the file");
            F->chunks[i] = (sv_ckpt_chunk){(uint64_t)v[0], (uint64_t)v[1], (uint32_t)v[2]};
            end = (uint64_t)(v[0] + v[1]);
        }
    }
    return SV_OK;
}

/* The tensors of the index are exactly the parameters of its model (names and shapes): a
 * damaged name or model field is caught here, before a reader writes it into an export or a
 * resharded checkpoint. */
static sv_status check_model_tensors(const sv_ckpt_index *idx, const char *src) {
    const int n = sv_vit_num_params(&idx->cfg);
    sv_param_info *p = calloc((size_t)n, sizeof *p);
    if (!p) return SV_FAIL(SV_ERR_OOM, "parameter table");
    sv_vit_param_table(&idx->cfg, 0, p);
    sv_status st = SV_OK;
    for (int k = 0; k < n && st == SV_OK; k++) {
        int t = sv_ckpt_find_tensor(idx, p[k].name);
        int same = t >= 0 && idx->tensors[t].ndim == p[k].ndim;
        for (int d = 0; same && d < p[k].ndim; d++) same = idx->tensors[t].shape[d] == p[k].shape[d];
        if (!same)
            st = SV_FAIL(SV_ERR_FORMAT,
                         "%s: the model it records (%s, dim %d, depth %d, img %d, patch %d) has tensor %s, which the "
                         "checkpoint %s",
                         src, idx->cfg.name, idx->cfg.dim, idx->cfg.depth, idx->cfg.img, idx->cfg.patch, p[k].name,
                         t < 0 ? "does not list" : "lists with another shape");
    }
    free(p);
    return st;
}

sv_status sv_ckpt_index_load(sv_ckpt_index *idx, const char *step_dir) {
    memset(idx, 0, sizeof *idx);
    char path[SV_CKPT_PATH_MAX + 16];
    if (strlen(step_dir) >= SV_CKPT_PATH_MAX) return SV_FAIL(SV_ERR_INVALID, "path too long: %.200s", step_dir);
    snprintf(idx->dir, sizeof idx->dir, "%s", step_dir);
    snprintf(path, sizeof path, "%s/index.json", step_dir);
    char *text;
    size_t len;
    SV_TRY(sv_fileio_read_small(path, (size_t)256 << 20, &text, &len));
    sv_json_doc doc;
    sv_status st = sv_json_parse(&doc, text, len, path, NULL);
    free(text);
    SV_TRY(st);
    const sv_json *root = &doc.root, *units, *files;
    const char *fmt, *strategy;
    int64_t v, world, sw;
#define CHECK(expr) SV_TRY_GOTO(st, (expr), out)
    CHECK(sv_json_expect(root, SV_JSON_OBJECT));
    CHECK(sv_json_get_str(root, "format", &fmt, NULL));
    if (strcmp(fmt, FORMAT_NAME)) {
        st = SV_FAIL(SV_ERR_FORMAT, "%s: format \"%s\" is not \"%s\"", path, fmt, FORMAT_NAME);
        goto out;
    }
    CHECK(sv_json_get_i64(root, "format_version", &v));
    if (v != SV_CKPT_FORMAT_VERSION) {
        st = SV_FAIL(SV_ERR_FORMAT, "%s: format_version %lld is not supported (this build reads version %d)", path,
                     (long long)v, SV_CKPT_FORMAT_VERSION);
        goto out;
    }
    idx->format_version = (int)v;
    CHECK(check_storage(root));
    CHECK(parse_model(root, &idx->cfg));
    CHECK(get_int(root, "world_size", 1, 1 << 24, &world));
    CHECK(get_int(root, "shard_world", 1, 99999, &sw));
    CHECK(sv_json_get_str(root, "strategy", &strategy, NULL));
    sv_strategy sk;
    if (sv_strategy_parse(strategy, &sk) != SV_OK) {
        char e[SV_ESC_CAP];
        sv_err_clear();
        st = SV_FAIL(SV_ERR_FORMAT, "%s: strategy \"%s\" is not full_shard, shard_grad_op, no_shard or hybrid_shard",
                     path, sv_log_esc(strategy, e, sizeof e));
        goto out;
    }
    idx->world_size = (int)world;
    idx->shard_world = (int)sw;
    snprintf(idx->strategy, sizeof idx->strategy, "%s", strategy);
    CHECK(parse_state(root, &idx->state, path));
    /* skipped steps are a subset of the steps taken: more would make AdamW's count of applied
     * updates (step + 1 - skipped) zero or negative, and every parameter NaN on resume */
    if (idx->state.skipped_steps > idx->state.step) {
        st = SV_FAIL(SV_ERR_FORMAT,
                     "%s: skipped_steps %lld exceeds step %lld (a run cannot skip more steps than it took)", path,
                     (long long)idx->state.skipped_steps, (long long)idx->state.step);
        goto out;
    }
    CHECK(sv_ckpt_meta_parse(root, &idx->meta, path));
    if (idx->meta.n_labels > idx->cfg.num_classes) {
        st = SV_FAIL(SV_ERR_FORMAT, "%s: label_names lists %d names but the model has only %d classes", path,
                     idx->meta.n_labels, idx->cfg.num_classes);
        goto out;
    }
    CHECK(sv_json_get(root, "units", SV_JSON_ARRAY, &units));
    CHECK(sv_json_get(root, "files", SV_JSON_ARRAY, &files));
    idx->n_units = (int)sv_json_count(units);
    idx->n_tensors = sv_vit_num_params(&idx->cfg);
    if (idx->n_units < 1 || idx->n_units > SV_MAX_UNITS || sv_json_count(files) != (size_t)idx->shard_world) {
        st = SV_FAIL(SV_ERR_FORMAT, "%s: %zu units and %zu files (expected 1..%d units and shard_world = %d files)",
                     path, sv_json_count(units), sv_json_count(files), SV_MAX_UNITS, idx->shard_world);
        goto out;
    }
    CHECK(alloc_tables(idx));
    CHECK(parse_units(idx, units, path));
    CHECK(parse_files(idx, files, path));
    CHECK(check_model_tensors(idx, path));
#undef CHECK
out:
    sv_json_doc_free(&doc);
    if (st != SV_OK) {
        sv_err_prefix(path); /* every field error names the file, whichever check raised it */
        sv_ckpt_index_free(idx);
    }
    return st;
}
