/* Checkpoints from the CLI: `shardvit reshard | export | import`, and the checkpoint steps of
 * `shardvit train` (docs/checkpoints.md). */
#include "app/cmd_ckpt.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/commands.h"
#include "app/preempt.h"
#include "core/clock.h"
#include "core/log.h"
#include "formats/safetensors.h"
#include "fsdp/agree.h"

/* ---- train integration ------------------------------------------------------------------ */

sv_status sv_train_ckpt_setup(sv_train_ckpt *c, const char *ckpt_dir, const char *out) {
    c->dir = NULL;
    c->last_saved = -1;
    c->last_save_s = sv_now_s();
    if (ckpt_dir)
        c->dir = ckpt_dir;
    else if (out) {
        if ((size_t)snprintf(c->dir_buf, sizeof c->dir_buf, "%s/checkpoints", out) >= sizeof c->dir_buf)
            return SV_FAIL(SV_ERR_INVALID, "--out too long: %.200s", out);
        c->dir = c->dir_buf;
    }
    if (!c->dir && c->every > 0) return SV_FAIL(SV_ERR_INVALID, "--ckpt-every %d needs --ckpt-dir or --out", c->every);
    if (!c->dir && c->resume && !strcmp(c->resume, "auto"))
        return SV_FAIL(SV_ERR_INVALID, "--resume auto needs --ckpt-dir or --out (or give a checkpoint path)");
    return SV_OK;
}

/* --resume auto found no `latest` in dir: a fresh start, unless step directories are there (a
 * `latest` removed by hand): starting over would overwrite them, so that is an error. */
static sv_status no_latest(const char *dir) {
    DIR *d = opendir(dir);
    struct dirent *e;
    char name[80] = "";
    while (d && !name[0] && (e = readdir(d)))
        if (!strncmp(e->d_name, "step_", 5)) sv_log_esc(e->d_name, name, sizeof name);
    if (d) closedir(d);
    if (name[0])
        return SV_FAIL(SV_ERR_INVALID,
                       "resume auto: %s has step directories (%s, ...) but no `latest`; resume one of them with "
                       "--resume %s/STEP_DIR, or choose a new directory",
                       dir, name, dir);
    SV_INFO("resume auto: no checkpoint in %s; starting from scratch", dir);
    return SV_OK;
}

