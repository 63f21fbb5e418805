/* The federation's fast lane: a plain tag's request and answer handled in C on both sides, for
 * federates whose channels are rings or sockets (`wire_send`, `wire_receive`; federation/coordinator.py
 * and server.py build the lanes when the C core is selected; LFPY_CORE=python keeps everything in
 * Python, the reference).
 *
 * A tag is plain when nothing but reactions reading ports and setting ports happens: no mode entered
 * with reset, no action scheduled, no stop or checkpoint requested, no failure, no trace, no output
 * held for the coordinator, and every value is plain data (`plain`: None, bools, ints, floats,
 * complex numbers, strings, bytes, and tuples, lists and dicts of those, of these exact types, and
 * numpy arrays of booleans or numbers smaller than INBAND_MAX: `inband_array`).
 * Its messages are then encoded in C (KIND_PLAIN, _plain.c), which costs less than pickling and is exact
 * for those types. A message with arrays is encoded with a stand-in for each, (Ellipsis, dtype, shape,
 * offset), and the arrays' bytes follow it in the same frame (KIND_ARRAYS, `send_plain`); the receiver
 * makes each array a view of the frame's bytearray (`unpack_arrays`): one copy into the frame and one out,
 * where pickling an array costs four and runs numpy's reconstruction in Python. What the message shares
 * (an array or a container in two places), the unpacked message shares too, as with pickle. Every other
 * message, and everything else a tag does, goes through the federation's
 * own Python code (the lanes call it: `served.finish`, `federation.apply`, ...), so the two paths give
 * the same results by construction: the fast one only skips work that is empty.
 *
 * Messages are those of federation/messages.py, as plain tuples with their kind's number first:
 *   Run: (RUN, time, microstep, [(reaction index, [(slot, value)])], resets)
 *   Ran: (RAN, outputs, scheduled, physical, transitions, stop, failed, status, traced, checkpoints,
 *         printed), plain when all but `outputs` are empty, False or None.
 *
 * A federate on another machine holds what it prints while it runs reactions, to go back with their
 * answer (forwarding.py's `Output`): the `printed` of its plain Ran, which the coordinator's lane,
 * seeing it not plain, hands to the federation's code to print. While the lane runs a plain tag it
 * holds that output itself (`holding`, `held`: Output.write puts what is printed meanwhile, from any
 * thread, with the lane's `put`, which the GIL makes one step), and it flushes one of the Output's
 * Printed streams only where it keeps a partial line: a tag that prints nothing calls no Python for it
 * (Output.hold, release and two flushes cost a federate in a Ray actor a quarter of its CPU per tag).
 *
 * Threading: a lane is used by one thread, the federate's serving thread or the coordinator's
 * scheduler thread, with the GIL (released only while a ring or socket waits).
 */
#include "_wire.h"

#include <time.h>

#define MAX_DEPTH 64
#define RAN_FIELDS 11

static PyObject *s_is_present, *s_value, *s_current, *s_arrival, *s_clock_offset, *s_halted, *s_run_reaction,
    *s_set_ports, *s_stop_requested, *s_scheduled, *s_physical_scheduled, *s_checkpoint_requests, *s_trace,
    *s_pending, *s_send_all, *s_finish, *s_flush, *s_set, *s_federate, *s_deadline, *s_call, *s_exit_status,
    *s__current, *s_failed, *s_streams, *s_lane, *s_partial, *s_stdout, *s_stderr, *s_dtype, *s_kind, *s_str,
    *s_metadata, *s_shape, *s_numpy;
static PyObject *k_zero;
static PyObject *sys_dict; /* the sys module's namespace */

static int intern_names(void)
{
    if (s_is_present != NULL)
        return 0;
    struct {
        PyObject **slot;
        const char *text;
    } names[] = {
        {&s_is_present, "is_present"}, {&s_value, "value"}, {&s_current, "current"}, {&s_arrival, "arrival"},
        {&s_clock_offset, "clock_offset"}, {&s_halted, "halted"}, {&s_run_reaction, "run_reaction"},
        {&s_set_ports, "set_ports"}, {&s_stop_requested, "stop_requested"}, {&s_scheduled, "scheduled"},
        {&s_physical_scheduled, "physical_scheduled"}, {&s_checkpoint_requests, "checkpoint_requests"},
        {&s_trace, "trace"}, {&s_pending, "pending"}, {&s_send_all, "send_all"}, {&s_finish, "finish"},
        {&s_flush, "flush"}, {&s_set, "set"}, {&s_federate, "federate"}, {&s_deadline, "deadline"},
        {&s_call, "call"}, {&s_exit_status, "exit_status"}, {&s__current, "_current"}, {&s_failed, "failed"},
        {&s_streams, "streams"}, {&s_lane, "lane"}, {&s_partial, "partial"}, {&s_stdout, "stdout"},
        {&s_stderr, "stderr"}, {&s_dtype, "dtype"}, {&s_kind, "kind"}, {&s_str, "str"}, {&s_metadata, "metadata"},
        {&s_shape, "shape"}, {&s_numpy, "numpy"},
    };
    for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++)
        if ((*names[k].slot = PyUnicode_InternFromString(names[k].text)) == NULL)
            return -1;
    if ((k_zero = PyLong_FromLong(0)) == NULL)
        return -1;
    PyObject *sys = PyImport_ImportModule("sys");
    if (sys == NULL)
        return -1;
    sys_dict = Py_NewRef(PyModule_GetDict(sys));
    Py_DECREF(sys);
    return 0;
}

/* ------------------------------------------------------------------ shared helpers */

#define MAX_ARRAYS 100 /* arrays of one message in its frame (each takes at most two of a frame's parts) */
#define ALIGN 16       /* where an array's bytes start in a KIND_ARRAYS payload: a multiple of this */

static PyObject *ndarray_type; /* numpy.ndarray, once a message has had an array */

/* numpy.ndarray: where numpy is imported, or with `import` (a receiver of arrays) after importing it.
 * NULL with an exception only with `import`. */
static PyObject *ndarray(int import)
{
    if (ndarray_type != NULL)
        return ndarray_type;
    PyObject *numpy = import ? PyImport_Import(s_numpy) : PyImport_GetModule(s_numpy);
    if (numpy == NULL)
        return NULL;
    ndarray_type = PyObject_GetAttrString(numpy, "ndarray");
    Py_DECREF(numpy);
    return ndarray_type;
}

/* Whether `o` travels in its message's frame as an array: a numpy.ndarray (no subclass), C-contiguous,
 * of booleans or numbers (no objects, records or metadata), smaller than INBAND_MAX. With `view`, its
 * buffer is then held there (the caller releases it) and its dtype's `str` is in *dtype_str (a new
 * reference). An error asking is cleared: such a value is not plain, and pickling it will say more. */
static int inband_array(PyObject *o, Py_buffer *view, PyObject **dtype_str)
{
    if (strcmp(Py_TYPE(o)->tp_name, "numpy.ndarray") != 0) /* no import, no lookup for other types */
        return 0;
    PyObject *type = ndarray(0);
    if (type == NULL || (PyObject *)Py_TYPE(o) != type) {
        PyErr_Clear();
        return 0;
    }
    PyObject *dtype = PyObject_GetAttr(o, s_dtype);
    PyObject *kind = dtype ? PyObject_GetAttr(dtype, s_kind) : NULL;
    PyObject *metadata = kind ? PyObject_GetAttr(dtype, s_metadata) : NULL;
    PyObject *str = metadata ? PyObject_GetAttr(dtype, s_str) : NULL;
    Py_UCS4 k = kind && PyUnicode_Check(kind) && PyUnicode_GET_LENGTH(kind) == 1 ? PyUnicode_READ_CHAR(kind, 0) : 0;
    int simple = str != NULL && PyUnicode_Check(str) && metadata == Py_None && k != 0 && strchr("biufc", (int)k) != NULL;
    Py_XDECREF(dtype);
    Py_XDECREF(kind);
    Py_XDECREF(metadata);
    Py_buffer local, *v = view ? view : &local;
    if (!simple || PyObject_GetBuffer(o, v, PyBUF_C_CONTIGUOUS) < 0) {
        Py_XDECREF(str);
        PyErr_Clear();
        return 0;
    }
    int small = v->len < INBAND_MAX;
    if (view == NULL || !small)
        PyBuffer_Release(v);
    if (small && dtype_str != NULL)
        *dtype_str = str;
    else
        Py_DECREF(str);
    return small;
}

