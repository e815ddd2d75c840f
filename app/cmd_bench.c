/* shardvit bench: training throughput of the real FSDP step, single backend ops, collectives.
 *
 * Train mode (default) runs `--warmup` untimed steps and `--steps` timed steps of the very step
 * `shardvit train` runs (app/train_step.h) and reports img/s, achieved model FLOP/s, MFU, memory
 * and where each rank's time went. FLOPs per image = 3 x sv_vit_flops_fwd (forward + backward
 * = 2 x forward), i.e. 6 x matmul parameters x tokens + the attention score/value products;
 * recomputation is not counted (it is overhead, as in MFU's usual definition).
 * MFU: against sv_be_peak_flops on a GPU; on the CPU against the hardware: the per-core ISA peak
 * of the instruction the run's GEMM engine uses (model/backend/cpu/isa_peak.h, an in-register
 * loop; the engine is read from the backend's device name), measured on every rank at once,
 * times the cores used (peak_kind "isa"). The earlier figure is kept as mfu_gemm: against a
 * short single-threaded 1024^3 linear layer through the backend in the run's compute dtype (fp32
 * sgemm, or the bf16 GEMM), also measured on every rank at once (key gemm_peak_dtype says which).
 * Output: one JSON object (stdout or --json FILE) from rank 0; a human summary on stderr. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app/backend_env.h"
#include "app/bench_ops.h"
#include "app/bench_sweep.h"
#include "app/commands.h"
#include "app/cpu_peak.h"
#include "app/env_overrides.h"
#include "app/provenance.h"
#include "app/run.h"
#include "app/train_step.h"
#include "ckpt/ckpt_out.h"
#include "core/cpus.h"
#include "core/fileio.h"
#include "core/json.h"
#include "core/log.h"
#include "core/procstat.h"
#include "core/rng.h"
#include "core/trace.h"
#include "data/loader.h"
#include "fsdp/agree.h"

typedef struct bench_opts {
    sv_run_opts run;
    const sv_flag *flags; /* the resolved flag table, for the provenance's "config" */
    sv_provenance prov;   /* rank 0: written into every result */
    long long steps;
    int warmup, synthetic, comm, workers;
    const char *data, *json, *op;
    double smoothing, calib_s;
    const char *comm_min, *comm_max, *comm_group;
    const char *sweep, *sweep_csv, *sweep_jsonl;
    int rss_reset; /* this rank reset its peak RSS before the run's set-up (rss_peak_reset) */
} bench_opts;

/* What each rank contributes to the report (gathered as doubles). */
enum {
    R_IMG_S,
    R_ARENA,
    R_HOST_ARENA,
    R_RSS,
    R_COMPUTE,
    R_COMM,
    R_DATA,
    R_OPTIM,
    R_OTHER,
    R_WALL,
    R_CPU,
    R_COMM_LANE,
    R_RSS_PROCESS, /* 1: R_RSS is the process's lifetime peak (the run's own could not be measured) */
    R_N
};
static const char *k_split[] = {"compute_s", "comm_exposed_s", "data_wait_s", "optimizer_s", "other_s"};

/* This rank's peak RSS of the run (set-up, warm-up, timed steps) into acc, or, where the peak
 * could not be reset or read, the process's lifetime peak marked as such (R_RSS_PROCESS). */
static void rss_peak_run(const bench_opts *o, double acc[R_N]) {
    double b = o->rss_reset ? sv_proc_rss_peak_bytes() : -1;
    acc[R_RSS] = b > 0 ? b : sv_proc_max_rss_bytes();
    acc[R_RSS_PROCESS] = b > 0 ? 0 : 1;
}

static sv_status write_text(const bench_opts *o, const char *text);

/* The result object of w with "provenance" appended, as text in out (free with sv_json_writer_free). */
static sv_status with_provenance(const bench_opts *o, sv_json_writer *w, sv_json_writer *out) {
    const char *text;
    size_t len;
    sv_json_writer_init(out, 0);
    SV_TRY(sv_json_writer_finish(w, &text, &len));
    sv_json_doc doc;
    SV_TRY(sv_json_parse(&doc, text, len, "bench result", NULL));
    sv_json_obj_begin(out);
    for (size_t i = 0; i < sv_json_count(&doc.root); i++) {
        sv_json_key(out, doc.root.u.obj.members[i].key);
        sv_json_value(out, &doc.root.u.obj.members[i].value);
    }
    sv_json_key(out, "provenance");
    sv_provenance_write(out, &o->prov, o->flags);
    sv_json_obj_end(out);
    sv_json_doc_free(&doc);
    return SV_OK;
}

/* Every bench result leaves through here: the object with its provenance, to --json or stdout. */
static sv_status write_json(const bench_opts *o, sv_json_writer *res) {
    sv_json_writer pw = {0};
    const char *text;
    sv_status st = with_provenance(o, res, &pw);
    if (st == SV_OK) st = sv_json_writer_finish(&pw, &text, NULL);
    if (st == SV_OK) st = write_text(o, text);
    sv_json_writer_free(&pw);
    return st;
}

/* To stdout, or --json through a fresh temporary renamed over it (checked by check_outputs). */
static sv_status write_text(const bench_opts *o, const char *text) {
    if (!o->json) {
        printf("%s\n", text);
        fflush(stdout);
        return SV_OK;
    }
    size_t n = strlen(text);
    char *buf = malloc(n + 1);
    if (!buf) return SV_FAIL(SV_ERR_OOM, "--json %s: %zu bytes", o->json, n + 1);
    memcpy(buf, text, n);
    buf[n] = '\n';
    sv_status st = sv_fileio_write_atomic(o->json, buf, n + 1);
    free(buf);
    return st;
}

