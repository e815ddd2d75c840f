/* MPI transport for sv_comm (host memory, CPU backend). See docs/comm.md for the design.
 *
 * Every communicator works on its own MPI communicator (MPI_Comm_dup of MPI_COMM_WORLD, or the
 * result of MPI_Comm_split), so user code on MPI_COMM_WORLD never matches our collectives, and
 * its error handler is MPI_ERRORS_RETURN so a failing peer becomes SV_ERR_COMM, not an abort.
 *
 * Chunking: no single MPI call moves more than `chunk` bytes per rank (SV_COMM_CHUNK_BYTES;
 * MPICH stalls on reductions of tens of MB on some machines, and MPI counts are int). One
 * collective becomes `npieces` MPI calls ("pieces"); at most SV_COMM_MPI_WINDOW of them are in
 * flight, the rest are issued from `test` as earlier ones complete (comm.c keeps the ordering
 * rule of comm_impl.h). Pieces per kind, W = chunk / element size:
 *   all_reduce, broadcast  contiguous pieces of <= W elements of the buffer.
 *   all_gather,            unchunked (MPI_Iallgather / MPI_Ireduce_scatter_block) when the
 *   reduce_scatter         full buffer (size*count elements) fits in W.
 *   all_gather, chunked    the own block is copied into recv (unless in place), then piece s
 *                          = one MPI_Iallgatherv_c (in place) of segment s (<= W/size elements)
 *                          of every rank's block: counts all equal, displacement of rank j =
 *                          j*count + s*seg, so every call is balanced across ranks. The large-
 *                          count variant because displacements reach size*count elements.
 *   reduce_scatter,        the full send buffer is cut into contiguous windows of W elements;
 *   chunked                window w is MPI_Ireduce_scatter with per-rank counts =
 *                          |window & block j| (0 for ranks it misses). The count arrays, which
 *                          MPI reads until the call completes, are allocated at create (size
 *                          ints per slot and window entry).
 *   No derived datatypes and no staging buffer: predefined MPI ops refuse derived datatypes,
 *   this MPICH is built without its fast datatype engine (yaksa) so a strided receive type ran
 *   3x slower, and a staging copy cost 10-30% bandwidth. Measured alternatives for the chunked
 *   all_gather (docs/comm.md): one MPI_Ibcast per (segment, owner) ran at 62-66% of a single
 *   MPI_Iallgather, MPI_Iallgatherv over contiguous windows of the full buffer (unbalanced:
 *   a window touches one or two owners) 2-4x slower; the balanced segments above run at parity.
 * bf16 reductions use user-defined MPI ops that add (or compare) in fp32 and round to bf16;
 * u8 max/min use user-defined ops too (see u8_max). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/elementwise.h"
#include "core/log.h"
#include "fsdp/comm_impl.h"

/* Pieces of one collective in flight at once: enough to keep every owner of a chunked
 * reduce_scatter busy on small worlds, bounded so a huge collective does not flood MPI. */
#define SV_COMM_MPI_WINDOW 8

typedef struct mpi_slot {
    size_t npieces, issued, completed;
    size_t seg;  /* elements per piece (last piece may be shorter) */
    int chunked; /* all_gather/reduce_scatter: 0 = one plain MPI call, 1 = windows */
    int active;  /* non-null entries of reqs */
    MPI_Request reqs[SV_COMM_MPI_WINDOW];
} mpi_slot;

typedef struct sv_comm_mpi {
    sv_comm base; /* first member: sv_comm* <-> sv_comm_mpi* */
    MPI_Comm comm;
    MPI_Op user_op[5]; /* bf16 sum, max, min (indexed by sv_comm_op); u8 max, min */
    size_t chunk_bytes;
    int *world_ranks;
    int *vec;           /* [slot][window entry][size]: counts of windowed reduce_scatter calls */
    MPI_Count *gcounts; /* [slot][window entry][size]: chunked all_gather counts */
    MPI_Aint *gdispls;  /* [slot][window entry][size]: and displacements */
    mpi_slot ms[SV_COMM_MAX_INFLIGHT];
} sv_comm_mpi;

