/* The ranks agree that they read one safetensors file (ckpt/checkpoint.h sv_ckpt_agree_same_file). */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/crc32c.h"
#include "core/fileio.h"
#include "ckpt/checkpoint.h"
#include "fsdp/agree.h"

/* CRC32C of the whole file (the open descriptor, or the in-memory contents). */
static sv_status file_crc(const sv_st_file *sf, uint32_t *crc) {
    *crc = 0;
    if (sf->mem) {
        *crc = sv_crc32c(sf->mem, (size_t)sf->file_size);
        return SV_OK;
    }
    enum { CHUNK = 1 << 20 };
    char *buf = malloc(CHUNK);
    if (!buf) return SV_FAIL(SV_ERR_OOM, "%s: CRC buffer", sf->path);
    sv_status st = SV_OK;
    for (uint64_t off = 0; off < sf->file_size && st == SV_OK; off += CHUNK) {
        size_t want = sf->file_size - off < CHUNK ? (size_t)(sf->file_size - off) : CHUNK;
        st = sv_fileio_pread_exact(sf->fd, buf, want, off, sf->path);
        if (st == SV_OK) *crc = sv_crc32c_update(*crc, buf, want);
    }
    free(buf);
    return st;
}

sv_status sv_ckpt_agree_same_file(sv_fsdp *f, const sv_st_file *sf, sv_status opened, const char *what) {
    if (f->world_size <= 1) return opened;
    SV_TRY(sv_fsdp_agree(f, opened));
    const int W = f->world_size;
    int64_t id[4] = {(int64_t)sf->file_size, 0, 0, 0};
    struct stat sb;
    if (!sf->mem && fstat(sf->fd, &sb) == 0) {
        id[1] = (int64_t)sb.st_ino;
        id[2] = (int64_t)sb.st_mtim.tv_sec;
        id[3] = (int64_t)sb.st_mtim.tv_nsec;
    }
    int64_t *all = malloc((size_t)W * 4 * sizeof *all);
    sv_status st = all ? SV_OK : SV_FAIL(SV_ERR_OOM, "file identities of %d ranks", W);
    SV_TRY(sv_fsdp_agree(f, st));
    st = sv_fsdp_world_gather_i64(f, all, id, 4);
    int same = st == SV_OK;
    for (int r = 1; r < W && same; r++) same = !memcmp(all + 4 * r, all, sizeof id);
    if (st != SV_OK || same) {
        free(all);
        return st;
    }
    /* another inode, size or time somewhere: compare the contents (copies on node-local disks) */
    uint32_t crc = 0;
    sv_status cs = file_crc(sf, &crc);
    int64_t mine[2] = {(int64_t)sf->file_size, (int64_t)crc};
    st = sv_fsdp_agree(f, cs);
    if (st == SV_OK) st = sv_fsdp_world_gather_i64(f, all, mine, 2);
    for (int r = 1; r < W && st == SV_OK; r++)
        if (all[2 * r] != all[0] || all[2 * r + 1] != all[1])
            st = SV_FAIL(SV_ERR_IO,
                         "%s %s: rank 0 and rank %d opened different files (%lld bytes, CRC32C %08llx against %lld "
                         "bytes, %08llx): the file was replaced while the ranks opened it (an export onto the same "
                         "path?), and each rank reads its own part of the model; run again once it is complete",
                         what, sf->path, r, (long long)all[0], (unsigned long long)(uint32_t)all[1],
                         (long long)all[2 * r], (unsigned long long)(uint32_t)all[2 * r + 1]);
    free(all);
    return st;
}
