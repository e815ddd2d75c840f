/* shardvit core: file I/O helpers for checkpoints, exports and run outputs.
 *
 * Every error names the path (and byte range where relevant) and the errno text. Writes retry
 * on EINTR and short writes; reads report truncation as SV_ERR_CORRUPT with the range asked for
 * and the bytes that were there.
 *
 * Fault injection for tests: after sv_fileio_inject_write_fault(N), every file opened with
 * sv_fileio_out_open accepts N bytes in total and every write beyond fails with ENOSPC ("No
 * space left on device"), as a full disk would. app/ sets it from the environment variable
 * SHARDVIT_FAULT_WRITE_FAIL_AFTER_BYTES (SV_FILEIO_FAULT_ENV, named in the injected error;
 * app/env_overrides.h); nothing in core reads the environment. After
 * sv_fileio_inject_write_stall(N) a write beyond N bytes of such a file writes what fits and then
 * waits for a signal for ever (SHARDVIT_FAULT_WRITE_STALL_AFTER_BYTES, SV_FILEIO_STALL_ENV): a
 * test's deterministic "the command is in the middle of writing" for signal handling.
 *
 * The path arithmetic (sv_fileio_parent, _real_path, _lexical_append, _absolute, _path_inside) is
 * in core/fileio_path.c. */
#ifndef SV_CORE_FILEIO_H
#define SV_CORE_FILEIO_H

#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/status.h"

#define SV_FILEIO_FAULT_ENV "SHARDVIT_FAULT_WRITE_FAIL_AFTER_BYTES"
#define SV_FILEIO_STALL_ENV "SHARDVIT_FAULT_WRITE_STALL_AFTER_BYTES"

/* Files opened from now on fail their writes after `after_bytes` bytes (see above); < 0: off
 * (the default). Process-wide; set it before the threads that write files start. */
void sv_fileio_inject_write_fault(long long after_bytes);
/* Files opened from now on stall in the write that passes `after_bytes` (see above); < 0: off. */
void sv_fileio_inject_write_stall(long long after_bytes);

/* An output file being written (caller-owned struct, initialised by _open). */
typedef struct sv_fileio_out {
    int fd;             /* -1 when closed */
    uint64_t written;   /* bytes written so far */
    int64_t fail_after; /* fault injection budget, -1 = off */
    char path[PATH_MAX + 32];
} sv_fileio_out;

/* Create/truncate `path` for writing (mode 0644). exclusive != 0: fail with SV_ERR_IO if the
 * file exists (O_EXCL). Path longer than the struct holds => SV_ERR_INVALID. */
sv_status sv_fileio_out_open(sv_fileio_out *f, const char *path, int exclusive);
/* Open a fresh temporary beside `path` for writing (sv_fileio_tmp_file: "<path>.tmp-XXXXXXXX",
 * O_EXCL); f->path holds its name, to be renamed over `path` once written and synced. */
sv_status sv_fileio_out_open_tmp(sv_fileio_out *f, const char *path);
/* Write all n bytes (EINTR and short writes handled). */
sv_status sv_fileio_out_write(sv_fileio_out *f, const void *buf, size_t n);
/* fsync the file's data and metadata. */
sv_status sv_fileio_out_sync(sv_fileio_out *f);
/* Close; reports a failing close (which can carry a deferred write error). fd becomes -1. */
sv_status sv_fileio_out_close(sv_fileio_out *f);
/* Close ignoring errors and unlink the file (cleanup after a failed write). Safe when closed. */
void sv_fileio_out_abort(sv_fileio_out *f);
/* Finish a temporary from sv_fileio_out_open_tmp: fsync, close, rename it over `path`, fsync
 * the directory. On any failure the temporary is removed and `path` keeps what it had. */
sv_status sv_fileio_out_commit(sv_fileio_out *f, const char *path);