/* Before anything runs: every output path passes the rules of docs/checkpoints.md "Outputs"
 * (ckpt/ckpt_out.h, as train's --trace): an existing entry must be a regular file (a FIFO would
 * block the open, a symbolic link be followed, a device be written) and an earlier output of the
 * same kind (a bench result, the sweep CSV's header, a merged trace), and no path may lie in a
 * checkpoint; the outputs, the trace's part files included, are distinct files in existing
 * directories (bench creates none).
 * Every rank checks the paths as it sees them; agree_outputs combines the results. */
static sv_status check_outputs(const bench_opts *o, int world) {
    const char *paths[] = {o->json, o->sweep_csv, o->sweep_jsonl, o->run.trace};
    const char *what[] = {"--json", "--sweep-csv", "--sweep-jsonl", "--trace"};
    SV_TRY(sv_ckpt_out_distinct(paths, what, 4));
    if (o->run.trace) { /* nor may an output be one of the trace parts, TRACE.rankN of every rank */
        char part[4096];
        for (int r = 0; r < world; r++) {
            sv_trace_part_path(part, sizeof part, o->run.trace, r);
            for (int i = 0; i < 3; i++) {
                const char *pair[] = {paths[i], part}, *pair_what[] = {what[i], "--trace part"};
                if (paths[i]) SV_TRY(sv_ckpt_out_distinct(pair, pair_what, 2));
            }
        }
    }
    for (int i = 0; i < 4; i++)
        if (paths[i]) SV_TRY(sv_ckpt_out_check_parent(paths[i], what[i]));
    if (o->json) SV_TRY(sv_ckpt_out_check_earlier(o->json, "--json", sv_provenance_file_of, "bench", "bench result"));
    if (o->sweep_csv)
        SV_TRY(sv_ckpt_out_check_earlier(o->sweep_csv, "--sweep-csv", sv_sweep_csv_is_earlier, NULL, "sweep CSV"));
    if (o->sweep_jsonl)
        SV_TRY(
            sv_ckpt_out_check_earlier(o->sweep_jsonl, "--sweep-jsonl", sv_provenance_jsonl_of, "bench", "sweep JSONL"));
    if (o->run.trace) {
        SV_TRY(sv_ckpt_out_check_earlier(o->run.trace, "--trace", sv_trace_is_merged, NULL, "shardvit trace"));
        SV_TRY(sv_run_check_trace_parts(o->run.trace, world));
    }
    return SV_OK;
}

/* All ranks agree on the outcome of check_outputs before any of them goes on, as train agrees on
 * its output checks: ranks on node-local storage can see different files at one path, and a rank
 * that stopped alone would leave the others waiting in their first collective until the
 * communication timeout. When some rank failed, every rank returns the lowest failing rank's
 * status and message ("... (reported by rank R)" on the others), so all exit together
 * (fsdp/agree.h sv_fsdp_agree_comm). Collective over a world communicator of its own (host
 * memory, as calibrate's). */
static sv_status agree_outputs(const bench_opts *o, const sv_proc *p, sv_status st) {
    if (p->world == 1) return st;
    sv_comm_config cc = sv_env_comm_config(o->run.comm_timeout);
    sv_comm *cm;
    SV_TRY(sv_comm_create_world(&cc, &cm));
    st = sv_fsdp_agree_comm(cm, NULL, st);
    sv_comm_destroy(cm);
    return st;
}

static int resolve_threads(const bench_opts *o, const sv_proc *p) {
    int t = o->run.threads ? o->run.threads : sv_cpus_rank_share(p->local_size);
    return t < 1 ? 1 : t;
}

static sv_dtype calib_dtype(const bench_opts *o) { return strcmp(o->run.param_dtype, "bf16") ? SV_F32 : SV_BF16; }

/* ---- micro-batch sources ---- */
typedef struct synth_feed {
    float *images;
    int32_t *labels;
} synth_feed;

static sv_status synth_next(void *ctx, int micro, sv_micro_batch *mb) {
    (void)micro;
    synth_feed *f = ctx;
    mb->images = f->images;
    mb->labels = f->labels;
    return SV_OK;
}

/* ---- train mode ---- */
/* The step's input: a loader over --data, or one fixed random batch per rank (the step without
 * any input pipeline). */
typedef struct bench_input {
    sv_dataset *ds;
    sv_loader *ld;
    synth_feed sf;
    sv_loader_feed lf;
    sv_micro_batch_fn next;
    void *ctx;
} bench_input;

static sv_status input_open(sv_run *r, const bench_opts *o, bench_input *in) {
    const sv_vit_config *c = &r->vcfg;
    int B = r->micro_batch;
    size_t img_elems = (size_t)B * c->in_chans * c->img * c->img;
    in->sf = (synth_feed){r->batch.images, r->batch.labels}; /* carved with the arena (app/run.h) */
    in->next = synth_next;
    in->ctx = &in->sf;
    if (o->data) {
        sv_dataset_opts dopts = sv_dataset_opts_default();
        dopts.synth_classes = c->num_classes;
        dopts.synth_img = c->img;
        dopts.synth_channels = c->in_chans;
        SV_TRY(sv_dataset_open(o->data, &dopts, &in->ds));
        sv_loader_opts lo = sv_loader_opts_for(in->ds, SV_TRANSFORM_TRAIN, B, r->rank, r->world, (uint64_t)o->run.seed,
                                               c->img, c->in_chans);
        lo.threads = o->workers;
        sv_loader_opts_host_alloc(&lo, r->be); /* train's batch memory and feed: the step train times */
        SV_TRY(sv_loader_create(&lo, &in->ld));
        in->lf = (sv_loader_feed){.r = r, .ld = in->ld};
        in->next = sv_loader_feed_next;
        in->ctx = &in->lf;
        return SV_OK;
    }
    float *h = malloc(img_elems * 4);
    int32_t *hl = malloc((size_t)B * 4);
    sv_status st = h && hl ? SV_OK : SV_FAIL(SV_ERR_OOM, "synthetic batch of %zu floats", img_elems);
    uint64_t key = sv_hash2((uint64_t)o->run.seed, (uint64_t)r->rank);
    for (size_t i = 0; st == SV_OK && i < img_elems; i++) h[i] = (float)sv_rand_normal(key, i);
    for (int i = 0; st == SV_OK && i < B; i++)
        hl[i] = (int32_t)(sv_rand_u64(key + 1, (uint64_t)i) % (uint64_t)c->num_classes);
    if (st == SV_OK) st = sv_be_upload(r->be, r->batch.images, h, img_elems * 4);
    if (st == SV_OK) st = sv_be_upload(r->be, r->batch.labels, hl, (size_t)B * 4);
    free(h);
    free(hl);
    return st;
}

