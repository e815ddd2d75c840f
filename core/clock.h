/* The process's one monotonic clock: seconds on the CLOCK_MONOTONIC time base.
 *
 * sv_now_s() is read on hot paths (every collective's issue, wait start and completion; every
 * trace event), where clock_gettime costs ~27 ns in a KVM guest: three reads per collective
 * were ~10% of a 1 KiB all-gather. Where the kernel itself trusts the TSC (x86-64 with
 * `current_clocksource` = tsc, i.e. invariant and synchronised across cores), the clock is the
 * TSC (~10 ns) mapped onto CLOCK_MONOTONIC:
 *   now = mono_a + (tsc - tsc_a) * seconds_per_tick,
 * with the anchor (mono_a, tsc_a) re-read from clock_gettime once its age exceeds 1 ms and
 * seconds_per_tick measured over the longest baseline seen so far (first anchor → latest
 * anchor). So the value never strays from CLOCK_MONOTONIC by more than the rate error over
 * 1 ms plus the ~30 ns it takes to read one (mono, tsc) pair, and durations are exact to the
 * rate error (< 1e-7 after the first second). Until the first 1 ms has passed in a thread,
 * every call reads clock_gettime. Every re-anchor also checks the estimate against the fresh
 * clock_gettime reading: more than 20 us (+1% of the anchor's age) off, or the TSC behind the
 * anchor (a TSC jump or reset across suspend, or drift), restarts the calibration, so such an
 * event costs at most one anchor period of error, not a skewed rate. Values are non-decreasing
 * per thread (a re-anchor that would step back by a few ns returns the previous value). State
 * is per thread; no locks. A call more than 1 ms after the thread's previous one re-anchors, so
 * it costs one clock_gettime plus two rdtsc (slightly more than clock_gettime alone).
 *
 * Elsewhere (other architectures, or a kernel on another clocksource) sv_now_s() is
 * clock_gettime(CLOCK_MONOTONIC). sv_clock_use_mono forces that (app/ calls it for
 * SHARDVIT_CLOCK=mono, app/env_overrides.h). */
#ifndef SV_CORE_CLOCK_H
#define SV_CORE_CLOCK_H

double sv_now_s(void); /* monotonic seconds (CLOCK_MONOTONIC base), or the virtual clock below */

/* The step-time simulator (sim/, `shardvit plan --simulate`) runs the engine's own code on a
 * virtual clock: while `now_s` is set, sv_now_s() returns *now_s, so every timestamp the engine,
 * the communicators and the tracer take is simulated time. NULL restores the real clock. Set it
 * only in a single-threaded process (the simulator's); the real-time measurements of the
 * simulator's calibration use sv_now_real_s(). */
void sv_clock_set_virtual(const double *now_s);
double sv_now_real_s(void); /* the real clock, whatever sv_clock_set_virtual says */

/* Run sv_now_s() on clock_gettime(CLOCK_MONOTONIC) even where the TSC would be used. Call it
 * before the process's first clock read (a switch later may step a thread's values back by the
 * TSC estimate's sub-microsecond error). */
void sv_clock_use_mono(void);

/* 1 if sv_now_s() runs on the TSC in this process, 0 if on clock_gettime. */
int sv_clock_uses_tsc(void);

#endif
