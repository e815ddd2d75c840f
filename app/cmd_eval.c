/* shardvit eval: top-1/top-5/loss/per-class accuracy and the confusion matrix of trained weights
 * on a data set, at any world size (mpiexec -n N). Rank 0 prints and writes the outputs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/backend_env.h"
#include "app/commands.h"
#include "app/cpu_peak.h"
#include "app/provenance.h"
#include "app/model_load.h"
#include "app/run.h"
#include "app/xform.h"
#include "core/log.h"
#include "eval/evaluate.h"

typedef struct eval_opts {
    sv_run_opts run;
    const char *data, *out, *classes;
    sv_model_source src; /* --weights | --ckpt [--ema] */
    int workers, synth_samples, ignore_class_names;
    int skip_unreadable;  /* leave unreadable images out (recorded in eval.json) instead of failing */
    sv_xform_flags xf;    /* unset unless given: the model's transform applies */
    const sv_flag *flags; /* the resolved flag table (eval.json provenance "config") */
} eval_opts;

static void print_summary(const sv_evaluator *e, const char *data, char **names, int n_names) {
    const sv_metrics *m = &e->m;
    int K = m->num_classes;
    printf("eval on %s: %lld samples in %.1f s\n", data, (long long)sv_metrics_samples(m), e->seconds);
    if (e->skipped)
        printf("  (%lld unreadable images or unusable entries left out: --skip-unreadable; listed in eval.json)\n",
               e->skipped);
    printf("  top-1 %.4f (%lld correct)\n  top-5 %.4f (%lld correct)\n  loss  %.4f\n", sv_metrics_top1(m),
           (long long)sv_metrics_top1_correct(m), sv_metrics_top5(m), (long long)sv_metrics_top5_correct(m),
           sv_metrics_mean_loss(m));
    const int64_t *cc = sv_metrics_class_correct(m), *ct = sv_metrics_class_total(m);
    int shown = 0;
    printf("  per class (accuracy, correct/total):\n");
    for (int k = 0; k < K; k++) {
        if (!ct[k]) continue;
        if (shown++ == 50) {
            printf("    ... (%d classes; all of them are in eval.json)\n", K);
            break;
        }
        char buf[16], esc[SV_ESC_CAP]; /* names come from files: printed escaped */
        const char *name = k < n_names ? names[k] : sv_eval_class_name(e, k, buf, sizeof buf);
        printf("    %-24s %.4f  %lld/%lld\n", sv_log_esc(name, esc, sizeof esc), (double)cc[k] / (double)ct[k],
               (long long)cc[k], (long long)ct[k]);
    }
    fflush(stdout);
}

/* *usage = 1 when the failure is a bad flag or weights/flags mismatch found before any rank
 * communicates (exit 2 on every rank alike); later failures are runtime errors (exit 1). */