static void input_close(bench_input *in) {
    if (in->ld) sv_loader_destroy(in->ld);
    if (in->ds) sv_dataset_close(in->ds);
}

/* Warm-up, then --steps timed steps: this rank's figures into acc[R_N]. */
static sv_status measure(sv_run *r, const bench_opts *o, bench_input *in, double acc[R_N], double *step_min,
                         double *loss_first, double *loss_last) {
    /* The tracer's per-track sums time the compute and comm lanes of the timed steps: they count
     * every event, so the split holds for any --steps. Without --trace the tracer keeps only the
     * sums; a user --trace keeps its own tracer, whose event array may fill (its sums do not). */
    if (!sv_trace_on(&r->trace)) {
        sv_trace_free(&r->trace);
        sv_trace_init_sums(&r->trace, r->rank);
    }
    sv_optim_config oc = {
        .lr = 1e-4f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f, .weight_decay = 0.05f, .max_grad_norm = 1.0f};
    sv_step_result sr;
    *loss_first = *loss_last = NAN;
    for (int i = 0; i < o->warmup; i++) {
        SV_TRY(sv_train_step(r, &oc, (float)o->smoothing, o->run.accum, o->run.batch_size, in->next, in->ctx, &sr));
        if (i == 0) *loss_first = sr.loss_sum / o->run.batch_size;
    }
    r->fsdp.trace = &r->trace;
    SV_TRY(sv_comm_barrier_sync(r->world_comm));
    double wait0 = sv_run_comm_wait_s(r), compute0 = r->trace.lane_us[SV_TRACE_COMPUTE] * 1e-6,
           comm_lane0 = sv_trace_comm_lane_s(&r->trace);
    *step_min = INFINITY;
    double t0 = sv_now_s(), cpu0 = sv_proc_cpu_seconds();
    for (long long s = 0; s < o->steps; s++) {
        double ts = sv_now_s();
        SV_TRY(sv_train_step(r, &oc, (float)o->smoothing, o->run.accum, o->run.batch_size, in->next, in->ctx, &sr));
        double dt = sv_now_s() - ts;
        if (dt < *step_min) *step_min = dt;
        acc[R_DATA] += sr.data_wait_s;
        acc[R_OPTIM] += sr.optim_s - sr.optim_wait_s;
        if (isnan(*loss_first)) *loss_first = sr.loss_sum / o->run.batch_size;
        *loss_last = sr.loss_sum / o->run.batch_size;
    }
    double wall = sv_now_s() - t0;
    acc[R_CPU] = sv_proc_cpu_seconds() - cpu0;
    acc[R_COMPUTE] = r->trace.lane_us[SV_TRACE_COMPUTE] * 1e-6 - compute0;
    acc[R_COMM_LANE] = sv_trace_comm_lane_s(&r->trace) - comm_lane0; /* issue -> complete */
    acc[R_COMM] = sv_run_comm_wait_s(r) - wait0;
    acc[R_OTHER] = wall - acc[R_COMPUTE] - acc[R_COMM] - acc[R_DATA] - acc[R_OPTIM];
    acc[R_WALL] = wall;
    acc[R_IMG_S] = (double)o->steps * r->micro_batch * o->run.accum / wall;
    acc[R_ARENA] = (double)r->dev.peak;
    acc[R_HOST_ARENA] = (double)r->host.peak;
    rss_peak_run(o, acc);
    if (!o->run.trace) r->fsdp.trace = NULL;
    return SV_OK;
}

