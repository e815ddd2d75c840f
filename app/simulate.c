/* The step-time simulator (simulate.h). */
#include "app/simulate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app/flags.h"
#include "app/provenance.h"
#include "app/sched_quantum.h"
#include "app/train_step.h"
#include "core/fileio.h"
#include "core/clock.h"
#include "core/stats.h"
#include "core/log.h"
#include "model/backend/cpu/isa_peak.h"
#include "model/backend/sim/sim_backend.h"

/* ---- presets (docs/simulate.md lists them with their sources) ------------------------------- */

typedef struct dev_preset {
    const char *name;
    double bf16_flops, f32_flops, mem_Bps, gemm_eff, mem_eff, launch_s, h2d_Bps;
    int ranks_per_node;
    const char *net;
} dev_preset;

/* H100/H200 SXM: 989 TFLOP/s dense bf16 tensor cores, 67 TFLOP/s fp32 (no TF32: the CUDA
 * backend's fp32 GEMMs are full fp32); HBM3 3.35 TB/s, HBM3e 4.8 TB/s; PCIe Gen5 x16 host
 * copies; 8 GPUs per node. The efficiencies are assumptions (large bf16 GEMMs reach 60-75% of
 * peak in cuBLAS on Hopper; streaming kernels ~80% of HBM bandwidth). */
static const dev_preset k_devices[] = {
    {"h200", 989e12, 67e12, 4.8e12, 0.70, 0.80, 4e-6, 50e9, 8, "nvlink+ndr"},
    {"h100", 989e12, 67e12, 3.35e12, 0.70, 0.80, 4e-6, 50e9, 8, "nvlink+ndr"},
};
const char *const sv_sim_device_names = "cpu (times the ops on this machine), h200, h100";

typedef struct link_preset {
    const char *name;
    sv_sim_link link;
    double base_s;
} link_preset;

/* Intra-node links (per-rank bus bandwidth) and inter-node networks (one node's NIC
 * bandwidth). shm: MPICH over shared memory on this project's 2-core Xeon (bench --comm fit,
 * docs/simulate.md); its copies run on the ranks' own cores. nvlink: H100/H200 NVLink 4 through
 * NVSwitch, the ~370 GB/s all_gather busbw nccl-tests reports on 8 GPUs. ndr/hdr: 8 InfiniBand
 * NICs per node (400 / 200 Gb/s each) at 80% of line rate; 400gbe: 8 x 400 GbE RoCE at 75%;
 * 100gbe: one 100 GbE NIC per node at 80%. Latencies per ring step: the usual published
 * small-message figures (NVLink ~2 us, InfiniBand ~5 us, RoCE ~8 us, TCP 100 GbE ~15 us). */
/* LINK(alpha_s, bw_Bps, reduce_factor, progress_s): the fields a preset sets; the others
 * (shared, transport CPU cost, token bucket) stay 0 */
#define LINK(a, bw, rf, prog) \
    { .alpha_s = (a), .bw_Bps = (bw), .reduce_factor = (rf), .progress_s = (prog) }
static const link_preset k_intra[] = {
    {"shm", LINK(1.5e-6, 3.45e9, 0.52, 50e-6), 0.0},
    {"nvlink", LINK(2.0e-6, 370e9, 1.0, 0.0), 10e-6},
};
static const link_preset k_inter[] = {
    {"ndr", LINK(5e-6, 320e9, 1.0, 0.0), 0},    {"hdr", LINK(5e-6, 160e9, 1.0, 0.0), 0},
    {"400gbe", LINK(8e-6, 300e9, 1.0, 0.0), 0}, {"100gbe", LINK(15e-6, 10e9, 1.0, 0.0), 0},
    {"none", LINK(0, 1e30, 1.0, 0.0), 0},
};
#undef LINK
const char *const sv_sim_net_names =
    "INTRA[+INTER] with INTRA = shm | nvlink and INTER = ndr | hdr | 400gbe | 100gbe (e.g. nvlink+ndr)";

static const dev_preset *find_device(const char *name) {
    for (size_t i = 0; i < sizeof k_devices / sizeof k_devices[0]; i++)
        if (!strcmp(k_devices[i].name, name)) return &k_devices[i];
    return NULL;
}

int sv_sim_device_known(const char *name) { return name && find_device(name) != NULL; }

static const link_preset *find_link(const link_preset *t, size_t n, const char *name, size_t len) {
    for (size_t i = 0; i < n; i++)
        if (strlen(t[i].name) == len && !strncmp(t[i].name, name, len)) return &t[i];
    return NULL;
}

