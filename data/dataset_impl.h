/* shardvit data: internals shared by dataset.c, folder.c and tar.c (not a public header). */
#ifndef SV_DATA_DATASET_IMPL_H
#define SV_DATA_DATASET_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "data/dataset.h"

/* Growable list of strings stored in one blob (offsets, so realloc does not invalidate). */
typedef struct sv_strlist {
    char *blob;
    size_t len, cap;
    size_t *off;
    size_t n, ncap;
} sv_strlist;
sv_status sv_strlist_push(sv_strlist *l, const char *s, size_t slen);
static inline const char *sv_strlist_at(const sv_strlist *l, size_t i) { return l->blob + l->off[i]; }
void sv_strlist_free(sv_strlist *l);

struct sv_dataset {
    sv_dataset_kind kind;
    size_t n;
    int K;
    sv_strlist classes;
    int32_t *labels; /* (n) */
    /* folder */
    char *root;
    sv_strlist paths;    /* relative to root */
    sv_strlist left_out; /* root/path of each image-named entry left out (opts.leave_out_unusable) */
    /* tar */
    sv_strlist shards;       /* shard file paths */
    int *fds;                /* (shards.n) */
    uint32_t *shard_of;      /* (n) */
    uint64_t *offset, *size; /* (n) data range of the .jpg member */
    sv_strlist keys;         /* (n) */
    /* synthetic */
    int synth_img, synth_channels;
    uint64_t synth_seed;
};

sv_status sv_folder_scan(sv_dataset *d, const char *root, int leave_out);
/* pattern: tar shard names with brace patterns (sv_expand_braces), or with literal = 1 one
 * shard's path used as written (an existing file whose name holds braces). */
sv_status sv_tar_scan(sv_dataset *d, const char *pattern, int literal, const char *classes_file, int fallback);

#endif