/* Plain-fd helpers; `path` is only used in messages. */
sv_status sv_fileio_write_all(int fd, const void *buf, size_t n, const char *path);
/* Read exactly n bytes at offset `off`; a short file is SV_ERR_CORRUPT naming the range. */
sv_status sv_fileio_pread_exact(int fd, void *buf, size_t n, uint64_t off, const char *path);
sv_status sv_fileio_fsync(int fd, const char *path);
/* fsync a directory so renames/creations inside it are durable. */
sv_status sv_fileio_fsync_dir(const char *dir);
/* fsync the directory containing `path` ("." when path has no slash). */
sv_status sv_fileio_fsync_parent(const char *path);
/* The directory that holds path, lexically: "." for a bare name, "/" for a name at the root,
 * else path up to its last '/' (dir: PATH_MAX bytes). SV_ERR_INVALID when it does not fit. */
sv_status sv_fileio_parent(const char *path, char *dir);

/* Open an existing regular file read-only; *size_out (nullable) receives its size. A directory,
 * FIFO, socket or device is an SV_ERR_INVALID error naming the path (a FIFO never blocks the
 * open: it is opened non-blocking and refused after fstat). */
sv_status sv_fileio_open_read(const char *path, int *fd_out, uint64_t *size_out);

#define SV_FILEIO_TRUNC 0  /* create or truncate */
#define SV_FILEIO_APPEND 1 /* create or open "a+": reads from the start, writes at the end */
#define SV_FILEIO_NEW 2    /* create; an existing entry of that name is an error (O_EXCL) */
/* Open `path` for writing as a stdio stream (created with mode 0666 less the umask), mode one of
 * SV_FILEIO_TRUNC / _APPEND / _NEW. Never through a symbolic
 * link (O_NOFOLLOW) and never a FIFO, socket or device (refused after fstat; opening a FIFO never
 * blocks): SV_ERR_INVALID naming the path; other failures SV_ERR_IO with errno's text. For
 * outputs whose path was checked before (ckpt/ckpt_out.h): a link or FIFO swapped in since is
 * refused rather than written through. */
sv_status sv_fileio_fopen_write(const char *path, int mode, FILE **out);

/* Create a new empty file "<path>.tmp-XXXXXXXX" (a name that differs per process, call and
 * attempt; mode 0644 less the umask) with O_EXCL next to path, so that an existing entry of that
 * name, a symbolic link included, is never opened; its name into tmp (cap bytes). fd (nullable)
 * receives the open descriptor (write-only), else it is closed. The caller owns the file (unlink
 * it on failure). */
sv_status sv_fileio_tmp_file(const char *path, char *tmp, size_t cap, int *fd);
/* The same for a new empty directory (mode 0755 less the umask); parents of path must exist. */
sv_status sv_fileio_tmp_dir(const char *path, char *tmp, size_t cap);
/* 1 when the file name `name` is one these two functions give beside a path whose last
 * component is `base` ("<base>.tmp-" and 8 lowercase hex digits), else 0. */
int sv_fileio_is_tmp_name(const char *name, const char *base);
/* Rename the temporary directory `from` (of sv_fileio_tmp_dir) to "<base>.tmp-XXXXXXXX" with the
 * same XXXXXXXX (its path into `to`, cap bytes), which must not exist, and keep it a temporary
 * under its new name (removed on the signals below until renamed into place with
 * sv_fileio_rename). SV_OK once renamed (the parent's fsync is not waited for: a temporary needs
 * no durability); on failure `from` is left as it was, still a temporary. */
sv_status sv_fileio_tmp_dir_rebase(const char *from, const char *base, char *to, size_t cap);

/* For commands without signal handling of their own (export, reshard, import, prep, eval,
 * predict, report): on SIGINT, SIGTERM, SIGHUP or SIGPIPE (a closed pipe on stdout / stderr),
 * remove every temporary of the two functions above that has not been renamed into place yet (a
 * directory with what is in it), then the directories sv_fileio_mkdirs_made created and not yet
 * kept or removed (the last made first, each only while empty), then die of the signal as before (the default action, re-raised). A
 * signal ignored at the call (nohup) stays ignored. Temporaries are tracked from the first call
 * of those functions on, whether or not this is called. Not for train, which stops at a step
 * boundary on a signal. */