static sv_status parse_link(const char *flag, const char *s, sv_sim_link *out) {
    char *end;
    double a = strtod(s, &end);
    if (end != s && *end == ',') {
        const char *b = end + 1;
        double bw = strtod(b, &end);
        if (end != b && !*end && a >= 0 && a < 1e6 && bw > 0 && bw < 1e6) {
            out->alpha_s = a * 1e-6;
            out->bw_Bps = bw * 1e9;
            return SV_OK;
        }
    }
    return SV_FAIL(SV_ERR_INVALID,
                   "--%s '%s' (expected ALPHA_US,GBPS: latency per ring step in microseconds and "
                   "bandwidth in GB/s, e.g. 5,50)",
                   flag, s);
}

/* --inter-burst BYTES,PEAK_GBPS: a token bucket of BYTES draining at PEAK_GBPS (> the link's rate) */
static sv_status parse_burst(const char *s, sv_sim_link *out) {
    char bytes[64];
    const char *comma = strchr(s, ',');
    if (comma && (size_t)(comma - s) < sizeof bytes) {
        memcpy(bytes, s, (size_t)(comma - s));
        bytes[comma - s] = 0;
        long long b = sv_parse_bytes(bytes);
        char *end;
        double peak = strtod(comma + 1, &end);
        if (b > 0 && end != comma + 1 && !*end && peak * 1e9 > out->bw_Bps && peak < 1e6) {
            out->burst_bytes = (double)b;
            out->peak_Bps = peak * 1e9;
            return SV_OK;
        }
    }
    return SV_FAIL(SV_ERR_INVALID,
                   "--inter-burst '%s' (expected BYTES,PEAK_GBPS: the bucket, e.g. 512K, and the rate its "
                   "tokens leave at in GB/s, above the link's %.3g GB/s)",
                   s, out->bw_Bps / 1e9);
}

/* Least squares t = c0 + c1 x over the rows of one collective kind (sizes >= 64 KiB). */
static int fit_line(const double *x, const double *t, int n, double *c0, double *c1) {
    double sx = 0, st = 0, sxx = 0, sxt = 0;
    for (int i = 0; i < n; i++) sx += x[i], st += t[i], sxx += x[i] * x[i], sxt += x[i] * t[i];
    double d = n * sxx - sx * sx;
    if (n < 2 || d <= 0) return 0;
    *c1 = (n * sxt - sx * st) / d;
    *c0 = (st - *c1 * sx) / n;
    return *c1 > 0;
}

sv_status sv_sim_fit_bench_comm(const char *path, sv_sim_link *link) {
    char *text;
    size_t len;
    SV_TRY(sv_fileio_read_small(path, 16u << 20, &text, &len));
    sv_json_doc doc;
    sv_status st = sv_json_parse(&doc, text, len, path, NULL);
    free(text);
    SV_TRY(st);
    const sv_json *res = NULL;
    int64_t world = 0;
    st = sv_json_get_i64(&doc.root, "world", &world);
    if (st == SV_OK) st = sv_json_get(&doc.root, "results", SV_JSON_ARRAY, &res);
    if (st == SV_OK && (world < 2 || world > (1 << 24)))
        st = SV_FAIL(SV_ERR_INVALID,
                     "%s: a bench --comm result of world %lld (2 to 16777216 ranks needed to fit a link)", path,
                     (long long)world);
    const char *transport = NULL;
    if (st == SV_OK && sv_json_get_str(&doc.root, "comm", &transport, NULL) != SV_OK) {
        sv_err_clear(); /* older results: the transport unknown, serial */
        transport = NULL;
    }
    double x[2][64], t[2][64], small_x[64], small_t[64], small_max = 0;
    int n[2] = {0, 0}, n_small = 0;
    for (size_t i = 0; st == SV_OK && i < sv_json_count(res); i++) {
        const sv_json *r = sv_json_index(res, i);
        const char *op;
        double size, us;
        st = sv_json_get_str(r, "op", &op, NULL);
        if (st == SV_OK) st = sv_json_get_f64(r, "size_bytes", &size);
        if (st == SV_OK) st = sv_json_get_f64(r, "time_us", &us);
        if (st != SV_OK) break;
        int k = !strcmp(op, "all_gather") ? 0 : !strcmp(op, "reduce_scatter") ? 1 : -1;
        if (k == 0 && size < 65536 && n_small < 64) { /* the small-message regime */
            small_x[n_small] = size;
            small_t[n_small++] = us * 1e-6;
            if (size > small_max) small_max = size;
        }
        if (k < 0 || size < 65536 || n[k] == 64) continue;
        x[k][n[k]] = size;
        t[k][n[k]++] = us * 1e-6;
    }
    double a0 = 0, a1 = 0, r0 = 0, r1 = 0;
    if (st == SV_OK && !fit_line(x[0], t[0], n[0], &a0, &a1))
        st = SV_FAIL(SV_ERR_INVALID,
                     "%s: need all_gather rows of at least two sizes >= 64 KiB with time growing "
                     "with size to fit a link",
                     path);
    if (st == SV_OK) {
        double f = (double)(world - 1) / (double)world;
        link->bw_Bps = f / a1;
        link->alpha_s = a0 > 0 ? a0 / (double)(world - 1) : 0;
        link->reduce_factor = fit_line(x[1], t[1], n[1], &r0, &r1) ? a1 / r1 : 1.0;
        /* all_gather rows below 64 KiB: their own latency per step (MPI sends them eagerly, the
         * large ones after a rendezvous handshake), the median of time / (world - 1) less the
         * transfer at the fitted rate, for collectives up to the largest of them */
        if (n_small) {
            for (int i = 0; i < n_small; i++)
                small_t[i] = (small_t[i] - small_x[i] * f / link->bw_Bps) / (double)(world - 1);
            double med = sv_median_inplace(small_t, (size_t)n_small);
            link->small_alpha_s = med > 0 ? med : 0;
            link->small_bytes = small_max;
        }
        /* MPI's nonblocking collectives progress side by side (NCCL's run in stream order) */
        link->shared = transport && !strcmp(transport, "mpi");
        /* the fitted link within the bounds --intra / --inter accept (parse_link): a file whose
         * times fit no real link (edited, or measured under a stall) would make every simulated
         * step nonsense */
        const double bw = link->bw_Bps / 1e9, al = link->alpha_s * 1e6, sal = link->small_alpha_s * 1e6;
        if (!(bw > 0 && bw < 1e6 && al >= 0 && al < 1e6 && sal >= 0 && sal < 1e6 && isfinite(link->reduce_factor) &&
              link->reduce_factor > 0))
            st = SV_FAIL(SV_ERR_INVALID,
                         "%s: the link fitted to its all_gather rows (%.3g us per step, %.3g GB/s, small messages "
                         "%.3g us) is outside what --intra / --inter accept (latency in [0, 1e6) us, bandwidth in "
                         "(0, 1e6) GB/s): not a bench --comm measurement of a real link",
                         path, al, bw, sal);
    }
    sv_json_doc_free(&doc);
    return st;
}

