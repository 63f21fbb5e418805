/* pyreplay._core: the replay buffer's storage, sum tree and locking, with the GIL released.
 *
 * The Python layer (buffers.py) validates every argument and hands over C-contiguous numpy
 * arrays; this file never looks inside a Python object in its loops.
 *
 * Concurrency: one reader-writer lock per buffer. `sample` and `priorities` take it shared, so
 * any number of threads sample at once; `add`, `update`, `clear` and `set_state` take it
 * exclusive. A sample therefore never sees a slot half written, and the tree is always the sum
 * of its leaves when a lock holder looks at it. The GIL is released for all of it. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <pthread.h>
#include <string.h>

#include "sumtree.h"

#define MAX_FIELDS 32
/* `sample` lets the tree write slot numbers (size_t) into the int64 index array. */
typedef char size_t_is_64_bits[sizeof(size_t) == sizeof(int64_t) ? 1 : -1];
#define PREFETCH 8
#if defined(__GNUC__) || defined(__clang__)
#define PREFETCH_ROW(p) __builtin_prefetch((p), 0, 0)
#else
#define PREFETCH_ROW(p) ((void)(p))
#endif

typedef struct {
    PyObject_HEAD
    size_t capacity, size, pos;
    int prioritized;
    double alpha, max_priority;
    size_t nfields;
    char *storage[MAX_FIELDS];      /* field i: capacity rows of row_bytes[i] bytes */
    size_t row_bytes[MAX_FIELDS];
    PyObject *owners[MAX_FIELDS];   /* the numpy arrays that own the storage */
    sumtree tree;
    pthread_rwlock_t lock;
    int lock_ready;
} Core;

static void Core_dealloc(Core *self) {
    for (size_t i = 0; i < self->nfields; i++) Py_XDECREF(self->owners[i]);
    if (self->prioritized) sumtree_free(&self->tree);
    if (self->lock_ready) pthread_rwlock_destroy(&self->lock);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Core(capacity, storages: list of numpy arrays, prioritized: bool, alpha: float, k: int) */
static int Core_init(Core *self, PyObject *args, PyObject *kwds) {
    Py_ssize_t capacity, k;
    PyObject *storages;
    int prioritized;
    double alpha;
    if (!PyArg_ParseTuple(args, "nO!pdn", &capacity, &PyList_Type, &storages, &prioritized, &alpha, &k))
        return -1;
    Py_ssize_t n = PyList_GET_SIZE(storages);
    if (capacity <= 0 || n <= 0 || n > MAX_FIELDS) {
        PyErr_SetString(PyExc_ValueError, "invalid capacity or number of fields");
        return -1;
    }
    self->capacity = (size_t)capacity;
    self->prioritized = prioritized;
    self->alpha = alpha;
    self->max_priority = 1.0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *array = PyList_GET_ITEM(storages, i);
        Py_buffer view;
        if (PyObject_GetBuffer(array, &view, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) return -1;
        self->storage[i] = view.buf;
        self->row_bytes[i] = (size_t)view.len / (size_t)capacity;
        PyBuffer_Release(&view);  /* the array keeps its memory: we hold a reference */
        Py_INCREF(array);
        self->owners[i] = array;
        self->nfields = (size_t)i + 1;
    }
    if (prioritized && sumtree_init(&self->tree, self->capacity, (size_t)k) != 0) {
        self->prioritized = 0;
        PyErr_SetString(PyExc_MemoryError, "cannot allocate the sum tree");
        return -1;
    }
    if (pthread_rwlock_init(&self->lock, NULL) != 0) {
        PyErr_SetString(PyExc_RuntimeError, "cannot create the buffer's lock");
        return -1;
    }
    self->lock_ready = 1;
    return 0;
}

/* Borrow the data pointers of a list of C-contiguous buffers; 0 on success. */
static int get_buffers(PyObject *list, size_t expect, Py_buffer *views, int writable) {
    if (!PyList_Check(list) || (size_t)PyList_GET_SIZE(list) != expect) {
        PyErr_SetString(PyExc_ValueError, "wrong number of field arrays");
        return -1;
    }
    for (size_t i = 0; i < expect; i++) {
        int flags = PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0);
        if (PyObject_GetBuffer(PyList_GET_ITEM(list, i), &views[i], flags) < 0) {
            for (size_t j = 0; j < i; j++) PyBuffer_Release(&views[j]);
            return -1;
        }
    }
    return 0;
}

static void release(Py_buffer *views, size_t n) {
    for (size_t i = 0; i < n; i++) PyBuffer_Release(&views[i]);
}

/* add(arrays, n): write n rows at the current position (wrapping); new priorities are the
 * largest seen so far. Returns the first slot written. */