/* Rank 0: the JSON result and the summary lines from every rank's figures (all: world x R_N). */
static sv_status report(sv_run *r, const bench_opts *o, double gemm_core, const sv_cpu_peak *hw, const double *all,
                        double step_min, double loss_first, double loss_last, sv_json_writer *out) {
    const sv_vit_config *c = &r->vcfg;
    sv_status st;
    double wall_max = 0, mem_max = 0, rss_max = 0, split[5] = {0}, cpu_sum = 0;
    int rss_process = 0; /* some rank could only give its process's lifetime peak RSS */
    for (int k = 0; k < r->world; k++) {
        const double *a = all + (size_t)k * R_N;
        if (a[R_WALL] > wall_max) wall_max = a[R_WALL];
        cpu_sum += a[R_CPU];
        if (a[R_ARENA] > mem_max) mem_max = a[R_ARENA];
        if (a[R_RSS] > rss_max) rss_max = a[R_RSS];
        if (a[R_RSS_PROCESS] != 0) rss_process = 1;
        for (int j = 0; j < 5; j++) split[j] += a[R_COMPUTE + j] / r->world;
    }
    double flops_img = 3.0 * sv_vit_flops_fwd(c);
    double img_s = (double)o->steps * o->run.batch_size / wall_max;
    double achieved = img_s * flops_img;
    sv_cpu_peak pc;
    sv_cpu_peak_cores(r, &pc);
    int threads_rank = pc.threads_rank, oversub = pc.oversub;
    double cores_used = pc.cores_used;
    double peak = sv_be_peak_flops(r->be) * r->world;
    const char *peak_kind = "device";
    double hw_flops = sv_cpu_peak_flops(hw);
    double gemm_flops = gemm_core > 0 ? gemm_core * cores_used : 0;
    if (peak <= 0 && hw_flops > 0) {
        peak = hw_flops;
        peak_kind = "isa";
    } else if (peak <= 0 && gemm_flops > 0) { /* the CPU lacks the engine's instruction: not expected */
        peak = gemm_flops;
        peak_kind = "measured_gemm";
    }
    sv_json_writer w;
    sv_json_writer_init(&w, 0);
    sv_json_obj_begin(&w);
    sv_json_key(&w, "mode"), sv_json_str(&w, "train");
    sv_json_key(&w, "model"), sv_json_str(&w, c->name);
    sv_json_key(&w, "img"), sv_json_i64(&w, c->img);
    sv_json_key(&w, "dim"), sv_json_i64(&w, c->dim);
    sv_json_key(&w, "depth"), sv_json_i64(&w, c->depth);
    sv_json_key(&w, "heads"), sv_json_i64(&w, c->heads);
    sv_json_key(&w, "patch"), sv_json_i64(&w, c->patch);
    sv_json_key(&w, "params"), sv_json_u64(&w, sv_vit_param_count(c));
    sv_json_key(&w, "mlp_ratio"), sv_json_f64(&w, c->mlp_ratio);
    sv_json_key(&w, "num_classes"), sv_json_i64(&w, c->num_classes);
    sv_json_key(&w, "in_chans"), sv_json_i64(&w, c->in_chans);
    sv_json_key(&w, "reg_tokens"), sv_json_i64(&w, c->reg_tokens);
    sv_json_key(&w, "class_token"), sv_json_bool(&w, !c->no_class_token);
    sv_json_key(&w, "global_pool"), sv_json_str(&w, sv_vit_pool_name(c->global_pool));
    sv_json_key(&w, "no_embed_class"), sv_json_bool(&w, c->no_embed_class);
    sv_json_key(&w, "layer_scale"), sv_json_f64(&w, c->layer_scale);
    sv_json_key(&w, "batch_size"), sv_json_i64(&w, o->run.batch_size);
    sv_json_key(&w, "accum"), sv_json_i64(&w, o->run.accum);
    sv_json_key(&w, "world"), sv_json_i64(&w, r->world);
    sv_json_key(&w, "threads_per_rank"), sv_json_i64(&w, threads_rank);
    sv_json_key(&w, "oversubscribed"), sv_json_bool(&w, oversub);
    sv_json_key(&w, "device"), sv_json_str(&w, sv_be_device_name(r->be));
    sv_json_key(&w, "strategy"), sv_json_str(&w, o->run.strategy);
    sv_json_key(&w, "param_dtype"), sv_json_str(&w, o->run.param_dtype);
    sv_json_key(&w, "data"), sv_json_str(&w, o->data ? o->data : "synthetic-fixed");
    sv_json_key(&w, "warmup"), sv_json_i64(&w, o->warmup);
    sv_json_key(&w, "steps"), sv_json_i64(&w, o->steps);
    sv_json_key(&w, "img_per_s"), sv_json_f64(&w, img_s);
    sv_json_key(&w, "img_per_s_per_rank");
    sv_json_arr_begin(&w);
    for (int k = 0; k < r->world; k++) sv_json_f64(&w, all[(size_t)k * R_N + R_IMG_S]);
    sv_json_arr_end(&w);
    sv_json_key(&w, "step_time_s"), sv_json_f64(&w, wall_max / (double)o->steps);
    /* CPU time is what a loaded machine distorts least: on an idle one img/s ~ img/CPU-s x cores */
    sv_json_key(&w, "cpu_s"), sv_json_f64(&w, cpu_sum);
    sv_json_key(&w, "img_per_cpu_s"), sv_json_f64(&w, cpu_sum > 0 ? (double)o->steps * o->run.batch_size / cpu_sum : 0);
    sv_json_key(&w, "step_time_min_s"), sv_json_f64(&w, step_min);
    sv_json_key(&w, "img_per_s_best_step"), sv_json_f64(&w, o->run.batch_size / step_min);
    sv_json_key(&w, "flops_per_image"), sv_json_f64(&w, flops_img);
    sv_json_key(&w, "tflops"), sv_json_f64(&w, achieved / 1e12);
    sv_json_key(&w, "peak_flops"), peak > 0 ? sv_json_f64(&w, peak) : sv_json_null(&w);
    sv_json_key(&w, "peak_kind"), sv_json_str(&w, peak > 0 ? peak_kind : "unknown");
    sv_json_key(&w, "gemm_peak_per_core_flops"), gemm_core > 0 ? sv_json_f64(&w, gemm_core) : sv_json_null(&w);
    sv_json_key(&w, "gemm_peak_dtype"),
        gemm_core > 0 ? sv_json_str(&w, sv_dtype_name(calib_dtype(o))) : sv_json_null(&w);
    sv_json_key(&w, "hw_peak_per_core_flops"), hw_flops > 0 ? sv_json_f64(&w, hw->per_core) : sv_json_null(&w);
    sv_json_key(&w, "hw_peak_engine"), hw->engine[0] ? sv_json_str(&w, hw->engine) : sv_json_null(&w);
    sv_json_key(&w, "hw_peak_flops"), hw_flops > 0 ? sv_json_f64(&w, hw_flops) : sv_json_null(&w);
    sv_json_key(&w, "cores_used"), sv_json_f64(&w, cores_used);
    sv_json_key(&w, "mfu"), peak > 0 ? sv_json_f64(&w, achieved / peak) : sv_json_null(&w);
    sv_json_key(&w, "mfu_gemm"), gemm_flops > 0 ? sv_json_f64(&w, achieved / gemm_flops) : sv_json_null(&w);
    sv_json_key(&w, "peak_mem_bytes"), sv_json_f64(&w, mem_max);
    sv_json_key(&w, "max_rss_bytes"), sv_json_f64(&w, rss_max);
    sv_json_key(&w, "max_rss_scope"), sv_json_str(&w, rss_process ? "process" : "run");
    sv_json_key(&w, "loss_first"), sv_json_f64(&w, loss_first);
    sv_json_key(&w, "loss_last"), sv_json_f64(&w, loss_last);
    sv_json_key(&w, "time_split");
    sv_json_obj_begin(&w);
    for (int j = 0; j < 5; j++) sv_json_key(&w, k_split[j]), sv_json_f64(&w, split[j]);
    sv_json_obj_end(&w);
    sv_json_key(&w, "per_rank");
    sv_json_arr_begin(&w);
    for (int k = 0; k < r->world; k++) {
        const double *a = all + (size_t)k * R_N;
        sv_json_obj_begin(&w);
        sv_json_key(&w, "rank"), sv_json_i64(&w, k);
        sv_json_key(&w, "img_per_s"), sv_json_f64(&w, a[R_IMG_S]);
        sv_json_key(&w, "arena_bytes"), sv_json_f64(&w, a[R_ARENA]);
        sv_json_key(&w, "host_arena_bytes"), sv_json_f64(&w, a[R_HOST_ARENA]);
        sv_json_key(&w, "max_rss_bytes"), sv_json_f64(&w, a[R_RSS]);
        sv_json_key(&w, "max_rss_scope"), sv_json_str(&w, a[R_RSS_PROCESS] != 0 ? "process" : "run");
        for (int j = 0; j < 5; j++) sv_json_key(&w, k_split[j]), sv_json_f64(&w, a[R_COMPUTE + j]);
        sv_json_key(&w, "wall_s"), sv_json_f64(&w, a[R_WALL]);
        sv_json_key(&w, "cpu_s"), sv_json_f64(&w, a[R_CPU]);
        sv_json_key(&w, "comm_issue_to_complete_s"), sv_json_f64(&w, a[R_COMM_LANE]);
        sv_json_obj_end(&w);
    }
    sv_json_arr_end(&w);
    sv_json_obj_end(&w);
    st = with_provenance(o, &w, out);
    sv_json_writer_free(&w);
    fprintf(stderr,
            "bench %s (%zu params) batch %d on %d rank%s x %d thread%s%s, %lld steps after %d warm-up:\n"
            "  %.1f img/s (%.1f per rank), %.3f TFLOP/s achieved (%.3g GFLOP/image = 3 x forward)\n",
            c->name, sv_vit_param_count(c), o->run.batch_size, r->world, r->world == 1 ? "" : "s", threads_rank,
            threads_rank == 1 ? "" : "s", oversub ? " (OVERSUBSCRIBED)" : "", o->steps, o->warmup, img_s,
            img_s / r->world, achieved / 1e12, flops_img / 1e9);
    const char *gdt = calib_dtype(o) == SV_BF16 ? "bf16" : "fp32";
    if (peak > 0) { /* no peak (GPU without one, or --calib-seconds 0): no MFU line */
        if (!strcmp(peak_kind, "device"))
            fprintf(stderr, "  MFU %.1f%% of device peak %.1f GFLOP/s\n", 100 * achieved / peak, peak / 1e9);
        else if (!strcmp(peak_kind, "isa"))
            fprintf(stderr, "  MFU %.1f%% of ISA peak %.1f GFLOP/s (gemm %s%s: %.1f GFLOP/s per core x %g core%s)\n",
                    100 * achieved / peak, peak / 1e9, hw->engine,
                    strncmp(hw->engine, "openblas", 8) ? "" : " = widest fp32 FMA", hw->per_core / 1e9, cores_used,
                    cores_used == 1 ? "" : "s");
        else
            fprintf(stderr,
                    "  MFU %.1f%% of measured %s GEMM peak %.1f GFLOP/s (no ISA peak for gemm %s on this CPU)\n",
                    100 * achieved / peak, gdt, peak / 1e9, hw->engine);
    }
    if (gemm_flops > 0 && strcmp(peak_kind, "measured_gemm"))
        fprintf(stderr, "  MFU %.1f%% of measured %s GEMM peak %.1f GFLOP/s (%.1f per core x %g core%s; mfu_gemm)\n",
                100 * achieved / gemm_flops, gdt, gemm_flops / 1e9, gemm_core / 1e9, cores_used,
                cores_used == 1 ? "" : "s");
    fprintf(stderr,
            "  time per rank (mean): compute %.1f%%, exposed comm %.1f%%, data wait %.1f%%, optimizer %.1f%%, other "
            "%.1f%%\n",
            100 * split[0] / wall_max, 100 * split[1] / wall_max, 100 * split[2] / wall_max, 100 * split[3] / wall_max,
            100 * split[4] / wall_max);
    fprintf(stderr, "  CPU time %.2f s over all ranks (%.1f img per CPU-second); load, not only this run, sets img/s\n",
            cpu_sum, cpu_sum > 0 ? (double)o->steps * o->run.batch_size / cpu_sum : 0);
    fprintf(stderr, "  memory: arena %.1f MiB, max RSS %.1f MiB (largest rank, %s)\n", mem_max / 1048576.0,
            rss_max / 1048576.0,
            rss_process ? "the process's lifetime peak: the run's own could not be measured"
                        : "set-up and steps of this run");
    return st;
}