/* Whether `o` is plain data that _plain.c carries exactly, or arrays that go with it (see the top);
 * counts the arrays met in *arrays (an array met twice counts twice: at most MAX_ARRAYS). */
static int plain(PyObject *o, int depth, int *arrays)
{
    PyTypeObject *t = Py_TYPE(o);
    if (o == Py_None || t == &PyBool_Type || t == &PyLong_Type || t == &PyFloat_Type || t == &PyUnicode_Type ||
        t == &PyBytes_Type || t == &PyComplex_Type)
        return 1;
    if (depth >= MAX_DEPTH)
        return 0;
    if (t == &PyTuple_Type) {
        for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(o); k++)
            if (!plain(PyTuple_GET_ITEM(o, k), depth + 1, arrays))
                return 0;
        return 1;
    }
    if (t == &PyList_Type) {
        for (Py_ssize_t k = 0; k < PyList_GET_SIZE(o); k++)
            if (!plain(PyList_GET_ITEM(o, k), depth + 1, arrays))
                return 0;
        return 1;
    }
    if (t == &PyDict_Type) {
        Py_ssize_t pos = 0;
        PyObject *key, *value;
        while (PyDict_Next(o, &pos, &key, &value))
            if (!plain(key, depth + 1, arrays) || !plain(value, depth + 1, arrays))
                return 0;
        return 1;
    }
    if (inband_array(o, NULL, NULL))
        return ++*arrays <= MAX_ARRAYS;
    return 0; /* sets too: received, their items could iterate in another order */
}

/* An attribute's truth: 1, 0, or -1 with an exception. */
static int attr_truth(PyObject *obj, PyObject *name)
{
    PyObject *v = PyObject_GetAttr(obj, name);
    if (v == NULL)
        return -1;
    int truth = PyObject_IsTrue(v);
    Py_DECREF(v);
    return truth;
}

/* sys.stdout.flush(), then sys.stderr's: what was printed goes out before the message. A stream of
 * `quiet` (a list: an Output's Printed streams, or NULL) is flushed only where it keeps a partial
 * line: flushing it does nothing else. */
static int flush_output(PyObject *quiet)
{
    PyObject *names[] = {s_stdout, s_stderr};
    for (int k = 0; k < 2; k++) {
        PyObject *stream = PyDict_GetItemWithError(sys_dict, names[k]); /* borrowed; looked up by interned name */
        if (stream == NULL && PyErr_Occurred())
            return -1;
        if (stream == NULL || stream == Py_None)
            continue;
        if (quiet != NULL) {
            int served = 0;
            for (Py_ssize_t i = 0; i < PyList_GET_SIZE(quiet) && !served; i++)
                served = PyList_GET_ITEM(quiet, i) == stream;
            if (served) {
                int partial = attr_truth(stream, s_partial);
                if (partial < 0)
                    return -1;
                if (!partial)
                    continue;
            }
        }
        PyObject *res = PyObject_CallMethodNoArgs(stream, s_flush);
        if (res == NULL)
            return -1;
        Py_DECREF(res);
    }
    return 0;
}

/* ------------------------------------------------------------------ arrays in a frame */

/* A KIND_ARRAYS payload: the encoded message's size and the number of arrays (u64 each), the message
 * with a stand-in (Ellipsis, dtype str, shape, offset) for each array, zeros to a multiple of ALIGN, then
 * each array's bytes (each padded to a multiple of ALIGN), `offset` counting from the first.
 * A message's one array is a view of the payload; where there are several, each is copied out into
 * memory of its own, so that keeping one does not keep the others' bytes alive. */
#define ARRAYS_HEADER 16

typedef struct {
    PyObject *made;   /* id of a container or array of the message -> what stands for it in the encoding */
    Py_buffer views[MAX_ARRAYS]; /* the arrays', held until sent */
    int n;
    Py_ssize_t size;  /* the arrays' bytes so far, padded */
} Placing;

static Py_ssize_t padded(Py_ssize_t n)
{
    return (n + ALIGN - 1) & ~(Py_ssize_t)(ALIGN - 1);
}

/* `o` (plain, see `plain`) with stand-ins for its arrays: a new reference, or NULL with an exception.
 * Containers are rebuilt, each once, so that what the message shares the encoding shares too. */
static PyObject *placed(PyObject *o, Placing *pl)
{
    PyTypeObject *t = Py_TYPE(o);
    int array = strcmp(t->tp_name, "numpy.ndarray") == 0;
    if (t != &PyTuple_Type && t != &PyList_Type && t != &PyDict_Type && !array)
        return Py_NewRef(o);
    PyObject *id = PyLong_FromVoidPtr(o);
    if (id == NULL)
        return NULL;
    PyObject *made = PyDict_GetItemWithError(pl->made, id); /* borrowed */
    if (made != NULL || PyErr_Occurred()) {
        Py_DECREF(id);
        return Py_XNewRef(made);
    }
    if (t == &PyTuple_Type || t == &PyList_Type) {
        int tuple = t == &PyTuple_Type;
        Py_ssize_t n = tuple ? PyTuple_GET_SIZE(o) : PyList_GET_SIZE(o);
        made = tuple ? PyTuple_New(n) : PyList_New(n);
        for (Py_ssize_t k = 0; made != NULL && k < n; k++) {
            PyObject *item = placed(tuple ? PyTuple_GET_ITEM(o, k) : PyList_GET_ITEM(o, k), pl);
            if (item == NULL)
                Py_CLEAR(made);
            else if (tuple)
                PyTuple_SET_ITEM(made, k, item);
            else
                PyList_SET_ITEM(made, k, item);
        }
    } else if (t == &PyDict_Type) {
        made = PyDict_New();
        Py_ssize_t pos = 0;
        PyObject *key, *value;
        while (made != NULL && PyDict_Next(o, &pos, &key, &value)) { /* keys hold no arrays: unhashable */
            PyObject *item = placed(value, pl);
            if (item == NULL || PyDict_SetItem(made, key, item) < 0)
                Py_CLEAR(made);
            Py_XDECREF(item);
        }
    } else { /* an array `plain` let through */
        Py_buffer *view = &pl->views[pl->n];
        PyObject *dtype_str = NULL;
        if (pl->n == MAX_ARRAYS || !inband_array(o, view, &dtype_str)) {
            PyErr_SetString(PyExc_RuntimeError, "an array changed while its message was sent");
        } else {
            pl->n++;
            PyObject *shape = PyObject_GetAttr(o, s_shape);
            made = shape ? Py_BuildValue("(ONNn)", Py_Ellipsis, dtype_str, shape, pl->size) : NULL;
            if (shape == NULL)
                Py_DECREF(dtype_str);
            pl->size += padded(view->len);
        }
    }
    if (made != NULL && PyDict_SetItem(pl->made, id, made) < 0)
        Py_CLEAR(made);
    Py_DECREF(id);
    return made;
}

/* Send `message` (plain already, with `arrays` arrays in it) on `wire`: encoded, with its arrays
 * after it where it has any. 0, or -1 with an exception. */
