/* shardvit version (also `shardvit --version`): the version, the git commit the binary was built
 * from (+ dirty flag), the build options and what this process loads at run time. --json: the
 * provenance object every result carries (app/provenance.h). */
#include <stdio.h>

#include "app/commands.h"
#include "app/flags.h"
#include "app/provenance.h"
#include "core/cuda_module.h"

/* CUDA builds: where the CUDA module was loaded from and what it loaded (core/cuda_module.h);
 * with --cuda only: loading it runs the CUDA libraries' initialisers and, with a driver, starts
 * it (seconds on some machines), which `shardvit --version` should not cost. */
static void print_cuda_module(int load) {
    const sv_cuda_module *m;
    if (!load) {
        printf("cuda: module %s, loaded when CUDA is first used (shardvit version --cuda loads it and reports the "
               "CUDA libraries and devices)\n",
               SV_CUDA_MODULE_FILE);
        return;
    }
    if (sv_cuda_module_get(&m) != SV_OK) {
        printf("cuda: module not loaded: %s\n", sv_err_msg());
        sv_err_clear();
        return;
    }
    sv_cuda_libs l;
    m->libs(&l);
    char drv[32] = "none";
    if (l.driver_version > 0) snprintf(drv, sizeof drv, "%d.%d", l.driver_version / 1000, l.driver_version % 1000 / 10);
    printf("cuda: module %s: runtime %d.%d, driver %s, cuBLASLt %zu, cuDNN %zu, NCCL %d; devices %d%s%s%s\n",
           sv_cuda_module_path(), l.runtime_version / 1000, l.runtime_version % 1000 / 10, drv, l.cublaslt_version,
           l.cudnn_version, m->comm_nccl_version(), l.devices, l.devices ? "" : " (", l.no_device,
           l.devices ? "" : ")");
}

int sv_cmd_version(int argc, char **argv, const sv_proc *proc) {
    int json = 0, cuda = 0;
    /* clang-format off: one flag per line */
    sv_flag flags[] = {
        {"json", SV_FLAG_BOOL, &json, 0, 0, "print the provenance JSON object that every result embeds", 0},
        {"cuda", SV_FLAG_BOOL, &cuda, 0, 0,
         "CUDA-enabled builds: load the CUDA module and report its file, the CUDA "
         "library versions and the devices the runtime sees",
         0},
        SV_FLAG_END};
    /* clang-format on */
    sv_cmd_spec spec = {"version", "shardvit version [--json] [--cuda]   (or shardvit --version)",
                        "Print the version, the git commit the binary was built from (\"unknown\" when built "
                        "without git) and whether the tree had uncommitted changes, the build options (CUDA, MPI, "
                        "compiler, CPU kernels compiled in and the one dispatched on this CPU) and the library "
                        "versions this process loads; in a CUDA-enabled build with --cuda also the CUDA module "
                        "(libshardvit_cuda.so: the file it loads, the CUDA library versions, the devices seen).",
                        0};
    char *pos[1];
    int rc = sv_cmd_parse(&spec, flags, argc, argv, pos, NULL, 0, "takes no arguments");
    if (rc >= 0) return rc;
    sv_provenance p;
    sv_provenance_fill(&p, "version", proc, 1, -1);
    if (json) {
        sv_json_writer w;
        sv_json_writer_init(&w, 2);
        sv_provenance_write(&w, &p, NULL);
        const char *text;
        if (sv_json_writer_finish(&w, &text, NULL) != SV_OK) {
            sv_json_writer_free(&w);
            return sv_app_fail("version", SV_ERR_INVALID);
        }
        printf("%s\n", text);
        sv_json_writer_free(&w);
        return 0;
    }
    char line[256];
    sv_provenance_version_line(line, sizeof line);
    printf("%s\n", line);
    printf("describe: %s\n", p.describe);
    printf("build: %s, %s; CUDA %s%s%s, MPI %s\n", p.build_type, p.compiler, p.build_cuda ? "on" : "off",
           p.cuda_compiler[0] ? " with " : "", p.cuda_compiler, p.build_mpi ? "on" : "off");
    printf("cpu kernels: compiled %s, dispatched %s on this CPU; gemm engines available: %s\n", p.kernels_compiled,
           p.kernels_dispatch, p.gemm_engines[0] ? p.gemm_engines : "none (OpenBLAS only)");
    printf("cpu: %s [%s]\n", p.cpu_model, p.isa);
    printf("mpi: %s\n", p.mpi.version[0] ? p.mpi.version : "none");
    printf("openblas: %s\n", p.openblas.version[0] ? p.openblas.version : "unknown");
    printf("libjpeg-turbo: %s (%s)\n", p.turbojpeg.version[0] ? p.turbojpeg.version : "unknown",
           p.turbojpeg.file[0] ? p.turbojpeg.file : "not loaded");
    if (p.build_cuda) print_cuda_module(cuda);
    return 0;
}
