/* "key = value" lines: the TOML subset that `--config` reads and a run's config.toml is written
 * in (app/flags.h), and that `report` reads config.toml with.
 *
 * A line is blank, a comment ('#' to the end of the line), or `key = value`. A value is
 *   - a basic string "..." with TOML's escapes: \" \\ \n \r \t \b \f \uXXXX \UXXXXXXXX (the
 *     code point written as UTF-8; NUL, surrogates and values above U+10FFFF are errors);
 *   - a literal string '...' (no escapes);
 *   - or bare text up to a '#' or the end of the line, blanks around it dropped.
 * After a quoted value only blanks and a comment may follow. Table headers ("[name]") are not
 * part of the subset; as in TOML, a key may appear once per file (readers refuse a repeat). sv_kv_write_str writes every string as a basic string, so any byte string
 * (quotes, '#', backslashes, line breaks, control characters) reads back unchanged. */
#ifndef SV_CORE_KV_H
#define SV_CORE_KV_H

#include <stddef.h>
#include <stdio.h>

#include "core/status.h"

/* Parse one line (NUL-terminated, without its line break; modified in place). Returns 0 for a
 * blank or comment line, 1 for a key/value line (*key and *value point into s, NUL-terminated;
 * the key with the blanks around it dropped), -1 for a malformed line with *err a static message
 * ("expected 'key = value'", "table headers ('[...]') are not supported", ...). */
int sv_kv_parse_line(char *s, char **key, char **value, const char **err);

/* Write `key = "value"` and a line break, value as a basic string (escaped as above). */
void sv_kv_write_str(FILE *out, const char *key, const char *value);

/* The value of `key` in the file at `path` (read with sv_fileio_read_small, at most 1 MiB);
 * *found = 0 when the key is absent. Keys compare with '_' and '-' as one (`ckpt_dir` is
 * `ckpt-dir`, as --config reads them). A malformed line, or the key given twice (TOML forbids it;
 * `ckpt_dir` and `ckpt-dir` count as twice),
 * is SV_ERR_FORMAT naming the file and the line(s); a value longer than cap - 1 bytes is
 * SV_ERR_INVALID. */
sv_status sv_kv_file_get(const char *path, const char *key, char *out, size_t cap, int *found);

#endif