static int send_plain(PyObject *wire, PyObject *message, int arrays)
{
    PlainBuffer data;
    if (arrays == 0) {
        if (plain_encode(message, &data) < 0)
            return -1;
        int rc = wire_send(wire, KIND_PLAIN, data.data, data.len);
        plain_release(&data);
        return rc;
    }
    static const char zeros[ALIGN];
    Placing pl = {.made = PyDict_New(), .n = 0, .size = 0};
    if (pl.made == NULL)
        return -1;
    PyObject *stand_in = placed(message, &pl);
    int body = stand_in ? plain_encode(stand_in, &data) : -1;
    int rc = -1;
    if (body == 0) {
        uint64_t header[2] = {(uint64_t)data.len, (uint64_t)pl.n};
        struct iovec parts[3 + 2 * MAX_ARRAYS];
        int n = 0;
        parts[n++] = (struct iovec){header, ARRAYS_HEADER};
        parts[n++] = (struct iovec){data.data, (size_t)header[0]};
        Py_ssize_t pad = padded(ARRAYS_HEADER + (Py_ssize_t)header[0]) - ARRAYS_HEADER - (Py_ssize_t)header[0];
        if (pad)
            parts[n++] = (struct iovec){(void *)zeros, (size_t)pad};
        for (int k = 0; k < pl.n; k++) {
            parts[n++] = (struct iovec){pl.views[k].buf, (size_t)pl.views[k].len};
            if ((pad = padded(pl.views[k].len) - pl.views[k].len))
                parts[n++] = (struct iovec){(void *)zeros, (size_t)pad};
        }
        rc = wire_sendv(wire, KIND_ARRAYS, parts, n);
        plain_release(&data);
    }
    for (int k = 0; k < pl.n; k++)
        PyBuffer_Release(&pl.views[k]);
    Py_XDECREF(stand_in);
    Py_DECREF(pl.made);
    return rc;
}

static int is_stand_in(PyObject *o)
{
    return PyTuple_CheckExact(o) && PyTuple_GET_SIZE(o) == 4 && PyTuple_GET_ITEM(o, 0) == Py_Ellipsis;
}

/* The array a stand-in is for, from `base` + its offset in `payload`: a view of it where `alone`, a copy
 * otherwise (the same array for the same stand-in: `made`). A new reference, or NULL with an exception. */
static PyObject *array_for(PyObject *stand_in, PyObject *payload, Py_ssize_t base, int alone, PyObject *made)
{
    PyObject *id = PyLong_FromVoidPtr(stand_in);
    if (id == NULL)
        return NULL;
    PyObject *array = PyDict_GetItemWithError(made, id); /* borrowed */
    if (array != NULL || PyErr_Occurred()) {
        Py_DECREF(id);
        return Py_XNewRef(array);
    }
    Py_ssize_t offset = PyLong_AsSsize_t(PyTuple_GET_ITEM(stand_in, 3));
    if (offset == -1 && PyErr_Occurred()) {
        Py_DECREF(id);
        return NULL;
    }
    /* numpy.ndarray(shape, dtype, buffer, offset): C order, checked against the buffer's size */
    array = PyObject_CallFunction(ndarray_type, "OOOn", PyTuple_GET_ITEM(stand_in, 2), PyTuple_GET_ITEM(stand_in, 1),
                                  payload, base + offset);
    if (array != NULL && !alone) {
        PyObject *copy = PyObject_CallMethod(array, "copy", NULL);
        Py_SETREF(array, copy);
    }
    if (array != NULL && PyDict_SetItem(made, id, array) < 0)
        Py_CLEAR(array);
    Py_DECREF(id);
    return array;
}

/* Puts the arrays in place of their stand-ins within `o`, just decoded (ours to change).
 * 0, or -1 with an exception. */
static int put_arrays(PyObject *o, PyObject *payload, Py_ssize_t base, int alone, PyObject *made)
{
    if (PyTuple_CheckExact(o) || PyList_CheckExact(o)) {
        int tuple = PyTuple_CheckExact(o);
        Py_ssize_t n = tuple ? PyTuple_GET_SIZE(o) : PyList_GET_SIZE(o);
        for (Py_ssize_t k = 0; k < n; k++) {
            PyObject *item = tuple ? PyTuple_GET_ITEM(o, k) : PyList_GET_ITEM(o, k);
            if (!is_stand_in(item)) {
                if (put_arrays(item, payload, base, alone, made) < 0)
                    return -1;
                continue;
            }
            PyObject *array = array_for(item, payload, base, alone, made);
            if (array == NULL)
                return -1;
            if (tuple)
                PyTuple_SET_ITEM(o, k, array);
            else
                PyList_SET_ITEM(o, k, array);
            Py_DECREF(item);
        }
    } else if (PyDict_CheckExact(o)) {
        Py_ssize_t pos = 0;
        PyObject *key, *value;
        while (PyDict_Next(o, &pos, &key, &value)) { /* values change, keys do not: allowed meanwhile */
            if (!is_stand_in(value)) {
                if (put_arrays(value, payload, base, alone, made) < 0)
                    return -1;
                continue;
            }
            PyObject *array = array_for(value, payload, base, alone, made);
            int rc = array ? PyDict_SetItem(o, key, array) : -1;
            Py_XDECREF(array);
            if (rc < 0)
                return -1;
        }
    }
    return 0;
}

PyObject *unpack_arrays(PyObject *payload)
{
    Py_ssize_t size = PyByteArray_GET_SIZE(payload);
    const char *data = PyByteArray_AS_STRING(payload);
    uint64_t header[2] = {0, 0};
    if (size >= ARRAYS_HEADER)
        memcpy(header, data, ARRAYS_HEADER);
    if (size < ARRAYS_HEADER || header[0] > (uint64_t)(size - ARRAYS_HEADER)) {
        PyErr_SetString(PyExc_ValueError, "a frame of arrays is corrupt");
        return NULL;
    }
    if (intern_names() < 0 || ndarray(1) == NULL)
        return NULL;
    PyObject *message = plain_decode(data + ARRAYS_HEADER, (Py_ssize_t)header[0]);
    PyObject *made = message ? PyDict_New() : NULL;
    Py_ssize_t base = padded(ARRAYS_HEADER + (Py_ssize_t)header[0]);
    if (made == NULL || put_arrays(message, payload, base, header[1] == 1, made) < 0)
        Py_CLEAR(message);
    Py_XDECREF(made);
    return message;
}

/* The message in a frame: plain (with arrays after it), or pickled (`unpickle(kind, payload)`, the channel's). */
static PyObject *frame_message(int kind, PyObject *payload, PyObject *unpickle)
{
    if (kind == KIND_PLAIN)
        return plain_decode(PyBytes_AS_STRING(payload), PyBytes_GET_SIZE(payload));
    if (kind == KIND_ARRAYS)
        return unpack_arrays(payload);
    return PyObject_CallFunction(unpickle, "iO", kind, payload);
}

static int is_empty_sequence(PyObject *o)
{
    return (PyList_CheckExact(o) && PyList_GET_SIZE(o) == 0) || (PyTuple_CheckExact(o) && PyTuple_GET_SIZE(o) == 0);
}

/* ------------------------------------------------------------------ the federate's lane */

typedef struct {
    PyObject_HEAD
    PyObject *requests, *answers; /* wires (`is_wire`) */
    PyObject *served;     /* server.FederateServer: `finish(failed)` and `send_all` */
    PyObject *output;     /* forwarding.Output of a federate on another machine, or None */
    PyObject *output_streams; /* its Printed streams (NULL without one) */
    int holding;          /* running a plain tag of such a federate: what it prints goes to `held` */
    PyObject *held;       /* [(fd, text)] printed while holding, or NULL */
    PyObject *sched;      /* its FederateScheduler */
    PyObject *unpickle;   /* the requests channel's, for frames that are not plain */
    PyObject *next_round; /* the answers channel's, or None where it has nothing to do */
    PyObject *reactions, *reads, *table, *slot_of, *kept, *modes, *kept_marker, *tag_type;
    long run_kind, ran_kind;
} FederateLane;

