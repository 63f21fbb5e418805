#define _POSIX_C_SOURCE 200112L  /* posix_memalign under -std=c99 */
#include "sumtree.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define LINE 64

static size_t round_up(size_t n, size_t m) { return (n + m - 1) / m * m; }

int sumtree_init(sumtree *t, size_t capacity, size_t k) {
    memset(t, 0, sizeof *t);
    if (capacity == 0 || k < 2 || k > 64) return -1;
    t->capacity = capacity;
    t->k = k;
    /* depth: the smallest d with k^d >= capacity (at least 1). */
    size_t depth = 1, span = k;
    while (span < capacity) {
        if (span > SIZE_MAX / k) return -1;
        span *= k;
        depth++;
    }
    t->depth = depth;
    t->width = calloc(depth, sizeof *t->width);
    t->sum = calloc(depth, sizeof *t->sum);
    t->min = calloc(depth, sizeof *t->min);
    if (!t->width || !t->sum || !t->min) { sumtree_free(t); return -1; }
    /* Level l has ceil(capacity / k^(depth-1-l)) nodes, rounded up to whole groups of K. */
    size_t total = 0;
    for (size_t l = 0; l < depth; l++) {
        size_t below = 1;
        for (size_t j = l + 1; j < depth; j++) below *= k;
        size_t nodes = round_up((capacity + below - 1) / below, k);
        t->width[l] = nodes;
        total += round_up(nodes * sizeof(double), LINE);
    }
    if (posix_memalign(&t->block, LINE, 2 * total) != 0) { t->block = NULL; sumtree_free(t); return -1; }
    char *p = t->block;
    for (size_t l = 0; l < depth; l++) {
        t->sum[l] = (double *)p;
        p += round_up(t->width[l] * sizeof(double), LINE);
    }
    for (size_t l = 0; l < depth; l++) {
        t->min[l] = (double *)p;
        p += round_up(t->width[l] * sizeof(double), LINE);
    }
    sumtree_clear(t);
    return 0;
}

void sumtree_free(sumtree *t) {
    free(t->block);
    free(t->width);
    free(t->sum);
    free(t->min);
    memset(t, 0, sizeof *t);
}

void sumtree_clear(sumtree *t) {
    for (size_t l = 0; l < t->depth; l++) {
        for (size_t i = 0; i < t->width[l]; i++) {
            t->sum[l][i] = 0.0;
            t->min[l][i] = INFINITY;
        }
    }
}

void sumtree_set(sumtree *t, size_t i, double v) {
    size_t l = t->depth - 1, k = t->k;
    t->sum[l][i] = v;
    t->min[l][i] = v > 0.0 ? v : INFINITY;
    while (l > 0) {
        size_t first = i / k * k;
        double s = 0.0, m = INFINITY;
        const double *sums = t->sum[l], *mins = t->min[l];
        for (size_t c = 0; c < k; c++) {
            s += sums[first + c];
            if (mins[first + c] < m) m = mins[first + c];
        }
        i /= k;
        l--;
        t->sum[l][i] = s;
        t->min[l][i] = m;
    }
}

double sumtree_get(const sumtree *t, size_t i) { return t->sum[t->depth - 1][i]; }

double sumtree_total(const sumtree *t) {
    double s = 0.0;
    for (size_t c = 0; c < t->k; c++) s += t->sum[0][c];
    return s;
}

double sumtree_min(const sumtree *t) {
    double m = INFINITY;
    for (size_t c = 0; c < t->k; c++)
        if (t->min[0][c] < m) m = t->min[0][c];
    return m;
}

/* One step down: from `node` at level l to its child where u falls; u becomes the remainder. */
static size_t step(const sumtree *t, size_t l, size_t node, double *u) {
    size_t k = t->k;
    const double *group = t->sum[l] + node * k;
    size_t chosen = k, last_positive = k;
    double rest = *u;
    for (size_t c = 0; c < k; c++) {
        if (group[c] <= 0.0) continue;
        last_positive = c;
        if (rest < group[c]) { chosen = c; break; }
        rest -= group[c];
    }
    /* Rounding can leave u just past the last positive child: take that child. */
    if (chosen == k) {
        chosen = last_positive == k ? 0 : last_positive;
        rest = 0.0;
    }
    *u = rest;
    return node * k + chosen;
}

size_t sumtree_find(const sumtree *t, double u) {
    size_t node = 0;
    for (size_t l = 0; l < t->depth; l++) node = step(t, l, node, &u);
    return node;
}

#define LANES 16

void sumtree_find_many(const sumtree *t, double *u, size_t *out, size_t n) {
    /* Descend LANES draws together, level by level, prefetching each one's next child group: the
     * cache misses of the deep levels overlap instead of coming one after another. */
    for (size_t base = 0; base < n; base += LANES) {
        size_t m = n - base < LANES ? n - base : LANES;
        size_t node[LANES] = {0};
        for (size_t l = 0; l < t->depth; l++) {
            for (size_t j = 0; j < m; j++) {
                node[j] = step(t, l, node[j], &u[base + j]);
#if defined(__GNUC__) || defined(__clang__)
                if (l + 1 < t->depth) __builtin_prefetch(t->sum[l + 1] + node[j] * t->k, 0, 0);
#endif
            }
        }
        for (size_t j = 0; j < m; j++) out[base + j] = node[j];
    }
}

double sumtree_check(const sumtree *t) {
    double worst = 0.0;
    for (size_t l = 0; l + 1 < t->depth; l++) {
        for (size_t i = 0; i < t->width[l]; i++) {
            double s = 0.0;
            size_t first = i * t->k;
            if (first >= t->width[l + 1]) continue;
            for (size_t c = 0; c < t->k; c++) s += t->sum[l + 1][first + c];
            double err = fabs(s - t->sum[l][i]);
            if (err > worst) worst = err;
        }
    }
    return worst;
}
