/* lfpy's C core: the hot loop of the scheduler with one worker (inline, or a federated program's
 * coordinator, whose other federates' reactions it hands to the Python runner's `send` and `collect`).
 *
 * The Python side (lfpy/runtime/core.py) builds `CScheduler(Core, Scheduler)`: the scheduler's
 * state that the loop touches on every tag lives in this type's C fields (exposed under the same
 * attribute names as the pure-Python scheduler's, so that checkpoint.py, modes, signals.py and the
 * rest read and write them as before); everything the loop does not own stays in Python and is
 * called back (waiting for physical time, draining physical actions, mode switches, checkpoints,
 * failure reports, deadlines).
 *
 * What is in C:
 * - EventQueue: the event heap (a list of (time, microstep, seq, handler, value) tuples, exactly
 *   as events.py keeps it, so checkpoints save and restore it unchanged) and its push;
 * - the loop: advancing the tag, popping a tag's events (actions, timers and `after` deliveries
 *   are handled here; any other handler is called), queueing reactions by level, running them
 *   (vectorcall into the reaction's function with its bound arguments), the end of the tag
 *   (deliveries of `after` connections, presence reset);
 * - `set` of the ports and `schedule` of the actions the core adopts (CorePort, CoreAction): built-in
 *   method descriptors (`method`) that read and write the Python objects' __slots__ directly.
 *
 * Threading: everything here runs on the scheduler's thread with the GIL held; waiting for
 * physical time is Python's `_wait_until` (a Condition wait, which releases the GIL), and other
 * threads hand physical actions over through the Python lists `physical_pending` and `soon`.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <time.h>

/* ------------------------------------------------------------------ slots of Python objects */

#define SLOT(obj, off) (*(PyObject **)((char *)(obj) + (off)))

/* The offset of the __slots__ member `name` of `type` (a member descriptor). */
static Py_ssize_t slot_offset(PyTypeObject *type, const char *name)
{
    PyObject *d = PyObject_GetAttrString((PyObject *)type, name);
    if (d == NULL)
        return -1;
    if (Py_TYPE(d) != &PyMemberDescr_Type) {
        PyErr_Format(PyExc_TypeError, "%s.%s is not a slot", type->tp_name, name);
        Py_DECREF(d);
        return -1;
    }
    PyMemberDef *m = ((PyMemberDescrObject *)d)->d_member;
    Py_ssize_t off = m->type == T_OBJECT_EX ? m->offset : -1;
    Py_DECREF(d);
    if (off < 0)
        PyErr_Format(PyExc_TypeError, "%s.%s is not an object slot", type->tp_name, name);
    return off;
}

/* A slot's value (borrowed); sets AttributeError when it has none. */
static inline PyObject *slot_get(PyObject *obj, Py_ssize_t off, const char *name)
{
    PyObject *v = SLOT(obj, off);
    if (v == NULL)
        PyErr_Format(PyExc_AttributeError, "'%s' object has no attribute '%s'", Py_TYPE(obj)->tp_name, name);
    return v;
}

static inline void slot_set(PyObject *obj, Py_ssize_t off, PyObject *v)
{
    PyObject *old = SLOT(obj, off);
    Py_INCREF(v);
    SLOT(obj, off) = v;
    Py_XDECREF(old);
}

/* list.clear() that keeps the list's memory (a tag's lists fill and empty once per tag). */
static void list_empty(PyObject *list)
{
    Py_ssize_t n = PyList_GET_SIZE(list);
    PyObject **items = ((PyListObject *)list)->ob_item;
    Py_SET_SIZE(list, 0);
    for (Py_ssize_t k = 0; k < n; k++)
        Py_DECREF(items[k]);
}

/* list.append for an exact list: into spare capacity without a call. */
static inline int list_append(PyObject *list, PyObject *item)
{
    PyListObject *l = (PyListObject *)list;
    Py_ssize_t n = Py_SIZE(l);
    if (PyList_CheckExact(list) && n < l->allocated) {
        Py_INCREF(item);
        l->ob_item[n] = item;
        Py_SET_SIZE(l, n + 1);
        return 0;
    }
    return PyList_Append(list, item);
}

/* isinstance(obj, type) for the runtime's classes: the class itself or a direct subclass first
 * (CorePort, CoreAction), without walking the MRO. */
static inline int is_a(PyObject *obj, PyTypeObject *type)
{
    PyTypeObject *t = Py_TYPE(obj);
    return t == type || t->tp_base == type || PyType_IsSubtype(t, type);
}

static inline int truth(PyObject *v)
{
    if (v == Py_True)
        return 1;
    if (v == Py_False || v == Py_None)
        return 0;
    return PyObject_IsTrue(v);
}

/* An exact int of at most three 30-bit digits that fits 63 bits (times in ns since 1970 take three),
 * read without a call: 1 and its value in *out, or 0 (read it with the C API). CPython 3.11's layout;
 * later versions take the C API's path. */
static inline int small_ll(PyObject *v, long long *out)
{
#if PY_VERSION_HEX < 0x030C0000 && PYLONG_BITS_IN_DIGIT == 30
    if (!PyLong_CheckExact(v))
        return 0;
    Py_ssize_t size = Py_SIZE(v);
    const digit *d = ((PyLongObject *)v)->ob_digit;
    Py_ssize_t n = size < 0 ? -size : size;
    unsigned long long x;
    if (n == 0)
        x = 0;
    else if (n == 1)
        x = d[0];
    else if (n == 2)
        x = (unsigned long long)d[0] | (unsigned long long)d[1] << 30;
    else if (n == 3 && d[2] < 8)
        x = (unsigned long long)d[0] | (unsigned long long)d[1] << 30 | (unsigned long long)d[2] << 60;
    else
        return 0;
    *out = size < 0 ? -(long long)x : (long long)x;
    return 1;
#else
    (void)v;
    (void)out;
    return 0;
#endif
}

/* An int slot as a long long; -1 with an error set when it is not one (or too large). */
static inline int as_ll(PyObject *v, long long *out)
{
    if (small_ll(v, out))
        return 0;
    int overflow = 0;
    *out = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow) {
        PyErr_SetString(PyExc_OverflowError, "time out of range");
        return -1;
    }
    if (*out == -1 && PyErr_Occurred())
        return -1;
    return 0;
}

/* ------------------------------------------------------------------ the event heap */

typedef struct {
    PyObject_HEAD
    PyObject *heap; /* list of (time, microstep, seq, handler, value) */
    long long seq;
} EventQueue;

static PyTypeObject EventQueueType;

/* a < b for two events: by (time, microstep, seq), as heapq orders the tuples (seq is unique). */
static int event_lt(PyObject *a, PyObject *b)
{
    if (PyTuple_CheckExact(a) && PyTuple_CheckExact(b) && PyTuple_GET_SIZE(a) >= 3 && PyTuple_GET_SIZE(b) >= 3) {
        for (int i = 0; i < 3; i++) {
            int oa = 0, ob = 0;
            long long x, y;
            if (!small_ll(PyTuple_GET_ITEM(a, i), &x))
                x = PyLong_AsLongLongAndOverflow(PyTuple_GET_ITEM(a, i), &oa);
            if (!small_ll(PyTuple_GET_ITEM(b, i), &y))
                y = PyLong_AsLongLongAndOverflow(PyTuple_GET_ITEM(b, i), &ob);
            if (oa || ob || ((x == -1 || y == -1) && PyErr_Occurred())) {
                PyErr_Clear();
                return PyObject_RichCompareBool(a, b, Py_LT);
            }
            if (x != y)
                return x < y;
        }
        return 0;
    }
    return PyObject_RichCompareBool(a, b, Py_LT);
}

/* heapq's _siftdown / _siftup on a list. */
static int sift_down(PyObject *heap, Py_ssize_t start, Py_ssize_t pos)
{
    PyObject **items = ((PyListObject *)heap)->ob_item;
    PyObject *item = items[pos];
    while (pos > start) {
        Py_ssize_t parentpos = (pos - 1) >> 1;
        PyObject *parent = items[parentpos];
        int lt = event_lt(item, parent);
        if (lt < 0)
            return -1;
        items = ((PyListObject *)heap)->ob_item;
        if (!lt)
            break;
        items[pos] = parent;
        pos = parentpos;
    }
    items[pos] = item;
    return 0;
}

static int sift_up(PyObject *heap, Py_ssize_t pos)
{
    Py_ssize_t end = PyList_GET_SIZE(heap), start = pos;
    PyObject **items = ((PyListObject *)heap)->ob_item;
    PyObject *item = items[pos];
    Py_ssize_t child = 2 * pos + 1;
    while (child < end) {
        Py_ssize_t right = child + 1;
        if (right < end) {
            int lt = event_lt(items[child], items[right]);
            if (lt < 0)
                return -1;
            items = ((PyListObject *)heap)->ob_item;
            if (!lt)
                child = right;
        }
        items[pos] = items[child];
        pos = child;
        child = 2 * pos + 1;
    }
    items[pos] = item;
    return sift_down(heap, start, pos);
}

static int heap_push(PyObject *heap, PyObject *event)
{
    if (list_append(heap, event) < 0)
        return -1;
    return sift_down(heap, 0, PyList_GET_SIZE(heap) - 1);
}

/* Pops the smallest event (a new reference). */
static PyObject *heap_pop(PyObject *heap)
{
    Py_ssize_t n = PyList_GET_SIZE(heap);
    PyObject **items = ((PyListObject *)heap)->ob_item;
    PyObject *last = items[n - 1]; /* the list's reference passes to `last` */
    Py_SET_SIZE(heap, n - 1);      /* keeps its memory for the next push */
    if (n == 1)
        return last;
    PyObject *top = items[0];
    items[0] = last; /* the list's reference to `top` passes to the caller */
    if (sift_up(heap, 0) < 0) {
        Py_DECREF(top);
        return NULL;
    }
    return top;
}

/* Push (t, m, seq, handler, value); takes the references to `t` and `m` (NULL: an error, set). */
static int queue_push_objs(EventQueue *q, PyObject *t, PyObject *m, PyObject *handler, PyObject *value)
{
    if (!PyList_CheckExact(q->heap)) {
        PyErr_SetString(PyExc_TypeError, "EventQueue.heap must be a list");
        t = m = NULL;
    }
    PyObject *s = t && m ? PyLong_FromLongLong(q->seq + 1) : NULL;
    PyObject *event = s ? PyTuple_New(5) : NULL;
    if (event == NULL) {
        Py_XDECREF(t);
        Py_XDECREF(m);
        Py_XDECREF(s);
        return -1;
    }
    q->seq += 1;
    PyTuple_SET_ITEM(event, 0, t);
    PyTuple_SET_ITEM(event, 1, m);
    PyTuple_SET_ITEM(event, 2, s);
    Py_INCREF(handler);
    PyTuple_SET_ITEM(event, 3, handler);
    Py_INCREF(value);
    PyTuple_SET_ITEM(event, 4, value);
    int rc = heap_push(q->heap, event);
    Py_DECREF(event);
    return rc;
}

static int queue_push(EventQueue *q, long long time, long long microstep, PyObject *handler, PyObject *value)
{
    return queue_push_objs(q, PyLong_FromLongLong(time), PyLong_FromLongLong(microstep), handler, value);
}

/* A tag argument: any sequence (time, microstep) of ints. */
static int parse_tag(PyObject *tag, long long *time, long long *microstep)
{
    PyObject *seq = PySequence_Fast(tag, "a tag is (time, microstep)");
    if (seq == NULL)
        return -1;
    if (PySequence_Fast_GET_SIZE(seq) != 2) {
        Py_DECREF(seq);
        PyErr_SetString(PyExc_TypeError, "a tag is (time, microstep)");
        return -1;
    }
    int rc = as_ll(PySequence_Fast_GET_ITEM(seq, 0), time) < 0 || as_ll(PySequence_Fast_GET_ITEM(seq, 1), microstep) < 0
                 ? -1 : 0;
    Py_DECREF(seq);
    return rc;
}