static int FederateLane_init(FederateLane *self, PyObject *args, PyObject *kw)
{
    static char *names[] = {"served", "sched", "requests", "answers", "unpickle", "next_round", "reactions", "reads",
                            "table", "slot_of", "kept", "modes", "kept_marker", "tag", "run_kind", "ran_kind",
                            "output", NULL};
    PyObject *served, *sched, *requests, *answers, *unpickle, *next_round, *reactions, *reads, *table, *slot_of, *kept,
        *modes, *kept_marker, *tag_type, *output = Py_None;
    long run_kind, ran_kind;
    if (intern_names() < 0)
        return -1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOOOOOO!O!O!O!O!O!OOll|O", names, &served, &sched, &requests, &answers,
                                     &unpickle, &next_round, &PyList_Type, &reactions, &PyList_Type, &reads,
                                     &PyList_Type, &table, &PyDict_Type, &slot_of, &PySet_Type, &kept, &PyList_Type,
                                     &modes, &kept_marker, &tag_type, &run_kind, &ran_kind, &output))
        return -1;
    if (!is_wire(requests) || !is_wire(answers)) {
        PyErr_SetString(PyExc_TypeError, "FederateLane: requests and answers are Rings or Sockets");
        return -1;
    }
    PyObject **fields[] = {&self->served, &self->sched, &self->requests, &self->answers, &self->unpickle,
                           &self->next_round, &self->reactions, &self->reads, &self->table, &self->slot_of,
                           &self->kept, &self->modes, &self->kept_marker, &self->tag_type, &self->output};
    PyObject *values[] = {served, sched, requests, answers, unpickle, next_round, reactions, reads, table, slot_of,
                          kept, modes, kept_marker, tag_type, output};
    for (size_t k = 0; k < sizeof(fields) / sizeof(fields[0]); k++) {
        Py_INCREF(values[k]);
        Py_XSETREF(*fields[k], values[k]);
    }
    self->run_kind = run_kind;
    self->ran_kind = ran_kind;
    Py_CLEAR(self->output_streams);
    Py_CLEAR(self->held);
    self->holding = 0;
    if (output != Py_None) { /* the Output writes to this lane's `put` while it runs a tag */
        if ((self->output_streams = PyObject_GetAttr(output, s_streams)) == NULL ||
            PyObject_SetAttr(output, s_lane, (PyObject *)self) < 0)
            return -1;
        if (!PyList_CheckExact(self->output_streams)) {
            PyErr_SetString(PyExc_TypeError, "FederateLane: output.streams is a list");
            return -1;
        }
    }
    return 0;
}

static int FederateLane_traverse(FederateLane *self, visitproc visit, void *arg)
{
    Py_VISIT(self->requests);
    Py_VISIT(self->answers);
    Py_VISIT(self->served);
    Py_VISIT(self->output);
    Py_VISIT(self->output_streams);
    Py_VISIT(self->held);
    Py_VISIT(self->sched);
    Py_VISIT(self->unpickle);
    Py_VISIT(self->next_round);
    Py_VISIT(self->reactions);
    Py_VISIT(self->reads);
    Py_VISIT(self->table);
    Py_VISIT(self->slot_of);
    Py_VISIT(self->kept);
    Py_VISIT(self->modes);
    Py_VISIT(self->kept_marker);
    Py_VISIT(self->tag_type);
    return 0;
}

static int FederateLane_clear(FederateLane *self)
{
    Py_CLEAR(self->requests);
    Py_CLEAR(self->answers);
    Py_CLEAR(self->served);
    Py_CLEAR(self->output);
    Py_CLEAR(self->output_streams);
    Py_CLEAR(self->held);
    Py_CLEAR(self->sched);
    Py_CLEAR(self->unpickle);
    Py_CLEAR(self->next_round);
    Py_CLEAR(self->reactions);
    Py_CLEAR(self->reads);
    Py_CLEAR(self->table);
    Py_CLEAR(self->slot_of);
    Py_CLEAR(self->kept);
    Py_CLEAR(self->modes);
    Py_CLEAR(self->kept_marker);
    Py_CLEAR(self->tag_type);
    return 0;
}

static void FederateLane_dealloc(FederateLane *self)
{
    PyObject_GC_UnTrack(self);
    FederateLane_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* A Run without mode resets, whose batch is a list of (int, list) pairs. */
static int plain_run(FederateLane *self, PyObject *msg)
{
    if (!PyTuple_CheckExact(msg) || PyTuple_GET_SIZE(msg) != 5)
        return 0;
    PyObject *kind = PyTuple_GET_ITEM(msg, 0);
    if (!PyLong_CheckExact(kind) || PyLong_AsLong(kind) != self->run_kind)
        return 0;
    if (!is_empty_sequence(PyTuple_GET_ITEM(msg, 4)) || !PyList_CheckExact(PyTuple_GET_ITEM(msg, 3)))
        return 0;
    return 1;
}

/* Whether this tag did nothing but set ports (after its reactions): 1, 0, -1 with an exception. */
static int quiet_tag(FederateLane *self, int failed)
{
    if (failed)
        return 0;
    PyObject *sched = self->sched;
    int v;
    if ((v = attr_truth(sched, s_halted)) != 0 || (v = attr_truth(sched, s_stop_requested)) != 0 ||
        (v = attr_truth(sched, s_scheduled)) != 0 || (v = attr_truth(sched, s_physical_scheduled)) != 0 ||
        (v = attr_truth(sched, s_checkpoint_requests)) != 0)
        return v < 0 ? -1 : 0;
    PyObject *trace = PyObject_GetAttr(sched, s_trace);
    if (trace == NULL)
        return -1;
    int traced = trace != Py_None && PyObject_IsTrue(trace);
    Py_DECREF(trace);
    if (traced)
        return traced < 0 ? -1 : 0;
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(self->modes); k++) {
        PyObject *pending = PyObject_GetAttr(PyList_GET_ITEM(self->modes, k), s_pending);
        if (pending == NULL)
            return -1;
        int none = pending == Py_None;
        Py_DECREF(pending);
        if (!none)
            return 0;
    }
    return 1;
}

/* The answer of a quiet tag, (RAN, outputs, [], [], [], False, False, None, [], [], []), or NULL
 * with no exception when it is not plain (a kept port, a value the lane does not carry exactly); the
 * arrays in it counted in *arrays. */
static PyObject *quiet_answer(FederateLane *self, PyObject *set_ports, int *arrays)
{
    int send_all = attr_truth(self->served, s_send_all);
    if (send_all < 0)
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(set_ports);
    PyObject *outputs = PyList_New(n);
    if (outputs == NULL)
        return NULL;
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *port = PyList_GET_ITEM(set_ports, k);
        PyObject *slot = PyDict_GetItemWithError(self->slot_of, port); /* borrowed */
        if (slot == NULL) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_KeyError, "a port set in a federate has no slot");
            Py_DECREF(outputs);
            return NULL;
        }
        int kept = send_all ? 0 : PySet_Contains(self->kept, slot);
        if (kept != 0) { /* the coordinator learns only that it is present: `NotSent`, no plain data */
            Py_DECREF(outputs);
            return NULL;
        }
        PyObject *value = PyObject_GetAttr(port, s_value);
        if (value == NULL) {
            Py_DECREF(outputs);
            return NULL;
        }
        PyObject *pair = PyTuple_Pack(2, slot, value);
        Py_DECREF(value);
        if (pair == NULL) {
            Py_DECREF(outputs);
            return NULL;
        }
        PyList_SET_ITEM(outputs, k, pair);
    }
    if (!plain(outputs, 0, arrays)) {
        Py_DECREF(outputs);
        return NULL;
    }
    /* `N` hands `outputs` over, also when building fails; `[]` is a new empty list */
    return Py_BuildValue("(lN[][][]OOO[][][])", self->ran_kind, outputs, Py_False, Py_False, Py_None);
}

