/* The replay buffer's core, in C99 with pthreads and GCC/Clang atomic builtins; no Python.
 *
 * Storage: one record per slot, `stride` bytes, 64-byte aligned array. A record starts with a
 * 64-bit sequence counter (0: never written; odd: being written; even > 0: complete) followed by
 * the fields at fixed offsets. Writers own a record by moving its counter from even to odd with a
 * compare-and-swap and publish it by storing the next even value; readers copy a record and retry
 * when the counter moved or was odd (a seqlock). So no lock is held while rows are copied, and a
 * sample never returns a torn row.
 *
 * Locks (never held while waiting for the GIL):
 *   state  reader-writer: add, sample, update share it; clear, save, load, check, leaves take it
 *          exclusively, so those see (and make) a quiescent buffer.
 *   pos    mutex, held only to reserve slots (pos, size).
 *   stripe one spinlock per subtree (sumtree.h: stripes), held to write its leaves and recompute
 *          its nodes up to its root; writers on different subtrees run in parallel.
 * The few dozen nodes above the subtrees' roots take no lock: they are rebuilt lazily by whichever
 * writer finds no rebuild running (replay.c: top_refresh); a writer never waits for another there.
 * Samplers take no lock but the shared state lock: they descend the tree with relaxed atomic loads
 * (see sumtree.h). A writer recomputes a node only after writing what is below it, and
 * recomputation reads the children afresh, so the last recomputation of every node sees the final
 * children: no update is lost, and a quiescent tree is exact.
 */
#ifndef PYREPLAY_REPLAY_H
#define PYREPLAY_REPLAY_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "sumtree.h"

#define REPLAY_MAX_FIELDS 64
#define REPLAY_HEADER 8 /* the sequence counter at the start of every record */

enum {
    REPLAY_OK = 0,
    REPLAY_ENOMEM = -1,
    REPLAY_EINVAL = -2,
    REPLAY_EMPTY = -3,      /* sample from an empty buffer */
    REPLAY_EZERO = -4,      /* every priority is zero */
    REPLAY_EINDEX = -5,     /* update: index out of range (bad_pos says which) */
    REPLAY_EPRIORITY = -6,  /* update: negative, NaN or infinite priority (bad_pos says which) */
    REPLAY_EIO = -7,        /* errno says why */
    REPLAY_ETRUNCATED = -8, /* load: the file ends early */
    REPLAY_ECHECKSUM = -9,  /* load: checksum mismatch */
    REPLAY_ECORRUPT = -10,  /* load: the checksum matched but the state is impossible */
};

typedef struct {
    size_t capacity, stride, nfields;
    size_t offset[REPLAY_MAX_FIELDS], bytes[REPLAY_MAX_FIELDS];
    unsigned char *records; /* capacity * stride bytes, 64-byte aligned (pyreplay_alloc) */
    int prioritized;
    double alpha;
    sumtree tree;
    pthread_rwlock_t state_lock;
    pthread_mutex_t pos_lock;
    int top_dirty, top_busy;          /* lazy rebuild of the nodes above the stripes (replay.c) */
    unsigned char *stripe_locks;      /* tree.nstripes spinlocks */
    size_t pos, size;                 /* next slot to write; slots in use (size is read atomically) */
    uint64_t max_priority_bits;       /* largest priority given so far (atomic; for p >= 0 the bits
                                         of doubles order like the values) */
    uint64_t rng_key, rng_counter;    /* the buffer's own draws: splitmix(key + counter++) per call */
} replay;

/* Fields have bytes[i] bytes each, aligned to align[i] (a power of two <= 64) inside the record. */
int replay_init(replay *r, size_t capacity, size_t nfields, const size_t *bytes, const size_t *align,
                int prioritized, double alpha, size_t k, uint64_t seed);
void replay_destroy(replay *r);

size_t replay_size(replay *r);

/* Add n rows; src[f] points at n rows of field f. Rows past the capacity wrap; when n > capacity
 * only the last `capacity` rows are kept. *first is the slot of row 0 (modulo the capacity). New
 * rows get the largest priority given so far. */
int replay_add(replay *r, const void *const *src, size_t n, size_t *first);

/* Draw n slots (with replacement): uniformly, or with probability leaf/total; copy their fields to
 * dst[f] (n rows each; a NULL dst[f] is skipped), their slots to idx and their importance weights to w:
 * w_i = (leaf_i / min_leaf)^-beta = (N P(i))^-beta / max_j (N P(j))^-beta. `seed` drives the draws
 * when use_seed, otherwise the buffer's own generator. */
int replay_sample(replay *r, size_t n, double beta, uint64_t seed, int use_seed, void *const *dst, int64_t *idx,
                  double *w);

/* Set the priorities of slots idx[0..n) to p (float64 when p_is_double, else float32); all or
 * nothing: a bad index or priority changes nothing and sets *bad_pos. */
int replay_update(replay *r, const int64_t *idx, const void *p, int p_is_double, size_t n, size_t *bad_pos);

void replay_clear(replay *r);
/* Copy the leaves (p^alpha per slot, capacity of them) to out. */
void replay_leaves(replay *r, double *out);
/* Consistency of the tree: see sumtree_check. Exact once every call has returned: a deferred rebuild
 * of the top is done by a call that has not returned yet. */
double replay_check(replay *r);
/* The largest priority given so far (1 at first): new rows get its p^alpha. */
double replay_max_priority(replay *r);

/* Write `prefix` (magic, version, metadata: the caller's) then the state, the `size` used records,
 * the leaves and a checksum over everything after the first 8 bytes. */
int replay_save(replay *r, const char *path, const void *prefix, size_t prefix_len);
/* Read a file written by replay_save into a fresh buffer with the same layout. The first
 * `prefix_len` bytes are the caller's (already parsed); they count in the checksum. */
int replay_load(replay *r, const char *path, size_t prefix_len);

#endif
