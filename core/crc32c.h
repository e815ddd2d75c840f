/* shardvit core: CRC32C (Castagnoli, reflected polynomial 0x82F63B78).
 *
 * Used for checkpoint shard checksums (index.json) and TFRecord framing. The convention is
 * zlib's: the running value starts at 0 and the pre/post inversion happens inside, so
 *   sv_crc32c_update(sv_crc32c_update(0, a, na), b, nb) == sv_crc32c_update(0, a||b, na+nb)
 * and sv_crc32c("123456789", 9) == 0xE3069283.
 * On x86-64 CPUs with SSE4.2 the crc32 instruction is used (checked at run time); elsewhere a
 * slicing-by-8 table (a compile-time constant) is used. Both give identical results. Stateless
 * and thread-safe. */
#ifndef SV_CORE_CRC32C_H
#define SV_CORE_CRC32C_H

#include <stddef.h>
#include <stdint.h>

uint32_t sv_crc32c_update(uint32_t crc, const void *buf, size_t n);
static inline uint32_t sv_crc32c(const void *buf, size_t n) { return sv_crc32c_update(0, buf, n); }

/* The two implementations, exposed so tests can compare them. _hw falls back to _sw when the
 * CPU lacks SSE4.2 (sv_crc32c_have_hw() says which). */
uint32_t sv_crc32c_update_sw(uint32_t crc, const void *buf, size_t n);
uint32_t sv_crc32c_update_hw(uint32_t crc, const void *buf, size_t n);
int sv_crc32c_have_hw(void);

/* TFRecord/TensorBoard masked CRC: rotate right by 15 and add a constant, so that a CRC stored
 * inside CRC'd data does not weaken the check. */
static inline uint32_t sv_crc32c_mask(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }
static inline uint32_t sv_crc32c_unmask(uint32_t masked) {
    uint32_t rot = masked - 0xa282ead8u;
    return (rot >> 17) | (rot << 15);
}

#endif