static sv_status run_eval(eval_opts *o, const sv_proc *proc, int *usage) {
    sv_model_opts mo;
    *usage = 1;
    char pinned[SV_CKPT_PATH_MAX]; /* --ckpt's step directory, read once (its `latest` may move) */
    SV_TRY(sv_model_source_pin(&o->src, pinned, sizeof pinned));
    SV_TRY(sv_app_model_config(&o->run.model, o->src.weights, o->src.ckpt, &mo));
    o->run.model = mo;
    SV_TRY(sv_xform_flags_check(&o->xf, mo.in_chans));
    /* synthetic images are drawn at the model's size: a crop other than the whole image, or a
     * resampling filter, would be recorded in eval.json without having been applied */
    if (o->data && !strcmp(o->data, "synthetic") && ((o->xf.crop_pct >= 0 && o->xf.crop_pct != 1.0) || o->xf.interp))
        return SV_FAIL(SV_ERR_INVALID,
                       "--%s does not apply to --data synthetic (its images are drawn at the model's size: no resize "
                       "or crop; only --mean / --std and --crop-pct 1 apply)",
                       o->xf.interp ? "interp" : "crop-pct");
    sv_ckpt_meta meta;
    sv_ckpt_xform xf;
    char msrc[4200], lsrc[4200];
    char **names = NULL;
    int n_names = 0;
    *usage = 0;
    SV_TRY(sv_app_model_meta(o->src.weights, o->src.ckpt, &meta, msrc, lsrc, sizeof msrc));
    sv_status mst = sv_xform_resolve(&o->xf, &meta.xform, msrc, mo.img, mo.in_chans, &xf);
    /* --classes names the model's classes in the outputs: checked against the model before any work */
    if (mst == SV_OK && o->classes)
        mst = sv_app_class_list(o->classes, &meta, lsrc, mo.num_classes, 1, &names, &n_names);
    if (mst == SV_OK) { /* outputs must not go into the checkpoint or replace a non-file */
        char step_dir[SV_CKPT_PATH_MAX];
        mst = o->src.ckpt ? sv_ckpt_resolve(o->src.ckpt, step_dir, sizeof step_dir) : SV_OK;
        if (mst == SV_OK) mst = sv_eval_check_outputs(o->out, o->src.ckpt ? step_dir : NULL, proc->rank == 0);
    }
    if (mst != SV_OK) {
        free(meta.labels);
        free(names);
        return mst;
    }
    *usage = 1;
    /* The global batch must split evenly over the ranks; round up rather than refuse. */
    int W = proc->world, B = o->run.batch_size;
    if (B % W) {
        B = (B + W - 1) / W * W;
        SV_INFO("--batch-size %d rounded up to %d (a multiple of %d ranks)", o->run.batch_size, B, W);
        o->run.batch_size = B;
    }
    sv_run r;
    sv_status sst = sv_run_setup(&r, &o->run, proc->rank, proc->world, proc->local_rank, proc->local_size);
    if (sst != SV_OK) {
        free(meta.labels);
        free(names);
        return sst;
    }
    *usage = 0;
    sv_dataset *ds = NULL;
    sv_evaluator ev = {0};
    sv_status st = sv_app_load_model(&r, o->src.weights, o->src.ckpt, o->src.ema);
    sv_dataset_opts dopts = sv_dataset_opts_default();
    dopts.classes_file = o->classes;
    dopts.classes_fallback = 1; /* a tar's own classes.txt is checked against --classes, not replaced */
    dopts.leave_out_unusable = o->skip_unreadable; /* left out at the scan: recorded in eval.json too */
    dopts.synth_samples = (uint64_t)o->synth_samples;
    dopts.synth_classes = r.vcfg.num_classes;
    dopts.synth_img = r.vcfg.img;
    dopts.synth_channels = r.vcfg.in_chans;
    dopts.synth_seed = 1234; /* the task train --data synthetic learns */
    if (st == SV_OK) st = sv_dataset_open(o->data, &dopts, &ds);
    st = sv_run_agree(&r, st); /* opened on every rank, then compared over the ranks */
    if (st == SV_OK) st = sv_run_same_data(&r, ds, "--data", o->data);
    /* label k of the data must be class k of the model: checked against the --classes list that
     * names the model's classes (checked above to begin with the recorded names), else the names
     * the model recorded; a data class beyond them has no class of the model to mean */
    char *const *ref = names ? names : meta.labels;
    int n_ref = names ? n_names : meta.n_labels;
    const char *rsrc = names ? o->classes : lsrc;
    if (st == SV_OK && ref) {
        sv_status cst = sv_eval_check_class_names(ds, ref, n_ref, rsrc);
        if (cst != SV_OK && o->ignore_class_names)
            SV_WARN("--ignore-class-names: evaluating anyway, although %s", sv_err_msg());
        else if (cst != SV_OK) {
            char why[1024];
            snprintf(why, sizeof why, "%s", sv_err_msg());
            st = SV_FAIL(cst, "%s (pass --ignore-class-names to evaluate anyway)", why);
        }
    }
    free(meta.labels);
    meta.labels = NULL;
    sv_eval_opts eo = SV_EVAL_OPTS_DEFAULT;
    eo.workers = o->workers;
    float mean[3], stdv[3];
    for (int c = 0; c < 3; c++) mean[c] = (float)xf.mean[c], stdv[c] = (float)xf.std[c];
    eo.crop_pct = xf.crop_pct;
    eo.interp = sv_xform_interp_id(&xf);
    eo.xform = &xf;
    eo.mean = mean;
    eo.std = stdv;
    eo.seed = (uint64_t)o->run.seed;
    eo.skip_unreadable = o->skip_unreadable;
    if (st == SV_OK) {
        SV_INFO("evaluating %s (%d classes) on %s: %zu samples, global batch %d over %d ranks", r.vcfg.name,
                r.vcfg.num_classes, o->data, sv_dataset_len(ds), o->run.batch_size, r.world);
        sv_eval_bufs eb = sv_run_eval_bufs(&r);
        st = sv_eval_init(&ev, &r.fsdp, ds, &eo, &eb);
    }
    /* every check has passed on every rank (agreed there): an earlier evaluation's outputs in
     * --out go now, so that a failing evaluation leaves none that would read as its result */
    st = sv_eval_remove_earlier_outputs(&r.fsdp, st, o->out);
    if (st == SV_OK) st = sv_eval_run(&ev);
    if (st != SV_OK && ev.unreadable_failed) { /* the same on every rank: all fail alike */
        char why[1024];
        snprintf(why, sizeof why, "%s", sv_err_msg());
        st = SV_FAIL(st,
                     "%s; no eval.json written (fix or remove them, or pass --skip-unreadable to evaluate "
                     "the readable images only, recorded in eval.json)",
                     why);
    }
    if (st == SV_OK && r.rank == 0) {
        print_summary(&ev, o->data, names, n_names);
        sv_provenance p;
        sv_cpu_peak pc;
        sv_cpu_peak_cores(&r, &pc);
        sv_provenance_fill(&p, "eval", proc, pc.threads_rank, strcmp(sv_be_name(r.be), "cuda") ? -1 : r.local_rank);
        char *prov = sv_provenance_json(&p, o->flags);
        ev.provenance_json = prov;
        st = sv_eval_write_outputs(&ev, o->out, (const char *const *)names);
        free(prov);
        if (st == SV_OK && sv_metrics_has_confusion(&ev.m))
            SV_INFO("wrote %s/eval.json and %s/confusion.csv", o->out, o->out);
        else if (st == SV_OK)
            SV_INFO("wrote %s/eval.json", o->out);
    }
    if (ev.f) sv_eval_free(&ev);
    free(names);
    if (ds) sv_dataset_close(ds);
    return sv_run_end(&r, st);
}

