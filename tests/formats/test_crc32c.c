/* core/crc32c: published check values (RFC 3720 B.4 iSCSI vectors, the "123456789" check),
 * incremental updates at every split, table path vs hardware path vs a bitwise definition on
 * random data of every alignment, and the TFRecord mask. */
#include <stdint.h>
#include <string.h>

#include "core/crc32c.h"
#include "fmt_util.h"

/* The definition: reflected CRC-32C, bit by bit. */
static uint32_t crc_bitwise(const uint8_t *p, size_t n) {
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int b = 0; b < 8; b++) c = (c >> 1) ^ ((c & 1) ? 0x82f63b78u : 0);
    }
    return ~c;
}

int main(void) {
    CHECK(sv_crc32c("123456789", 9) == 0xE3069283u);
    CHECK(sv_crc32c_update_sw(0, "123456789", 9) == 0xE3069283u);
    CHECK(sv_crc32c("", 0) == 0);
    uint8_t buf[48];
    memset(buf, 0, 32);
    CHECK(sv_crc32c(buf, 32) == 0x8A9136AAu); /* RFC 3720 B.4: 32 bytes of zeros */
    memset(buf, 0xff, 32);
    CHECK(sv_crc32c(buf, 32) == 0x62A8AB43u); /* 32 bytes of ones */
    for (int i = 0; i < 32; i++) buf[i] = (uint8_t)i;
    CHECK(sv_crc32c(buf, 32) == 0x46DD794Eu); /* incrementing */
    for (int i = 0; i < 32; i++) buf[i] = (uint8_t)(31 - i);
    CHECK(sv_crc32c(buf, 32) == 0x113FDB5Cu); /* decrementing */
    static const uint8_t iscsi_read[48] = {0x01, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                                           0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00,
                                           0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x18, 0x28, 0x00, 0x00, 0x00,
                                           0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
    CHECK(sv_crc32c(iscsi_read, 48) == 0xD9963A56u); /* RFC 3720 B.4: SCSI read command PDU */

    /* incremental == one shot, for every split point */
    const char *s = "The quick brown fox jumps over the lazy dog";
    size_t n = strlen(s);
    uint32_t whole = sv_crc32c(s, n);
    CHECK(whole == crc_bitwise((const uint8_t *)s, n));
    for (size_t k = 0; k <= n; k++) CHECK(sv_crc32c_update(sv_crc32c(s, k), s + k, n - k) == whole);

    /* every length 0..300 at every alignment 0..7, both implementations, vs the definition:
     * exercises all eight slicing tables and the unaligned head/tail loops */
    static uint8_t data[320];
    uint64_t rs = 7;
    for (size_t i = 0; i < sizeof data; i++) data[i] = (uint8_t)fmt_rand(&rs);
    for (size_t off = 0; off < 8; off++)
        for (size_t len = 0; len + off <= 308; len++) {
            uint32_t ref = crc_bitwise(data + off, len);
            CHECK(sv_crc32c_update_sw(0, data + off, len) == ref);
            CHECK(sv_crc32c_update_hw(0, data + off, len) == ref);
        }
    printf("hardware crc32c path: %s\n", sv_crc32c_have_hw() ? "used" : "not available");

    /* mask: the TFRecord definition, and unmask inverts it */
    uint32_t c = 0xE3069283u;
    CHECK(sv_crc32c_mask(c) == (((c >> 15) | (c << 17)) + 0xa282ead8u));
    CHECK(sv_crc32c_mask(0) == 0xa282ead8u);
    for (int i = 0; i < 1000; i++) {
        uint32_t v = (uint32_t)fmt_rand(&rs);
        CHECK(sv_crc32c_unmask(sv_crc32c_mask(v)) == v);
    }
    printf("test_crc32c: ok\n");
    return 0;
}
