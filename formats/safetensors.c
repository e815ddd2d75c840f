#include "formats/safetensors.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/checked.h"
#include "core/elementwise.h"
#include "core/fileio.h"
#include "core/json.h"

#define FILL_CHUNK ((size_t)4 << 20)

static const struct {
    const char *name;
    size_t size;
} dtype_info[SV_ST_NUM_DTYPES] = {
    [SV_ST_BOOL] = {"BOOL", 1},       [SV_ST_U8] = {"U8", 1},           [SV_ST_I8] = {"I8", 1},
    [SV_ST_F8_E5M2] = {"F8_E5M2", 1}, [SV_ST_F8_E4M3] = {"F8_E4M3", 1}, [SV_ST_I16] = {"I16", 2},
    [SV_ST_U16] = {"U16", 2},         [SV_ST_F16] = {"F16", 2},         [SV_ST_BF16] = {"BF16", 2},
    [SV_ST_I32] = {"I32", 4},         [SV_ST_U32] = {"U32", 4},         [SV_ST_F32] = {"F32", 4},
    [SV_ST_F64] = {"F64", 8},         [SV_ST_I64] = {"I64", 8},         [SV_ST_U64] = {"U64", 8},
};

const char *sv_st_dtype_name(sv_st_dtype dt) { return (unsigned)dt < SV_ST_NUM_DTYPES ? dtype_info[dt].name : "?"; }

size_t sv_st_dtype_size(sv_st_dtype dt) { return (unsigned)dt < SV_ST_NUM_DTYPES ? dtype_info[dt].size : 0; }

int sv_st_dtype_parse(const char *name, sv_st_dtype *out) {
    for (int i = 0; i < SV_ST_NUM_DTYPES; i++)
        if (!strcmp(name, dtype_info[i].name)) {
            *out = (sv_st_dtype)i;
            return 0;
        }
    return -1;
}

float sv_st_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ffu;
    uint32_t u;
    if (exp == 0x1f) {
        u = sign | 0x7f800000u | (man << 13); /* inf / NaN (payload kept) */
    } else if (exp == 0) {
        if (man == 0) {
            u = sign;
        } else { /* subnormal: normalise */
            int e = -1;
            do {
                man <<= 1;
                e++;
            } while (!(man & 0x400u));
            u = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3ffu) << 13);
        }
    } else {
        u = sign | ((exp + 127 - 15) << 23) | (man << 13);
    }
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* ======================================================================================== */
/* reader                                                                                    */
/* ======================================================================================== */

static uint64_t le64(const uint8_t *b) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | b[i];
    return v;
}

void sv_safetensors_close(sv_st_file *f) {
    if (f->fd >= 0) close(f->fd);
    f->fd = -1;
    for (size_t i = 0; i < f->n_tensors; i++) free(f->tensors[i].name);
    free(f->tensors);
    free((void *)f->by_name);
    for (size_t i = 0; i < f->n_meta; i++) {
        free(f->meta[i].key);
        free(f->meta[i].value);
    }
    free(f->meta);
    f->tensors = NULL;
    f->by_name = NULL;
    f->meta = NULL;
    f->n_tensors = f->n_meta = 0;
}

static sv_status bad(const sv_st_file *f, const char *what, const char *name, const char *detail) {
    if (name)
        return SV_FAIL(SV_ERR_FORMAT, "%s: safetensors tensor \"%.200s\": %s%s", f->path, name, what,
                       detail ? detail : "");
    return SV_FAIL(SV_ERR_FORMAT, "%s: safetensors header: %s%s", f->path, what, detail ? detail : "");
}

