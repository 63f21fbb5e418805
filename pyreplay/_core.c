/* pyreplay._core: the Python face of replay.c.
 *
 * Every method checks its arguments with the GIL held, allocates its outputs, then releases the
 * GIL for the work (Py_BEGIN_ALLOW_THREADS). Inputs take a fast path when they already are numpy
 * arrays of the right dtype, shape and layout; anything else makes `add` / `update` return
 * NotImplemented, and the Python layer (buffers.py) converts or explains, then calls again. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

#include "replay.h"

typedef struct {
    PyObject_HEAD
    replay r;
    int ready;
    size_t nfields;
    PyObject *names[REPLAY_MAX_FIELDS];
    PyArray_Descr *descr[REPLAY_MAX_FIELDS];
    int ndim[REPLAY_MAX_FIELDS];
    npy_intp shape[REPLAY_MAX_FIELDS][NPY_MAXDIMS];
    double beta;
} Core;

static PyObject *str_indices, *str_weights;

static void Core_dealloc(Core *self) {
    if (self->ready) replay_destroy(&self->r);
    for (size_t f = 0; f < self->nfields; f++) {
        Py_XDECREF(self->names[f]);
        Py_XDECREF(self->descr[f]);
    }
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Core(capacity, names, dtypes, shapes, layouts, prioritized, alpha, beta, k, seed), layouts[f] =
 * (bytes per row, alignment); the Python layer has validated all of it. */
static int Core_init(Core *self, PyObject *args, PyObject *kwds) {
    Py_ssize_t capacity, k;
    PyObject *names, *dtypes, *shapes, *aligns;
    int prioritized;
    double alpha, beta;
    unsigned long long seed;
    if (self->ready) {
        PyErr_SetString(PyExc_RuntimeError, "Core is already initialised");
        return -1;
    }
    if (!PyArg_ParseTuple(args, "nO!O!O!O!pddnK", &capacity, &PyTuple_Type, &names, &PyTuple_Type, &dtypes,
                          &PyTuple_Type, &shapes, &PyTuple_Type, &aligns, &prioritized, &alpha, &beta, &k, &seed))
        return -1;
    Py_ssize_t n = PyTuple_GET_SIZE(names);
    if (capacity <= 0 || n <= 0 || n > REPLAY_MAX_FIELDS || PyTuple_GET_SIZE(dtypes) != n ||
        PyTuple_GET_SIZE(shapes) != n || PyTuple_GET_SIZE(aligns) != n) {
        PyErr_SetString(PyExc_ValueError, "invalid capacity or fields");
        return -1;
    }
    size_t bytes[REPLAY_MAX_FIELDS], align[REPLAY_MAX_FIELDS];
    for (Py_ssize_t f = 0; f < n; f++) {
        PyObject *name = PyTuple_GET_ITEM(names, f), *shape = PyTuple_GET_ITEM(shapes, f);
        PyArray_Descr *d = NULL;
        if (!PyUnicode_Check(name) || !PyTuple_Check(shape) || PyTuple_GET_SIZE(shape) >= NPY_MAXDIMS ||
            !PyArray_DescrConverter(PyTuple_GET_ITEM(dtypes, f), &d))
            goto bad;
        Py_INCREF(name);
        PyUnicode_InternInPlace(&name);
        self->names[f] = name;
        self->descr[f] = d;
        self->nfields = (size_t)f + 1;
        self->ndim[f] = (int)PyTuple_GET_SIZE(shape);
        for (int j = 0; j < self->ndim[f]; j++) {
            npy_intp s = PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, j));
            if (s <= 0) goto bad;
            self->shape[f][j] = s;
        }
        Py_ssize_t row, al;
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(aligns, f), "nn", &row, &al)) return -1;
        if (row <= 0 || al <= 0) goto bad;
        bytes[f] = (size_t)row;
        align[f] = (size_t)al;
    }
    self->beta = beta;
    int rc = replay_init(&self->r, (size_t)capacity, (size_t)n, bytes, align, prioritized, alpha, (size_t)k,
                         (uint64_t)seed);
    if (rc == REPLAY_ENOMEM) {
        PyErr_Format(PyExc_MemoryError, "cannot allocate a replay buffer of %zd transitions", capacity);
        return -1;
    }
    if (rc != REPLAY_OK) goto bad;
    self->ready = 1;
    return 0;
bad:
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "invalid field description");
    return -1;
}

static int dtype_matches(PyArrayObject *a, PyArray_Descr *want) {
    PyArray_Descr *d = PyArray_DESCR(a);
    return d == want || (d->type_num == want->type_num && PyArray_ISNBO(d->byteorder) && d->type_num < NPY_OBJECT);
}

