/* The FSDP unit state machine's transition checks (SV_FSDP_CHECK, fsdp/fsdp.c) fire: a unit put
 * into a state its next transition may not start from makes the step fail cleanly with
 * SV_ERR_INVALID naming the transition, the unit and the state (no crash, no hang, the rig can
 * be torn down), while a correct step leaves every unit SHARDED. The wrong states are injected
 * through the public unit table: before the step (a unit REDUCING or falsely UNSHARDED), and from the
 * model's progress hook in the middle of the backward pass (post_backward / reshard of a unit
 * that was taken back to SHARDED while its gradients were being computed). */
#include "model_rig.h"

static sv_vit_config tiny(void) {
    sv_vit_config vc = {
        .img = 8, .patch = 4, .in_chans = 3, .num_classes = 5, .dim = 12, .depth = 3, .heads = 3, .mlp_ratio = 2.0};
    snprintf(vc.name, sizeof vc.name, "custom");
    return vc;
}

static void fresh(rig *r) {
    sv_vit_config vc = tiny();
    rig_opts o = {.B = 4, .seed = 3};
    rig_init(r, &vc, &o);
    float images[4 * 3 * 8 * 8];
    int32_t labels[4];
    rig_make_batch(r, 11, images, labels);
    rig_set_batch(r, images, labels);
}

static sv_status step(rig *r) {
    return sv_fsdp_forward_backward(&r->f, r->d_images, r->d_labels, NULL, 0.0f, 1.0f / (float)r->B, 0, 1);
}

static void all_sharded(const rig *r, const char *when) {
    for (int u = 0; u < r->f.L.n_units; u++)
        if (r->f.us[u].state != SV_UNIT_SHARDED) {
            fprintf(stderr, "FAIL: unit %d is %s %s\n", u, sv_unit_phase_name(r->f.us[u].state), when);
            exit(1);
        }
}

static void expect_refusal(sv_status st, const char *want) {
    CHECK(st == SV_ERR_INVALID);
    if (!strstr(sv_err_msg(), want)) {
        fprintf(stderr, "FAIL: error '%s' lacks '%s'\n", sv_err_msg(), want);
        exit(1);
    }
    printf("ok refused: %s\n", sv_err_msg());
}

/* Progress hook for the mid-backward injection: forwards to FSDP's own hook, and once the
 * backward has begun (a unit holds gradients being reduced or computed: grad_slot >= 0) puts the
 * first unit that is UNSHARDED for its backward back to SHARDED. */
typedef struct inject {
    rig *r;
    sv_status (*inner)(void *);
    void *inner_ctx;
    int done, unit;
} inject;

static sv_status inject_hook(void *ctx) {
    inject *in = ctx;
    sv_fsdp *f = &in->r->f;
    if (!in->done)
        for (int u = f->L.n_units - 1; u >= 1; u--)
            if (f->us[u].state == SV_UNIT_UNSHARDED && f->us[u].grad_slot >= 0) {
                f->us[u].state = SV_UNIT_SHARDED;
                in->done = 1, in->unit = u;
                break;
            }
    return in->inner ? in->inner(in->inner_ctx) : SV_OK;
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    rig r;
    /* a correct step: every unit back to SHARDED at the end */
    fresh(&r);
    all_sharded(&r, "before the first step");
    CHECK_OK(step(&r));
    all_sharded(&r, "after a step");
    CHECK_OK(step(&r));
    all_sharded(&r, "after a second step");

    /* a unit UNSHARDED without a gathered buffer: unshard leaves it (as FSDP2 does), its
     * wait_unshard refuses it before the block reads parameters that are not there */
    r.f.us[2].state = SV_UNIT_UNSHARDED;
    expect_refusal(step(&r), "wait_unshard of unit 2: state UNSHARDED without gathered parameters");
    rig_free(&r);
    fresh(&r);
    r.f.us[1].state = SV_UNIT_REDUCING;
    expect_refusal(step(&r), "unshard of unit 1 from state REDUCING");
    rig_free(&r);

    /* mid-backward: the unit whose gradients are being computed is taken back to SHARDED */
    fresh(&r);
    inject in = {.r = &r, .inner = r.m.progress, .inner_ctx = r.m.progress_ctx};
    r.m.progress = inject_hook;
    r.m.progress_ctx = &in;
    sv_status st = step(&r);
    CHECK(in.done);
    char want[64];
    snprintf(want, sizeof want, "of unit %d from state SHARDED", in.unit);
    expect_refusal(st, want);
    rig_free(&r);

    /* the rig is usable again after a refusal: a fresh step succeeds */
    fresh(&r);
    CHECK_OK(step(&r));
    all_sharded(&r, "after the refusals");
    rig_free(&r);
    printf("fsdp states: all passed\n");
    return 0;
}
