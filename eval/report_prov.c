/* The report's provenance sections (eval/report_svg.h sv_rp_provenance). */
#include <stdio.h>
#include <string.h>

#include "core/json.h"
#include "eval/report_svg.h"

/* A value as table text: strings bare, arrays of strings comma-joined, null as "null". */
static void cell(sv_rp_buf *b, const sv_json *v) {
    char num[64];
    if (!v || v->type == SV_JSON_NULL) {
        sv_rp_printf(b, "<span class=\"muted\">null</span>");
    } else if (v->type == SV_JSON_STRING) {
        sv_rp_esc(b, v->u.str.s);
    } else if (v->type == SV_JSON_BOOL) {
        sv_rp_printf(b, "%s", v->u.boolean ? "true" : "false");
    } else if (v->type == SV_JSON_NUMBER) {
        snprintf(num, sizeof num, "%.15g", v->u.num.d);
        sv_rp_esc(b, num);
    } else if (v->type == SV_JSON_ARRAY) {
        for (size_t i = 0; i < sv_json_count(v); i++) {
            if (i) sv_rp_printf(b, ", ");
            cell(b, sv_json_index(v, i));
        }
    } else {
        sv_rp_printf(b, "{&hellip;}");
    }
}

void sv_rp_provenance(sv_rp_buf *b, const char *id, const char *title, const sv_json *prov) {
    static const char *const rows[][2] = {
        {"version", "version"},
        {"commit", "commit"},
        {"dirty tree", "dirty"},
        {"build", "build.type"},
        {"compiler", "build.compiler"},
        {"CUDA build", "build.cuda"},
        {"MPI build", "build.mpi"},
        {"CPU kernels compiled", "build.cpu_kernels_compiled"},
        {"MPI library", "libraries.mpi.version"},
        {"OpenBLAS", "libraries.openblas.version"},
        {"libjpeg-turbo", "libraries.libjpeg_turbo.version"},
        {"NCCL", "libraries.nccl"},
        {"CUDA runtime", "libraries.cuda_runtime"},
        {"cuDNN", "libraries.cudnn"},
        {"cuBLASLt", "libraries.cublaslt"},
        {"host", "host"},
        {"CPU", "cpu.model"},
        {"ISA features", "cpu.isa"},
        {"CPU kernels dispatched", "cpu.cpu_kernels_dispatch"},
        {"GEMM engines", "cpu.gemm_engines"},
        {"GPU", "gpu.name"},
        {"GPU driver", "gpu.driver"},
        {"command", "command"},
        {"world size", "world_size"},
        {"ranks per node", "ranks_per_node"},
        {"threads per rank", "threads_per_rank"},
        {"start (UTC)", "start_utc"},
    };
    sv_rp_printf(b, "<section id=\"%s\"><h2>", id);
    sv_rp_esc(b, title);
    sv_rp_printf(b, "</h2><table class=\"provenance\">\n");
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        sv_rp_printf(b, "<tr><th>%s</th><td>", rows[i][0]);
        cell(b, sv_json_at_path(prov, rows[i][1]));
        sv_rp_printf(b, "</td></tr>\n");
    }
    sv_rp_printf(b, "</table>\n");
    sv_json_writer w;
    sv_json_writer_init(&w, 2);
    sv_json_value(&w, prov);
    const char *text;
    if (sv_json_writer_finish(&w, &text, NULL) == SV_OK) {
        sv_rp_printf(b, "<details><summary>Full provenance (JSON)</summary><pre>");
        sv_rp_esc(b, text);
        sv_rp_printf(b, "</pre></details>\n");
    }
    sv_json_writer_free(&w);
    sv_rp_printf(b, "</section>\n");
}
