#define _DEFAULT_SOURCE /* mmap's MAP_ANONYMOUS and madvise under -std=c99 */
#include "sumtree.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#if defined(__unix__) || defined(__APPLE__)
#include <sys/mman.h>
#endif

#define LINE 64

static size_t round_up(size_t n, size_t m) { return (n + m - 1) / m * m; }

/* Meaningful nodes of level l (the rest of the level, up to width[l], is padding that stays 0). */
static size_t nodes_at(const sumtree *t, size_t l) {
    size_t n = t->capacity;
    for (size_t j = t->depth - 1; j > l; j--) n = (n + t->k - 1) / t->k;
    return n;
}

#define HUGE_PAGE ((size_t)2 << 20)

void *pyreplay_alloc(size_t n) {
#if defined(MAP_ANONYMOUS)
    if (n >= HUGE_PAGE) {
        /* Map a little more, keep a 2 MiB-aligned window: huge pages need aligned ranges. */
        size_t len = (n + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE, extra = len + HUGE_PAGE;
        char *raw = mmap(NULL, extra, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (raw == MAP_FAILED) return NULL;
        char *p = (char *)(((uintptr_t)raw + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE);
        if (p > raw) munmap(raw, (size_t)(p - raw));
        if (raw + extra > p + len) munmap(p + len, (size_t)(raw + extra - (p + len)));
#ifdef MADV_HUGEPAGE
        madvise(p, len, MADV_HUGEPAGE);
#endif
        return p;
    }
#endif
    void *p = NULL;
    if (posix_memalign(&p, LINE, n ? n : 1) != 0) return NULL;
    memset(p, 0, n);
    return p;
}

void pyreplay_free(void *p, size_t n) {
    if (!p) return;
#if defined(MAP_ANONYMOUS)
    if (n >= HUGE_PAGE) {
        munmap(p, (n + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE);
        return;
    }
#endif
    free(p);
}

int sumtree_init(sumtree *t, size_t capacity, size_t k) {
    memset(t, 0, sizeof *t);
    if (capacity == 0 || k < 2 || k > SUMTREE_MAX_K) return -1;
    t->capacity = capacity;
    t->k = k;
    /* depth: the smallest d >= 1 with k^d >= capacity. */
    size_t depth = 1, span = k;
    while (span < capacity) {
        if (depth + 1 >= SUMTREE_MAX_DEPTH) return -1;
        span = span > SIZE_MAX / k ? SIZE_MAX : span * k;
        depth++;
    }
    t->depth = depth;
    /* Width of a level: its meaningful nodes rounded up to whole groups of K, so that every
     * meaningful node's K children exist in the level below. */
    size_t total = 0;
    for (size_t l = 0; l < depth; l++) {
        t->width[l] = round_up(nodes_at(t, l), k);
        total += round_up(t->width[l] * sizeof(double), LINE);
        if (l + 1 < depth) total += round_up(t->width[l] * sizeof(double), LINE);
    }
    /* Stripe level: the deepest level of at most 256 nodes (and at least two levels above the
     * leaves): two writers rarely want one subtree at once, and the part above, which is rebuilt
     * whole (replay.c: top_refresh), is a few dozen nodes. */
    t->stripe_level = 0;
    for (size_t l = 0; l + 2 < depth; l++)
        if (nodes_at(t, l) <= 256) t->stripe_level = l;
    t->stripe_span = 1;
    for (size_t l = t->stripe_level; l + 1 < depth; l++) t->stripe_span *= k;
    t->nstripes = nodes_at(t, t->stripe_level);
    t->block = pyreplay_alloc(total);
    if (!t->block) return -1;
    t->block_size = total;
    char *p = t->block;
    for (size_t l = 0; l < depth; l++) {
        t->sum[l] = (double *)p;
        p += round_up(t->width[l] * sizeof(double), LINE);
    }
    for (size_t l = 0; l + 1 < depth; l++) {
        t->min[l] = (double *)p;
        p += round_up(t->width[l] * sizeof(double), LINE);
    }
    sumtree_clear(t);
    return 0;
}

void sumtree_free(sumtree *t) {
    pyreplay_free(t->block, t->block_size);
    memset(t, 0, sizeof *t);
}

void sumtree_clear(sumtree *t) {
    for (size_t l = 0; l < t->depth; l++) {
        memset(t->sum[l], 0, t->width[l] * sizeof(double));
        if (l + 1 < t->depth)
            for (size_t i = 0; i < t->width[l]; i++) t->min[l][i] = INFINITY;
    }
}

/* Node p of level pl from its K children in level pl+1; children are added in order 0..K-1. */
static inline void recompute(sumtree *t, size_t pl, size_t p) {
    size_t k = t->k, first = p * k;
    const double *s = t->sum[pl + 1] + first;
    double total = 0.0, m = INFINITY;
    if (pl + 2 == t->depth) {
        for (size_t c = 0; c < k; c++) {
            double v = sumtree_load(s + c);
            total += v;
            if (v > 0.0 && v < m) m = v;
        }
    } else {
        const double *mins = t->min[pl + 1] + first;
        for (size_t c = 0; c < k; c++) {
            total += sumtree_load(s + c);
            double v = sumtree_load(mins + c);
            if (v < m) m = v;
        }
    }
    sumtree_store(&t->sum[pl][p], total);
    sumtree_store(&t->min[pl][p], m);
}

#if defined(__GNUC__) || defined(__clang__)
#define PREFETCH(p) __builtin_prefetch((p), 0, 3)
#else
#define PREFETCH(p) ((void)(p))
#endif
void sumtree_propagate_range(sumtree *t, size_t level, size_t lo, size_t hi, size_t stop) {
    size_t k = t->k;
    if (hi <= lo) return;
    for (size_t l = level; l > stop; l--) {
        lo /= k;
        hi = (hi - 1) / k + 1;
        for (size_t p = lo; p < hi; p++) recompute(t, l - 1, p);
    }
}

void sumtree_propagate_leaf(sumtree *t, size_t leaf, size_t stop) {
    for (size_t l = t->depth - 1; l > stop; l--) {
        leaf /= t->k;
        recompute(t, l - 1, leaf);
    }
}

void sumtree_rebuild_above(sumtree *t, size_t level) {
    for (size_t l = level; l > 0; l--) {
        size_t n = nodes_at(t, l - 1);
        for (size_t p = 0; p < n; p++) recompute(t, l - 1, p);
    }
}

void sumtree_rebuild(sumtree *t) { sumtree_rebuild_above(t, t->depth - 1); }

void sumtree_prefetch_path(const sumtree *t, size_t leaf, size_t stop) {
    size_t k = t->k;
    for (size_t l = t->depth - 1; l > stop; l--) {
        size_t group = leaf / k * k;
        PREFETCH(t->sum[l] + group);
        if (l + 1 < t->depth) PREFETCH(t->min[l] + group);
        leaf /= k;
    }
}

double sumtree_total(const sumtree *t) {
    double s = 0.0;
    for (size_t c = 0; c < t->k; c++) s += sumtree_load(&t->sum[0][c]);
    return s;
}

double sumtree_min(const sumtree *t) {
    double m = INFINITY;
    for (size_t c = 0; c < t->k; c++) {
        double v = t->depth == 1 ? sumtree_load(&t->sum[0][c]) : sumtree_load(&t->min[0][c]);
        if (v > 0.0 && v < m) m = v;
    }
    return m;
}

/* One step down inside a child group: the child where *u falls (the first whose prefix sum
 * exceeds *u, which is never a child of sum 0); *u becomes the remainder. Branch-free, because
 * which child is taken is unpredictable. A draw past the end (rounding, or sums changing under a
 * lock-free reader) takes the last positive child; a group with no positive child gives child 0,
 * which always exists. */
static inline size_t step(const double *group, size_t k, double *u, double *val) {
    double acc = 0.0, below = 0.0, x = *u;
    size_t chosen = 0;
    for (size_t c = 0; c < k; c++) {
        acc += sumtree_load(group + c);
        int passed = acc <= x;
        chosen += (size_t)passed;
        below = passed ? acc : below;
    }
    if (chosen < k) {
        *u = x - below;
        *val = sumtree_load(group + chosen);
        return chosen;
    }
    size_t last = k;
    for (size_t c = k; c-- > 0;) {
        if (sumtree_load(group + c) > 0.0) {
            last = c;
            break;
        }
    }
    if (last == k) {
        *u = 0.0;
        *val = 0.0;
        return 0;
    }
    *val = sumtree_load(group + last);
    *u = *val * 0.5;
    return last;
}

#define LANES 16

/* Descend `m` <= LANES draws together, one level at a time; K is a constant where inlined. */
static inline void descend(const sumtree *t, size_t k, double *u, size_t *out, size_t m) {
    size_t node[LANES] = {0};
    double v[LANES] = {0};
    for (size_t l = 0; l < t->depth; l++) {
        const double *level = t->sum[l];
        for (size_t j = 0; j < m; j++) {
            size_t first = node[j] * k;
            node[j] = first + step(level + first, k, &u[j], &v[j]);
            if (l + 1 < t->depth) PREFETCH(t->sum[l + 1] + node[j] * k);
        }
    }
    for (size_t j = 0; j < m; j++) {
        out[j] = node[j];
        u[j] = v[j];
    }
}

void sumtree_find_many(const sumtree *t, double *u, size_t *out, size_t n) {
    for (size_t base = 0; base < n; base += LANES) {
        size_t m = n - base < LANES ? n - base : LANES;
        switch (t->k) {
        case 4: descend(t, 4, u + base, out + base, m); break;
        case 8: descend(t, 8, u + base, out + base, m); break;
        case 16: descend(t, 16, u + base, out + base, m); break;
        default: descend(t, t->k, u + base, out + base, m);
        }
    }
}

double sumtree_check(const sumtree *t) {
    double worst = 0.0;
    for (size_t l = t->depth - 1; l > 0; l--) {
        size_t n = nodes_at(t, l - 1), k = t->k;
        for (size_t p = 0; p < n; p++) {
            double s = 0.0, m = INFINITY;
            for (size_t c = 0; c < k; c++) {
                double v = t->sum[l][p * k + c];
                s += v;
                double mv = l + 1 == t->depth ? (v > 0.0 ? v : INFINITY) : t->min[l][p * k + c];
                if (mv < m) m = mv;
            }
            double err = fabs(s - t->sum[l - 1][p]);
            if (err > worst) worst = err;
            if (m != t->min[l - 1][p]) worst = INFINITY;
        }
    }
    return worst;
}