/* What was printed while holding, [(fd, text)] (a new list), holding no more. */
static PyObject *take_held(FederateLane *self)
{
    self->holding = 0;
    PyObject *held = self->held;
    self->held = NULL;
    return held ? held : PyList_New(0);
}

/* What a federate on another machine printed while the reactions ran into the answer `ran`, a new
 * tuple of ours (it then goes on as any answer that is not plain, to be printed there). 0, or -1 with
 * an exception. */
static int release_output(FederateLane *self, PyObject *ran)
{
    if (self->output == Py_None)
        return 0;
    if (self->held == NULL) { /* nothing printed (most tags): `ran` has [] */
        self->holding = 0;
        return 0;
    }
    PyObject *printed = take_held(self);
    int arrays = 0;
    if (!plain(printed, 0, &arrays) || arrays) { /* not plain: the federation's own code sends the answer */
        PyErr_SetString(PyExc_TypeError, "printed text is (fd, str) pairs");
        Py_DECREF(printed);
        return -1;
    }
    PyObject *empty = PyTuple_GET_ITEM(ran, RAN_FIELDS - 1);
    PyTuple_SET_ITEM(ran, RAN_FIELDS - 1, printed);
    Py_DECREF(empty);
    return 0;
}

/* After a plain Run's reactions: the answer (served.finish when the tag was not quiet). 1: go on,
 * 0: the coordinator has gone, -1: an exception. */
static int finish(FederateLane *self, int failed)
{
    int quiet = quiet_tag(self, failed);
    if (quiet < 0)
        return -1;
    if (quiet) {
        PyObject *set_ports = PyObject_GetAttr(self->sched, s_set_ports);
        if (set_ports == NULL)
            return -1;
        if (!PyList_CheckExact(set_ports)) {
            Py_DECREF(set_ports);
            PyErr_SetString(PyExc_TypeError, "set_ports must be a list");
            return -1;
        }
        int arrays = 0;
        PyObject *ran = quiet_answer(self, set_ports, &arrays);
        if (ran == NULL && PyErr_Occurred()) {
            Py_DECREF(set_ports);
            return -1;
        }
        if (ran != NULL) { /* as FederateServer.finish: the segments' round, the output, then the answer */
            PyObject *res = self->next_round == Py_None ? Py_NewRef(Py_None) : PyObject_CallNoArgs(self->next_round);
            if (res == NULL || flush_output(self->output_streams) < 0 || release_output(self, ran) < 0) {
                Py_XDECREF(res);
                Py_DECREF(ran);
                Py_DECREF(set_ports);
                return -1;
            }
            Py_DECREF(res);
            int cleared = PyList_SetSlice(set_ports, 0, PyList_GET_SIZE(set_ports), NULL);
            Py_DECREF(set_ports);
            int rc = cleared < 0 ? -1 : send_plain(self->answers, ran, arrays);
            Py_DECREF(ran);
            if (rc == 0)
                return 1;
            if (PyErr_ExceptionMatches(PyExc_OSError)) { /* the coordinator has gone */
                PyErr_Clear();
                return 0;
            }
            return -1;
        }
        Py_DECREF(set_ports);
    }
    PyObject *res = PyObject_CallMethodOneArg(self->served, s_finish, failed ? Py_True : Py_False);
    if (res == NULL)
        return -1;
    int go_on = PyObject_IsTrue(res);
    Py_DECREF(res);
    return go_on;
}

/* FederateScheduler.run_reaction(r): whether it failed (1; reported there), 0, or -1 with an
 * exception. A reaction without a deadline is called here as Scheduler.invoke calls it (the running
 * reaction set meanwhile, a failure to `failed`); one with a deadline through run_reaction. */
static int run_reaction(FederateLane *self, PyObject *r)
{
    PyObject *sched = self->sched;
    PyObject *deadline = PyObject_GetAttr(r, s_deadline);
    if (deadline == NULL)
        return -1;
    int plain_call = deadline == Py_None;
    Py_DECREF(deadline);
    if (!plain_call) {
        PyObject *res = PyObject_CallMethodOneArg(sched, s_run_reaction, r);
        if (res == NULL)
            return -1;
        int failed = PyObject_IsTrue(res);
        Py_DECREF(res);
        return failed;
    }
    PyObject *call = PyObject_GetAttr(r, s_call);
    if (call == NULL)
        return -1;
    if (PyObject_SetAttr(sched, s_exit_status, k_zero) < 0 || PyObject_SetAttr(sched, s__current, r) < 0) {
        Py_DECREF(call);
        return -1;
    }
    PyObject *res = PyObject_CallNoArgs(call);
    Py_DECREF(call);
    if (res == NULL) {
        PyObject *type, *exc, *tb;
        PyErr_Fetch(&type, &exc, &tb);
        PyErr_NormalizeException(&type, &exc, &tb);
        if (tb != NULL)
            PyException_SetTraceback(exc, tb);
        res = PyObject_CallMethodObjArgs(sched, s_failed, r, exc, NULL);
        Py_XDECREF(type);
        Py_XDECREF(exc);
        Py_XDECREF(tb);
    }
    if (PyObject_SetAttr(sched, s__current, Py_None) < 0) {
        Py_XDECREF(res);
        return -1;
    }
    if (res == NULL)
        return -1;
    Py_DECREF(res);
    PyObject *status = PyObject_GetAttr(sched, s_exit_status);
    if (status == NULL)
        return -1;
    int nonzero = PyObject_IsTrue(status);
    Py_DECREF(status);
    if (nonzero <= 0)
        return nonzero;
    int halted = attr_truth(sched, s_halted);
    return halted < 0 ? -1 : !halted;
}

/* A Tag (a tuple subclass) of these two ints, as the C core makes them. */
static PyObject *make_tag(PyObject *tag_type, PyObject *time, PyObject *microstep)
{
    PyTypeObject *type = (PyTypeObject *)tag_type;
    if (!PyType_Check(tag_type) || !PyType_IsSubtype(type, &PyTuple_Type))
        return PyObject_CallFunctionObjArgs(tag_type, time, microstep, NULL);
    PyObject *tag = type->tp_alloc(type, 2);
    if (tag == NULL)
        return NULL;
    Py_INCREF(time);
    PyTuple_SET_ITEM(tag, 0, time);
    Py_INCREF(microstep);
    PyTuple_SET_ITEM(tag, 1, microstep);
    return tag;
}

