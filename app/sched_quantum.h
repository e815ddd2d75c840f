/* The time-sharing quantum of this machine's scheduler: how long a runnable thread waits for a
 * core that another runnable thread holds. `plan --simulate` needs it for oversubscribed CPU runs
 * (more ranks x threads than cores, docs/fsdp.md): a collective that progresses while the ranks
 * compute moves one round (ring step) each time its partner rank gets a core back, i.e. once per
 * quantum.
 *
 * Measured, not assumed (it is the kernel's tick on kernels whose time slices expire at tick
 * boundaries: 4 ms with HZ = 250, 1 ms with HZ = 1000): the calling thread and a spinning helper
 * thread are pinned to the calling thread's current CPU, the caller calls sched_yield in a loop
 * for `seconds`, and the median of the yields that gave the core away (longer than 50 us) is the
 * quantum. The caller's affinity is restored. Returns 0 where it cannot be measured (not Linux,
 * affinity refused, no yield gave the core away). */
#ifndef SV_APP_SCHED_QUANTUM_H
#define SV_APP_SCHED_QUANTUM_H

double sv_sched_quantum_s(double seconds);

#endif
