/* Fuzz target: safetensors file image -> sv_safetensors_open_mem (header length, JSON header,
 * dtype/shape/offset validation), then reads from every tensor it accepted. */
#include <stdint.h>
#include <stdlib.h>

#include "formats/safetensors.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_quiet();
    sv_st_file f;
    if (sv_safetensors_open_mem(&f, data, size, "fuzz.safetensors") != SV_OK) return 0;
    /* an accepted file must be fully readable within the image */
    for (size_t i = 0; i < f.n_tensors; i++) {
        const sv_st_tensor *t = &f.tensors[i];
        if (t->offset + t->nbytes > size) abort();
        if (sv_safetensors_find(&f, t->name) == NULL) abort();
        uint8_t raw[64];
        uint64_t nb = t->nbytes < sizeof raw ? t->nbytes : sizeof raw;
        if (sv_safetensors_read_raw(&f, t, 0, nb, raw) != SV_OK) abort();
        if (t->nbytes) (void)sv_safetensors_read_raw(&f, t, t->nbytes - 1, 2, raw); /* past the end: error */
        float v[8];
        uint64_t cnt = t->numel < 8 ? t->numel : 8;
        sv_status s = sv_safetensors_read_f32(&f, t, t->numel - cnt, cnt, v);
        if (s != SV_OK && (t->dtype == SV_ST_F32 || t->dtype == SV_ST_BF16 || t->dtype == SV_ST_F16)) abort();
    }
    for (size_t i = 0; i < f.n_meta; i++)
        if (sv_safetensors_meta(&f, f.meta[i].key) == NULL) abort();
    sv_safetensors_close(&f);
    return 0;
}