/* FederateServer.run for a plain Run: the tag, the reactions with what they read, then `finish`. */
static int run_plain(FederateLane *self, PyObject *msg)
{
    PyObject *sched = self->sched;
    if (self->output != Py_None) /* what the reactions print goes back with the answer */
        self->holding = 1;
    PyObject *tag = make_tag(self->tag_type, PyTuple_GET_ITEM(msg, 1), PyTuple_GET_ITEM(msg, 2));
    if (tag == NULL)
        return -1;
    int rc = PyObject_SetAttr(sched, s_current, tag);
    Py_DECREF(tag);
    if (rc < 0)
        return -1;
    /* `arrival`: physical time as the program sees it (Scheduler.physical) when the request came in */
    PyObject *offset = PyObject_GetAttr(sched, s_clock_offset);
    long long clock_offset = offset ? PyLong_AsLongLong(offset) : -1;
    Py_XDECREF(offset);
    if (clock_offset == -1 && PyErr_Occurred())
        return -1;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    PyObject *arrival = PyLong_FromLongLong((long long)ts.tv_sec * 1000000000LL + ts.tv_nsec - clock_offset);
    if (arrival == NULL || PyObject_SetAttr(sched, s_arrival, arrival) < 0) {
        Py_XDECREF(arrival);
        return -1;
    }
    Py_DECREF(arrival);
    int failed = 0;
    PyObject *batch = PyTuple_GET_ITEM(msg, 3);
    for (Py_ssize_t b = 0; b < PyList_GET_SIZE(batch); b++) {
        PyObject *entry = PyList_GET_ITEM(batch, b);
        if (!PyTuple_CheckExact(entry) || PyTuple_GET_SIZE(entry) != 2 || !PyList_CheckExact(PyTuple_GET_ITEM(entry, 1))) {
            PyErr_SetString(PyExc_TypeError, "a Run's batch holds (reaction, inputs) pairs");
            return -1;
        }
        int halted = attr_truth(sched, s_halted);
        if (halted < 0)
            return -1;
        if (halted)
            break;
        Py_ssize_t i = PyLong_AsSsize_t(PyTuple_GET_ITEM(entry, 0));
        if (i == -1 && PyErr_Occurred())
            return -1;
        if (i < 0 || i >= PyList_GET_SIZE(self->reactions)) {
            PyErr_SetString(PyExc_IndexError, "a Run names no reaction of this program");
            return -1;
        }
        PyObject *reads = PyList_GET_ITEM(self->reads, i);
        for (Py_ssize_t k = 0; k < PyList_GET_SIZE(reads); k++)
            if (PyObject_SetAttr(PyList_GET_ITEM(reads, k), s_is_present, Py_False) < 0)
                return -1;
        PyObject *inputs = PyTuple_GET_ITEM(entry, 1);
        for (Py_ssize_t k = 0; k < PyList_GET_SIZE(inputs); k++) {
            PyObject *pair = PyList_GET_ITEM(inputs, k);
            if (!PyTuple_CheckExact(pair) || PyTuple_GET_SIZE(pair) != 2) {
                PyErr_SetString(PyExc_TypeError, "a Run's inputs are (slot, value) pairs");
                return -1;
            }
            Py_ssize_t slot = PyLong_AsSsize_t(PyTuple_GET_ITEM(pair, 0));
            if (slot == -1 && PyErr_Occurred())
                return -1;
            if (slot < 0 || slot >= PyList_GET_SIZE(self->table)) {
                PyErr_SetString(PyExc_IndexError, "a Run names no slot of this program");
                return -1;
            }
            PyObject *o = PyList_GET_ITEM(self->table, slot), *value = PyTuple_GET_ITEM(pair, 1);
            if (value != self->kept_marker && PyObject_SetAttr(o, s_value, value) < 0)
                return -1;
            if (PyObject_SetAttr(o, s_is_present, Py_True) < 0)
                return -1;
        }
        int f = run_reaction(self, PyList_GET_ITEM(self->reactions, i));
        if (f < 0)
            return -1;
        failed |= f;
    }
    return finish(self, failed);
}

/* next() -> the next request that is not a plain Run (the raw tuple, for federation.serve to
 * decode and handle), having answered the plain Runs before it; None once the coordinator has gone
 * (an answer could not be sent). EOFError once the requests have ended. */
static PyObject *FederateLane_next(FederateLane *self, PyObject *unused)
{
    if (self->requests == NULL) {
        PyErr_SetString(PyExc_ValueError, "the lane is closed");
        return NULL;
    }
    for (;;) {
        int kind;
        PyObject *payload = wire_receive(self->requests, &kind);
        if (payload == NULL)
            return NULL;
        PyObject *msg = frame_message(kind, payload, self->unpickle);
        Py_DECREF(payload);
        if (msg == NULL)
            return NULL;
        if (!plain_run(self, msg))
            return msg;
        int go_on = run_plain(self, msg);
        Py_DECREF(msg);
        if (go_on < 0) {
            self->holding = 0; /* what is printed from now on goes out at once (the failure, say) */
            return NULL;
        }
        if (go_on == 0)
            Py_RETURN_NONE;
    }
}

/* put(fd, text) -> whether it is held (the lane runs a plain tag): in one step under the GIL, so that
 * what another thread prints is either held with this tag's answer or, once it is sent, not. */
static PyObject *FederateLane_put(FederateLane *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "put(fd, text)");
        return NULL;
    }
    if (!self->holding)
        Py_RETURN_FALSE;
    if (self->held == NULL && (self->held = PyList_New(0)) == NULL)
        return NULL;
    PyObject *pair = PyTuple_Pack(2, args[0], args[1]);
    int rc = pair ? PyList_Append(self->held, pair) : -1;
    Py_XDECREF(pair);
    if (rc < 0)
        return NULL;
    Py_RETURN_TRUE;
}

/* release() -> what was printed while holding, holding no more (Output.release, where a plain tag's
 * answer goes back through the federation's code). */
static PyObject *FederateLane_release(FederateLane *self, PyObject *unused)
{
    return take_held(self);
}

static PyMethodDef FederateLane_methods[] = {
    {"next", (PyCFunction)FederateLane_next, METH_NOARGS,
     "next() -> the next request that is not a plain Run (answering those before it); None once the coordinator "
     "has gone."},
    {"put", (PyCFunction)(void (*)(void))FederateLane_put, METH_FASTCALL,
     "put(fd, text) -> whether it is held, to go back with the answer of the plain tag that runs."},
    {"release", (PyCFunction)FederateLane_release, METH_NOARGS,
     "release() -> [(fd, text)] printed while a plain tag ran, holding no more."},
    {NULL},
};

PyTypeObject FederateLaneType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "lfpy.runtime._wire.FederateLane",
    .tp_basicsize = sizeof(FederateLane),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "A federate's fast lane: plain Runs handled in C (made by federation.server.FederateServer).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)FederateLane_init,
    .tp_traverse = (traverseproc)FederateLane_traverse,
    .tp_clear = (inquiry)FederateLane_clear,
    .tp_dealloc = (destructor)FederateLane_dealloc,
    .tp_methods = FederateLane_methods,
};

/* ------------------------------------------------------------------ the coordinator's lane */

typedef struct {
    PyObject_HEAD
    PyObject *sched;      /* the coordinator's scheduler (the C core's) */
    PyObject *index;      /* Reaction -> its index */
    PyObject *reads;      /* per reaction: [(slot, port or action)] it reads */
    PyObject *slots;      /* the ports and actions by slot */
    PyObject *away;       /* federates whose reactions are not run (a set, the Federation's) */
    PyObject *resets;     /* federate -> mode resets to send (a dict, the Federation's) */
    PyObject *next_round; /* the requests' segments: a new round */
    PyObject *send_run;   /* send_run(k, time, microstep, batch) -> sent: a Run that is not plain */
    PyObject *apply;      /* apply(k, raw answer): an answer that is not plain */
    PyObject *lost;       /* lost(k): federate k has gone */
    Py_ssize_t n;         /* federates, the first (this process) included */
    PyObject **requests, **answers; /* wires (`is_wire`), by federate */
    PyObject **unpickle;
    Py_ssize_t *sent; /* federates with a request out, in order */
    Py_ssize_t nsent;
    PyObject **batches; /* send's scratch: per federate, its batch (NULL: none) */
    long run_kind, ran_kind;
} CoordinatorLane;

static void CoordinatorLane_free_tables(CoordinatorLane *self)
{
    for (Py_ssize_t k = 0; k < self->n; k++) {
        if (self->requests)
            Py_CLEAR(self->requests[k]);
        if (self->answers)
            Py_CLEAR(self->answers[k]);
        if (self->unpickle)
            Py_CLEAR(self->unpickle[k]);
        if (self->batches)
            Py_CLEAR(self->batches[k]);
    }
}

