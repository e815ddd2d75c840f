/* shardvit core: this process's resource use, as `bench` reports it and `train`'s closing line
 * states it: CPU seconds, and the peak resident set size, both over the process's life and (Linux)
 * since a reset of its high-water mark, so a measurement can leave out what ran before it. */
#ifndef SV_CORE_PROCSTAT_H
#define SV_CORE_PROCSTAT_H

/* CPU seconds (user + system, all threads) this process has consumed (getrusage). */
double sv_proc_cpu_seconds(void);
/* The process's lifetime peak RSS in bytes (getrusage ru_maxrss). */
double sv_proc_max_rss_bytes(void);
/* Free heap memory goes back to the system (glibc malloc_trim), then the peak RSS restarts from
 * the current RSS (Linux: "5" written to /proc/self/clear_refs resets VmHWM). 1 when the reset
 * took place, 0 where it could not. */
int sv_proc_rss_peak_reset(void);
/* The peak RSS in bytes since sv_proc_rss_peak_reset (VmHWM of /proc/self/status), or -1 when it
 * cannot be read. */
double sv_proc_rss_peak_bytes(void);

#endif