static sv_status bench_train(sv_run *r, const bench_opts *o, double gemm_core, const sv_cpu_peak *hw,
                             sv_json_writer *out) {
    bench_input in = {0};
    double acc[R_N] = {0}, step_min = INFINITY, loss_first = NAN, loss_last = NAN;
    sv_status st = input_open(r, o, &in);
    if (st == SV_OK) st = measure(r, o, &in, acc, &step_min, &loss_first, &loss_last);
    double *all = st == SV_OK ? malloc(sizeof(double) * R_N * (size_t)r->world) : NULL;
    if (st == SV_OK && !all) st = SV_FAIL(SV_ERR_OOM, "bench report");
    sv_comm_req q;
    if (st == SV_OK) st = sv_comm_all_gather(r->world_comm, all, acc, R_N, SV_COMM_F64, &q);
    if (st == SV_OK) st = sv_comm_wait(r->world_comm, &q);
    if (st == SV_OK && r->rank == 0) st = report(r, o, gemm_core, hw, all, step_min, loss_first, loss_last, out);
    free(all);
    input_close(&in);
    return st;
}

/* One training-step benchmark of o's configuration; rank 0 gets the result (with provenance) in
 * `res` (the caller frees it). */
static sv_status train_once(bench_opts *o, const sv_proc *proc, sv_json_writer *res) {
    double gemm = 0;
    sv_device_kind dk = SV_DEVICE_CPU;
    if (!strcmp(o->run.device, "cuda") || (!strcmp(o->run.device, "auto") && sv_backend_available(SV_DEVICE_CUDA)))
        dk = SV_DEVICE_CUDA;
    sv_status st = SV_OK;
    if (dk == SV_DEVICE_CPU && o->calib_s > 0)
        st = sv_cpu_peak_gemm(o->run.comm_timeout, o->calib_s, calib_dtype(o), o->run.cpu_gemm, &gemm);
    sv_run r;
    memset(&r, 0, sizeof r);
    /* max_rss_bytes: the peak from here on, the run's set-up and steps; not the calibration's
     * buffers above, nor an earlier sweep row's */
    if (st == SV_OK) o->rss_reset = sv_proc_rss_peak_reset();
    if (st == SV_OK) st = sv_run_setup(&r, &o->run, proc->rank, proc->world, proc->local_rank, proc->local_size);
    sv_cpu_peak hw = {{0}, 0, 0, 0, 0};
    if (st == SV_OK && dk == SV_DEVICE_CPU && o->calib_s > 0) st = sv_cpu_peak_measure(&r, o->calib_s, &hw);
    if (st == SV_OK) st = bench_train(&r, o, gemm, &hw, res);
    if (st == SV_OK && o->run.trace) st = sv_run_finish_trace(&r, o->run.trace);
    if (st == SV_OK) sv_run_teardown(&r);
    return st;
}

