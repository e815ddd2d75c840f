/* shardvit plan: per-rank memory by category for a model / world / strategy / dtype / batch,
 * computed by the very code that carves the training arena (in counting mode). */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "app/backend_env.h"
#include "app/commands.h"
#include "app/plan_sim.h"
#include "app/provenance.h"
#include "app/run.h"
#include "ckpt/ckpt_out.h"
#include "core/cpus.h"
#include "core/trace.h"

static void row(const char *what, size_t bytes, size_t total, const char *note) {
    printf("  %-16s %12.1f MiB  %5.1f%%  %s\n", what, bytes / 1048576.0, total ? 100.0 * bytes / total : 0.0, note);
}

int sv_cmd_plan(int argc, char **argv, const sv_proc *proc) {
    sv_run_opts o = SV_RUN_OPTS_DEFAULT;
    o.device = "cpu";
    int world = 1;
    const char *mem = NULL;
    sv_plan_sim_args sa = {.sim = {.steps = 1}, .mem = -1};
    /* clang-format off: one flag per line */
    sv_flag flags[] = {
        SV_RUN_FLAGS(o),
        {"world", SV_FLAG_INT, &world, 1, 1 << 20, "number of ranks to plan for", 0},
        {"mem", SV_FLAG_STR, &mem, 0, 0, "memory per rank to check against, e.g. 24G or 80GiB", 0},
        {"model-ema", SV_FLAG_BOOL, &o.model_ema, 0, 1, "count the fp32 weight-EMA shards of train --model-ema", 0},
        {"simulate", SV_FLAG_BOOL, &sa.simulate, 0, 0,
         "simulate the step: time, exposed communication, MFU, collectives "
         "(docs/simulate.md); --device cpu | h200 | h100",
         0},
        {"suggest-wrap", SV_FLAG_BOOL, &sa.suggest, 0, 0,
         "simulate strategy x units x recompute candidates and pick the "
         "fastest that fits --mem",
         0},
        {"sweep", SV_FLAG_STR, &sa.sweep, 0, 0,
         "simulate one row per configuration: 'world=8,64 batch-per-rank=32 "
         "model=vit-b16,vit-h14 ...'",
         0},
        {"format", SV_FLAG_STR, &sa.format, 0, 0, "--sweep rows: jsonl (default) | csv (timm benchmark-like columns)",
         0},
        {"json", SV_FLAG_BOOL, &sa.json, 0, 0, "--simulate: print one JSON object", 0},
        {"nodes", SV_FLAG_INT, &sa.sim.nodes, 0, 1 << 20, "simulated nodes (0 = cpu: 1, GPUs: 8 ranks per node)", 0},
        {"net", SV_FLAG_STR, &sa.sim.net, 0, 0,
         "simulated network INTRA[+INTER]: shm | nvlink, + ndr | hdr | 400gbe | "
         "100gbe",
         0},
        {"intra", SV_FLAG_STR, &sa.sim.intra, 0, 0, "intra-node link ALPHA_US,GBPS (overrides --net)", 0},
        {"net-from", SV_FLAG_STR, &sa.sim.net_from, 0, 0,
         "fit the intra-node link to a `shardvit bench --comm` JSON "
         "(this machine's MPI)",
         0},
        {"inter", SV_FLAG_STR, &sa.sim.inter, 0, 0, "inter-node link ALPHA_US,GBPS: latency, one node's bandwidth", 0},
        {"inter-from", SV_FLAG_STR, &sa.sim.inter_from, 0, 0,
         "fit the inter-node link to a `shardvit bench --comm` JSON measured with one rank per node", 0},
        {"inter-cpu", SV_FLAG_DOUBLE, &sa.sim.inter_cpu_ns, 0, 1e6,
         "transport CPU cost of the inter-node link: ns of a rank's CPU per byte it sends or receives "
         "(TCP on the compute cores; 0 = none)",
         0},
        {"inter-burst", SV_FLAG_STR, &sa.sim.inter_burst, 0, 0,
         "a token bucket in front of the inter-node link, BYTES,PEAK_GBPS: after idling, up to BYTES each way "
         "leave at PEAK_GBPS (a rate limiter such as tc's tbf)",
         0},
        {"steps", SV_FLAG_INT, &sa.sim.steps, 1, 1000,
         "--simulate / --suggest-wrap / --sweep: simulated steps after the warm-up step (figures are their mean)", 0},
        {"sched-quantum", SV_FLAG_DOUBLE, &sa.sim.sched_quantum_ms, 0, 1000,
         "--device cpu, oversubscribed: the scheduler's time-sharing quantum in ms, the wait of a "
         "collective's round that overlaps compute (0 = measure it here)",
         0},
        {"cores", SV_FLAG_DOUBLE, &sa.sim.cores, 0, 1 << 20,
         "--device cpu: cores of the simulated node (0 = this "
         "machine's)",
         0},
        SV_FLAG_END};
    /* clang-format on */
    sv_cmd_spec spec = {
        "plan",
        "shardvit plan --model M [--world N] [--strategy S] [--param-dtype D] [--batch-size B] [--mem 24G] [flags]",
        "Print where every byte of a rank's arena goes (fp32 master/grad/optimizer shards, gathered "
        "compute-dtype parameters, gradient buffers, activations) and whether it fits --mem. "
        "--device cpu (the default; auto is the same here) plans CPU sizes, --device cuda GPU sizes (bf16 storage) "
        "without needing a GPU. --simulate runs the engine's own "
        "step on a virtual clock and predicts step time, exposed communication and MFU; --suggest-wrap "
        "picks strategy and units; --sweep writes one row per configuration; these three take --device cpu | h200 | "
        "h100 instead (docs/simulate.md).",
        0};
    char *pos[1];
    int npos;
    int rc = sv_cmd_parse(&spec, flags, argc, argv, pos, &npos, -1, NULL);
    if (rc >= 0) return rc;
    if ((rc = sv_backend_env_check("plan", o.cpu_gemm)) >= 0) return rc;
    long long mem_bytes = -1;
    if (mem && (mem_bytes = sv_parse_bytes(mem)) <= 0)
        return sv_cmd_usage_error("plan", "--mem: invalid value '%s' (expected bytes like 24G, 512M; more than 0)",
                                  mem);
    if ((sa.simulate != 0) + (sa.suggest != 0) + (sa.sweep != NULL) > 1) /* one would be dropped */
        return sv_cmd_usage_error("plan", "--simulate, --suggest-wrap and --sweep are modes of their own: give one");
    if (sa.simulate || sa.suggest || sa.sweep) {
        if (!strcmp(o.device, "cuda") || !strcmp(o.device, "auto"))
            return sv_cmd_usage_error("plan", "--device %s: name the simulated device (%s)", o.device,
                                      sv_sim_device_names);
        /* flags of one mode: refused with another (a mode would ignore them); --sweep wins over
         * --suggest-wrap, which wins over --simulate (plan_sim.c) */
        const char *mode = sa.sweep ? "--sweep" : sa.suggest ? "--suggest-wrap" : "--simulate";
        if (o.trace && (sa.suggest || sa.sweep))
            return sv_cmd_usage_error("plan", "--trace records one simulated step: with --simulate, not with %s", mode);
        if (sa.json && (sa.suggest || sa.sweep))
            return sv_cmd_usage_error("plan",
                                      "--json prints the --simulate result as one JSON object: with --simulate, not "
                                      "with %s%s",
                                      mode, sa.sweep ? " (its rows are JSONL unless --format csv)" : "");
        if (sa.format && !sa.sweep)
            return sv_cmd_usage_error("plan", "--format sets the format of --sweep's rows: with --sweep, not with %s",
                                      mode);
        if (o.trace) { /* the rules for outputs (ckpt/ckpt_out.h): a FIFO would block, a device be
                        * written, a symbolic link be followed; never into a checkpoint */
            sv_status ts = sv_ckpt_out_check_earlier(o.trace, "--trace", sv_trace_is_merged, NULL, "shardvit trace");
            if (ts == SV_OK) ts = sv_ckpt_out_check_parent(o.trace, "--trace");
            if (ts == SV_OK) ts = sv_run_check_trace_parts(o.trace, 1);
            if (ts != SV_OK) return sv_cmd_usage_error("plan", "%s", sv_err_msg());
        }
        sa.sim.run = o;
        sa.sim.world = world;
        sa.sim.device = o.device;
        sa.sim.trace = o.trace;
        sa.mem = mem_bytes;
        sv_provenance prov;
        sv_provenance_fill(&prov, "plan", proc, 1, -1);
        sa.prov = &prov;
        sa.flags = flags;
        return sv_plan_sim_run(&sa);
    }
    if (o.trace) return sv_cmd_usage_error("plan", "--trace records a simulated step: it needs --simulate");
    if (sa.format || sa.json || sa.sim.nodes || sa.sim.net || sa.sim.intra || sa.sim.inter || sa.sim.net_from ||
        sa.sim.inter_from || sa.sim.cores > 0 || sa.sim.inter_cpu_ns > 0 || sa.sim.inter_burst ||
        sa.sim.sched_quantum_ms > 0 || sv_flag_seen(flags, "steps"))
        return sv_cmd_usage_error("plan",
                                  "--format/--json/--nodes/--net/--net-from/--inter-from/--intra/--inter/"
                                  "--inter-cpu/--inter-burst/--cores/--sched-quantum/--steps need --simulate, "
                                  "--suggest-wrap or --sweep");
    if (!strcmp(o.device, "auto")) o.device = "cpu";
    if (sv_sim_device_known(o.device)) /* a simulator preset: say where it belongs */
        return sv_cmd_usage_error("plan",
                                  "--device '%s' (choose auto|cpu|cuda): %s is a simulated device, for --simulate, "
                                  "--suggest-wrap or --sweep (docs/simulate.md)",
                                  o.device, o.device);
    sv_vit_config vcfg;
    sv_fsdp_config fc;
    sv_backend_config bc;
    int micro;
    /* threads per rank as train takes them with the ranks on this machine (--threads, else its
     * cores shared by the ranks): every CPU worker thread has attention scratch of its own */
    long cores = sv_cpus_node();
    int local = cores > 0 && world > cores ? (int)cores : world;
    sv_status st = sv_run_resolve(&o, world, &vcfg, &fc, &bc, local, &micro);
    if (st != SV_OK) return sv_cmd_usage_error("plan", "%s", sv_err_msg());
    sv_run_mem m;
    if ((st = sv_run_plan(&vcfg, &fc, &bc, world, micro, o.recompute, &m)) != SV_OK) return sv_app_fail("plan", st);
    char thr[48] = "";
    if (!strcmp(o.device, "cpu"))
        snprintf(thr, sizeof thr, " (%d thread%s per rank)", bc.threads, bc.threads > 1 ? "s" : "");
    printf("plan: %s (%zu params), world %d, %s, param dtype %s, reduce dtype %s, global batch %d "
           "(%d per rank x %d accum), device %s%s%s\n",
           vcfg.name, sv_vit_param_count(&vcfg), world, o.strategy, o.param_dtype, o.reduce_dtype, o.batch_size, micro,
           o.accum, o.device, thr, o.recompute ? ", recompute" : "");
    printf("per-rank bytes:\n");
    size_t T = m.total;
    row("params", m.fsdp.params, T, "fp32 master shard");
    row("grads", m.fsdp.grads, T, "fp32 gradient shard");
    row("optimizer", m.fsdp.optimizer, T, "AdamW m + v shards (fp32)");
    row("gathered", m.fsdp.gathered, T, "compute-dtype gathered units + all-gather staging");
    row("grad buffers", m.fsdp.grad_buffers, T, "full-size fp32 unit gradients being reduced");
    if (m.fsdp.ema) row("weight EMA", m.fsdp.ema, T, "fp32 EMA shard of the masters (--model-ema)");
    row("activations", m.activations, T, "one micro-batch's saved activations + backward scratch");
    row("input batch", m.batch, T, "the micro-batch's images, labels, soft targets, eval metric staging");
    size_t other = T - m.fsdp.params - m.fsdp.grads - m.fsdp.optimizer - m.fsdp.gathered - m.fsdp.grad_buffers -
        m.fsdp.ema - m.activations - m.batch;
    if (other) row("alignment", other, T, "padding between buffers");
    printf("  %-16s %12.1f MiB  (%zu bytes)\n", "total", T / 1048576.0, T);
    if (mem_bytes >= 0) {
        int fits = T <= (unsigned long long)mem_bytes; /* unsigned: a total past 2^63 is no negative size */
        printf("fits in %s: %s (%.1f%% of it)\n", mem, fits ? "yes" : "NO", 100.0 * T / (double)mem_bytes);
        /* Largest micro-batch per rank that still fits: activations grow linearly with it. A
         * micro-batch whose plan fails (its sizes exceed 2^64 bytes) does not fit. */
        int lo = 0, hi = 1;
        sv_run_mem t;
        while (hi < (1 << 20) && sv_run_plan(&vcfg, &fc, &bc, world, hi, o.recompute, &t) == SV_OK &&
               t.total <= (unsigned long long)mem_bytes)
            lo = hi, hi *= 2;
        while (hi - lo > 1) {
            int mid = (lo + hi) / 2;
            if (sv_run_plan(&vcfg, &fc, &bc, world, mid, o.recompute, &t) == SV_OK &&
                t.total <= (unsigned long long)mem_bytes)
                lo = mid;
            else
                hi = mid;
        }
        if (lo >= (1 << 20) - 1) /* the search stops below 2^20 */
            printf("largest micro-batch per rank that fits: at least %d (the search stops there)\n", lo);
        else if (lo > 0)
            printf("largest micro-batch per rank that fits: %d (global batch %lld at --accum %d)\n", lo,
                   (long long)lo * world * o.accum, o.accum);
        else
            printf("even a micro-batch of 1 does not fit: shard more (more ranks, full_shard) or use --recompute\n");
    }
    return 0;
}
