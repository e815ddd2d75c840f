/* Fuzz target: strict JSON parser. Whatever it accepts must survive a round trip: write it
 * back with the JSON writer, parse that, write again, and get the same text. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "fuzz_util.h"

static void walk(const sv_json *v, int depth) {
    char path[256];
    sv_json_path(v, path, sizeof path);
    if (depth > 4) return;
    for (size_t i = 0; i < sv_json_count(v); i++) {
        if (v->type == SV_JSON_ARRAY) {
            walk(sv_json_index(v, i), depth + 1);
        } else {
            const sv_json_member *m = &v->u.obj.members[i];
            /* lookup takes a C string: keys holding \u0000 cannot be named by it */
            if (strlen(m->key) == m->key_len && sv_json_member_get(v, m->key) == NULL) abort();
            int64_t i64;
            double d;
            const char *s;
            (void)sv_json_get_i64(v, m->key, &i64);
            (void)sv_json_opt_f64(v, m->key, 0.0, &d);
            (void)sv_json_opt_str(v, m->key, "", &s);
            walk(&m->value, depth + 1);
        }
    }
}

static char *emit(const sv_json *v, int indent, size_t *len) {
    sv_json_writer w;
    sv_json_writer_init(&w, indent);
    sv_json_value(&w, v);
    const char *text;
    if (sv_json_writer_finish(&w, &text, len) != SV_OK) abort();
    char *copy = malloc(*len + 1);
    if (!copy) abort();
    memcpy(copy, text, *len + 1);
    sv_json_writer_free(&w);
    return copy;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_quiet();
    /* the first byte picks tight or default limits so the limit paths are exercised too */
    sv_json_limits lim = {0, 0};
    if (size && data[0] == 'L') lim = (sv_json_limits){.max_bytes = 4096, .max_depth = 8};
    sv_json_doc doc;
    if (sv_json_parse(&doc, (const char *)data, size, "fuzz.json", &lim) != SV_OK) {
        sv_json_doc_free(&doc);
        return 0;
    }
    walk(&doc.root, 0);
    size_t n1, n2;
    char *t1 = emit(&doc.root, size & 1 ? 2 : 0, &n1);
    sv_json_doc doc2;
    if (sv_json_parse(&doc2, t1, n1, "re-emitted", NULL) != SV_OK) abort();
    char *t2 = emit(&doc2.root, size & 1 ? 2 : 0, &n2);
    if (n1 != n2 || memcmp(t1, t2, n1) != 0) abort();
    free(t1);
    free(t2);
    sv_json_doc_free(&doc2);
    sv_json_doc_free(&doc);
    return 0;
}
