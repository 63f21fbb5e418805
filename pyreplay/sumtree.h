/* K-ary sum and min trees over priorities, laid out for the cache: the K children of a node are
 * contiguous and every child group starts on a 64-byte line. Pure C99, no Python: the extension
 * (_core.c) and the sanitizer test driver (tests_c/test_sumtree.c) both build on it. */
#ifndef PYREPLAY_SUMTREE_H
#define PYREPLAY_SUMTREE_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    size_t capacity;  /* leaves in use: 0 .. capacity-1 */
    size_t k;         /* fan-out */
    size_t depth;     /* levels, the root level 0 holding one group of K nodes */
    size_t *width;    /* nodes per level (a multiple of K) */
    double **sum;     /* sum[level][i]; the last level holds the leaves */
    double **min;     /* min[level][i]; +inf where empty */
    void *block;      /* one aligned allocation for all levels */
} sumtree;

/* 0 on success, -1 when out of memory or the arguments are invalid. */
int sumtree_init(sumtree *t, size_t capacity, size_t k);
void sumtree_free(sumtree *t);
void sumtree_clear(sumtree *t);
/* Set leaf i to value v (v >= 0) and update the sums and minima above it. */
void sumtree_set(sumtree *t, size_t i, double v);
double sumtree_get(const sumtree *t, size_t i);
double sumtree_total(const sumtree *t);
/* The smallest leaf among those set (+inf when none is). */
double sumtree_min(const sumtree *t);
/* The leaf where the running sum of leaves passes u, 0 <= u < total; only leaves > 0 are returned. */
size_t sumtree_find(const sumtree *t, double u);
/* sumtree_find for n draws at once (u is overwritten): faster on large trees. */
void sumtree_find_many(const sumtree *t, double *u, size_t *out, size_t n);
/* Largest |stored sum - recomputed sum| over all internal nodes: 0 for a consistent tree. */
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
