/* The fast lane's encoding of plain data (_lane.c's `plain`): None, bools, ints, floats, complex
 * numbers, strings, bytes and Ellipsis (the arrays' stand-ins), and tuples, lists and dicts of those,
 * of these exact types. It carries them as marshal did for the lane, exactly (floats bit for bit, ints
 * of any size, strings with lone surrogates), and what a message shares (a container in two places)
 * the decoded message shares too; but it raises no audit event. marshal raises one per message, and a
 * process with a Python audit hook (filelock installs one; Ray's workers and drivers import it) ran
 * the hook for every request and answer of every tag.
 *
 * The format, in native byte order (both ends run one build of one program), a tag byte each:
 *   'N' None, 'F' False, 'T' True, '.' Ellipsis
 *   'i' an int64 | 'I' <u64 n> n hexadecimal digits (an int beyond 64 bits, as int(text, 16) reads it)
 *   'f' a double | 'x' two doubles
 *   's' <u64 n> n bytes of UTF-8 (surrogates passed) | 'b' <u64 n> n bytes
 *   '(' '[' '{' <u64 n> then n items (a dict's: n keys and values, in its order)
 *   'r' <u64 k>: the k-th marked container met before
 * A container's tag has MARKED set where the sender may meet it again (its reference count is above
 * one): the receiver numbers the marked ones in the order they begin, each the target of a later 'r'
 * once it is complete (plain data has no cycles: `plain` refuses them by depth). */
#include "_wire.h"

#include <string.h>

#define MARKED 0x80
#define MAX_DEPTH 100 /* deeper is corrupt: `plain` lets 64 levels through */

static PyObject *corrupt(void)
{
    PyErr_SetString(PyExc_ValueError, "plain data is corrupt");
    return NULL;
}

/* ------------------------------------------------------------------ encoding */

typedef struct {
    PlainBuffer *out;
    PyObject **seen; /* the marked containers, open addressing by address */
    Py_ssize_t *index;
    Py_ssize_t slots, marked;
    PyObject *seen_here[32];
    Py_ssize_t index_here[32];
} Writer;