static sv_status parse_tensor(sv_st_file *f, const sv_json_member *m, sv_st_tensor *t, uint64_t *begin, uint64_t *end) {
    const char *name = m->key;
    char msg[160];
    if (m->value.type != SV_JSON_OBJECT) return bad(f, "entry is not a JSON object", name, NULL);
    const sv_json *dt = sv_json_member_get(&m->value, "dtype");
    const sv_json *shape = sv_json_member_get(&m->value, "shape");
    const sv_json *offs = sv_json_member_get(&m->value, "data_offsets");
    if (!dt || dt->type != SV_JSON_STRING) return bad(f, "missing or non-string \"dtype\"", name, NULL);
    if (sv_st_dtype_parse(dt->u.str.s, &t->dtype) != 0 || strlen(dt->u.str.s) != dt->u.str.len) {
        snprintf(msg, sizeof msg, "\"%.40s\"", dt->u.str.s);
        return bad(f, "unknown dtype ", name, msg);
    }
    if (!shape || shape->type != SV_JSON_ARRAY) return bad(f, "missing or non-array \"shape\"", name, NULL);
    size_t nd = sv_json_count(shape);
    if (nd > SV_ST_MAX_DIMS) {
        snprintf(msg, sizeof msg, "%zu dimensions (at most %d supported)", nd, SV_ST_MAX_DIMS);
        return bad(f, "shape has ", name, msg);
    }
    uint64_t numel, nbytes;
    t->ndim = (int)nd;
    for (size_t d = 0; d < nd; d++) {
        const sv_json *v = sv_json_index(shape, d);
        /* integer literals only: the format's reference reader refuses 32.0 or 3.2e1 for a size */
        if (v->type != SV_JSON_NUMBER || !v->u.num.literal_int || v->u.num.i < 0)
            return bad(f, "shape entries must be non-negative integers", name, NULL);
        t->shape[d] = v->u.num.i;
    }
    if (!sv_shape_numel(t->shape, nd, &numel) || !sv_mul_u64(numel, sv_st_dtype_size(t->dtype), &nbytes))
        return bad(f, "shape size overflows 64 bits", name, NULL);
    if (!offs || offs->type != SV_JSON_ARRAY || sv_json_count(offs) != 2)
        return bad(f, "\"data_offsets\" must be an array [begin, end]", name, NULL);
    const sv_json *b = sv_json_index(offs, 0), *e = sv_json_index(offs, 1);
    if (b->type != SV_JSON_NUMBER || !b->u.num.literal_int || b->u.num.i < 0 || e->type != SV_JSON_NUMBER ||
        !e->u.num.literal_int || e->u.num.i < 0)
        return bad(f, "data_offsets must be non-negative integers", name, NULL);
    *begin = (uint64_t)b->u.num.i;
    *end = (uint64_t)e->u.num.i;
    if (*begin > *end) {
        snprintf(msg, sizeof msg, " [%llu, %llu]", (unsigned long long)*begin, (unsigned long long)*end);
        return bad(f, "data_offsets begin > end:", name, msg);
    }
    if (*end - *begin != nbytes) {
        snprintf(msg, sizeof msg,
                 "shape/size mismatch: %s shape implies %llu bytes but data_offsets "
                 "[%llu, %llu] span %llu bytes",
                 sv_st_dtype_name(t->dtype), (unsigned long long)nbytes, (unsigned long long)*begin,
                 (unsigned long long)*end, (unsigned long long)(*end - *begin));
        return bad(f, msg, name, NULL);
    }
    t->numel = numel;
    t->nbytes = nbytes;
    t->offset = *begin; /* relative for now */
    t->name = strdup(name);
    if (!t->name) return SV_FAIL(SV_ERR_OOM, "%s: out of memory", f->path);
    return SV_OK;
}

static int by_offset(const void *a, const void *b) {
    const sv_st_tensor *x = *(const sv_st_tensor *const *)a, *y = *(const sv_st_tensor *const *)b;
    if (x->offset != y->offset) return x->offset < y->offset ? -1 : 1;
    return (x->nbytes > y->nbytes) - (x->nbytes < y->nbytes);
}

/* Every tensor sorted by offset must start where the previous ended and the last must end
 * exactly at the end of the data section. */
