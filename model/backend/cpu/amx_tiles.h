/* CPU backend: the AMX tile configuration both AMX users share (gemm_amx.c, isa_peak.c): palette 1,
 * tiles 0..7 each 16 rows x 64 bytes (a 16 x 16 fp32 tile, or 16 rows x 32 bf16). The layout is
 * the 64-byte memory operand of LDTILECFG; the caller loads it with _tile_loadconfig on the thread
 * that uses the tiles (the configuration is per thread). */
#ifndef SV_MODEL_BACKEND_CPU_AMX_TILES_H
#define SV_MODEL_BACKEND_CPU_AMX_TILES_H

#include <stdint.h>
#include <string.h>

typedef struct sv_amx_tilecfg {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} sv_amx_tilecfg;

static inline void sv_amx_tilecfg_16x64(sv_amx_tilecfg *c) {
    memset(c, 0, sizeof *c);
    c->palette = 1;
    for (int t = 0; t < 8; t++) c->colsb[t] = 64, c->rows[t] = 16;
}

#endif
