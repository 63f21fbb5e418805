#define _GNU_SOURCE /* writer-preferring rwlocks and adaptive mutexes on glibc; harmless elsewhere */
#include "replay.h"

#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#if !defined(__GNUC__) && !defined(__clang__)
#error "pyreplay needs the GCC/Clang __atomic builtins"
#endif

#define LINE 64
#define PREFETCH_AHEAD 8
#define PATH_AHEAD 6
#define STACK_ITEMS 512

static inline uint64_t load_acquire(const uint64_t *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
static inline uint64_t load_relaxed(const uint64_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
static inline void store_release(uint64_t *p, uint64_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }

static inline void cpu_relax(unsigned *spins) {
    /* Spin briefly (the other side is copying one row), then let the scheduler run it. */
    if (++*spins > 64) {
        sched_yield();
        *spins = 0;
    }
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static size_t round_up(size_t n, size_t m) { return (n + m - 1) / m * m; }

static double leaf_of(const replay *r, double p) { return r->alpha == 1.0 ? p : pow(p, r->alpha); }

static uint64_t bits_of(double d) {
    uint64_t u;
    memcpy(&u, &d, 8);
    return u;
}

static double double_of(uint64_t u) {
    double d;
    memcpy(&d, &u, 8);
    return d;
}

double replay_max_priority(replay *r) { return double_of(__atomic_load_n(&r->max_priority_bits, __ATOMIC_RELAXED)); }

static void raise_max_priority(replay *r, double p) {
    uint64_t want = bits_of(p), have = __atomic_load_n(&r->max_priority_bits, __ATOMIC_RELAXED);
    while (want > have &&
           !__atomic_compare_exchange_n(&r->max_priority_bits, &have, want, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
}

/* One spinlock per cache line: two writers on different subtrees never share a line. */
#define LOCK_STRIDE LINE

static void stripe_lock(replay *r, size_t s) {
    unsigned char *lock = r->stripe_locks + s * LOCK_STRIDE;
    unsigned spins = 0;
    while (__atomic_exchange_n(lock, 1, __ATOMIC_ACQUIRE)) {
        while (__atomic_load_n(lock, __ATOMIC_RELAXED)) cpu_relax(&spins);
    }
}

static void stripe_unlock(replay *r, size_t s) { __atomic_store_n(r->stripe_locks + s * LOCK_STRIDE, 0, __ATOMIC_RELEASE); }

/* Who writes which node: a subtree's lock guards its leaves and its nodes up to its root (level
 * stripe_level); the few nodes above the roots are rebuilt whole by top_refresh.
 *
 * Lazy writing of the top: a writer marks the top dirty and rebuilds it only when no one else is
 * rebuilding; one that finds it busy leaves its change to the rebuilder, who looks at the mark
 * again after finishing. So writers never wait for each other here and no change is lost: every
 * mark is followed by a rebuild that starts after it (all four operations are sequentially
 * consistent, so a writer that sees `busy` set is seen by that holder's final look at `dirty`).
 * Samplers meanwhile read a top that lags the subtrees by at most one rebuild. */
static void top_refresh(replay *r) {
    sumtree *t = &r->tree;
    if (t->stripe_level == 0) return; /* the stripes' roots are the top */
    __atomic_store_n(&r->top_dirty, 1, __ATOMIC_SEQ_CST);
    while (__atomic_load_n(&r->top_dirty, __ATOMIC_SEQ_CST) &&
           !__atomic_exchange_n(&r->top_busy, 1, __ATOMIC_SEQ_CST)) {
        __atomic_exchange_n(&r->top_dirty, 0, __ATOMIC_SEQ_CST);
        sumtree_rebuild_above(t, t->stripe_level);
        __atomic_store_n(&r->top_busy, 0, __ATOMIC_SEQ_CST);
    }
}

/* Leaves lo .. hi-1 (no wrap) to v: subtree by subtree, then the top. */
static void set_range(replay *r, size_t lo, size_t hi, double v) {
    sumtree *t = &r->tree;
    size_t span = t->stripe_span;
    if (hi <= lo) return;
    for (size_t st = lo / span; st <= (hi - 1) / span; st++) {
        size_t a = st * span > lo ? st * span : lo, b = (st + 1) * span < hi ? (st + 1) * span : hi;
        stripe_lock(r, st);
        for (size_t i = a; i < b; i++) sumtree_store_leaf(t, i, v);
        sumtree_propagate_range(t, t->depth - 1, a, b, t->stripe_level);
        stripe_unlock(r, st);
    }
    top_refresh(r);
}

int replay_init(replay *r, size_t capacity, size_t nfields, const size_t *bytes, const size_t *align,
                int prioritized, double alpha, size_t k, uint64_t seed) {
    memset(r, 0, sizeof *r);
    if (capacity == 0 || nfields == 0 || nfields > REPLAY_MAX_FIELDS) return REPLAY_EINVAL;
    size_t off = REPLAY_HEADER;
    for (size_t f = 0; f < nfields; f++) {
        size_t a = align[f] ? align[f] : 1;
        if (a > LINE || (a & (a - 1)) != 0 || bytes[f] == 0) return REPLAY_EINVAL;
        off = round_up(off, a);
        r->offset[f] = off;
        r->bytes[f] = bytes[f];
        if (bytes[f] > SIZE_MAX / 2 - off) return REPLAY_EINVAL;
        off += bytes[f];
    }
    /* Small records take a power of two so none straddles a cache line more than it must. */
    size_t stride = 16;
    if (off <= LINE)
        while (stride < off) stride *= 2;
    else
        stride = round_up(off, LINE);
    if (capacity > (SIZE_MAX - LINE) / stride) return REPLAY_ENOMEM;
    r->capacity = capacity;
    r->stride = stride;
    r->nfields = nfields;
    /* Zero pages, touched only when first written. */
    r->records = pyreplay_alloc(capacity * stride);
    if (!r->records) return REPLAY_ENOMEM;
    r->prioritized = prioritized;
    r->alpha = alpha;
    r->max_priority_bits = bits_of(1.0);
    if (prioritized && sumtree_init(&r->tree, capacity, k) != 0) {
        pyreplay_free(r->records, capacity * stride);
        r->records = NULL;
        return REPLAY_ENOMEM;
    }
    if (prioritized && !(r->stripe_locks = calloc(r->tree.nstripes, LOCK_STRIDE))) {
        sumtree_free(&r->tree);
        pyreplay_free(r->records, capacity * stride);
        r->records = NULL;
        return REPLAY_ENOMEM;
    }
    r->rng_key = seed;
    pthread_rwlockattr_t ra;
    pthread_rwlockattr_init(&ra);
#ifdef __GLIBC__
    /* glibc prefers readers by default: clear() or save() could then wait forever behind samplers. */
    pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
#endif
    pthread_rwlock_init(&r->state_lock, &ra);
    pthread_rwlockattr_destroy(&ra);
    pthread_mutexattr_t ma;
    pthread_mutexattr_init(&ma);
#ifdef __GLIBC__
    pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ADAPTIVE_NP); /* short sections: spin before sleeping */
#endif
    pthread_mutex_init(&r->pos_lock, &ma);
    pthread_mutexattr_destroy(&ma);
    return REPLAY_OK;
}

void replay_destroy(replay *r) {
    if (!r->records) return;
    pyreplay_free(r->records, r->capacity * r->stride);
    r->records = NULL;
    if (r->prioritized) {
        sumtree_free(&r->tree);
        free(r->stripe_locks);
    }
    pthread_rwlock_destroy(&r->state_lock);
    pthread_mutex_destroy(&r->pos_lock);
}

size_t replay_size(replay *r) { return __atomic_load_n(&r->size, __ATOMIC_RELAXED); }

/* Fixed sizes become plain moves instead of a call to memcpy; so do sizes of 4 to 32 bytes (a
 * field of 3 floats, say), as two moves that may overlap. */
static inline void copy_bytes(unsigned char *dst, const unsigned char *src, size_t n) {
    switch (n) {
    case 1: memcpy(dst, src, 1); return;
    case 2: memcpy(dst, src, 2); return;
    case 4: memcpy(dst, src, 4); return;
    case 8: memcpy(dst, src, 8); return;
    case 16: memcpy(dst, src, 16); return;
    case 32: memcpy(dst, src, 32); return;
    case 64: memcpy(dst, src, 64); return;
    }
    unsigned char head[16], tail[16];
    if (n > 4 && n < 8) {
        memcpy(head, src, 4);
        memcpy(tail, src + n - 4, 4);
        memcpy(dst, head, 4);
        memcpy(dst + n - 4, tail, 4);
    } else if (n > 8 && n < 16) {
        memcpy(head, src, 8);
        memcpy(tail, src + n - 8, 8);
        memcpy(dst, head, 8);
        memcpy(dst + n - 8, tail, 8);
    } else if (n > 16 && n < 32) {
        memcpy(head, src, 16);
        memcpy(tail, src + n - 16, 16);
        memcpy(dst, head, 16);
        memcpy(dst + n - 16, tail, 16);
    } else {
        memcpy(dst, src, n);
    }
}

static inline uint64_t *seq_of(const replay *r, size_t slot) { return (uint64_t *)(r->records + slot * r->stride); }

int replay_add(replay *r, const void *const *src, size_t n, size_t *first) {
    size_t cap = r->capacity;
    pthread_rwlock_rdlock(&r->state_lock);
    pthread_mutex_lock(&r->pos_lock);
    size_t start = r->pos;
    r->pos = (start + n % cap) % cap;
    size_t size = r->size, grown = n >= cap - size ? cap : size + n;
    __atomic_store_n(&r->size, grown, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&r->pos_lock);
    *first = start;
    /* Rows that the same call would overwrite again are skipped. */
    size_t skip = n > cap ? n - cap : 0, slot = (start + skip % cap) % cap;
    size_t first_written = slot;
    for (size_t row = skip; row < n; row++) {
        uint64_t *seq = seq_of(r, slot), s;
        unsigned spins = 0;
        for (;;) {
            s = load_relaxed(seq);
            if (!(s & 1) && __atomic_compare_exchange_n(seq, &s, s + 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) break;
            cpu_relax(&spins);
        }
        unsigned char *rec = (unsigned char *)seq;
        for (size_t f = 0; f < r->nfields; f++)
            copy_bytes(rec + r->offset[f], (const unsigned char *)src[f] + row * r->bytes[f], r->bytes[f]);
        store_release(seq, s + 2);
        if (++slot == cap) slot = 0;
    }
    if (r->prioritized && n > skip) {
        /* Leaves become positive only after their rows are complete. */
        size_t count = n - skip, lo = first_written, hi = lo + count;
        double v = leaf_of(r, replay_max_priority(r));
        if (hi <= cap) {
            set_range(r, lo, hi, v);
        } else {
            set_range(r, lo, cap, v);
            set_range(r, 0, hi - cap, v);
        }
    }
    pthread_rwlock_unlock(&r->state_lock);
    return REPLAY_OK;
}

static inline void prefetch_record(const replay *r, size_t slot) {
    const unsigned char *p = r->records + slot * r->stride;
    __builtin_prefetch(p, 0, 0);
    if (r->stride > LINE) __builtin_prefetch(p + LINE, 0, 0);
}

int replay_sample(replay *r, size_t n, double beta, uint64_t seed, int use_seed, void *const *dst, int64_t *idx,
                  double *w) {
    int rc = REPLAY_OK;
    pthread_rwlock_rdlock(&r->state_lock);
    size_t size = replay_size(r);
    if (size == 0) {
        rc = REPLAY_EMPTY;
        goto done;
    }
    uint64_t state = seed;
    if (!use_seed) {
        uint64_t c = __atomic_fetch_add(&r->rng_counter, 1, __ATOMIC_RELAXED);
        state = r->rng_key + c * 0xD1B54A32D192ED03ULL;
        state = pyreplay_next(&state);
    }
    if (r->prioritized) {
        double total = sumtree_total(&r->tree);
        if (!(total > 0.0)) {
            rc = REPLAY_EZERO;
            goto done;
        }
        double smallest = sumtree_min(&r->tree);
        /* size_t and int64_t have one size on every platform this builds for (checked below). */
        size_t *slots = (size_t *)idx;
        for (size_t i = 0; i < n; i++) w[i] = pyreplay_uniform(&state) * total;
        sumtree_find_many(&r->tree, w, slots, n);
        for (size_t i = 0; i < n; i++) {
            /* A leaf read as 0 means the tree changed under the descent: draw that one again. */
            for (int tries = 0; !(w[i] > 0.0) && tries < 1000; tries++) {
                double u = pyreplay_uniform(&state) * sumtree_total(&r->tree);
                sumtree_find_many(&r->tree, &u, &slots[i], 1);
                w[i] = u;
            }
            /* The rows' cache misses overlap with the pow below. */
            prefetch_record(r, slots[i]);
            w[i] = beta == 0.0 ? 1.0 : pow(w[i] / smallest, -beta);
            idx[i] = (int64_t)slots[i];
        }
    } else {
        for (size_t i = 0; i < n; i++) {
            idx[i] = (int64_t)(pyreplay_uniform(&state) * (double)size);
            w[i] = 1.0;
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (i + PREFETCH_AHEAD < n) prefetch_record(r, (size_t)idx[i + PREFETCH_AHEAD]);
        unsigned spins = 0;
        for (;;) {
            const uint64_t *seq = seq_of(r, (size_t)idx[i]);
            uint64_t s1 = load_acquire(seq);
            if (s1 & 1) { /* being written: wait for the writer's copy to finish */
                cpu_relax(&spins);
                continue;
            }
            if (s1 == 0 && !r->prioritized) {
                /* Reserved but not written yet (a concurrent add): draw another slot. */
                idx[i] = (int64_t)(pyreplay_uniform(&state) * (double)replay_size(r));
                continue;
            }
            const unsigned char *rec = (const unsigned char *)seq;
            for (size_t f = 0; f < r->nfields; f++)
                if (dst[f]) copy_bytes((unsigned char *)dst[f] + i * r->bytes[f], rec + r->offset[f], r->bytes[f]);
            __atomic_thread_fence(__ATOMIC_ACQUIRE);
            if (load_relaxed(seq) == s1) break;
        }
    }
done:
    pthread_rwlock_unlock(&r->state_lock);
    return rc;
}

typedef char size_t_matches_int64[sizeof(size_t) == sizeof(int64_t) ? 1 : -1];

int replay_update(replay *r, const int64_t *idx, const void *p, int p_is_double, size_t n, size_t *bad_pos) {
    if (!r->prioritized) return REPLAY_EINVAL;
    pthread_rwlock_rdlock(&r->state_lock);
    int rc = REPLAY_OK;
    size_t size = replay_size(r);
    for (size_t i = 0; i < n; i++) {
        if (idx[i] < 0 || (uint64_t)idx[i] >= size) {
            *bad_pos = i;
            rc = REPLAY_EINDEX;
            goto done;
        }
    }
    const double *pd = p;
    const float *pf = p;
    double pmax = 0.0;
    for (size_t i = 0; i < n; i++) {
        double v = p_is_double ? pd[i] : (double)pf[i];
        if (!(v >= 0.0) || isinf(v)) { /* !(v >= 0) catches NaN too */
            *bad_pos = i;
            rc = REPLAY_EPRIORITY;
            goto done;
        }
        if (v > pmax) pmax = v;
    }
    /* p^alpha before any lock: the pow calls are the costly part and run in parallel. */
    double stack_v[STACK_ITEMS];
    double *leaves = stack_v, *heap = NULL;
    if (n > STACK_ITEMS) {
        leaves = heap = malloc(n * sizeof(double));
        if (!heap) {
            rc = REPLAY_ENOMEM;
            goto done;
        }
    }
    for (size_t i = 0; i < n; i++) leaves[i] = leaf_of(r, p_is_double ? pd[i] : (double)pf[i]);
    raise_max_priority(r, pmax);
    /* Each leaf and its path up to its subtree's root under the subtree's lock; then the top. */
    sumtree *t = &r->tree;
    size_t span = t->stripe_span;
    for (size_t i = 0; i < n; i++) {
        size_t leaf = (size_t)idx[i], st = leaf / span;
        if (i + PATH_AHEAD < n) sumtree_prefetch_path(t, (size_t)idx[i + PATH_AHEAD], t->stripe_level);
        stripe_lock(r, st);
        sumtree_store_leaf(t, leaf, leaves[i]);
        sumtree_propagate_leaf(t, leaf, t->stripe_level);
        stripe_unlock(r, st);
    }
    top_refresh(r);
    free(heap);
done:
    pthread_rwlock_unlock(&r->state_lock);
    return rc;
}

void replay_clear(replay *r) {
    pthread_rwlock_wrlock(&r->state_lock);
    for (size_t i = 0; i < r->capacity; i++) *seq_of(r, i) = 0;
    r->pos = r->size = 0;
    r->max_priority_bits = bits_of(1.0);
    if (r->prioritized) sumtree_clear(&r->tree);
    pthread_rwlock_unlock(&r->state_lock);
}

void replay_leaves(replay *r, double *out) {
    pthread_rwlock_wrlock(&r->state_lock);
    for (size_t i = 0; i < r->capacity; i++) out[i] = r->prioritized ? sumtree_leaf(&r->tree, i) : 0.0;
    pthread_rwlock_unlock(&r->state_lock);
}

double replay_check(replay *r) {
    pthread_rwlock_wrlock(&r->state_lock);
    double err = r->prioritized ? sumtree_check(&r->tree) : 0.0;
    pthread_rwlock_unlock(&r->state_lock);
    return err;
}

/* ---------------------------------------------------------------- save and load
 * Checksum: four 64-bit lanes, each lane = rotl(lane ^ word, 31) * odd constant over its words.
 * Every step is a bijection of the lane, and the final mix is a bijection of each lane, so any
 * change confined to one 8-byte word (a flipped bit, a bad byte) always changes the checksum. */

#define CK_PRIME 0x9E3779B97F4A7C15ULL

typedef struct {
    uint64_t lane[4], total;
    unsigned char buf[32];
    size_t nbuf;
} checksum;

static void ck_init(checksum *c) {
    memset(c, 0, sizeof *c);
    for (int j = 0; j < 4; j++) c->lane[j] = 0x243F6A8885A308D3ULL * (uint64_t)(j + 1);
}

static inline uint64_t rotl(uint64_t x, int s) { return (x << s) | (x >> (64 - s)); }

static void ck_block(checksum *c, const unsigned char *p) {
    for (int j = 0; j < 4; j++) {
        uint64_t w;
        memcpy(&w, p + 8 * j, 8);
        c->lane[j] = rotl(c->lane[j] ^ w, 31) * CK_PRIME;
    }
}

static void ck_update(checksum *c, const void *data, size_t n) {
    const unsigned char *p = data;
    c->total += n;
    if (c->nbuf) {
        size_t take = 32 - c->nbuf < n ? 32 - c->nbuf : n;
        memcpy(c->buf + c->nbuf, p, take);
        c->nbuf += take;
        p += take;
        n -= take;
        if (c->nbuf < 32) return;
        ck_block(c, c->buf);
        c->nbuf = 0;
    }
    for (; n >= 32; n -= 32, p += 32) ck_block(c, p);
    memcpy(c->buf, p, n);
    c->nbuf = n;
}

static uint64_t ck_final(checksum *c) {
    if (c->nbuf) {
        memset(c->buf + c->nbuf, 0, 32 - c->nbuf);
        ck_block(c, c->buf);
    }
    uint64_t x = c->total * CK_PRIME;
    for (int j = 0; j < 4; j++) x = rotl(x ^ c->lane[j], 27) * CK_PRIME;
    return x ^ (x >> 32);
}

static int write_all(FILE *f, checksum *c, const void *data, size_t n) {
    if (c) ck_update(c, data, n);
    return fwrite(data, 1, n, f) == n ? 0 : -1;
}

static int read_all(FILE *f, checksum *c, void *data, size_t n) {
    if (fread(data, 1, n, f) != n) return -1;
    if (c) ck_update(c, data, n);
    return 0;
}

static void put_u64(unsigned char *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i)); /* little-endian on every host */
}

static uint64_t get_u64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}


#define STATE_WORDS 6
#define CHUNK (1u << 20)

int replay_save(replay *r, const char *path, const void *prefix, size_t prefix_len) {
    if (prefix_len < 8) return REPLAY_EINVAL;
    FILE *f = fopen(path, "wb");
    if (!f) return REPLAY_EIO;
    unsigned char *stage = malloc(CHUNK > r->stride ? CHUNK : r->stride);
    if (!stage) {
        fclose(f);
        return REPLAY_ENOMEM;
    }
    int err = 0;
    checksum c;
    ck_init(&c);
    pthread_rwlock_wrlock(&r->state_lock);
    size_t size = r->size;
    unsigned char state[8 * STATE_WORDS];
    put_u64(state, r->pos);
    put_u64(state + 8, size);
    put_u64(state + 16, r->max_priority_bits);
    put_u64(state + 24, r->rng_key);
    put_u64(state + 32, r->rng_counter);
    put_u64(state + 40, r->stride);
    err |= write_all(f, NULL, prefix, 8);
    err |= write_all(f, &c, (const unsigned char *)prefix + 8, prefix_len - 8);
    err |= write_all(f, &c, state, sizeof state);
    /* Records go through a staging buffer so that their sequence counters are written as 2: equal
     * buffers give equal files. */
    size_t per = CHUNK / r->stride ? CHUNK / r->stride : 1;
    for (size_t i = 0; i < size && !err; i += per) {
        size_t m = size - i < per ? size - i : per;
        memcpy(stage, r->records + i * r->stride, m * r->stride);
        for (size_t j = 0; j < m; j++) {
            uint64_t two = 2;
            memcpy(stage + j * r->stride, &two, 8);
        }
        err |= write_all(f, &c, stage, m * r->stride);
    }
    if (r->prioritized && !err) err |= write_all(f, &c, r->tree.sum[r->tree.depth - 1], size * sizeof(double));
    pthread_rwlock_unlock(&r->state_lock);
    unsigned char tail[8];
    put_u64(tail, ck_final(&c));
    if (!err) err |= write_all(f, NULL, tail, 8);
    int saved = errno;
    if (fclose(f) != 0) err = -1;
    else errno = saved;
    free(stage);
    return err ? REPLAY_EIO : REPLAY_OK;
}

int replay_load(replay *r, const char *path, size_t prefix_len) {
    FILE *f = fopen(path, "rb");
    if (!f) return REPLAY_EIO;
    int rc = REPLAY_OK;
    unsigned char *stage = malloc(CHUNK);
    if (!stage) {
        fclose(f);
        return REPLAY_ENOMEM;
    }
    checksum c;
    ck_init(&c);
    long file_len = -1;
    if (fseek(f, 0, SEEK_END) == 0) file_len = ftell(f);
    if (file_len < 0 || fseek(f, 0, SEEK_SET) != 0) {
        rc = REPLAY_EIO;
        goto out;
    }
    pthread_rwlock_wrlock(&r->state_lock);
    unsigned char state[8 * STATE_WORDS];
    if (read_all(f, NULL, stage, 8) != 0) {
        rc = REPLAY_ETRUNCATED;
        goto unlock;
    }
    for (size_t left = prefix_len - 8; left > 0;) {
        size_t m = left < CHUNK ? left : CHUNK;
        if (read_all(f, &c, stage, m) != 0) {
            rc = REPLAY_ETRUNCATED;
            goto unlock;
        }
        left -= m;
    }
    if (read_all(f, &c, state, sizeof state) != 0) {
        rc = REPLAY_ETRUNCATED;
        goto unlock;
    }
    uint64_t pos = get_u64(state), size = get_u64(state + 8), stride = get_u64(state + 40);
    double max_priority = double_of(get_u64(state + 16));
    if (size > r->capacity || stride != r->stride) {
        rc = REPLAY_ECHECKSUM; /* the state block itself is damaged */
        goto unlock;
    }
    uint64_t expected = prefix_len + sizeof state + size * r->stride + (r->prioritized ? size * 8 : 0) + 8;
    if ((uint64_t)file_len != expected) {
        rc = (uint64_t)file_len < expected ? REPLAY_ETRUNCATED : REPLAY_ECORRUPT;
        goto unlock;
    }
    if (read_all(f, &c, r->records, size * r->stride) != 0 ||
        (r->prioritized && read_all(f, &c, r->tree.sum[r->tree.depth - 1], size * sizeof(double)) != 0) ||
        read_all(f, NULL, stage, 8) != 0) {
        rc = REPLAY_ETRUNCATED;
        goto unlock;
    }
    if (get_u64(stage) != ck_final(&c)) {
        rc = REPLAY_ECHECKSUM;
        goto unlock;
    }
    int consistent = pos < r->capacity && (size == r->capacity || pos == size) && max_priority >= 0.0 &&
                     !isinf(max_priority);
    for (size_t i = 0; i < size && consistent; i++) {
        if (get_u64(r->records + i * r->stride) != 2) consistent = 0;
        if (r->prioritized) {
            double v = r->tree.sum[r->tree.depth - 1][i];
            if (!(v >= 0.0) || isinf(v)) consistent = 0;
        }
    }
    if (!consistent) {
        rc = REPLAY_ECORRUPT;
        goto unlock;
    }
    r->pos = pos;
    r->size = size;
    r->max_priority_bits = bits_of(max_priority);
    r->rng_key = get_u64(state + 24);
    r->rng_counter = get_u64(state + 32);
    if (r->prioritized) sumtree_rebuild(&r->tree);
unlock:
    pthread_rwlock_unlock(&r->state_lock);
out:
    fclose(f);
    free(stage);
    return rc;
}
