/* Checkpoints from the CLI: `shardvit reshard | export | import`, and the checkpoint steps of
 * `shardvit train` (docs/checkpoints.md). */
#include "app/cmd_ckpt.h"

#include <dirent.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app/commands.h"
#include "app/preempt.h"
#include "app/run_dir.h"
#include "core/clock.h"
#include "core/fileio.h"
#include "core/kv.h"
#include "core/log.h"
#include "eval/evaluate.h"
#include "eval/weights.h"
#include "fsdp/agree.h"
#include "formats/safetensors.h"

/* ---- train integration ------------------------------------------------------------------ */

sv_status sv_train_ckpt_setup(sv_train_ckpt *c, const char *ckpt_dir, const char *out) {
    c->dir = NULL;
    c->last_saved = -1;
    c->last_save_s = sv_now_s();
    SV_TRY(sv_run_dir_ckpt_root(ckpt_dir, out, c->dir_buf, sizeof c->dir_buf, &c->dir));
    if (!c->dir && c->every > 0) return SV_FAIL(SV_ERR_INVALID, "--ckpt-every %d needs --ckpt-dir or --out", c->every);
    if (!c->dir && c->keep > 0)
        return SV_FAIL(SV_ERR_INVALID,
                       "--keep %d needs --ckpt-dir or --out: without a checkpoint directory nothing is saved, so "
                       "there is nothing to keep",
                       c->keep);
    if (!c->dir && c->async)
        return SV_FAIL(SV_ERR_INVALID,
                       "--async-ckpt needs --ckpt-dir or --out: without a checkpoint directory nothing is saved");
    if (!c->dir && c->resume && !strcmp(c->resume, "auto"))
        return SV_FAIL(SV_ERR_INVALID, "--resume auto needs --ckpt-dir or --out (or give a checkpoint path)");
    return SV_OK;
}

typedef struct step_name {
    long long step;
    char name[32]; /* "step_" and at most 18 digits */
} step_name;

