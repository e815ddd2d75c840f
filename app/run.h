/* Run context shared by train / eval / bench: communicators, backend, model configuration,
 * FSDP state and the arenas every buffer of the run is carved from. */
#ifndef SV_APP_RUN_H
#define SV_APP_RUN_H

#include "app/flags.h"
#include "core/arena.h"
#include "core/trace.h"
#include "eval/evaluate.h"
#include "fsdp/fsdp.h"
#include "model/vit.h"

typedef struct sv_model_opts {
    const char *model;
    int img, patch, in_chans, num_classes, dim, depth, heads;
    double mlp_ratio;
    double layer_scale;      /* --layer-scale INIT (0 = none) */
    const char *global_pool; /* --global-pool token|avg (NULL = token) */
    const char *class_token; /* --class-token 0|1 (NULL = 1) */
    int reg_tokens;          /* --reg-tokens R (0 = none, or as the weights / checkpoint have) */
    int no_embed_class;      /* --no-embed-class (0 = timm's default, or as the weights / checkpoint have) */
} sv_model_opts;

/* Flag entries for the model shape (timm's names). 0 means "take the preset's value". */
/* clang-format off: one flag per line */
#define SV_MODEL_FLAGS(o) \
    {"model", \
     SV_FLAG_STR, \
     &(o).model, \
     0, \
     0, \
     "model preset (vit-ti16 vit-s16 vit-b16 vit-l16 vit-h14 vit-28 vit-32) or a timm name with the same shapes " \
     "(vit_base_patch16_224, deit_small_patch16_224, ...: shardvit info --models)", \
     0}, \
        {"img", SV_FLAG_INT, &(o).img, 0, 4096, "image size (0 = preset)", 0}, \
        {"patch", SV_FLAG_INT, &(o).patch, 0, 4096, "patch size (0 = preset)", 0}, \
        {"in-chans", SV_FLAG_INT, &(o).in_chans, 0, 3, "input channels 1|3 (0 = preset)", 0}, \
        {"num-classes", SV_FLAG_INT, &(o).num_classes, 0, 1000000, "classes (0 = preset; eval: the weights')", 0}, \
        {"dim", SV_FLAG_INT, &(o).dim, 0, 16384, "embedding width (0 = preset)", 0}, \
        {"depth", SV_FLAG_INT, &(o).depth, 0, 256, "blocks (0 = preset)", 0}, \
        {"heads", SV_FLAG_INT, &(o).heads, 0, 1024, "attention heads (0 = preset)", 0}, \
        {"mlp-ratio", SV_FLAG_DOUBLE, &(o).mlp_ratio, 0, 64, "MLP ratio (0 = preset)", 0}, \
        {"layer-scale", \
         SV_FLAG_DOUBLE, \
         &(o).layer_scale, \
         0, \
         1000, \
         "LayerScale init value (timm init_values; 0 = off)", \
         0}, \
        {"global-pool", SV_FLAG_STR, &(o).global_pool, 0, 0, "token | avg (timm global_pool; avg uses fc_norm)", 0}, \
        {"class-token", SV_FLAG_STR, &(o).class_token, 0, 0, "1 | 0 (timm class_token; 0 needs --global-pool avg)", 0}, \
        {"reg-tokens", \
         SV_FLAG_INT, \
         &(o).reg_tokens, \
         0, \
         SV_VIT_MAX_REG_TOKENS, \
         "register tokens after the class token (timm reg_tokens: reg_token (1, R, D); 0 = none)", \
         0}, \
    { \
        "no-embed-class", SV_FLAG_BOOL, &(o).no_embed_class, 0, 1, \
            "pos_embed for the patch tokens only, none for the class / register tokens (timm no_embed_class)", 0 \
    }
/* clang-format on */

/* Preset + overrides -> validated config. */
sv_status sv_model_opts_resolve(const sv_model_opts *o, sv_vit_config *out);

typedef struct sv_run_opts {
    sv_model_opts model;
    int batch_size; /* global batch per optimizer step */
    int accum;
    const char *accum_mode; /* shard | local */
    const char *strategy;
    int shard_group;
    const char *param_dtype;  /* fp32 | bf16 */
    const char *reduce_dtype; /* fp32 | bf16 */
    const char *device;       /* auto | cpu | cuda */
    int threads;              /* CPU threads per rank; 0 = cores / ranks on this node */
    const char *cpu_gemm;     /* --cpu-gemm: CPU GEMM engine (NULL: SHARDVIT_CPU_GEMM or automatic) */
    const char *wrap;         /* block | auto:<MB> */
    int recompute;
    long long seed;
    double comm_timeout;
    const char *trace;
    long long trace_events; /* --trace-events: events the tracer keeps per rank */
    int head_zero_init;
    int model_ema; /* --model-ema (train, plan): carve the weight-EMA shards (fsdp/ema.h) */
} sv_run_opts;

