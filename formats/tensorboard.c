#include "formats/tensorboard.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/crc32c.h"

/* Protobuf wire types. */
enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_I32 = 5 };

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- encoding --------------------------------------------------------------------------- */

static size_t put_varint(uint8_t *p, uint64_t v) {
    size_t n = 0;
    while (v >= 0x80) {
        p[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (uint8_t)v;
    return n;
}

static size_t varint_len(uint64_t v) {
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static void put_le32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static void put_le64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get_le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get_le64(const uint8_t *p) { return (uint64_t)get_le32(p) | (uint64_t)get_le32(p + 4) << 32; }

static size_t put_double_field(uint8_t *p, int field, double v) {
    uint64_t u;
    memcpy(&u, &v, 8);
    p[0] = (uint8_t)(field << 3 | WT_I64);
    put_le64(p + 1, u);
    return 9;
}

/* Frame `data` (already at rec + 12) as a TFRecord in place and write it. */
static sv_status write_record(sv_tb_writer *w, size_t data_len) {
    uint8_t *r = w->rec;
    put_le64(r, data_len);
    put_le32(r + 8, sv_crc32c_mask(sv_crc32c(r, 8)));
    put_le32(r + 12 + data_len, sv_crc32c_mask(sv_crc32c(r + 12, data_len)));
    return sv_fileio_out_write(&w->out, r, 12 + data_len + 4);
}

sv_status sv_tb_open(sv_tb_writer *w, const char *dir, double wall_time) {
    if (wall_time <= 0) wall_time = now_seconds();
    SV_TRY(sv_fileio_mkdirs(dir, 0755));
    char host[256] = "localhost";
    if (gethostname(host, sizeof host) != 0 || !host[0]) snprintf(host, sizeof host, "localhost");
    host[sizeof host - 1] = 0;
    for (char *c = host; *c; c++)
        if (*c == '/') *c = '_';
    char path[PATH_MAX]; /* as long as a run directory's files may be (train leaves 256 bytes for their names) */
    sv_status s = SV_ERR_IO;
    for (int attempt = 0; attempt < 100 && s != SV_OK; attempt++) {
        int n;
        if (attempt == 0)
            n = snprintf(path, sizeof path, "%s/events.out.tfevents.%lld.%s", dir, (long long)wall_time, host);
        else if (attempt == 1)
            n = snprintf(path, sizeof path, "%s/events.out.tfevents.%lld.%s.%ld", dir, (long long)wall_time, host,
                         (long)getpid());
        else
            n = snprintf(path, sizeof path, "%s/events.out.tfevents.%lld.%s.%ld.%d", dir, (long long)wall_time, host,
                         (long)getpid(), attempt);
        if (n < 0 || (size_t)n >= sizeof path) return SV_FAIL(SV_ERR_INVALID, "event file path too long in %s", dir);
        struct stat st;
        if (stat(path, &st) == 0) continue; /* keep an existing file */
        SV_TRY(sv_fileio_out_open(&w->out, path, 1));
        s = SV_OK;
    }
    if (s != SV_OK) return SV_FAIL(SV_ERR_IO, "cannot create a new event file in %s", dir);
    uint8_t *d = w->rec + 12;
    size_t n = put_double_field(d, 1, wall_time);
    size_t vl = strlen(SV_TB_FILE_VERSION);
    d[n++] = 3 << 3 | WT_LEN;
    n += put_varint(d + n, vl);
    memcpy(d + n, SV_TB_FILE_VERSION, vl);
    n += vl;
    s = write_record(w, n);
    if (s != SV_OK) {
        sv_fileio_out_abort(&w->out);
        sv_err_frame(__FILE__, __LINE__);
    }
    return s;
}

const char *sv_tb_path(const sv_tb_writer *w) { return w->out.path; }

sv_status sv_tb_scalar(sv_tb_writer *w, const char *tag, int64_t step, float value, double wall_time) {
    size_t tl = strlen(tag);
    if (tl == 0 || tl > SV_TB_MAX_TAG)
        return SV_FAIL(SV_ERR_INVALID, "TensorBoard tag \"%.64s\" has %zu bytes (1..%d allowed)", tag, tl,
                       SV_TB_MAX_TAG);
    if (wall_time <= 0) wall_time = now_seconds();
    /* Sizes inside out: Value{tag, simple_value} -> Summary{value} -> Event. */
    size_t value_len = 1 + varint_len(tl) + tl + 1 + 4;
    size_t summary_len = 1 + varint_len(value_len) + value_len;
    uint8_t *d = w->rec + 12;
    size_t n = put_double_field(d, 1, wall_time);
    if (step != 0) { /* proto3 omits default values */
        d[n++] = 2 << 3 | WT_VARINT;
        n += put_varint(d + n, (uint64_t)step); /* negative int64: 10-byte two's complement */
    }
    d[n++] = 5 << 3 | WT_LEN;
    n += put_varint(d + n, summary_len);
    d[n++] = 1 << 3 | WT_LEN;
    n += put_varint(d + n, value_len);
    d[n++] = 1 << 3 | WT_LEN;
    n += put_varint(d + n, tl);
    memcpy(d + n, tag, tl);
    n += tl;
    d[n++] = 2 << 3 | WT_I32;
    uint32_t u;
    memcpy(&u, &value, 4);
    put_le32(d + n, u);
    n += 4;
    SV_TRY(write_record(w, n));
    return SV_OK;
}

sv_status sv_tb_restart(sv_tb_writer *w, int64_t step, double wall_time) {
    if (step <= 0) return SV_OK;
    if (wall_time <= 0) wall_time = now_seconds();
    /* Event{wall_time, step, session_log=7 {status=1 START}} */
    uint8_t *d = w->rec + 12;
    size_t n = put_double_field(d, 1, wall_time);
    d[n++] = 2 << 3 | WT_VARINT;
    n += put_varint(d + n, (uint64_t)step);
    d[n++] = 7 << 3 | WT_LEN;
    d[n++] = 2;
    d[n++] = 1 << 3 | WT_VARINT;
    d[n++] = 1;
    return write_record(w, n);
}

sv_status sv_tb_sync(sv_tb_writer *w) { return sv_fileio_out_sync(&w->out); }

sv_status sv_tb_close(sv_tb_writer *w) { return sv_fileio_out_close(&w->out); }

/* ---- decoding --------------------------------------------------------------------------- */

typedef struct pbuf {
    const uint8_t *p;
    size_t len, pos;
} pbuf;

static int get_varint(pbuf *b, uint64_t *out) {
    uint64_t v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        if (b->pos >= b->len) return 0;
        uint8_t c = b->p[b->pos++];
        if (shift == 63 && c > 1) return 0;
        v |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) {
            *out = v;
            return 1;
        }
    }
    return 0;
}

/* Read a field key and, for LEN fields, the payload sub-buffer. Returns 0 when malformed. */
static int next_field(pbuf *b, uint32_t *field, int *wt, pbuf *sub, uint64_t *num) {
    uint64_t key;
    if (!get_varint(b, &key) || (key >> 3) == 0 || (key >> 3) > 0x1fffffff) return 0;
    *field = (uint32_t)(key >> 3);
    *wt = (int)(key & 7);
    switch (*wt) {
    case WT_VARINT: return get_varint(b, num);
    case WT_I64:
        if (b->len - b->pos < 8) return 0;
        *num = get_le64(b->p + b->pos);
        b->pos += 8;
        return 1;
    case WT_I32:
        if (b->len - b->pos < 4) return 0;
        *num = get_le32(b->p + b->pos);
        b->pos += 4;
        return 1;
    case WT_LEN: {
        uint64_t l;
        if (!get_varint(b, &l) || l > b->len - b->pos) return 0;
        sub->p = b->p + b->pos;
        sub->len = (size_t)l;
        sub->pos = 0;
        b->pos += (size_t)l;
        return 1;
    }
    default: return 0; /* groups (3, 4) and reserved types are not used by Event */
    }
}

static sv_status push_scalar(sv_tb_events *ev, const char *name, const uint8_t *tag, size_t tl, int64_t step,
                             float value, double wall) {
    if (ev->n == ev->cap) {
        size_t nc = ev->cap ? ev->cap * 2 : 64;
        sv_tb_scalar_rec *ni = realloc(ev->items, nc * sizeof *ni);
        if (!ni) return SV_FAIL(SV_ERR_OOM, "%s: out of memory decoding events", name);
        ev->items = ni;
        ev->cap = nc;
    }
    char *t = malloc(tl + 1);
    if (!t) return SV_FAIL(SV_ERR_OOM, "%s: out of memory decoding events", name);
    memcpy(t, tag, tl);
    t[tl] = 0;
    ev->items[ev->n++] = (sv_tb_scalar_rec){.tag = t, .step = step, .value = value, .wall_time = wall};
    return SV_OK;
}

static sv_status bad_event(const char *name, size_t rec, size_t off, const char *what) {
    return SV_FAIL(SV_ERR_FORMAT, "%s: record %zu (byte %zu): malformed Event protobuf: %s", name, rec, off, what);
}

/* Decode one Event; scalar values are appended after the whole event parsed (step and
 * wall_time may come after the summary in a valid encoding). */
static sv_status decode_event(sv_tb_events *ev, const char *name, size_t rec, size_t off, const uint8_t *data,
                              size_t len) {
    pbuf b = {data, len, 0}, summary = {NULL, 0, 0};
    double wall = 0;
    int64_t step = 0;
    int has_summary = 0;
    while (b.pos < b.len) {
        uint32_t field;
        int wt;
        pbuf sub;
        uint64_t num = 0;
        if (!next_field(&b, &field, &wt, &sub, &num)) return bad_event(name, rec, off, "bad field");
        if (field == 1 && wt == WT_I64)
            memcpy(&wall, &num, 8);
        else if (field == 2 && wt == WT_VARINT)
            step = (int64_t)num;
        else if (field == 3 && wt == WT_LEN) {
            if (!ev->file_version[0]) {
                size_t k = sub.len < sizeof ev->file_version - 1 ? sub.len : sizeof ev->file_version - 1;
                memcpy(ev->file_version, sub.p, k);
                ev->file_version[k] = 0;
            }
        } else if (field == 5 && wt == WT_LEN) {
            summary = sub; /* proto3: last one wins; writers send one */
            has_summary = 1;
        } else if (field == 1 || field == 2 || field == 3 || field == 5) {
            return bad_event(name, rec, off, "known field with the wrong wire type");
        }
    }
    if (!has_summary) return SV_OK;
    while (summary.pos < summary.len) {
        uint32_t field;
        int wt;
        pbuf val;
        uint64_t num = 0;
        if (!next_field(&summary, &field, &wt, &val, &num)) return bad_event(name, rec, off, "bad Summary field");
        if (field != 1 || wt != WT_LEN) continue;
        const uint8_t *tag = NULL;
        size_t tl = 0;
        int has_simple = 0;
        float value = 0;
        while (val.pos < val.len) {
            pbuf s2;
            if (!next_field(&val, &field, &wt, &s2, &num)) return bad_event(name, rec, off, "bad Summary.Value field");
            if (field == 1 && wt == WT_LEN) {
                tag = s2.p;
                tl = s2.len;
            } else if (field == 2 && wt == WT_I32) {
                uint32_t u = (uint32_t)num;
                memcpy(&value, &u, 4);
                has_simple = 1;
            }
        }
        if (has_simple) SV_TRY(push_scalar(ev, name, tag ? tag : (const uint8_t *)"", tl, step, value, wall));
    }
    return SV_OK;
}

sv_status sv_tb_decode(const void *buf, size_t len, const char *name, int allow_truncated_tail, sv_tb_events *ev) {
    memset(ev, 0, sizeof *ev);
    if (!name) name = "event file";
    const uint8_t *p = buf;
    size_t pos = 0;
    while (pos < len) {
        size_t rec = ev->n_records;
        if (len - pos < 12) goto truncated;
        uint64_t dlen = get_le64(p + pos);
        uint32_t lcrc = get_le32(p + pos + 8);
        if (sv_crc32c_mask(sv_crc32c(p + pos, 8)) != lcrc)
            return SV_FAIL(SV_ERR_CORRUPT,
                           "%s: record %zu at byte %zu: length CRC mismatch "
                           "(corrupt length field)",
                           name, rec, pos);
        if (dlen > len - pos - 12 || len - pos - 12 - dlen < 4) goto truncated;
        const uint8_t *data = p + pos + 12;
        uint32_t dcrc = get_le32(data + dlen);
        if (sv_crc32c_mask(sv_crc32c(data, (size_t)dlen)) != dcrc)
            return SV_FAIL(SV_ERR_CORRUPT,
                           "%s: record %zu at byte %zu: data CRC mismatch "
                           "(%llu data bytes)",
                           name, rec, pos, (unsigned long long)dlen);
        SV_TRY(decode_event(ev, name, rec, pos, data, (size_t)dlen));
        ev->n_records++;
        pos += 12 + (size_t)dlen + 4;
    }
    return SV_OK;
truncated:
    if (allow_truncated_tail) {
        ev->truncated_tail = 1;
        return SV_OK;
    }
    return SV_FAIL(SV_ERR_CORRUPT,
                   "%s: truncated: the file ends inside record %zu (starting at "
                   "byte %zu, file is %zu bytes)",
                   name, ev->n_records, pos, len);
}

sv_status sv_tb_read_file(const char *path, int allow_truncated_tail, sv_tb_events *ev) {
    char *buf;
    size_t len;
    memset(ev, 0, sizeof *ev);
    SV_TRY(sv_fileio_read_small(path, (size_t)1 << 30, &buf, &len));
    sv_status s = sv_tb_decode(buf, len, path, allow_truncated_tail, ev);
    free(buf);
    if (s != SV_OK) sv_err_frame(__FILE__, __LINE__);
    return s;
}

void sv_tb_events_free(sv_tb_events *ev) {
    for (size_t i = 0; i < ev->n; i++) free(ev->items[i].tag);
    free(ev->items);
    memset(ev, 0, sizeof *ev);
}
