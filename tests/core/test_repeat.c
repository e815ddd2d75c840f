/* The earliest repeated key (core/repeat.h sv_first_repeat), the scan behind the class-list and
 * tar-shard checks: the repeat with the lowest place wins, whatever its key's order, and is named
 * with its key's first place; a third occurrence of a key is never the answer when its second
 * comes earlier; keys compare through the caller's comparison only (equal keys at different
 * addresses, a struct key); no repeat, one item and none give 0; the items stay in place; and a
 * brute-force check over many small random arrays agrees. */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "core/repeat.h"

static int by_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

static int by_int(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* A key of two fields and a payload the comparison ignores. */
typedef struct pair {
    int hi, lo;
    double payload;
} pair;

static int by_pair(const void *a, const void *b) {
    const pair *x = a, *y = b;
    if (x->hi != y->hi) return x->hi < y->hi ? -1 : 1;
    return (x->lo > y->lo) - (x->lo < y->lo);
}

static int strs(const char **v, size_t n, size_t *first, size_t *again) {
    return sv_first_repeat(v, n, sizeof *v, by_str, first, again);
}

int main(void) {
    size_t first = 99, again = 99;
    /* none, one, all different */
    CHECK(sv_first_repeat(NULL, 0, sizeof(char *), by_str, &first, &again) == 0 && first == 0 && again == 0);
    const char *one[] = {"a"};
    CHECK(strs(one, 1, &first, &again) == 0 && first == 0 && again == 0);
    const char *diff[] = {"d", "b", "a", "c"};
    CHECK(strs(diff, 4, &first, &again) == 0 && first == 0 && again == 0);

    /* "z" repeats at place 3 before "a" repeats at place 4, though "a" sorts first */
    const char *two[] = {"z", "a", "m", "z", "a"};
    CHECK(strs(two, 5, &first, &again) == 1 && first == 0 && again == 3);
    CHECK(!strcmp(two[0], "z") && !strcmp(two[4], "a")); /* the items stay in place */

    /* "b" three times (1, 5, 6) and "c" twice (2, 4): the repeat at 4 wins */
    const char *three[] = {"a", "b", "c", "d", "c", "b", "b"};
    CHECK(strs(three, 7, &first, &again) == 1 && first == 2 && again == 4);

    /* equal text at different addresses: the comparison decides, not the pointer */
    char x1[] = "cls", x2[] = "cls";
    const char *copies[] = {"other", x1, x2};
    CHECK(strs(copies, 3, &first, &again) == 1 && first == 1 && again == 2);

    /* struct keys: the payload is not part of the key */
    pair pr[] = {{1, 2, 0.5}, {2, 1, 1.5}, {1, 3, 2.5}, {2, 1, 3.5}, {1, 2, 4.5}};
    CHECK(sv_first_repeat(pr, 5, sizeof *pr, by_pair, &first, &again) == 1 && first == 1 && again == 3);

    /* brute force: small random int arrays with few distinct values */
    uint64_t s = 12345;
    for (int trial = 0; trial < 20000; trial++) {
        int v[12];
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        size_t n = (size_t)(s >> 33) % 13;
        for (size_t i = 0; i < n; i++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            v[i] = (int)((s >> 33) % (1 + n));
        }
        size_t want_first = 0, want_again = 0;
        int want = 0;
        for (size_t i = 1; i < n && !want; i++)
            for (size_t j = 0; j < i; j++)
                if (v[j] == v[i]) {
                    want = 1, want_first = j, want_again = i;
                    break;
                }
        int got = sv_first_repeat(v, n, sizeof *v, by_int, &first, &again);
        CHECK(got == want && first == want_first && again == want_again);
    }
    printf("ok\n");
    return 0;
}
