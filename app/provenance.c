#include "app/provenance.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "app/mpi_env.h"
#include "core/json.h"
#include "fsdp/comm.h"
#include "model/backend/cpu/cpu_info.h"
#include "sv_build_info.h"

#if defined(__has_include)
#if __has_include(<jconfig.h>)
#include <jconfig.h>
#endif
#endif

/* OpenBLAS's own description of itself ("OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY SkylakeX
 * MAX_THREADS=64"); weak, so a BLAS without it reads as unknown instead of failing to link. */
extern char *openblas_get_config(void) __attribute__((weak));

static double g_start = -1;

double sv_wall_time(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void sv_wall_time_iso(double t, char *buf, size_t cap) {
    time_t s = (time_t)t;
    int ms = (int)((t - (double)s) * 1000.0);
    if (ms > 999) ms = 999;
    struct tm tm;
    gmtime_r(&s, &tm);
    char day[24];
    if (!strftime(day, sizeof day, "%Y-%m-%dT%H:%M:%S", &tm)) day[0] = 0;
    snprintf(buf, cap, "%.20s.%03dZ", day, ms < 0 ? 0 : ms);
}

void sv_provenance_mark_start(void) {
    if (g_start < 0) g_start = sv_wall_time();
}

/* The first loaded shared object whose file name contains `needle`, resolved to its real file. */
typedef struct find_lib {
    const char *needle;
    char *out;
    size_t cap;
} find_lib;

static int find_cb(struct dl_phdr_info *info, size_t size, void *ctx) {
    (void)size;
    find_lib *f = ctx;
    const char *name = info->dlpi_name;
    if (!name || !name[0]) return 0;
    const char *base = strrchr(name, '/');
    if (!strstr(base ? base + 1 : name, f->needle)) return 0;
    char real[PATH_MAX];
    snprintf(f->out, f->cap, "%s", realpath(name, real) ? real : name);
    return 1;
}

static void loaded_file(const char *needle, char *out, size_t cap) {
    find_lib f = {needle, out, cap};
    out[0] = 0;
    dl_iterate_phdr(find_cb, &f);
}

#define SV_STR2(x) #x
#define SV_STR(x) SV_STR2(x)

void sv_provenance_fill(sv_provenance *p, const char *command, const sv_proc *proc, int threads_per_rank,
                        int cuda_device) {
    memset(p, 0, sizeof *p);
    sv_provenance_mark_start();
    p->version = SV_BUILD_VERSION;
    p->commit = SV_BUILD_COMMIT;
    p->describe = SV_BUILD_DESCRIBE;
    p->dirty = SV_BUILD_DIRTY;
    p->build_type = SV_BUILD_TYPE;
    p->cuda_compiler = SV_BUILD_CUDA_COMPILER;
    p->build_cuda = SV_BUILD_CUDA;
    p->build_mpi = SV_BUILD_MPI;
#if defined(__clang__)
    snprintf(p->compiler, sizeof p->compiler, "clang %s", __clang_version__);
#elif defined(__GNUC__)
    snprintf(p->compiler, sizeof p->compiler, "gcc %s", __VERSION__);
#else
    snprintf(p->compiler, sizeof p->compiler, "unknown");
#endif
    sv_mpi_env_library_version(p->mpi.version, sizeof p->mpi.version);
    loaded_file("libmpi", p->mpi.file, sizeof p->mpi.file);
    if (openblas_get_config) snprintf(p->openblas.version, sizeof p->openblas.version, "%s", openblas_get_config());
    loaded_file("libopenblas", p->openblas.file, sizeof p->openblas.file);
#ifdef LIBJPEG_TURBO_VERSION
    snprintf(p->turbojpeg.version, sizeof p->turbojpeg.version, "%s", SV_STR(LIBJPEG_TURBO_VERSION));
#endif
    loaded_file("libturbojpeg", p->turbojpeg.file, sizeof p->turbojpeg.file);
    p->cuda_in_use = cuda_device >= 0;
    if (p->cuda_in_use) {
        p->nccl_version = sv_comm_nccl_version();
        sv_gpu_info_query(cuda_device, &p->gpu);
    }
    if (gethostname(p->host, sizeof p->host - 1) != 0) snprintf(p->host, sizeof p->host, "unknown");
    sv_cpu_model_name(p->cpu_model, sizeof p->cpu_model);
    sv_cpu_isa_features(p->isa, sizeof p->isa);
    sv_cpu_gemm_engines_available(p->gemm_engines, sizeof p->gemm_engines);
    p->kernels_compiled = sv_cpu_kernels_compiled();
    p->kernels_dispatch = sv_cpu_kernels_dispatch();
    sv_cpu_identity(&p->cpu_id);
    p->gelu_bwd16 = sv_cpu_gelu_bwd16_form();
    p->command = command;
    p->world = proc ? proc->world : 1;
    p->ranks_per_node = proc && proc->local_size > 0 ? proc->local_size : 1;
    p->threads_per_rank = threads_per_rank;
    p->start_unix = g_start;
    sv_wall_time_iso(g_start, p->start_utc, sizeof p->start_utc);
}

static void str_or_null(sv_json_writer *w, const char *key, const char *s) {
    sv_json_key(w, key);
    if (s && s[0])
        sv_json_str(w, s);
    else
        sv_json_null(w);
}

static void list(sv_json_writer *w, const char *key, const char *csv) {
    sv_json_key(w, key);
    sv_json_arr_begin(w);
    for (const char *s = csv; s && *s;) {
        size_t n = strcspn(s, ",");
        sv_json_strn(w, s, n);
        s += n + (s[n] == ',');
    }
    sv_json_arr_end(w);
}

static void lib(sv_json_writer *w, const char *key, const sv_prov_lib *l) {
    sv_json_key(w, key);
    if (!l->version[0] && !l->file[0]) {
        sv_json_null(w);
        return;
    }
    sv_json_obj_begin(w);
    str_or_null(w, "version", l->version);
    str_or_null(w, "file", l->file);
    sv_json_obj_end(w);
}

static void cuda_ver(sv_json_writer *w, const char *key, int v, int on) {
    char b[32];
    snprintf(b, sizeof b, "%d.%d", v / 1000, v % 1000 / 10);
    str_or_null(w, key, on && v > 0 ? b : NULL);
}

void sv_provenance_write(sv_json_writer *w, const sv_provenance *p, const sv_flag *flags) {
    sv_json_obj_begin(w);
    sv_json_key(w, "version"), sv_json_str(w, p->version);
    sv_json_key(w, "commit"), sv_json_str(w, p->commit);
    sv_json_key(w, "describe"), sv_json_str(w, p->describe);
    sv_json_key(w, "dirty");
    if (p->dirty < 0)
        sv_json_null(w);
    else
        sv_json_bool(w, p->dirty);
    sv_json_key(w, "build");
    sv_json_obj_begin(w);
    sv_json_key(w, "type"), sv_json_str(w, p->build_type);
    sv_json_key(w, "compiler"), sv_json_str(w, p->compiler);
    str_or_null(w, "cuda_compiler", p->cuda_compiler);
    sv_json_key(w, "cuda"), sv_json_bool(w, p->build_cuda);
    sv_json_key(w, "mpi"), sv_json_bool(w, p->build_mpi);
    list(w, "cpu_kernels_compiled", p->kernels_compiled);
    sv_json_obj_end(w);
    sv_json_key(w, "libraries");
    sv_json_obj_begin(w);
    lib(w, "mpi", &p->mpi);
    lib(w, "openblas", &p->openblas);
    lib(w, "libjpeg_turbo", &p->turbojpeg);
    char nccl[32];
    int v = p->nccl_version;
    if (v >= 20900)
        snprintf(nccl, sizeof nccl, "%d.%d.%d", v / 10000, v / 100 % 100, v % 100);
    else
        snprintf(nccl, sizeof nccl, "%d.%d.%d", v / 1000, v / 100 % 10, v % 100);
    str_or_null(w, "nccl", p->cuda_in_use && v > 0 ? nccl : NULL);
    int g = p->cuda_in_use && p->gpu.present;
    cuda_ver(w, "cuda_runtime", p->gpu.runtime_version, g);
    sv_json_key(w, "cudnn"), g ? sv_json_u64(w, p->gpu.cudnn_version) : sv_json_null(w);
    sv_json_key(w, "cublaslt"), g ? sv_json_u64(w, p->gpu.cublaslt_version) : sv_json_null(w);
    sv_json_obj_end(w);
    sv_json_key(w, "host"), sv_json_str(w, p->host);
    sv_json_key(w, "cpu");
    sv_json_obj_begin(w);
    sv_json_key(w, "model"), sv_json_str(w, p->cpu_model);
    sv_json_key(w, "vendor"), sv_json_str(w, p->cpu_id.vendor);
    const int idv[3] = {p->cpu_id.family, p->cpu_id.model, p->cpu_id.stepping}; /* -1: null */
    static const char *const idk[3] = {"family", "model_number", "stepping"};
    for (int i = 0; i < 3; i++) sv_json_key(w, idk[i]), idv[i] >= 0 ? sv_json_i64(w, idv[i]) : sv_json_null(w);
    list(w, "isa", p->isa);
    sv_json_key(w, "cpu_kernels_dispatch"), sv_json_str(w, p->kernels_dispatch);
    sv_json_key(w, "gelu_bwd16"), sv_json_str(w, p->gelu_bwd16);
    list(w, "gemm_engines", p->gemm_engines);
    sv_json_obj_end(w);
    sv_json_key(w, "gpu");
    if (g) {
        sv_json_obj_begin(w);
        sv_json_key(w, "name"), sv_json_str(w, p->gpu.name);
        cuda_ver(w, "driver", p->gpu.driver_version, 1);
        sv_json_obj_end(w);
    } else {
        sv_json_null(w);
    }
    str_or_null(w, "command", p->command);
    sv_json_key(w, "world_size"), sv_json_i64(w, p->world);
    sv_json_key(w, "ranks_per_node"), sv_json_i64(w, p->ranks_per_node);
    sv_json_key(w, "threads_per_rank"), sv_json_i64(w, p->threads_per_rank);
    sv_json_key(w, "start_utc"), sv_json_str(w, p->start_utc);
    sv_json_key(w, "start_unix"), sv_json_f64(w, p->start_unix);
    if (flags) {
        sv_json_key(w, "config");
        sv_flags_dump_json(flags, w);
    }
    sv_json_obj_end(w);
}

char *sv_provenance_json(const sv_provenance *p, const sv_flag *flags) {
    sv_json_writer w;
    sv_json_writer_init(&w, 0);
    sv_provenance_write(&w, p, flags);
    const char *text;
    char *out = NULL;
    if (sv_json_writer_finish(&w, &text, NULL) == SV_OK) out = strdup(text);
    sv_json_writer_free(&w);
    return out;
}

void sv_provenance_version_line(char *buf, size_t cap) {
    snprintf(buf, cap, "shardvit %s (commit %s%s)", SV_BUILD_VERSION, SV_BUILD_COMMIT,
             SV_BUILD_DIRTY > 0       ? ", dirty"
                 : SV_BUILD_DIRTY < 0 ? ", dirty unknown"
                                      : "");
}

/* The whole regular file at path (not through a symbolic link, never blocking on a FIFO) into
 * *buf (malloc'd), *len its size; 0 when it cannot be read or exceeds cap. */
static int read_regular(const char *path, size_t cap, char **buf, size_t *len) {
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    *buf = NULL;
    *len = 0;
    if (fd < 0) return 0;
    struct stat sb;
    size_t size = 0;
    int ok = fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode);
    for (;;) {
        if (!ok || *len > cap) break;
        if (*len + 65536 + 1 > size) {
            char *nb = realloc(*buf, size = *len + 65536 + 1);
            if (!(ok = nb != NULL)) break;
            *buf = nb;
        }
        ssize_t r = pread(fd, *buf + *len, 65536, (off_t)*len);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) ok = 0;
        if (r <= 0) break;
        *len += (size_t)r;
    }
    close(fd);
    if (!ok || !*buf || *len > cap) {
        free(*buf);
        *buf = NULL;
        return 0;
    }
    return 1;
}

