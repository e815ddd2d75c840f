/* shardvit: one binary, git-style subcommands (DESIGN §8). The only place that exits. */
#include <stdio.h>
#include <string.h>

#include "app/commands.h"
#include "app/mpi_env.h"
#include "core/log.h"

typedef struct {
    const char *name;
    int (*run)(int, char **, const sv_proc *);
    int uses_mpi;
    const char *help;
} command;

static const command k_commands[] = {
    {"train", sv_cmd_train, 1, "train a ViT with FSDP (use mpiexec -n N for N ranks)"},
    {"info", sv_cmd_info, 0, "parameter table, counts and FLOPs of a model"},
    {"prep", sv_cmd_prep, 0, "import Fashion-MNIST/MNIST/CIFAR or generate a synthetic JPEG set"},
};

int sv_app_fail(const char *cmd, sv_status st) {
    fprintf(stderr, "shardvit %s: error: %s (%s) [at %s]\n", cmd, sv_err_msg(), sv_status_str(st), sv_err_trace());
    return 1;
}

static void usage(FILE *out) {
    fprintf(out, "usage: shardvit <command> [flags]   (shardvit <command> --help for its flags)\n\ncommands:\n");
    for (size_t i = 0; i < sizeof k_commands / sizeof k_commands[0]; i++)
        fprintf(out, "  %-10s %s\n", k_commands[i].name, k_commands[i].help);
}

int main(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    const command *cmd = NULL;
    for (size_t i = 0; i < sizeof k_commands / sizeof k_commands[0]; i++)
        if (!strcmp(argv[1], k_commands[i].name)) cmd = &k_commands[i];
    if (!cmd) {
        fprintf(stderr, "shardvit: unknown command '%s' (see shardvit --help)\n", argv[1]);
        return 2;
    }
    sv_proc proc = {0, 1, 0, 1};
    if (cmd->uses_mpi) {
        sv_mpi_env_init(&argc, &argv, &proc.rank, &proc.world);
        sv_mpi_env_local(&proc.local_rank, &proc.local_size);
    }
    sv_log_setup(proc.rank, SV_LOG_INFO, 0);
    int rc = cmd->run(argc - 1, argv + 1, &proc);
    if (cmd->uses_mpi) {
        /* A runtime failure on one rank must not leave the others waiting in a collective. */
        if (rc == 1 && proc.world > 1) sv_mpi_env_abort(1);
        sv_mpi_env_finalize();
    }
    return rc;
}
