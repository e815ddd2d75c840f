/* Subcommands of the shardvit binary. Each returns the process exit code: 0 success, 1 runtime
 * failure (message printed), 2 usage error (one line naming the flag). */
#ifndef SV_APP_COMMANDS_H
#define SV_APP_COMMANDS_H

#include "core/status.h"

typedef struct sv_proc {
    int rank, world, local_rank, local_size;
} sv_proc;

int sv_cmd_train(int argc, char **argv, const sv_proc *proc);
int sv_cmd_bench(int argc, char **argv, const sv_proc *proc);
int sv_cmd_info(int argc, char **argv, const sv_proc *proc);
int sv_cmd_plan(int argc, char **argv, const sv_proc *proc);
int sv_cmd_prep(int argc, char **argv, const sv_proc *proc);
int sv_cmd_eval(int argc, char **argv, const sv_proc *proc);
int sv_cmd_predict(int argc, char **argv, const sv_proc *proc);
int sv_cmd_report(int argc, char **argv, const sv_proc *proc);
int sv_cmd_reshard(int argc, char **argv, const sv_proc *proc);
int sv_cmd_export(int argc, char **argv, const sv_proc *proc);
int sv_cmd_import(int argc, char **argv, const sv_proc *proc);
int sv_cmd_version(int argc, char **argv, const sv_proc *proc);
int sv_cmd_bench_compare(int argc, char **argv, const sv_proc *proc);

/* Print "shardvit CMD: error: <message> (<status>) [trace]" and return 1. */
int sv_app_fail(const char *cmd, sv_status st);

/* A command's exit code for the status its work ended with: 0 for SV_OK; 2 with the usage line
 * "shardvit CMD: <message>" (sv_cmd_usage_error) when st is SV_ERR_INVALID and `usage` (a bad
 * flag value or combination found while setting up); else sv_app_fail's 1. */
int sv_cmd_exit(const char *cmd, sv_status st, int usage);

#endif