static sv_status check_tiling(sv_st_file *f, uint64_t data_size) {
    if (!f->n_tensors) {
        if (data_size)
            return SV_FAIL(SV_ERR_FORMAT,
                           "%s: safetensors: %llu data bytes but no tensors (holes "
                           "are not allowed)",
                           f->path, (unsigned long long)data_size);
        return SV_OK;
    }
    const sv_st_tensor **ord = malloc(f->n_tensors * sizeof *ord);
    if (!ord) return SV_FAIL(SV_ERR_OOM, "%s: out of memory", f->path);
    for (size_t i = 0; i < f->n_tensors; i++) ord[i] = &f->tensors[i];
    qsort(ord, f->n_tensors, sizeof *ord, by_offset);
    uint64_t pos = 0;
    sv_status s = SV_OK;
    for (size_t i = 0; i < f->n_tensors && s == SV_OK; i++) {
        const sv_st_tensor *t = ord[i];
        uint64_t end = t->offset + t->nbytes;
        if (t->offset < pos)
            s = SV_FAIL(SV_ERR_FORMAT,
                        "%s: safetensors tensor \"%.200s\": data_offsets [%llu, %llu]"
                        " overlap the previous tensor \"%.200s\" (which ends at %llu)",
                        f->path, t->name, (unsigned long long)t->offset, (unsigned long long)end, ord[i - 1]->name,
                        (unsigned long long)pos);
        else if (t->offset > pos)
            s = SV_FAIL(SV_ERR_FORMAT,
                        "%s: safetensors tensor \"%.200s\": data_offsets [%llu, %llu]"
                        " leave a hole of %llu bytes before it (holes are not allowed)",
                        f->path, t->name, (unsigned long long)t->offset, (unsigned long long)end,
                        (unsigned long long)(t->offset - pos));
        else if (end > data_size)
            s = SV_FAIL(SV_ERR_CORRUPT,
                        "%s: safetensors tensor \"%.200s\": data_offsets [%llu, %llu]"
                        " extend past the end of the file (data section has %llu bytes; "
                        "truncated file?)",
                        f->path, t->name, (unsigned long long)t->offset, (unsigned long long)end,
                        (unsigned long long)data_size);
        pos = end;
    }
    if (s == SV_OK && pos != data_size)
        s = SV_FAIL(SV_ERR_FORMAT,
                    "%s: safetensors: %llu bytes after the last tensor \"%.200s\" "
                    "are not covered by any tensor (holes are not allowed)",
                    f->path, (unsigned long long)(data_size - pos), ord[f->n_tensors - 1]->name);
    free((void *)ord);
    return s;
}

static int name_cmp(const void *a, const void *b) {
    return strcmp((*(const sv_st_tensor *const *)a)->name, (*(const sv_st_tensor *const *)b)->name);
}

/* f->by_name: the tensors sorted by name, built once so that every lookup is a binary search;
 * two entries of one name (the JSON parser refuses duplicate keys; checked here again, the index
 * depends on it) are refused. */
static sv_status index_names(sv_st_file *f) {
    const sv_st_tensor **ix = malloc((f->n_tensors ? f->n_tensors : 1) * sizeof *ix);
    if (!ix) return SV_FAIL(SV_ERR_OOM, "%s: out of memory", f->path);
    for (size_t i = 0; i < f->n_tensors; i++) ix[i] = &f->tensors[i];
    qsort(ix, f->n_tensors, sizeof *ix, name_cmp);
    f->by_name = ix;
    for (size_t i = 1; i < f->n_tensors; i++)
        if (!strcmp(ix[i - 1]->name, ix[i]->name)) return bad(f, "duplicate tensor name", ix[i]->name, NULL);
    return SV_OK;
}