sv_status sv_sim_resolve_net(const sv_sim_opts *o, sv_sim_net *net, int *nodes) {
    int cpu = !strcmp(o->device, "cpu");
    const dev_preset *d = cpu ? NULL : find_device(o->device);
    if (!cpu && !d) return SV_FAIL(SV_ERR_INVALID, "--device '%s' (choose %s)", o->device, sv_sim_device_names);
    const char *spec = o->net ? o->net : cpu ? "shm" : d->net;
    const char *plus = strchr(spec, '+');
    size_t n1 = plus ? (size_t)(plus - spec) : strlen(spec);
    const link_preset *in = find_link(k_intra, sizeof k_intra / sizeof k_intra[0], spec, n1);
    const link_preset *ex = plus ? find_link(k_inter, sizeof k_inter / sizeof k_inter[0], plus + 1, strlen(plus + 1))
                                 : find_link(k_inter, sizeof k_inter / sizeof k_inter[0], "none", 4);
    if (!in || !ex) return SV_FAIL(SV_ERR_INVALID, "--net '%s' (expected %s)", spec, sv_sim_net_names);
    memset(net, 0, sizeof *net);
    net->intra = in->link;
    net->inter = ex->link;
    net->base_s = in->base_s;
    if (o->net_from) {
        SV_TRY(sv_sim_fit_bench_comm(o->net_from, &net->intra));
        net->base_s = 0; /* the fit's intercept is the latency term */
    }
    if (o->inter_from) SV_TRY(sv_sim_fit_bench_comm(o->inter_from, &net->inter));
    if (o->intra) SV_TRY(parse_link("intra", o->intra, &net->intra));
    if (o->inter) SV_TRY(parse_link("inter", o->inter, &net->inter));
    if (o->inter_cpu_ns > 0) net->inter.cpu_s_per_byte = o->inter_cpu_ns * 1e-9;
    if (o->inter_burst) SV_TRY(parse_burst(o->inter_burst, &net->inter));
    int K = o->nodes;
    if (K <= 0) {
        int rpn = cpu ? o->world : d->ranks_per_node;
        K = (o->world + rpn - 1) / rpn;
    }
    if (K > o->world || o->world % K)
        return SV_FAIL(SV_ERR_INVALID, "--nodes %d must divide --world %d (ranks are packed per node)", K, o->world);
    if (K > 1 && !plus && !o->inter && !o->inter_from)
        return SV_FAIL(SV_ERR_INVALID,
                       "--nodes %d needs an inter-node network: --net %.*s+ndr (or hdr, 400gbe, "
                       "100gbe) or --inter ALPHA_US,GBPS",
                       K, (int)n1, spec);
    net->ranks_per_node = o->world / K;
    *nodes = K;
    return SV_OK;
}

/* ---- groups --------------------------------------------------------------------------------- */

