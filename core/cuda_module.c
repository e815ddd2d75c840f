/* Loading the CUDA module (core/cuda_module.h). */
#include "core/cuda_module.h"

#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/clock.h"
#include "core/gpus.h"
#include "core/log.h"

/* The program's functions the module calls (ldd -r lib/libshardvit_cuda.so: the symbols none of
 * its libraries defines), all sv_core's: referenced here, next to the loader, so that every
 * executable that can load the module links them (an object of a static library is linked only
 * when referenced) and, linked with its symbols exported (CMAKE_ENABLE_EXPORTS), offers them to
 * the module. tests/gpu/cuda_module.sh compares this list with the module's undefined symbols
 * and every loader's exports. */
__attribute__((used)) static void *const module_needs[] = {
    (void *)sv_assert_fail,        (void *)sv_err_clear,  (void *)sv_err_frame, (void *)sv_err_msg, (void *)sv_fail_at,
    (void *)sv_gpu_for_local_rank, (void *)sv_gpu_shared, (void *)sv_log,       (void *)sv_now_s,
};

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static const sv_cuda_module *loaded;
static char loaded_path[4096];
static char load_error[SV_ERR_MSG_CAP - 64];

/* The signals whose handlers main installs (app/main.c, app/preempt.c): a library initialiser
 * that changes one would silently take preemption or a broken pipe away from the program. */
static const int guarded[] = {SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2, SIGPIPE, SIGXFSZ};
#define N_GUARDED (sizeof guarded / sizeof guarded[0])

static void dlopen_guarded(const char *name, void **h) {
    struct sigaction before[N_GUARDED], after;
    for (size_t i = 0; i < N_GUARDED; i++) sigaction(guarded[i], NULL, &before[i]);
    /* RTLD_NOW: an unresolved symbol is an error here, not a crash in the middle of a run */
    *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    for (size_t i = 0; i < N_GUARDED; i++) {
        sigaction(guarded[i], NULL, &after);
        if (after.sa_handler == before[i].sa_handler && after.sa_flags == before[i].sa_flags) continue;
        sigaction(guarded[i], &before[i], NULL);
        SV_WARN("loading the CUDA module %s changed the handling of SIG%s; put back", name, sigabbrev_np(guarded[i]));
    }
}

static void load_module(void) {
    const char *env = getenv("SHARDVIT_CUDA_MODULE");
    const char *name = env && *env ? env : SV_CUDA_MODULE_FILE;
    struct stat st; /* a path the loader would open as is: a FIFO would block it for ever */
    if (strchr(name, '/') && stat(name, &st) == 0 && !S_ISREG(st.st_mode)) {
        snprintf(load_error, sizeof load_error, "the CUDA module %.600s%s is not a regular file", name,
                 env && *env ? " (SHARDVIT_CUDA_MODULE)" : "");
        return;
    }
    void *h;
    dlopen_guarded(name, &h);
    if (!h) {
        const char *e = dlerror();
        snprintf(load_error, sizeof load_error,
                 "cannot load the CUDA module %.300s%s: %.400s (a CUDA-enabled build puts it in its lib/ "
                 "directory, found through the program's run path; SHARDVIT_CUDA_MODULE=PATH names another file)",
                 name, env && *env ? " (SHARDVIT_CUDA_MODULE)" : "", e ? e : "unknown error");
        return;
    }
    sv_cuda_module_entry_fn entry;
    *(void **)&entry = dlsym(h, SV_CUDA_MODULE_ENTRY);
    if (!entry) {
        snprintf(load_error, sizeof load_error, "%.600s is not a shardvit CUDA module (no %s)", name,
                 SV_CUDA_MODULE_ENTRY);
        dlclose(h);
        return;
    }
    Dl_info info; /* the file the loader picked, as a canonical path (a run path gives "app/../lib") */
    const char *file = dladdr(*(void **)&entry, &info) && info.dli_fname ? info.dli_fname : name;
    char *canon = realpath(file, NULL);
    snprintf(loaded_path, sizeof loaded_path, "%s", canon ? canon : file);
    free(canon);
    const sv_cuda_module *m = entry();
    /* not dlclose'd when refused: its initialisers ran, unloading CUDA libraries is not worth it */
    if (!m || m->abi != SV_CUDA_MODULE_ABI) {
        snprintf(load_error, sizeof load_error,
                 "the CUDA module %.600s has interface version %d, this program needs %d (a module of another "
                 "shardvit version)",
                 loaded_path, m ? m->abi : -1, SV_CUDA_MODULE_ABI);
        loaded_path[0] = 0;
        return;
    }
    if (!m->build_id || strcmp(m->build_id, SV_CUDA_BUILD_ID)) {
        snprintf(load_error, sizeof load_error,
                 "the CUDA module %.600s is from another build (build id %.40s, this program's %s): use the module "
                 "of this program's build (its lib/)",
                 loaded_path, m->build_id ? m->build_id : "(none)", SV_CUDA_BUILD_ID);
        loaded_path[0] = 0;
        return;
    }
    loaded = m;
}

sv_status sv_cuda_module_get(const sv_cuda_module **out) {
    pthread_once(&load_once, load_module);
    *out = loaded;
    return loaded ? SV_OK : SV_FAIL(SV_ERR_UNSUPPORTED, "%s", load_error);
}

const char *sv_cuda_module_path(void) { return loaded ? loaded_path : ""; }

static pthread_once_t driver_once = PTHREAD_ONCE_INIT;
static int driver_present;

static void probe_driver(void) {
    /* kept open when found: the module's CUDA runtime loads the same library next */
    driver_present = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL) != NULL;
}

int sv_cuda_driver_present(void) {
    pthread_once(&driver_once, probe_driver);
    return driver_present;
}