static int cmp_step_desc(const void *a, const void *b) {
    long long x = ((const step_name *)a)->step, y = ((const step_name *)b)->step;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* The checkpoint in step_dir as a resume would find it: its index.json loads (sv_ckpt_index_load:
 * every table validated) and every shard file it lists is there, a regular file of the size it
 * states (what the reader checks before it reads one; each chunk's CRC is checked by the load). */
static sv_status step_dir_complete(const char *step_dir) {
    sv_ckpt_index idx;
    SV_TRY(sv_ckpt_index_load(&idx, step_dir));
    sv_status st = SV_OK;
    for (int f = 0; f < idx.shard_world && st == SV_OK; f++) {
        char p[SV_CKPT_PATH_MAX + 80];
        int fd = -1;
        st = sv_ckpt_shard_open(&idx, f, &fd, p, sizeof p);
        if (fd >= 0) close(fd);
    }
    sv_ckpt_index_free(&idx);
    return st;
}

/* --resume auto found no `latest` in dir. No step directories (step_*.tmp leftovers of a save
 * that never completed are none): a fresh start (*found = 0; the caller says "starting from
 * scratch"). Step directories but no `latest`: a save killed between renaming its step directory
 * into place and writing `latest` (a requeued job's SIGKILL can land there, at the first save),
 * or a `latest` removed by hand: the newest step directory that is complete (step_dir_complete)
 * is resumed, with a warning naming it (*found = 1, its path in step_dir). None complete: an
 * error naming them (starting over would overwrite them). */
static sv_status no_latest(const char *dir, char *step_dir, size_t cap, int *found) {
    *found = 0;
    DIR *d = opendir(dir);
    struct dirent *e;
    char other[80] = "";     /* a step_* entry that is neither a step directory nor a .tmp one */
    step_name *steps = NULL; /* every one, whatever their number: readdir's order is no step order */
    size_t n = 0, n_cap = 0;
    while (d && (e = readdir(d))) {
        if (strncmp(e->d_name, "step_", 5)) continue;
        long long s = sv_ckpt_step_of_name(e->d_name);
        if (s >= 0) {
            if (n == n_cap) {
                step_name *g = realloc(steps, (n_cap = n_cap ? 2 * n_cap : 64) * sizeof *steps);
                if (!g) {
                    free(steps);
                    closedir(d);
                    return SV_FAIL(SV_ERR_OOM, "step directory list of %s", dir);
                }
                steps = g;
            }
            steps[n].step = s;
            memcpy(steps[n].name, e->d_name, strlen(e->d_name) + 1); /* <= 23 bytes (sv_ckpt_step_of_name) */
            n++;
        } else if (!sv_ckpt_is_tmp_name(e->d_name) && !other[0])
            sv_log_esc(e->d_name, other, sizeof other);
    }
    if (d) closedir(d);
    if (n) qsort(steps, n, sizeof *steps, cmp_step_desc);
    char why[SV_ERR_MSG_CAP] = "", newest[48] = "";
    for (size_t i = 0; i < n; i++) {
        const char *name = steps[i].name;
        if ((size_t)snprintf(step_dir, cap, "%s/%s", dir, name) >= cap) continue;
        if (step_dir_complete(step_dir) == SV_OK) {
            *found = 1;
            char skipped[SV_ERR_MSG_CAP + 96] = "";
            if (i > 0)
                snprintf(skipped, sizeof skipped, "; %zu newer step director%s skipped, %s not complete: %s", i,
                         i == 1 ? "y" : "ies", newest, why);
            SV_WARN("resume auto: %s has no `latest` (a save killed after its step directory was complete and "
                    "before `latest` was written, or `latest` removed); resuming the newest complete checkpoint "
                    "there, %s%s",
                    dir, step_dir, skipped);
            break;
        }
        if (!newest[0]) { /* the first (newest) failure is the one named */
            snprintf(newest, sizeof newest, "%s", name);
            snprintf(why, sizeof why, "%s", sv_err_msg());
        }
        sv_err_clear();
    }
    free(steps);
    if (*found) return SV_OK;
    step_dir[0] = 0;
    if (n > 0)
        return SV_FAIL(SV_ERR_INVALID,
                       "resume auto: %s has step directories (%s, ...) but no `latest`, and none of them is a "
                       "complete checkpoint (%s: %s); resume one of them with --resume %s/STEP_DIR, or choose a new "
                       "directory",
                       dir, newest, newest, why, dir);
    if (other[0])
        return SV_FAIL(SV_ERR_INVALID,
                       "resume auto: %s has no `latest` and no step directory, but holds %s: not a checkpoint this "
                       "build wrote; resume a checkpoint with --resume PATH, or choose a new directory",
                       dir, other);
    return SV_OK;
}

/* Are a and b the same path once resolved (sv_fileio_real_path: links and `..`; they need not
 * exist)? */
static sv_status same_path(const char *a, const char *b, int *same) {
    char ra[PATH_MAX], rb[PATH_MAX];
    SV_TRY(sv_fileio_real_path(a, ra));
    SV_TRY(sv_fileio_real_path(b, rb));
    *same = !strcmp(ra, rb);
    return SV_OK;
}

/* "metrics.jsonl records up to step N, eval.json, checkpoints" (what rec holds) into buf. */
static const char *records_text(const sv_run_dir_records *rec, char *buf, size_t cap) {
    int n = 0;
    buf[0] = 0;
    if (rec->last_step >= 0) n += snprintf(buf + n, cap - n, "metrics.jsonl records up to step %ld", rec->last_step);
    if (rec->eval && (size_t)n < cap) n += snprintf(buf + n, cap - n, "%seval.json", n ? ", " : "");
    if (rec->checkpoints && (size_t)n < cap) snprintf(buf + n, cap - n, "%scheckpoints/", n ? ", " : "");
    return buf;
}

/* --resume auto without a checkpoint in root starts from scratch, which cuts OUT/metrics.jsonl
 * back to its header and replaces config.toml, classes.txt and the evaluation outputs: refused
 * when OUT already holds a run's records (step records, eval.json) or its config.toml names another
 * checkpoint root (the usual cause: --ckpt-dir forgotten). */
static sv_status fresh_start_check(const char *out, const char *root, const sv_run_dir_records *rec) {
    int same = 1;
    if (rec->ckpt_dir[0]) SV_TRY(same_path(rec->ckpt_dir, root, &same));
    /* step records alone (no eval.json: the run did not finish) in its own root: a run that
     * stopped before its first checkpoint (a kill, a node lost) restarts in place, as a requeued
     * job must */
    if (!rec->eval && same) return SV_OK;
    char what[256], e1[SV_ESC_CAP];
    records_text(rec, what, sizeof what);
    if (!same)
        return SV_FAIL(SV_ERR_INVALID,
                       "--resume auto: no checkpoint in %s, but --out %s belongs to a run whose config.toml records "
                       "--ckpt-dir %s%s%s%s: starting from scratch would cut its metrics.jsonl back and replace its "
                       "results; continue that run with --ckpt-dir %s, or choose a new --out (the run directory was "
                       "left as it was)",
                       root, out, sv_log_esc(rec->ckpt_dir, e1, sizeof e1), what[0] ? " (it holds " : "", what,
                       what[0] ? ")" : "", e1);
    return SV_FAIL(SV_ERR_INVALID,
                   "--resume auto: no checkpoint in %s, but --out %s holds a finished run's records (%s): "
                   "starting from scratch would cut metrics.jsonl back to step 0 and replace them; if that run "
                   "saved its checkpoints elsewhere, give that --ckpt-dir; to start a new run, choose a new --out "
                   "(the run directory was left as it was)",
                   root, out, what);
}

/* The recipe values of the run that saved the checkpoint in ck_root, from the config.toml of its
 * run directory: OUT's when OUT's run saves into ck_root, else that of ck_root's parent when that
 * is the run directory whose checkpoint root ck_root is (RUN/checkpoints). *src: the file ("" when
 * none). Keys a config.toml lacks (an older run) keep NAN. */
static sv_status recorded_recipe(const char *out, const sv_run_dir_records *out_rec, const char *ck_root,
                                 sv_train_recipe *was, char *src, size_t cap) {
    *was = (sv_train_recipe){NAN, NAN, NAN};
    src[0] = 0;
    char parent[PATH_MAX], root[PATH_MAX];
    SV_TRY(sv_fileio_parent(ck_root, parent));
    const char *dirs[2] = {out && out_rec->config ? out : NULL, parent};
    for (int i = 0; i < 2 && !src[0]; i++) {
        sv_run_dir_records rec;
        if (!dirs[i]) continue;
        if (i == 0)
            rec = *out_rec;
        else if (sv_run_dir_records_read(dirs[i], &rec) != SV_OK) {
            sv_err_clear(); /* not a run directory we can read: nothing recorded */
            continue;
        }
        int same = 0;
        if (!rec.config || sv_run_dir_records_root(dirs[i], &rec, root) != SV_OK ||
            same_path(root, ck_root, &same) != SV_OK || !same ||
            (size_t)snprintf(src, cap, "%s/config.toml", dirs[i]) >= cap) {
            sv_err_clear();
            src[0] = 0;
        }
    }
    if (!src[0]) return SV_OK;
    static const char *const keys[] = {"mixup", "smoothing", "drop-path"};
    double *vals[] = {&was->mixup, &was->smoothing, &was->drop_path};
    for (int k = 0; k < 3; k++) {
        char v[64];
        int found = 0;
        if (sv_kv_file_get(src, keys[k], v, sizeof v, &found) != SV_OK) {
            sv_err_clear();
            continue;
        }
        if (!found) continue;
        char *end;
        double d = strtod(v, &end);
        if (end != v && !*end) *vals[k] = d;
    }
    return SV_OK;
}

sv_status sv_train_ckpt_precheck(const char *resume, const char *ckpt_dir, const char *out, const sv_train_recipe *now,
                                 sv_train_resume *rs) {
    memset(rs, 0, sizeof *rs);
    if (!resume) return SV_OK;
    sv_train_ckpt c = {.resume = resume};
    SV_TRY(sv_train_ckpt_setup(&c, ckpt_dir, out));
    sv_run_dir_records rec = {.last_step = -1};
    if (out) SV_TRY(sv_run_dir_records_read(out, &rec));
    if (!strcmp(resume, "auto")) {
        int found = 0;
        SV_TRY(sv_ckpt_latest(c.dir, rs->step_dir, sizeof rs->step_dir, &found));
        if (!found) SV_TRY(no_latest(c.dir, rs->step_dir, sizeof rs->step_dir, &found));
        if (!found) return out ? fresh_start_check(out, c.dir, &rec) : SV_OK;
    } else
        SV_TRY(sv_ckpt_resolve(resume, rs->step_dir, sizeof rs->step_dir));
    SV_TRY(sv_ckpt_index_load(&rs->idx, rs->step_dir));
    rs->found = 1;
    /* the checkpoint root that holds the step resumed, against the roots this run writes */
    char real_step[PATH_MAX], ck_root[PATH_MAX], out_root[PATH_MAX], what[256], e[SV_ESC_CAP];
    SV_TRY(sv_fileio_real_path(rs->step_dir, real_step));
    SV_TRY(sv_fileio_parent(real_step, ck_root));
    int same = 1;
    if (c.dir) SV_TRY(same_path(ck_root, c.dir, &same));
    if (!same && sv_run_dir_has_checkpoints(c.dir))
        return SV_FAIL(
            SV_ERR_INVALID,
            "--resume %s: the checkpoint %s is not in this run's checkpoint root %s, which holds another "
            "run's checkpoints: the saves of this run (and --keep) would replace and delete them; resume "
            "into a new --out / --ckpt-dir, or resume that run's own checkpoint (that run was left as it was)",
            sv_log_esc(resume, e, sizeof e), rs->step_dir, c.dir);
    if (out && (rec.last_step >= 0 || rec.eval || rec.checkpoints)) {
        SV_TRY(sv_run_dir_records_root(out, &rec, out_root));
        SV_TRY(same_path(ck_root, out_root, &same));
        if (!same)
            return SV_FAIL(SV_ERR_INVALID,
                           "--resume %s: --out %s holds another run's results (%s; its checkpoints are in %s), but "
                           "the checkpoint %s is not one of them: continuing here would cut back its metrics.jsonl "
                           "and replace its results; resume into a new --out, or resume that run's own checkpoint "
                           "(that run was left as it was)",
                           sv_log_esc(resume, e, sizeof e), out, records_text(&rec, what, sizeof what), out_root,
                           rs->step_dir);
    }
    /* the recipe values index.json does not hold, as the saving run's config.toml records them */
    sv_train_recipe was;
    char src[PATH_MAX + 16];
    SV_TRY(recorded_recipe(out, &rec, ck_root, &was, src, sizeof src));
    const struct {
        const char *flag;
        double was, now;
    } cmp[] = {{"--mixup", was.mixup, now->mixup},
               {"--smoothing", was.smoothing, now->smoothing},
               {"--drop-path", was.drop_path, now->drop_path}};
    for (size_t i = 0; i < sizeof cmp / sizeof cmp[0]; i++)
        if (!isnan(cmp[i].was) && cmp[i].was != cmp[i].now)
            SV_WARN("resume: %s changed from %g (%s, the run that saved %s) to %g; continuing with the new value",
                    cmp[i].flag, cmp[i].was, src, rs->step_dir, cmp[i].now);
    return SV_OK;
}

/* sv_train_resume_fits (app/cmd_ckpt.h): the checkpoint --resume continues against what is known
 * once the data is open. Its label names must be the training data's class names (label k of the
 * data is the head's output k: other names would train the head under other classes; the
 * comparison of eval/evaluate.h, as eval and predict make it); its step must not be past the
 * run's total (a run never continues backwards: its records after that step and the schedule
 * would disagree). A checkpoint at exactly the total resumes with no step left: the end-of-run
 * work (final evaluation, outputs) is done again, which completes a run stopped at its last step. */
/* The checkpoint's data position (epoch, sample cursor) is a place in the sampler's permutation
 * of the data set it was trained on: in another data set (another sample count, other files or
 * labels: a node-local copy still incomplete, another directory) it names other samples, so
 * samples would be skipped or repeated without a word. Refused unless data_changed_ok
 * (--resume-data-changed: warned). A checkpoint written before index.json recorded the data set
 * (no train_data) cannot be checked: a line says so, and only a cursor past the end of the data
 * shows a change. */
static sv_status same_train_data(const sv_train_resume *rs, const sv_dataset *ds, const char *data,
                                 int data_changed_ok) {
    const sv_ckpt_train_state *s = &rs->idx.state;
    unsigned long long n = (unsigned long long)sv_dataset_len(ds), fp = sv_dataset_fingerprint(ds);
    char what[320];
    if (!s->data_known) {
        if (s->cursor < n) {
            SV_INFO("resume: the checkpoint %s records no training data set (saved before checkpoints recorded "
                    "one): --data %s cannot be checked against the data it was trained on (%llu samples now)",
                    rs->step_dir, data, n);
            return SV_OK;
        }
        snprintf(what, sizeof what,
                 "the checkpoint records no data set, but its data position, sample %llu, is past the end of the "
                 "%llu samples of --data",
                 (unsigned long long)s->cursor, n);
    } else if (s->data_samples != n)
        snprintf(what, sizeof what, "the checkpoint was trained on %llu samples, --data has %llu",
                 (unsigned long long)s->data_samples, n);
    else if (s->data_fingerprint != fp)
        snprintf(what, sizeof what,
                 "the same number of samples (%llu), but other files or labels: data set fingerprint %016llx "
                 "recorded, %016llx now",
                 n, (unsigned long long)s->data_fingerprint, fp);
    else
        return SV_OK;
    if (data_changed_ok) {
        SV_WARN("resume: --data %s is not the data set the checkpoint %s was trained on (%s); continuing on it as "
                "--resume-data-changed asks, from the checkpoint's data position (epoch %llu, sample %llu) in this "
                "data set's order: the samples already seen in that epoch are not known here, so some are skipped "
                "or repeated",
                data, rs->step_dir, what, (unsigned long long)s->epoch, (unsigned long long)s->cursor);
        return SV_OK;
    }
    return SV_FAIL(SV_ERR_INVALID,
                   "--resume: --data %s is not the data set the checkpoint %s was trained on (%s): its data position "
                   "(epoch %llu, sample %llu) would pick other samples here, skipping or repeating some (refused, "
                   "nothing was changed: resume on the data set it was trained on, e.g. once a copy of it is "
                   "complete; to continue on this one deliberately, add --resume-data-changed)",
                   data, rs->step_dir, what, (unsigned long long)s->epoch, (unsigned long long)s->cursor);
}

sv_status sv_train_resume_fits(const sv_train_resume *rs, const sv_dataset *ds, const char *data, long total,
                               int data_changed_ok) {
    char src[SV_CKPT_PATH_MAX + 32];
    snprintf(src, sizeof src, "%s/index.json", rs->step_dir);
    if (sv_eval_check_class_names(ds, rs->idx.meta.labels, rs->idx.meta.n_labels, src) != SV_OK) {
        char why[SV_ERR_MSG_CAP];
        snprintf(why, sizeof why, "%s", sv_err_msg());
        return SV_FAIL(SV_ERR_INVALID,
                       "--resume: --data %s does not have the classes the checkpoint was trained on: %s; resuming "
                       "would relabel its head (refused: resume on the data set it was trained on, or start a new "
                       "run from its export with --init-from)",
                       data, why);
    }
    SV_TRY(same_train_data(rs, ds, data, data_changed_ok));
    long long step = (long long)rs->idx.state.step;
    if (step > total)
        return SV_FAIL(SV_ERR_INVALID,
                       "--resume: the checkpoint %s is at step %lld, past the %ld steps of this run (the run that "
                       "saved it was to take %lld): a resumed run continues to its own total, it never goes back; "
                       "give --steps %lld or more (or the --epochs that make them), or resume an earlier checkpoint "
                       "(nothing was changed)",
                       rs->step_dir, step, total, (long long)rs->idx.state.total_steps,
                       (long long)rs->idx.state.total_steps > step ? (long long)rs->idx.state.total_steps : step);
    return SV_OK;
}

sv_status sv_train_resume_model_fits(const sv_train_resume *rs, const sv_layout *L, const sv_ckpt_optim *opt) {
    if (!rs->found) return SV_OK;
    SV_TRY(sv_ckpt_check_compatible(L, &rs->idx, NULL));
    return sv_ckpt_optim_check_kind(&rs->idx.state.opt, opt);
}

sv_status sv_train_ckpt_still_latest(const char *resume, const char *ckpt_dir, const char *out,
                                     const sv_train_resume *rs) {
    if (!resume || strcmp(resume, "auto")) return SV_OK;
    sv_train_ckpt c = {.resume = resume};
    SV_TRY(sv_train_ckpt_setup(&c, ckpt_dir, out));
    char now[SV_CKPT_PATH_MAX] = "";
    int found = 0;
    SV_TRY(sv_ckpt_latest(c.dir, now, sizeof now, &found));
    if (!found || (rs->found && !strcmp(now, rs->step_dir))) return SV_OK;
    return SV_FAIL(SV_ERR_INVALID,
                   "--resume auto: the checkpoint root %s changed while this run started (latest is now %s, was %s: "
                   "another run saved into it until this one locked it); run the command again",
                   c.dir, now, rs->found ? rs->step_dir : "none");
}

void sv_train_resume_free(sv_train_resume *rs) {
    if (rs->found) sv_ckpt_index_free(&rs->idx);
    rs->found = 0;
}

/* --init-from FILE: the head count is in no tensor shape, so loading is legal with any count that
 * divides dim (timm allows it too), but another count than config.json's splits the trained
 * attention weights into other heads. Warned on every load (rank 0 reads config.json). */
static sv_status warn_init_heads(const sv_vit_config *run, const char *path) {
    sv_vit_config fc = *run;
    int have_heads = 0;
    SV_TRY(sv_weights_infer_config(path, &fc, &have_heads));
    if (have_heads && fc.heads != run->heads)
        SV_WARN("--init-from %s: its config.json records num_heads %d, this run's model has %d heads: the trained "
                "attention weights are split into other heads (another model than the one trained; pass --heads %d "
                "to continue that one)",
                path, fc.heads, run->heads, fc.heads);
    return SV_OK;
}

sv_status sv_train_ckpt_begin(sv_run *r, sv_train_ckpt *c, const sv_train_resume *rs, sv_loader *ld, long *start_step) {
    *start_step = 0;
    char step_dir[SV_CKPT_PATH_MAX] = "";
    int found = 0;
    if (c->resume) {
        if (r->rank == 0 && rs->found) snprintf(step_dir, sizeof step_dir, "%s", rs->step_dir);
        SV_TRY(sv_run_agreed(r, sv_fsdp_world_bcast_str(&r->fsdp, step_dir, sizeof step_dir)));
        found = step_dir[0] != 0;
        if (!found) SV_INFO("resume auto: no checkpoint in %s; starting from scratch", c->dir);
    }
    if (!found) {
        if (c->init_from) {
            sv_status st = sv_ckpt_init_from_safetensors(&r->fsdp, c->init_from);
            if (st == SV_OK && r->rank == 0) st = warn_init_heads(&r->vcfg, c->init_from);
            SV_TRY(sv_run_agree(r, st));
        }
        return SV_OK;
    }
    if (c->init_from) SV_INFO("--init-from %s ignored: resuming from %s", c->init_from, step_dir);
    sv_ckpt_train_state s;
    SV_TRY(sv_run_agreed(r, sv_ckpt_load(&r->fsdp, step_dir, &c->meta.xform, &s))); /* agrees itself */
    /* the checks below see the same checkpoint state on every rank: they fail alike */
    SV_TRY(sv_run_agreed(r, sv_ckpt_optim_check_resume(&s.opt, &c->state.opt)));
    if (s.step > c->state.total_steps) /* refused at start-up already (app/cmd_train.c); a second guard */
        return sv_run_agreed(r,
                             SV_FAIL(SV_ERR_INVALID,
                                     "--resume: the checkpoint %s is at step %lld, past this run's %lld steps",
                                     step_dir, (long long)s.step, (long long)c->state.total_steps));
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
    char changes[512];
    const int same_kind = !strcmp(sv_ckpt_sched_kind(&s.sched), sv_ckpt_sched_kind(&c->state.sched)) &&
        s.sched.on_epochs == c->state.sched.on_epochs;
    sv_ckpt_sched_changes(&s.sched, &c->state.sched, s.total_steps == c->state.total_steps, changes, sizeof changes);
    if (same_kind && changes[0])
        SV_WARN("resume: the LR schedule changed (%s); continuing with the new one at step %lld", changes,
                (long long)s.step);
    if (s.total_steps != c->state.total_steps || s.lr != c->state.lr || s.min_lr != c->state.min_lr ||
        s.warmup != c->state.warmup)
        SV_WARN("resume: the LR schedule changed (checkpoint: %lld steps, lr %g, min-lr %g, warmup %lld; now %lld, %g, "
                "%g, %lld); continuing with the new one at step %lld",
                (long long)s.total_steps, s.lr, s.min_lr, (long long)s.warmup, (long long)c->state.total_steps,
                c->state.lr, c->state.min_lr, (long long)c->state.warmup, (long long)s.step);
    if (s.seed != c->state.seed)
        SV_WARN("resume: checkpoint seed %llu differs from --seed %llu (data order and augmentation follow --seed)",
                (unsigned long long)s.seed, (unsigned long long)c->state.seed);
    /* The data position is a sample position (epoch, cursor): another global batch continues with
     * exactly the samples that come next, but every step now takes another number of them. */
    if (s.global_batch > 0 && s.global_batch != c->state.global_batch)
        SV_WARN("resume: the global batch size changed from %lld (checkpoint) to %lld (--batch-size); continuing at "
                "the checkpoint's data position (epoch %llu, sample %llu: no sample skipped or repeated) with %lld "
                "samples per step: the steps per epoch change, and --lr, --warmup and --steps are not rescaled",
                (long long)s.global_batch, (long long)c->state.global_batch, (unsigned long long)s.epoch,
                (unsigned long long)s.cursor, (long long)c->state.global_batch);
    else if (c->state.global_batch > 0 && s.cursor % (uint64_t)c->state.global_batch)
        /* the same batch, yet a position inside one: an accumulating run of a version whose epochs
         * ended at the micro-batch (an epoch now holds whole optimizer steps, data/loader.h) */
        SV_WARN("resume: the checkpoint's data position, sample %llu of epoch %llu, is not at a whole global batch "
                "of %lld (written by a version that ended epochs at the micro-batch under --accum): no sample is "
                "skipped or repeated, but this run's optimizer steps keep taking the end of one epoch with the start "
                "of the next",
                (unsigned long long)s.cursor, (unsigned long long)s.epoch, (long long)c->state.global_batch);
    if (s.ema && r->fsdp.cfg.ema && (s.ema_decay != c->state.ema_decay || s.ema_warmup != c->state.ema_warmup))
        SV_WARN("resume: the weight EMA changed (checkpoint: --model-ema-decay %g, --model-ema-warmup %d; now %g, %d); "
                "continuing the saved EMA with the new values",
                s.ema_decay, s.ema_warmup, c->state.ema_decay, c->state.ema_warmup);
    /* only in another data set (--resume-data-changed; sv_train_resume_fits refused it otherwise)
     * can the position lie past the end of this one's epoch: the next epoch begins */
    if (c->state.data_known && s.cursor >= c->state.data_samples) {
        SV_WARN("resume: the checkpoint's data position, sample %llu of epoch %llu, is past the %llu samples of this "
                "data set: continuing at the start of epoch %llu",
                (unsigned long long)s.cursor, (unsigned long long)s.epoch, (unsigned long long)c->state.data_samples,
                (unsigned long long)s.epoch + 1);
        s.epoch++;
        s.cursor = 0;
    }
    SV_TRY(sv_run_agreed(r, sv_loader_seek(ld, s.epoch, s.cursor)));
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
    /* a save while steps are being skipped (the final save, a preemption's) holds the weights of
     * the last applied step, which may be the diverged ones: it rotates nothing away */
    const int keep = c->hold ? 0 : c->keep;
    if (c->hold && c->keep > 0)
        SV_INFO("checkpoint of step %lld saved while steps are being skipped for non-finite gradients: --keep %d "
                "removes no earlier checkpoint this time",
                (long long)c->state.step, c->keep);
    if (c->async && !c->aw) SV_TRY(sv_ckpt_async_create(&c->aw));
    if (c->aw) SV_TRY(sv_ckpt_save_finish(&r->fsdp, c->aw, NULL, 0));
    if (c->async && !now) {
        SV_TRY(sv_ckpt_save_begin(&r->fsdp, c->aw, 1, c->dir, &c->state, &c->meta, keep));
    } else {
        SV_TRY(sv_ckpt_save(&r->fsdp, c->dir, &c->state, &c->meta, keep, NULL, 0));
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
    if (c->hold && c->keep > 0 && (by_steps || v[1] > 0) && !*stop) { /* with --keep 0 nothing rotates */
        SV_INFO("step %ld: periodic checkpoint held: the step was skipped for non-finite gradients (the next applied "
                "step saves, or the run's final save)",
                done);
        if (by_steps) c->held = 1;
        by_steps = 0, v[1] = 0;
    } else if (c->held && !c->hold) { /* the first applied step after a held periodic save */
        by_steps = c->dir != NULL;
    }
    if (!c->hold) c->held = 0;
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
                        "replaced only when it is an earlier shardvit export. OUT's name ends in .safetensors.",
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
