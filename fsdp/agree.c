/* Host values and statuses agreed over f->world (fsdp/agree.h). Host values go through device
 * memory: NCCL needs device buffers. */
#include "fsdp/agree.h"

#include <stdio.h>
#include <string.h>

#include "core/log.h"

static sv_status coll_i64(sv_fsdp *f, int op /* 0 all_reduce MIN, 1 all_gather */, int64_t *recv, const int64_t *send,
                          size_t n) {
    size_t out_n = op ? n * (size_t)f->world_size : n;
    void *d = NULL;
    SV_TRY(sv_be_alloc(f->be, (out_n + n) * 8, &d));
    int64_t *dr = d, *ds = dr + out_n;
    sv_comm_req req;
    sv_status st = sv_be_upload(f->be, op ? (void *)ds : (void *)dr, send, n * 8);
    if (st == SV_OK && op == 0) st = sv_comm_all_reduce(f->world, dr, n, SV_COMM_I64, SV_COMM_MIN, &req);
    if (st == SV_OK && op == 1) st = sv_comm_all_gather(f->world, dr, ds, n, SV_COMM_I64, &req);
    if (st == SV_OK) st = sv_comm_wait(f->world, &req);
    if (st == SV_OK) st = sv_be_download(f->be, recv, dr, out_n * 8);
    sv_be_free(f->be, d);
    if (st != SV_OK) sv_err_frame(__FILE__, __LINE__);
    return st;
}

sv_status sv_fsdp_agree(sv_fsdp *f, sv_status st) {
    int64_t v = st != SV_OK ? f->rank : f->world_size, lowest;
    SV_TRY(coll_i64(f, 0, &lowest, &v, 1));
    if (lowest == f->world_size) return SV_OK;
    /* The failing rank's status and message, so every rank reports the same cause. */
    enum { N = 1024 / 8 };
    int64_t msg[N] = {0};
    if (f->rank == lowest) {
        msg[0] = st;
        snprintf((char *)&msg[1], sizeof msg - 8, "%s", sv_err_msg());
    }
    void *d = NULL;
    SV_TRY(sv_be_alloc(f->be, sizeof msg, &d));
    sv_status cs = sv_be_upload(f->be, d, msg, sizeof msg);
    if (cs == SV_OK) cs = sv_comm_broadcast_sync(f->world, d, N, SV_COMM_I64, (int)lowest);
    if (cs == SV_OK) cs = sv_be_download(f->be, msg, d, sizeof msg);
    sv_be_free(f->be, d);
    SV_TRY(cs);
    if (f->rank == lowest) return st;
    ((char *)msg)[sizeof msg - 1] = 0;
    /* a message agreed before (a failure passed through two agreements) names its rank once */
    char tag[64];
    snprintf(tag, sizeof tag, " (reported by rank %lld)", (long long)lowest);
    const char *m = (const char *)&msg[1];
    size_t n = strlen(m), tn = strlen(tag);
    if (n >= tn && !strcmp(m + n - tn, tag)) return SV_FAIL((sv_status)msg[0], "%s", m);
    return SV_FAIL((sv_status)msg[0], "%s%s", m, tag);
}

sv_status sv_fsdp_world_min_i64(sv_fsdp *f, int64_t *recv, const int64_t *send, size_t n) {
    return coll_i64(f, 0, recv, send, n);
}

sv_status sv_fsdp_world_gather_i64(sv_fsdp *f, int64_t *recv, const int64_t *send, size_t n) {
    return coll_i64(f, 1, recv, send, n);
}