/* The group of world rank 0 for one communicator kind, from the membership rule the engine uses
 * (sv_fsdp_group_color: shard groups are consecutive ranks, replica groups strided). */
static sv_sim_group group_of(int world, int G, int rpn, int kind) {
    int c0, k0, size = 0, nodes = 0, last_node = -1, in_node0 = 0;
    sv_fsdp_group_color(0, G, kind, &c0, &k0);
    for (int r = 0; r < world; r++) {
        int c, k;
        sv_fsdp_group_color(r, G, kind, &c, &k);
        if (c != c0) continue;
        size++;
        int node = r / rpn;
        if (node != last_node) nodes++, last_node = node; /* members ascend: nodes appear in order */
        if (node == 0) in_node0++;
    }
    return (sv_sim_group){.size = size, .rank = 0, .nodes = nodes, .ranks_per_node = in_node0};
}

/* ---- the run -------------------------------------------------------------------------------- */

typedef struct sim_feed {
    sv_micro_batch mb;
} sim_feed;

static sv_status feed_next(void *ctx, int micro, sv_micro_batch *out) {
    (void)micro;
    *out = ((sim_feed *)ctx)->mb;
    return SV_OK;
}

static void stats_delta(sv_comm *c, const sv_comm_stats *before, int steps, sv_comm_stats *out) {
    memset(out, 0, sizeof *out);
    if (!c) return;
    sv_comm_stats s;
    sv_comm_get_stats(c, &s);
    out->all_gathers = (s.all_gathers - before->all_gathers) / steps;
    out->reduce_scatters = (s.reduce_scatters - before->reduce_scatters) / steps;
    out->all_reduces = (s.all_reduces - before->all_reduces) / steps;
    out->broadcasts = (s.broadcasts - before->broadcasts) / steps;
    out->barriers = (s.barriers - before->barriers) / steps;
    out->bytes_sent = (s.bytes_sent - before->bytes_sent) / (uint64_t)steps;
    out->wait_seconds = (s.wait_seconds - before->wait_seconds) / steps;
}

typedef struct sim_ctx {
    double now;
    sv_sim_fabric *fab;
    sv_backend *real;
    sv_run r;
    int have_run;
    sim_feed feed;
} sim_ctx;

static double op_seconds(void *fab, double t) { return sv_sim_fabric_op_seconds(fab, t); }

