/* shardvit data: distributed sampler arithmetic (pure functions, no state of its own).
 *
 * Epoch order: a permutation of [0, n) that is a pure function of (seed, epoch) (train) or the
 * identity (eval). Global position p of an epoch maps to dataset index perm[p]. The global
 * batch is G = batch_local * world; a batch starting at `cursor` covers positions
 * [cursor, cursor + G), rank r owns [cursor + r*batch_local, cursor + (r+1)*batch_local).
 * Train drops the incomplete tail (drop_last): an epoch has floor(n/G) batches. Eval keeps it:
 * ceil(n/G) batches, positions >= n are padding. With gradient accumulation over A batches the
 * loader passes n = sv_sampler_epoch_len(n, G, A): the tail is dropped at the optimizer's batch
 * A*G, so an epoch holds a whole number of optimizer steps. */
#ifndef SV_DATA_SAMPLER_H
#define SV_DATA_SAMPLER_H

#include <stdint.h>

/* Fill perm (n entries) with epoch `epoch`'s permutation (Fisher-Yates on counter RNG). */
void sv_sampler_perm(uint64_t seed, uint64_t epoch, uint32_t *perm, uint64_t n);

/* Normalise a position: train moves (epoch, cursor) with cursor + G > n to (epoch+1, 0).
 * Returns 0 when eval has no batch left at cursor (cursor >= n), 1 otherwise. */
int sv_sampler_normalise(int train, uint64_t n, uint64_t G, uint64_t *epoch, uint64_t *cursor);

/* Repeated augmentation (--aug-repeats K, DeiT RASampler / timm RepeatAugSampler): the epoch
 * stream lists every permuted sample K times, perm[0] x K, perm[1] x K, ..., and an epoch keeps
 * its length (floor(n/G) batches, so only the first floor(n/G) * G / K permuted samples are
 * used, each exactly K times). Inside a global batch the G stream entries are laid out
 * copy-major so the K copies of a sample are G/K positions apart: global position p (batch
 * s = p / G, offset i = p % G) holds copy c = i / (G/K) of permuted sample
 * u = s * (G/K) + i % (G/K). With world >= K the copies land on K different ranks (rank
 * blocks are G/world <= G/K long). Requires G % K == 0; a pure function of (G, K, p), hence the
 * same at any world size with the same G. */
static inline void sv_sampler_repeat(uint64_t G, uint64_t K, uint64_t p, uint64_t *u, uint32_t *copy) {
    uint64_t per = G / K, i = p % G;
    *u = (p / G) * per + i % per;
    *copy = (uint32_t)(i / per);
}

/* Positions a training epoch uses when A batches of G make one optimizer step (A >= 1). */
static inline uint64_t sv_sampler_epoch_len(uint64_t n, uint64_t G, uint64_t A) { return n / (G * A) * (G * A); }

static inline uint64_t sv_sampler_steps(int train, uint64_t n, uint64_t G) { return train ? n / G : (n + G - 1) / G; }

#endif