sv_status sv_train_ckpt_begin(sv_run *r, sv_train_ckpt *c, sv_loader *ld, long *start_step) {
    *start_step = 0;
    char step_dir[SV_CKPT_PATH_MAX];
    int found = 0;
    if (c->resume) {
        sv_status st;
        if (!strcmp(c->resume, "auto")) {
            st = sv_ckpt_latest(c->dir, step_dir, sizeof step_dir, &found);
            if (st == SV_OK && !found) st = no_latest(c->dir);
        } else {
            st = sv_ckpt_resolve(c->resume, step_dir, sizeof step_dir);
            found = st == SV_OK;
        }
        SV_TRY(sv_fsdp_agree(&r->fsdp, st));
    }
    if (!found) {
        if (c->init_from) SV_TRY(sv_fsdp_agree(&r->fsdp, sv_ckpt_init_from_safetensors(&r->fsdp, c->init_from)));
        return SV_OK;
    }
    if (c->init_from) SV_INFO("--init-from %s ignored: resuming from %s", c->init_from, step_dir);
    sv_ckpt_train_state s;
    SV_TRY(sv_ckpt_load(&r->fsdp, step_dir, &c->meta.xform, &s));
    SV_TRY(sv_ckpt_optim_check_resume(&s.opt, &c->state.opt));
    if (strcmp(sv_ckpt_sched_kind(&s.sched), sv_ckpt_sched_kind(&c->state.sched)))
        SV_WARN("resume: the LR schedule changed from %s to %s; continuing with the new one",
                sv_ckpt_sched_kind(&s.sched), sv_ckpt_sched_kind(&c->state.sched));
    if (s.sched.on_epochs != c->state.sched.on_epochs)
        SV_WARN("resume: the LR schedule was stepped per %s, now per %s (--sched-on-updates %d); continuing with the "
                "new one",
                s.sched.on_epochs ? "epoch" : "update", c->state.sched.on_epochs ? "epoch" : "update",
                !c->state.sched.on_epochs);
    if (sv_ckpt_sched_cycles_noise_differ(&s.sched, &c->state.sched))
        SV_WARN("resume: the LR schedule's cycles, k-decay or noise changed (--lr-cycle-*, --lr-k-decay, --lr-noise*, "
                "or --seed with --lr-noise); continuing with the new ones");
    if (s.total_steps != c->state.total_steps || s.lr != c->state.lr || s.min_lr != c->state.min_lr ||
        s.warmup != c->state.warmup)
        SV_WARN("resume: the LR schedule changed (checkpoint: %lld steps, lr %g, min-lr %g, warmup %lld; now %lld, %g, "
                "%g, %lld); continuing with the new one at step %lld",
                (long long)s.total_steps, s.lr, s.min_lr, (long long)s.warmup, (long long)c->state.total_steps,
                c->state.lr, c->state.min_lr, (long long)c->state.warmup, (long long)s.step);
    if (s.seed != c->state.seed)
        SV_WARN("resume: checkpoint seed %llu differs from --seed %llu (data order and augmentation follow --seed)",
                (unsigned long long)s.seed, (unsigned long long)c->state.seed);
    SV_TRY(sv_loader_seek(ld, s.epoch, s.cursor));
    c->state.epoch = s.epoch;
    c->state.cursor = s.cursor;
    *start_step = (long)s.step;
    /* The same step already on disk in our root needs no second copy at the end. */
    char mine[SV_CKPT_PATH_MAX + 32];
    if (c->dir) {
        snprintf(mine, sizeof mine, "%s/step_%08lld", c->dir, (long long)s.step);
        if (!strcmp(mine, step_dir)) c->last_saved = s.step;
    }
    SV_INFO("resume: step %lld, data position epoch %llu sample %llu, %lld skipped steps so far", (long long)s.step,
            (unsigned long long)s.epoch, (unsigned long long)s.cursor, (long long)s.skipped_steps);
    return SV_OK;
}

/* Save step r->fsdp.step: in the background with --async-ckpt (a save still in flight is
 * finished first), else before returning. `now`: the save must be complete on return (the run
 * ends). */
static sv_status save(sv_run *r, sv_train_ckpt *c, int now) {
    c->state.step = r->fsdp.step;
    c->state.skipped_steps = (int64_t)r->fsdp.ctr.skipped_steps;
    double t0 = sv_now_s();
    if (c->async && !c->aw) SV_TRY(sv_ckpt_async_create(&c->aw));
    if (c->aw) SV_TRY(sv_ckpt_save_finish(&r->fsdp, c->aw, NULL, 0));
    if (c->async && !now) {
        SV_TRY(sv_ckpt_save_begin(&r->fsdp, c->aw, 1, c->dir, &c->state, &c->meta, c->keep));
    } else {
        SV_TRY(sv_ckpt_save(&r->fsdp, c->dir, &c->state, &c->meta, c->keep, NULL, 0));
    }
    c->blocked_s += sv_now_s() - t0;
    c->last_saved = c->state.step;
    c->last_save_s = sv_now_s();
    return SV_OK;
}

