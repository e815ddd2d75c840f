/* shardvit version (also `shardvit --version`): the version, the git commit the binary was built
 * from (+ dirty flag), the build options and what this process loads at run time. --json: the
 * provenance object every result carries (app/provenance.h). */
#include <stdio.h>

#include "app/commands.h"
#include "app/flags.h"
#include "app/provenance.h"

int sv_cmd_version(int argc, char **argv, const sv_proc *proc) {
    int json = 0;
    /* clang-format off: one flag per line */
    sv_flag flags[] = {
        {"json", SV_FLAG_BOOL, &json, 0, 0, "print the provenance JSON object that every result embeds", 0},
        SV_FLAG_END};
    /* clang-format on */
    sv_cmd_spec spec = {"version", "shardvit version [--json]   (or shardvit --version)",
                        "Print the version, the git commit the binary was built from (\"unknown\" when built "
                        "without git) and whether the tree had uncommitted changes, the build options (CUDA, MPI, "
                        "compiler, CPU kernels compiled in and the one dispatched on this CPU) and the library "
                        "versions this process loads.",
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
    return 0;
}