static PyObject *Core_add(Core *self, PyObject *args) {
    PyObject *arrays;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "On", &arrays, &n)) return NULL;
    Py_buffer views[MAX_FIELDS];
    if (get_buffers(arrays, self->nfields, views, 0) < 0) return NULL;
    size_t first;
    Py_BEGIN_ALLOW_THREADS
    pthread_rwlock_wrlock(&self->lock);
    first = self->pos;
    size_t count = (size_t)n, start = count > self->capacity ? count - self->capacity : 0;
    for (size_t r = start; r < count; r++) {
        size_t slot = (self->pos + r) % self->capacity;
        for (size_t f = 0; f < self->nfields; f++) {
            size_t bytes = self->row_bytes[f];
            memcpy(self->storage[f] + slot * bytes, (const char *)views[f].buf + r * bytes, bytes);
        }
        if (self->prioritized) sumtree_set(&self->tree, slot, pow(self->max_priority, self->alpha));
    }
    self->pos = (self->pos + count) % self->capacity;
    self->size = self->size + count > self->capacity ? self->capacity : self->size + count;
    pthread_rwlock_unlock(&self->lock);
    Py_END_ALLOW_THREADS
    release(views, self->nfields);
    return PyLong_FromSize_t(first);
}

/* sample(n, seed, out_arrays, indices_out(int64), weights_out(float64), beta) -> None */
static PyObject *Core_sample(Core *self, PyObject *args) {
    Py_ssize_t n;
    unsigned long long seed;
    PyObject *outs, *idx_obj, *w_obj;
    double beta;
    if (!PyArg_ParseTuple(args, "nKOOOd", &n, &seed, &outs, &idx_obj, &w_obj, &beta)) return NULL;
    Py_buffer views[MAX_FIELDS], idx_view, w_view;
    if (get_buffers(outs, self->nfields, views, 1) < 0) return NULL;
    if (PyObject_GetBuffer(idx_obj, &idx_view, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) {
        release(views, self->nfields);
        return NULL;
    }
    if (PyObject_GetBuffer(w_obj, &w_view, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) {
        release(views, self->nfields);
        PyBuffer_Release(&idx_view);
        return NULL;
    }
    int64_t *indices = idx_view.buf;
    double *weights = w_view.buf;
    int empty = 0;
    Py_BEGIN_ALLOW_THREADS
    pthread_rwlock_rdlock(&self->lock);
    uint64_t state = (uint64_t)seed;
    size_t size = self->size;
    if (size == 0) {
        empty = 1;
    } else if (self->prioritized) {
        double total = sumtree_total(&self->tree);
        double p_min = sumtree_min(&self->tree) / total;
        /* weights[] holds the draws, then the weights; `slots` reuses the indices' memory. */
        size_t *slots = (size_t *)indices;
        for (Py_ssize_t i = 0; i < n; i++) weights[i] = pyreplay_uniform(&state) * total;
        sumtree_find_many(&self->tree, weights, slots, (size_t)n);
        for (Py_ssize_t i = 0; i < n; i++) {
            size_t slot = slots[i];
            indices[i] = (int64_t)slot;
            double p = sumtree_get(&self->tree, slot) / total;
            /* w_i = (N P(i))^-beta / max_j (N P(j))^-beta = (P(i) / P_min)^-beta */
            weights[i] = pow(p / p_min, -beta);
        }
    } else {
        for (Py_ssize_t i = 0; i < n; i++) {
            indices[i] = (int64_t)(pyreplay_next(&state) % size);
            weights[i] = 1.0;
        }
    }
    if (!empty) {
        /* Gather field by field; prefetching a few rows ahead lets the misses of random rows in a
         * large buffer overlap instead of coming one after another. */
        for (size_t f = 0; f < self->nfields; f++) {
            size_t bytes = self->row_bytes[f];
            char *out = views[f].buf;
            const char *src = self->storage[f];
            for (Py_ssize_t i = 0; i < n; i++) {
                if (i + PREFETCH < n) PREFETCH_ROW(src + (size_t)indices[i + PREFETCH] * bytes);
                memcpy(out + (size_t)i * bytes, src + (size_t)indices[i] * bytes, bytes);
            }
        }
    }
    pthread_rwlock_unlock(&self->lock);
    Py_END_ALLOW_THREADS
    release(views, self->nfields);
    PyBuffer_Release(&idx_view);
    PyBuffer_Release(&w_view);
    if (empty) {
        PyErr_SetString(PyExc_ValueError, "cannot sample from an empty buffer");
        return NULL;
    }
    Py_RETURN_NONE;
}

/* update(indices(int64), priorities(float64)): validated by the caller; indices < size. */
static PyObject *Core_update(Core *self, PyObject *args) {
    PyObject *idx_obj, *p_obj;
    if (!PyArg_ParseTuple(args, "OO", &idx_obj, &p_obj)) return NULL;
    if (!self->prioritized) Py_RETURN_NONE;
    Py_buffer idx_view, p_view;
    if (PyObject_GetBuffer(idx_obj, &idx_view, PyBUF_C_CONTIGUOUS) < 0) return NULL;
    if (PyObject_GetBuffer(p_obj, &p_view, PyBUF_C_CONTIGUOUS) < 0) {
        PyBuffer_Release(&idx_view);
        return NULL;
    }
    const int64_t *indices = idx_view.buf;
    const double *priorities = p_view.buf;
    size_t n = (size_t)idx_view.len / sizeof(int64_t);
    int bad = 0;
    Py_BEGIN_ALLOW_THREADS
    pthread_rwlock_wrlock(&self->lock);
    for (size_t i = 0; i < n; i++) {
        if (indices[i] < 0 || (size_t)indices[i] >= self->size) { bad = 1; break; }
    }
    if (!bad) {
        for (size_t i = 0; i < n; i++) {
            double p = priorities[i];
            if (p > self->max_priority) self->max_priority = p;
            sumtree_set(&self->tree, (size_t)indices[i], pow(p, self->alpha));
        }
    }
    pthread_rwlock_unlock(&self->lock);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&idx_view);
    PyBuffer_Release(&p_view);
    if (bad) {
        PyErr_SetString(PyExc_IndexError, "index out of range (the buffer changed meanwhile)");
        return NULL;
    }
    Py_RETURN_NONE;
}

/* priorities(out float64[capacity]): the stored p^alpha of every slot. */
static PyObject *Core_priorities(Core *self, PyObject *args) {
    PyObject *out_obj;
    if (!PyArg_ParseTuple(args, "O", &out_obj)) return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(out_obj, &view, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) return NULL;
    double *out = view.buf;
    Py_BEGIN_ALLOW_THREADS
    pthread_rwlock_rdlock(&self->lock);
    for (size_t i = 0; i < self->capacity; i++) out[i] = self->prioritized ? sumtree_get(&self->tree, i) : 0.0;
    pthread_rwlock_unlock(&self->lock);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    Py_RETURN_NONE;
}

/* set_state(pos, size, max_priority, leaves float64[capacity]) after the storage was loaded. */
static PyObject *Core_set_state(Core *self, PyObject *args) {
    Py_ssize_t pos, size;
    double max_priority;
    PyObject *leaves_obj;
    if (!PyArg_ParseTuple(args, "nndO", &pos, &size, &max_priority, &leaves_obj)) return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(leaves_obj, &view, PyBUF_C_CONTIGUOUS) < 0) return NULL;
    const double *leaves = view.buf;
    pthread_rwlock_wrlock(&self->lock);
    self->pos = (size_t)pos;
    self->size = (size_t)size;
    self->max_priority = max_priority;
    if (self->prioritized) {
        sumtree_clear(&self->tree);
        for (size_t i = 0; i < (size_t)size; i++) sumtree_set(&self->tree, i, leaves[i]);
    }
    pthread_rwlock_unlock(&self->lock);
    PyBuffer_Release(&view);
    Py_RETURN_NONE;
}