/* A --sweep-csv / --sweep-jsonl file: its rows accumulate in memory, and after every finished
 * row the file is replaced atomically with all rows so far (core/fileio.h sv_fileio_write_atomic),
 * so that a failed later configuration, a signal or a kill keeps the rows finished. */
typedef struct sweep_out {
    const char *path, *flag;
    char *buf;
    size_t len;
    FILE *f;
} sweep_out;

static sv_status sweep_out_open(sweep_out *s) {
    if (!(s->f = open_memstream(&s->buf, &s->len))) return SV_FAIL(SV_ERR_OOM, "%s %s: row buffer", s->flag, s->path);
    return SV_OK;
}

static sv_status sweep_out_publish(sweep_out *s) {
    if (!s->f) return SV_OK;
    if (fflush(s->f) != 0) return SV_FAIL(SV_ERR_OOM, "%s %s: row buffer", s->flag, s->path);
    sv_status st = sv_fileio_write_atomic(s->path, s->buf, s->len);
    if (st != SV_OK) sv_err_frame(__FILE__, __LINE__);
    return st;
}

static void sweep_out_close(sweep_out *s) {
    if (s->f) fclose(s->f);
    free(s->buf);
    *s = (sweep_out){0};
}

/* Configuration i of the grid into run (the keys it does not sweep keep their flag values). */
static void sweep_apply(const sv_sweep *sw, int i, sv_run_opts *run) {
    const char *v[SV_SWEEP_KEYS];
    sv_sweep_config(sw, i, v);
    if (v[SV_SWEEP_MODELS]) run->model.model = v[SV_SWEEP_MODELS];
    if (v[SV_SWEEP_DTYPE]) run->param_dtype = v[SV_SWEEP_DTYPE];
    if (v[SV_SWEEP_STRATEGY]) run->strategy = v[SV_SWEEP_STRATEGY];
    if (v[SV_SWEEP_BATCH]) run->batch_size = (int)strtol(v[SV_SWEEP_BATCH], NULL, 10);
}

/* Before the first row runs: every value of the grid, and every configuration as its row's run
 * resolves it (app/run.h sv_run_resolve: the model, param dtype and strategy parsers, the batch
 * against world x --accum), so that a bad value is refused before earlier rows ran. */
static sv_status sweep_check(const sv_sweep *sw, const sv_run_opts *run, const sv_proc *proc) {
    for (int i = 0; i < sw->n[SV_SWEEP_BATCH]; i++) {
        char *end;
        long b = strtol(sw->v[SV_SWEEP_BATCH][i], &end, 10);
        if (*end || b < 1 || b > (1 << 20))
            return SV_FAIL(SV_ERR_INVALID, "--sweep: batch '%s' (an integer in [1, 1048576])",
                           sw->v[SV_SWEEP_BATCH][i]);
    }
    int rows = sv_sweep_count(sw);
    for (int i = 0; i < rows; i++) {
        sv_run_opts c = *run;
        if (!strcmp(c.device, "auto")) c.device = "cpu"; /* the choice is the row's (and logged there) */
        sweep_apply(sw, i, &c);
        sv_vit_config vc;
        sv_fsdp_config fc;
        sv_backend_config bc;
        int micro;
        if (sv_run_resolve(&c, proc->world, &vc, &fc, &bc, proc->local_size, &micro) != SV_OK) {
            char msg[SV_ERR_MSG_CAP];
            snprintf(msg, sizeof msg, "%s", sv_err_msg());
            return SV_FAIL(
                SV_ERR_INVALID, "--sweep: configuration %d/%d (model %s batch %d param-dtype %s strategy %s): %s",
                i + 1, rows, c.model.model ? c.model.model : "vit-28", c.batch_size, c.param_dtype, c.strategy, msg);
        }
    }
    return SV_OK;
}

