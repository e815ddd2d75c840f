/* shardvit core: strict JSON parser (into a DOM), lookup helpers and a JSON text writer.
 *
 * Parsing is strict RFC 8259: no comments, no trailing commas, no NaN/Infinity, no leading
 * zeros, no control characters in strings, valid UTF-8 only, no lone surrogates, no duplicate
 * object keys, nothing but whitespace after the value. Any byte string is safe to parse: depth
 * and size are limited, and every error reports the byte offset and a reason. The input need not
 * be NUL-terminated.
 *
 * Numbers keep the double value and, when the literal is integral, the exact int64 value
 * (`is_int`): a plain integer literal that fits int64 is exact even beyond 2^53; a literal with
 * a fraction/exponent counts as integral only when its value is integral and |v| <= 2^53.
 * Number conversion uses strtod/snprintf, so the process must stay in the "C" LC_NUMERIC locale
 * (shardvit never calls setlocale).
 *
 * Ownership: sv_json_parse fills a caller-owned sv_json_doc; every node, key and string belongs
 * to it and is released by sv_json_doc_free. Nodes know their parent, so typed getters can name
 * the full JSON path (e.g. `index.json: units[3].tensors[0].shape: expected array, found
 * string`). The DOM uses malloc: it is for headers and config files, not for the training step. */
#ifndef SV_CORE_JSON_H
#define SV_CORE_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

typedef enum sv_json_type {
    SV_JSON_NULL = 0,
    SV_JSON_BOOL,
    SV_JSON_NUMBER,
    SV_JSON_STRING,
    SV_JSON_ARRAY,
    SV_JSON_OBJECT,
} sv_json_type;

typedef struct sv_json sv_json;
typedef struct sv_json_member sv_json_member;

struct sv_json {
    sv_json_type type;
    const sv_json *parent; /* NULL for the root */
    union {
        int boolean;
        struct {
            double d;
            int64_t i; /* exact value when is_int */
            int is_int;
            int literal_int; /* written as digits only (no fraction, no exponent) and fits int64 */
        } num;
        struct {
            char *s; /* NUL-terminated; may contain embedded NULs (\u0000), see len */
            size_t len;
        } str;
        struct {
            sv_json *items;
            size_t n;
        } arr;
        struct {
            sv_json_member *members; /* in document order */
            size_t n;
        } obj;
    } u;
};

struct sv_json_member {
    char *key; /* NUL-terminated, may contain embedded NULs, see key_len */
    size_t key_len;
    size_t key_off; /* byte offset of the key's opening quote in the parsed text */
    sv_json value;
};

typedef struct sv_json_doc {
    sv_json root;
    char source[256]; /* name used in messages (a file path, "safetensors header", ...) */
} sv_json_doc;

typedef struct sv_json_limits {
    size_t max_bytes; /* input longer than this is rejected; 0 = default (256 MiB) */
    int max_depth;    /* nesting of arrays/objects; 0 = default (128) */
} sv_json_limits;

/* Length of the valid UTF-8 sequence starting at s[0] (n >= 1 bytes available), or 0 when the
 * bytes there are not valid UTF-8 (overlong forms, surrogates, > U+10FFFF, a cut sequence): the
 * rule the parser applies to strings, for other text files that must be UTF-8. */
size_t sv_json_utf8_seq(const unsigned char *s, size_t n);

/* Parse `len` bytes of `text` into `doc` (any previous content is NOT freed). `source` names
 * the input in error messages (may be NULL). `limits` may be NULL for the defaults.
 * On failure returns SV_ERR_FORMAT (SV_ERR_OOM if malloc fails) with a message
 * "<source>: JSON error at byte <off>: <reason>", and `doc` is left empty (safe to free). */
sv_status sv_json_parse(sv_json_doc *doc, const char *text, size_t len, const char *source,
                        const sv_json_limits *limits);

/* Release everything the document owns; the doc becomes an empty null document. Idempotent. */
void sv_json_doc_free(sv_json_doc *doc);

/* Is the file at `path` (a regular file of at most max_bytes, read with sv_fileio_read_small,
 * which follows a symbolic link: callers refuse links first) a JSON object holding every one of
 * the n member names in keys, member i of type types[i] (types nullable: any type)? 0 for
 * anything else; no error state is left behind. For recognising a JSON file this program wrote
 * earlier. */
int sv_json_file_has_members(const char *path, size_t max_bytes, const char *const *keys, const sv_json_type *types,
                             size_t n);

/* ---- lookup (no error state; NULL when absent or when the node has the wrong type) ---- */
const char *sv_json_type_name(sv_json_type t);
const sv_json *sv_json_member_get(const sv_json *obj, const char *key); /* NULL if not object */
/* The member at a dotted path ("build.compiler"; keys of at most 63 bytes), or NULL. */
const sv_json *sv_json_at_path(const sv_json *obj, const char *path);
const sv_json *sv_json_index(const sv_json *arr, size_t i); /* NULL if out of range */
size_t sv_json_count(const sv_json *v);                     /* items/members of an array/object; 0 otherwise */

/* Write the node's path ("units[3].name", "(root)") into buf (always NUL-terminated). */
void sv_json_path(const sv_json *v, char *buf, size_t cap);

