/* Fuzz target: checkpoint index.json validation (sv_ckpt_index_load): format and version,
 * model config, layout, training state, unit/tensor tables and per-file chunk tables. An index
 * it accepts must be self-consistent enough for a reader to trust it. */
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "ckpt/checkpoint.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_quiet();
    char dir[600], path[700];
    fuzz_path(dir, sizeof dir, "step_00000001");
    mkdir(dir, 0755);
    snprintf(path, sizeof path, "%s/index.json", dir);
    fuzz_write_file(path, data, size);
    sv_ckpt_index idx;
    if (sv_ckpt_index_load(&idx, dir) == SV_OK) {
        if (idx.shard_world <= 0 || idx.n_units <= 0 || idx.n_tensors <= 0) abort();
        if (idx.state.data_known && idx.state.data_samples == 0) abort(); /* train_data: samples >= 1 */
        for (int u = 0; u < idx.n_units; u++) {
            const sv_ckpt_unit *U = &idx.units[u];
            if (U->first_tensor < 0 || U->n_tensors < 0 || U->first_tensor + U->n_tensors > idx.n_tensors) abort();
            if (U->numel > U->padded || U->shard * (uint64_t)idx.shard_world != U->padded) abort();
        }
        for (int t = 0; t < idx.n_tensors; t++) {
            const sv_ckpt_tensor *T = &idx.tensors[t];
            if (T->unit < 0 || T->unit >= idx.n_units) abort();
            if (T->offset + T->numel > idx.units[T->unit].numel) abort();
            (void)sv_ckpt_find_tensor(&idx, T->name);
        }
        for (int r = 0; r < idx.shard_world; r++) {
            const sv_ckpt_file *F = &idx.files[r];
            for (size_t c = 0; c < F->n_chunks; c++) {
                if (F->chunks[c].offset + F->chunks[c].nbytes > F->bytes) abort();
                if (c && F->chunks[c].offset < F->chunks[c - 1].offset + F->chunks[c - 1].nbytes) abort();
            }
        }
        /* a relayout of an accepted index must work for a few world sizes */
        for (int w = 1; w <= 3; w++) {
            sv_ckpt_index re;
            if (sv_ckpt_index_relayout(&re, &idx, w) == SV_OK) sv_ckpt_index_free(&re);
        }
    }
    sv_ckpt_index_free(&idx);
    return 0;
}