static int grow(PlainBuffer *b, Py_ssize_t more)
{
    if (b->len + more <= b->cap)
        return 0;
    Py_ssize_t cap = b->cap * 2;
    while (cap < b->len + more)
        cap *= 2;
    char *data = b->data == b->here ? PyMem_Malloc((size_t)cap) : PyMem_Realloc(b->data, (size_t)cap);
    if (data == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    if (b->data == b->here)
        memcpy(data, b->here, (size_t)b->len);
    b->data = data;
    b->cap = cap;
    return 0;
}

static int put(PlainBuffer *b, const void *bytes, Py_ssize_t n)
{
    if (grow(b, n) < 0)
        return -1;
    memcpy(b->data + b->len, bytes, (size_t)n);
    b->len += n;
    return 0;
}

static int put_tag_size(PlainBuffer *b, char tag, uint64_t n)
{
    if (grow(b, 1 + 8) < 0)
        return -1;
    b->data[b->len] = tag;
    memcpy(b->data + b->len + 1, &n, 8);
    b->len += 9;
    return 0;
}

static Py_ssize_t slot_of(Writer *w, PyObject *o)
{
    Py_ssize_t k = (Py_ssize_t)(((uintptr_t)o >> 4) & (uintptr_t)(w->slots - 1));
    while (w->seen[k] != NULL && w->seen[k] != o)
        k = (k + 1) & (w->slots - 1);
    return k;
}

/* Remembers marked container `o` as the next one (the table at most half full). */
static int remember(Writer *w, PyObject *o)
{
    if (2 * (w->marked + 1) > w->slots) {
        Py_ssize_t old_slots = w->slots;
        PyObject **old_seen = w->seen;
        Py_ssize_t *old_index = w->index;
        w->slots *= 2;
        w->seen = PyMem_Calloc((size_t)w->slots, sizeof(PyObject *));
        w->index = PyMem_Malloc((size_t)w->slots * sizeof(Py_ssize_t));
        if (w->seen == NULL || w->index == NULL) {
            PyMem_Free(w->seen);
            PyMem_Free(w->index);
            w->seen = old_seen;
            w->index = old_index;
            w->slots = old_slots;
            PyErr_NoMemory();
            return -1;
        }
        for (Py_ssize_t k = 0; k < old_slots; k++)
            if (old_seen[k] != NULL) {
                Py_ssize_t s = slot_of(w, old_seen[k]);
                w->seen[s] = old_seen[k];
                w->index[s] = old_index[k];
            }
        if (old_seen != w->seen_here) {
            PyMem_Free(old_seen);
            PyMem_Free(old_index);
        }
    }
    Py_ssize_t s = slot_of(w, o);
    w->seen[s] = o;
    w->index[s] = w->marked++;
    return 0;
}

static int write_object(Writer *w, PyObject *o, int depth);

static int write_items(Writer *w, PyObject *const *items, Py_ssize_t n, int depth)
{
    for (Py_ssize_t k = 0; k < n; k++)
        if (write_object(w, items[k], depth + 1) < 0)
            return -1;
    return 0;
}

static int write_object(Writer *w, PyObject *o, int depth)
{
    PlainBuffer *b = w->out;
    PyTypeObject *t = Py_TYPE(o);
    if (o == Py_None || o == Py_False || o == Py_True || o == Py_Ellipsis) {
        char tag = o == Py_None ? 'N' : o == Py_False ? 'F' : o == Py_True ? 'T' : '.';
        return put(b, &tag, 1);
    }
    if (t == &PyLong_Type) {
        int overflow;
        long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
        if (v == -1 && PyErr_Occurred())
            return -1;
        if (!overflow) {
            if (grow(b, 9) < 0)
                return -1;
            b->data[b->len] = 'i';
            memcpy(b->data + b->len + 1, &v, 8);
            b->len += 9;
            return 0;
        }
        PyObject *hex = PyNumber_ToBase(o, 16); /* '-0x...' or '0x...': no limit on its digits */
        if (hex == NULL)
            return -1;
        Py_ssize_t n;
        const char *text = PyUnicode_AsUTF8AndSize(hex, &n);
        int rc = text == NULL || put_tag_size(b, 'I', (uint64_t)n) < 0 || put(b, text, n) < 0 ? -1 : 0;
        Py_DECREF(hex);
        return rc;
    }
    if (t == &PyFloat_Type) {
        double v = PyFloat_AS_DOUBLE(o);
        if (grow(b, 9) < 0)
            return -1;
        b->data[b->len] = 'f';
        memcpy(b->data + b->len + 1, &v, 8);
        b->len += 9;
        return 0;
    }
    if (t == &PyComplex_Type) {
        Py_complex v = ((PyComplexObject *)o)->cval;
        if (grow(b, 17) < 0)
            return -1;
        b->data[b->len] = 'x';
        memcpy(b->data + b->len + 1, &v.real, 8);
        memcpy(b->data + b->len + 9, &v.imag, 8);
        b->len += 17;
        return 0;
    }
    if (t == &PyUnicode_Type) {
        Py_ssize_t n;
        const char *text = PyUnicode_AsUTF8AndSize(o, &n);
        if (text != NULL)
            return put_tag_size(b, 's', (uint64_t)n) < 0 ? -1 : put(b, text, n);
        if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError))
            return -1;
        PyErr_Clear(); /* lone surrogates */
        PyObject *bytes = PyUnicode_AsEncodedString(o, "utf-8", "surrogatepass");
        if (bytes == NULL)
            return -1;
        int rc = put_tag_size(b, 's', (uint64_t)PyBytes_GET_SIZE(bytes)) < 0 ||
                         put(b, PyBytes_AS_STRING(bytes), PyBytes_GET_SIZE(bytes)) < 0
                     ? -1
                     : 0;
        Py_DECREF(bytes);
        return rc;
    }
    if (t == &PyBytes_Type)
        return put_tag_size(b, 'b', (uint64_t)PyBytes_GET_SIZE(o)) < 0 ? -1
                                                                        : put(b, PyBytes_AS_STRING(o), PyBytes_GET_SIZE(o));
    if (t != &PyTuple_Type && t != &PyList_Type && t != &PyDict_Type) {
        PyErr_Format(PyExc_TypeError, "plain data holds no %.100s", t->tp_name);
        return -1;
    }
    if (depth >= MAX_DEPTH) {
        PyErr_SetString(PyExc_ValueError, "plain data nested too deep");
        return -1;
    }
    int marked = Py_REFCNT(o) > 1; /* held elsewhere too: the message may hold it twice */
    if (marked) {
        Py_ssize_t s = slot_of(w, o);
        if (w->seen[s] == o)
            return put_tag_size(b, 'r', (uint64_t)w->index[s]);
        if (remember(w, o) < 0)
            return -1;
    }
    char tag = (char)((t == &PyTuple_Type ? '(' : t == &PyList_Type ? '[' : '{') | (marked ? MARKED : 0));
    if (t == &PyTuple_Type)
        return put_tag_size(b, tag, (uint64_t)PyTuple_GET_SIZE(o)) < 0
                   ? -1
                   : write_items(w, &PyTuple_GET_ITEM(o, 0), PyTuple_GET_SIZE(o), depth);
    if (t == &PyList_Type) {
        if (put_tag_size(b, tag, (uint64_t)PyList_GET_SIZE(o)) < 0)
            return -1;
        for (Py_ssize_t k = 0; k < PyList_GET_SIZE(o); k++) /* the list may not change meanwhile: no Python runs */
            if (write_object(w, PyList_GET_ITEM(o, k), depth + 1) < 0)
                return -1;
        return 0;
    }
    if (put_tag_size(b, tag, (uint64_t)PyDict_GET_SIZE(o)) < 0)
        return -1;
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    while (PyDict_Next(o, &pos, &key, &value))
        if (write_object(w, key, depth + 1) < 0 || write_object(w, value, depth + 1) < 0)
            return -1;
    return 0;
}