sv_status sv_train_ckpt_after_step(sv_run *r, sv_train_ckpt *c, long done, int *stop, sv_status (*before_save)(void *),
                                   void *ctx) {
    *stop = 0;
    /* [0] a preemption signal here, [1] --ckpt-every-minutes due by this rank's clock, [2] this
     * rank's background writer still busy: the maximum over ranks, so that all ranks stop, save
     * or publish at the same step. */
    double v[3] = {(double)sv_preempt_received(),
                   c->dir && c->every_minutes > 0 && sv_now_s() - c->last_save_s >= c->every_minutes * 60.0,
                   !sv_ckpt_save_written(c->aw)};
    if (r->world > 1) SV_TRY(sv_comm_all_reduce_sync(r->world_comm, v, 3, SV_COMM_F64, SV_COMM_MAX));
    if (sv_ckpt_save_in_flight(c->aw) && v[2] == 0) { /* every shard is on disk: publish it */
        double t0 = sv_now_s();
        SV_TRY(sv_ckpt_save_finish(&r->fsdp, c->aw, NULL, 0));
        c->blocked_s += sv_now_s() - t0;
    }
    int by_steps = c->dir && c->every > 0 && done % c->every == 0;
    *stop = (int)v[0];
    if (*stop)
        SV_WARN("%s received%s: stopping after step %ld%s", sv_preempt_signal_name(*stop),
                sv_preempt_received() ? "" : " by another rank", done,
                c->dir ? ", saving a checkpoint" : " (no checkpoint directory: nothing is saved)");
    if (!c->dir || !(by_steps || v[1] > 0 || *stop) || c->last_saved == done) {
        if (*stop && c->aw) SV_TRY(sv_ckpt_save_finish(&r->fsdp, c->aw, NULL, 0));
        return SV_OK;
    }
    if (before_save) SV_TRY(before_save(ctx));
    return save(r, c, *stop);
}

sv_status sv_train_ckpt_end(sv_run *r, sv_train_ckpt *c, long done) {
    double t0 = sv_now_s();
    if (c->aw) SV_TRY(sv_ckpt_save_finish(&r->fsdp, c->aw, NULL, 0));
    c->blocked_s += sv_now_s() - t0;
    if (c->dir && c->last_saved != done) SV_TRY(save(r, c, 1));
    if (c->dir && c->last_saved >= 0)
        SV_INFO("checkpoint: saves blocked the run %.3f s in total (the final save and the wait for one in flight "
                "included)",
                c->blocked_s);
    return SV_OK;
}

void sv_train_ckpt_free(sv_train_ckpt *c) {
    sv_ckpt_async_destroy(c->aw);
    c->aw = NULL;
}

/* ---- offline subcommands ------------------------------------------------------------------- */

int sv_cmd_reshard(int argc, char **argv, const sv_proc *proc) {
    (void)proc;
    int world = 0;
    /* clang-format off: one flag per line */
    sv_flag flags[] = {{"world", SV_FLAG_INT, &world, 1, 99999, "shard ranks of the new checkpoint (required)", 0},
                       SV_FLAG_END};
    /* clang-format on */
    sv_cmd_spec spec = {"reshard", "shardvit reshard IN OUT --world M",
                        "Rewrite checkpoint IN (a step directory, a checkpoint root or a run directory) as the step "
                        "directory OUT for M shard ranks, the files a run of M ranks would have saved. Offline, no "
                        "MPI. Streams with bounded memory: one 4 MiB write buffer plus one read chunk (<= 16 MiB, "
                        "4 MiB as written by shardvit) plus the index tables, whatever the model size. Every chunk "
                        "read is CRC-checked. N -> M -> N reproduces the original shard files byte for byte. OUT "
                        "must not exist and must not lie inside IN, nor inside the checkpoint root that holds the "
                        "step directory read; it is built in a fresh OUT.tmp-XXXXXXXX directory (removed on "
                        "failure) and renamed.",
                        2};
    char *pos[2];
    int npos;
    const char *usage = "expected IN OUT and --world M (M >= 1); see --help";
    int rc = sv_cmd_parse(&spec, flags, argc, argv, pos, &npos, 2, usage);
    if (rc >= 0) return rc;
    if (world < 1) return sv_cmd_usage_error(spec.name, "%s", usage);
    sv_status st = sv_ckpt_reshard(pos[0], pos[1], world);
    if (st != SV_OK) return sv_app_fail("reshard", st);
    printf("resharded %s -> %s for %d ranks\n", pos[0], pos[1], world);
    return 0;
}