static sv_status parse_header(sv_st_file *f, const char *hdr, uint64_t n) {
    sv_json_doc doc;
    char source[600];
    snprintf(source, sizeof source, "%s: safetensors header", f->path);
    SV_TRY(sv_json_parse(&doc, hdr, (size_t)n, source, NULL));
    sv_status s = SV_OK;
    const sv_json *root = &doc.root;
    if (root->type != SV_JSON_OBJECT) {
        s = bad(f, "top level is not a JSON object", NULL, NULL);
        goto done;
    }
    size_t nm = sv_json_count(root);
    f->tensors = calloc(nm ? nm : 1, sizeof *f->tensors);
    if (!f->tensors) {
        s = SV_FAIL(SV_ERR_OOM, "%s: out of memory", f->path);
        goto done;
    }
    for (size_t i = 0; i < nm && s == SV_OK; i++) {
        const sv_json_member *m = &root->u.obj.members[i];
        if (strlen(m->key) != m->key_len) {
            s = bad(f, "a tensor name contains a NUL character", NULL, NULL);
        } else if (!strcmp(m->key, "__metadata__")) {
            const sv_json *md = &m->value;
            if (md->type != SV_JSON_OBJECT) {
                s = bad(f, "\"__metadata__\" is not an object", NULL, NULL);
                break;
            }
            f->meta = calloc(md->u.obj.n ? md->u.obj.n : 1, sizeof *f->meta);
            if (!f->meta) {
                s = SV_FAIL(SV_ERR_OOM, "%s: out of memory", f->path);
                break;
            }
            for (size_t k = 0; k < md->u.obj.n; k++) {
                const sv_json_member *mm = &md->u.obj.members[k];
                if (mm->value.type != SV_JSON_STRING) {
                    s = SV_FAIL(SV_ERR_FORMAT,
                                "%s: safetensors header: \"__metadata__\" value of "
                                "\"%.100s\" is a %s, expected a string",
                                f->path, mm->key, sv_json_type_name(mm->value.type));
                    break;
                }
                sv_st_meta *e = &f->meta[f->n_meta++];
                e->key = strdup(mm->key);
                e->value = strdup(mm->value.u.str.s);
                if (!e->key || !e->value) {
                    s = SV_FAIL(SV_ERR_OOM, "%s: out of memory", f->path);
                    break;
                }
            }
        } else {
            uint64_t b, e;
            sv_st_tensor *t = &f->tensors[f->n_tensors];
            s = parse_tensor(f, m, t, &b, &e);
            if (s == SV_OK) f->n_tensors++;
        }
    }
    if (s == SV_OK) s = index_names(f);
    if (s == SV_OK) s = check_tiling(f, f->file_size - f->data_start);
    if (s == SV_OK)
        for (size_t i = 0; i < f->n_tensors; i++) f->tensors[i].offset += f->data_start;
done:
    sv_json_doc_free(&doc);
    if (s != SV_OK) sv_err_frame(__FILE__, __LINE__);
    return s;
}

static sv_status check_sizes(sv_st_file *f, const uint8_t lenbuf[8], uint64_t *n) {
    *n = le64(lenbuf);
    if (*n < 2)
        return SV_FAIL(SV_ERR_FORMAT,
                       "%s: safetensors header length %llu is too small (a header "
                       "is at least \"{}\")",
                       f->path, (unsigned long long)*n);
    if (*n > SV_ST_MAX_HEADER)
        return SV_FAIL(SV_ERR_FORMAT,
                       "%s: safetensors header length %llu exceeds the limit of "
                       "%llu bytes",
                       f->path, (unsigned long long)*n, SV_ST_MAX_HEADER);
    if (*n > f->file_size - 8)
        return SV_FAIL(SV_ERR_CORRUPT,
                       "%s: safetensors header length %llu exceeds the %llu bytes "
                       "after the length field (truncated file?)",
                       f->path, (unsigned long long)*n, (unsigned long long)(f->file_size - 8));
    f->data_start = 8 + *n;
    return SV_OK;
}

