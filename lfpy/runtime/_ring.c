/* A one-way channel between two processes of one machine: messages go through a ring buffer in
 * shared memory, and a pipe only wakes a receiver that sleeps and tells it when the sender has gone
 * (federation/transport.py's RingChannel wraps it; the federation's requests and answers on one host).
 *
 * A pipe costs a system call to write each message and one or more to read it (a receiver that
 * polls calls `read` again and again); here a message is a copy into the ring and a store of the
 * write position, which the receiver, polling, sees within a fraction of a microsecond.
 *
 * Layout of the shared memory (created by the coordinator, mapped by the federate):
 *   Header (positions on cache lines of their own), then `capacity` bytes of ring (a power of two).
 *   A message is a frame: its payload's length (u64, little-endian as the machine), its kind (u8),
 *   then the payload; a frame may wrap around the end of the ring, and one larger than the ring
 *   goes through in parts as the receiver takes them.
 *
 * Positions only grow (bytes written and bytes read since the start); `head - tail` bytes are
 * waiting. Exactly one sender and one receiver: the sender alone writes `head`, the receiver alone
 * `tail`.
 *
 * Waiting, on either side (the receiver for a message, the sender for room): poll the positions,
 * pausing the CPU between looks, then also yield the CPU between looks (a waiting process must not
 * starve a working one on a busy machine), and after `poll_ns` sleep on the pipe (at once where
 * `poll_ns` is 0: a federation with more processes than CPUs, where any polling takes a CPU from a
 * process with work to do). A receiver that
 * sleeps says so (`sleeping`) before it looks one last time; a sender that has written a frame
 * looks at `sleeping` and, if set, writes a byte to the pipe (sequentially consistent fences on
 * both sides: one of them sees the other). The sender's end of the pipe closing (its process has
 * ended) wakes the receiver, which then raises EOFError once the ring is empty; the receiver's end
 * closing makes the sender's wake-up write fail (EPIPE: BrokenPipeError). A sender waiting for room
 * (a frame larger than the ring) is not woken: after polling it looks every 10 ms, and watches its
 * end of the pipe for the receiver's going.
 *
 * Threading: one thread sends on a ring, one receives; the GIL is released while waiting.
 */
#include "_wire.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define cpu_relax() _mm_pause()
#elif defined(__aarch64__)
#define cpu_relax() __asm__ __volatile__("yield")
#else
#define cpu_relax() ((void)0)
#endif

#define LINE 64
#define FRAME_HEADER 9 /* u64 length, u8 kind */
#define SPIN_NS 20000  /* polling with pauses only, before yielding between looks (at most poll_ns) */

struct RingHeader {
    _Atomic uint64_t head; /* bytes written: the sender's */
    char pad1[LINE - sizeof(uint64_t)];
    _Atomic uint64_t tail; /* bytes read: the receiver's */
    char pad2[LINE - sizeof(uint64_t)];
    _Atomic uint32_t sleeping; /* the receiver sleeps on the pipe (or is about to) */
    uint32_t unused;
    uint64_t capacity; /* set by `format` */
    char pad3[LINE - 2 * sizeof(uint32_t) - sizeof(uint64_t)];
};
typedef struct RingHeader Header;

const Py_ssize_t ring_header_size = sizeof(Header);

/* ------------------------------------------------------------------ construction */

static int Ring_init(Ring *self, PyObject *args, PyObject *kw)
{
    static char *names[] = {"memory", "fd", "sender", "poll_ns", NULL};
    PyObject *memory;
    int fd, sender;
    long long poll_ns = 2000000;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "Oip|L", names, &memory, &fd, &sender, &poll_ns))
        return -1;
    if (self->have_view) {
        PyErr_SetString(PyExc_RuntimeError, "a Ring is initialised once");
        return -1;
    }
    if (PyObject_GetBuffer(memory, &self->view, PyBUF_WRITABLE) < 0)
        return -1;
    self->have_view = 1;
    if (self->view.len < (Py_ssize_t)sizeof(Header) + LINE) {
        PyErr_SetString(PyExc_ValueError, "Ring: the memory is too small");
        return -1;
    }
    if (((uintptr_t)self->view.buf) % LINE != 0) {
        PyErr_SetString(PyExc_ValueError, "Ring: the memory must be aligned on 64 bytes");
        return -1;
    }
    self->header = (Header *)self->view.buf;
    self->data = (unsigned char *)self->view.buf + sizeof(Header);
    uint64_t room = (uint64_t)(self->view.len - (Py_ssize_t)sizeof(Header));
    uint64_t capacity = self->header->capacity;
    if (capacity < LINE || (capacity & (capacity - 1)) != 0 || capacity > room) {
        PyErr_SetString(PyExc_ValueError, "Ring: the memory holds no ring (`format` it first)");
        return -1;
    }
    self->mask = capacity - 1;
    self->fd = fd;
    self->sender = sender;
    self->poll_ns = poll_ns;
    return 0;
}

