/* Staged merge of the --trace parts (trace_merge.h). */
#include "app/trace_merge.h"

#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "core/fileio.h"

/* How every merged trace starts: the text of core/trace.c, which sv_trace_is_merged looks for
 * when a later run may replace the file (tests/train/write_errors.sh checks that a trace
 * written here is replaced by the next run). */
static const char k_head[] = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
static const char k_tail[] = "\n]}\n";

sv_status sv_app_trace_merge(const char *path, int world) {
    char buf[65536], part[4096];
    sv_fileio_out out;
    SV_TRY(sv_fileio_out_open_tmp(&out, path));
    sv_status st = sv_fileio_out_write(&out, k_head, sizeof k_head - 1);
    for (int r = 0; r < world; r++) {
        snprintf(part, sizeof part, "%s.rank%d", path, r);
        int fd;
        uint64_t size;
        /* the guarded open: a FIFO or device planted under the part's name is refused, never read */
        sv_status os = sv_fileio_open_read(part, &fd, &size);
        if (os != SV_OK) {
            if (st == SV_OK) st = os;
            break;
        }
        if (st == SV_OK && r) st = sv_fileio_out_write(&out, ",\n", 2);
        for (uint64_t off = 0; st == SV_OK && off < size; off += sizeof buf) {
            size_t n = size - off < sizeof buf ? (size_t)(size - off) : sizeof buf;
            st = sv_fileio_pread_exact(fd, buf, n, off, part);
            if (st == SV_OK) st = sv_fileio_out_write(&out, buf, n);
        }
        close(fd);
        remove(part); /* copied, or of no use once a write failed: a part left would refuse the next --trace */
    }
    if (st == SV_OK) st = sv_fileio_out_write(&out, k_tail, sizeof k_tail - 1);
    if (st == SV_OK) return sv_fileio_out_commit(&out, path); /* removes the temporary on failure */
    sv_fileio_out_abort(&out);
    sv_err_frame(__FILE__, __LINE__);
    return st;
}
