/* plan --simulate / --suggest-wrap / --sweep (plan_sim.h). */
#include "app/plan_sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/csv_field.h"
#include "core/log.h"
#include "model/params.h"

static int fail(sv_status st) {
    fprintf(stderr, "shardvit plan: %s\n", sv_err_msg());
    return st == SV_ERR_INVALID ? 2 : 1;
}

static int g_quiet_floor = SV_LOG_INFO; /* launcher ranks > 0 print errors only */
static void quiet(int on) { sv_log_setup(0, on && g_quiet_floor < SV_LOG_WARN ? SV_LOG_WARN : g_quiet_floor, 0); }

/* ---- --simulate ------------------------------------------------------------------------------ */

static int do_simulate(sv_plan_sim_args *a) {
    sv_sim_result r;
    sv_status st = sv_simulate(&a->sim, &r);
    if (st != SV_OK) return fail(st);
    if (a->json) {
        sv_json_writer w;
        sv_json_writer_init(&w, 2);
        sv_sim_json(&w, &a->sim, &r, a->prov, a->flags);
        printf("%s\n", w.buf);
        sv_json_writer_free(&w);
    } else {
        sv_sim_print(stdout, &a->sim, &r);
        if (a->mem >= 0)
            printf("fits in %.1f GiB: %s\n", a->mem / 1073741824.0,
                   r.mem.total <= (unsigned long long)a->mem ? "yes" : "NO");
        if (a->sim.trace)
            printf("simulated timeline: %s (open in Perfetto next to a --trace of the real run)\n", a->sim.trace);
    }
    return 0;
}

/* ---- --suggest-wrap -------------------------------------------------------------------------- */

typedef struct cand {
    char strategy[16];
    int group, blocks, recompute;
    char wrap[48];
    sv_sim_result r;
    int ok, fits;
    char why[96];
} cand;

typedef struct strat_choice {
    const char *s;
    int g;
} strat_choice;

/* fp32 bytes of one block's parameters: the unit the auto-wrap budget counts in (fsdp/layout.c) */
static double block_mib(const sv_vit_config *c) {
    sv_vit_config one = *c, two = *c;
    one.depth = 1;
    two.depth = 2;
    return (double)(sv_vit_param_count(&two) - sv_vit_param_count(&one)) * 4.0 / 1048576.0;
}

