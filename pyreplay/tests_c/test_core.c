/* Tests of pyreplay's C core (sumtree.c, replay.c) without Python, for the sanitizer build:
 *   pyreplay/sanitize.sh  (gcc -fsanitize=address,undefined; tests/test_replay_concurrency.py runs it)
 * Prints "pyreplay core: all checks passed" and exits 0, or names the failed check and exits 1. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../replay.h"
#include "../sumtree.h"

static int failures = 0;
#define CHECK(cond)                                                                   \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            failures++;                                                               \
            return 1;                                                                 \
        }                                                                             \
    } while (0)

/* ------------------------------------------------------------------ the tree */

static int tree_case(size_t capacity, size_t k) {
    sumtree t;
    CHECK(sumtree_init(&t, capacity, k) == 0);
    double *leaves = calloc(capacity, sizeof *leaves);
    size_t *list = malloc(4 * capacity * sizeof *list);
    CHECK(leaves && list);
    uint64_t state = 42 + capacity * 131 + k;
    /* Integer-valued leaves: every sum is exact, so boundaries can be tested exactly. */
    for (int round = 0; round < 3; round++) {
        size_t n = 0;
        for (size_t j = 0; j < 2 * capacity; j++) {
            size_t i = pyreplay_next(&state) % capacity;
            double v = (double)(pyreplay_next(&state) % 8); /* zeros too */
            leaves[i] = v;
            sumtree_store_leaf(&t, i, v);
            list[n++] = i;
        }
        if (round == 1) sumtree_rebuild(&t);
        else
            for (size_t j = 0; j < n; j++) sumtree_propagate_leaf(&t, list[j], 0);
        CHECK(sumtree_check(&t) == 0.0);
    }
    double total = 0.0, smallest = INFINITY;
    for (size_t i = 0; i < capacity; i++) {
        total += leaves[i];
        if (leaves[i] > 0.0 && leaves[i] < smallest) smallest = leaves[i];
        CHECK(sumtree_leaf(&t, i) == leaves[i]);
    }
    CHECK(sumtree_total(&t) == total);
    CHECK(sumtree_min(&t) == smallest);
    /* u = (sum of leaves before i) + f * leaf_i lands on i exactly, for every positive leaf. */
    double before = 0.0;
    for (size_t i = 0; i < capacity; i++) {
        if (leaves[i] > 0.0) {
            double fr[3] = {0.0, 0.5, 0.999};
            for (int j = 0; j < 3; j++) {
                double u = before + fr[j] * leaves[i];
                size_t got;
                sumtree_find_many(&t, &u, &got, 1);
                CHECK(got == i);
                CHECK(u == leaves[i]);
            }
        }
        before += leaves[i];
    }
    /* Draws past the end (as rounding or a concurrent change could give) still land on a positive leaf. */
    if (total > 0.0) {
        double us[3] = {total, total * 2.0, nextafter(total, 0.0)};
        size_t got[3];
        sumtree_find_many(&t, us, got, 3);
        for (int j = 0; j < 3; j++) CHECK(got[j] < capacity && leaves[got[j]] > 0.0 && us[j] == leaves[got[j]]);
    }
    /* A contiguous range propagates like a list. */
    size_t lo = capacity / 3, hi = capacity - capacity / 4;
    for (size_t i = lo; i < hi; i++) sumtree_store_leaf(&t, i, 1.0);
    sumtree_propagate_range(&t, t.depth - 1, lo, hi, 0);
    CHECK(sumtree_check(&t) == 0.0);
    sumtree_clear(&t);
    CHECK(sumtree_total(&t) == 0.0 && isinf(sumtree_min(&t)));
    free(leaves);
    free(list);
    sumtree_free(&t);
    return 0;
}