static sv_status run_sim(sim_ctx *x, const sv_sim_opts *o, sv_sim_result *res) {
    memset(res, 0, sizeof *res);
    int cpu = !strcmp(o->device, "cpu");
    const dev_preset *dp = cpu ? NULL : find_device(o->device);
    sv_sim_net net;
    int K;
    SV_TRY(sv_sim_resolve_net(o, &net, &K));
    int N = o->world, rpn = net.ranks_per_node;

    sv_run_opts ro = o->run;
    ro.device = cpu ? "cpu" : "cuda";
    ro.trace = o->trace;
    double cores = o->cores > 0 ? o->cores : (double)sysconf(_SC_NPROCESSORS_ONLN);
    if (cores < 1) cores = 1;
    sv_vit_config vcfg;
    sv_fsdp_config fc;
    sv_backend_config bc;
    int micro;
    SV_TRY(sv_run_resolve(&ro, N, &vcfg, &fc, &bc, rpn, &micro));
    int G;
    SV_TRY(sv_fsdp_shard_size(fc.strategy, fc.shard_group, N, &G));

    sv_sim_backend_config sc = {.bc = bc, .now = &x->now, .slowdown = 1.0};
    sv_sim_device dev = {0};
    if (cpu) {
        if (!o->run.threads) bc.threads = (int)(cores / rpn) > 0 ? (int)(cores / rpn) : 1;
        SV_TRY(sv_backend_create(&bc, &x->real));
        sc.real = x->real;
        double used = (double)rpn * bc.threads;
        sc.slowdown = used > cores ? used / cores : 1.0;
        /* the kernel's time slice: EEVDF's default base slice, 0.75 ms x (1 + log2 of the CPUs,
         * at most 8) (Linux 6.6+; CFS's minimum granularity scaled the same way before) */
        int lg = 0;
        for (int c = (int)cores < 8 ? (int)cores : 8; c > 1; c >>= 1) lg++;
        net.sched_lag_s = (sc.slowdown - 1.0) * 0.75e-3 * (1 + lg);
        /* a round of a collective that overlaps compute waits for the partner's next quantum
         * (measured on the real clock, before the virtual one is installed) */
        if (sc.slowdown > 1.0)
            net.sched_round_s = o->sched_quantum_ms > 0 ? o->sched_quantum_ms * 1e-3 : sv_sched_quantum_s(0.1);
        res->threads = bc.threads;
        /* MFU against the hardware, as `bench` computes it: the ISA peak of one core x cores used
         * (measured on the real clock, before the virtual one is installed) */
        char engine[64] = "";
        sv_cpu_gemm_engine_of_device(sv_be_device_name(x->real), engine, sizeof engine);
        double per_core = engine[0] ? sv_cpu_isa_peak_flops(engine, 0.05) : 0;
        res->peak_flops = per_core > 0 ? per_core * bc.threads / sc.slowdown : 0;
    } else {
        dev = (sv_sim_device){dp->name,    bc.compute_dtype == SV_BF16 ? dp->bf16_flops : dp->f32_flops,
                              dp->mem_Bps, dp->gemm_eff,
                              dp->mem_eff, dp->launch_s,
                              dp->h2d_Bps};
        sc.dev = &dev;
        res->peak_flops = dev.peak_flops;
    }
    res->slowdown = sc.slowdown;

    x->now = 0;
    sv_clock_set_virtual(&x->now);
    SV_TRY(sv_sim_fabric_create(&net, &x->now, cpu ? bc.threads : 1, &x->fab));
    sc.op_seconds = op_seconds;
    sc.op_ctx = x->fab;
    sv_backend *be;
    SV_TRY(sv_sim_backend_create(&sc, &be));
    sv_comm_config cc = {.kind = SV_COMM_KIND_LOCAL, .timeout_s = 0};
    sv_sim_group gw = {.size = N, .rank = 0, .nodes = K, .ranks_per_node = rpn};
    sv_sim_group gs = group_of(N, G, rpn, 0), gr = group_of(N, G, rpn, 1);
    sv_run_parts parts = {.be = be, .init_params = 0};
    sv_status st = sv_comm_sim_create(&cc, x->fab, &gw, "world", &parts.world);
    if (st == SV_OK) st = sv_comm_sim_create(&cc, x->fab, &gs, "shard", &parts.shard);
    if (st == SV_OK) st = sv_comm_sim_create(&cc, x->fab, &gr, "repl", &parts.repl);
    if (st != SV_OK) {
        if (parts.world) sv_comm_destroy(parts.world);
        if (parts.shard) sv_comm_destroy(parts.shard);
        sv_backend_destroy(be);
        return st;
    }
    sv_comm *all[3] = {parts.world, parts.shard, parts.repl};
    for (int i = 0; i < 3; i++) sv_comm_sim_set_untouchable(all[i], sv_sim_backend_untouchable, be);
    x->have_run = 1;
    SV_TRY(sv_run_setup_parts(&x->r, &ro, 0, N, 0, rpn, &parts));
    sv_run *r = &x->r;

    x->feed.mb = (sv_micro_batch){.images = r->batch.images, .labels = r->batch.labels};

    /* what `bench` runs: AdamW with clipping and label smoothing 0.1 */
    sv_optim_config oc = {
        .lr = 1e-4f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f, .weight_decay = 0.05f, .max_grad_norm = 1.0f};
    sv_step_result sr;
    sv_sim_backend_set_warmup(be, 1); /* calibrated: first touches, caches; analytic: no effect */
    SV_TRY(sv_train_step(r, &oc, 0.1f, ro.accum, ro.batch_size, feed_next, &x->feed, &sr));
    sv_sim_backend_set_warmup(be, 0);

    /* the measured steps, traced as `bench` traces them (compute spans per unit) */
    if (!sv_trace_on(&r->trace)) {
        sv_trace_free(&r->trace);
        SV_TRY(sv_trace_init(&r->trace, (size_t)1 << 16, 0));
    }
    r->fsdp.trace = &r->trace;
    sv_comm_stats s0[3];
    sv_comm *cs[3] = {r->world_comm, r->shard_comm, r->repl_comm};
    for (int i = 0; i < 3; i++) sv_comm_get_stats(cs[i], &s0[i]);
    /* the compute and comm lanes' time from the tracer's per-track sums, which count every event
     * (the event buffer keeps the first 65536: a long run's split from it was wrong) */
    const double compute0 = r->trace.lane_us[SV_TRACE_COMPUTE] * 1e-6, busy0 = sv_trace_comm_lane_s(&r->trace);
    double t0 = x->now, optim = 0, cpu0 = sv_sim_fabric_cpu_seconds(x->fab);
    int steps = o->steps > 0 ? o->steps : 1;
    for (int s = 0; s < steps; s++) {
        SV_TRY(sv_train_step(r, &oc, 0.1f, ro.accum, ro.batch_size, feed_next, &x->feed, &sr));
        optim += sr.optim_s - sr.optim_wait_s;
    }
    double wall = x->now - t0;
    stats_delta(r->world_comm, &s0[0], steps, &res->world);
    stats_delta(r->shard_comm, &s0[1], steps, &res->shard);
    stats_delta(r->repl_comm, &s0[2], steps, &res->repl);
    const double compute = r->trace.lane_us[SV_TRACE_COMPUTE] * 1e-6 - compute0,
                 busy = sv_trace_comm_lane_s(&r->trace) - busy0;
    res->step_s = wall / steps;
    res->img_s = ro.batch_size / res->step_s;
    res->compute_s = compute / steps;
    res->comm_busy_s = busy / steps;
    res->comm_exposed_s = res->world.wait_seconds + res->shard.wait_seconds + res->repl.wait_seconds;
    res->optim_s = optim / steps;
    res->transport_cpu_s = (sv_sim_fabric_cpu_seconds(x->fab) - cpu0) / steps;
    res->other_s = res->step_s - res->compute_s - res->comm_exposed_s - res->optim_s;
    res->mem = (sv_run_mem){r->fsdp.mem, r->bytes_act, r->bytes_batch, r->bytes_total};
    res->world_size = N;
    res->shard_size = r->fsdp.shard_size;
    res->repl_size = r->fsdp.repl_size;
    res->nodes = K;
    res->ranks_per_node = rpn;
    res->units = r->fsdp.L.n_units;
    res->micro_batch = r->micro_batch;
    res->net = net;
    snprintf(res->device_name, sizeof res->device_name, "%s", sv_be_device_name(be));
    sv_sim_backend_stats bs;
    sv_sim_backend_get_stats(be, &bs);
    res->shapes = bs.shapes;
    res->calibrate_s = bs.calibrate_s;
    double peak = res->peak_flops;
    double flops_step = 3.0 * sv_vit_flops_fwd(&vcfg) * ro.batch_size / N; /* per rank */
    res->mfu = peak > 0 ? flops_step / (res->step_s * peak) : -1;
    if (o->trace) {
        char part[4096];
        sv_trace_part_path(part, sizeof part, o->trace, 0);
        sv_run_trace_warn_full(&r->trace, o->trace, 0);
        SV_TRY(sv_trace_write_part(&r->trace, part));
        sv_status ms = sv_trace_merge(o->trace, 1);
        sv_trace_part_done(part);
        SV_TRY(ms);
    }
    return SV_OK;
}