void sv_fileio_remove_tmp_on_signals(void);
/* A file of this process that the handlers above remove like a temporary until untracked (a
 * --trace part: written by each rank, merged and removed by rank 0). */
void sv_fileio_tmp_track(const char *path);
void sv_fileio_tmp_untrack(const char *path);
/* A host-wide lock among this program's writers into directory `dir`: an exclusive flock on
 * "$TMPDIR/shardvit-TAG-DEV-INO.lock" (/tmp without an absolute TMPDIR; DEV and INO: dir's
 * device and inode), so nothing is added to dir and a user's own `flock DIR ...` around the
 * command is another lock. wait = 0 only tries. Returns the descriptor (held), SV_FILEIO_LOCK_BUSY
 * (another process holds it; only with wait = 0) or -1 (no lock to be had: dir missing, a
 * temporary directory without room). `lock` (PATH_MAX bytes) receives the file's path for
 * sv_fileio_dir_unlock, which removes the file while still holding it, so none is left behind: a
 * waiter that then holds a file no longer at that name opens the name again. A signal handled by
 * sv_fileio_remove_tmp_on_signals removes a held lock file like a temporary. */
#define SV_FILEIO_LOCK_BUSY (-2)
int sv_fileio_dir_lock(const char *dir, const char *tag, int wait, char *lock);
void sv_fileio_dir_unlock(int fd, const char *lock);

/* A group of renames that must not be cut by those signals (export's weights, config.json and
 * classes.txt; eval's eval.json and confusion.csv): begin holds SIGINT, SIGTERM, SIGHUP and
 * SIGPIPE off in the calling thread (a handler running on another thread waits for the group, up
 * to a minute), end lets them in again, and one that came meanwhile is handled then, once the
 * group is complete. saved: the thread's earlier mask. */
void sv_fileio_commit_begin(sigset_t *saved);
void sv_fileio_commit_end(const sigset_t *saved);

/* Rename the temporary `tmp` (a file or directory beside path) over `path`, then fsync path's
 * directory. no_replace: fail instead of replacing an entry that appeared meanwhile (renameat2
 * RENAME_NOREPLACE; where the file system lacks it, an lstat check just before a plain rename).
 * The temporary stays on failure (the caller owns it). */
sv_status sv_fileio_rename(const char *tmp, const char *path, int no_replace);

/* Atomically replace `path` with `n` bytes: write a fresh temporary beside it
 * (sv_fileio_tmp_file), fsync, rename over `path`, fsync the directory. A crash leaves either
 * the old or the new content (and possibly the temporary); a failure removes the temporary.
 * Honours the write-fault injection of sv_fileio_out. */
sv_status sv_fileio_write_atomic(const char *path, const void *buf, size_t n);

/* mkdir -p with `mode` for created directories; existing directories are fine, an existing
 * non-directory is an error. */
sv_status sv_fileio_mkdirs(const char *path, mode_t mode);
/* The directories one sv_fileio_mkdirs_made call created (caller-owned; about 8 KiB). */
typedef struct sv_fileio_made_dirs {
    char path[PATH_MAX];                  /* the path given */
    int n;                                /* directories created: path[0, len[i]) for i < n */
    unsigned short len[PATH_MAX / 2 + 1]; /* in the order made, the shallowest first */
} sv_fileio_made_dirs;
/* sv_fileio_mkdirs recording exactly the directories it created (an existing one, or one reached
 * again through "..", is not), each also registered with the signal clean-up of
 * sv_fileio_remove_tmp_on_signals until it is kept or removed. On failure it removes what it
 * made and made->n is 0. For an output whose missing parents must go again if the command
 * fails: sv_fileio_made_dirs_remove then removes them, the last made first, each only while it
 * is empty (rmdir), so nothing this call did not create and nothing put there since is removed;
 * sv_fileio_made_dirs_keep keeps them (on success). Both forget the registrations, set n to 0. */