static PyObject *EventQueue_push(EventQueue *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 2 || nargs > 3) {
        PyErr_SetString(PyExc_TypeError, "push(tag, handler, value=None)");
        return NULL;
    }
    PyObject *tag = args[0];
    if (!PyList_CheckExact(self->heap)) {
        PyErr_SetString(PyExc_TypeError, "EventQueue.heap must be a list");
        return NULL;
    }
    /* As events.py: the tag's own items go into the event (they may be larger than 64 bits). */
    PyObject *t = PySequence_GetItem(tag, 0), *m = t ? PySequence_GetItem(tag, 1) : NULL;
    if (m == NULL) {
        Py_XDECREF(t);
        return NULL;
    }
    self->seq += 1;
    PyObject *s = PyLong_FromLongLong(self->seq);
    PyObject *event = s ? PyTuple_Pack(5, t, m, s, args[1], nargs == 3 ? args[2] : Py_None) : NULL;
    Py_DECREF(t);
    Py_DECREF(m);
    Py_XDECREF(s);
    if (event == NULL)
        return NULL;
    int rc = heap_push(self->heap, event);
    Py_DECREF(event);
    if (rc < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *EventQueue_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    EventQueue *self = (EventQueue *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->heap = PyList_New(0);
    if (self->heap == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

static int EventQueue_traverse(EventQueue *self, visitproc visit, void *arg)
{
    Py_VISIT(self->heap);
    return 0;
}

static int EventQueue_clear(EventQueue *self)
{
    Py_CLEAR(self->heap);
    return 0;
}

static void EventQueue_dealloc(EventQueue *self)
{
    PyObject_GC_UnTrack(self);
    EventQueue_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static Py_ssize_t EventQueue_len(EventQueue *self)
{
    return self->heap && PyList_Check(self->heap) ? PyList_GET_SIZE(self->heap) : 0;
}

static PyMethodDef EventQueue_methods[] = {
    {"push", (PyCFunction)(void (*)(void))EventQueue_push, METH_FASTCALL,
     "push(tag, handler, value=None): an event at `tag`; `handler(value)` runs when it is processed."},
    {NULL},
};

static PyMemberDef EventQueue_members[] = {
    {"heap", T_OBJECT_EX, offsetof(EventQueue, heap), 0, "the events, a heap ordered by (time, microstep, seq)"},
    {"seq", T_LONGLONG, offsetof(EventQueue, seq), 0, "the last sequence number given"},
    {NULL},
};

static PySequenceMethods EventQueue_as_sequence = {.sq_length = (lenfunc)EventQueue_len};

static PyTypeObject EventQueueType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "lfpy.runtime._core.EventQueue",
    .tp_basicsize = sizeof(EventQueue),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "The event queue of future tags (events.py's, with push in C).",
    .tp_new = EventQueue_new,
    .tp_traverse = (traverseproc)EventQueue_traverse,
    .tp_clear = (inquiry)EventQueue_clear,
    .tp_dealloc = (destructor)EventQueue_dealloc,
    .tp_methods = EventQueue_methods,
    .tp_members = EventQueue_members,
    .tp_as_sequence = &EventQueue_as_sequence,
};

/* ------------------------------------------------------------------ the core */

typedef struct {
    PyObject *obj;   /* the Reaction */
    PyObject *call;  /* its `call` when `func`/`argv` were taken from it */
    PyObject *func;  /* what is called ... */
    PyObject **argv; /* ... with these arguments; argv[0] is free (PY_VECTORCALL_ARGUMENTS_OFFSET) */
    vectorcallfunc vcall; /* func's vectorcall, called directly (NULL: through PyObject_Vectorcall) */
    Py_ssize_t nargs;
    long long order;
    long long stamp; /* the tag number at which it was last queued */
    int level;
    int gated;  /* lives in a mode: `active()` decides whether it is queued */
    int remote; /* runs in another federate's process (`_remote`) */
} RInfo;

typedef struct {
    PyObject_HEAD
    /* the state shared with Python, under the pure-Python scheduler's attribute names */
    long long cur_time, cur_micro;
    PyObject *cur_obj; /* the Tag of (cur_time, cur_micro), made when asked for */
    long long stop_time, stop_micro;
    PyObject *stop_obj;
    long long tag_number, start_time, clock_offset;
    int halted, stopping, fast, keepalive, has_delayed;
    PyObject *stop_signal, *physical_pending, *soon, *set_ports, *fired, *trace, *checkpoint_requests,
        *at_end_of_tag, *mode_states, *events;
    /* the core's own */
    RInfo *rx;
    Py_ssize_t nrx;
    int nlevels;
    int **lvl;      /* per level: the queued reactions' indices */
    int *lvl_n;     /* how many are queued */
    int *lvl_cap;
    char *lvl_shared; /* more than one reaction has this level: its queue is sorted by order */
    char *lvl_remote; /* a reaction of this level runs in another federate's process */
    PyObject *send, *collect; /* a federated program's runner: hand remote reactions over, apply their answers */
    PyObject *index;   /* Reaction -> its index in rx */
    PyObject *readers; /* Action or Timer -> Readers */
    struct {
        PyObject *key;
        PyObject *readers;
    } rcache[64]; /* `readers`' entries by address (borrowed: the dict holds them) */
    PyObject *cur_tobj; /* an int of cur_time when one came with an event (events at this time reuse it) */
    PyObject *spare_box; /* the [value, wanted, tag] list of an event taken, that nothing else holds (None items) */
    PyObject *config;  /* what `_setup` was given, kept alive */
    /* classes and functions of the Python side */
    PyTypeObject *tag_type, *port_type, *action_type, *timer_type, *delivery_type, *partial_type;
    PyObject *action_on_event, *timer_fire, *deepcopy, *warn, *py_schedule_logical, *py_schedule, *coreport_type;
    /* slot offsets */
    Py_ssize_t p_value, p_present, p_fanout, p_copies, p_others, p_queue, p_delayed, p_set_ports, p_sched;
    Py_ssize_t a_present, a_value, a_physical, a_min_delay, a_min_spacing, a_policy, a_sched, a_last_tag,
        a_pending, a_gate;
    Py_ssize_t t_present, t_period, t_generation, t_gate;
    Py_ssize_t r_call, r_gates;
    Py_ssize_t d_port, d_gate;
    int ready;
} Core;

static PyTypeObject CoreType;

typedef struct {
    PyObject_HEAD
    Core *core;
    Py_ssize_t n;
    int *idx;
    PyObject *handler; /* an action's: its bound `on_event`, the handler of its events (made when first needed) */
} Readers;

static PyTypeObject ReadersType;

/* interned names */
static PyObject *s_active, *s_visited, *s_admit, *s_inactive, *s_failed, *s_invoke, *s_wait_until,
    *s_drain_physical, *s_run_soon, *s_stop_on_signal, *s_trace_ports, *s_after_tag, *s_schedule_deliveries,
    *s_schedule_physical, *s_event, *s_set, *s_func, *s_args, *s_keywords, *s_startup, *s_shutdown,
    *s_triggered, *s_level, *s_order, *s_value, *s_delay, *s_federate;
static PyObject *k_zero, *k_one; /* the ints 0 and 1 */

static PyObject *make_tag(Core *c, long long time, long long microstep)
{
    PyObject *t = time == c->cur_time && c->cur_tobj != NULL ? Py_NewRef(c->cur_tobj) : PyLong_FromLongLong(time);
    if (t == NULL)
        return NULL;
    PyObject *m = PyLong_FromLongLong(microstep);
    if (m == NULL) {
        Py_DECREF(t);
        return NULL;
    }
    PyObject *tag = c->tag_type->tp_alloc(c->tag_type, 2);
    if (tag == NULL) {
        Py_DECREF(t);
        Py_DECREF(m);
        return NULL;
    }
    PyTuple_SET_ITEM(tag, 0, t);
    PyTuple_SET_ITEM(tag, 1, m);
    return tag;
}

static inline int tag_lt(long long t1, long long m1, long long t2, long long m2)
{
    return t1 < t2 || (t1 == t2 && m1 < m2);
}

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static inline void set_current(Core *c, long long time, long long microstep)
{
    if (time != c->cur_time)
        Py_CLEAR(c->cur_tobj);
    c->cur_time = time;
    c->cur_micro = microstep;
    Py_CLEAR(c->cur_obj);
}

static inline void set_stop(Core *c, long long time, long long microstep)
{
    c->stop_time = time;
    c->stop_micro = microstep;
    Py_CLEAR(c->stop_obj);
}

/* --- queueing reactions */

static int level_grow(Core *c, int level)
{
    int cap = c->lvl_cap[level] * 2 + 4;
    int *grown = PyMem_Realloc(c->lvl[level], sizeof(int) * cap);
    if (grown == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    c->lvl[level] = grown;
    c->lvl_cap[level] = cap;
    return 0;
}

static inline int level_push(Core *c, int i)
{
    int level = c->rx[i].level;
    if (c->lvl_n[level] == c->lvl_cap[level] && level_grow(c, level) < 0)
        return -1;
    c->lvl[level][c->lvl_n[level]++] = i;
    return 0;
}

/* Scheduler.enqueue: once per tag, and only if every mode it lives in is current. */
static inline int enqueue_index(Core *c, int i)
{
    RInfo *r = &c->rx[i];
    if (r->stamp == c->tag_number)
        return 0;
    if (r->gated) {
        PyObject *res = PyObject_CallMethodNoArgs(r->obj, s_active);
        if (res == NULL)
            return -1;
        int active = PyObject_IsTrue(res);
        Py_DECREF(res);
        if (active <= 0)
            return active;
    }
    r->stamp = c->tag_number;
    return level_push(c, i);
}

static int index_of(Core *c, PyObject *reaction)
{
    PyObject *i = PyDict_GetItemWithError(c->index, reaction);
    if (i == NULL) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_ValueError, "%R is not a reaction of this program", reaction);
        return -1;
    }
    return (int)PyLong_AsLong(i);
}

static Readers *make_readers(Core *c, PyObject *reactions)
{
    PyObject *seq = PySequence_Fast(reactions, "reactions must be a sequence");
    if (seq == NULL)
        return NULL;
    Readers *r = PyObject_GC_New(Readers, &ReadersType);
    if (r == NULL) {
        Py_DECREF(seq);
        return NULL;
    }
    Py_INCREF(c);
    r->core = c;
    r->handler = NULL;
    r->n = PySequence_Fast_GET_SIZE(seq);
    r->idx = PyMem_Malloc(sizeof(int) * (r->n ? r->n : 1));
    if (r->idx == NULL) {
        r->n = 0;
        PyObject_GC_Track(r);
        Py_DECREF(r);
        Py_DECREF(seq);
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t k = 0; k < r->n; k++) {
        int i = index_of(c, PySequence_Fast_GET_ITEM(seq, k));
        if (i < 0) {
            r->n = k;
            PyObject_GC_Track(r);
            Py_DECREF(r);
            Py_DECREF(seq);
            return NULL;
        }
        r->idx[k] = i;
    }
    Py_DECREF(seq);
    PyObject_GC_Track(r);
    return r;
}

static int Readers_traverse(Readers *self, visitproc visit, void *arg)
{
    Py_VISIT(self->core);
    Py_VISIT(self->handler);
    return 0;
}

static int Readers_clear(Readers *self)
{
    Py_CLEAR(self->core);
    Py_CLEAR(self->handler);
    return 0;
}

static void Readers_dealloc(Readers *self)
{
    PyObject_GC_UnTrack(self);
    Readers_clear(self);
    PyMem_Free(self->idx);
    PyObject_GC_Del(self);
}

static PyTypeObject ReadersType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "lfpy.runtime._core.Readers",
    .tp_basicsize = sizeof(Readers),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "The reactions a port, action or timer triggers, as the C core's indices.",
    .tp_traverse = (traverseproc)Readers_traverse,
    .tp_clear = (inquiry)Readers_clear,
    .tp_dealloc = (destructor)Readers_dealloc,
};

static inline int enqueue_readers(Core *c, Readers *r)
{
    for (Py_ssize_t k = 0; k < r->n; k++)
        if (enqueue_index(c, r->idx[k]) < 0)
            return -1;
    return 0;
}

/* The Readers of an action or timer (borrowed), made from its `triggered` when first asked for. */
static PyObject *readers_of(Core *c, PyObject *trigger)
{
    size_t slot = ((uintptr_t)trigger >> 4) % (sizeof(c->rcache) / sizeof(c->rcache[0]));
    if (c->rcache[slot].key == trigger)
        return c->rcache[slot].readers;
    PyObject *r = PyDict_GetItemWithError(c->readers, trigger);
    if (r == NULL) {
        if (PyErr_Occurred())
            return NULL;
        PyObject *triggered = PyObject_GetAttr(trigger, s_triggered);
        if (triggered == NULL)
            return NULL;
        r = (PyObject *)make_readers(c, triggered);
        Py_DECREF(triggered);
        if (r == NULL)
            return NULL;
        int rc = PyDict_SetItem(c->readers, trigger, r);
        Py_DECREF(r);
        if (rc < 0)
            return NULL;
    }
    c->rcache[slot].key = trigger;
    c->rcache[slot].readers = r;
    return r;
}

/* Scheduler.fire: `trigger` (an action or timer) is present; queue what it triggers. */
static int fire(Core *c, PyObject *trigger)
{
    if (list_append(c->fired, trigger) < 0)
        return -1;
    PyObject *r = readers_of(c, trigger);
    return r ? enqueue_readers(c, (Readers *)r) : -1;
}

/* `action.on_event` (borrowed), one bound method per action for all its events. */
static PyObject *action_handler(Core *c, PyObject *action)
{
    Readers *r = (Readers *)readers_of(c, action);
    if (r != NULL && r->handler == NULL)
        r->handler = PyMethod_New(c->action_on_event, action);
    return r ? r->handler : NULL;
}

/* --- scheduling */

static int push_event(Core *c, long long time, long long microstep, PyObject *handler, PyObject *value)
{
    return queue_push((EventQueue *)c->events, time, microstep, handler, value);
}

/* The mode's inactive time for an event's value (Scheduler._inactive); a new reference. */
static PyObject *inactive_of(Core *c, PyObject *gate)
{
    if (gate == Py_None)
        return PyLong_FromLong(0);
    return PyObject_CallMethodOneArg((PyObject *)c, s_inactive, gate);
}

/* `last` (an action's last_tag) made into the tag (t, m) when nothing but the action holds it any
 * more (its event was taken: no box and no `pending` key refer to it), so that no one can see it
 * change; a new reference, or NULL (with an error set if one occurred). */
static PyObject *reuse_tag(Core *c, PyObject *last, long long t, long long m)
{
    if (last == NULL || Py_TYPE(last) != c->tag_type || Py_REFCNT(last) != 1 || PyTuple_GET_SIZE(last) != 2)
        return NULL;
    PyObject *tobj = t == c->cur_time && c->cur_tobj != NULL ? Py_NewRef(c->cur_tobj) : PyLong_FromLongLong(t);
    PyObject *mobj = tobj ? PyLong_FromLongLong(m) : NULL;
    if (mobj == NULL) {
        Py_XDECREF(tobj);
        return NULL;
    }
    PyObject *old_t = PyTuple_GET_ITEM(last, 0), *old_m = PyTuple_GET_ITEM(last, 1);
    PyTuple_SET_ITEM(last, 0, tobj);
    PyTuple_SET_ITEM(last, 1, mobj);
    Py_DECREF(old_t); /* ints */
    Py_DECREF(old_m);
    return Py_NewRef(last);
}

/* Scheduler._schedule_at, for a tag that fits 64 bits. 0, or -1 with an error. */
static int schedule_at(Core *c, PyObject *action, long long t, long long m, PyObject *value)
{
    PyObject *pending = slot_get(action, c->a_pending, "pending");
    PyObject *spacing = pending ? slot_get(action, c->a_min_spacing, "min_spacing") : NULL;
    if (spacing == NULL)
        return -1;
    if (!PyDict_Check(pending)) {
        PyErr_SetString(PyExc_TypeError, "Action.pending must be a dict");
        return -1;
    }
    if (spacing == Py_None) {
        if (PyDict_GET_SIZE(pending)) { /* events of one action pile up in superdense time */
            for (;;) {
                PyObject *key = make_tag(c, t, m);
                if (key == NULL)
                    return -1;
                int in = PyDict_Contains(pending, key);
                Py_DECREF(key);
                if (in < 0)
                    return -1;
                if (!in)
                    break;
                m += 1;
            }
        }
    } else {
        PyObject *last = slot_get(action, c->a_last_tag, "last_tag");
        if (last == NULL)
            return -1;
        if (last != Py_None) {
            long long lt, lm, sp, earliest;
            if (parse_tag(last, &lt, &lm) < 0 || as_ll(spacing, &sp) < 0)
                return -1;
            if (__builtin_add_overflow(lt, sp, &earliest)) {
                PyErr_SetString(PyExc_OverflowError, "time out of range");
                return -1;
            }
            if (earliest > t || (earliest == t && sp == 0)) {
                PyObject *policy = slot_get(action, c->a_policy, "policy");
                if (policy == NULL)
                    return -1;
                if (PyUnicode_Check(policy) && PyUnicode_CompareWithASCIIString(policy, "drop") == 0)
                    return 0;
                if (PyUnicode_Check(policy) && PyUnicode_CompareWithASCIIString(policy, "replace") == 0) {
                    PyObject *box = PyDict_GetItemWithError(pending, last);
                    if (box == NULL && PyErr_Occurred())
                        return -1;
                    if (box != NULL && box != Py_None) /* the previous event is pending: it takes the value */
                        return PyObject_SetItem(box, k_zero, value);
                    t = earliest;
                    m = 0;
                } else if (PyUnicode_Check(policy) && PyUnicode_CompareWithASCIIString(policy, "update") == 0) {
                    PyObject *box = PyObject_CallMethod(pending, "pop", "OO", last, Py_None);
                    if (box == NULL)
                        return -1;
                    int rc = box != Py_None ? PyObject_SetItem(box, k_one, Py_False) : 0;
                    Py_DECREF(box);
                    if (rc < 0)
                        return -1;
                } else { /* defer */
                    t = earliest;
                    m = 0;
                }
            }
        }
    }
    if (t == c->cur_time && m == c->cur_micro)
        m = c->cur_micro + 1;
    if (tag_lt(c->stop_time, c->stop_micro, t, m))
        return 0; /* past the stop tag: discarded, as in reactor-c */
    PyObject *tag = reuse_tag(c, SLOT(action, c->a_last_tag), t, m);
    if (tag == NULL && (PyErr_Occurred() || (tag = make_tag(c, t, m)) == NULL))
        return -1;
    slot_set(action, c->a_last_tag, tag);
    PyObject *box = c->spare_box; /* an event's box that nothing else holds any more, or a new one */
    c->spare_box = NULL;
    if (box == NULL && (box = PyList_New(3)) == NULL) {
        Py_DECREF(tag);
        return -1;
    }
    PyObject **items = ((PyListObject *)box)->ob_item, *old[3] = {items[0], items[1], items[2]};
    Py_INCREF(value);
    items[0] = value;
    Py_INCREF(Py_True);
    items[1] = Py_True;
    items[2] = tag; /* the box takes the reference */
    for (int k = 0; k < 3; k++)
        Py_XDECREF(old[k]); /* None, or NULL in a new list */
    int rc = PyDict_SetItem(pending, tag, box);
    PyObject *gate = rc < 0 ? NULL : slot_get(action, c->a_gate, "gate");
    PyObject *inactive = gate ? inactive_of(c, gate) : NULL;
    PyObject *event = inactive ? PyTuple_Pack(2, box, inactive) : NULL;
    PyObject *handler = event ? action_handler(c, action) : NULL;
    if (handler != NULL) { /* the event's time and microstep: the tag's own ints */
        PyObject *tobj = PyTuple_GET_ITEM(tag, 0), *mobj = PyTuple_GET_ITEM(tag, 1);
        Py_INCREF(tobj);
        Py_INCREF(mobj);
        rc = queue_push_objs((EventQueue *)c->events, tobj, mobj, handler, event);
    } else {
        rc = -1;
    }
    Py_DECREF(box);
    Py_XDECREF(inactive);
    Py_XDECREF(event);
    return rc;
}

/* Scheduler.schedule_logical; falls back to the Python method when the tag would not fit 64 bits. */
static PyObject *schedule_logical(Core *c, PyObject *action, PyObject *delay, PyObject *value)
{
    PyObject *min_delay = slot_get(action, c->a_min_delay, "min_delay");
    if (min_delay == NULL)
        return NULL;
    long long md, d, total, t = c->cur_time, m = c->cur_micro;
    int ok = as_ll(min_delay, &md) == 0 && as_ll(delay, &d) == 0 && !__builtin_add_overflow(md, d, &total) &&
             (total == 0 || (!__builtin_add_overflow(c->cur_time, total, &t) && (m = 0, 1)));
    if (!ok) {
        if (PyErr_Occurred()) {
            if (!PyErr_ExceptionMatches(PyExc_OverflowError))
                return NULL;
            PyErr_Clear();
        }
        return PyObject_CallFunctionObjArgs(c->py_schedule_logical, (PyObject *)c, action, delay, value, NULL);
    }
    if (schedule_at(c, action, t, m, value) < 0) {
        if (!PyErr_ExceptionMatches(PyExc_OverflowError))
            return NULL;
        PyErr_Clear();
        return PyObject_CallFunctionObjArgs(c->py_schedule_logical, (PyObject *)c, action, delay, value, NULL);
    }
    Py_RETURN_NONE;
}

/* --- ports */

static int port_set(Core *c, PyObject *port, PyObject *value);

/* Scheduler.schedule_deliveries: events for the far ends of `port`'s `after` and `~>` connections. */
static int schedule_deliveries(Core *c, PyObject *port, PyObject *delayed)
{
    long long physical_now = 0;
    int have_physical = 0;
    PyObject *pvalue = slot_get(port, c->p_value, "value");
    if (pvalue == NULL)
        return -1;
    Py_INCREF(pvalue);
    Py_INCREF(delayed);
    int rc = 0;
    for (Py_ssize_t k = 0; rc == 0 && k < PyList_GET_SIZE(delayed); k++) {
        PyObject *entry = PyList_GET_ITEM(delayed, k);
        if (!PyTuple_Check(entry) || PyTuple_GET_SIZE(entry) != 5) {
            PyErr_SetString(PyExc_TypeError, "a delayed connection is (delay, physical, port, gate, handler)");
            rc = -1;
            break;
        }
        long long delay, t, m;
        if (as_ll(PyTuple_GET_ITEM(entry, 0), &delay) < 0) {
            rc = -1;
            break;
        }
        int physical = truth(PyTuple_GET_ITEM(entry, 1));
        if (physical < 0) {
            rc = -1;
            break;
        }
        if (physical) {
            if (!have_physical) {
                physical_now = now_ns() - c->clock_offset;
                have_physical = 1;
            }
            long long when = (physical_now > c->cur_time ? physical_now : c->cur_time) + delay;
            if (when > c->cur_time) {
                t = when;
                m = 0;
            } else {
                t = c->cur_time;
                m = c->cur_micro + 1;
            }
        } else if (delay == 0) {
            t = c->cur_time;
            m = c->cur_micro + 1;
        } else {
            t = c->cur_time + delay;
            m = 0;
        }
        PyObject *inactive = inactive_of(c, PyTuple_GET_ITEM(entry, 3));
        PyObject *event = inactive ? PyTuple_Pack(2, pvalue, inactive) : NULL;
        rc = event ? push_event(c, t, m, PyTuple_GET_ITEM(entry, 4), event) : -1;
        Py_XDECREF(inactive);
        Py_XDECREF(event);
    }
    Py_DECREF(delayed);
    Py_DECREF(pvalue);
    return rc;
}

static int set_all(Core *c, PyObject *ports, PyObject *value, int copy)
{
    if (!PyList_Check(ports) && !PyTuple_Check(ports)) {
        PyErr_SetString(PyExc_TypeError, "Port.fanout and Port.copies must be lists");
        return -1;
    }
    Py_INCREF(ports);
    int rc = 0;
    /* The size is read again each time: a value's finalizer, run by slot_set, could change the list. */
    for (Py_ssize_t k = 0; k < Py_SIZE(ports); k++) {
        PyObject *p = PyList_Check(ports) ? PyList_GET_ITEM(ports, k) : PyTuple_GET_ITEM(ports, k);
        if (!is_a(p, c->port_type)) {
            PyErr_SetString(PyExc_TypeError, "a port's fan-out holds ports");
            rc = -1;
            break;
        }
        Py_INCREF(p);
        if (copy) {
            PyObject *v = PyObject_CallOneArg(c->deepcopy, value);
            if (v == NULL) {
                Py_DECREF(p);
                rc = -1;
                break;
            }
            slot_set(p, c->p_value, v);
            Py_DECREF(v);
        } else {
            slot_set(p, c->p_value, value);
        }
        slot_set(p, c->p_present, Py_True);
        Py_DECREF(p);
    }
    Py_DECREF(ports);
    return rc;
}

/* Port.set with the core's queueing (the FanoutPort semantics, which cover the other classes);
 * inlined into `set`'s method, the hot caller. */
static inline __attribute__((always_inline)) int port_set_inline(Core *c, PyObject *port, PyObject *value)
{
    PyObject *fanout = SLOT(port, c->p_fanout), *copies = SLOT(port, c->p_copies);
    if (fanout == NULL || copies == NULL) {
        slot_get(port, fanout == NULL ? c->p_fanout : c->p_copies, fanout == NULL ? "fanout" : "copies");
        return -1;
    }
    /* The old values are let go at the end: their finalizers run once the port is consistent. */
    Py_INCREF(value);
    PyObject *old = SLOT(port, c->p_value);
    SLOT(port, c->p_value) = value;
    int rc = 0;
    if ((PyList_CheckExact(fanout) ? PyList_GET_SIZE(fanout) : 1) && set_all(c, fanout, value, 0) < 0)
        rc = -1;
    else if ((PyList_CheckExact(copies) ? PyList_GET_SIZE(copies) : 1) && set_all(c, copies, value, 1) < 0)
        rc = -1;
    PyObject *present = rc == 0 ? SLOT(port, c->p_present) : NULL;
    if (present == Py_True || present == NULL) { /* set again at this tag: the readers are queued already */
        if (rc == 0 && present == NULL)
            rc = slot_get(port, c->p_present, "is_present") ? 0 : -1;
        Py_XDECREF(old);
        return rc;
    }
    int was = truth(present);
    if (was != 0) {
        Py_XDECREF(old);
        return was < 0 ? -1 : 0;
    }
    slot_set(port, c->p_present, Py_True);
    PyObject *set_ports = slot_get(port, c->p_set_ports, "_set_ports");
    PyObject *q = SLOT(port, c->p_queue);
    if (set_ports == NULL || list_append(set_ports, port) < 0) {
        rc = -1;
    } else if (q == NULL || Py_TYPE(q) != &ReadersType) {
        PyErr_SetString(PyExc_TypeError, "a port the C core runs has readers of the C core");
        rc = -1;
    } else {
        rc = enqueue_readers(c, (Readers *)q);
    }
    Py_XDECREF(old);
    return rc;
}

static int port_set(Core *c, PyObject *port, PyObject *value)
{
    return port_set_inline(c, port, value);
}

/* --- a tag's events */

static PyObject *admit(Core *c, PyObject *gate, PyObject *handler, PyObject *value)
{
    return PyObject_CallMethodObjArgs((PyObject *)c, s_admit, gate, handler, value, NULL);
}

/* 1: the gate lets it through; 0: not now; -1: error. */
static int admitted(Core *c, PyObject *gate, PyObject *handler, PyObject *value)
{
    if (gate == Py_None)
        return 1;
    PyObject *res = admit(c, gate, handler, value);
    if (res == NULL)
        return -1;
    int ok = PyObject_IsTrue(res);
    Py_DECREF(res);
    return ok;
}

/* Action.on_event */
static int action_event(Core *c, PyObject *action, PyObject *handler, PyObject *event)
{
    if (!PyTuple_CheckExact(event) || PyTuple_GET_SIZE(event) != 2 || !PyList_CheckExact(PyTuple_GET_ITEM(event, 0)) ||
        PyList_GET_SIZE(PyTuple_GET_ITEM(event, 0)) != 3) {
        PyObject *res = PyObject_CallOneArg(handler, event);
        Py_XDECREF(res);
        return res ? 0 : -1;
    }
    PyObject *box = PyTuple_GET_ITEM(event, 0);
    PyObject *pending = slot_get(action, c->a_pending, "pending");
    if (pending == NULL)
        return -1;
    int rc = 0;
    if (PyDict_CheckExact(pending) && PyDict_GET_SIZE(pending) == 1) {
        /* the common case, one event pending: its entry, without hashing the tag */
        Py_ssize_t pos = 0;
        PyObject *k, *v;
        Py_hash_t h;
        if (_PyDict_Next(pending, &pos, &k, &v, &h) && v == box) {
            Py_INCREF(k);
            rc = _PyDict_DelItem_KnownHash(pending, k, h);
            Py_DECREF(k);
        }
    } else if (PyDict_GET_SIZE(pending)) {
        PyObject *key = PyList_GET_ITEM(box, 2);
        Py_INCREF(key);
        PyObject *got = PyDict_GetItemWithError(pending, key);
        if (got == NULL && PyErr_Occurred())
            rc = -1;
        else if (got == box)
            rc = PyDict_DelItem(pending, key);
        Py_DECREF(key);
    }
    if (rc < 0)
        return -1;
    int wanted = truth(PyList_GET_ITEM(box, 1));
    if (wanted <= 0)
        return wanted; /* dropped by a later schedule with the "update" policy */
    PyObject *gate = slot_get(action, c->a_gate, "gate");
    if (gate == NULL)
        return -1;
    int ok = admitted(c, gate, handler, event);
    if (ok <= 0)
        return ok;
    slot_set(action, c->a_value, PyList_GET_ITEM(box, 0));
    slot_set(action, c->a_present, Py_True);
    return fire(c, action);
}

/* Timer.fire */
static int timer_event(Core *c, PyObject *timer, PyObject *handler, PyObject *value)
{
    if (!PyTuple_CheckExact(value) || PyTuple_GET_SIZE(value) != 2) {
        PyObject *res = PyObject_CallOneArg(handler, value);
        Py_XDECREF(res);
        return res ? 0 : -1;
    }
    PyObject *generation = slot_get(timer, c->t_generation, "generation");
    if (generation == NULL)
        return -1;
    int stale = PyObject_RichCompareBool(PyTuple_GET_ITEM(value, 0), generation, Py_NE);
    if (stale != 0)
        return stale < 0 ? -1 : 0;
    PyObject *gate = slot_get(timer, c->t_gate, "gate");
    if (gate == NULL)
        return -1;
    int ok = admitted(c, gate, handler, value);
    if (ok <= 0)
        return ok;
    slot_set(timer, c->t_present, Py_True);
    if (fire(c, timer) < 0)
        return -1;
    PyObject *period_obj = slot_get(timer, c->t_period, "period");
    long long period;
    if (period_obj == NULL || as_ll(period_obj, &period) < 0)
        return -1;
    if (period > 0) {
        PyObject *next;
        gate = slot_get(timer, c->t_gate, "gate");
        generation = gate ? slot_get(timer, c->t_generation, "generation") : NULL;
        if (generation == NULL)
            return -1;
        if (gate == Py_None) {
            PyObject *zero = PyLong_FromLong(0);
            next = zero ? PyTuple_Pack(2, generation, zero) : NULL;
            Py_XDECREF(zero);
        } else {
            next = PyObject_CallMethodNoArgs(timer, s_event);
        }
        PyObject *fire_again = next ? PyMethod_New(c->timer_fire, timer) : NULL;
        long long t;
        int rc = -1;
        if (fire_again != NULL) {
            if (__builtin_add_overflow(c->cur_time, period, &t))
                PyErr_SetString(PyExc_OverflowError, "time out of range");
            else
                rc = push_event(c, t, 0, fire_again, next);
        }
        Py_XDECREF(next);
        Py_XDECREF(fire_again);
        return rc;
    }
    return 0;
}

/* Delivery.__call__ */
static int deliver(Core *c, PyObject *delivery, PyObject *value)
{
    PyObject *gate = slot_get(delivery, c->d_gate, "gate");
    PyObject *port = gate ? slot_get(delivery, c->d_port, "port") : NULL;
    if (port == NULL)
        return -1;
    int ok = admitted(c, gate, delivery, value);
    if (ok <= 0)
        return ok;
    PyObject *payload = PySequence_GetItem(value, 0);
    if (payload == NULL)
        return -1;
    Py_INCREF(port);
    int rc;
    if ((PyObject *)Py_TYPE(port) == c->coreport_type) {
        rc = port_set(c, port, payload);
    } else {
        PyObject *res = PyObject_CallMethodOneArg(port, s_set, payload);
        rc = res ? 0 : -1;
        Py_XDECREF(res);
    }
    Py_DECREF(port);
    Py_DECREF(payload);
    return rc;
}

static int dispatch(Core *c, PyObject *handler, PyObject *value)
{
    if (PyMethod_Check(handler)) {
        PyObject *f = PyMethod_GET_FUNCTION(handler), *self = PyMethod_GET_SELF(handler);
        if (f == c->action_on_event && is_a(self, c->action_type))
            return action_event(c, self, handler, value);
        if (f == c->timer_fire && is_a(self, c->timer_type))
            return timer_event(c, self, handler, value);
    } else if (Py_TYPE(handler) == c->delivery_type) {
        return deliver(c, handler, value);
    }
    PyObject *res = PyObject_CallOneArg(handler, value);
    Py_XDECREF(res);
    return res ? 0 : -1;
}

/* --- running reactions */

static void rinfo_clear_call(RInfo *r)
{
    if (r->argv != NULL) {
        for (Py_ssize_t k = 1; k <= r->nargs; k++)
            Py_XDECREF(r->argv[k]);
        PyMem_Free(r->argv);
        r->argv = NULL;
    }
    r->nargs = 0;
    r->vcall = NULL;
    Py_CLEAR(r->func);
    Py_CLEAR(r->call);
}

/* Take the function and arguments out of the reaction's `call` (a functools.partial, or any callable). */
static int rinfo_take_call(Core *c, RInfo *r, PyObject *call)
{
    rinfo_clear_call(r);
    PyObject *func = NULL, *args = NULL;
    if (Py_TYPE(call) == c->partial_type) {
        PyObject *kw = PyObject_GetAttr(call, s_keywords);
        if (kw == NULL)
            return -1;
        int plain = PyDict_Check(kw) && PyDict_GET_SIZE(kw) == 0;
        Py_DECREF(kw);
        if (plain) {
            func = PyObject_GetAttr(call, s_func);
            args = func ? PyObject_GetAttr(call, s_args) : NULL;
            if (args == NULL) {
                Py_XDECREF(func);
                return -1;
            }
            if (!PyTuple_Check(args)) {
                Py_CLEAR(func);
                Py_CLEAR(args);
            }
        }
    }
    if (func == NULL) {
        Py_INCREF(call);
        func = call;
    }
    Py_ssize_t n = args ? PyTuple_GET_SIZE(args) : 0;
    r->argv = PyMem_Calloc(n + 1, sizeof(PyObject *));
    if (r->argv == NULL) {
        Py_DECREF(func);
        Py_XDECREF(args);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        r->argv[k + 1] = PyTuple_GET_ITEM(args, k);
        Py_INCREF(r->argv[k + 1]);
    }
    Py_XDECREF(args);
    r->nargs = n;
    r->func = func;
    r->vcall = PyFunction_Check(func) ? PyVectorcall_Function(func) : NULL;
    Py_INCREF(call);
    r->call = call;
    return 0;
}

static PyObject *call_reaction(Core *c, RInfo *r)
{
    PyObject *call = SLOT(r->obj, c->r_call);
    if (call == NULL) {
        PyErr_SetString(PyExc_AttributeError, "a reaction without call");
        return NULL;
    }
    if (call != r->call && rinfo_take_call(c, r, call) < 0)
        return NULL;
    if (r->vcall != NULL) /* a Python function: what PyObject_Vectorcall would call, less its checks */
        return r->vcall(r->func, r->argv + 1, r->nargs | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
    return PyObject_Vectorcall(r->func, r->argv + 1, r->nargs | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
}

static void sort_level(Core *c, int *q, int n)
{
    for (int a = 1; a < n; a++) { /* insertion sort: levels are short */
        int x = q[a];
        long long key = c->rx[x].order;
        int b = a - 1;
        while (b >= 0 && c->rx[q[b]].order > key) {
            q[b + 1] = q[b];
            b--;
        }
        q[b + 1] = x;
    }
}

static void clear_levels(Core *c)
{
    for (int l = 0; l < c->nlevels; l++)
        c->lvl_n[l] = 0;
}

/* Run the reactions q[0..n) of one level in order. A failure is reported (`failed`) and the rest of
 * the level still runs, through `invoke`. -1: an exception to propagate (Ctrl-C, or a failure in
 * reporting one). */
static int run_queued(Core *c, const int *q, int n)
{
    for (int k = 0; k < n; k++) {
        RInfo *r = &c->rx[q[k]];
        PyObject *res = call_reaction(c, r);
        if (res != NULL) {
            Py_DECREF(res);
            continue;
        }
        if (PyErr_ExceptionMatches(PyExc_KeyboardInterrupt))
            return -1;
        PyObject *type, *exc, *tb;
        PyErr_Fetch(&type, &exc, &tb);
        PyErr_NormalizeException(&type, &exc, &tb);
        if (tb != NULL)
            PyException_SetTraceback(exc, tb);
        PyObject *failed = PyObject_CallMethodObjArgs((PyObject *)c, s_failed, r->obj, exc, NULL);
        Py_XDECREF(type);
        Py_XDECREF(exc);
        Py_XDECREF(tb);
        if (failed == NULL)
            return -1;
        Py_DECREF(failed);
        for (int j = k + 1; j < n && !c->halted; j++) { /* the rest of the level still runs */
            PyObject *res2 = PyObject_CallMethodOneArg((PyObject *)c, s_invoke, c->rx[q[j]].obj);
            if (res2 == NULL)
                return -1;
            Py_DECREF(res2);
        }
        return 0;
    }
    return 0;
}

/* A level with reactions of other federates (federation/coordinator.py's FederatedRunner.run): those are handed to `send`
 * first, in order, the coordinator's own run here meanwhile, then `collect` applies the answers. */
static int run_remote_level(Core *c, int *q, int n)
{
    PyObject *remote = PyList_New(0);
    if (remote == NULL)
        return -1;
    int local = 0;
    for (int k = 0; k < n; k++) { /* the local ones move to the front of the queue, in order */
        RInfo *r = &c->rx[q[k]];
        if (!r->remote)
            q[local++] = q[k];
        else if (PyList_Append(remote, r->obj) < 0) {
            Py_DECREF(remote);
            return -1;
        }
    }
    if (PyList_GET_SIZE(remote) == 0) {
        Py_DECREF(remote);
        return run_queued(c, q, local);
    }
    PyObject *res = PyObject_CallOneArg(c->send, remote);
    Py_DECREF(remote);
    if (res == NULL)
        return -1;
    Py_DECREF(res);
    if (run_queued(c, q, local) < 0)
        return -1;
    res = PyObject_CallNoArgs(c->collect);
    if (res == NULL)
        return -1;
    Py_DECREF(res);
    return 0;
}

/* Scheduler._run_levels_inline */
static int run_levels(Core *c)
{
    for (int l = 0; l < c->nlevels; l++) {
        int n = c->lvl_n[l];
        if (n == 0)
            continue;
        if (c->lvl_shared[l])
            sort_level(c, c->lvl[l], n);
        int rc = c->lvl_remote[l] ? run_remote_level(c, c->lvl[l], n) : run_queued(c, c->lvl[l], n);
        if (rc < 0) {
            clear_levels(c);
            return -1;
        }
        c->lvl_n[l] = 0;
        if (c->halted) {
            clear_levels(c);
            return 0;
        }
    }
    return 0;
}

/* --- the end of a tag */

static int clear_presence(Core *c, PyObject *obj)
{
    if ((PyObject *)Py_TYPE(obj) == c->coreport_type)
        slot_set(obj, c->p_present, Py_False);
    else if (is_a(obj, c->action_type))
        slot_set(obj, c->a_present, Py_False);
    else if (is_a(obj, c->timer_type))
        slot_set(obj, c->t_present, Py_False);
    else if (is_a(obj, c->port_type))
        slot_set(obj, c->p_present, Py_False);
    else
        return PyObject_SetAttrString(obj, "is_present", Py_False);
    return 0;
}

static PyObject *call_self(Core *c, PyObject *name)
{
    return PyObject_CallMethodNoArgs((PyObject *)c, name);
}

/* Scheduler._end_tag: deliveries and the presence reset here; the rest (`_after_tag`: mode
 * switches, checkpoints, the stop, the transient hook) in Python, when there is something to do. */
static int end_tag(Core *c)
{
    PyObject *set_ports = c->set_ports;
    if (!PyList_Check(set_ports) || !PyList_Check(c->fired)) {
        PyErr_SetString(PyExc_TypeError, "set_ports and fired must be lists");
        return -1;
    }
    if (c->has_delayed) {
        for (Py_ssize_t k = 0; k < PyList_GET_SIZE(set_ports); k++) {
            PyObject *port = PyList_GET_ITEM(set_ports, k);
            PyObject *delayed = is_a(port, c->port_type) ? slot_get(port, c->p_delayed, "delayed") : NULL;
            if (delayed == NULL)
                return -1;
            if (PyList_Check(delayed) && PyList_GET_SIZE(delayed) && schedule_deliveries(c, port, delayed) < 0)
                return -1;
        }
    }
    if (c->trace != Py_None) {
        PyObject *res = call_self(c, s_trace_ports);
        if (res == NULL)
            return -1;
        Py_DECREF(res);
    }
    Py_ssize_t n = PyList_GET_SIZE(set_ports);
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *port = PyList_GET_ITEM(set_ports, k);
        if ((PyObject *)Py_TYPE(port) != c->coreport_type && !PyObject_TypeCheck(port, c->port_type)) {
            if (PyObject_SetAttrString(port, "is_present", Py_False) < 0)
                return -1;
            continue;
        }
        slot_set(port, c->p_present, Py_False);
        PyObject *others = SLOT(port, c->p_others);
        if (others != NULL && PyTuple_Check(others))
            for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(others); j++)
                if (clear_presence(c, PyTuple_GET_ITEM(others, j)) < 0)
                    return -1;
    }
    list_empty(set_ports);
    PyObject *fired = c->fired;
    if (PyList_GET_SIZE(fired)) {
        for (Py_ssize_t k = 0; k < PyList_GET_SIZE(fired); k++)
            if (clear_presence(c, PyList_GET_ITEM(fired, k)) < 0)
                return -1;
        list_empty(fired);
    }
    int modes = PyList_Check(c->mode_states) ? PyList_GET_SIZE(c->mode_states) > 0 : 1;
    int checkpoints = PyList_Check(c->checkpoint_requests) ? PyList_GET_SIZE(c->checkpoint_requests) > 0 : 1;
    int hooks = PyList_Check(c->at_end_of_tag) ? PyList_GET_SIZE(c->at_end_of_tag) > 0 : 1;
    if (modes || checkpoints || c->stopping || hooks) {
        PyObject *res = call_self(c, s_after_tag);
        if (res == NULL)
            return -1;
        Py_DECREF(res);
    }
    return 0;
}

/* --- the loop */

static int enqueue_list(Core *c, PyObject *reactions, int shutdown)
{
    PyObject *seq = PySequence_Fast(reactions, "reactions must be a sequence");
    if (seq == NULL)
        return -1;
    int rc = 0;
    for (Py_ssize_t k = 0; rc == 0 && k < PySequence_Fast_GET_SIZE(seq); k++) {
        PyObject *r = PySequence_Fast_GET_ITEM(seq, k);
        int i = index_of(c, r);
        if (i < 0) {
            rc = -1;
            break;
        }
        if (!shutdown) {
            rc = enqueue_index(c, i);
            continue;
        }
        /* Shutdown reactions of modes run if their mode was ever active, current or not. */
        if (c->rx[i].stamp == c->tag_number)
            continue;
        if (c->rx[i].gated) {
            PyObject *res = PyObject_CallMethodNoArgs(r, s_visited);
            int visited = res ? PyObject_IsTrue(res) : -1;
            Py_XDECREF(res);
            if (visited <= 0) {
                rc = visited;
                continue;
            }
        }
        c->rx[i].stamp = c->tag_number;
        rc = level_push(c, i);
    }
    Py_DECREF(seq);
    return rc;
}

/* Scheduler._process */
static int process(Core *c, long long t, long long m, int startup)
{
    set_current(c, t, m);
    c->tag_number += 1;
    EventQueue *q = (EventQueue *)c->events;
    for (;;) { /* the events at this tag, in scheduling order (their handlers push only later tags) */
        PyObject *heap = q->heap;
        if (!PyList_CheckExact(heap)) {
            PyErr_SetString(PyExc_TypeError, "EventQueue.heap must be a list");
            return -1;
        }
        if (PyList_GET_SIZE(heap) == 0)
            break;
        PyObject *head = PyList_GET_ITEM(heap, 0);
        long long ht, hm;
        if (!PyTuple_Check(head) || PyTuple_GET_SIZE(head) != 5) {
            PyErr_SetString(PyExc_TypeError, "an event is (time, microstep, seq, handler, value)");
            return -1;
        }
        if (as_ll(PyTuple_GET_ITEM(head, 0), &ht) < 0) {
            if (!PyErr_ExceptionMatches(PyExc_OverflowError))
                return -1;
            PyErr_Clear();
            break; /* beyond 64 bits: not this tag */
        }
        if (ht != t)
            break;
        if (as_ll(PyTuple_GET_ITEM(head, 1), &hm) < 0)
            return -1;
        if (hm != m)
            break;
        PyObject *event = heap_pop(heap);
        if (event == NULL)
            return -1;
        if (c->cur_tobj == NULL && PyLong_CheckExact(PyTuple_GET_ITEM(event, 0)))
            c->cur_tobj = Py_NewRef(PyTuple_GET_ITEM(event, 0));
        int rc = dispatch(c, PyTuple_GET_ITEM(event, 3), PyTuple_GET_ITEM(event, 4));
        PyObject *box = NULL; /* an action's event: its box, kept for the next schedule if nothing else holds it */
        PyObject *value = PyTuple_GET_ITEM(event, 4);
        PyObject *handler = PyTuple_GET_ITEM(event, 3);
        if (rc == 0 && c->spare_box == NULL && Py_REFCNT(event) == 1 && PyMethod_Check(handler) &&
            PyMethod_GET_FUNCTION(handler) == c->action_on_event && PyTuple_CheckExact(value) &&
            Py_REFCNT(value) == 1 && PyTuple_GET_SIZE(value) == 2 && PyList_CheckExact(PyTuple_GET_ITEM(value, 0)) &&
            PyList_GET_SIZE(PyTuple_GET_ITEM(value, 0)) == 3)
            box = Py_NewRef(PyTuple_GET_ITEM(value, 0));
        Py_DECREF(event);
        if (box != NULL && Py_REFCNT(box) == 1) {
            PyObject **items = ((PyListObject *)box)->ob_item, *old[3] = {items[0], items[1], items[2]};
            for (int k = 0; k < 3; k++)
                items[k] = Py_NewRef(Py_None);
            c->spare_box = box;
            for (int k = 0; k < 3; k++)
                Py_DECREF(old[k]);
        } else {
            Py_XDECREF(box);
        }
        if (rc < 0)
            return -1;
    }
    if (startup) {
        PyObject *list = PyObject_GetAttr((PyObject *)c, s_startup);
        int rc = list ? enqueue_list(c, list, 0) : -1;
        Py_XDECREF(list);
        if (rc < 0)
            return -1;
    }
    if (!tag_lt(t, m, c->stop_time, c->stop_micro)) {
        c->stopping = 1;
        PyObject *list = PyObject_GetAttr((PyObject *)c, s_shutdown);
        int rc = list ? enqueue_list(c, list, 1) : -1;
        Py_XDECREF(list);
        if (rc < 0)
            return -1;
    }
    if (run_levels(c) < 0)
        return -1;
    return end_tag(c);
}

static PyObject *current_get(Core *c, void *closure);

/* 1: physical time has reached the tag; 0: something came first (look again); -1: error. */
static int wait_until(Core *c, long long t, long long m)
{
    if (t < 0x7fffffffffffffffLL && t - (now_ns() - c->clock_offset) <= 0)
        return 1;
    PyObject *tag = make_tag(c, t, m);
    if (tag == NULL)
        return -1;
    PyObject *res = PyObject_CallMethodOneArg((PyObject *)c, s_wait_until, tag);
    Py_DECREF(tag);
    if (res == NULL)
        return -1;
    int ok = PyObject_IsTrue(res);
    Py_DECREF(res);
    return ok;
}

static int check_ready(Core *c)
{
    if (!c->ready) {
        PyErr_SetString(PyExc_RuntimeError, "the C core was not set up (_setup)");
        return -1;
    }
    if (c->events == NULL || Py_TYPE(c->events) != &EventQueueType) {
        PyErr_SetString(PyExc_TypeError, "the C core's events must be an lfpy.runtime._core.EventQueue");
        return -1;
    }
    if (!PyList_Check(c->physical_pending) || !PyList_Check(c->soon) || !PyList_Check(c->set_ports) ||
        !PyList_Check(c->fired)) {
        PyErr_SetString(PyExc_TypeError, "physical_pending, soon, set_ports and fired must be lists");
        return -1;
    }
    return 0;
}

static int call_if(Core *c, PyObject *name)
{
    PyObject *res = call_self(c, name);
    Py_XDECREF(res);
    return res ? 0 : -1;
}

/* Scheduler._loop */
static PyObject *Core_loop(Core *c, PyObject *resumed_obj)
{
    int resumed = PyObject_IsTrue(resumed_obj);
    if (resumed < 0 || check_ready(c) < 0)
        return NULL;
    if (!resumed && process(c, c->cur_time, c->cur_micro, 1) < 0)
        return NULL;
    while (!c->halted) {
        if (PyErr_CheckSignals() < 0) /* Python's handlers run here too, as between two bytecodes */
            return NULL;
        if (!PyList_Check(c->physical_pending) || !PyList_Check(c->soon)) {
            PyErr_SetString(PyExc_TypeError, "physical_pending and soon must be lists");
            return NULL;
        }
        if (PyList_GET_SIZE(c->physical_pending) && call_if(c, s_drain_physical) < 0)
            return NULL;
        if (PyList_GET_SIZE(c->soon) && call_if(c, s_run_soon) < 0)
            return NULL;
        if (c->stop_signal != Py_None && !c->stopping && call_if(c, s_stop_on_signal) < 0)
            return NULL;
        if (!tag_lt(c->cur_time, c->cur_micro, c->stop_time, c->stop_micro))
            break;
        long long nt, nm;
        PyObject *heap = ((EventQueue *)c->events)->heap;
        if (!PyList_CheckExact(heap)) {
            PyErr_SetString(PyExc_TypeError, "EventQueue.heap must be a list");
            return NULL;
        }
        if (PyList_GET_SIZE(heap)) {
            PyObject *head = PyList_GET_ITEM(heap, 0);
            int overflow = 0;
            if (!PyTuple_Check(head) || PyTuple_GET_SIZE(head) != 5) {
                PyErr_SetString(PyExc_TypeError, "an event is (time, microstep, seq, handler, value)");
                return NULL;
            }
            if (!small_ll(PyTuple_GET_ITEM(head, 0), &nt))
                nt = PyLong_AsLongLongAndOverflow(PyTuple_GET_ITEM(head, 0), &overflow);
            if (nt == -1 && PyErr_Occurred())
                return NULL;
            if (!overflow && as_ll(PyTuple_GET_ITEM(head, 1), &nm) < 0)
                return NULL;
            if (overflow || tag_lt(c->stop_time, c->stop_micro, nt, nm)) {
                nt = c->stop_time;
                nm = c->stop_micro;
            }
        } else {
            if (!c->keepalive) { /* nothing more can happen: shut down at the next microstep */
                long long mt = c->cur_time, mm = c->cur_micro + 1;
                if (tag_lt(mt, mm, c->stop_time, c->stop_micro))
                    set_stop(c, mt, mm);
            }
            nt = c->stop_time;
            nm = c->stop_micro;
        }
        if (!c->fast) {
            int ok = wait_until(c, nt, nm);
            if (ok < 0)
                return NULL;
            if (!ok)
                continue; /* a physical action arrived first: look again */
        }
        if (process(c, nt, nm, 0) < 0)
            return NULL;
    }
    Py_RETURN_NONE;
}

/* --- Python-facing methods of the core */

static PyObject *Core_fire(Core *c, PyObject *trigger)
{
    if (check_ready(c) < 0 || fire(c, trigger) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *Core_enqueue(Core *c, PyObject *reaction)
{
    if (check_ready(c) < 0)
        return NULL;
    int i = index_of(c, reaction);
    if (i < 0 || enqueue_index(c, i) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *Core_enqueue_shutdown(Core *c, PyObject *reactions)
{
    if (check_ready(c) < 0 || enqueue_list(c, reactions, 1) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *Core_schedule_logical(Core *c, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "schedule_logical(action, delay, value)");
        return NULL;
    }
    if (check_ready(c) < 0)
        return NULL;
    if (!is_a(args[0], c->action_type))
        return PyObject_CallFunctionObjArgs(c->py_schedule_logical, (PyObject *)c, args[0], args[1], args[2], NULL);
    return schedule_logical(c, args[0], args[1], args[2]);
}

static PyObject *Core_physical(Core *c, PyObject *unused)
{
    return PyLong_FromLongLong(now_ns() - c->clock_offset);
}

static PyObject *Core_logical(Core *c, PyObject *unused)
{
    return c->cur_tobj != NULL ? Py_NewRef(c->cur_tobj) : PyLong_FromLongLong(c->cur_time);
}

static PyObject *Core_readers(Core *c, PyObject *reactions)
{
    if (!c->ready) {
        PyErr_SetString(PyExc_RuntimeError, "the C core was not set up (_setup)");
        return NULL;
    }
    return (PyObject *)make_readers(c, reactions);
}

static PyObject *Core_port_set(Core *c, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !c->ready || !PyObject_TypeCheck(args[0], c->port_type)) {
        PyErr_SetString(PyExc_TypeError, "_port_set(port, value) on a set-up core");
        return NULL;
    }
    if (port_set(c, args[0], args[1]) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static int get_offsets(Core *c, PyTypeObject *type, const char *const *names, Py_ssize_t *const *out)
{
    for (int k = 0; names[k]; k++)
        if ((*out[k] = slot_offset(type, names[k])) < 0)
            return -1;
    return 0;
}

static int take_type(PyObject *config, const char *key, PyTypeObject **out)
{
    PyObject *v = PyDict_GetItemString(config, key);
    if (v == NULL || !PyType_Check(v)) {
        PyErr_Format(PyExc_TypeError, "_setup: %s must be a class", key);
        return -1;
    }
    Py_INCREF(v);
    *out = (PyTypeObject *)v;
    return 0;
}

static int take_obj(PyObject *config, const char *key, PyObject **out)
{
    PyObject *v = PyDict_GetItemString(config, key);
    if (v == NULL) {
        PyErr_Format(PyExc_TypeError, "_setup: %s missing", key);
        return -1;
    }
    Py_INCREF(v);
    *out = v;
    return 0;
}

/* _setup(reactions, levels, config): the reaction table and the Python side's classes. */
static PyObject *Core_setup(Core *c, PyObject *args)
{
    PyObject *reactions, *config;
    int nlevels;
    if (!PyArg_ParseTuple(args, "OiO!", &reactions, &nlevels, &PyDict_Type, &config))
        return NULL;
    if (c->ready) {
        PyErr_SetString(PyExc_RuntimeError, "the C core is set up once");
        return NULL;
    }
    if (take_type(config, "Tag", &c->tag_type) < 0 || take_type(config, "Port", &c->port_type) < 0 ||
        take_type(config, "Action", &c->action_type) < 0 || take_type(config, "Timer", &c->timer_type) < 0 ||
        take_type(config, "Delivery", &c->delivery_type) < 0 || take_type(config, "partial", &c->partial_type) < 0 ||
        take_obj(config, "CorePort", &c->coreport_type) < 0 || take_obj(config, "on_event", &c->action_on_event) < 0 ||
        take_obj(config, "timer_fire", &c->timer_fire) < 0 || take_obj(config, "deepcopy", &c->deepcopy) < 0 ||
        take_obj(config, "warn", &c->warn) < 0 || take_obj(config, "schedule_logical", &c->py_schedule_logical) < 0 ||
        take_obj(config, "schedule", &c->py_schedule) < 0)
        return NULL;
    static const char *const port_names[] = {"value", "is_present", "fanout", "copies", "others", "_queue", "delayed",
                                             "_set_ports", "_sched", NULL};
    Py_ssize_t *const port_out[] = {&c->p_value, &c->p_present, &c->p_fanout, &c->p_copies, &c->p_others,
                                    &c->p_queue, &c->p_delayed, &c->p_set_ports, &c->p_sched};
    static const char *const action_names[] = {"is_present", "value", "physical", "min_delay", "min_spacing", "policy",
                                               "_sched", "last_tag", "pending", "gate", NULL};
    Py_ssize_t *const action_out[] = {&c->a_present, &c->a_value, &c->a_physical, &c->a_min_delay, &c->a_min_spacing,
                                      &c->a_policy, &c->a_sched, &c->a_last_tag, &c->a_pending, &c->a_gate};
    static const char *const timer_names[] = {"is_present", "period", "generation", "gate", NULL};
    Py_ssize_t *const timer_out[] = {&c->t_present, &c->t_period, &c->t_generation, &c->t_gate};
    static const char *const delivery_names[] = {"port", "gate", NULL};
    Py_ssize_t *const delivery_out[] = {&c->d_port, &c->d_gate};
    PyTypeObject *reaction_type;
    if (take_type(config, "Reaction", &reaction_type) < 0)
        return NULL;
    static const char *const reaction_names[] = {"call", "gates", NULL};
    Py_ssize_t *const reaction_out[] = {&c->r_call, &c->r_gates};
    int rc = get_offsets(c, c->port_type, port_names, port_out) < 0 ||
             get_offsets(c, c->action_type, action_names, action_out) < 0 ||
             get_offsets(c, c->timer_type, timer_names, timer_out) < 0 ||
             get_offsets(c, c->delivery_type, delivery_names, delivery_out) < 0 ||
             get_offsets(c, reaction_type, reaction_names, reaction_out) < 0;
    if (rc)
        return NULL;
    PyObject *seq = PySequence_Fast(reactions, "reactions must be a sequence");
    if (seq == NULL)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    c->nlevels = nlevels > 0 ? nlevels : 1;
    c->rx = PyMem_Calloc(n ? n : 1, sizeof(RInfo));
    c->lvl = PyMem_Calloc(c->nlevels, sizeof(int *));
    c->lvl_n = PyMem_Calloc(c->nlevels, sizeof(int));
    c->lvl_cap = PyMem_Calloc(c->nlevels, sizeof(int));
    c->lvl_shared = PyMem_Calloc(c->nlevels, 1);
    c->lvl_remote = PyMem_Calloc(c->nlevels, 1);
    if (!c->rx || !c->lvl || !c->lvl_n || !c->lvl_cap || !c->lvl_shared || !c->lvl_remote) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *r = PySequence_Fast_GET_ITEM(seq, k);
        if (!PyObject_TypeCheck(r, reaction_type)) {
            PyErr_SetString(PyExc_TypeError, "_setup: reactions must be Reaction objects");
            break;
        }
        PyObject *level = PyObject_GetAttr(r, s_level), *order = level ? PyObject_GetAttr(r, s_order) : NULL;
        long long lv = -1, od = 0;
        if (order == NULL || as_ll(level, &lv) < 0 || as_ll(order, &od) < 0) {
            Py_XDECREF(level);
            Py_XDECREF(order);
            break;
        }
        Py_DECREF(level);
        Py_DECREF(order);
        if (lv < 0 || lv >= c->nlevels) {
            PyErr_Format(PyExc_ValueError, "_setup: reaction level %lld outside 0..%d", lv, c->nlevels - 1);
            break;
        }
        PyObject *gates = slot_get(r, c->r_gates, "gates");
        int gated = gates ? PyObject_IsTrue(gates) : -1;
        if (gated < 0)
            break;
        PyObject *i = PyLong_FromSsize_t(k);
        if (i == NULL || PyDict_SetItem(c->index, r, i) < 0) {
            Py_XDECREF(i);
            break;
        }
        Py_DECREF(i);
        RInfo *info = &c->rx[k];
        Py_INCREF(r);
        info->obj = r;
        info->level = (int)lv;
        info->order = od;
        info->stamp = -1;
        info->gated = gated;
        c->nrx = k + 1;
        c->lvl_cap[lv] += 1;
    }
    Py_DECREF(seq);
    if (PyErr_Occurred())
        return NULL;
    for (int l = 0; l < c->nlevels; l++) {
        c->lvl_shared[l] = c->lvl_cap[l] > 1;
        c->lvl[l] = PyMem_Malloc(sizeof(int) * (c->lvl_cap[l] ? c->lvl_cap[l] : 1));
        if (c->lvl[l] == NULL)
            return PyErr_NoMemory();
    }
    Py_INCREF(config);
    c->config = config;
    c->ready = 1;
    Py_RETURN_NONE;
}

/* _remote(send, collect): a federated program's coordinator. Reactions whose `federate` is not 0
 * run in other processes: at a level with any of them queued, `send(reactions)` hands those over (in
 * order), the coordinator's own run here, then `collect()` applies the answers. */
static PyObject *Core_remote(Core *c, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyCallable_Check(args[0]) || !PyCallable_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "_remote(send, collect) takes two callables");
        return NULL;
    }
    if (!c->ready) {
        PyErr_SetString(PyExc_RuntimeError, "_remote: the C core is not set up");
        return NULL;
    }
    memset(c->lvl_remote, 0, c->nlevels);
    for (Py_ssize_t k = 0; k < c->nrx; k++) {
        PyObject *federate = PyObject_GetAttr(c->rx[k].obj, s_federate);
        int remote = federate ? PyObject_IsTrue(federate) : -1;
        Py_XDECREF(federate);
        if (remote < 0)
            return NULL;
        c->rx[k].remote = remote;
        if (remote)
            c->lvl_remote[c->rx[k].level] = 1;
    }
    Py_INCREF(args[0]);
    Py_XSETREF(c->send, args[0]);
    Py_INCREF(args[1]);
    Py_XSETREF(c->collect, args[1]);
    Py_RETURN_NONE;
}

/* --- attributes */

static PyObject *current_get(Core *c, void *closure)
{
    if (c->cur_obj == NULL && (c->cur_obj = make_tag(c, c->cur_time, c->cur_micro)) == NULL)
        return NULL;
    Py_INCREF(c->cur_obj);
    return c->cur_obj;
}

static int current_set(Core *c, PyObject *v, void *closure)
{
    long long t, m;
    if (v == NULL || parse_tag(v, &t, &m) < 0) {
        if (v == NULL)
            PyErr_SetString(PyExc_AttributeError, "current cannot be deleted");
        return -1;
    }
    set_current(c, t, m);
    if (c->tag_type != NULL && PyObject_TypeCheck(v, c->tag_type)) {
        Py_INCREF(v);
        c->cur_obj = v;
    }
    return 0;
}

static PyObject *stop_get(Core *c, void *closure)
{
    if (c->stop_obj == NULL && (c->stop_obj = make_tag(c, c->stop_time, c->stop_micro)) == NULL)
        return NULL;
    Py_INCREF(c->stop_obj);
    return c->stop_obj;
}

static int stop_set(Core *c, PyObject *v, void *closure)
{
    long long t, m;
    if (v == NULL || parse_tag(v, &t, &m) < 0) {
        if (v == NULL)
            PyErr_SetString(PyExc_AttributeError, "stop_tag cannot be deleted");
        return -1;
    }
    set_stop(c, t, m);
    if (c->tag_type != NULL && PyObject_TypeCheck(v, c->tag_type)) {
        Py_INCREF(v);
        c->stop_obj = v;
    }
    return 0;
}

#define FLAG(name)                                                                                                  \
    static PyObject *name##_get(Core *c, void *closure) { return PyBool_FromLong(c->name); }                     \
    static int name##_set(Core *c, PyObject *v, void *closure)                                                    \
    {                                                                                                               \
        int b = v ? PyObject_IsTrue(v) : -1;                                                                        \
        if (v == NULL)                                                                                              \
            PyErr_SetString(PyExc_AttributeError, #name " cannot be deleted");                                      \
        if (b < 0)                                                                                                  \
            return -1;                                                                                              \
        c->name = b;                                                                                                \
        return 0;                                                                                                   \
    }
FLAG(halted)
FLAG(stopping)
FLAG(fast)
FLAG(keepalive)
FLAG(has_delayed)

static PyGetSetDef Core_getset[] = {
    {"current", (getter)current_get, (setter)current_set, "the tag being processed", NULL},
    {"stop_tag", (getter)stop_get, (setter)stop_set, "the tag at which the program stops", NULL},
    {"halted", (getter)halted_get, (setter)halted_set, NULL, NULL},
    {"stopping", (getter)stopping_get, (setter)stopping_set, NULL, NULL},
    {"fast", (getter)fast_get, (setter)fast_set, NULL, NULL},
    {"keepalive", (getter)keepalive_get, (setter)keepalive_set, NULL, NULL},
    {"has_delayed", (getter)has_delayed_get, (setter)has_delayed_set, NULL, NULL},
    {NULL},
};

static PyMemberDef Core_members[] = {
    {"tag_number", T_LONGLONG, offsetof(Core, tag_number), 0, NULL},
    {"start_time", T_LONGLONG, offsetof(Core, start_time), 0, NULL},
    {"clock_offset", T_LONGLONG, offsetof(Core, clock_offset), 0, NULL},
    {"stop_signal", T_OBJECT, offsetof(Core, stop_signal), 0, NULL},
    {"physical_pending", T_OBJECT, offsetof(Core, physical_pending), 0, NULL},
    {"soon", T_OBJECT, offsetof(Core, soon), 0, NULL},
    {"set_ports", T_OBJECT, offsetof(Core, set_ports), 0, NULL},
    {"fired", T_OBJECT, offsetof(Core, fired), 0, NULL},
    {"trace", T_OBJECT, offsetof(Core, trace), 0, NULL},
    {"checkpoint_requests", T_OBJECT, offsetof(Core, checkpoint_requests), 0, NULL},
    {"_at_end_of_tag", T_OBJECT, offsetof(Core, at_end_of_tag), 0, NULL},
    {"mode_states", T_OBJECT, offsetof(Core, mode_states), 0, NULL},
    {"events", T_OBJECT, offsetof(Core, events), 0, NULL},
    {NULL},
};

static PyMethodDef Core_methods[] = {
    {"_setup", (PyCFunction)Core_setup, METH_VARARGS, "_setup(reactions, levels, config): build the reaction table."},
    {"_loop", (PyCFunction)Core_loop, METH_O, "_loop(resumed): run tags until the program halts or stops."},
    {"fire", (PyCFunction)Core_fire, METH_O, "fire(trigger): the trigger is present; queue what it triggers."},
    {"enqueue", (PyCFunction)Core_enqueue, METH_O, "enqueue(reaction): queue it at this tag (once)."},
    {"enqueue_shutdown", (PyCFunction)Core_enqueue_shutdown, METH_O,
     "enqueue_shutdown(reactions): queue shutdown reactions whose modes were ever active."},
    {"schedule_logical", (PyCFunction)(void (*)(void))Core_schedule_logical, METH_FASTCALL,
     "schedule_logical(action, delay, value): an event of a logical action."},
    {"physical", (PyCFunction)Core_physical, METH_NOARGS, "physical(): physical time as the program sees it (ns)."},
    {"logical", (PyCFunction)Core_logical, METH_NOARGS, "logical(): the time of the tag being processed (ns)."},
    {"_readers", (PyCFunction)Core_readers, METH_O, "_readers(reactions): their indices, for a port's queue."},
    {"_port_set", (PyCFunction)(void (*)(void))Core_port_set, METH_FASTCALL, "_port_set(port, value)"},
    {"_remote", (PyCFunction)(void (*)(void))Core_remote, METH_FASTCALL,
     "_remote(send, collect): a federated coordinator's hand-over of other federates' reactions."},
    {NULL},
};

static PyObject *Core_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    Core *c = (Core *)type->tp_alloc(type, 0);
    if (c == NULL)
        return NULL;
    PyObject **objs[] = {&c->stop_signal, &c->physical_pending, &c->soon, &c->set_ports, &c->fired, &c->trace,
                         &c->checkpoint_requests, &c->at_end_of_tag, &c->mode_states, &c->events};
    for (size_t k = 0; k < sizeof(objs) / sizeof(objs[0]); k++) {
        Py_INCREF(Py_None);
        *objs[k] = Py_None;
    }
    c->index = PyDict_New();
    c->readers = PyDict_New();
    if (c->index == NULL || c->readers == NULL) {
        Py_DECREF(c);
        return NULL;
    }
    c->stop_time = 0x7fffffffffffffffLL;
    return (PyObject *)c;
}

static int Core_traverse(Core *c, visitproc visit, void *arg)
{
    Py_VISIT(c->cur_obj);
    Py_VISIT(c->stop_obj);
    Py_VISIT(c->stop_signal);
    Py_VISIT(c->physical_pending);
    Py_VISIT(c->soon);
    Py_VISIT(c->set_ports);
    Py_VISIT(c->fired);
    Py_VISIT(c->trace);
    Py_VISIT(c->checkpoint_requests);
    Py_VISIT(c->at_end_of_tag);
    Py_VISIT(c->mode_states);
    Py_VISIT(c->events);
    Py_VISIT(c->index);
    Py_VISIT(c->readers);
    Py_VISIT(c->cur_tobj);
    Py_VISIT(c->spare_box);
    Py_VISIT(c->config);
    Py_VISIT(c->send);
    Py_VISIT(c->collect);
    Py_VISIT(c->tag_type);
    Py_VISIT(c->port_type);
    Py_VISIT(c->action_type);
    Py_VISIT(c->timer_type);
    Py_VISIT(c->delivery_type);
    Py_VISIT(c->partial_type);
    Py_VISIT(c->coreport_type);
    Py_VISIT(c->action_on_event);
    Py_VISIT(c->timer_fire);
    Py_VISIT(c->deepcopy);
    Py_VISIT(c->warn);
    Py_VISIT(c->py_schedule_logical);
    Py_VISIT(c->py_schedule);
    for (Py_ssize_t k = 0; k < c->nrx; k++) {
        RInfo *r = &c->rx[k];
        Py_VISIT(r->obj);
        Py_VISIT(r->call);
        Py_VISIT(r->func);
        for (Py_ssize_t j = 1; r->argv && j <= r->nargs; j++)
            Py_VISIT(r->argv[j]);
    }
    /* a heap subtype's instance: its class is visited by the subtype's traverse */
    return 0;
}

static int Core_clear(Core *c)
{
    Py_CLEAR(c->cur_obj);
    Py_CLEAR(c->stop_obj);
    Py_CLEAR(c->stop_signal);
    Py_CLEAR(c->physical_pending);
    Py_CLEAR(c->soon);
    Py_CLEAR(c->set_ports);
    Py_CLEAR(c->fired);
    Py_CLEAR(c->trace);
    Py_CLEAR(c->checkpoint_requests);
    Py_CLEAR(c->at_end_of_tag);
    Py_CLEAR(c->mode_states);
    Py_CLEAR(c->events);
    Py_CLEAR(c->index);
    Py_CLEAR(c->readers);
    memset(c->rcache, 0, sizeof(c->rcache));
    Py_CLEAR(c->cur_tobj);
    Py_CLEAR(c->spare_box);
    Py_CLEAR(c->config);
    Py_CLEAR(c->send);
    Py_CLEAR(c->collect);
    for (Py_ssize_t k = 0; k < c->nrx; k++) {
        rinfo_clear_call(&c->rx[k]);
        Py_CLEAR(c->rx[k].obj);
    }
    c->ready = 0; /* the reaction table is gone: the core can no longer run */
    return 0;
}

static void Core_dealloc(Core *c)
{
    PyObject_GC_UnTrack(c);
    Core_clear(c);
    Py_CLEAR(c->tag_type);
    Py_CLEAR(c->port_type);
    Py_CLEAR(c->action_type);
    Py_CLEAR(c->timer_type);
    Py_CLEAR(c->delivery_type);
    Py_CLEAR(c->partial_type);
    Py_CLEAR(c->coreport_type);
    Py_CLEAR(c->action_on_event);
    Py_CLEAR(c->timer_fire);
    Py_CLEAR(c->deepcopy);
    Py_CLEAR(c->warn);
    Py_CLEAR(c->py_schedule_logical);
    Py_CLEAR(c->py_schedule);
    PyMem_Free(c->rx);
    for (int l = 0; c->lvl && l < c->nlevels; l++)
        PyMem_Free(c->lvl[l]);
    PyMem_Free(c->lvl);
    PyMem_Free(c->lvl_n);
    PyMem_Free(c->lvl_cap);
    PyMem_Free(c->lvl_shared);
    PyMem_Free(c->lvl_remote);
    Py_TYPE(c)->tp_free((PyObject *)c);
}

static PyTypeObject CoreType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "lfpy.runtime._core.Core",
    .tp_basicsize = sizeof(Core),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "The scheduler's hot loop in C; the base of core.CScheduler.",
    .tp_new = Core_new,
    .tp_traverse = (traverseproc)Core_traverse,
    .tp_clear = (inquiry)Core_clear,
    .tp_dealloc = (destructor)Core_dealloc,
    .tp_methods = Core_methods,
    .tp_members = Core_members,
    .tp_getset = Core_getset,
};

/* ------------------------------------------------------------------ `set` and `schedule` as method descriptors */

/* `CorePort.set` and `CoreAction.schedule` are built-in method descriptors (PyDescr_NewMethod) of
 * those classes, METH_FASTCALL | METH_KEYWORDS: the interpreter calls them as it calls list.append,
 * without a bound method or PyObject_Vectorcall in between. They reach the core through a slot of
 * the port (`_queue`, its Readers) or the action (`_sched`); the slots' offsets are the Port and
 * Action classes' layout, the same for the whole process, and are written once, by `method`. */
static Py_ssize_t port_queue_offset = -1, action_sched_offset = -1;

static Core *core_of(PyObject *sched)
{
    if (sched == NULL || !is_a(sched, &CoreType) || !((Core *)sched)->ready) {
        PyErr_SetString(PyExc_TypeError, "this object is not attached to a C core");
        return NULL;
    }
    return (Core *)sched;
}

static PyObject *port_set_method(PyObject *port, PyObject *const *args, Py_ssize_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    if (!(nargs == 1 && nkw == 0) &&
        !(nargs == 0 && nkw == 1 && PyUnicode_Compare(PyTuple_GET_ITEM(kwnames, 0), s_value) == 0)) {
        PyErr_SetString(PyExc_TypeError, "set() takes exactly one argument (the value)");
        return NULL;
    }
    /* The port's readers (`_queue`, a Readers object once the core adopted the port) hold the core. */
    PyObject *q = SLOT(port, port_queue_offset);
    if (q == NULL || Py_TYPE(q) != &ReadersType || ((Readers *)q)->core == NULL) {
        PyErr_SetString(PyExc_TypeError, "this port is not attached to a C core");
        return NULL;
    }
    if (port_set_inline(((Readers *)q)->core, port, args[0]) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *action_schedule_method(PyObject *action, PyObject *const *args, Py_ssize_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    Core *c = core_of(SLOT(action, action_sched_offset)); /* `_sched`: the scheduler, a core */
    if (c == NULL)
        return NULL;
    if ((kwnames != NULL && PyTuple_GET_SIZE(kwnames)) || nargs < 1 || nargs > 2) {
        /* keywords, or a wrong call: Action.schedule itself, for its binding and its errors */
        PyObject *bound = PyMethod_New(c->py_schedule, action);
        PyObject *res = bound ? PyObject_Vectorcall(bound, args, nargs, kwnames) : NULL;
        Py_XDECREF(bound);
        return res;
    }
    PyObject *value = nargs == 2 ? args[1] : Py_None;
    PyObject *delay = PyLong_CheckExact(args[0]) ? (Py_INCREF(args[0]), args[0]) : PyNumber_Long(args[0]); /* int(delay) */
    if (delay == NULL)
        return NULL;
    int overflow = 0;
    long long d;
    if (!small_ll(delay, &d))
        d = PyLong_AsLongLongAndOverflow(delay, &overflow);
    if (d == -1 && PyErr_Occurred()) {
        Py_DECREF(delay);
        return NULL;
    }
    int negative = overflow < 0 || (!overflow && d < 0);
    if (negative) { /* as reactor-c does */
        PyObject *msg = PyUnicode_FromFormat("schedule called with a negative extra_delay %S. Replacing with zero.", delay);
        PyObject *res = msg ? PyObject_CallOneArg(c->warn, msg) : NULL;
        Py_XDECREF(msg);
        Py_DECREF(delay);
        if (res == NULL)
            return NULL;
        Py_DECREF(res);
        delay = PyLong_FromLong(0);
        if (delay == NULL)
            return NULL;
    }
    PyObject *physical = slot_get(action, c->a_physical, "physical");
    int is_physical = physical ? truth(physical) : -1;
    PyObject *res = NULL;
    if (is_physical > 0)
        res = PyObject_CallMethodObjArgs((PyObject *)c, s_schedule_physical, action, delay, value, NULL);
    else if (is_physical == 0)
        res = schedule_logical(c, action, delay, value);
    Py_DECREF(delay);
    return res;
}

static PyMethodDef port_set_def = {"set", (PyCFunction)(void (*)(void))port_set_method, METH_FASTCALL | METH_KEYWORDS,
                                   "set(value): the port's value at this tag (the C core's)."};
static PyMethodDef action_schedule_def = {"schedule", (PyCFunction)(void (*)(void))action_schedule_method,
                                          METH_FASTCALL | METH_KEYWORDS,
                                          "schedule(delay, value=None): an event of this action (the C core's)."};

/* method(kind, cls): the descriptor for `cls.set` ('port_set', a subclass of Port) or `cls.schedule`
 * ('action_schedule', a subclass of Action). */
static PyObject *core_method(PyObject *module, PyObject *args)
{
    const char *kind;
    PyTypeObject *cls;
    if (!PyArg_ParseTuple(args, "sO!", &kind, &PyType_Type, &cls))
        return NULL;
    int port = strcmp(kind, "port_set") == 0;
    if (!port && strcmp(kind, "action_schedule") != 0) {
        PyErr_Format(PyExc_ValueError, "unknown method %s", kind);
        return NULL;
    }
    Py_ssize_t off = slot_offset(cls, port ? "_queue" : "_sched");
    if (off < 0)
        return NULL;
    Py_ssize_t *known = port ? &port_queue_offset : &action_sched_offset;
    if (*known >= 0 && *known != off) {
        PyErr_Format(PyExc_TypeError, "%s: another layout of the class than the one the core was given", kind);
        return NULL;
    }
    *known = off;
    return PyDescr_NewMethod(cls, port ? &port_set_def : &action_schedule_def);
}

static PyMethodDef module_methods[] = {
    {"method", (PyCFunction)core_method, METH_VARARGS,
     "method(kind, cls): `cls.set` ('port_set') or `cls.schedule` ('action_schedule') in C."},
    {NULL},
};

/* ------------------------------------------------------------------ the module */

static struct PyModuleDef core_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "lfpy.runtime._core",
    .m_doc = "lfpy's C core: the scheduler's hot loop with one worker (see lfpy/runtime/core.py).",
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC PyInit__core(void)
{
    struct {
        PyObject **slot;
        const char *text;
    } names[] = {
        {&s_active, "active"}, {&s_visited, "visited"}, {&s_admit, "admit"}, {&s_inactive, "_inactive"},
        {&s_failed, "failed"}, {&s_invoke, "invoke"}, {&s_wait_until, "_wait_until"},
        {&s_drain_physical, "_drain_physical"}, {&s_run_soon, "_run_soon"}, {&s_stop_on_signal, "_stop_on_signal"},
        {&s_trace_ports, "_trace_ports"}, {&s_after_tag, "_after_tag"}, {&s_schedule_deliveries, "schedule_deliveries"},
        {&s_schedule_physical, "schedule_physical"}, {&s_event, "event"}, {&s_set, "set"}, {&s_func, "func"},
        {&s_args, "args"}, {&s_keywords, "keywords"}, {&s_startup, "startup"}, {&s_shutdown, "shutdown"},
        {&s_triggered, "triggered"}, {&s_level, "level"}, {&s_order, "order"}, {&s_value, "value"},
        {&s_delay, "delay"}, {&s_federate, "federate"},
    };
    for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++)
        if ((*names[k].slot = PyUnicode_InternFromString(names[k].text)) == NULL)
            return NULL;
    if ((k_zero = PyLong_FromLong(0)) == NULL || (k_one = PyLong_FromLong(1)) == NULL)
        return NULL;
    if (PyType_Ready(&EventQueueType) < 0 || PyType_Ready(&CoreType) < 0 || PyType_Ready(&ReadersType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&core_module);
    if (m == NULL)
        return NULL;
    if (PyModule_AddObjectRef(m, "EventQueue", (PyObject *)&EventQueueType) < 0 ||
        PyModule_AddObjectRef(m, "Core", (PyObject *)&CoreType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