/* Rows of `obj` for field f when it is usable as is (numpy, exact dtype, C-contiguous, shape
 * (rows, *shape) or shape); -1 otherwise. */
static Py_ssize_t fast_rows(Core *self, size_t f, PyObject *obj) {
    if (!PyArray_Check(obj)) return -1;
    PyArrayObject *a = (PyArrayObject *)obj;
    if (!dtype_matches(a, self->descr[f]) || !PyArray_IS_C_CONTIGUOUS(a)) return -1;
    int nd = PyArray_NDIM(a), want = self->ndim[f];
    const npy_intp *dims = PyArray_DIMS(a);
    if (nd == want + 1) {
        for (int j = 0; j < want; j++)
            if (dims[j + 1] != self->shape[f][j]) return -1;
        return dims[0];
    }
    if (nd == want) {
        for (int j = 0; j < want; j++)
            if (dims[j] != self->shape[f][j]) return -1;
        return 1;
    }
    return -1;
}

/* add(batch: dict) -> int64 array of the slots written, or NotImplemented when the batch needs
 * converting (or is wrong: the Python layer says how). */
static PyObject *Core_add(Core *self, PyObject *batch) {
    if (!PyDict_Check(batch) || (size_t)PyDict_GET_SIZE(batch) != self->nfields) Py_RETURN_NOTIMPLEMENTED;
    const void *src[REPLAY_MAX_FIELDS];
    PyObject *hold[REPLAY_MAX_FIELDS];
    Py_ssize_t n = -1;
    for (size_t f = 0; f < self->nfields; f++) {
        PyObject *obj = PyDict_GetItemWithError(batch, self->names[f]);
        if (!obj) {
            if (PyErr_Occurred()) return NULL;
            Py_RETURN_NOTIMPLEMENTED;
        }
        Py_ssize_t rows = fast_rows(self, f, obj);
        if (rows < 0 || (n >= 0 && rows != n)) Py_RETURN_NOTIMPLEMENTED;
        n = rows;
        src[f] = PyArray_DATA((PyArrayObject *)obj);
        hold[f] = obj;
    }
    npy_intp dims[1] = {n};
    PyArrayObject *slots = (PyArrayObject *)PyArray_SimpleNew(1, dims, NPY_INT64);
    if (!slots) return NULL;
    for (size_t f = 0; f < self->nfields; f++) Py_INCREF(hold[f]); /* the arrays outlive the GIL-free copy */
    size_t first = 0;
    Py_BEGIN_ALLOW_THREADS
    replay_add(&self->r, src, (size_t)n, &first);
    Py_END_ALLOW_THREADS
    for (size_t f = 0; f < self->nfields; f++) Py_DECREF(hold[f]);
    int64_t *out = PyArray_DATA(slots);
    size_t cap = self->r.capacity, slot = first;
    for (Py_ssize_t i = 0; i < n; i++) {
        out[i] = (int64_t)slot;
        if (++slot == cap) slot = 0;
    }
    return (PyObject *)slots;
}

static int as_batch_size(PyObject *obj, Py_ssize_t *n) {
    if (PyBool_Check(obj) || !PyIndex_Check(obj) || (*n = PyNumber_AsSsize_t(obj, NULL)) <= 0) {
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError, "batch_size must be a positive whole number, got %R", obj);
        return -1;
    }
    return 0;
}

/* Which fields `fields` (a tuple of names, or None: every one) names, in `wanted`; -1 with
 * ValueError for a name that is no field's. */
static int wanted_fields(Core *self, PyObject *fields, int *wanted) {
    for (size_t f = 0; f < self->nfields; f++) wanted[f] = fields == Py_None;
    if (fields == Py_None) return 0;
    if (!PyTuple_Check(fields)) {
        PyErr_Format(PyExc_TypeError, "fields must be a tuple of field names or None, got %R", fields);
        return -1;
    }
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(fields); k++) {
        PyObject *name = PyTuple_GET_ITEM(fields, k);
        size_t f = 0;
        for (; f < self->nfields; f++) {
            int same = name == self->names[f] ? 1 : PyObject_RichCompareBool(name, self->names[f], Py_EQ);
            if (same < 0) return -1;
            if (same) break;
        }
        if (f == self->nfields) {
            PyErr_Format(PyExc_ValueError, "fields: %R is not a field of this buffer", name);
            return -1;
        }
        wanted[f] = 1;
    }
    return 0;
}