sv_status sv_simulate(const sv_sim_opts *o, sv_sim_result *res) {
    if (o->world < 1) return SV_FAIL(SV_ERR_INVALID, "--world %d (at least 1)", o->world);
    sim_ctx *x = calloc(1, sizeof *x);
    if (!x) return SV_FAIL(SV_ERR_OOM, "simulator state");
    sv_status st = run_sim(x, o, res);
    sv_clock_set_virtual(NULL);
    if (x->have_run) {
        if (st == SV_OK)
            sv_run_teardown(&x->r);
        else
            sv_err_frame(__FILE__, __LINE__);
    }
    if (x->real) sv_backend_destroy(x->real);
    if (x->fab) sv_sim_fabric_destroy(x->fab); /* after its communicators (sv_run_teardown) */
    free(x);
    return st;
}

/* ---- reports -------------------------------------------------------------------------------- */

static void print_comm(FILE *f, const char *name, int size, const sv_comm_stats *s) {
    fprintf(f,
            "  %-6s %5d ranks: %3llu all_gather  %3llu reduce_scatter  %3llu all_reduce  %8.1f MiB sent  %.3f ms "
            "exposed\n",
            name, size, (unsigned long long)s->all_gathers, (unsigned long long)s->reduce_scatters,
            (unsigned long long)s->all_reduces, s->bytes_sent / 1048576.0, s->wait_seconds * 1e3);
}