/* The file must hold at least the 8-byte header length (f->file_size set). */
static sv_status check_length_field(const sv_st_file *f) {
    if (f->file_size < 8)
        return SV_FAIL(SV_ERR_CORRUPT,
                       "%s: safetensors file is %llu bytes, too short for the 8-byte "
                       "header length (truncated file?)",
                       f->path, (unsigned long long)f->file_size);
    return SV_OK;
}

static void init_file(sv_st_file *f, const char *name) {
    memset(f, 0, sizeof *f);
    f->fd = -1;
    snprintf(f->path, sizeof f->path, "%s", name ? name : "safetensors");
}

sv_status sv_safetensors_open_mem(sv_st_file *f, const void *bytes, size_t len, const char *name) {
    init_file(f, name);
    f->mem = bytes;
    f->file_size = len;
    SV_TRY(check_length_field(f));
    uint64_t n;
    SV_TRY(check_sizes(f, bytes, &n));
    sv_status s = parse_header(f, (const char *)bytes + 8, n);
    if (s != SV_OK) {
        sv_safetensors_close(f);
        sv_err_frame(__FILE__, __LINE__);
    }
    return s;
}

sv_status sv_safetensors_open(sv_st_file *f, const char *path) {
    init_file(f, path);
    int fd;
    SV_TRY(sv_fileio_open_read(path, &fd, &f->file_size));
    f->fd = fd;
    uint8_t lenbuf[8];
    char *hdr = NULL;
    uint64_t n;
    sv_status s = SV_OK;
    SV_TRY_GOTO(s, check_length_field(f), fail);
    SV_TRY_GOTO(s, sv_fileio_pread_exact(fd, lenbuf, 8, 0, path), fail);
    SV_TRY_GOTO(s, check_sizes(f, lenbuf, &n), fail);
    hdr = malloc((size_t)n);
    if (!hdr) {
        s = SV_FAIL(SV_ERR_OOM, "%s: cannot allocate %llu bytes for the header", path, (unsigned long long)n);
        goto fail;
    }
    SV_TRY_GOTO(s, sv_fileio_pread_exact(fd, hdr, (size_t)n, 8, path), fail);
    SV_TRY_GOTO(s, parse_header(f, hdr, n), fail);
    free(hdr);
    return SV_OK;
fail:
    free(hdr);
    sv_safetensors_close(f);
    return s;
}

