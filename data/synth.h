/* shardvit data: synthetic images with class structure.
 *
 * One generator serves both the in-memory `--data synthetic` source and the synthetic
 * ImageNet-like JPEG set of `prep synthetic`. Each class k of a task (task_seed) has fixed
 * parameters: two colours of a sinusoidal grating with a class-specific orientation and
 * frequency, and a colour blob at a class-specific place. Each sample jitters them (phase,
 * small angle and position shifts, brightness, background gradient) and adds pixel noise, so
 * the task is learnable but not trivial. Content is a pure function of
 * (task_seed, index, w, h, channels): no state, thread-safe. */
#ifndef SV_DATA_SYNTH_H
#define SV_DATA_SYNTH_H

#include <stdint.h>

/* Label of sample `index` in a K-class task: index % K (balanced). */
static inline int sv_synth_label(uint64_t index, int K) { return (int)(index % (uint64_t)K); }

/* Render sample `index` of class `label` as w x h x channels (1 or 3) bytes, row-major HWC. */
void sv_synth_render(uint64_t task_seed, uint64_t index, int label, int w, int h, int channels, uint8_t *out);

#endif