void sv_sim_print(FILE *f, const sv_sim_opts *o, const sv_sim_result *r) {
    fprintf(f,
            "simulated: %s, world %d (%d node%s x %d ranks), %s%s, wrap %s, %d units, batch %d (%d per rank x %d "
            "accum), %s\n",
            o->run.model.model, r->world_size, r->nodes, r->nodes == 1 ? "" : "s", r->ranks_per_node, o->run.strategy,
            o->run.shard_group ? " (group)" : "", o->run.wrap, r->units, o->run.batch_size, r->micro_batch,
            o->run.accum, o->run.param_dtype);
    fprintf(f, "  device: %s", r->device_name);
    if (r->threads) fprintf(f, ", %d thread%s per rank", r->threads, r->threads == 1 ? "" : "s");
    if (r->slowdown > 1)
        fprintf(f,
                ", oversubscribed x%.2f (each collective starts %.2f ms late; each round of one that overlaps "
                "compute waits a %.2f ms scheduler quantum)",
                r->slowdown, r->net.sched_lag_s * 1e3, r->net.sched_round_s * 1e3);
    fprintf(f,
            "\n  network: intra %.1f us + %.2f GB/s (reductions x%.2f%s), inter %.1f us + %.3g GB/s per node "
            "(reductions x%.2f, %s",
            r->net.intra.alpha_s * 1e6, r->net.intra.bw_Bps / 1e9, r->net.intra.reduce_factor,
            r->net.intra.small_bytes > 0 ? ", small messages faster" : "", r->net.inter.alpha_s * 1e6,
            r->net.inter.bw_Bps / 1e9, r->net.inter.reduce_factor,
            r->net.inter.shared ? "collectives share it" : "one at a time");
    if (r->net.inter.small_bytes > 0)
        fprintf(f, ", %.1f us per step up to %.0f KiB", r->net.inter.small_alpha_s * 1e6,
                r->net.inter.small_bytes / 1024);
    if (r->net.inter.cpu_s_per_byte > 0) fprintf(f, ", %.2f ns CPU per byte", r->net.inter.cpu_s_per_byte * 1e9);
    if (r->net.inter.burst_bytes > 0)
        fprintf(f, ", bursts of %.0f KiB at %.3g GB/s", r->net.inter.burst_bytes / 1024, r->net.inter.peak_Bps / 1e9);
    fprintf(f, "), %.1f us per collective%s\n", r->net.base_s * 1e6,
            r->net.intra.progress_s > 0 ? ", intra-node progress-driven (CPU transport)" : "");
    double T = r->step_s;
    fprintf(f, "step time %.4f s, %.1f img/s; compute %.1f%%, exposed comm %.1f%%, optimizer %.1f%%, other %.1f%%\n", T,
            r->img_s, 100 * r->compute_s / T, 100 * r->comm_exposed_s / T, 100 * r->optim_s / T, 100 * r->other_s / T);
    if (r->transport_cpu_s > 0)
        fprintf(f, "  of the compute, %.4f s per step is the transport's CPU time (TCP on the compute cores)\n",
                r->transport_cpu_s);
    if (r->mfu >= 0) fprintf(f, "MFU %.1f%% (of %.3g TFLOP/s per rank)\n", 100 * r->mfu, r->peak_flops / 1e12);
    fprintf(f,
            "memory per rank: %.1f MiB (params %.1f, grads %.1f, optimizer %.1f, gathered %.1f, grad buffers %.1f, "
            "activations %.1f)\n",
            r->mem.total / 1048576.0, r->mem.fsdp.params / 1048576.0, r->mem.fsdp.grads / 1048576.0,
            r->mem.fsdp.optimizer / 1048576.0, r->mem.fsdp.gathered / 1048576.0, r->mem.fsdp.grad_buffers / 1048576.0,
            r->mem.activations / 1048576.0);
    fprintf(f, "collectives per step:\n");
    print_comm(f, "world", r->world_size, &r->world);
    print_comm(f, "shard", r->shard_size, &r->shard);
    print_comm(f, "repl", r->repl_size, &r->repl);
}

static void json_comm(sv_json_writer *w, const char *key, int size, const sv_comm_stats *s) {
    sv_json_key(w, key);
    sv_json_obj_begin(w);
    sv_json_key(w, "ranks"), sv_json_i64(w, size);
    sv_json_key(w, "all_gather"), sv_json_u64(w, s->all_gathers);
    sv_json_key(w, "reduce_scatter"), sv_json_u64(w, s->reduce_scatters);
    sv_json_key(w, "all_reduce"), sv_json_u64(w, s->all_reduces);
    sv_json_key(w, "broadcast"), sv_json_u64(w, s->broadcasts);
    sv_json_key(w, "bytes_sent"), sv_json_u64(w, s->bytes_sent);
    sv_json_key(w, "exposed_s"), sv_json_f64(w, s->wait_seconds);
    sv_json_obj_end(w);
}