static int do_suggest(sv_plan_sim_args *a) {
    sv_vit_config vc;
    sv_status st = sv_model_opts_resolve(&a->sim.run.model, &vc);
    if (st != SV_OK) return fail(st);
    sv_sim_net net;
    int K;
    if ((st = sv_sim_resolve_net(&a->sim, &net, &K)) != SV_OK) return fail(st);
    int N = a->sim.world, rpn = net.ranks_per_node;
    /* strategies: full_shard and shard_grad_op over all ranks, hybrid_shard with a shard group of
     * one node and of two nodes, no_shard (DDP) */
    strat_choice strat[6];
    int ns = 0;
    strat[ns++] = (strat_choice){"full_shard", 0};
    strat[ns++] = (strat_choice){"shard_grad_op", 0};
    for (int g = K > 1 ? rpn : 2; g < N && ns < 5; g *= 2) /* one node, two, four (one node: 2, 4, ...) */
        if (N % g == 0 && g > 1) strat[ns++] = (strat_choice){"hybrid_shard", g};
    strat[ns++] = (strat_choice){"no_shard", 0};
    int blocks[] = {1, 2, 3, 4, 6, 8, 12, 16, 24, 32};
    int nb = 0;
    for (size_t i = 0; i < sizeof blocks / sizeof blocks[0]; i++)
        if (blocks[i] <= vc.depth) nb++;
    int nrc = a->mem >= 0 ? 2 : 1; /* with a budget, recompute is a candidate too */
    int n = ns * nb * nrc;
    cand *cs = calloc((size_t)n, sizeof *cs);
    if (!cs) return fail(SV_FAIL(SV_ERR_OOM, "candidates"));
    int k = 0;
    fprintf(stderr, "plan: simulating %d candidates (strategy x blocks per unit%s) ...\n", n,
            nrc > 1 ? " x recompute" : "");
    quiet(1);
    for (int si = 0; si < ns; si++)
        for (int bi = 0; bi < nb; bi++)
            for (int rc = 0; rc < nrc; rc++, k++) {
                cand *c = &cs[k];
                if (!strcmp(strat[si].s, "no_shard") && blocks[bi] > 1) { /* units change nothing without shards */
                    k--;
                    continue;
                }
                snprintf(c->strategy, sizeof c->strategy, "%s", strat[si].s);
                c->group = strat[si].g;
                c->blocks = blocks[bi];
                c->recompute = rc;
                if (c->blocks == 1)
                    snprintf(c->wrap, sizeof c->wrap, "block");
                else
                    snprintf(c->wrap, sizeof c->wrap, "auto:%.4f", (c->blocks + 0.5) * block_mib(&vc));
                sv_sim_opts o = a->sim;
                o.trace = NULL;
                o.run.strategy = c->strategy;
                o.run.shard_group = c->group;
                o.run.wrap = c->wrap;
                o.run.recompute = rc;
                st = sv_simulate(&o, &c->r);
                c->ok = st == SV_OK;
                if (!c->ok) snprintf(c->why, sizeof c->why, "%.90s", sv_err_msg());
                c->fits = c->ok && (a->mem < 0 || c->r.mem.total <= (unsigned long long)a->mem);
                if (!c->ok) sv_err_clear();
            }
    quiet(0);
    n = k;
    int best = -1;
    for (int i = 0; i < n; i++)
        if (cs[i].fits && (best < 0 || cs[i].r.img_s > cs[best].r.img_s * (1 + 1e-9))) best = i;
    printf("candidates for %s, world %d (%d nodes x %d), batch %d, %s, device %s%s:\n", a->sim.run.model.model, N, K,
           rpn, a->sim.run.batch_size, a->sim.run.param_dtype, a->sim.device,
           a->mem >= 0 ? ", memory budget given" : "");
    printf("  %-14s %5s %6s %5s %9s %10s %8s %10s  %s\n", "strategy", "group", "blocks", "recmp", "img/s", "step ms",
           "exposed", "MiB/rank", "");
    for (int i = 0; i < n; i++) {
        const cand *c = &cs[i];
        if (!c->ok) {
            printf("  %-14s %5d %6d %5d  not possible: %s\n", c->strategy, c->group, c->blocks, c->recompute, c->why);
            continue;
        }
        printf("  %-14s %5d %6d %5d %9.1f %10.3f %7.1f%% %10.1f  %s%s\n", c->strategy, c->group, c->blocks,
               c->recompute, c->r.img_s, c->r.step_s * 1e3, 100 * c->r.comm_exposed_s / c->r.step_s,
               c->r.mem.total / 1048576.0, c->fits ? "" : "over budget", i == best ? "<- chosen" : "");
    }
    if (best < 0) {
        printf("no candidate fits%s: more ranks, a smaller batch per rank, or --recompute\n",
               a->mem >= 0 ? " the --mem budget" : "");
        free(cs);
        return 1;
    }
    const cand *b = &cs[best];
    const cand *ref = &cs[0]; /* full_shard, one block per unit, no recompute */
    printf("chosen: --strategy %s%s%.0d --wrap %s%s: %.1f img/s", b->strategy, b->group ? " --shard-group " : "",
           b->group, b->wrap, b->recompute ? " --recompute" : "", b->r.img_s);
    if (ref->ok && best != 0) printf(" (%.2fx full_shard with one block per unit)", b->r.img_s / ref->r.img_s);
    printf("\nwhy: the highest simulated throughput among the candidates that fit; its exposed communication is "
           "%.1f%% of the step and it needs %.1f MiB per rank\n",
           100 * b->r.comm_exposed_s / b->r.step_s, b->r.mem.total / 1048576.0);
    free(cs);
    return 0;
}

/* ---- --sweep --------------------------------------------------------------------------------- */

#define SWEEP_KEYS 8
#define SWEEP_VALS 32
typedef struct sweep_key {
    char name[24];
    char *vals[SWEEP_VALS];
    int n;
} sweep_key;

static const char *k_sweep_keys[] = {"world", "batch", "batch-per-rank", "model", "strategy",   "shard-group",
                                     "wrap",  "net",   "nodes",          "accum", "param-dtype"};