static void Ring_dealloc(Ring *self)
{
    if (self->have_view)
        PyBuffer_Release(&self->view);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int check_open(Ring *self)
{
    if (!self->have_view) {
        PyErr_SetString(PyExc_ValueError, "the ring is closed");
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------ waiting */

/* Wait (GIL released) until `ready(self)` holds. The receiver waits for bytes (`want` of them past
 * its tail), the sender for room. Returns 0 when ready; -1 with an exception: EOFError (the sender
 * has gone and nothing is left), BrokenPipeError (the receiver has gone), or what a signal
 * handler raised. */
static int wait_for(Ring *self, uint64_t want)
{
    Header *h = self->header;
    uint64_t capacity = self->mask + 1;
#define READY()                                                                                          \
    (self->sender ? capacity - (atomic_load_explicit(&h->head, memory_order_relaxed) -                  \
                                atomic_load_explicit(&h->tail, memory_order_acquire)) >= want            \
                  : atomic_load_explicit(&h->head, memory_order_acquire) -                               \
                            atomic_load_explicit(&h->tail, memory_order_relaxed) >= want)
    if (READY())
        return 0;
    int outcome = 0; /* 0 ready, 1 peer gone, 2 signal, 3 OS error */
    int error = 0;
    Py_BEGIN_ALLOW_THREADS
    long long start = monotonic_ns(), now = start;
    while (!READY()) {
        if (now - start < SPIN_NS && now - start < self->poll_ns) {
            for (int k = 0; k < 16; k++)
                cpu_relax();
        } else if (now - start < self->poll_ns) {
            sched_yield();
        } else if (self->sender) { /* no one wakes a sender: it looks every 10 ms, and at its pipe */
            struct pollfd p = {.fd = self->fd, .events = 0};
            int n = poll(&p, 1, 10);
            if (n < 0 && errno == EINTR) {
                outcome = 2;
                break;
            }
            if (n > 0 && (p.revents & (POLLERR | POLLHUP))) {
                outcome = 1;
                break;
            }
        } else { /* sleep on the pipe, after saying so and looking once more */
            atomic_store(&h->sleeping, 1);
            atomic_thread_fence(memory_order_seq_cst);
            if (READY()) {
                atomic_store(&h->sleeping, 0);
                break;
            }
            struct pollfd p = {.fd = self->fd, .events = POLLIN};
            int n = poll(&p, 1, -1);
            atomic_store(&h->sleeping, 0);
            if (n < 0 && errno == EINTR) {
                outcome = 2;
                break;
            }
            if (n < 0) {
                outcome = 3;
                error = errno;
                break;
            }
            if (n > 0) {
                char drain[64];
                ssize_t got = read(self->fd, drain, sizeof drain); /* the wake-ups (the end is non-blocking) */
                if (got == 0 && !READY()) { /* the sender has gone; what it sent is read first */
                    outcome = 1;
                    break;
                }
            }
            start = monotonic_ns(); /* woken: poll again before sleeping again */
        }
        now = monotonic_ns();
    }
    Py_END_ALLOW_THREADS
#undef READY
    if (outcome == 0)
        return 0;
    if (outcome == 1) {
        PyErr_SetString(self->sender ? PyExc_BrokenPipeError : PyExc_EOFError,
                        self->sender ? "the receiver has gone" : "the sender has gone");
        return -1;
    }
    if (outcome == 2) {
        if (PyErr_CheckSignals() < 0)
            return -1;
        return wait_for(self, want); /* PEP 475: retried after the handlers ran */
    }
    errno = error;
    PyErr_SetFromErrno(PyExc_OSError);
    return -1;
}

/* ------------------------------------------------------------------ copying */

static void copy_in(Ring *self, uint64_t at, const unsigned char *src, uint64_t n)
{
    uint64_t start = at & self->mask, first = self->mask + 1 - start;
    if (first >= n) {
        memcpy(self->data + start, src, n);
    } else {
        memcpy(self->data + start, src, first);
        memcpy(self->data, src + first, n - first);
    }
}

static void copy_out(Ring *self, uint64_t at, unsigned char *dst, uint64_t n)
{
    uint64_t start = at & self->mask, first = self->mask + 1 - start;
    if (first >= n) {
        memcpy(dst, self->data + start, n);
    } else {
        memcpy(dst, self->data + start, first);
        memcpy(dst + first, self->data, n - first);
    }
}

/* Wake a receiver that sleeps (or is about to). */
static int ring_bell(Ring *self)
{
    atomic_thread_fence(memory_order_seq_cst);
    if (!atomic_load(&self->header->sleeping))
        return 0;
    char one = 1;
    if (write(self->fd, &one, 1) < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
        if (errno == EPIPE)
            PyErr_SetString(PyExc_BrokenPipeError, "the receiver has gone");
        else
            PyErr_SetFromErrno(PyExc_OSError);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------ methods */

int ring_send(Ring *self, int kind, const void *data, Py_ssize_t size)
{
    struct iovec part = {(void *)data, (size_t)size};
    return ring_sendv(self, kind, &part, 1);
}

/* Copies the next `n` bytes of the parts, from part *p at *offset on, into the ring at `head`, moving *p
 * and *offset past them. */
static void copy_parts(Ring *self, uint64_t head, const struct iovec *parts, int nparts, int *p, size_t *offset,
                       uint64_t n)
{
    uint64_t done = 0;
    while (done < n && *p < nparts) {
        size_t left = parts[*p].iov_len - *offset;
        uint64_t take = left < n - done ? left : n - done;
        copy_in(self, head + done, (const unsigned char *)parts[*p].iov_base + *offset, take);
        done += take;
        *offset += take;
        if (*offset == parts[*p].iov_len) {
            (*p)++;
            *offset = 0;
        }
    }
}

int ring_sendv(Ring *self, int kind, const struct iovec *parts, int nparts)
{
    if (!self->sender) {
        PyErr_SetString(PyExc_TypeError, "send: this end of the ring receives");
        return -1;
    }
    if (check_open(self) < 0)
        return -1;
    Header *h = self->header;
    uint64_t capacity = self->mask + 1;
    unsigned char frame[FRAME_HEADER];
    uint64_t length = 0;
    for (int k = 0; k < nparts; k++)
        length += parts[k].iov_len;
    memcpy(frame, &length, 8);
    frame[8] = (unsigned char)kind;
    uint64_t head = atomic_load_explicit(&h->head, memory_order_relaxed);
    if (wait_for(self, FRAME_HEADER) < 0)
        return -1;
    copy_in(self, head, frame, FRAME_HEADER);
    head += FRAME_HEADER;
    int p = 0;
    size_t offset = 0;
    uint64_t left = length;
    /* Small frames become visible whole; a large one in parts as room frees up. */
    uint64_t part = capacity - (head - atomic_load_explicit(&h->tail, memory_order_acquire));
    if (part >= left) {
        copy_parts(self, head, parts, nparts, &p, &offset, left);
        atomic_store_explicit(&h->head, head + left, memory_order_release);
        return ring_bell(self);
    }
    atomic_store_explicit(&h->head, head, memory_order_release);
    if (ring_bell(self) < 0)
        return -1;
    while (left) {
        uint64_t want = left < capacity / 2 ? left : capacity / 2;
        if (wait_for(self, want) < 0)
            return -1;
        part = capacity - (head - atomic_load_explicit(&h->tail, memory_order_acquire));
        if (part > left)
            part = left;
        copy_parts(self, head, parts, nparts, &p, &offset, part);
        head += part;
        left -= part;
        atomic_store_explicit(&h->head, head, memory_order_release);
        if (ring_bell(self) < 0)
            return -1;
    }
    return 0;
}

PyObject *ring_receive(Ring *self, int *kind_out)
{
    if (self->sender) {
        PyErr_SetString(PyExc_TypeError, "receive: this end of the ring sends");
        return NULL;
    }
    if (check_open(self) < 0)
        return NULL;
    Header *h = self->header;
    uint64_t capacity = self->mask + 1;
    if (wait_for(self, FRAME_HEADER) < 0)
        return NULL;
    uint64_t tail = atomic_load_explicit(&h->tail, memory_order_relaxed);
    unsigned char frame[FRAME_HEADER];
    copy_out(self, tail, frame, FRAME_HEADER);
    uint64_t length;
    memcpy(&length, frame, 8);
    int kind = frame[8];
    tail += FRAME_HEADER;
    if (length > (uint64_t)PY_SSIZE_T_MAX) {
        PyErr_SetString(PyExc_ValueError, "receive: a frame's length is corrupt");
        return NULL;
    }
    PyObject *payload = new_payload(kind, (Py_ssize_t)length);
    if (payload == NULL)
        return NULL;
    unsigned char *dst = payload_bytes(payload);
    uint64_t left = length;
    uint64_t have = atomic_load_explicit(&h->head, memory_order_acquire) - tail;
    if (have >= left) { /* the whole frame is there: one copy */
        copy_out(self, tail, dst, left);
        atomic_store_explicit(&h->tail, tail + left, memory_order_release);
    } else {
        atomic_store_explicit(&h->tail, tail, memory_order_release);
        while (left) {
            uint64_t want = left < capacity / 2 ? left : capacity / 2;
            if (wait_for(self, want) < 0) {
                Py_DECREF(payload);
                return NULL;
            }
            uint64_t part = atomic_load_explicit(&h->head, memory_order_acquire) - tail;
            if (part > left)
                part = left;
            copy_out(self, tail, dst, part);
            tail += part;
            dst += part;
            left -= part;
            atomic_store_explicit(&h->tail, tail, memory_order_release);
        }
    }
    *kind_out = kind;
    return payload;
}

/* close(): let go of the shared memory (the pipe is the caller's). */
static PyObject *Ring_close(Ring *self, PyObject *unused)
{
    if (self->have_view) {
        PyBuffer_Release(&self->view);
        self->have_view = 0;
        self->header = NULL;
        self->data = NULL;
    }
    Py_RETURN_NONE;
}

static PyMethodDef Ring_methods[] = {
    {"send", (PyCFunction)(void (*)(void))wire_send_method, METH_FASTCALL,
     "send(kind, payload): a frame to the receiver (waits for room)."},
    {"receive", (PyCFunction)wire_receive_method, METH_NOARGS,
     "receive() -> (kind, payload): the next frame (waits for it; EOFError once the sender has gone)."},
    {"close", (PyCFunction)Ring_close, METH_NOARGS, "close(): let go of the shared memory."},
    {NULL},
};

PyTypeObject RingType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "lfpy.runtime._wire.Ring",
    .tp_basicsize = sizeof(Ring),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Ring(memory, fd, sender, poll_ns=2000000): one end of a one-way channel through shared memory "
              "(`memory`, a writable buffer aligned on 64 bytes that `format` made a ring), with the pipe end "
              "`fd` for wake-ups.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Ring_init,
    .tp_dealloc = (destructor)Ring_dealloc,
    .tp_methods = Ring_methods,
};

/* format(memory) -> capacity: an empty ring in `memory`, before either end uses it. */
PyObject *ring_format(PyObject *module, PyObject *memory)
{
    Py_buffer view;
    if (PyObject_GetBuffer(memory, &view, PyBUF_WRITABLE) < 0)
        return NULL;
    if (view.len < (Py_ssize_t)sizeof(Header) + LINE || ((uintptr_t)view.buf) % LINE != 0) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "format: the memory must be aligned on 64 bytes and hold a header and 64 bytes");
        return NULL;
    }
    Header *h = (Header *)view.buf;
    uint64_t room = (uint64_t)(view.len - (Py_ssize_t)sizeof(Header)), capacity = LINE;
    while (capacity * 2 <= room)
        capacity *= 2;
    atomic_store(&h->head, 0);
    atomic_store(&h->tail, 0);
    atomic_store(&h->sleeping, 0);
    h->capacity = capacity;
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLongLong(capacity);
}