/* sample(batch_size, beta=None, seed=None, fields=None) -> dict of the arrays of `fields` (every
 * field's with None) plus "indices" and "weights" */
static PyObject *Core_sample(Core *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3 && nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "sample(batch_size, beta, seed, fields=None)");
        return NULL;
    }
    int wanted[REPLAY_MAX_FIELDS];
    if (wanted_fields(self, nargs == 4 ? args[3] : Py_None, wanted) < 0) return NULL;
    Py_ssize_t n;
    if (as_batch_size(args[0], &n) < 0) return NULL;
    size_t size = replay_size(&self->r);
    if (size == 0) {
        PyErr_SetString(PyExc_ValueError, "cannot sample from an empty buffer");
        return NULL;
    }
    if ((size_t)n > size) {
        PyErr_Format(PyExc_ValueError, "batch_size %zd is larger than the %zu transitions stored", n, size);
        return NULL;
    }
    double beta = self->beta;
    if (args[1] != Py_None) {
        beta = PyFloat_AsDouble(args[1]);
        if (beta == -1.0 && PyErr_Occurred()) return NULL;
        if (!(beta >= 0.0) || isinf(beta)) {
            PyErr_Format(PyExc_ValueError, "beta must be a finite number >= 0, got %R", args[1]);
            return NULL;
        }
    }
    uint64_t seed = 0;
    int use_seed = args[2] != Py_None;
    if (use_seed) {
        PyObject *s = PyNumber_Index(args[2]);
        if (!s) {
            PyErr_Format(PyExc_TypeError, "seed must be an integer, got %R", args[2]);
            return NULL;
        }
        seed = (uint64_t)PyLong_AsUnsignedLongLongMask(s);
        Py_DECREF(s);
        if (PyErr_Occurred()) return NULL;
    }
    PyObject *outs[REPLAY_MAX_FIELDS] = {NULL};
    void *dst[REPLAY_MAX_FIELDS];
    PyObject *result = NULL, *idx = NULL, *w = NULL;
    npy_intp dims[NPY_MAXDIMS + 1];
    dims[0] = n;
    for (size_t f = 0; f < self->nfields; f++) {
        dst[f] = NULL;  /* not copied */
        if (!wanted[f]) continue;
        for (int j = 0; j < self->ndim[f]; j++) dims[j + 1] = self->shape[f][j];
        Py_INCREF(self->descr[f]);
        outs[f] = PyArray_Empty(self->ndim[f] + 1, dims, self->descr[f], 0);
        if (!outs[f]) goto fail;
        dst[f] = PyArray_DATA((PyArrayObject *)outs[f]);
    }
    idx = PyArray_SimpleNew(1, dims, NPY_INT64);
    w = PyArray_SimpleNew(1, dims, NPY_FLOAT64);
    if (!idx || !w) goto fail;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = replay_sample(&self->r, (size_t)n, beta, seed, use_seed, dst, PyArray_DATA((PyArrayObject *)idx),
                       PyArray_DATA((PyArrayObject *)w));
    Py_END_ALLOW_THREADS
    if (rc == REPLAY_EMPTY) {
        PyErr_SetString(PyExc_ValueError, "cannot sample from an empty buffer");
        goto fail;
    }
    if (rc == REPLAY_EZERO) {
        PyErr_SetString(PyExc_ValueError, "cannot sample: every priority is 0");
        goto fail;
    }
    result = PyDict_New();
    if (!result) goto fail;
    for (size_t f = 0; f < self->nfields; f++)
        if (outs[f] && PyDict_SetItem(result, self->names[f], outs[f]) < 0) goto fail;
    if (PyDict_SetItem(result, str_indices, idx) < 0 || PyDict_SetItem(result, str_weights, w) < 0) goto fail;
    for (size_t f = 0; f < self->nfields; f++) Py_XDECREF(outs[f]);
    Py_DECREF(idx);
    Py_DECREF(w);
    return result;
fail:
    for (size_t f = 0; f < self->nfields; f++) Py_XDECREF(outs[f]);
    Py_XDECREF(idx);
    Py_XDECREF(w);
    Py_XDECREF(result);
    return NULL;
}

static int is_int64(PyArrayObject *a) {
    PyArray_Descr *d = PyArray_DESCR(a);
    return PyTypeNum_ISSIGNED(d->type_num) && PyTypeNum_ISINTEGER(d->type_num) && PyArray_ITEMSIZE(a) == 8 &&
           PyArray_ISNBO(d->byteorder);
}

/* update(indices, priorities): int64 and float64/float32 1-d C-contiguous arrays of one length, or
 * NotImplemented. */