static sv_status parse_sweep(char *spec, sweep_key *keys, int *nk) {
    *nk = 0;
    for (char *tok = strtok(spec, " "); tok; tok = strtok(NULL, " ")) {
        char *eq = strchr(tok, '=');
        if (!eq || eq == tok || !eq[1]) return SV_FAIL(SV_ERR_INVALID, "--sweep: '%s' is not KEY=V1,V2,...", tok);
        *eq = 0;
        int known = 0;
        for (size_t i = 0; i < sizeof k_sweep_keys / sizeof k_sweep_keys[0]; i++)
            known |= !strcmp(tok, k_sweep_keys[i]);
        if (!known)
            return SV_FAIL(SV_ERR_INVALID,
                           "--sweep: unknown key '%s' (world batch batch-per-rank model strategy "
                           "shard-group wrap net nodes accum param-dtype)",
                           tok);
        if (*nk == SWEEP_KEYS) return SV_FAIL(SV_ERR_INVALID, "--sweep: at most %d keys", SWEEP_KEYS);
        sweep_key *k = &keys[(*nk)++];
        snprintf(k->name, sizeof k->name, "%s", tok);
        k->n = 0;
        for (char *v = eq + 1, *c; v; v = c) {
            c = strchr(v, ',');
            if (c) *c++ = 0;
            if (!*v) return SV_FAIL(SV_ERR_INVALID, "--sweep: empty value for '%s'", tok);
            if (k->n == SWEEP_VALS) return SV_FAIL(SV_ERR_INVALID, "--sweep: at most %d values per key", SWEEP_VALS);
            k->vals[k->n++] = v;
        }
    }
    if (!*nk) return SV_FAIL(SV_ERR_INVALID, "--sweep: nothing to sweep (e.g. --sweep 'world=8,64,512')");
    return SV_OK;
}

static sv_status int_val(const char *key, const char *v, int *out) {
    char *end;
    long x = strtol(v, &end, 10);
    if (end == v || *end || x < 1 || x > (1 << 24))
        return SV_FAIL(SV_ERR_INVALID, "--sweep: %s=%s is not a positive integer", key, v);
    *out = (int)x;
    return SV_OK;
}

static sv_status apply(sv_sim_opts *o, const char *key, const char *v, int *bpr) {
    if (!strcmp(key, "world")) return int_val(key, v, &o->world);
    if (!strcmp(key, "batch")) return int_val(key, v, &o->run.batch_size);
    if (!strcmp(key, "batch-per-rank")) return int_val(key, v, bpr);
    if (!strcmp(key, "nodes")) return int_val(key, v, &o->nodes);
    if (!strcmp(key, "accum")) return int_val(key, v, &o->run.accum);
    if (!strcmp(key, "shard-group")) return int_val(key, v, &o->run.shard_group);
    if (!strcmp(key, "model")) o->run.model.model = v;
    if (!strcmp(key, "strategy")) o->run.strategy = v;
    if (!strcmp(key, "wrap")) o->run.wrap = v;
    if (!strcmp(key, "net")) o->net = v;
    if (!strcmp(key, "param-dtype")) o->run.param_dtype = v;
    return SV_OK;
}

static const char *k_csv_cols =
    "model,device,world,nodes,ranks_per_node,strategy,shard_size,wrap,units,param_dtype,batch_size,accum,"
    "train_samples_per_sec,train_step_time,param_count,gmacs,mfu,comm_exposed_frac,mem_per_rank_bytes,"
    "all_gathers,reduce_scatters,all_reduces,status";

/* One row; every string field RFC 4180-escaped (app/csv_field.h). err: the row's error message,
 * a copy (resolving the model here clears the thread's error message), NULL when it ran. */
static void csv_row(const sv_sim_opts *o, const sv_sim_result *r, const char *err) {
    sv_vit_config vc;
    size_t params = 0;
    double gmacs = 0;
    if (sv_model_opts_resolve(&o->run.model, &vc) == SV_OK) {
        params = sv_vit_param_count(&vc);
        gmacs = sv_vit_flops_fwd(&vc) / 2e9;
    } else {
        sv_err_clear();
    }
    sv_csv_field(stdout, o->run.model.model);
    putchar(',');
    sv_csv_field(stdout, o->device);
    if (err) {
        printf(",%d,%d,,", o->world, o->nodes);
        sv_csv_field(stdout, o->run.strategy);
        printf(",,");
        sv_csv_field(stdout, o->run.wrap);
        printf(",,");
        sv_csv_field(stdout, o->run.param_dtype);
        printf(",%d,%d,,,%.6g,%.6g,,,,,,,", o->run.batch_size, o->run.accum, (double)params / 1e6, gmacs);
        sv_csv_field(stdout, err);
        putchar('\n');
        return;
    }
    printf(",%d,%d,%d,", r->world_size, r->nodes, r->ranks_per_node);
    sv_csv_field(stdout, o->run.strategy);
    printf(",%d,", r->shard_size);
    sv_csv_field(stdout, o->run.wrap);
    printf(",%d,", r->units);
    sv_csv_field(stdout, o->run.param_dtype);
    /* timm's units for its columns (as bench --sweep writes them): step time in ms, parameters in
     * millions, GMACs of one forward pass per sample */
    printf(",%d,%d,%.3f,%.6g,%.6g,%.6g,%.4f,%.4f,%zu,%llu,%llu,%llu,ok\n", o->run.batch_size, o->run.accum, r->img_s,
           1e3 * r->step_s, (double)params / 1e6, gmacs, r->mfu, r->comm_exposed_s / r->step_s, r->mem.total,
           (unsigned long long)(r->world.all_gathers + r->shard.all_gathers + r->repl.all_gathers),
           (unsigned long long)(r->world.reduce_scatters + r->shard.reduce_scatters + r->repl.reduce_scatters),
           (unsigned long long)(r->world.all_reduces + r->shard.all_reduces + r->repl.all_reduces));
}

