/* shardvit formats: safetensors reader and writer (export/import of timm-compatible weights).
 *
 * File layout: u64 little-endian header length N | N bytes of JSON header | data section.
 * Header: {"__metadata__": {"k": "v", ...}, "<name>": {"dtype": "F32", "shape": [..],
 * "data_offsets": [begin, end]}, ...}; offsets are relative to the start of the data section.
 *
 * The writer emits "__metadata__" first, then the tensors in the order given, packs their data
 * contiguously in that order, and pads the header with spaces so that N is a multiple of 8 (as
 * the reference Rust implementation does, keeping the data section 8-byte aligned).
 *
 * The reader trusts nothing: 8 <= file size; 2 <= N <= 100,000,000 and N <= file size - 8; the
 * header is strict JSON whose top level is an object; "__metadata__" (optional) maps strings to
 * strings; every other entry is an object with a known dtype, a shape of non-negative integers
 * (at most SV_ST_MAX_DIMS) and data_offsets [begin, end] with begin <= end and
 * end - begin == numel * dtype size (overflow-checked); names are unique; sorted by offset, the
 * tensors tile the data section exactly (first begins at 0, each begins where the previous
 * ended, the last ends at the end of the file: no holes, no overlap, nothing outside the file).
 * Unknown extra keys inside a tensor entry are ignored (as the reference implementation does).
 * Errors are SV_ERR_FORMAT (SV_ERR_CORRUPT for a truncated file) naming the file, the tensor and
 * the problem. */
#ifndef SV_FORMATS_SAFETENSORS_H
#define SV_FORMATS_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

#define SV_ST_MAX_DIMS 8
#define SV_ST_MAX_HEADER 100000000ull

typedef enum sv_st_dtype {
    SV_ST_BOOL = 0,
    SV_ST_U8,
    SV_ST_I8,
    SV_ST_F8_E5M2,
    SV_ST_F8_E4M3,
    SV_ST_I16,
    SV_ST_U16,
    SV_ST_F16,
    SV_ST_BF16,
    SV_ST_I32,
    SV_ST_U32,
    SV_ST_F32,
    SV_ST_F64,
    SV_ST_I64,
    SV_ST_U64,
    SV_ST_NUM_DTYPES
} sv_st_dtype;

/* "F32", "BF16", ...; bytes per element. */
const char *sv_st_dtype_name(sv_st_dtype dt);
size_t sv_st_dtype_size(sv_st_dtype dt);
/* Parse a dtype name (exact, case-sensitive); returns 0 and sets *out, or -1 if unknown. */
int sv_st_dtype_parse(const char *name, sv_st_dtype *out);

typedef struct sv_st_tensor {
    char *name; /* owned by the sv_st_file */
    sv_st_dtype dtype;
    int ndim;
    int64_t shape[SV_ST_MAX_DIMS];
    uint64_t numel;
    uint64_t offset; /* absolute byte offset in the file */
    uint64_t nbytes;
} sv_st_tensor;

typedef struct sv_st_meta {
    char *key, *value; /* owned by the sv_st_file */
} sv_st_meta;

typedef struct sv_st_file {
    int fd;             /* -1 for an in-memory file */
    const uint8_t *mem; /* in-memory file contents (not owned), or NULL */
    char path[512];
    uint64_t file_size;
    uint64_t data_start; /* 8 + N */
    size_t n_tensors;
    sv_st_tensor *tensors;        /* in header order */
    const sv_st_tensor **by_name; /* the same tensors sorted by name (lookups: binary search) */
    size_t n_meta;
    sv_st_meta *meta; /* in header order */
} sv_st_file;

/* Open and fully validate `path`. On failure nothing stays open or allocated. */
sv_status sv_safetensors_open(sv_st_file *f, const char *path);
/* Validate an in-memory file image (`bytes` must outlive `f`; reads copy from it). `name` is
 * used in messages. Any byte string is safe to pass. */
sv_status sv_safetensors_open_mem(sv_st_file *f, const void *bytes, size_t len, const char *name);
void sv_safetensors_close(sv_st_file *f);

/* Lookups; NULL when absent. A tensor by name is found in O(log n) (a header may hold millions
 * of entries), the metadata by a linear scan. */
const sv_st_tensor *sv_safetensors_find(const sv_st_file *f, const char *name);
const char *sv_safetensors_meta(const sv_st_file *f, const char *key);

/* Copy bytes [byte_off, byte_off + nbytes) of tensor t's data into dst (raw file bytes,
 * little-endian). Range outside the tensor => SV_ERR_INVALID. */
sv_status sv_safetensors_read_raw(const sv_st_file *f, const sv_st_tensor *t, uint64_t byte_off, uint64_t nbytes,
                                  void *dst);
/* Read elements [elem_off, elem_off + count) of an F32, BF16 or F16 tensor as fp32 into
 * dst (count floats). Other dtypes => SV_ERR_UNSUPPORTED. Converts in bounded chunks. */
sv_status sv_safetensors_read_f32(const sv_st_file *f, const sv_st_tensor *t, uint64_t elem_off, uint64_t count,
                                  float *dst);

/* IEEE half -> float (exact; subnormals, inf and NaN preserved). */
float sv_st_f16_to_f32(uint16_t h);

/* ---- writer ---- */

typedef struct sv_st_entry {
    const char *name;
    sv_st_dtype dtype;
    int ndim;
    const int64_t *shape; /* ndim entries, each >= 0 */
    const void *data;     /* numel * dtype size bytes, or NULL to use the callback */
} sv_st_entry;

/* Fills buf with bytes [byte_off, byte_off + n) of entry `index`'s data. Called in order, in
 * chunks of at most 4 MiB, only for entries whose `data` is NULL. */
typedef sv_status (*sv_st_fill_fn)(void *ctx, size_t index, uint64_t byte_off, void *buf, size_t n);

/* Write `path` atomically (to a fresh "<path>.tmp-XXXXXXXX" created with O_EXCL, so no existing
 * file is opened; fsync, rename, fsync the directory): the header
 * from entries[0..n) and metadata pairs meta_kv[2*i] -> meta_kv[2*i+1] (n_meta pairs; none:
 * meta_kv may be NULL), then the data. Names must be unique and non-empty and must not be
 * "__metadata__". `fill`/`ctx` are needed only if some entry has data == NULL. */
sv_status sv_safetensors_write(const char *path, const sv_st_entry *entries, size_t n, const char *const *meta_kv,
                               size_t n_meta, sv_st_fill_fn fill, void *ctx);

#endif