#define SV_RUN_OPTS_DEFAULT \
    { \
        .model = {.model = "vit-28"}, .batch_size = 128, .accum = 1, .accum_mode = "shard", .strategy = "full_shard", \
        .shard_group = 0, .param_dtype = "fp32", .reduce_dtype = "fp32", .device = "auto", .threads = 0, \
        .wrap = "block", .recompute = 0, .seed = 0, .comm_timeout = 300, .trace = NULL, \
        .trace_events = SV_RUN_TRACE_EVENTS, .head_zero_init = 0 \
    }

/* --trace-events: the default (2^20 events, 40 MiB per rank) and the largest (2^26, 2.5 GiB) */
#define SV_RUN_TRACE_EVENTS (1LL << 20)
#define SV_RUN_TRACE_EVENTS_MAX (1LL << 26)

/* --comm-timeout's help, shared by the commands that take the flag */
#define SV_COMM_TIMEOUT_HELP "seconds before a collective is declared hung (0 = never)"

/* clang-format off: one flag per line */
#define SV_RUN_FLAGS(o) \
    SV_MODEL_FLAGS((o).model), \
        {"batch-size", SV_FLAG_INT, &(o).batch_size, 1, 1 << 20, "global batch size per optimizer step", 0}, \
        {"accum", SV_FLAG_INT, &(o).accum, 1, 4096, "gradient accumulation micro-steps", 0}, \
        {"accum-mode", SV_FLAG_STR, &(o).accum_mode, 0, 0, "shard (reduce every micro-step) | local", 0}, \
        {"strategy", SV_FLAG_STR, &(o).strategy, 0, 0, "full_shard | shard_grad_op | no_shard | hybrid_shard", 0}, \
        {"shard-group", SV_FLAG_INT, &(o).shard_group, 0, 1 << 20, "hybrid_shard group size", 0}, \
        {"param-dtype", SV_FLAG_STR, &(o).param_dtype, 0, 0, "compute/all-gather dtype fp32 | bf16", 0}, \
        {"reduce-dtype", SV_FLAG_STR, &(o).reduce_dtype, 0, 0, "gradient reduction dtype fp32 | bf16", 0}, \
        {"device", SV_FLAG_STR, &(o).device, 0, 0, "auto | cpu | cuda", 0}, \
        {"threads", SV_FLAG_INT, &(o).threads, \
         0,         1024,        "CPU threads per rank (0 = the CPUs it may use / the ranks sharing them)", \
         0}, \
        {"cpu-gemm", SV_FLAG_STR, &(o).cpu_gemm, 0, 0, "CPU GEMM engine: auto | NAME (docs/backend_cpu.md)", 0}, \
        {"wrap", SV_FLAG_STR, &(o).wrap, 0, 0, "FSDP units: block | auto:<MB>", 0}, \
        {"recompute", SV_FLAG_BOOL, &(o).recompute, 0, 0, "recompute block activations in backward", 0}, \
        {"seed", SV_FLAG_I64, &(o).seed, 0, 9.2e18, "global seed (init, data order, augmentation)", 0}, \
        {"comm-timeout", SV_FLAG_DOUBLE, &(o).comm_timeout, 0, 1e7, SV_COMM_TIMEOUT_HELP, 0}, \
        {"trace", SV_FLAG_STR, &(o).trace, \
         0,       0,           "write a Chrome/Perfetto trace JSON here (replaces only an earlier trace)", \
         0}, \
        {"trace-events", \
         SV_FLAG_I64, \
         &(o).trace_events, \
         1, \
         SV_RUN_TRACE_EVENTS_MAX, \
         "--trace: events kept per rank, the earliest (later ones are left out with a warning)", \
         0}, \
    { \
        "head-zero-init", SV_FLAG_BOOL, &(o).head_zero_init, 0, 0, "initialise the head weight to zero", 0 \
    }
/* clang-format on */

/* One micro-batch's device input, carved from the arena after the model so the memory plan
 * counts it: images (B, C, img, img) f32, labels (B) int32, soft targets (B, K) f32 (mixup /
 * cutmix / BCE targets), and the evaluation's metric staging (sv_eval_metrics_bytes(K)).
 * B = the run's micro_batch. An evaluator borrows images, soft (as its f32 logits) and metrics
 * between steps (sv_run_eval_bufs). */
typedef struct sv_run_batch {
    float *images;
    int32_t *labels;
    float *soft;
    void *metrics;
} sv_run_batch;

typedef struct sv_run {
    int rank, world, local_rank, local_size;
    sv_comm *world_comm, *shard_comm, *repl_comm;
    sv_backend *be;
    sv_vit_config vcfg;
    sv_fsdp fsdp;
    sv_vit model;
    int micro_batch; /* per rank per micro-step */
    void *dev_block, *host_block;
    sv_arena dev, host;
    sv_run_batch batch;
    size_t bytes_fsdp, bytes_act, bytes_batch, bytes_total; /* arena regions, for the memory report */
    sv_trace trace;
    int failure_agreed; /* a failure came back from sv_run_agree / sv_run_agreed: every rank returns it */
} sv_run;