/* --sweep: train_once for every configuration of the grid, one row each (app/bench_sweep.h). */
static sv_status sweep(bench_opts *o, const sv_proc *proc, const char *const *pos, int npos) {
    const char *items[8];
    int n = 0;
    items[n++] = o->sweep;
    for (int i = 0; i < npos && n < 8; i++) items[n++] = pos[i];
    sv_sweep sw;
    SV_TRY(sv_sweep_parse(&sw, items, n));
    SV_TRY(sweep_check(&sw, &o->run, proc));
    sweep_out so[2] = {{.path = o->sweep_csv, .flag = "--sweep-csv"},
                       {.path = o->sweep_jsonl, .flag = "--sweep-jsonl"}};
    FILE *jsonl = NULL;
    sv_status st = SV_OK;
    if (proc->rank == 0) {
        for (int k = 0; k < 2 && st == SV_OK; k++)
            if (so[k].path) st = sweep_out_open(&so[k]);
        jsonl = so[1].f;
        if (st == SV_OK && !so[0].f && !jsonl) jsonl = stdout;
    }
    st = agree_outputs(o, proc, st); /* no rank starts a row that rank 0 cannot record */
    int rows = sv_sweep_count(&sw);
    for (int i = 0; st == SV_OK && i < rows; i++) {
        sweep_apply(&sw, i, &o->run);
        if (proc->rank == 0)
            fprintf(stderr, "sweep %d/%d: model %s batch %d param-dtype %s strategy %s\n", i + 1, rows,
                    o->run.model.model, o->run.batch_size, o->run.param_dtype, o->run.strategy);
        sv_json_writer res = {0};
        st = train_once(o, proc, &res);
        const char *text;
        if (st == SV_OK && proc->rank == 0 && (st = sv_json_writer_finish(&res, &text, NULL)) == SV_OK)
            st = sv_sweep_write_row(text, so[0].f, jsonl, i == 0);
        for (int k = 0; k < 2 && st == SV_OK && proc->rank == 0; k++) st = sweep_out_publish(&so[k]);
        if (st == SV_OK && proc->rank == 0 && jsonl == stdout && (fflush(stdout) != 0 || ferror(stdout)))
            st = SV_FAIL(SV_ERR_IO, "--sweep: cannot write a result row to standard output: %s", strerror(errno));
        st = agree_outputs(o, proc, st); /* a row rank 0 failed to write stops every rank */
        sv_json_writer_free(&res);
    }
    for (int k = 0; k < 2; k++) sweep_out_close(&so[k]);
    return st;
}

