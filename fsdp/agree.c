/* Host values and statuses agreed over a communicator (fsdp/agree.h). With a staging backend the
 * host values go through its device memory: NCCL needs device buffers. */
#include "fsdp/agree.h"

#include <stdio.h>
#include <string.h>

#include "core/log.h"

enum { COLL_MIN, COLL_GATHER, COLL_BCAST };

/* One int64 collective on host buffers: COLL_MIN (all-reduce MIN of send[0 .. n) into recv),
 * COLL_GATHER (all-gather: recv holds n values per rank) or COLL_BCAST (root's send into recv),
 * staged through be's device memory unless be is NULL. */
static sv_status coll_i64(sv_comm *c, sv_backend *be, int op, int root, int64_t *recv, const int64_t *send, size_t n) {
    size_t out_n = op == COLL_GATHER ? n * (size_t)sv_comm_size(c) : n;
    int64_t *r = recv; /* the collective's buffers: the host's, or be's staging */
    const int64_t *s = send;
    void *d = NULL;
    sv_status st = SV_OK;
    if (be) {
        SV_TRY(sv_be_alloc(be, (op == COLL_GATHER ? out_n + n : n) * 8, &d));
        int64_t *ds = op == COLL_GATHER ? (int64_t *)d + out_n : d;
        st = sv_be_upload(be, ds, send, n * 8);
        r = d, s = ds;
    } else if (op != COLL_GATHER && recv != send) {
        memcpy(recv, send, n * 8); /* MIN and broadcast work in place */
    }
    sv_comm_req req;
    if (st == SV_OK) {
        if (op == COLL_MIN)
            st = sv_comm_all_reduce(c, r, n, SV_COMM_I64, SV_COMM_MIN, &req);
        else if (op == COLL_GATHER)
            st = sv_comm_all_gather(c, r, s, n, SV_COMM_I64, &req);
        else
            st = sv_comm_broadcast(c, r, n, SV_COMM_I64, root, &req);
    }
    if (st == SV_OK) st = sv_comm_wait(c, &req);
    if (be) {
        if (st == SV_OK) st = sv_be_download(be, recv, r, out_n * 8);
        sv_be_free(be, d);
    }
    if (st != SV_OK) sv_err_frame(__FILE__, __LINE__);
    return st;
}

sv_status sv_fsdp_agree_comm(sv_comm *c, sv_backend *stage, sv_status st) {
    int rank = sv_comm_rank(c), world = sv_comm_size(c);
    int64_t v = st != SV_OK ? rank : world, lowest;
    SV_TRY(coll_i64(c, stage, COLL_MIN, 0, &lowest, &v, 1));
    if (lowest == world) return SV_OK;
    /* The failing rank's status and message, so every rank reports the same cause. */
    enum { N = 1 + SV_ERR_MSG_CAP / 8 };
    int64_t msg[N] = {0};
    if (rank == lowest) {
        msg[0] = st;
        snprintf((char *)&msg[1], sizeof msg - 8, "%s", sv_err_msg());
    }
    SV_TRY(coll_i64(c, stage, COLL_BCAST, (int)lowest, msg, msg, N));
    if (rank == lowest) return st;
    ((char *)msg)[sizeof msg - 1] = 0;
    /* a message agreed before (a failure passed through two agreements) names its rank once */
    char tag[64];
    snprintf(tag, sizeof tag, " (reported by rank %lld)", (long long)lowest);
    const char *m = (const char *)&msg[1];
    size_t n = strlen(m), tn = strlen(tag);
    if (n >= tn && !strcmp(m + n - tn, tag)) return SV_FAIL((sv_status)msg[0], "%s", m);
    return SV_FAIL((sv_status)msg[0], "%s%s", m, tag);
}

sv_status sv_fsdp_agree(sv_fsdp *f, sv_status st) { return sv_fsdp_agree_comm(f->world, f->be, st); }

sv_status sv_fsdp_world_min_i64(sv_fsdp *f, int64_t *recv, const int64_t *send, size_t n) {
    return coll_i64(f->world, f->be, COLL_MIN, 0, recv, send, n);
}

sv_status sv_fsdp_world_bcast_str(sv_fsdp *f, char *buf, size_t cap) {
    enum { MAXW = 65536 / 8 };
    int64_t w[MAXW];
    const size_t n = (cap + 7) / 8;
    if (cap == 0 || n > MAXW) return SV_FAIL(SV_ERR_INVALID, "string broadcast of %zu bytes (at most 65536)", cap);
    memset(w, 0, n * 8);
    memcpy(w, buf, strnlen(buf, cap - 1));
    SV_TRY(coll_i64(f->world, f->be, COLL_BCAST, 0, w, w, n));
    memcpy(buf, w, cap - 1);
    buf[cap - 1] = 0;
    return SV_OK;
}

sv_status sv_fsdp_world_gather_i64(sv_fsdp *f, int64_t *recv, const int64_t *send, size_t n) {
    return coll_i64(f->world, f->be, COLL_GATHER, 0, recv, send, n);
}
