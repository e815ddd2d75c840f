/* shardvit core: path arithmetic of core/fileio.h (declared there): a path's parent, its real
 * path where it need not exist, lexical joins, absolute paths, containment. Nothing here opens a
 * file; sv_fileio_real_path and sv_fileio_absolute ask the file system (realpath, getcwd). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/fileio.h"

sv_status sv_fileio_parent(const char *path, char *dir) {
    const char *slash = strrchr(path, '/');
    size_t n = !slash ? 0 : slash == path ? 1 : (size_t)(slash - path);
    if (n >= PATH_MAX) return SV_FAIL(SV_ERR_INVALID, "path too long: %s", path);
    if (!slash)
        snprintf(dir, PATH_MAX, ".");
    else {
        memcpy(dir, path, n);
        dir[n] = 0;
    }
    return SV_OK;
}

/* The real path of p, which need not exist: realpath() of its deepest existing prefix, then the
 * missing components applied lexically ("." dropped, ".." removes one component), as the
 * directories a command creates there will be plain directories. out: PATH_MAX bytes. */
sv_status sv_fileio_real_path(const char *p, char *out) {
    char buf[PATH_MAX];
    size_t n = strlen(p), cut = n;
    if (n == 0 || n >= sizeof buf) return SV_FAIL(SV_ERR_INVALID, "path empty or too long: %.200s", p);
    memcpy(buf, p, n + 1);
    for (;;) { /* buf[0, cut) is the prefix tried */
        char save = buf[cut];
        buf[cut] = 0;
        int ok = realpath(cut ? buf : ".", out) != NULL, e = errno;
        buf[cut] = save;
        if (ok) break;
        if (e != ENOENT) return SV_FAIL(SV_ERR_IO, "resolve %s: %s", p, strerror(e));
        size_t k = cut;
        while (k > 0 && buf[k - 1] == '/') k--;
        while (k > 0 && buf[k - 1] != '/') k--; /* k: start of the last component */
        if (k == 0)
            cut = 0;
        else {
            while (k > 1 && buf[k - 1] == '/') k--;
            cut = k; /* "/x" -> "/", "a/x" -> "a" */
        }
    }
    if (sv_fileio_lexical_append(out, PATH_MAX, buf + cut, SV_FILEIO_DOTDOT_POP) != SV_OK) {
        sv_err_prefix(p);
        sv_err_frame(__FILE__, __LINE__);
        return SV_ERR_INVALID;
    }
    return SV_OK;
}

sv_status sv_fileio_lexical_append(char *out, size_t cap, const char *rel, int dotdot) {
    size_t o = strlen(out);
    for (const char *c = rel; *c;) {
        size_t n = strcspn(c, "/");
        if (n == 2 && c[0] == '.' && c[1] == '.') {
            if (dotdot != SV_FILEIO_DOTDOT_POP)
                return SV_FAIL(SV_ERR_INVALID, "%.200s: a \"..\" component where none is allowed", rel);
            char *s = strrchr(out, '/');
            if (s && s != out)
                *s = 0;
            else if (s)
                out[1] = 0; /* "/" stays "/" */
            else if (o)
                out[0] = 0; /* "a" -> "" */
            else
                return SV_FAIL(SV_ERR_INVALID, "%.200s: \"..\" climbs above the relative path it is joined to", rel);
            o = strlen(out);
        } else if (n && !(n == 1 && c[0] == '.')) {
            size_t sep = o && out[o - 1] != '/';
            if (o + sep + n >= cap)
                return SV_FAIL(SV_ERR_INVALID, "path too long: joining %.200s makes a path of %zu bytes or more", rel,
                               cap);
            if (sep) out[o++] = '/';
            memcpy(out + o, c, n);
            o += n;
            out[o] = 0;
        }
        c += n;
        while (*c == '/') c++;
    }
    return SV_OK;
}

sv_status sv_fileio_absolute(const char *p, char *out) {
    size_t n = strlen(p);
    if (n == 0 || n >= PATH_MAX) return SV_FAIL(SV_ERR_INVALID, "path empty or too long: %.200s", p);
    if (p[0] == '/') {
        memcpy(out, p, n + 1);
        return SV_OK;
    }
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd))
        return SV_FAIL(SV_ERR_IO, "%s: the working directory cannot be read (%s)", p, strerror(errno));
    if ((size_t)snprintf(out, PATH_MAX, "%s/%s", cwd, p) >= PATH_MAX)
        return SV_FAIL(SV_ERR_INVALID, "path too long: %.200s", p);
    return SV_OK;
}

int sv_fileio_path_inside(const char *a, const char *dir) {
    size_t n = strlen(dir);
    if (n == 1 && dir[0] == '/') return 1;
    return !strncmp(a, dir, n) && (a[n] == 0 || a[n] == '/');
}