static int do_sweep(sv_plan_sim_args *a) {
    int csv = a->format && !strcmp(a->format, "csv");
    if (a->format && !csv && strcmp(a->format, "jsonl"))
        return sv_cmd_usage_error("plan", "--format '%s' (choose jsonl|csv)", a->format);
    char *spec = strdup(a->sweep);
    sweep_key keys[SWEEP_KEYS];
    int nk = 0;
    sv_status st = spec ? parse_sweep(spec, keys, &nk) : SV_FAIL(SV_ERR_OOM, "sweep spec");
    if (st != SV_OK) {
        free(spec);
        return fail(st);
    }
    long total = 1;
    for (int i = 0; i < nk; i++) total *= keys[i].n;
    if (total > 100000) {
        free(spec);
        return sv_cmd_usage_error("plan", "--sweep has %ld rows (at most 100000)", total);
    }
    if (csv) printf("%s\n", k_csv_cols);
    int failed = 0;
    quiet(1);
    for (long row = 0; row < total; row++) {
        sv_sim_opts o = a->sim;
        o.trace = NULL;
        int bpr = 0;
        long rem = row;
        for (int i = nk - 1; i >= 0; i--) {
            const char *v = keys[i].vals[rem % keys[i].n];
            rem /= keys[i].n;
            if ((st = apply(&o, keys[i].name, v, &bpr)) != SV_OK) break;
        }
        if (st != SV_OK) break;
        if (bpr) o.run.batch_size = bpr * o.world * o.run.accum;
        sv_sim_result r;
        st = sv_simulate(&o, &r);
        char msg[SV_ERR_MSG_CAP]; /* a copy: csv_row's own model lookup clears the thread's message */
        const char *err = NULL;
        if (st != SV_OK) err = strcpy(msg, sv_err_msg());
        if (csv) {
            csv_row(&o, &r, err);
        } else if (err) {
            sv_json_writer w;
            sv_json_writer_init(&w, 0);
            sv_json_obj_begin(&w);
            sv_json_key(&w, "mode"), sv_json_str(&w, "simulate");
            sv_json_key(&w, "model"), sv_json_str(&w, o.run.model.model);
            sv_json_key(&w, "world"), sv_json_i64(&w, o.world);
            sv_json_key(&w, "strategy"), sv_json_str(&w, o.run.strategy);
            sv_json_key(&w, "batch_size"), sv_json_i64(&w, o.run.batch_size);
            sv_json_key(&w, "error"), sv_json_str(&w, err);
            sv_json_obj_end(&w);
            printf("%s\n", w.buf);
            sv_json_writer_free(&w);
        } else {
            sv_json_writer w;
            sv_json_writer_init(&w, 0);
            sv_sim_json(&w, &o, &r, a->prov, a->flags);
            printf("%s\n", w.buf);
            sv_json_writer_free(&w);
        }
        fflush(stdout);
        if (err) {
            failed++;
            sv_err_clear();
            st = SV_OK;
        }
    }
    quiet(0);
    free(spec);
    if (st != SV_OK) return fail(st);
    fprintf(stderr, "plan: %ld rows%s\n", total,
            failed ? " (some configurations are not possible: see their rows)" : "");
    return 0;
}

/* Under `mpiexec -n R` every process runs the same simulation, so `--device cpu` times its ops
 * with R ranks running at once, as in the real run (memory bandwidth, caches and clocks are
 * shared); only the process of launcher rank 0 reports. */
static int launcher_rank(void) {
    const char *v = getenv("PMI_RANK");
    if (!v) v = getenv("OMPI_COMM_WORLD_RANK");
    return v ? atoi(v) : 0;
}

int sv_plan_sim_run(sv_plan_sim_args *a) {
    if (launcher_rank() != 0) { /* under a launcher, rank 0 alone prints and writes the trace */
        a->sim.trace = NULL;
        if (!freopen("/dev/null", "w", stdout)) return 1;
        g_quiet_floor = SV_LOG_ERROR;
        sv_log_setup(0, SV_LOG_ERROR, 0);
    }
    if (a->sweep) return do_sweep(a);
    if (a->suggest) return do_suggest(a);
    return do_simulate(a);
}