int sv_cmd_eval(int argc, char **argv, const sv_proc *proc) {
    eval_opts o = {.run = SV_RUN_OPTS_DEFAULT, .out = ".", .xf = SV_XFORM_FLAGS_UNSET, .synth_samples = 1000};
    o.run.model.model = NULL;
    o.run.batch_size = 64;
    /* clang-format off: one flag per line */
    sv_flag flags[] = {
        SV_MODEL_FLAGS(o.run.model),
        SV_MODEL_SOURCE_FLAGS(o.src),
        {"data", SV_FLAG_STR, &o.data, 0, 0, "evaluation data: ImageFolder dir | tar pattern | synthetic", 0},
        {"out", SV_FLAG_STR, &o.out, 0, 0,
         "directory for eval.json and confusion.csv (confusion.csv up to 1024 classes; not inside --ckpt's step "
         "directory or checkpoint root)",
         0},
        {"classes", SV_FLAG_STR, &o.classes, 0, 0,
         "class names, one per line (default: the data set's); one per model class, equal to the model's "
         "recorded label names when it has them",
         0},
        {"batch-size", SV_FLAG_INT, &o.run.batch_size, 1, 1 << 20, "global batch (rounded up to a multiple of ranks)",
         0},
        SV_XFORM_FLAGS(o.xf),
        {"synth-samples", SV_FLAG_INT, &o.synth_samples, 1, 1 << 30, "samples in --data synthetic", 0},
        {"ignore-class-names", SV_FLAG_BOOL, &o.ignore_class_names, 0, 0,
         "evaluate even when the data set's class names differ from the label names the model recorded", 0},
        {"skip-unreadable", SV_FLAG_BOOL, &o.skip_unreadable, 0, 0,
         "leave unreadable images out (counted in eval.json \"skipped\"/\"skipped_files\") instead of failing", 0},
        {"workers", SV_FLAG_INT, &o.workers, 0, 256, "data loader threads per rank (0 = the CPUs it may use)", 0},
        {"strategy", SV_FLAG_STR, &o.run.strategy, 0, 0, "full_shard | shard_grad_op | no_shard | hybrid_shard", 0},
        {"shard-group", SV_FLAG_INT, &o.run.shard_group, 0, 1 << 20, "hybrid_shard group size", 0},
        {"param-dtype", SV_FLAG_STR, &o.run.param_dtype, 0, 0, "compute dtype fp32 | bf16", 0},
        {"device", SV_FLAG_STR, &o.run.device, 0, 0, "auto | cpu | cuda", 0},
        {"threads", SV_FLAG_INT, &o.run.threads, 0, 1024,
         "CPU threads per rank (0 = the CPUs it may use / the ranks sharing them)", 0},
        {"comm-timeout", SV_FLAG_DOUBLE, &o.run.comm_timeout, 0, 1e7, SV_COMM_TIMEOUT_HELP, 0},
        SV_FLAG_END};
    /* clang-format on */
    sv_cmd_spec spec = {
        "eval", "[mpiexec -n N] shardvit eval --weights FILE.safetensors | --ckpt PATH --data PATH [flags]",
        "Evaluate trained weights: loss, top-1, top-5, per-class accuracy; writes eval.json and "
        "confusion.csv (models of at most 1024 classes) to --out. The model shape comes from the weights (and "
        "config.json beside "
        "them); model flags override it: --img / --patch other than the weights' resample pos_embed / "
        "patch_embed as timm does for another img_size (--weights only). The eval transform (crop_pct, interpolation, "
        "mean, std) is the "
        "one the model recorded (checkpoint index.json, or config.json's pretrained_cfg beside "
        "--weights), else the defaults; --crop-pct/--interp/--mean/--std override it, and a line "
        "names each value's source. When the model recorded label names, the data set's class names must "
        "equal them class by class (else an error names the first difference; --ignore-class-names "
        "overrides). An unreadable image (empty, truncated, not a JPEG, too large) fails the evaluation on every "
        "rank, naming it: evaluation never replaces it by another sample. An ImageFolder entry named like an image "
        "that "
        "cannot be one (a dangling link, a FIFO, socket or device, too long a path) fails opening the data, naming it. "
        "--skip-unreadable leaves such images and entries out and records them in eval.json (\"skipped\", "
        "\"skipped_files\"), so it leaves none out silently; evaluating no sample at all is still an error.",
        0};
    char *pos[1];
    int npos;
    int rc = sv_cmd_parse(&spec, flags, argc, argv, pos, &npos, -1, NULL);
    if (rc >= 0) return rc;
    if ((rc = sv_backend_env_check("eval", NULL)) >= 0) return rc;
    o.flags = flags;
    if ((rc = sv_model_source_check("eval", &o.src)) != 0) return rc;
    if (!o.data) return sv_cmd_usage_error("eval", "--data: missing (ImageFolder dir, tar pattern or synthetic)");
    int usage;
    sv_status st = run_eval(&o, proc, &usage);
    return sv_cmd_exit("eval", st, usage);
}