/* text[0, len) as a line of a bench output: 1 a JSON object whose provenance.command is command,
 * 0 other JSON, -1 not JSON (e.g. a line cut short, or text appended to the file). */
static int result_of(const char *path, const char *text, size_t len, const char *command) {
    sv_json_doc doc;
    const sv_json *c;
    int ok = sv_json_parse(&doc, text, len, path, NULL) == SV_OK ? 0 : -1;
    if (!ok) {
        ok = doc.root.type == SV_JSON_OBJECT && (c = sv_json_at_path(&doc.root, "provenance.command")) &&
            c->type == SV_JSON_STRING && !strcmp(c->u.str.s, command);
        sv_json_doc_free(&doc);
    }
    sv_err_clear();
    return ok;
}

/* The non-empty lines of path as result_of sees them: *first the first line's, *results how
 * many are results, *rest_ok whether every line is a result but for a last line that is not
 * JSON. 0 when the file cannot be read (read_regular). */
static int scan_lines(const char *path, const char *command, int *first, size_t *results, int *rest_ok) {
    char *buf;
    size_t len, lines = 0;
    *first = -1, *results = 0, *rest_ok = 1;
    if (!read_regular(path, (size_t)256 << 20, &buf, &len)) return 0;
    for (size_t at = 0; at < len;) {
        const char *nl = memchr(buf + at, '\n', len - at);
        size_t n = nl ? (size_t)(nl - (buf + at)) : len - at;
        if (n) {
            int r = result_of(path, buf + at, n, command);
            if (!lines++) *first = r;
            *results += r == 1;
            /* a line that is not a result: only a last line that is not JSON at all (a row cut
             * short by a kill, text appended) */
            int last = 1;
            for (size_t k = at + n + 1; k < len && last; k++) last = buf[k] == '\n';
            if (r != 1 && !(r < 0 && last && lines > 1)) *rest_ok = 0;
        }
        at += n + 1;
    }
    free(buf);
    return 1;
}

int sv_provenance_file_of(const char *path, const void *command) {
    int first, rest_ok;
    size_t results;
    /* the first line a result and no other line one: a JSONL of several results (a sweep's) is
     * not an earlier --json result */
    return scan_lines(path, (const char *)command, &first, &results, &rest_ok) && first == 1 && results == 1;
}

int sv_provenance_jsonl_of(const char *path, const void *command) {
    int first, rest_ok;
    size_t results;
    return scan_lines(path, (const char *)command, &first, &results, &rest_ok) && first == 1 && rest_ok;
}