int sv_cmd_export(int argc, char **argv, const sv_proc *proc) {
    (void)proc;
    const char *dtype = "fp32";
    int ema = 0;
    /* clang-format off: one flag per line */
    sv_flag flags[] = {
        {"dtype", SV_FLAG_STR, &dtype, 0, 0, "fp32 | bf16 (round to nearest even)", 0},
        {"ema", SV_FLAG_BOOL, &ema, 0, 1, "export the weight EMA (train --model-ema) instead of the raw weights", 0},
        SV_FLAG_END};
    sv_cmd_spec spec = {"export", "shardvit export CKPT OUT.safetensors [--dtype fp32|bf16] [--ema]",
                        "Write the master weights of checkpoint CKPT (step directory, checkpoint root or run "
                        "directory) as a safetensors file with timm VisionTransformer names and shapes, and "
                        "config.json next to it as timm writes it, plus classes.txt (the recorded label names, one "
                        "per line) when the checkpoint has them. Streams tensor by tensor; reads only the master "
                        "ranges (with --ema the weight-EMA ranges; never the optimizer state), each chunk CRC-checked. "
                        "No output (OUT, config.json, classes.txt) may lie inside the step directory read or inside "
                        "its checkpoint root, the directory with the step_* directories and latest (CKPT when it is "
                        "one; RUN/checkpoints when CKPT is a run directory; the parent of a step directory CKPT "
                        "when it holds them); the rest of a run directory may be written (RUN/model.safetensors). "
                        "Outputs never replace a directory, FIFO, device or symbolic link; an existing OUT is "
                        "replaced only when it is a safetensors file.",
                        2};
    char *pos[2];
    int npos;
    int rc = sv_cmd_parse(&spec, flags, argc, argv, pos, &npos, 2, "expected CKPT OUT.safetensors; see --help");
    if (rc >= 0) return rc;
    sv_st_dtype dt;
    if (!strcmp(dtype, "fp32"))
        dt = SV_ST_F32;
    else if (!strcmp(dtype, "bf16"))
        dt = SV_ST_BF16;
    else
        return sv_cmd_usage_error("export", "--dtype: invalid value '%s' (expected fp32 or bf16)", dtype);
    sv_status st = sv_ckpt_export(pos[0], pos[1], dt, ema);
    if (st != SV_OK) return sv_app_fail("export", st);
    return 0;
}

int sv_cmd_import(int argc, char **argv, const sv_proc *proc) {
    (void)proc;
    sv_model_opts mo = {.model = "vit-28"};
    int head_zero = 0;
    sv_flag flags[] = {SV_MODEL_FLAGS(mo), SV_FLAG_END};
    /* clang-format on */
    sv_cmd_spec spec = {"import", "shardvit import FILE.safetensors [model flags]",
                        "Validate a timm VisionTransformer safetensors file (header, dtypes, offsets) and check it "
                        "against the model the flags describe: every tensor present with its shape, except the head "
                        "(head.weight and head.bias of another class count, or neither: a fresh head; one without "
                        "the other, or the two of different class counts, is refused), pos_embed (another patch "
                        "grid) and "
                        "patch_embed.proj.weight (another patch size), resampled as timm's checkpoint_filter_fn does), "
                        "and every value that would be loaded finite (a NaN or "
                        "Inf is named with its tensor and index). Loading happens in training: "
                        "`shardvit train --init-from FILE.safetensors [same model flags]` seeds the master weights "
                        "(optimizer state zero) at any world size.",
                        1};
    char *pos[1];
    int npos;
    int rc = sv_cmd_parse(&spec, flags, argc, argv, pos, &npos, 1, "expected FILE.safetensors; see --help");
    if (rc >= 0) return rc;
    sv_vit_config c;
    sv_status st = sv_model_opts_resolve(&mo, &c);
    if (st != SV_OK) return sv_cmd_usage_error("import", "%s", sv_err_msg());
    sv_layout L;
    st = sv_layout_build(&L, &c, head_zero, 1, 0);
    int loaded = 0;
    if (st == SV_OK) st = sv_ckpt_check_import(&L, pos[0], 1, &loaded);
    int n = L.n_params;
    sv_layout_free(&L);
    if (st != SV_OK) return sv_app_fail("import", st);
    printf("%s fits %s (img %d patch %d dim %d depth %d classes %d): %d of %d tensors from the file; train with "
           "--init-from %s\n",
           pos[0], c.name, c.img, c.patch, c.dim, c.depth, c.num_classes, loaded, n, pos[0]);
    return 0;
}