sv_status sv_fileio_mkdirs_made(const char *path, mode_t mode, sv_fileio_made_dirs *made);
void sv_fileio_made_dirs_remove(sv_fileio_made_dirs *made);
void sv_fileio_made_dirs_keep(sv_fileio_made_dirs *made);
/* The real path of p, which need not exist: realpath(3) of its deepest existing prefix, then the
 * missing components applied lexically (sv_fileio_lexical_append, ".." removing one), as the
 * directories created there will be plain directories. Relative paths resolve against the
 * working directory. out: PATH_MAX bytes. SV_ERR_IO for a prefix that cannot be resolved for
 * another reason than ENOENT. */
sv_status sv_fileio_real_path(const char *p, char *out);
/* ".." in sv_fileio_lexical_append: removes the last component, or is refused. */
#define SV_FILEIO_DOTDOT_POP 0
#define SV_FILEIO_DOTDOT_REFUSE 1
/* Append the components of path rel to the path in out (cap bytes, NUL-terminated: "", "/", or a
 * path that does not end in '/'), lexically: nothing is resolved and the file system is not
 * consulted. rel is split at '/' and always taken relative to out (a leading '/' is one more
 * separator); empty and "." components are dropped; any other component but ".." is appended
 * after a '/' (none after an empty out or "/": "" + "./a//b/" = "a/b", "/" + "a" = "/a", "/x" +
 * "a" = "/x/a"). ".." with dotdot SV_FILEIO_DOTDOT_POP removes out's last component ("/a" ->
 * "/", "a/b" -> "a", "a" -> ""; "/" stays "/"), and is an error when a relative out has no
 * component left to remove (the result would lie above where it started); with
 * SV_FILEIO_DOTDOT_REFUSE any ".." is an error. Errors: SV_ERR_INVALID naming rel, for a ".."
 * as above or a result of cap bytes or more; out's content is then unspecified. */
sv_status sv_fileio_lexical_append(char *out, size_t cap, const char *rel, int dotdot);
/* p made absolute without resolving anything: an absolute p is copied, a relative one is
 * appended to the working directory (getcwd). For recording a path the user gave so that it
 * means the same from another directory. out: PATH_MAX bytes. */
sv_status sv_fileio_absolute(const char *p, char *out);
/* What a file of stat mode m is, for error messages: "a regular file", "a directory", "a
 * symbolic link", "a FIFO", "a socket", "a device node". */
const char *sv_fileio_mode_kind(mode_t m);
/* 1 when real path a is dir or lies below it (component-wise; every path is inside "/"). */
int sv_fileio_path_inside(const char *a, const char *dir);

/* rm -r: remove `path` and everything below it. Symbolic links are removed, never followed;
 * `path` itself being a symlink is refused (SV_ERR_INVALID) so a planted link cannot redirect
 * the removal to another tree. A missing path is SV_ERR_NOT_FOUND. Deeper than 64 levels =>
 * SV_ERR_INVALID. A plain file is simply unlinked. */
sv_status sv_fileio_remove_tree(const char *path);

/* Read a whole (small) file into a malloc'd, NUL-terminated buffer (*out, free() it).
 * Larger than max_bytes => SV_ERR_INVALID naming the size and limit. */
sv_status sv_fileio_read_small(const char *path, size_t max_bytes, char **out, size_t *len);

/* Does `path` name a regular file whose first n bytes are prefix[0..n)? 0 for anything else: a
 * missing or unreadable path, a symbolic link (not followed), a directory, FIFO (the open never
 * blocks), socket or device, a file shorter than n. No error state is left behind. For
 * recognising a file this program wrote earlier before replacing it. */
int sv_fileio_starts_with(const char *path, const void *prefix, size_t n);

#endif