const sv_st_tensor *sv_safetensors_find(const sv_st_file *f, const char *name) {
    size_t lo = 0, hi = f->by_name ? f->n_tensors : 0;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(f->by_name[mid]->name, name);
        if (!c) return f->by_name[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

const char *sv_safetensors_meta(const sv_st_file *f, const char *key) {
    for (size_t i = 0; i < f->n_meta; i++)
        if (!strcmp(f->meta[i].key, key)) return f->meta[i].value;
    return NULL;
}

/* A read of `count` units (unit: "bytes" or "elements") at `off` must lie inside tensor t,
 * which has `total` of them. */
static sv_status check_read_range(const sv_st_file *f, const sv_st_tensor *t, uint64_t off, uint64_t count,
                                  uint64_t total, const char *unit) {
    if (off > total || count > total - off)
        return SV_FAIL(SV_ERR_INVALID, "%s: read of %s [%llu, %llu) outside tensor \"%s\" (%llu %s)", f->path, unit,
                       (unsigned long long)off, (unsigned long long)(off + count), t->name, (unsigned long long)total,
                       unit);
    return SV_OK;
}

sv_status sv_safetensors_read_raw(const sv_st_file *f, const sv_st_tensor *t, uint64_t byte_off, uint64_t nbytes,
                                  void *dst) {
    SV_TRY(check_read_range(f, t, byte_off, nbytes, t->nbytes, "bytes"));
    if (f->mem) {
        memcpy(dst, f->mem + t->offset + byte_off, (size_t)nbytes);
        return SV_OK;
    }
    return sv_fileio_pread_exact(f->fd, dst, (size_t)nbytes, t->offset + byte_off, f->path);
}

sv_status sv_safetensors_read_f32(const sv_st_file *f, const sv_st_tensor *t, uint64_t elem_off, uint64_t count,
                                  float *dst) {
    SV_TRY(check_read_range(f, t, elem_off, count, t->numel, "elements"));
    if (t->dtype == SV_ST_F32) return sv_safetensors_read_raw(f, t, elem_off * 4, count * 4, dst);
    if (t->dtype != SV_ST_BF16 && t->dtype != SV_ST_F16)
        return SV_FAIL(SV_ERR_UNSUPPORTED,
                       "%s: tensor \"%s\" has dtype %s; only F32, BF16 and "
                       "F16 convert to fp32",
                       f->path, t->name, sv_st_dtype_name(t->dtype));
    uint16_t buf[4096];
    for (uint64_t done = 0; done < count;) {
        size_t k = count - done < 4096 ? (size_t)(count - done) : 4096;
        SV_TRY(sv_safetensors_read_raw(f, t, (elem_off + done) * 2, k * 2, buf));
        for (size_t i = 0; i < k; i++) {
            uint16_t h = (uint16_t)(((const uint8_t *)&buf[i])[0] | ((const uint8_t *)&buf[i])[1] << 8);
            dst[done + i] = t->dtype == SV_ST_BF16 ? sv_bf16_to_f32(h) : sv_st_f16_to_f32(h);
        }
        done += k;
    }
    return SV_OK;
}

/* ======================================================================================== */
/* writer                                                                                    */
/* ======================================================================================== */

static sv_status entry_bytes(const char *path, const sv_st_entry *e, uint64_t *out) {
    if (!e->name || !*e->name || !strcmp(e->name, "__metadata__"))
        return SV_FAIL(SV_ERR_INVALID, "%s: invalid tensor name \"%s\"", path, e->name ? e->name : "(null)");
    if ((unsigned)e->dtype >= SV_ST_NUM_DTYPES)
        return SV_FAIL(SV_ERR_INVALID, "%s: tensor \"%s\": invalid dtype %d", path, e->name, (int)e->dtype);
    if (e->ndim < 0 || e->ndim > SV_ST_MAX_DIMS)
        return SV_FAIL(SV_ERR_INVALID, "%s: tensor \"%s\": %d dimensions (0..%d allowed)", path, e->name, e->ndim,
                       SV_ST_MAX_DIMS);
    uint64_t n = sv_st_dtype_size(e->dtype);
    for (int d = 0; d < e->ndim; d++) {
        if (e->shape[d] < 0 || !sv_mul_u64(n, (uint64_t)e->shape[d], &n))
            return SV_FAIL(SV_ERR_INVALID, "%s: tensor \"%s\": bad shape[%d] = %lld", path, e->name, d,
                           (long long)e->shape[d]);
    }
    *out = n;
    return SV_OK;
}

static sv_status build_header(const char *path, const sv_st_entry *entries, size_t n, const char *const *meta_kv,
                              size_t n_meta, sv_json_writer *w) {
    uint64_t off = 0;
    sv_json_obj_begin(w);
    if (n_meta) {
        sv_json_key(w, "__metadata__");
        sv_json_obj_begin(w);
        for (size_t i = 0; i < n_meta; i++) {
            sv_json_key(w, meta_kv[2 * i]);
            sv_json_str(w, meta_kv[2 * i + 1]);
        }
        sv_json_obj_end(w);
    }
    for (size_t i = 0; i < n; i++) {
        const sv_st_entry *e = &entries[i];
        uint64_t nb, next;
        SV_TRY(entry_bytes(path, e, &nb));
        if (!sv_add_u64(off, nb, &next))
            return SV_FAIL(SV_ERR_INVALID, "%s: tensor \"%s\": data offsets overflow 64 bits", path, e->name);
        for (size_t j = 0; j < i; j++)
            if (!strcmp(entries[j].name, e->name))
                return SV_FAIL(SV_ERR_INVALID, "%s: duplicate tensor name \"%s\"", path, e->name);
        sv_json_key(w, e->name);
        sv_json_obj_begin(w);
        sv_json_key(w, "dtype");
        sv_json_str(w, sv_st_dtype_name(e->dtype));
        sv_json_key(w, "shape");
        sv_json_arr_begin(w);
        for (int d = 0; d < e->ndim; d++) sv_json_i64(w, e->shape[d]);
        sv_json_arr_end(w);
        sv_json_key(w, "data_offsets");
        sv_json_arr_begin(w);
        sv_json_u64(w, off);
        sv_json_u64(w, next);
        sv_json_arr_end(w);
        sv_json_obj_end(w);
        off = next;
    }
    sv_json_obj_end(w);
    return SV_OK;
}

static sv_status write_body(sv_fileio_out *out, const char *hdr, size_t hlen, const sv_st_entry *entries, size_t n,
                            sv_st_fill_fn fill, void *ctx) {
    size_t padded = (hlen + 7) & ~(size_t)7;
    uint8_t lenbuf[8];
    for (int i = 0; i < 8; i++) lenbuf[i] = (uint8_t)((uint64_t)padded >> (8 * i));
    SV_TRY(sv_fileio_out_write(out, lenbuf, 8));
    SV_TRY(sv_fileio_out_write(out, hdr, hlen));
    SV_TRY(sv_fileio_out_write(out, "        ", padded - hlen));
    uint8_t *chunk = NULL;
    sv_status s = SV_OK;
    for (size_t i = 0; i < n && s == SV_OK; i++) {
        uint64_t nb;
        entry_bytes(out->path, &entries[i], &nb);
        if (entries[i].data) {
            s = sv_fileio_out_write(out, entries[i].data, (size_t)nb);
            continue;
        }
        if (!fill) {
            s = SV_FAIL(SV_ERR_INVALID, "%s: tensor \"%s\" has no data and no fill callback", out->path,
                        entries[i].name);
            break;
        }
        if (!chunk && !(chunk = malloc(FILL_CHUNK))) {
            s = SV_FAIL(SV_ERR_OOM, "%s: cannot allocate the write buffer", out->path);
            break;
        }
        for (uint64_t o = 0; o < nb && s == SV_OK;) {
            size_t k = nb - o < FILL_CHUNK ? (size_t)(nb - o) : FILL_CHUNK;
            s = fill(ctx, i, o, chunk, k);
            if (s == SV_OK) s = sv_fileio_out_write(out, chunk, k);
            o += k;
        }
    }
    free(chunk);
    if (s != SV_OK) sv_err_frame(__FILE__, __LINE__);
    return s;
}

sv_status sv_safetensors_write(const char *path, const sv_st_entry *entries, size_t n, const char *const *meta_kv,
                               size_t n_meta, sv_st_fill_fn fill, void *ctx) {
    sv_json_writer w;
    sv_json_writer_init(&w, 0);
    const char *hdr;
    size_t hlen;
    sv_status s = build_header(path, entries, n, meta_kv, n_meta, &w);
    if (s == SV_OK) s = sv_json_writer_finish(&w, &hdr, &hlen);
    if (s != SV_OK) {
        sv_json_writer_free(&w);
        sv_err_frame(__FILE__, __LINE__);
        return s;
    }
    sv_fileio_out out;
    s = sv_fileio_out_open_tmp(&out, path); /* a fresh "<path>.tmp-XXXXXXXX" */
    if (s == SV_OK) {
        s = write_body(&out, hdr, hlen, entries, n, fill, ctx);
        if (s == SV_OK)
            s = sv_fileio_out_commit(&out, path); /* removes the temporary on failure */
        else
            sv_fileio_out_abort(&out);
    }
    sv_json_writer_free(&w);
    if (s != SV_OK) sv_err_frame(__FILE__, __LINE__);
    return s;
}