static sv_comm_mpi *as_mpi(sv_comm *c) { return (sv_comm_mpi *)c; }

static sv_status mpi_fail(int rc, const char *call) {
    char s[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, s, &len) != MPI_SUCCESS) snprintf(s, sizeof s, "MPI error %d", rc);
    return SV_FAIL(SV_ERR_COMM, "%s failed: %s", call, s);
}

#define MPI_TRY(call) \
    do { \
        int mpi_rc_ = (call); \
        if (mpi_rc_ != MPI_SUCCESS) return mpi_fail(mpi_rc_, #call); \
    } while (0)

/* ---- bf16 reductions: fp32 arithmetic, round-to-nearest-even to bf16 ----------------------- */

static void bf16_sum(void *in, void *inout, int *len, MPI_Datatype *dt) {
    (void)dt;
    const uint16_t *a = in;
    uint16_t *b = inout;
    for (int i = 0; i < *len; i++) b[i] = sv_f32_to_bf16(sv_bf16_to_f32(a[i]) + sv_bf16_to_f32(b[i]));
}

static void bf16_max(void *in, void *inout, int *len, MPI_Datatype *dt) {
    (void)dt;
    const uint16_t *a = in;
    uint16_t *b = inout;
    for (int i = 0; i < *len; i++) {
        float x = sv_bf16_to_f32(a[i]), y = sv_bf16_to_f32(b[i]);
        if (x > y || x != x) b[i] = a[i]; /* NaN propagates */
    }
}

static void bf16_min(void *in, void *inout, int *len, MPI_Datatype *dt) {
    (void)dt;
    const uint16_t *a = in;
    uint16_t *b = inout;
    for (int i = 0; i < *len; i++) {
        float x = sv_bf16_to_f32(a[i]), y = sv_bf16_to_f32(b[i]);
        if (x < y || x != x) b[i] = a[i];
    }
}

/* MPICH 4.0.2 compares MPI_UINT8_T as signed in MPI_MAX/MPI_MIN (max(200, 41) = 41), so u8
 * max/min go through these; u8 sums are fine (same bits either way). */
static void u8_max(void *in, void *inout, int *len, MPI_Datatype *dt) {
    (void)dt;
    const uint8_t *a = in;
    uint8_t *b = inout;
    for (int i = 0; i < *len; i++)
        if (a[i] > b[i]) b[i] = a[i];
}

static void u8_min(void *in, void *inout, int *len, MPI_Datatype *dt) {
    (void)dt;
    const uint8_t *a = in;
    uint8_t *b = inout;
    for (int i = 0; i < *len; i++)
        if (a[i] < b[i]) b[i] = a[i];
}

static MPI_Datatype mpi_type(sv_comm_dtype d) {
    switch (d) {
    case SV_COMM_F32: return MPI_FLOAT;
    case SV_COMM_BF16: return MPI_UINT16_T;
    case SV_COMM_F64: return MPI_DOUBLE;
    case SV_COMM_I64: return MPI_INT64_T;
    case SV_COMM_U8: return MPI_UINT8_T;
    }
    return MPI_DATATYPE_NULL;
}

static MPI_Op mpi_op(const sv_comm_mpi *m, sv_comm_dtype d, sv_comm_op op) {
    if (d == SV_COMM_BF16) return m->user_op[op];
    if (d == SV_COMM_U8 && op != SV_COMM_SUM) return m->user_op[3 + (op == SV_COMM_MIN)];
    return op == SV_COMM_MAX ? MPI_MAX : op == SV_COMM_MIN ? MPI_MIN : MPI_SUM;
}

/* ---- pieces --------------------------------------------------------------------------------- */

static size_t min_sz(size_t a, size_t b) { return a < b ? a : b; }
static size_t ceil_div(size_t a, size_t b) { return (a + b - 1) / b; }

static void plan(sv_comm_mpi *m, int idx) {
    const sv_comm_slot *s = &m->base.slots[idx];
    mpi_slot *ms = &m->ms[idx];
    size_t p = (size_t)m->base.size;
    size_t w = m->chunk_bytes / sv_comm_dtype_size(s->dt);
    if (w == 0) w = 1;
    ms->issued = ms->completed = 0;
    ms->active = 0;
    ms->chunked = 0;
    for (int i = 0; i < SV_COMM_MPI_WINDOW; i++) ms->reqs[i] = MPI_REQUEST_NULL;
    switch (s->kind) {
    case SV_COLL_BARRIER: ms->npieces = 1; break;
    case SV_COLL_ALL_REDUCE:
    case SV_COLL_BROADCAST:
        ms->seg = w;
        ms->npieces = ceil_div(s->count, w);
        break;
    case SV_COLL_ALL_GATHER:
    case SV_COLL_REDUCE_SCATTER:
        if (s->count == 0) {
            ms->npieces = 0;
        } else if (s->count <= w / p) {
            ms->seg = s->count;
            ms->npieces = 1;
        } else if (s->kind == SV_COLL_ALL_GATHER) {
            ms->chunked = 1;
            ms->seg = w / p ? w / p : 1;
            ms->npieces = ceil_div(s->count, ms->seg);
        } else {
            ms->chunked = 1;
            ms->seg = w;
            ms->npieces = ceil_div(s->count * p, w);
        }
        break;
    }
}

/* Per-rank counts of window [lo, lo+len) of the full buffer, whose block j is
 * [j*count, (j+1)*count). Returns this rank's offset in its block. */
static size_t window_split(size_t p, size_t count, size_t me, size_t lo, size_t len, int *counts) {
    size_t hi = lo + len, mine = 0;
    for (size_t j = 0; j < p; j++) {
        size_t a = j * count, b = a + count;
        size_t x = lo > a ? lo : a, y = hi < b ? hi : b;
        counts[j] = y > x ? (int)(y - x) : 0;
        if (j == me && y > x) mine = x - a;
    }
    return mine;
}

static sv_status issue_piece(sv_comm_mpi *m, int idx, size_t i, int k, MPI_Request *r) {
    const sv_comm_slot *s = &m->base.slots[idx];
    const mpi_slot *ms = &m->ms[idx];
    MPI_Datatype t = mpi_type(s->dt);
    size_t es = sv_comm_dtype_size(s->dt);
    size_t p = (size_t)m->base.size;
    char *recv = s->recv;
    const char *send = s->send;
    switch (s->kind) {
    case SV_COLL_BARRIER: MPI_TRY(MPI_Ibarrier(m->comm, r)); break;
    case SV_COLL_ALL_REDUCE: {
        size_t off = i * ms->seg, len = min_sz(ms->seg, s->count - off);
        MPI_TRY(MPI_Iallreduce(MPI_IN_PLACE, recv + off * es, (int)len, t, mpi_op(m, s->dt, s->op), m->comm, r));
        break;
    }
    case SV_COLL_BROADCAST: {
        size_t off = i * ms->seg, len = min_sz(ms->seg, s->count - off);
        MPI_TRY(MPI_Ibcast(recv + off * es, (int)len, t, s->root, m->comm, r));
        break;
    }
    case SV_COLL_ALL_GATHER:
    case SV_COLL_REDUCE_SCATTER: {
        int in_place = send == recv + (size_t)m->base.rank * s->count * es;
        MPI_Op op = mpi_op(m, s->dt, s->op);
        if (!ms->chunked && s->kind == SV_COLL_ALL_GATHER) {
            MPI_TRY(
                MPI_Iallgather(in_place ? MPI_IN_PLACE : send, (int)s->count, t, recv, (int)s->count, t, m->comm, r));
            break;
        }
        if (!ms->chunked) {
            MPI_TRY(MPI_Ireduce_scatter_block(send, recv, (int)s->count, t, op, m->comm, r));
            break;
        }
        if (s->kind == SV_COLL_ALL_GATHER) {
            /* piece i = segment i of every rank's block, gathered in place into recv (large-count
             * variant: displacements reach size*count elements) */
            size_t off = i * ms->seg, n = min_sz(ms->seg, s->count - off);
            size_t at = ((size_t)idx * SV_COMM_MPI_WINDOW + (size_t)k) * p;
            MPI_Count *counts = m->gcounts + at;
            MPI_Aint *displs = m->gdispls + at;
            for (size_t j = 0; j < p; j++) {
                counts[j] = (MPI_Count)n;
                displs[j] = (MPI_Aint)(j * s->count + off);
            }
            MPI_TRY(MPI_Iallgatherv_c(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv, counts, displs, t, m->comm, r));
            break;
        }
        size_t lo = i * ms->seg, len = min_sz(ms->seg, s->count * p - lo);
        int *counts = m->vec + ((size_t)idx * SV_COMM_MPI_WINDOW + (size_t)k) * p;
        size_t mine = window_split(p, s->count, (size_t)m->base.rank, lo, len, counts);
        MPI_TRY(MPI_Ireduce_scatter(send + lo * es, recv + mine * es, counts, t, op, m->comm, r));
        break;
    }
    }
    return SV_OK;
}

static sv_status refill(sv_comm_mpi *m, int idx) {
    mpi_slot *ms = &m->ms[idx];
    for (int k = 0; k < SV_COMM_MPI_WINDOW && ms->issued < ms->npieces; k++) {
        if (ms->reqs[k] != MPI_REQUEST_NULL) continue;
        SV_TRY(issue_piece(m, idx, ms->issued, k, &ms->reqs[k]));
        ms->issued++;
        ms->active++;
    }
    return SV_OK;
}

/* ---- ops ------------------------------------------------------------------------------------ */

static sv_status mpi_issue(sv_comm *c, int idx, int *done) {
    sv_comm_mpi *m = as_mpi(c);
    plan(m, idx);
    const sv_comm_slot *s = &c->slots[idx];
    size_t es = sv_comm_dtype_size(s->dt);
    char *own = (char *)s->recv + (size_t)c->rank * s->count * es;
    if (s->kind == SV_COLL_ALL_GATHER && m->ms[idx].chunked && (const char *)s->send != own)
        memcpy(own, s->send, s->count * es); /* chunked all_gather gathers in place */
    SV_TRY(refill(m, idx));
    *done = m->ms[idx].npieces == 0;
    return SV_OK;
}

static sv_status mpi_test(sv_comm *c, int idx, int *done) {
    sv_comm_mpi *m = as_mpi(c);
    mpi_slot *ms = &m->ms[idx];
    if (ms->npieces == 1 && ms->active) { /* the common case: one MPI call */
        int flag = 0;
        MPI_TRY(MPI_Test(&ms->reqs[0], &flag, MPI_STATUS_IGNORE));
        if (flag) {
            ms->active = 0;
            ms->completed = 1;
        }
    } else if (ms->active) {
        int outcount = 0, indices[SV_COMM_MPI_WINDOW];
        MPI_Status sts[SV_COMM_MPI_WINDOW]; /* not MPI_STATUSES_IGNORE: gcc's bounds check */
        MPI_TRY(MPI_Testsome(SV_COMM_MPI_WINDOW, ms->reqs, &outcount, indices, sts));
        if (outcount != MPI_UNDEFINED && outcount > 0) {
            ms->active -= outcount;
            ms->completed += (size_t)outcount;
        }
        SV_TRY(refill(m, idx));
    }
    *done = ms->completed == ms->npieces;
    return SV_OK;
}

static int mpi_issue_pending(const sv_comm *c, int idx) {
    const mpi_slot *ms = &((const sv_comm_mpi *)c)->ms[idx];
    return ms->issued < ms->npieces;
}

static void mpi_destroy(sv_comm *c) {
    sv_comm_mpi *m = as_mpi(c);
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) {
        for (int i = 0; i < 5; i++)
            if (m->user_op[i] != MPI_OP_NULL) MPI_Op_free(&m->user_op[i]);
        /* A broken communicator may have requests a dead peer will never match; the process
         * is about to abort, so leave the MPI communicator alone rather than risk blocking. */
        if (!c->broken && m->comm != MPI_COMM_NULL) MPI_Comm_free(&m->comm);
    }
    free(m->world_ranks);
    free(m->vec);
    free(m->gcounts);
    free(m->gdispls);
    free(m);
}