static PyObject *Core_update(Core *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "update(indices, priorities)");
        return NULL;
    }
    if (!self->r.prioritized) {
        PyErr_SetString(PyExc_TypeError, "a uniform buffer has no priorities");
        return NULL;
    }
    if (!PyArray_Check(args[0]) || !PyArray_Check(args[1])) Py_RETURN_NOTIMPLEMENTED;
    PyArrayObject *ia = (PyArrayObject *)args[0], *pa = (PyArrayObject *)args[1];
    int ptype = PyArray_TYPE(pa);
    if (PyArray_NDIM(ia) != 1 || PyArray_NDIM(pa) != 1 || PyArray_DIM(ia, 0) != PyArray_DIM(pa, 0) ||
        !PyArray_IS_C_CONTIGUOUS(ia) || !PyArray_IS_C_CONTIGUOUS(pa) || !is_int64(ia) ||
        (ptype != NPY_DOUBLE && ptype != NPY_FLOAT) || !PyArray_ISNBO(PyArray_DESCR(pa)->byteorder))
        Py_RETURN_NOTIMPLEMENTED;
    size_t n = (size_t)PyArray_DIM(ia, 0), bad = 0, size = 0;
    const int64_t *idx = PyArray_DATA(ia);
    const void *p = PyArray_DATA(pa);
    int rc;
    Py_INCREF(ia);
    Py_INCREF(pa);
    Py_BEGIN_ALLOW_THREADS
    rc = replay_update(&self->r, idx, p, ptype == NPY_DOUBLE, n, &bad);
    size = replay_size(&self->r);
    Py_END_ALLOW_THREADS
    PyObject *result = Py_None;
    if (rc == REPLAY_EINDEX) {
        PyErr_Format(PyExc_IndexError, "index %lld at position %zu is out of range for a buffer holding %zu transitions",
                     (long long)idx[bad], bad, size);
        result = NULL;
    } else if (rc == REPLAY_EPRIORITY) {
        double v = ptype == NPY_DOUBLE ? ((const double *)p)[bad] : (double)((const float *)p)[bad];
        PyObject *vo = PyFloat_FromDouble(v);
        if (vo) {
            PyErr_Format(PyExc_ValueError, "priority %R at position %zu is not a finite number >= 0", vo, bad);
            Py_DECREF(vo);
        }
        result = NULL;
    } else if (rc == REPLAY_ENOMEM) {
        result = PyErr_NoMemory();
    }
    Py_DECREF(ia);
    Py_DECREF(pa);
    Py_XINCREF(result);
    return result;
}

static PyObject *Core_size(Core *self, PyObject *Py_UNUSED(ignored)) { return PyLong_FromSize_t(replay_size(&self->r)); }

static PyObject *Core_clear(Core *self, PyObject *Py_UNUSED(ignored)) {
    Py_BEGIN_ALLOW_THREADS
    replay_clear(&self->r);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

static PyObject *Core_leaves(Core *self, PyObject *Py_UNUSED(ignored)) {
    npy_intp dims[1] = {(npy_intp)self->r.capacity};
    PyObject *out = PyArray_SimpleNew(1, dims, NPY_FLOAT64);
    if (!out) return NULL;
    double *data = PyArray_DATA((PyArrayObject *)out);
    Py_BEGIN_ALLOW_THREADS
    replay_leaves(&self->r, data);
    Py_END_ALLOW_THREADS
    return out;
}

static PyObject *Core_check(Core *self, PyObject *Py_UNUSED(ignored)) {
    double err;
    Py_BEGIN_ALLOW_THREADS
    err = replay_check(&self->r);
    Py_END_ALLOW_THREADS
    return PyFloat_FromDouble(err);
}

/* layout() -> (stride, offsets, state): how records lie in the buffer view, and (pos, size,
 * max_priority, rng_counter) for tests. */
static PyObject *Core_layout(Core *self, PyObject *Py_UNUSED(ignored)) {
    PyObject *offsets = PyTuple_New((Py_ssize_t)self->nfields);
    if (!offsets) return NULL;
    for (size_t f = 0; f < self->nfields; f++)
        PyTuple_SET_ITEM(offsets, (Py_ssize_t)f, PyLong_FromSize_t(self->r.offset[f]));
    return Py_BuildValue("nN(nndK)", (Py_ssize_t)self->r.stride, offsets, (Py_ssize_t)self->r.pos,
                         (Py_ssize_t)self->r.size, replay_max_priority(&self->r),
                         (unsigned long long)self->r.rng_counter);
}

/* The answer of save and load: rc as an int, or OSError (naming the file as the caller wrote it,
 * not as bytes) / MemoryError; releases `path` (bytes, from PyUnicode_FSConverter). */
static PyObject *file_result(int rc, PyObject *path) {
    PyObject *result = NULL;
    if (rc == REPLAY_EIO) {
        int saved = errno;
        PyObject *name = PyUnicode_DecodeFSDefault(PyBytes_AS_STRING(path));
        errno = saved;
        if (name) {
            PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, name);
            Py_DECREF(name);
        }
    } else if (rc == REPLAY_ENOMEM) PyErr_NoMemory();
    else result = PyLong_FromLong(rc);
    Py_DECREF(path);
    return result;
}