static int CoordinatorLane_init(CoordinatorLane *self, PyObject *args, PyObject *kw)
{
    static char *names[] = {"sched", "index", "reads", "slots", "away", "resets", "next_round", "send_run", "apply",
                            "lost", "federates", "run_kind", "ran_kind", NULL};
    PyObject *sched, *index, *reads, *slots, *away, *resets, *next_round, *send_run, *apply, *lost;
    Py_ssize_t n;
    long run_kind, ran_kind;
    if (intern_names() < 0)
        return -1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO!O!O!O!O!OOOOnll", names, &sched, &PyDict_Type, &index,
                                     &PyList_Type, &reads, &PyList_Type, &slots, &PySet_Type, &away, &PyDict_Type,
                                     &resets, &next_round, &send_run, &apply, &lost, &n, &run_kind, &ran_kind))
        return -1;
    if (self->requests != NULL || n < 1) {
        PyErr_SetString(PyExc_ValueError, "CoordinatorLane: made once, for at least one federate");
        return -1;
    }
    PyObject **fields[] = {&self->sched, &self->index, &self->reads, &self->slots, &self->away, &self->resets,
                           &self->next_round, &self->send_run, &self->apply, &self->lost};
    PyObject *values[] = {sched, index, reads, slots, away, resets, next_round, send_run, apply, lost};
    for (size_t k = 0; k < sizeof(fields) / sizeof(fields[0]); k++) {
        Py_INCREF(values[k]);
        Py_XSETREF(*fields[k], values[k]);
    }
    self->n = n;
    self->requests = PyMem_Calloc(n, sizeof(PyObject *));
    self->answers = PyMem_Calloc(n, sizeof(PyObject *));
    self->unpickle = PyMem_Calloc(n, sizeof(PyObject *));
    self->batches = PyMem_Calloc(n, sizeof(PyObject *));
    self->sent = PyMem_Calloc(n, sizeof(Py_ssize_t));
    if (!self->requests || !self->answers || !self->unpickle || !self->batches || !self->sent) {
        PyErr_NoMemory();
        return -1;
    }
    self->run_kind = run_kind;
    self->ran_kind = ran_kind;
    return 0;
}

static int CoordinatorLane_traverse(CoordinatorLane *self, visitproc visit, void *arg)
{
    Py_VISIT(self->sched);
    Py_VISIT(self->index);
    Py_VISIT(self->reads);
    Py_VISIT(self->slots);
    Py_VISIT(self->away);
    Py_VISIT(self->resets);
    Py_VISIT(self->next_round);
    Py_VISIT(self->send_run);
    Py_VISIT(self->apply);
    Py_VISIT(self->lost);
    for (Py_ssize_t k = 0; k < self->n; k++) {
        if (self->requests)
            Py_VISIT(self->requests[k]);
        if (self->answers)
            Py_VISIT(self->answers[k]);
        if (self->unpickle)
            Py_VISIT(self->unpickle[k]);
        if (self->batches)
            Py_VISIT(self->batches[k]);
    }
    return 0;
}

static int CoordinatorLane_clear(CoordinatorLane *self)
{
    Py_CLEAR(self->sched);
    Py_CLEAR(self->index);
    Py_CLEAR(self->reads);
    Py_CLEAR(self->slots);
    Py_CLEAR(self->away);
    Py_CLEAR(self->resets);
    Py_CLEAR(self->next_round);
    Py_CLEAR(self->send_run);
    Py_CLEAR(self->apply);
    Py_CLEAR(self->lost);
    CoordinatorLane_free_tables(self);
    return 0;
}

static void CoordinatorLane_dealloc(CoordinatorLane *self)
{
    PyObject_GC_UnTrack(self);
    CoordinatorLane_clear(self);
    PyMem_Free(self->requests);
    PyMem_Free(self->answers);
    PyMem_Free(self->unpickle);
    PyMem_Free(self->batches);
    PyMem_Free(self->sent);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* attach(k, requests, answers, unpickle): federate k's wires, rings or one socket both ways (a new
 * process of it: again). */
static PyObject *CoordinatorLane_attach(CoordinatorLane *self, PyObject *args)
{
    Py_ssize_t k;
    PyObject *requests, *answers, *unpickle;
    if (!PyArg_ParseTuple(args, "nOOO", &k, &requests, &answers, &unpickle))
        return NULL;
    if (!is_wire(requests) || !is_wire(answers)) {
        PyErr_SetString(PyExc_TypeError, "attach: requests and answers are Rings or Sockets");
        return NULL;
    }
    if (k < 1 || k >= self->n) {
        PyErr_SetString(PyExc_IndexError, "attach: no such federate");
        return NULL;
    }
    Py_INCREF(requests);
    Py_XSETREF(self->requests[k], requests);
    Py_INCREF(answers);
    Py_XSETREF(self->answers[k], answers);
    Py_INCREF(unpickle);
    Py_XSETREF(self->unpickle[k], unpickle);
    Py_RETURN_NONE;
}

static int sort_ssize(const void *a, const void *b)
{
    Py_ssize_t x = *(const Py_ssize_t *)a, y = *(const Py_ssize_t *)b;
    return (x > y) - (x < y);
}

/* Lost federate k (what `send` or `collect` found): the Federation reports it. */
static int report_lost(CoordinatorLane *self, Py_ssize_t k)
{
    PyObject *res = PyObject_CallFunction(self->lost, "n", k);
    if (res == NULL)
        return -1;
    Py_DECREF(res);
    return 0;
}