static int test_tree(void) {
    size_t capacities[] = {1, 2, 3, 7, 8, 9, 63, 64, 65, 100, 1000, 4097};
    size_t fanouts[] = {2, 3, 4, 8, 16, 64};
    for (size_t c = 0; c < sizeof capacities / sizeof *capacities; c++)
        for (size_t f = 0; f < sizeof fanouts / sizeof *fanouts; f++)
            if (tree_case(capacities[c], fanouts[f]) != 0) {
                fprintf(stderr, "  (capacity %zu, K %zu)\n", capacities[c], fanouts[f]);
                return 1;
            }
    sumtree t;
    CHECK(sumtree_init(&t, 0, 4) == -1);
    CHECK(sumtree_init(&t, 10, 1) == -1);
    CHECK(sumtree_init(&t, 10, 65) == -1);
    return 0;
}

/* ------------------------------------------------------------------ the buffer */

/* Fields: obs (6 float), id (int64), sum (double: the sum of obs, to detect torn rows). */
enum { OBS = 6 };
static const size_t BYTES[3] = {OBS * sizeof(float), sizeof(int64_t), sizeof(double)};
static const size_t ALIGN[3] = {4, 8, 8};

static void make_rows(size_t n, int64_t first_id, float *obs, int64_t *id, double *sum) {
    for (size_t i = 0; i < n; i++) {
        id[i] = first_id + (int64_t)i;
        double s = 0.0;
        for (int j = 0; j < OBS; j++) {
            obs[i * OBS + j] = (float)((id[i] * 7 + j * 13) % 1000);
            s += obs[i * OBS + j];
        }
        sum[i] = s;
    }
}

static int row_ok(const float *obs, double sum) {
    double s = 0.0;
    for (int j = 0; j < OBS; j++) s += obs[j];
    return s == sum;
}

