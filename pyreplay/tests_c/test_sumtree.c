/* Sum-tree checks for the sanitizer build (make test compiles this with ASan and UBSan). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "../sumtree.h"

#define CHECK(cond) do { if (!(cond)) { fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); return 1; } } while (0)

static int run(size_t capacity, size_t k) {
    sumtree t;
    CHECK(sumtree_init(&t, capacity, k) == 0);
    double *leaves = calloc(capacity, sizeof *leaves);
    CHECK(leaves != NULL);
    uint64_t state = 42;
    for (size_t round = 0; round < 5 * capacity; round++) {
        size_t i = pyreplay_next(&state) % capacity;
        double v = (double)(pyreplay_next(&state) % 1000) / 10.0;
        leaves[i] = v;
        sumtree_set(&t, i, v);
    }
    double total = 0.0, smallest = INFINITY;
    for (size_t i = 0; i < capacity; i++) {
        total += leaves[i];
        if (leaves[i] > 0.0 && leaves[i] < smallest) smallest = leaves[i];
        CHECK(sumtree_get(&t, i) == leaves[i]);
    }
    CHECK(fabs(sumtree_total(&t) - total) < 1e-6 * (1.0 + total));
    CHECK(sumtree_min(&t) == smallest);
    CHECK(sumtree_check(&t) < 1e-6 * (1.0 + total));
    for (int draw = 0; draw < 10000; draw++) {
        double u = pyreplay_uniform(&state) * sumtree_total(&t);
        size_t i = sumtree_find(&t, u);
        CHECK(i < capacity);
        CHECK(leaves[i] > 0.0);
    }
    /* Many draws at once give what one at a time gives. */
    {
        enum { N = 37 };
        double us[N], copy[N];
        size_t got[N];
        for (int j = 0; j < N; j++) us[j] = copy[j] = pyreplay_uniform(&state) * sumtree_total(&t);
        sumtree_find_many(&t, us, got, N);
        for (int j = 0; j < N; j++) CHECK(got[j] == sumtree_find(&t, copy[j]));
    }
    /* The edges: u = 0 and u just below the total. */
    CHECK(leaves[sumtree_find(&t, 0.0)] > 0.0);
    CHECK(leaves[sumtree_find(&t, nextafter(sumtree_total(&t), 0.0))] > 0.0);
    sumtree_clear(&t);
    CHECK(sumtree_total(&t) == 0.0);
    free(leaves);
    sumtree_free(&t);
    return 0;
}

int main(void) {
    size_t capacities[] = {1, 2, 3, 7, 64, 100, 1000, 4097};
    size_t fanouts[] = {2, 3, 4, 8, 16, 64};
    for (size_t c = 0; c < sizeof capacities / sizeof *capacities; c++)
        for (size_t f = 0; f < sizeof fanouts / sizeof *fanouts; f++)
            if (run(capacities[c], fanouts[f]) != 0) {
                fprintf(stderr, "failed for capacity %zu, K %zu\n", capacities[c], fanouts[f]);
                return 1;
            }
    sumtree t;
    if (sumtree_init(&t, 0, 4) != -1 || sumtree_init(&t, 10, 1) != -1) return 1;
    printf("sumtree: all checks passed\n");
    return 0;
}