/* save(path, prefix: bytes) -> 0, or raises OSError */
static PyObject *Core_save(Core *self, PyObject *args) {
    PyObject *path;
    Py_buffer prefix;
    if (!PyArg_ParseTuple(args, "O&y*", PyUnicode_FSConverter, &path, &prefix)) return NULL;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = replay_save(&self->r, PyBytes_AS_STRING(path), prefix.buf, (size_t)prefix.len);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&prefix);
    return file_result(rc, path);
}

/* load(path, prefix_len) -> 0 or a negative REPLAY_E* code (the Python layer words it); OSError
 * when the file cannot be read. */
static PyObject *Core_load(Core *self, PyObject *args) {
    PyObject *path;
    Py_ssize_t prefix_len;
    if (!PyArg_ParseTuple(args, "O&n", PyUnicode_FSConverter, &path, &prefix_len)) return NULL;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = replay_load(&self->r, PyBytes_AS_STRING(path), (size_t)prefix_len);
    Py_END_ALLOW_THREADS
    return file_result(rc, path);
}

/* The records as a read-only buffer (capacity * stride bytes): for tests and debugging; reading
 * it while other threads write gives no consistency guarantee. */
static int Core_getbuffer(Core *self, Py_buffer *view, int flags) {
    if (!self->ready) {
        PyErr_SetString(PyExc_BufferError, "Core is not initialised");
        return -1;
    }
    return PyBuffer_FillInfo(view, (PyObject *)self, self->r.records,
                             (Py_ssize_t)(self->r.capacity * self->r.stride), 1, flags);
}

static PyBufferProcs Core_as_buffer = {(getbufferproc)Core_getbuffer, NULL};

static PyMethodDef Core_methods[] = {
    {"add", (PyCFunction)Core_add, METH_O, "add(batch: dict) -> slots, or NotImplemented"},
    {"sample", (PyCFunction)(void (*)(void))Core_sample, METH_FASTCALL, "sample(batch_size, beta, seed, fields=None) -> dict"},
    {"update", (PyCFunction)(void (*)(void))Core_update, METH_FASTCALL, "update(indices, priorities)"},
    {"size", (PyCFunction)Core_size, METH_NOARGS, "size() -> transitions stored"},
    {"clear", (PyCFunction)Core_clear, METH_NOARGS, "clear()"},
    {"leaves", (PyCFunction)Core_leaves, METH_NOARGS, "leaves() -> p^alpha of every slot"},
    {"check", (PyCFunction)Core_check, METH_NOARGS, "check() -> largest error of the tree's sums"},
    {"layout", (PyCFunction)Core_layout, METH_NOARGS, "layout() -> (stride, offsets, state)"},
    {"save", (PyCFunction)Core_save, METH_VARARGS, "save(path, prefix)"},
    {"load", (PyCFunction)Core_load, METH_VARARGS, "load(path, prefix_len) -> code"},
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
    .tp_as_buffer = &Core_as_buffer,
    .tp_doc = "Storage, sum tree and locks of one replay buffer (see pyreplay.buffers).",
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_core", "pyreplay's C core.", -1, NULL};

PyMODINIT_FUNC PyInit__core(void) {
    import_array();
    if (PyType_Ready(&CoreType) < 0) return NULL;
    str_indices = PyUnicode_InternFromString("indices");
    str_weights = PyUnicode_InternFromString("weights");
    if (!str_indices || !str_weights) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    Py_INCREF(&CoreType);
    if (PyModule_AddObject(m, "Core", (PyObject *)&CoreType) < 0) {
        Py_DECREF(&CoreType);
        Py_DECREF(m);
        return NULL;
    }
    PyModule_AddIntConstant(m, "E_TRUNCATED", REPLAY_ETRUNCATED);
    PyModule_AddIntConstant(m, "E_CHECKSUM", REPLAY_ECHECKSUM);
    PyModule_AddIntConstant(m, "E_CORRUPT", REPLAY_ECORRUPT);
    return m;
}