/* Flags -> model, FSDP and backend configurations and the per-rank micro-batch (no side
 * effects; SV_ERR_INVALID names the offending flag). */
sv_status sv_run_resolve(const sv_run_opts *o, int world, sv_vit_config *vcfg, sv_fsdp_config *fc,
                         sv_backend_config *bc, int local_size, int *micro_batch);

/* Per-rank device bytes by category (the planner; the trainer logs the same at start-up). */
typedef struct sv_run_mem {
    sv_fsdp_mem fsdp;
    size_t activations; /* model activations + backward scratch for one micro-batch */
    size_t batch;       /* the micro-batch's input buffers (sv_run_batch) */
    size_t total;       /* everything carved from the arena */
} sv_run_mem;
/* Plan a run without communicators, a backend or device memory: the same carving code in
 * counting mode, sized by sv_be_sizes_query of `bc` (so a GPU plan needs no GPU). */
sv_status sv_run_plan(const sv_vit_config *vcfg, const sv_fsdp_config *fc, const sv_backend_config *bc, int world,
                      int micro_batch, int recompute, sv_run_mem *out);
void sv_run_log_plan(const sv_run_mem *m);

/* Set up everything for a run: backend, communicators, FSDP state, arena, model. When the world
 * communicator cannot be created (e.g. ranks that disagree on its chunk size) the backend is
 * released again and r holds nothing; after a later failure r holds what was made, for
 * sv_run_teardown (collective: only when every rank failed alike). */
sv_status sv_run_setup(sv_run *r, const sv_run_opts *o, int rank, int world, int local_rank, int local_size);

/* The parts sv_run_setup creates itself, for a caller that brings its own: the step-time
 * simulator (app/simulate.c) runs on a virtual-time backend and communicators. r takes
 * ownership of all of them (sv_run_teardown destroys them), on failure too. The communicators
 * must match the strategy as sv_fsdp_make_comms forms them. init_params 0: leave the master
 * shards as carved (the simulator computes nothing). */
typedef struct sv_run_parts {
    sv_backend *be;
    sv_comm *world, *shard, *repl;
    int init_params;
} sv_run_parts;
sv_status sv_run_setup_parts(sv_run *r, const sv_run_opts *o, int rank, int world, int local_rank, int local_size,
                             const sv_run_parts *p);
void sv_run_teardown(sv_run *r);
/* The run's batch buffers as an evaluator's (eval/evaluate.h): evaluation runs between steps. */
sv_eval_bufs sv_run_eval_bufs(const sv_run *r);
/* The end of a command's run: on success tear r down and return SV_OK; on failure add this
 * frame to the error trace and return st with r left as it is (the caller exits and main aborts
 * the other ranks, which a collective teardown would wait for). */
sv_status sv_run_end(sv_run *r, sv_status st);
/* sv_fsdp_agree over the run's world (collective: every rank calls it once with its own status),
 * remembering an agreed failure in r->failure_agreed. A command's exit path reads that flag: only
 * a failure every rank returns alike may end the ranks without an MPI abort (each rank tears down
 * and finalizes); any other failure must abort, since a peer may be waiting in a collective
 * (app/main.c aborts on exit status 1). A failed agreement collective returns its own error (also
 * flagged; it is never a usage error). */
sv_status sv_run_agree(sv_run *r, sv_status st);
/* For a status every rank returns alike without a further agreement: a collective callee that
 * agrees on its outcome itself (documented as returning the same status on every rank), or a
 * check every rank makes on the same values (flags, a checkpoint's recorded state). st is
 * returned as it is, a failure flagged as agreed. Not collective. */
sv_status sv_run_agreed(sv_run *r, sv_status st);
/* Every rank indexed the same data set (data/dataset.h sv_dataset_fingerprint, its counts
 * gathered): a relative path given from other working directories, or files a node does not see
 * yet, would otherwise train or evaluate other samples on each rank silently. flag / spec name
 * the data in the message ("--data", the path). Collective; the outcome (agreed) is the same on
 * every rank; nothing to compare at one rank. */
sv_status sv_run_same_data(sv_run *r, const sv_dataset *ds, const char *flag, const char *spec);
/* --trace's part files may be written: each "<trace>.rank<r>", r < world, is absent or a part an
 * earlier run left (sv_trace_is_part), else the error of sv_ckpt_out_check_earlier naming
 * "--trace part". Reads only. */
sv_status sv_run_check_trace_parts(const char *trace, int world);
/* Write the trace (all ranks call; rank 0 merges). Each rank writes its part, the ranks agree
 * (sv_run_agree: every part is written, or every rank fails), then rank 0 merges and the ranks
 * agree on that too, so no rank waits for one that failed. */
sv_status sv_run_finish_trace(sv_run *r, const char *path);
/* The warning that --trace PATH lacks rank's events past the tracer's capacity (--trace-events);
 * nothing when none was dropped. sv_run_finish_trace and plan --simulate's trace give it. */
void sv_run_trace_warn_full(const sv_trace *t, const char *path, int rank);

#endif