static PyObject *Core_clear(Core *self, PyObject *Py_UNUSED(ignored)) {
    pthread_rwlock_wrlock(&self->lock);
    self->pos = self->size = 0;
    self->max_priority = 1.0;
    if (self->prioritized) sumtree_clear(&self->tree);
    pthread_rwlock_unlock(&self->lock);
    Py_RETURN_NONE;
}

/* state() -> (pos, size, max_priority, tree check error, total) */
static PyObject *Core_state(Core *self, PyObject *Py_UNUSED(ignored)) {
    pthread_rwlock_rdlock(&self->lock);
    double err = self->prioritized ? sumtree_check(&self->tree) : 0.0;
    double total = self->prioritized ? sumtree_total(&self->tree) : 0.0;
    PyObject *out = Py_BuildValue("nnddd", (Py_ssize_t)self->pos, (Py_ssize_t)self->size, self->max_priority,
                                  err, total);
    pthread_rwlock_unlock(&self->lock);
    return out;
}

static PyObject *Core_size(Core *self, PyObject *Py_UNUSED(ignored)) {
    return PyLong_FromSize_t(self->size);  /* one aligned word: no lock needed to read it */
}

static PyMethodDef Core_methods[] = {
    {"size", (PyCFunction)Core_size, METH_NOARGS, "size() -> transitions stored"},
    {"add", (PyCFunction)Core_add, METH_VARARGS, "add(arrays, n) -> first slot"},
    {"sample", (PyCFunction)Core_sample, METH_VARARGS, "sample(n, seed, outs, indices, weights, beta)"},
    {"update", (PyCFunction)Core_update, METH_VARARGS, "update(indices, priorities)"},
    {"priorities", (PyCFunction)Core_priorities, METH_VARARGS, "priorities(out)"},
    {"set_state", (PyCFunction)Core_set_state, METH_VARARGS, "set_state(pos, size, max_priority, leaves)"},
    {"clear", (PyCFunction)Core_clear, METH_NOARGS, "clear()"},
    {"state", (PyCFunction)Core_state, METH_NOARGS, "state() -> (pos, size, max_priority, tree_error, total)"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject CoreType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pyreplay._core.Core",
    .tp_basicsize = sizeof(Core),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Core_init,
    .tp_dealloc = (destructor)Core_dealloc,
    .tp_methods = Core_methods,
    .tp_doc = "Storage, sum tree and lock of one replay buffer (see pyreplay.buffers).",
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_core", "pyreplay's C core.", -1, NULL};

PyMODINIT_FUNC PyInit__core(void) {
    if (PyType_Ready(&CoreType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    Py_INCREF(&CoreType);
    if (PyModule_AddObject(m, "Core", (PyObject *)&CoreType) < 0) {
        Py_DECREF(&CoreType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