/* ---- typed access to a node; failures are SV_ERR_FORMAT naming source and path ---- */
sv_status sv_json_as_i64(const sv_json *v, int64_t *out); /* integral number only */
sv_status sv_json_as_f64(const sv_json *v, double *out);
sv_status sv_json_as_bool(const sv_json *v, int *out);
sv_status sv_json_as_str(const sv_json *v, const char **out, size_t *len_out /*nullable*/);
/* Checks the node's type (SV_JSON_* ); message "... expected array, found string". */
sv_status sv_json_expect(const sv_json *v, sv_json_type t);

/* ---- typed access to a required member of an object (missing => SV_ERR_FORMAT naming the
 * path "units[3].shape: missing") ---- */
sv_status sv_json_get(const sv_json *obj, const char *key, sv_json_type t, const sv_json **out);
sv_status sv_json_get_i64(const sv_json *obj, const char *key, int64_t *out);
sv_status sv_json_get_f64(const sv_json *obj, const char *key, double *out);
sv_status sv_json_get_bool(const sv_json *obj, const char *key, int *out);
sv_status sv_json_get_str(const sv_json *obj, const char *key, const char **out, size_t *len_out /*nullable*/);
/* Optional members: absent (or JSON null) => *out = dflt and SV_OK; present with the wrong
 * type => error. */
sv_status sv_json_opt_i64(const sv_json *obj, const char *key, int64_t dflt, int64_t *out);
sv_status sv_json_opt_f64(const sv_json *obj, const char *key, double dflt, double *out);
sv_status sv_json_opt_bool(const sv_json *obj, const char *key, int dflt, int *out);
sv_status sv_json_opt_str(const sv_json *obj, const char *key, const char *dflt, const char **out);

/* ---- writer ----
 * Builds JSON text in a growable malloc'd buffer. Calls mirror the document structure:
 * obj_begin, key, <value>, key, <value>, obj_end. Misuse (a value where a key is expected,
 * unbalanced end, nesting deeper than SV_JSON_WRITER_MAX_DEPTH) and allocation failure are
 * sticky: later calls do nothing and sv_json_writer_finish reports the first error.
 * Strings are escaped (", \, control characters; everything else passes through as UTF-8).
 * Doubles are written with the shortest of %.15g/%.16g/%.17g that reads back bit-exactly;
 * non-finite doubles are written as null (JSON has no NaN/Inf). Integers are exact. */
#define SV_JSON_WRITER_MAX_DEPTH 128

typedef struct sv_json_writer {
    char *buf;
    size_t len, cap;
    int indent; /* 0: compact single line; n > 0: pretty, n spaces per level */
    int depth;
    uint8_t is_obj[SV_JSON_WRITER_MAX_DEPTH];
    uint8_t has_items[SV_JSON_WRITER_MAX_DEPTH];
    int expect_value; /* a key was just written */
    int done;         /* a complete top-level value was written */
    sv_status err;
    char errmsg[160];
} sv_json_writer;

void sv_json_writer_init(sv_json_writer *w, int indent);
void sv_json_writer_free(sv_json_writer *w);
void sv_json_obj_begin(sv_json_writer *w);
void sv_json_obj_end(sv_json_writer *w);
void sv_json_arr_begin(sv_json_writer *w);
void sv_json_arr_end(sv_json_writer *w);
void sv_json_key(sv_json_writer *w, const char *key);
void sv_json_str(sv_json_writer *w, const char *s);
void sv_json_strn(sv_json_writer *w, const char *s, size_t n);
void sv_json_i64(sv_json_writer *w, int64_t v);
void sv_json_u64(sv_json_writer *w, uint64_t v);
/* The shortest %.*g text (15 to 17 significant digits, trailing zeros dropped) that strtod reads
 * back as exactly v, into o (cap bytes, cap >= 32 suffices); returns its length as snprintf does.
 * The number form of sv_json_f64, also for values printed as flags. v finite. */
int sv_f64_shortest(char *o, size_t cap, double v);
void sv_json_f64(sv_json_writer *w, double v);
/* A double in a fixed printf form, for records whose number format is part of their contract
 * (metrics.jsonl): `digits` significant digits as %.*g, or `decimals` after the point as %.*f
 * (both clamped to 0..40). Non-finite values are written as null, like sv_json_f64. */
void sv_json_f64_sig(sv_json_writer *w, double v, int digits);
void sv_json_f64_fixed(sv_json_writer *w, double v, int decimals);
void sv_json_bool(sv_json_writer *w, int v);
void sv_json_null(sv_json_writer *w);
/* A value given as JSON text, written as is: the caller guarantees that `json` is one complete
 * JSON value (e.g. the output of another writer); nothing checks it. */
void sv_json_raw(sv_json_writer *w, const char *json);
/* Re-emit a parsed node (deep copy as text). */
void sv_json_value(sv_json_writer *w, const sv_json *v);

/* Check that exactly one complete value was written and hand out the text (NUL-terminated,
 * owned by the writer, valid until sv_json_writer_free). `len` may be NULL. */
sv_status sv_json_writer_finish(sv_json_writer *w, const char **text, size_t *len);

#endif