int plain_encode(PyObject *o, PlainBuffer *out)
{
    out->data = out->here;
    out->len = 0;
    out->cap = (Py_ssize_t)sizeof(out->here);
    Writer w = {.out = out, .slots = 32, .marked = 0};
    memset(w.seen_here, 0, sizeof(w.seen_here));
    w.seen = w.seen_here;
    w.index = w.index_here;
    int rc = write_object(&w, o, 0);
    if (w.seen != w.seen_here) {
        PyMem_Free(w.seen);
        PyMem_Free(w.index);
    }
    if (rc < 0)
        plain_release(out);
    return rc;
}

void plain_release(PlainBuffer *b)
{
    if (b->data != b->here)
        PyMem_Free(b->data);
    b->data = b->here;
    b->len = 0;
}

PyObject *plain_dumps(PyObject *o)
{
    PlainBuffer b;
    if (plain_encode(o, &b) < 0)
        return NULL;
    PyObject *bytes = PyBytes_FromStringAndSize(b.data, b.len);
    plain_release(&b);
    return bytes;
}

/* ------------------------------------------------------------------ decoding */

typedef struct {
    const char *p, *end;
    PyObject **marked; /* borrowed: the message holds them; NULL while one is being made */
    Py_ssize_t n, cap;
    PyObject *marked_here[32];
} Reader;

static int take(Reader *r, void *into, Py_ssize_t n)
{
    if (r->end - r->p < n) {
        corrupt();
        return -1;
    }
    memcpy(into, r->p, (size_t)n);
    r->p += n;
    return 0;
}

/* A size that the bytes left can hold (at least one byte an item), or -1 with an exception. */
static Py_ssize_t take_size(Reader *r)
{
    uint64_t n;
    if (take(r, &n, 8) < 0)
        return -1;
    if (n > (uint64_t)(r->end - r->p)) {
        corrupt();
        return -1;
    }
    return (Py_ssize_t)n;
}

