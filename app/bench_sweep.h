/* `shardvit bench --sweep`: one training-step benchmark per configuration of a grid, one row per
 * configuration in a CSV file (columns named as timm's benchmark.py CSV where the quantity is the
 * same, so results sit side by side; docs/performance.md "Sweeps") and/or a JSONL file (each line
 * the configuration's full bench result, provenance included).
 *
 * Grid: items "key=v1,v2,..." (the --sweep value and the bench command's positional arguments),
 * keys: models (alias model), batch (alias batch-size), param-dtype (alias precision), strategy.
 * The product is run models-outermost, in the order given. A key not named keeps its flag value. */
#ifndef SV_APP_BENCH_SWEEP_H
#define SV_APP_BENCH_SWEEP_H

#include <stdio.h>

#include "core/status.h"

enum { SV_SWEEP_MODELS, SV_SWEEP_BATCH, SV_SWEEP_DTYPE, SV_SWEEP_STRATEGY, SV_SWEEP_KEYS };
#define SV_SWEEP_MAX_VALUES 32

typedef struct sv_sweep {
    char buf[4096];                                    /* the values, NUL-separated */
    const char *v[SV_SWEEP_KEYS][SV_SWEEP_MAX_VALUES]; /* into buf */
    int n[SV_SWEEP_KEYS];                              /* 0: key not swept */
} sv_sweep;

/* Parse the items (SV_ERR_INVALID naming --sweep and the item on a bad key or an empty list). */
sv_status sv_sweep_parse(sv_sweep *sw, const char *const *items, int n_items);
/* Configurations in the grid (the product of the non-empty lists) and configuration i's values:
 * out[k] = the value of key k, or NULL when the key is not swept. */
int sv_sweep_count(const sv_sweep *sw);
void sv_sweep_config(const sv_sweep *sw, int i, const char *out[SV_SWEEP_KEYS]);

/* One result (the bench JSON text, provenance included) as a CSV row (the header first when
 * `header`) and/or a JSONL line; csv / jsonl may be NULL. SV_ERR_IO when a stream is in error
 * (nothing is flushed here: the caller flushes and reports where its streams go). */
sv_status sv_sweep_write_row(const char *result_json, FILE *csv, FILE *jsonl, int header);
/* Is path an earlier --sweep-csv file: a regular file (a symbolic link is not followed, a FIFO
 * never blocks) that starts with the header line sv_sweep_write_row writes? (ctx unused: the
 * shape of ckpt/ckpt_out.h's recognisers.) An earlier --json result is recognised by
 * app/provenance.h sv_provenance_file_of(path, "bench"), an earlier --sweep-jsonl file by
 * sv_provenance_jsonl_of. */
int sv_sweep_csv_is_earlier(const char *path, const void *unused);

#endif