int sv_cmd_bench(int argc, char **argv, const sv_proc *proc) {
    bench_opts o = {.run = SV_RUN_OPTS_DEFAULT,
                    .steps = 10,
                    .warmup = 3,
                    .synthetic = 1, /* off when --data is given */
                    .comm = 0,
                    .workers = 0,
                    .smoothing = 0.1,
                    .calib_s = 0.5,
                    .comm_min = "64K",
                    .comm_max = "64M"};
    /* clang-format off: one flag per line */
    sv_flag flags[] = {
        SV_RUN_FLAGS(o.run),
        {"steps", SV_FLAG_I64, &o.steps, 1, 1e9, "timed steps (op mode: timed iterations)", 0},
        {"warmup", SV_FLAG_INT, &o.warmup, 0, 1 << 20, "untimed warm-up steps before timing", 0},
        {"synthetic", SV_FLAG_BOOL, &o.synthetic, 0, 0,
         "one fixed random batch per rank, no input pipeline: what bench times unless --data is given", 0},
        {"data", SV_FLAG_STR, &o.data, 0, 0,
         "time with this input pipeline instead: synthetic | ImageFolder dir | tar pattern", 0},
        {"workers", SV_FLAG_INT, &o.workers, 0, 256,
         "data loader threads per rank with --data (0 = the CPUs it may use)", 0},
        {"smoothing", SV_FLAG_DOUBLE, &o.smoothing, 0, 0.999, "label smoothing", 0},
        {"json", SV_FLAG_STR, &o.json, 0, 0,
         "write the JSON result here instead of stdout (replaces only an earlier bench result)", 0},
        {"calib-seconds", SV_FLAG_DOUBLE, &o.calib_s, 0, 60,
         "CPU: seconds of each per-core peak measurement: the ISA peak of the run's GEMM engine (mfu) and a 1024^3 "
         "GEMM in the run's dtype (mfu_gemm); 0 = no MFU",
         0},
        {"op", SV_FLAG_STR, &o.op, 0, 0,
         "time one backend op: matmul | attention | layernorm | gelu | softmax_xent | adamw", 0},
        {"comm", SV_FLAG_BOOL, &o.comm, 0, 0,
         "collective bandwidth: all_gather / reduce_scatter / all_reduce / broadcast algbw and busbw (nccl-tests)", 0},
        {"comm-min", SV_FLAG_STR, &o.comm_min, 0, 0, "--comm: smallest buffer (bytes of the full buffer, e.g. 64K)", 0},
        {"comm-max", SV_FLAG_STR, &o.comm_max, 0, 0, "--comm: largest buffer (e.g. 64M)", 0},
        {"sweep", SV_FLAG_STR, &o.sweep, 0, 0,
         "benchmark a grid: KEY=V1,V2 items (this value and further positional ones), KEY models | batch | "
         "param-dtype | strategy; one row per configuration (--sweep-csv, --sweep-jsonl; JSONL on stdout when neither)",
         0},
        {"sweep-csv", SV_FLAG_STR, &o.sweep_csv, 0, 0,
         "--sweep: write the rows as CSV here (timm benchmark columns first; replaces only an earlier sweep CSV)", 0},
        {"sweep-jsonl", SV_FLAG_STR, &o.sweep_jsonl, 0, 0,
         "--sweep: write each row's full JSON result (one per line) here (replaces only an earlier one)", 0},
        {"comm-group", SV_FLAG_STR, &o.comm_group, 0, 0,
         "--comm: world (default) | intra | inter | intra:G | inter:G | G (= intra:G): groups of G consecutive ranks "
         "(G = ranks per node when omitted) or the ranks across them, as hybrid_shard forms them",
         0},
        SV_FLAG_END};
    /* clang-format on */
    sv_cmd_spec spec = {
        "bench", "[mpiexec -n N] shardvit bench --model M [--batch-size B] [--steps N] [flags]",
        "Benchmark the FSDP training step (default), one backend op (--op) or collectives (--comm). Prints one JSON "
        "object (keys img_per_s tflops mfu peak_mem_bytes time_split per_rank ...) and a summary on stderr. "
        "FLOPs per image = 3 x forward FLOPs (6 x matmul params x tokens + attention QK^T and PV terms). "
        "MFU on the CPU is the fraction of the per-core ISA peak of the run's GEMM engine x cores used (mfu_gemm: of a "
        "measured single-core GEMM in the run's dtype x cores used). Every result carries a \"provenance\" object "
        "(shardvit version --json; docs/performance.md). --sweep runs a grid, e.g. --sweep models=vit-ti16,vit-s16 "
        "batch=32,64 --sweep-csv results.csv.",
        4};
    char *pos[4];
    int npos;
    int rc = sv_cmd_parse(&spec, flags, argc, argv, pos, &npos, -1, NULL);
    if (rc >= 0) return rc;
    if ((rc = sv_backend_env_check(spec.name, o.run.cpu_gemm)) >= 0) return rc;
    if (npos && !o.sweep)
        return sv_cmd_usage_error(spec.name, "unexpected argument '%s' (KEY=V1,V2 items follow --sweep)", pos[0]);
    if ((o.sweep_csv || o.sweep_jsonl) && !o.sweep)
        return sv_cmd_usage_error(spec.name, "--sweep-csv and --sweep-jsonl need --sweep");
    if (o.sweep && (o.op || o.comm))
        return sv_cmd_usage_error(spec.name, "--sweep times the training step: not with --op or --comm");
    if (o.data && o.synthetic && sv_flag_seen(flags, "synthetic"))
        return sv_cmd_usage_error("bench", "--synthetic and --data exclude each other");
    if (!o.data && !o.synthetic)
        return sv_cmd_usage_error("bench", "--synthetic=false needs --data (the input pipeline to time instead)");
    if (o.data) o.synthetic = 0; /* the recorded configuration says what is timed */
    if (o.op && o.comm) return sv_cmd_usage_error("bench", "--op and --comm exclude each other");
    if (o.sweep && o.json)
        return sv_cmd_usage_error(spec.name,
                                  "--json takes one result: a --sweep writes its rows to --sweep-csv / "
                                  "--sweep-jsonl (JSONL on stdout when neither)");
    if ((o.op || o.comm) && o.run.trace)
        return sv_cmd_usage_error(spec.name, "--trace records the training step: not with --op or --comm");
    sv_status cs = agree_outputs(&o, proc, check_outputs(&o, proc->world));
    if (cs != SV_OK) return sv_cmd_exit("bench", cs, 1);
    int threads = resolve_threads(&o, proc);
    o.flags = flags;
    int on_cuda =
        !strcmp(o.run.device, "cuda") || (!strcmp(o.run.device, "auto") && sv_backend_available(SV_DEVICE_CUDA));
    sv_provenance_fill(&o.prov, "bench", proc, on_cuda ? 1 : threads, on_cuda ? proc->local_rank : -1);
    sv_status st = SV_OK;
    if (o.op || o.comm) {
        sv_json_writer w;
        sv_json_writer_init(&w, 0);
        if (o.op) {
            sv_vit_config c;
            st = sv_model_opts_resolve(&o.run.model, &c);
            int per = proc->world * o.run.accum;
            if (st == SV_OK && o.run.batch_size % per)
                st = SV_FAIL(SV_ERR_INVALID, "--batch-size %d must be divisible by world size x --accum = %d",
                             o.run.batch_size, per);
            if (st == SV_OK)
                st = sv_bench_op(o.op, &c, o.run.batch_size / per, threads, o.run.param_dtype, o.run.device,
                                 o.run.cpu_gemm, (int)o.steps, o.warmup, &w);
        } else {
            st = sv_bench_comm(&o.run, proc, threads, o.comm_min, o.comm_max, o.comm_group, &w);
        }
        if (st == SV_OK && proc->rank == 0) st = write_json(&o, &w);
        sv_json_writer_free(&w);
    } else if (!o.sweep) {
        sv_json_writer res = {0};
        st = train_once(&o, proc, &res);
        const char *text;
        if (st == SV_OK && proc->rank == 0 && (st = sv_json_writer_finish(&res, &text, NULL)) == SV_OK)
            st = write_text(&o, text);
        sv_json_writer_free(&res);
    } else {
        st = sweep(&o, proc, (const char *const *)pos, npos);
    }
    return sv_cmd_exit("bench", st, 1);
}
