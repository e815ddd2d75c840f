/* shardvit ckpt: the rules every command follows for the files and directories it writes
 * (export, reshard, eval, report, bench and plan outputs; docs/checkpoints.md "Outputs"). One place, so that no output
 * path destroys something the command did not create:
 *   - an output never lies inside the checkpoint the command reads: not in its step directory
 *     (or below it), and not in the checkpoint root that holds it (the directory with the step_*
 *     directories and `latest`: CKPT itself, RUN/checkpoints, or a step directory's parent when
 *     that is a checkpoint root). A run directory outside its checkpoint root is not protected.
 *     Checked on real paths (symbolic links and `..` resolved; for outputs whose parents do not
 *     exist yet, the deepest existing parent);
 *   - an existing output is replaced only when it is a regular file, never a directory, FIFO,
 *     device node, socket or symbolic link (lstat: a link is refused, not followed), and, for
 *     outputs of a recognisable kind, only when it is an earlier output of that kind;
 *   - temporaries get fresh names ("<path>.tmp-XXXXXXXX", created with O_EXCL / mkdir, so an
 *     existing file of that name is never opened), and on failure only the temporaries this
 *     process created are removed.
 * Checks and the final rename are separate steps: a concurrent process that swaps a path in
 * between is not defended against (nothing in shardvit races with itself). Train's config.toml,
 * metrics.jsonl and classes.txt and the per-rank --trace parts open through sv_fileio_fopen_write
 * (core/fileio.h), which never writes through a link or FIFO swapped in since the check; the
 * merged --trace file is staged in a temporary and renamed (core/trace.h sv_trace_merge). */
#ifndef SV_CKPT_CKPT_OUT_H
#define SV_CKPT_CKPT_OUT_H

#include <stddef.h>

#include "core/status.h"

/* Check output `path` (what = "export output", "reshard output", ... for messages).
 * protect: a checkpoint step directory the command reads (nullable, as sv_ckpt_resolve gave it):
 * path must not be inside it, nor be `latest` in its parent directory, nor lie inside its
 * checkpoint root (its parent as given or its real parent, when that directory has a `latest`
 * entry, as the roots train writes; the error names the root). must_not_exist: any existing
 * entry at path is an error; otherwise an existing entry must be a regular file. SV_ERR_INVALID
 * naming the path. */
sv_status sv_ckpt_out_check(const char *path, const char *protect, int must_not_exist, const char *what);

/* 1 when `path` (real path, resolved as above; it need not exist) lies inside a checkpoint step
 * directory (a directory that holds index.json and a shard_*-of-*.bin file, the layout
 * ckpt/checkpoint.h writes) or below one; 2 when it is the `latest` file of a checkpoint root (a
 * directory with a step_* subdirectory that is a step directory); the step directory or root
 * found goes to dir (nullable, cap bytes). 0 otherwise, and when path cannot be resolved. */
int sv_ckpt_out_in_step_dir(const char *path, char *dir, size_t cap);
/* For commands that read no checkpoint (report, bench, plan): sv_ckpt_out_check(path, NULL, 0,
 * what), and path must not be inside any checkpoint step directory nor a root's `latest`
 * (sv_ckpt_out_in_step_dir). SV_ERR_INVALID naming the path. */
sv_status sv_ckpt_out_check_free(const char *path, const char *what);

/* For the directories train writes (--out, --ckpt-dir): path (resolved as above; it need not
 * exist) is not a checkpoint step directory nor inside one, nor a root's `latest`
 * (sv_ckpt_out_in_step_dir), and it does not lie below a checkpoint root as train makes one (a
 * directory with a `latest` entry and a step_* step directory). SV_ERR_INVALID naming the path
 * and the step directory or root, "choose a path outside it": a run placed there would be taken
 * for part of that run's checkpoints (and, in a step directory, kept from its retention). */
sv_status sv_ckpt_out_check_run_dir(const char *path, const char *what);

/* For an output of a recognisable kind (report, bench, plan and train outputs): sv_ckpt_out_check_free,
 * and an existing file at path is replaced only when earlier(path, ctx) recognises it as an
 * earlier output of that kind (by its content, e.g. the opening bytes or JSON members that kind
 * always writes; earlier must not follow a symbolic link nor block on a FIFO); else SV_ERR_INVALID
 * "WHAT PATH exists and is not an earlier KIND: refusing to replace it", so that a user's file is
 * never destroyed. Check before any work starts. */
typedef int (*sv_ckpt_out_earlier_fn)(const char *path, const void *ctx);
sv_status sv_ckpt_out_check_earlier(const char *path, const char *what, sv_ckpt_out_earlier_fn earlier, const void *ctx,
                                    const char *kind);

/* For outputs written into an existing directory (bench, plan and report outputs, which create no
 * directories): the directory that would hold path exists, is a directory and this process may
 * write in it (sv_ckpt_out_check_writable), checked before any work so that a run's result is not
 * thrown away at the end. SV_ERR_INVALID naming path. */
sv_status sv_ckpt_out_check_parent(const char *path, const char *what);
/* The deepest existing part of dir (dir itself, or the ancestor under which its missing
 * directories would be made) is a directory this process may write in: faccessat(W_OK | X_OK,
 * AT_EACCESS) with its effective ids and capabilities, which also says so on a read-only file system. SV_ERR_INVALID naming it and the reason. */
sv_status sv_ckpt_out_check_writable(const char *dir, const char *what);

/* The n outputs of one command (paths[i] nullable: not given; what[i] its flag) name n different
 * files (compared as real paths, sv_fileio_real_path), so that no output overwrites another;
 * SV_ERR_INVALID naming both flags otherwise. */
sv_status sv_ckpt_out_distinct(const char *const *paths, const char *const *what, int n);

/* Temporaries beside an output: sv_fileio_tmp_file / sv_fileio_tmp_dir (core/fileio.h), renamed
 * over the path sv_ckpt_out_check accepted with sv_fileio_rename (sv_fileio_out_commit for an
 * sv_fileio_out); a whole small output at once: sv_fileio_write_atomic. */

#endif
