/* Check a training run's TensorBoard event file against its metrics.jsonl:
 *   tb_check RUN_DIR
 * - exactly one events.out.tfevents.* file; every TFRecord's length and data CRC32C verified
 *   here record by record (and again by the decoder, formats/tensorboard.h);
 * - for every metrics.jsonl line, loss / lr / grad_norm / eval_top1 / eval_top5 / eval_loss
 *   (and loss_avg) appear as train/loss ... eval/loss at the same step with the same value (float32 of it),
 *   and there are no extra records of those tags. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/crc32c.h"
#include "core/fileio.h"
#include "core/json.h"
#include "formats/tensorboard.h"

static uint32_t masked(uint32_t c) { return ((c >> 15) | (c << 17)) + 0xa282ead8u; }
static uint32_t rd32(const uint8_t *p) { return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24; }

static const struct {
    const char *key, *tag;
} k_map[] = {{"loss", "train/loss"},           {"loss_avg", "train/loss_avg"}, {"lr", "train/lr"},
             {"grad_norm", "train/grad_norm"}, {"eval_top1", "eval/top1"},     {"eval_top5", "eval/top5"},
             {"eval_loss", "eval/loss"}};
#define NMAP (sizeof k_map / sizeof k_map[0])

int main(int argc, char **argv) {
    CHECK(argc == 2);
    DIR *d = opendir(argv[1]);
    CHECK(d);
    char path[4096] = "";
    int nfiles = 0;
    for (struct dirent *de; (de = readdir(d));)
        if (!strncmp(de->d_name, "events.out.tfevents.", 20)) {
            snprintf(path, sizeof path, "%s/%s", argv[1], de->d_name);
            nfiles++;
        }
    closedir(d);
    CHECK(nfiles == 1);
    char *raw;
    size_t len;
    CHECK_OK(sv_fileio_read_small(path, (size_t)1 << 30, &raw, &len));
    size_t off = 0, records = 0;
    while (off < len) {
        const uint8_t *p = (const uint8_t *)raw + off;
        CHECK(off + 12 <= len);
        uint64_t n = 0;
        for (int i = 7; i >= 0; i--) n = n << 8 | p[i];
        CHECK(rd32(p + 8) == masked(sv_crc32c(p, 8)));
        CHECK(off + 12 + n + 4 <= len);
        CHECK(rd32(p + 12 + n) == masked(sv_crc32c(p + 12, n)));
        off += 12 + n + 4;
        records++;
    }
    free(raw);
    sv_tb_events ev;
    CHECK_OK(sv_tb_read_file(path, 0, &ev));
    CHECK(ev.n_records == records);
    CHECK(!strcmp(ev.file_version, SV_TB_FILE_VERSION));

    char mpath[4096];
    snprintf(mpath, sizeof mpath, "%s/metrics.jsonl", argv[1]);
    char *text;
    CHECK_OK(sv_fileio_read_small(mpath, (size_t)1 << 30, &text, &len));
    size_t expected[NMAP] = {0}, found[NMAP] = {0};
    for (char *line = text; *line;) {
        char *nl = strchr(line, '\n');
        size_t n = nl ? (size_t)(nl - line) : strlen(line);
        sv_json_doc doc;
        CHECK_OK(sv_json_parse(&doc, line, n, mpath, NULL));
        const char *rec = NULL;
        CHECK_OK(sv_json_opt_str(&doc.root, "record", NULL, &rec));
        if (rec) { /* the header record (app/train_log.h): the first line only, no step, no scalars */
            CHECK(!strcmp(rec, "header") && line == text && !sv_json_member_get(&doc.root, "step"));
            sv_json_doc_free(&doc);
            line += n + (nl ? 1 : 0);
            continue;
        }
        int64_t step;
        CHECK_OK(sv_json_get_i64(&doc.root, "step", &step));
        for (size_t k = 0; k < NMAP; k++) {
            const sv_json *v = sv_json_member_get(&doc.root, k_map[k].key);
            if (!v || v->type != SV_JSON_NUMBER) continue;
            expected[k]++;
            int hit = 0;
            for (size_t i = 0; i < ev.n; i++)
                if (ev.items[i].step == step && !strcmp(ev.items[i].tag, k_map[k].tag)) {
                    double want = (double)(float)v->u.num.d, got = ev.items[i].value;
                    if (!(fabs(got - want) <= 1e-6 * fabs(want) + 1e-30)) {
                        fprintf(stderr, "step %lld %s: TensorBoard %.9g, metrics.jsonl %.9g\n", (long long)step,
                                k_map[k].tag, got, v->u.num.d);
                        return 1;
                    }
                    hit++;
                }
            CHECK(hit == 1);
            found[k]++;
        }
        sv_json_doc_free(&doc);
        line += n + (nl ? 1 : 0);
    }
    for (size_t k = 0; k < NMAP; k++) {
        size_t in_tb = 0;
        for (size_t i = 0; i < ev.n; i++) in_tb += !strcmp(ev.items[i].tag, k_map[k].tag);
        printf("%-16s %zu values in metrics.jsonl, %zu in TensorBoard\n", k_map[k].tag, expected[k], in_tb);
        CHECK(found[k] == expected[k] && in_tb == expected[k]);
    }
    CHECK(expected[0] > 0 && expected[3] > 0); /* training and evaluation were both logged */
    printf("ok: %zu records, CRCs verified, values match metrics.jsonl\n", records);
    free(text);
    sv_tb_events_free(&ev);
    return 0;
}