static Py_ssize_t mark(Reader *r)
{
    if (r->n == r->cap) {
        Py_ssize_t cap = r->cap * 2;
        PyObject **more = r->marked == r->marked_here ? PyMem_Malloc((size_t)cap * sizeof(PyObject *))
                                                      : PyMem_Realloc(r->marked, (size_t)cap * sizeof(PyObject *));
        if (more == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        if (r->marked == r->marked_here)
            memcpy(more, r->marked_here, sizeof(r->marked_here));
        r->marked = more;
        r->cap = cap;
    }
    r->marked[r->n] = NULL;
    return r->n++;
}

static PyObject *read_object(Reader *r, int depth)
{
    unsigned char tag;
    if (take(r, &tag, 1) < 0)
        return NULL;
    switch (tag) {
    case 'N':
        Py_RETURN_NONE;
    case 'F':
        Py_RETURN_FALSE;
    case 'T':
        Py_RETURN_TRUE;
    case '.':
        return Py_NewRef(Py_Ellipsis);
    case 'i': {
        long long v;
        return take(r, &v, 8) < 0 ? NULL : PyLong_FromLongLong(v);
    }
    case 'f': {
        double v;
        return take(r, &v, 8) < 0 ? NULL : PyFloat_FromDouble(v);
    }
    case 'x': {
        Py_complex v;
        return take(r, &v.real, 8) < 0 || take(r, &v.imag, 8) < 0 ? NULL : PyComplex_FromCComplex(v);
    }
    case 'I':
    case 's':
    case 'b': {
        Py_ssize_t n = take_size(r);
        if (n < 0)
            return NULL;
        const char *at = r->p;
        r->p += n;
        if (tag == 'b')
            return PyBytes_FromStringAndSize(at, n);
        PyObject *text = PyUnicode_DecodeUTF8(at, n, "surrogatepass");
        if (tag == 's' || text == NULL) {
            if (text == NULL && PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
                PyErr_Clear();
                return corrupt();
            }
            return text;
        }
        PyObject *v = PyLong_FromUnicodeObject(text, 16);
        Py_DECREF(text);
        if (v == NULL && PyErr_ExceptionMatches(PyExc_ValueError)) {
            PyErr_Clear();
            return corrupt();
        }
        return v;
    }
    case 'r': {
        uint64_t k;
        if (take(r, &k, 8) < 0)
            return NULL;
        if (k >= (uint64_t)r->n || r->marked[k] == NULL) /* a container that is not complete: a cycle */
            return corrupt();
        return Py_NewRef(r->marked[k]);
    }
    }
    int kind = tag & ~MARKED;
    if (kind != '(' && kind != '[' && kind != '{')
        return corrupt();
    if (depth >= MAX_DEPTH)
        return corrupt();
    Py_ssize_t n = take_size(r);
    if (n < 0)
        return NULL;
    Py_ssize_t at = tag & MARKED ? mark(r) : -1;
    if (tag & MARKED && at < 0)
        return NULL;
    PyObject *made = kind == '(' ? PyTuple_New(n) : kind == '[' ? PyList_New(n) : PyDict_New();
    for (Py_ssize_t k = 0; made != NULL && k < n; k++) {
        PyObject *item = read_object(r, depth + 1);
        if (item == NULL) {
            Py_CLEAR(made);
        } else if (kind == '(') {
            PyTuple_SET_ITEM(made, k, item);
        } else if (kind == '[') {
            PyList_SET_ITEM(made, k, item);
        } else {
            PyObject *value = read_object(r, depth + 1);
            if (value == NULL || PyDict_SetItem(made, item, value) < 0) /* an unhashable key: corrupt, TypeError */
                Py_CLEAR(made);
            Py_DECREF(item);
            Py_XDECREF(value);
        }
    }
    if (made != NULL && at >= 0)
        r->marked[at] = made;
    return made;
}

PyObject *plain_decode(const char *data, Py_ssize_t size)
{
    Reader r = {.p = data, .end = data + size, .n = 0, .cap = 32};
    r.marked = r.marked_here;
    PyObject *o = read_object(&r, 0);
    if (o != NULL && r.p != r.end) /* bytes after the message */
        Py_SETREF(o, corrupt());
    if (r.marked != r.marked_here)
        PyMem_Free(r.marked);
    return o;
}