static int test_buffer(void) {
    replay r;
    CHECK(replay_init(&r, 10, 3, BYTES, ALIGN, 1, 0.5, 4, 7) == REPLAY_OK);
    float obs[64 * OBS], sobs[64 * OBS];
    int64_t id[64], sid[64], idx[64];
    double sum[64], ssum[64], w[64];
    const void *src[3] = {obs, id, sum};
    void *dst[3] = {sobs, sid, ssum};
    size_t first, bad = 99;
    CHECK(replay_sample(&r, 4, 0.4, 1, 1, dst, idx, w) == REPLAY_EMPTY);
    make_rows(13, 0, obs, id, sum);
    CHECK(replay_add(&r, src, 13, &first) == REPLAY_OK && first == 0); /* 13 > 10: keeps ids 3..12 */
    CHECK(replay_size(&r) == 10 && r.pos == 3);
    CHECK(replay_sample(&r, 64, 0.4, 5, 1, dst, idx, w) == REPLAY_OK);
    for (int i = 0; i < 64; i++) {
        CHECK(idx[i] >= 0 && idx[i] < 10);
        CHECK(sid[i] % 10 == idx[i] && sid[i] >= 3 && sid[i] <= 12);
        CHECK(row_ok(sobs + i * OBS, ssum[i]));
        CHECK(w[i] == 1.0); /* every priority equal */
    }
    { /* A NULL destination is a field not copied; the draw is the same. */
        int64_t idx_some[64], sid_some[64];
        void *some[3] = {NULL, sid_some, NULL};
        CHECK(replay_sample(&r, 64, 0.4, 5, 1, some, idx_some, w) == REPLAY_OK);
        for (int i = 0; i < 64; i++) CHECK(idx_some[i] == idx[i] && sid_some[i] == sid[i]);
    }
    /* Updates: all or nothing. */
    double leaves_before[10], leaves_after[10];
    replay_leaves(&r, leaves_before);
    int64_t ui[3] = {1, 2, 10};
    double up[3] = {4.0, 9.0, 1.0};
    CHECK(replay_update(&r, ui, up, 1, 3, &bad) == REPLAY_EINDEX && bad == 2);
    ui[2] = 3;
    up[1] = NAN;
    CHECK(replay_update(&r, ui, up, 1, 3, &bad) == REPLAY_EPRIORITY && bad == 1);
    up[1] = -1.0;
    CHECK(replay_update(&r, ui, up, 1, 3, &bad) == REPLAY_EPRIORITY && bad == 1);
    up[1] = INFINITY;
    CHECK(replay_update(&r, ui, up, 1, 3, &bad) == REPLAY_EPRIORITY && bad == 1);
    replay_leaves(&r, leaves_after);
    CHECK(memcmp(leaves_before, leaves_after, sizeof leaves_before) == 0);
    up[1] = 9.0;
    up[2] = 0.0;
    CHECK(replay_update(&r, ui, up, 1, 3, &bad) == REPLAY_OK);
    replay_leaves(&r, leaves_after);
    CHECK(leaves_after[1] == 2.0 && leaves_after[2] == 3.0 && leaves_after[3] == 0.0);
    CHECK(replay_check(&r) == 0.0);
    /* Weights: (leaf / min leaf)^-beta; slot 3 (priority 0) is never drawn. */
    CHECK(replay_sample(&r, 64, 1.0, 9, 1, dst, idx, w) == REPLAY_OK);
    for (int i = 0; i < 64; i++) {
        CHECK(idx[i] != 3);
        CHECK(fabs(w[i] - 1.0 / leaves_after[idx[i]]) < 1e-15);
    }
    /* New rows get the largest priority given so far (9, leaf 3). */
    make_rows(1, 100, obs, id, sum);
    CHECK(replay_add(&r, src, 1, &first) == REPLAY_OK && first == 3);
    replay_leaves(&r, leaves_after);
    CHECK(leaves_after[3] == 3.0);
    /* The same seed gives the same draw. */
    int64_t idx2[64];
    CHECK(replay_sample(&r, 64, 0.4, 11, 1, dst, idx, w) == REPLAY_OK);
    CHECK(replay_sample(&r, 64, 0.4, 11, 1, dst, idx2, w) == REPLAY_OK);
    CHECK(memcmp(idx, idx2, sizeof idx) == 0);
    /* Save, load, compare; then damage the file. */
    char path[] = "/tmp/pyreplay_test_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    const char prefix[] = "PYREPLAYmeta";
    CHECK(replay_save(&r, path, prefix, sizeof prefix) == REPLAY_OK);
    replay r2;
    CHECK(replay_init(&r2, 10, 3, BYTES, ALIGN, 1, 0.5, 4, 0) == REPLAY_OK);
    CHECK(replay_load(&r2, path, sizeof prefix) == REPLAY_OK);
    CHECK(r2.pos == r.pos && r2.size == r.size && r2.max_priority_bits == r.max_priority_bits);
    CHECK(r2.rng_key == r.rng_key && r2.rng_counter == r.rng_counter);
    double l2[10];
    replay_leaves(&r2, l2);
    CHECK(memcmp(l2, leaves_after, sizeof l2) == 0);
    CHECK(replay_check(&r2) == 0.0);
    for (size_t i = 0; i < 10; i++)
        for (size_t f = 0; f < 3; f++)
            CHECK(memcmp(r.records + i * r.stride + r.offset[f], r2.records + i * r.stride + r.offset[f], BYTES[f]) == 0);
    replay_destroy(&r2);
    FILE *fp = fopen(path, "r+b");
    CHECK(fp != NULL);
    fseek(fp, 0, SEEK_END);
    long len = ftell(fp);
    fseek(fp, len / 2, SEEK_SET);
    int c = fgetc(fp);
    fseek(fp, len / 2, SEEK_SET);
    fputc(c ^ 0x10, fp);
    fclose(fp);
    CHECK(replay_init(&r2, 10, 3, BYTES, ALIGN, 1, 0.5, 4, 0) == REPLAY_OK);
    CHECK(replay_load(&r2, path, sizeof prefix) == REPLAY_ECHECKSUM);
    replay_destroy(&r2);
    CHECK(truncate(path, len - 3) == 0);
    CHECK(replay_init(&r2, 10, 3, BYTES, ALIGN, 1, 0.5, 4, 0) == REPLAY_OK);
    CHECK(replay_load(&r2, path, sizeof prefix) == REPLAY_ETRUNCATED);
    replay_destroy(&r2);
    remove(path);
    replay_clear(&r);
    CHECK(replay_size(&r) == 0 && replay_sample(&r, 1, 0.4, 1, 1, dst, idx, w) == REPLAY_EMPTY);
    replay_destroy(&r);
    /* A uniform buffer. */
    CHECK(replay_init(&r, 5, 3, BYTES, ALIGN, 0, 1.0, 2, 3) == REPLAY_OK);
    make_rows(3, 0, obs, id, sum);
    CHECK(replay_add(&r, src, 3, &first) == REPLAY_OK);
    CHECK(replay_sample(&r, 64, 0.4, 2, 1, dst, idx, w) == REPLAY_OK);
    int seen[3] = {0, 0, 0};
    for (int i = 0; i < 64; i++) {
        CHECK(idx[i] >= 0 && idx[i] < 3 && sid[i] == idx[i] && w[i] == 1.0);
        seen[idx[i]] = 1;
    }
    CHECK(seen[0] && seen[1] && seen[2]);
    CHECK(replay_update(&r, ui, up, 1, 1, &bad) == REPLAY_EINVAL);
    replay_destroy(&r);
    return 0;
}

