/* K-ary sum and min trees over priorities, laid out for the cache: level l is one array, the K
 * children of node i at level l are nodes i*K .. i*K+K-1 of level l+1 (contiguous), and every level
 * starts on a 64-byte line, so with K = 8 doubles a child group is exactly one line.
 *
 * Concurrency: leaves may be written by any thread (sumtree_store_leaf); internal nodes are written
 * only by sumtree_propagate* / sumtree_rebuild*, which the caller serialises per node (replay.c:
 * stripe locks and the lazily rebuilt top).
 * Readers (sumtree_find_many, sumtree_total, sumtree_min) take no lock: every node is read and
 * written with relaxed atomic loads and stores, and a descent that meets sums in flux still lands on
 * a leaf that was positive when it read it. Pure C99 plus GCC/Clang atomic builtins; no Python. */
#ifndef PYREPLAY_SUMTREE_H
#define PYREPLAY_SUMTREE_H

#include <stddef.h>
#include <stdint.h>

#define SUMTREE_MAX_DEPTH 64
#define SUMTREE_MAX_K 64

typedef struct {
    size_t capacity;                    /* leaves 0 .. capacity-1 */
    size_t k;                           /* fan-out, 2..64 */
    size_t depth;                       /* levels; level 0 is the root group, level depth-1 the leaves */
    size_t width[SUMTREE_MAX_DEPTH];    /* nodes per level, a multiple of K */
    double *sum[SUMTREE_MAX_DEPTH];     /* sum[l][i]; sum[depth-1] holds the leaves (p^alpha) */
    double *min[SUMTREE_MAX_DEPTH];     /* internal levels only: smallest positive leaf below, +inf if none */
    void *block;                        /* one allocation for all levels (pyreplay_alloc) */
    size_t block_size;
    /* Stripes, for concurrent writers (replay.c): the nodes of level stripe_level split the tree
     * into subtrees of stripe_span leaves each. Writers recompute levels >= stripe_level holding
     * the subtree's lock; the few nodes above stripe_level are rebuilt lazily (replay.c). */
    size_t stripe_level, stripe_span, nstripes;
} sumtree;

/* Zeroed memory, aligned to at least 64 bytes; large blocks are mapped so that the kernel may back
 * them with huge pages (fewer TLB misses on random access to a 1M-leaf tree or 1M records). */
void *pyreplay_alloc(size_t n);
void pyreplay_free(void *p, size_t n);

#if defined(__GNUC__) || defined(__clang__)
static inline double sumtree_load(const double *p) {
    double v;
    __atomic_load((double *)p, &v, __ATOMIC_RELAXED);
    return v;
}
static inline void sumtree_store(double *p, double v) { __atomic_store(p, &v, __ATOMIC_RELAXED); }
#else
static inline double sumtree_load(const double *p) { return *(const volatile double *)p; }
static inline void sumtree_store(double *p, double v) { *(volatile double *)p = v; }
#endif

/* 0 on success, -1 when out of memory or the arguments are invalid (capacity 0, K outside 2..64). */
int sumtree_init(sumtree *t, size_t capacity, size_t k);
void sumtree_free(sumtree *t);
/* All leaves 0, all minima +inf. Not safe against concurrent readers. */
void sumtree_clear(sumtree *t);

static inline void sumtree_store_leaf(sumtree *t, size_t i, double v) { sumtree_store(&t->sum[t->depth - 1][i], v); }
static inline double sumtree_leaf(const sumtree *t, size_t i) { return sumtree_load(&t->sum[t->depth - 1][i]); }

/* Recompute the ancestors, at levels level-1 down to `stop`, of the contiguous nodes lo .. hi-1
 * of `level` (their own values are current). Callers keep two writers off the same node (replay.c:
 * stripe locks); readers may run meanwhile. */
void sumtree_propagate_range(sumtree *t, size_t level, size_t lo, size_t hi, size_t stop);
/* The same for one leaf. */
void sumtree_propagate_leaf(sumtree *t, size_t leaf, size_t stop);
/* Ask the cache for what sumtree_propagate_leaf(t, leaf, stop) will read: call it a few leaves
 * ahead so that the misses of consecutive paths overlap. */
void sumtree_prefetch_path(const sumtree *t, size_t leaf, size_t stop);
/* Recompute every node above `level` (levels level-1 .. 0) from the nodes of `level`. */
void sumtree_rebuild_above(sumtree *t, size_t level);
/* Recompute every internal node from the leaves. */
void sumtree_rebuild(sumtree *t);

double sumtree_total(const sumtree *t);
double sumtree_min(const sumtree *t);  /* the smallest positive leaf, +inf when none is */

/* For each of the n draws u[j] in [0, total): the leaf where the running sum of leaves passes u[j]
 * (out[j]); u[j] is overwritten with that leaf's value as read on the way (> 0 unless the tree
 * changed under the descent so that a whole group read as 0). Draws descend together, level by
 * level, so their cache misses overlap. */
void sumtree_find_many(const sumtree *t, double *u, size_t *out, size_t n);

/* Largest |stored - recomputed| over all internal sums, and +inf when a stored minimum differs
 * from the recomputed one: 0 for a consistent tree (recomputation adds children in the same order
 * as propagation, so a quiescent tree matches exactly). */
double sumtree_check(const sumtree *t);

/* splitmix64: a small, good generator for seeding and for uniform draws. */
static inline uint64_t pyreplay_next(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* A double uniform in [0, 1) with 53 random bits. */
static inline double pyreplay_uniform(uint64_t *state) {
    return (double)(pyreplay_next(state) >> 11) * (1.0 / 9007199254740992.0);
}

#endif