void sv_sim_json(sv_json_writer *w, const sv_sim_opts *o, const sv_sim_result *r, const struct sv_provenance *prov,
                 const sv_flag *flags) {
    sv_json_obj_begin(w);
    sv_json_key(w, "mode"), sv_json_str(w, "simulate");
    sv_json_key(w, "model"), sv_json_str(w, o->run.model.model);
    sv_json_key(w, "device"), sv_json_str(w, o->device);
    sv_json_key(w, "device_name"), sv_json_str(w, r->device_name);
    sv_json_key(w, "world"), sv_json_i64(w, r->world_size);
    sv_json_key(w, "nodes"), sv_json_i64(w, r->nodes);
    sv_json_key(w, "ranks_per_node"), sv_json_i64(w, r->ranks_per_node);
    sv_json_key(w, "strategy"), sv_json_str(w, o->run.strategy);
    sv_json_key(w, "shard_size"), sv_json_i64(w, r->shard_size);
    sv_json_key(w, "wrap"), sv_json_str(w, o->run.wrap);
    sv_json_key(w, "units"), sv_json_i64(w, r->units);
    sv_json_key(w, "param_dtype"), sv_json_str(w, o->run.param_dtype);
    sv_json_key(w, "batch_size"), sv_json_i64(w, o->run.batch_size);
    sv_json_key(w, "accum"), sv_json_i64(w, o->run.accum);
    sv_json_key(w, "recompute"), sv_json_bool(w, o->run.recompute);
    sv_json_key(w, "threads_per_rank"), sv_json_i64(w, r->threads);
    sv_json_key(w, "oversubscription"), sv_json_f64(w, r->slowdown);
    sv_json_key(w, "step_time_s"), sv_json_f64(w, r->step_s);
    sv_json_key(w, "img_per_s"), sv_json_f64(w, r->img_s);
    sv_json_key(w, "compute_s"), sv_json_f64(w, r->compute_s);
    sv_json_key(w, "comm_exposed_s"), sv_json_f64(w, r->comm_exposed_s);
    sv_json_key(w, "comm_exposed_frac"), sv_json_f64(w, r->comm_exposed_s / r->step_s);
    sv_json_key(w, "comm_issue_to_complete_s"), sv_json_f64(w, r->comm_busy_s);
    sv_json_key(w, "optimizer_s"), sv_json_f64(w, r->optim_s);
    sv_json_key(w, "other_s"), sv_json_f64(w, r->other_s);
    sv_json_key(w, "mfu"), r->mfu >= 0 ? sv_json_f64(w, r->mfu) : sv_json_null(w);
    sv_json_key(w, "peak_flops_per_rank"), r->peak_flops > 0 ? sv_json_f64(w, r->peak_flops) : sv_json_null(w);
    sv_json_key(w, "mem_total_bytes"), sv_json_u64(w, r->mem.total);
    sv_json_key(w, "mem_params_bytes"), sv_json_u64(w, r->mem.fsdp.params);
    sv_json_key(w, "mem_gathered_bytes"), sv_json_u64(w, r->mem.fsdp.gathered);
    sv_json_key(w, "mem_activations_bytes"), sv_json_u64(w, r->mem.activations);
    sv_json_key(w, "intra_alpha_us"), sv_json_f64(w, r->net.intra.alpha_s * 1e6);
    sv_json_key(w, "intra_small_alpha_us"), sv_json_f64(w, r->net.intra.small_alpha_s * 1e6);
    sv_json_key(w, "intra_small_bytes"), sv_json_f64(w, r->net.intra.small_bytes);
    sv_json_key(w, "intra_gbps"), sv_json_f64(w, r->net.intra.bw_Bps / 1e9);
    sv_json_key(w, "reduce_factor"), sv_json_f64(w, r->net.intra.reduce_factor);
    sv_json_key(w, "progress_us"), sv_json_f64(w, r->net.intra.progress_s * 1e6);
    sv_json_key(w, "inter_progress_us"), sv_json_f64(w, r->net.inter.progress_s * 1e6);
    sv_json_key(w, "sched_lag_us"), sv_json_f64(w, r->net.sched_lag_s * 1e6);
    sv_json_key(w, "sched_round_us"), sv_json_f64(w, r->net.sched_round_s * 1e6);
    sv_json_key(w, "inter_alpha_us"), sv_json_f64(w, r->net.inter.alpha_s * 1e6);
    sv_json_key(w, "inter_small_alpha_us"), sv_json_f64(w, r->net.inter.small_alpha_s * 1e6);
    sv_json_key(w, "inter_small_bytes"), sv_json_f64(w, r->net.inter.small_bytes);
    sv_json_key(w, "inter_gbps"), sv_json_f64(w, r->net.inter.bw_Bps / 1e9);
    sv_json_key(w, "inter_reduce_factor"), sv_json_f64(w, r->net.inter.reduce_factor);
    sv_json_key(w, "inter_shared"), sv_json_bool(w, r->net.inter.shared);
    sv_json_key(w, "inter_cpu_ns_per_byte"), sv_json_f64(w, r->net.inter.cpu_s_per_byte * 1e9);
    sv_json_key(w, "transport_cpu_s"), sv_json_f64(w, r->transport_cpu_s);
    sv_json_key(w, "inter_burst_bytes"), sv_json_f64(w, r->net.inter.burst_bytes);
    sv_json_key(w, "inter_peak_gbps"), sv_json_f64(w, r->net.inter.peak_Bps / 1e9);
    sv_json_key(w, "op_shapes"), sv_json_i64(w, r->shapes);
    sv_json_key(w, "calibrate_s"), sv_json_f64(w, r->calibrate_s);
    sv_json_key(w, "collectives");
    sv_json_obj_begin(w);
    json_comm(w, "world", r->world_size, &r->world);
    json_comm(w, "shard", r->shard_size, &r->shard);
    json_comm(w, "repl", r->repl_size, &r->repl);
    sv_json_obj_end(w);
    if (prov) {
        sv_json_key(w, "provenance");
        sv_provenance_write(w, prov, flags);
    }
    sv_json_obj_end(w);
}
