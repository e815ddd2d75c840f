/* Fuzz target: TensorBoard event file decoder (TFRecord framing, masked CRC32C, Event and
 * Summary protobufs). */
#include <stdint.h>
#include <stdlib.h>

#include "formats/tensorboard.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_quiet();
    for (int allow = 0; allow <= 1; allow++) {
        sv_tb_events ev;
        sv_status s = sv_tb_decode(data, size, "fuzz.tfevents", allow, &ev);
        if (s == SV_OK) {
            for (size_t i = 0; i < ev.n; i++)
                if (ev.items[i].tag == NULL) abort();
            if (ev.n > ev.cap) abort();
        }
        sv_tb_events_free(&ev);
    }
    return 0;
}