/* send(reactions): Federation.send, other federates' reactions of one level in order. */
static PyObject *CoordinatorLane_send(CoordinatorLane *self, PyObject *reactions)
{
    self->nsent = 0;
    if (!PyList_CheckExact(reactions)) {
        PyErr_SetString(PyExc_TypeError, "send: a list of reactions");
        return NULL;
    }
    Py_ssize_t used = 0; /* federates with a batch, in the order first seen */
    Py_ssize_t *order = self->sent;
    for (Py_ssize_t j = 0; j < PyList_GET_SIZE(reactions); j++) {
        PyObject *r = PyList_GET_ITEM(reactions, j);
        PyObject *fed = PyObject_GetAttr(r, s_federate);
        if (fed == NULL)
            goto fail;
        Py_ssize_t k = PyLong_AsSsize_t(fed);
        int away = k == -1 && PyErr_Occurred() ? -1 : PySet_Contains(self->away, fed);
        Py_DECREF(fed);
        if (away < 0)
            goto fail;
        if (away)
            continue;
        if (k < 1 || k >= self->n || self->requests[k] == NULL) {
            PyErr_Format(PyExc_RuntimeError, "send: federate %zd has no wires", k);
            goto fail;
        }
        PyObject *i = PyDict_GetItemWithError(self->index, r); /* borrowed */
        if (i == NULL) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_KeyError, "send: a reaction of another program");
            goto fail;
        }
        Py_ssize_t ii = PyLong_AsSsize_t(i);
        if (ii == -1 && PyErr_Occurred())
            goto fail;
        PyObject *reads = PyList_GET_ITEM(self->reads, ii);
        PyObject *inputs = PyList_New(0);
        if (inputs == NULL)
            goto fail;
        for (Py_ssize_t m = 0; m < PyList_GET_SIZE(reads); m++) {
            PyObject *pair = PyList_GET_ITEM(reads, m); /* (slot, object) */
            PyObject *o = PyTuple_GET_ITEM(pair, 1);
            int present = attr_truth(o, s_is_present);
            if (present < 0) {
                Py_DECREF(inputs);
                goto fail;
            }
            if (!present)
                continue;
            PyObject *value = PyObject_GetAttr(o, s_value);
            PyObject *input = value ? PyTuple_Pack(2, PyTuple_GET_ITEM(pair, 0), value) : NULL;
            Py_XDECREF(value);
            if (input == NULL || PyList_Append(inputs, input) < 0) {
                Py_XDECREF(input);
                Py_DECREF(inputs);
                goto fail;
            }
            Py_DECREF(input);
        }
        PyObject *entry = PyTuple_Pack(2, i, inputs);
        Py_DECREF(inputs);
        if (entry == NULL)
            goto fail;
        if (self->batches[k] == NULL) {
            if ((self->batches[k] = PyList_New(0)) == NULL) {
                Py_DECREF(entry);
                goto fail;
            }
            order[used++] = k;
        }
        int rc = PyList_Append(self->batches[k], entry);
        Py_DECREF(entry);
        if (rc < 0)
            goto fail;
    }
    if (used == 0)
        Py_RETURN_NONE;
    qsort(order, used, sizeof(Py_ssize_t), sort_ssize); /* federate order */
    if (flush_output(NULL) < 0) /* what this process printed before comes first */
        goto fail;
    PyObject *now = PyObject_GetAttr(self->sched, s_current);
    if (now == NULL)
        goto fail;
    if (!PyTuple_Check(now) || PyTuple_GET_SIZE(now) != 2) {
        Py_DECREF(now);
        PyErr_SetString(PyExc_TypeError, "the current tag is (time, microstep)");
        goto fail;
    }
    PyObject *res = PyObject_CallNoArgs(self->next_round); /* every federate has answered: it has mapped what it keeps */
    if (res == NULL) {
        Py_DECREF(now);
        goto fail;
    }
    Py_DECREF(res);
    int has_resets = PyDict_GET_SIZE(self->resets) > 0;
    Py_ssize_t nsent = 0;
    for (Py_ssize_t u = 0; u < used; u++) {
        Py_ssize_t k = order[u];
        PyObject *batch = self->batches[k];
        self->batches[k] = NULL;
        int sent;
        int arrays = 0;
        if (!has_resets && plain(batch, 0, &arrays)) {
            PyObject *run = Py_BuildValue("(lOON[])", self->run_kind, PyTuple_GET_ITEM(now, 0), PyTuple_GET_ITEM(now, 1),
                                          batch); /* hands `batch` over, also when building fails */
            if (run == NULL)
                goto fail_now;
            int rc = send_plain(self->requests[k], run, arrays);
            Py_DECREF(run);
            if (rc < 0) {
                if (!PyErr_ExceptionMatches(PyExc_OSError))
                    goto fail_now;
                PyErr_Clear(); /* the federate has gone */
                if (report_lost(self, k) < 0)
                    goto fail_now;
                continue;
            }
            sent = 1;
        } else { /* the Federation sends it: pickled, large values in shared memory, mode resets */
            PyObject *res2 = PyObject_CallFunction(self->send_run, "nOON", k, PyTuple_GET_ITEM(now, 0),
                                                   PyTuple_GET_ITEM(now, 1), batch);
            if (res2 == NULL)
                goto fail_now;
            sent = PyObject_IsTrue(res2);
            Py_DECREF(res2);
            if (sent < 0)
                goto fail_now;
        }
        if (sent)
            self->sent[nsent++] = k; /* order[] is sent[]: written at or before where it is read */
    }
    Py_DECREF(now);
    self->nsent = nsent;
    Py_RETURN_NONE;
fail_now:
    Py_DECREF(now);
fail:
    for (Py_ssize_t k = 0; k < self->n; k++)
        Py_CLEAR(self->batches[k]);
    self->nsent = 0;
    return NULL;
}

/* A Ran that did nothing but set ports. */
static int quiet_ran(CoordinatorLane *self, PyObject *ran)
{
    if (!PyTuple_CheckExact(ran) || PyTuple_GET_SIZE(ran) != RAN_FIELDS)
        return 0;
    PyObject *kind = PyTuple_GET_ITEM(ran, 0);
    if (!PyLong_CheckExact(kind) || PyLong_AsLong(kind) != self->ran_kind || !PyList_CheckExact(PyTuple_GET_ITEM(ran, 1)))
        return 0;
    return is_empty_sequence(PyTuple_GET_ITEM(ran, 2)) && is_empty_sequence(PyTuple_GET_ITEM(ran, 3)) &&
           is_empty_sequence(PyTuple_GET_ITEM(ran, 4)) && PyTuple_GET_ITEM(ran, 5) == Py_False &&
           PyTuple_GET_ITEM(ran, 6) == Py_False && PyTuple_GET_ITEM(ran, 7) == Py_None &&
           is_empty_sequence(PyTuple_GET_ITEM(ran, 8)) && is_empty_sequence(PyTuple_GET_ITEM(ran, 9)) &&
           is_empty_sequence(PyTuple_GET_ITEM(ran, 10));
}

/* collect(): Federation.collect, the answers of the federates `send` sent to, in federate order. */
static PyObject *CoordinatorLane_collect(CoordinatorLane *self, PyObject *unused)
{
    Py_ssize_t nsent = self->nsent;
    self->nsent = 0;
    for (Py_ssize_t u = 0; u < nsent; u++) {
        Py_ssize_t k = self->sent[u];
        int kind;
        PyObject *payload = wire_receive(self->answers[k], &kind);
        if (payload == NULL) {
            if (!PyErr_ExceptionMatches(PyExc_EOFError) && !PyErr_ExceptionMatches(PyExc_OSError))
                return NULL;
            PyErr_Clear(); /* the federate has gone */
            if (report_lost(self, k) < 0)
                return NULL;
            continue;
        }
        PyObject *ran = frame_message(kind, payload, self->unpickle[k]);
        Py_DECREF(payload);
        if (ran == NULL)
            return NULL;
        if (!quiet_ran(self, ran)) {
            PyObject *res = PyObject_CallFunction(self->apply, "nO", k, ran);
            Py_DECREF(ran);
            if (res == NULL)
                return NULL;
            Py_DECREF(res);
            continue;
        }
        PyObject *outputs = PyTuple_GET_ITEM(ran, 1);
        for (Py_ssize_t m = 0; m < PyList_GET_SIZE(outputs); m++) {
            PyObject *pair = PyList_GET_ITEM(outputs, m);
            Py_ssize_t slot = PyTuple_CheckExact(pair) && PyTuple_GET_SIZE(pair) == 2
                                  ? PyLong_AsSsize_t(PyTuple_GET_ITEM(pair, 0))
                                  : -1;
            if (slot < 0 || slot >= PyList_GET_SIZE(self->slots)) {
                Py_DECREF(ran);
                if (!PyErr_Occurred())
                    PyErr_SetString(PyExc_ValueError, "an answer names no slot of this program");
                return NULL;
            }
            PyObject *res = PyObject_CallMethodOneArg(PyList_GET_ITEM(self->slots, slot), s_set,
                                                      PyTuple_GET_ITEM(pair, 1));
            if (res == NULL) {
                Py_DECREF(ran);
                return NULL;
            }
            Py_DECREF(res);
        }
        Py_DECREF(ran);
    }
    Py_RETURN_NONE;
}

static PyMethodDef CoordinatorLane_methods[] = {
    {"attach", (PyCFunction)CoordinatorLane_attach, METH_VARARGS,
     "attach(k, requests, answers, unpickle): federate k's rings, or its socket twice."},
    {"send", (PyCFunction)CoordinatorLane_send, METH_O, "send(reactions): Federation.send, in C for plain data."},
    {"collect", (PyCFunction)CoordinatorLane_collect, METH_NOARGS,
     "collect(): Federation.collect, in C for answers that only set ports."},
    {NULL},
};

PyTypeObject CoordinatorLaneType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "lfpy.runtime._wire.CoordinatorLane",
    .tp_basicsize = sizeof(CoordinatorLane),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "The coordinator's fast lane: a level's requests and answers in C (federation.Federation makes it).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)CoordinatorLane_init,
    .tp_traverse = (traverseproc)CoordinatorLane_traverse,
    .tp_clear = (inquiry)CoordinatorLane_clear,
    .tp_dealloc = (destructor)CoordinatorLane_dealloc,
    .tp_methods = CoordinatorLane_methods,
};
