/* shardvit report: one self-contained HTML file (inline SVG, no scripts, no network) from a run
 * directory: curves from metrics.jsonl, the evaluation, and the per-rank trace summary. */
#include <stdio.h>
#include <stdlib.h>

#include "app/commands.h"
#include "app/flags.h"
#include "app/provenance.h"
#include "core/log.h"
#include "eval/report.h"

int sv_cmd_report(int argc, char **argv, const sv_proc *proc) {
    const char *out = NULL, *trace = NULL;
    /* clang-format off: one flag per line */
    sv_flag flags[] = {
        {"out", SV_FLAG_STR, &out, 0, 0, "HTML file to write (default RUN_DIR/report.html)", 0},
        {"trace", SV_FLAG_STR, &trace, 0, 0, "trace JSON to summarise (default RUN_DIR/trace.json when present)", 0},
        SV_FLAG_END};
    /* clang-format on */
    sv_cmd_spec spec = {
        "report", "shardvit report RUN_DIR [--out FILE.html] [--trace FILE.json]",
        "Write one self-contained HTML report of a training run: loss, accuracy, learning rate, "
        "throughput and memory curves (metrics.jsonl; raw and weight-EMA evaluations of a --model-ema run, "
        "drawn and tabulated side by side), the evaluation summary and confusion matrix "
        "(eval.json, confusion.csv) and, with a trace, compute vs communication per rank.",
        1};
    char *pos[1];
    int npos;
    int rc = sv_cmd_parse(&spec, flags, argc, argv, pos, &npos, 1, "missing RUN_DIR (a train --out directory)");
    if (rc >= 0) return rc;
    char def[4096];
    if (!out) {
        snprintf(def, sizeof def, "%s/report.html", pos[0]);
        out = def;
    }
    sv_provenance p;
    sv_provenance_fill(&p, "report", proc, 1, -1);
    char *prov = sv_provenance_json(&p, flags);
    sv_status st = sv_report_write(pos[0], trace, out, prov);
    free(prov);
    if (st != SV_OK) return sv_app_fail("report", st);
    SV_INFO("wrote %s", out);
    return 0;
}
