/* core/trace.h lane sums: every event recorded adds its duration to its track's `lane_us`, kept in
 * the event array or dropped past its capacity, and a sums-only tracer (sv_trace_init_sums) keeps
 * the same sums without an array; sv_trace_comm_lane_s adds the collective tracks. bench's and the
 * step simulator's time split come from these sums (an array of 65536 events once cut a long run's
 * split short). Exact: durations are small integers in microseconds. */
#include <stdio.h>

#include "check.h"
#include "core/trace.h"

int main(void) {
    sv_trace kept, sums, off;
    CHECK_OK(sv_trace_init(&kept, 4, 0)); /* room for 4 events: the other 16 are dropped */
    sv_trace_init_sums(&sums, 0);
    CHECK_OK(sv_trace_init(&off, 0, 0));
    CHECK(sv_trace_on(&kept) && sv_trace_on(&sums) && !sv_trace_on(&off));
    double want[SV_TRACE_TRACKS] = {0};
    for (int i = 0; i < 20; i++) {
        int tid = i % SV_TRACE_TRACKS;
        double b = 10.0 * i, e = b + 1 + i; /* duration 1 + i us */
        sv_trace_add(&kept, "ev", tid == SV_TRACE_COMPUTE ? "compute" : "comm", tid, i, b, e);
        sv_trace_add(&sums, "ev", tid == SV_TRACE_COMPUTE ? "compute" : "comm", tid, i, b, e);
        sv_trace_add(&off, "ev", "compute", tid, i, b, e);
        want[tid] += 1 + i;
    }
    sv_trace_add(&kept, "backwards", "compute", SV_TRACE_COMPUTE, 0, 50, 40); /* end before begin: 0 */
    CHECK(kept.n == 4 && kept.dropped == 17);
    CHECK(sums.n == 0 && sums.dropped == 0);
    for (int t = 0; t < SV_TRACE_TRACKS; t++) {
        CHECK(kept.lane_us[t] == want[t]);
        CHECK(sums.lane_us[t] == want[t]);
        CHECK(off.lane_us[t] == 0);
    }
    double comm = want[SV_TRACE_ALL_GATHER] + want[SV_TRACE_ALL_REDUCE];
    for (int k = 0; k < 3; k++) comm += want[SV_TRACE_REDUCE_SCATTER + k];
    CHECK(sv_trace_comm_lane_s(&kept) == comm * 1e-6 && sv_trace_comm_lane_s(&sums) == comm * 1e-6);
    printf("test_trace_lanes: 21 events, 4 kept, 17 dropped: every track's sum exact (compute %.0f us, comm %.0f us)\n",
           kept.lane_us[SV_TRACE_COMPUTE], comm);
    sv_trace_free(&kept);
    sv_trace_free(&sums);
    sv_trace_free(&off);
    return 0;
}
