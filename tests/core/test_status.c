/* The error trace (core/status.h sv_err_frame, sv_err_trace): frames in order with their file's
 * base name; one call site recorded on every level of a recursion appears once with its count; a
 * different frame after a counted one starts a new entry; a frame that matches only a prefix of
 * the last one ("x.c:37" after "x.c:377") is a new frame; a trace that outgrows its buffer ends
 * in " <- ..." and stays bounded; a new error and sv_err_clear start afresh. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "core/status.h"

/* A recursive reader failing at the bottom: each level passes the error up through one site. */
static sv_status nest(int depth) {
    if (depth == 0) return SV_FAIL(SV_ERR_FORMAT, "too deep");
    SV_TRY(nest(depth - 1));
    return SV_OK;
}

int main(void) {
    sv_fail_at(SV_ERR_IO, "/src/core/a.c", 10, "m");
    sv_err_frame("/src/core/b.c", 20);
    sv_err_frame("c.c", 30);
    CHECK(!strcmp(sv_err_trace(), "a.c:10 <- b.c:20 <- c.c:30"));

    sv_fail_at(SV_ERR_IO, "a.c", 10, "m");
    for (int i = 0; i < 34; i++) sv_err_frame("json.c", 377);
    CHECK(!strcmp(sv_err_trace(), "a.c:10 <- json.c:377 (x34)"));
    sv_err_frame("json.c", 37); /* a prefix of the last frame: another frame */
    sv_err_frame("json.c", 37);
    sv_err_frame("report.c", 415);
    CHECK(!strcmp(sv_err_trace(), "a.c:10 <- json.c:377 (x34) <- json.c:37 (x2) <- report.c:415"));

    /* the first frame itself repeated */
    sv_fail_at(SV_ERR_IO, "a.c", 10, "m");
    sv_err_frame("a.c", 10);
    CHECK(!strcmp(sv_err_trace(), "a.c:10 (x2)"));

    /* the real macros through a recursion 500 levels deep: one line */
    CHECK(nest(500) == SV_ERR_FORMAT);
    const char *t = sv_err_trace();
    CHECK(strstr(t, "(x500)") != NULL);
    CHECK(strlen(t) < 64);
    CHECK(!strcmp(sv_err_msg(), "too deep"));

    /* distinct frames beyond the buffer: bounded, marked, nothing recorded after the mark */
    sv_fail_at(SV_ERR_IO, "a.c", 1, "m");
    for (int i = 0; i < 200; i++) sv_err_frame("some_long_file_name.c", 1000 + i);
    t = sv_err_trace();
    size_t n = strlen(t);
    CHECK(n < 512);
    CHECK(n > 7 && !strcmp(t + n - 7, " <- ..."));
    sv_err_frame("some_long_file_name.c", 1199);
    CHECK(strlen(sv_err_trace()) == n);

    /* a frame counted past 10000 wherever it lands in the buffer, up to its very end: the trace
     * stays bounded and the end mark still fits after it */
    for (int k = 0; k < 8 * 70; k++) {
        sv_fail_at(SV_ERR_IO, "a.c", 1, "m");
        char shift[16] = "sssssss"; /* a frame of 7 to 14 characters, so the count lands anywhere */
        shift[k % 8] = 0;
        sv_err_frame(shift, 1);
        for (int i = 0; i < k / 8; i++) sv_err_frame("yy", 1000 + i);
        for (int i = 0; i < 10000; i++) sv_err_frame("x.c", 7);
        for (int i = 0; i < 50; i++) sv_err_frame("z.c", 1000 + i);
        t = sv_err_trace();
        n = strlen(t);
        CHECK(n < 512);
        CHECK(n > 7 && !strcmp(t + n - 7, " <- ..."));
    }

    sv_err_clear();
    CHECK(!strcmp(sv_err_trace(), "") && !strcmp(sv_err_msg(), ""));
    sv_fail_at(SV_ERR_IO, "a.c", 2, "m");
    CHECK(!strcmp(sv_err_trace(), "a.c:2"));
    printf("test_status: ok\n");
    return 0;
}