/* ------------------------------------------------------------------ threads */

typedef struct {
    replay *r;
    int role; /* 0: add, 1: sample and update */
    unsigned seed;
    volatile int *stop;
    long ops, torn;
} worker;

static void *work(void *arg) {
    worker *w = arg;
    float obs[32 * OBS], sobs[128 * OBS];
    int64_t id[32], sid[128], idx[128];
    double sum[32], ssum[128], wt[128], pr[128];
    const void *src[3] = {obs, id, sum};
    void *dst[3] = {sobs, sid, ssum};
    uint64_t state = w->seed;
    int64_t next = (int64_t)w->seed * 1000000000LL;
    while (!*w->stop) {
        if (w->role == 0) {
            size_t first;
            make_rows(32, next, obs, id, sum);
            next += 32;
            replay_add(w->r, src, 32, &first);
        } else if (replay_size(w->r) >= 128) {
            if (replay_sample(w->r, 128, 0.5, 0, 0, dst, idx, wt) != REPLAY_OK) continue;
            for (int i = 0; i < 128; i++) {
                if (!row_ok(sobs + i * OBS, ssum[i])) w->torn++;
                pr[i] = pyreplay_uniform(&state) * 3.0;
            }
            size_t bad;
            replay_update(w->r, idx, pr, 1, 128, &bad);
        }
        w->ops++;
    }
    return NULL;
}

static int test_threads(double seconds) {
    replay r;
    CHECK(replay_init(&r, 3000, 3, BYTES, ALIGN, 1, 0.6, 8, 1) == REPLAY_OK);
    volatile int stop = 0;
    worker ws[4];
    pthread_t th[4];
    for (int i = 0; i < 4; i++) {
        ws[i] = (worker){&r, i % 2, (unsigned)i + 1, &stop, 0, 0};
        CHECK(pthread_create(&th[i], NULL, work, &ws[i]) == 0);
    }
    struct timespec ts = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
    nanosleep(&ts, NULL);
    stop = 1;
    long torn = 0, ops = 0;
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        torn += ws[i].torn;
        ops += ws[i].ops;
    }
    CHECK(torn == 0);
    CHECK(ops > 100);
    CHECK(replay_check(&r) == 0.0);
    CHECK(replay_size(&r) == 3000);
    for (size_t i = 0; i < 3000; i++) {
        const unsigned char *rec = r.records + i * r.stride;
        float o[OBS];
        double s;
        memcpy(o, rec + r.offset[0], sizeof o);
        memcpy(&s, rec + r.offset[2], sizeof s);
        CHECK(row_ok(o, s));
        uint64_t seq;
        memcpy(&seq, rec, 8);
        CHECK(seq >= 2 && seq % 2 == 0);
    }
    replay_destroy(&r);
    return 0;
}

int main(int argc, char **argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 1.0;
    test_tree();
    test_buffer();
    test_threads(seconds);
    if (failures) {
        fprintf(stderr, "pyreplay core: %d check(s) failed\n", failures);
        return 1;
    }
    printf("pyreplay core: all checks passed\n");
    return 0;
}