static sv_status mpi_split(sv_comm *parent, int color, int key, sv_comm **out);

static const sv_comm_ops mpi_ops = {
    .name = "mpi",
    .destroy = mpi_destroy,
    .split = mpi_split,
    .issue = mpi_issue,
    .test = mpi_test,
    .issue_pending = mpi_issue_pending,
};

/* Wrap an MPI communicator we own (a dup or a split result) into an sv_comm. On failure the
 * MPI communicator is freed. */
static sv_status wrap(const sv_comm_config *cfg, MPI_Comm comm, const char *label, sv_comm **out) {
    sv_status st = SV_OK;
    sv_comm_mpi *m = NULL;
    MPI_Group g = MPI_GROUP_NULL, wg = MPI_GROUP_NULL;
    int *idx = NULL;
    int rank = 0, size = 0, rc;
    if ((rc = MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN)) != MPI_SUCCESS ||
        (rc = MPI_Comm_rank(comm, &rank)) != MPI_SUCCESS || (rc = MPI_Comm_size(comm, &size)) != MPI_SUCCESS) {
        st = mpi_fail(rc, "MPI_Comm_set_errhandler/rank/size");
        goto fail;
    }
    m = calloc(1, sizeof *m);
    idx = malloc(sizeof(int) * (size_t)size);
    int *wr = malloc(sizeof(int) * (size_t)size);
    size_t nv = (size_t)size * SV_COMM_MAX_INFLIGHT * SV_COMM_MPI_WINDOW;
    int *vec = malloc(sizeof(int) * nv);
    MPI_Count *gcounts = malloc(sizeof(MPI_Count) * nv);
    MPI_Aint *gdispls = malloc(sizeof(MPI_Aint) * nv);
    if (!m || !idx || !wr || !vec || !gcounts || !gdispls) {
        free(wr);
        free(vec);
        free(gcounts);
        free(gdispls);
        st = SV_FAIL(SV_ERR_OOM, "comm '%s': out of memory for a %d-rank communicator", label, size);
        goto fail;
    }
    sv_comm_base_init(&m->base, &mpi_ops, cfg, rank, size, label);
    m->comm = comm;
    m->world_ranks = wr;
    m->base.world_ranks = wr;
    m->vec = vec;
    m->gcounts = gcounts;
    m->gdispls = gdispls;
    for (int i = 0; i < 5; i++) m->user_op[i] = MPI_OP_NULL;
    for (int i = 0; i < size; i++) idx[i] = i;
    if ((rc = MPI_Comm_group(comm, &g)) != MPI_SUCCESS || (rc = MPI_Comm_group(MPI_COMM_WORLD, &wg)) != MPI_SUCCESS ||
        (rc = MPI_Group_translate_ranks(g, size, idx, wg, wr)) != MPI_SUCCESS) {
        st = mpi_fail(rc, "MPI_Group_translate_ranks");
        goto fail;
    }
    MPI_User_function *fns[5] = {bf16_sum, bf16_max, bf16_min, u8_max, u8_min};
    for (int i = 0; i < 5; i++)
        if ((rc = MPI_Op_create(fns[i], 1, &m->user_op[i])) != MPI_SUCCESS) {
            st = mpi_fail(rc, "MPI_Op_create (bf16/u8 reduction)");
            goto fail;
        }
    /* Chunk boundaries decide which MPI calls are made; ranks disagreeing would deadlock. */
    unsigned long long chunk = sv_comm_chunk_bytes(cfg), lo = 0, hi = 0;
    if ((rc = MPI_Allreduce(&chunk, &lo, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, comm)) != MPI_SUCCESS ||
        (rc = MPI_Allreduce(&chunk, &hi, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, comm)) != MPI_SUCCESS) {
        st = mpi_fail(rc, "MPI_Allreduce (chunk size agreement)");
        goto fail;
    }
    if (lo != hi) {
        st = SV_FAIL(SV_ERR_INVALID,
                     "comm '%s': ranks disagree on the chunk size (%llu vs %llu bytes; "
                     "SHARDVIT_COMM_CHUNK_BYTES); set it identically on every rank",
                     label, lo, hi);
        goto fail;
    }
    m->chunk_bytes = (size_t)chunk;
    for (int i = 0; i < SV_COMM_MAX_INFLIGHT; i++)
        for (int k = 0; k < SV_COMM_MPI_WINDOW; k++) m->ms[i].reqs[k] = MPI_REQUEST_NULL;
    MPI_Group_free(&g);
    MPI_Group_free(&wg);
    free(idx);
    *out = &m->base;
    return SV_OK;
