/* Command-line flags for every subcommand (README.md "Commands"; tests/cli/cli.sh).
 *
 * A subcommand declares a table of flags bound to fields of its options struct. Flags are long
 * form, "--name value" or "--name=value"; booleans take no value ("--recompute") or an explicit
 * "=true|false|1|0". "--config FILE" reads key=value lines first (TOML-style "key = value" with
 * optional quotes and # comments; keys are flag names without "--"); command-line flags then
 * override the file. Unknown flags and bad values produce one line naming the flag and the
 * accepted range, and exit code 2. */
#ifndef SV_APP_FLAGS_H
#define SV_APP_FLAGS_H

#include <stddef.h>
#include <stdio.h>

typedef enum { SV_FLAG_INT, SV_FLAG_I64, SV_FLAG_DOUBLE, SV_FLAG_STR, SV_FLAG_BOOL } sv_flag_type;

typedef struct sv_flag {
    const char *name; /* without "--" */
    sv_flag_type type;
    void *ptr;       /* int*, long long*, double*, const char**, int* (bool) */
    double min, max; /* numeric range (inclusive); ignored for strings/bools */
    const char *help;
    int seen; /* set by the parser: SV_FLAG_FROM_CONFIG (in --config), SV_FLAG_FROM_ARGV (on the command line,
                 which wins), 0: not given */
} sv_flag;
enum { SV_FLAG_FROM_CONFIG = 1, SV_FLAG_FROM_ARGV = 2 };

#define SV_FLAG_END \
    { NULL, SV_FLAG_BOOL, NULL, 0, 0, NULL, 0 }

typedef struct sv_cmd_spec {
    const char *name;    /* "train" */
    const char *usage;   /* "shardvit train [flags]" */
    const char *summary; /* one paragraph */
    int max_positional;  /* accepted positional arguments */
} sv_cmd_spec;

/* Parse argv (argv[0] is the subcommand name). Positional arguments are stored in pos
 * (pointers into argv), count in *npos.
 * Returns 0 on success, 1 when --help was printed (exit 0), 2 on a usage error (message
 * already printed to stderr; exit 2). */
int sv_flags_parse(const sv_cmd_spec *spec, sv_flag *flags, int argc, char **argv, char **pos, int *npos);

/* A command's preamble: sv_flags_parse, then, when npos_want >= 0 and the number of positional
 * arguments differs, "shardvit <cmd>: <wrong_count>" on stderr. Returns -1 to go on, else the
 * exit code: 0 after --help, 2 for a usage error. *npos (nullable) receives the count. */
int sv_cmd_parse(const sv_cmd_spec *spec, sv_flag *flags, int argc, char **argv, char **pos, int *npos, int npos_want,
                 const char *wrong_count);
/* "shardvit <cmd>: <formatted message>" on stderr as one line (one write, whatever its length);
 * returns 2 (the usage-error exit code). Every usage error of every command goes through here. */
int sv_cmd_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Print the help text of a subcommand. */
void sv_flags_help(const sv_cmd_spec *spec, const sv_flag *flags, FILE *out);

/* Print the resolved configuration (every flag and its value) as "key = value" lines (core/kv.h:
 * strings as escaped basic strings), which `--config` reads back unchanged. */
void sv_flags_dump(const sv_flag *flags, FILE *out);

/* The same as one JSON object {"name": value, ...} in table order (unset strings are null). */
struct sv_json_writer;
void sv_flags_dump_json(const sv_flag *flags, struct sv_json_writer *w);

/* Look up whether a flag was given explicitly: its `seen` (0: no; SV_FLAG_FROM_CONFIG or
 * SV_FLAG_FROM_ARGV: where). */
int sv_flag_seen(const sv_flag *flags, const char *name);
/* The --config file the last sv_flags_parse read (a pointer into its argv), NULL without one. */
const char *sv_flags_config_path(void);

/* Parse a size like "24G", "512M", "1.5GiB", "4096" into bytes; -1 on error. */
long long sv_parse_bytes(const char *s);

#endif
