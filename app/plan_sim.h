/* `shardvit plan --simulate | --suggest-wrap | --sweep` (docs/simulate.md): the command-line
 * side of the step-time simulator (app/simulate.h). */
#ifndef SV_APP_PLAN_SIM_H
#define SV_APP_PLAN_SIM_H

#include "app/simulate.h"

typedef struct sv_plan_sim_args {
    sv_sim_opts sim;
    int simulate, suggest, json;
    const char *sweep;                /* "key=v1,v2 key=..." or NULL */
    const char *format;               /* sweep rows: jsonl | csv */
    long long mem;                    /* bytes per rank, < 0 = no budget */
    const struct sv_provenance *prov; /* written into --json / --sweep jsonl results (nullable) */
    const sv_flag *flags;             /* the command's flags, the provenance's config */
} sv_plan_sim_args;

/* Runs the requested mode; returns the process exit code (0 ok, 2 bad flags, 1 failure). */
int sv_plan_sim_run(sv_plan_sim_args *a);

#endif