fail:
    if (g != MPI_GROUP_NULL) MPI_Group_free(&g);
    if (wg != MPI_GROUP_NULL) MPI_Group_free(&wg);
    free(idx);
    if (m) {
        for (int i = 0; i < 5; i++)
            if (m->user_op[i] != MPI_OP_NULL) MPI_Op_free(&m->user_op[i]);
        free(m->world_ranks);
        free(m->vec);
        free(m->gcounts);
        free(m->gdispls);
        free(m);
    }
    MPI_Comm_free(&comm);
    return st;
}

sv_status sv_comm_mpi_create(const sv_comm_config *cfg, sv_comm **out) {
    int inited = 0, finalized = 0;
    MPI_Initialized(&inited);
    MPI_Finalized(&finalized);
    if (!inited || finalized)
        return SV_FAIL(SV_ERR_INVALID,
                       "MPI comm: MPI is %s (app/ must call MPI_Init_thread "
                       "before creating the communicator)",
                       finalized ? "already finalized" : "not initialised");
    int world = 0;
    MPI_TRY(MPI_Comm_size(MPI_COMM_WORLD, &world));
    const char *var = NULL;
    int launched = sv_comm_launched_size(&var);
    if (world == 1 && launched > 1) /* every task its own world of 1: N copies training alone */
        return SV_FAIL(SV_ERR_UNSUPPORTED,
                       "this process is one of %d tasks (%s=%s) but MPI made it a world of 1 rank: the "
                       "launcher gave the MPI library no way to find the other ranks (with Slurm and "
                       "MPICH: srun --mpi=pmi2, or mpiexec inside the allocation; docs/slurm.md)",
                       launched, var, getenv(var));
    MPI_Comm dup;
    MPI_TRY(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    SV_TRY(wrap(cfg, dup, "world", out));
    return SV_OK;
}

static sv_status mpi_split(sv_comm *parent, int color, int key, sv_comm **out) {
    sv_comm_mpi *m = as_mpi(parent);
    MPI_Comm nc;
    MPI_TRY(MPI_Comm_split(m->comm, color, key, &nc));
    char label[48];
    snprintf(label, sizeof label, "%.20s/split(color=%d)", parent->label, color);
    SV_TRY(wrap(&parent->cfg, nc, label, out));
    return SV_OK;
}
