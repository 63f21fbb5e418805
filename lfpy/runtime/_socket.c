/* Frames over a connected stream socket (TCP to a federate on another machine): federation/transport.py's
 * SocketChannel reads through it, and the fast lane (_lane.c) sends and receives on it as it does on
 * rings, so that a plain tag over TCP costs two system calls on each side and no Python.
 *
 * A frame is a ring's (_ring.c): its payload's length (u64, little-endian as the machine), its kind
 * (u8), then the payload. Receiving reads what the socket has, up to PENDING_BYTES at once, and keeps
 * what follows the frame for the next one: a stream of small frames costs one `recv` each. A payload
 * larger than what is there goes straight into its bytes object.
 *
 * A receiver polls the socket for `poll_ns` (without waiting, yielding the CPU between looks), then
 * blocks in the kernel: an answer that comes within a round trip is taken without the wake-up of a
 * blocked thread (tens of microseconds), and a federate waiting longer takes no CPU. poll_ns is 0
 * where the federation's processes outnumber the CPUs (federation/processes.py's `crowded`). The
 * GIL is released while it waits. One thread sends and one receives at a time. The socket's peer gone: EOFError when
 * receiving, BrokenPipeError when sending (a reset connection too); `shutdown` from another thread
 * (SocketChannel.abort) wakes a receiver with EOFError.
 */
#include "_wire.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sched.h>

#define FRAME_HEADER 9
#define PENDING_BYTES 65536
#define DIRECT_MIN 4096 /* a rest this large is received straight into its destination */

static int Socket_init(Socket *self, PyObject *args, PyObject *kw)
{
    static char *names[] = {"socket", "poll_ns", NULL};
    PyObject *sock;
    long long poll_ns = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|L", names, &sock, &poll_ns))
        return -1;
    if (self->sock != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "a Socket is initialised once");
        return -1;
    }
    int fd = PyObject_AsFileDescriptor(sock);
    if (fd < 0)
        return -1;
    if ((self->pending = PyMem_Malloc(PENDING_BYTES)) == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    Py_INCREF(sock);
    self->sock = sock; /* kept: the descriptor is its */
    self->fd = fd;
    self->poll_ns = poll_ns;
    self->start = self->end = 0;
    return 0;
}

static void Socket_dealloc(Socket *self)
{
    Py_CLEAR(self->sock);
    PyMem_Free(self->pending);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* ------------------------------------------------------------------ receiving */

/* recv(fd, into, size) with the GIL released, polled for poll_ns first: bytes received (> 0), or -1
 * with an exception (EOFError once the peer has gone, or what a signal handler raised). */
static Py_ssize_t receive_some(Socket *self, void *into, size_t size)
{
    for (;;) {
        ssize_t got;
        Py_BEGIN_ALLOW_THREADS
        if (self->poll_ns > 0) { /* look without waiting, yielding the CPU between looks, until poll_ns */
            long long deadline = monotonic_ns() + self->poll_ns;
            while ((got = recv(self->fd, into, size, MSG_DONTWAIT)) < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) &&
                   monotonic_ns() < deadline)
                sched_yield();
            if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                got = recv(self->fd, into, size, 0);
        } else {
            got = recv(self->fd, into, size, 0);
        }
        Py_END_ALLOW_THREADS
        if (got > 0)
            return got;
        if (got == 0 || errno == ECONNRESET || errno == EBADF || errno == ENOTCONN) {
            PyErr_SetString(PyExc_EOFError, "the connection has ended");
            return -1;
        }
        if (errno == EINTR) {
            if (PyErr_CheckSignals() < 0)
                return -1;
            continue;
        }
        PyErr_SetFromErrno(PyExc_OSError);
        return -1;
    }
}

/* Fill `into` (`size` bytes) with the stream's next bytes: those pending first, then from the
 * socket (a small rest through the pending buffer, to take what follows it in the same call). */
static int take(Socket *self, unsigned char *into, Py_ssize_t size)
{
    Py_ssize_t have = self->end - self->start;
    if (have > size)
        have = size;
    memcpy(into, self->pending + self->start, (size_t)have);
    self->start += have;
    while (have < size) {
        Py_ssize_t rest = size - have;
        if (rest >= DIRECT_MIN) {
            Py_ssize_t got = receive_some(self, into + have, (size_t)rest);
            if (got < 0)
                return -1;
            have += got;
            continue;
        }
        Py_ssize_t got = receive_some(self, self->pending, PENDING_BYTES);
        if (got < 0)
            return -1;
        Py_ssize_t used = got < rest ? got : rest;
        memcpy(into + have, self->pending, (size_t)used);
        have += used;
        self->start = used;
        self->end = got;
    }
    return 0;
}

PyObject *socket_receive(Socket *self, int *kind_out)
{
    if (self->sock == NULL) {
        PyErr_SetString(PyExc_ValueError, "the Socket is not initialised");
        return NULL;
    }
    unsigned char frame[FRAME_HEADER];
    if (take(self, frame, FRAME_HEADER) < 0)
        return NULL;
    uint64_t length;
    memcpy(&length, frame, 8);
    if (length > (uint64_t)PY_SSIZE_T_MAX) {
        PyErr_SetString(PyExc_ValueError, "receive: a frame's length is corrupt");
        return NULL;
    }
    PyObject *payload = new_payload(frame[8], (Py_ssize_t)length);
    if (payload == NULL)
        return NULL;
    if (take(self, payload_bytes(payload), (Py_ssize_t)length) < 0) {
        Py_DECREF(payload);
        return NULL;
    }
    *kind_out = frame[8];
    return payload;
}

/* take(buffer): fill a writable buffer with the stream's next bytes (raw buffers after a frame). */
static PyObject *Socket_take(Socket *self, PyObject *buffer)
{
    if (self->sock == NULL) {
        PyErr_SetString(PyExc_ValueError, "the Socket is not initialised");
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(buffer, &view, PyBUF_WRITABLE) < 0)
        return NULL;
    int rc = take(self, view.buf, view.len);
    PyBuffer_Release(&view);
    if (rc < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ sending */

int socket_send(Socket *self, int kind, const void *data, Py_ssize_t size)
{
    struct iovec part = {(void *)data, (size_t)size};
    return socket_sendv(self, kind, &part, 1);
}

int socket_sendv(Socket *self, int kind, const struct iovec *payload, int nparts)
{
    if (self->sock == NULL) {
        PyErr_SetString(PyExc_ValueError, "the Socket is not initialised");
        return -1;
    }
    if (nparts >= MAX_PARTS) {
        PyErr_SetString(PyExc_ValueError, "send: too many parts in one frame");
        return -1;
    }
    unsigned char frame[FRAME_HEADER];
    uint64_t length = 0;
    struct iovec parts[MAX_PARTS];
    parts[0] = (struct iovec){frame, FRAME_HEADER};
    for (int k = 0; k < nparts; k++) {
        parts[k + 1] = payload[k];
        length += payload[k].iov_len;
    }
    memcpy(frame, &length, 8);
    frame[8] = (unsigned char)kind;
    struct msghdr message = {.msg_iov = parts, .msg_iovlen = (size_t)nparts + 1};
    size_t left = FRAME_HEADER + (size_t)length;
    while (left) {
        ssize_t sent;
        Py_BEGIN_ALLOW_THREADS
        sent = sendmsg(self->fd, &message, MSG_NOSIGNAL);
        Py_END_ALLOW_THREADS
        if (sent < 0) {
            if (errno == EINTR) {
                if (PyErr_CheckSignals() < 0)
                    return -1;
                continue;
            }
            if (errno == EPIPE || errno == ECONNRESET || errno == EBADF || errno == ENOTCONN)
                PyErr_SetString(PyExc_BrokenPipeError, "the receiver has gone");
            else
                PyErr_SetFromErrno(PyExc_OSError);
            return -1;
        }
        left -= (size_t)sent;
        while (message.msg_iovlen && (size_t)sent >= message.msg_iov[0].iov_len) { /* parts sent whole */
            sent -= (ssize_t)message.msg_iov[0].iov_len;
            message.msg_iov++;
            message.msg_iovlen--;
        }
        if (message.msg_iovlen) {
            message.msg_iov[0].iov_base = (char *)message.msg_iov[0].iov_base + sent;
            message.msg_iov[0].iov_len -= (size_t)sent;
        }
    }
    return 0;
}

static PyMethodDef Socket_methods[] = {
    {"send", (PyCFunction)(void (*)(void))wire_send_method, METH_FASTCALL, "send(kind, payload): a frame to the peer."},
    {"receive", (PyCFunction)wire_receive_method, METH_NOARGS,
     "receive() -> (kind, payload): the next frame (waits for it; EOFError once the peer has gone)."},
    {"take", (PyCFunction)Socket_take, METH_O,
     "take(buffer): fill a writable buffer with the stream's next bytes (EOFError once the peer has gone)."},
    {NULL},
};

PyTypeObject SocketType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "lfpy.runtime._wire.Socket",
    .tp_basicsize = sizeof(Socket),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Socket(socket, poll_ns=0): frames both ways over a connected, blocking stream socket (kept alive "
              "here; closing it is the caller's); a receiver polls for poll_ns before it blocks.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Socket_init,
    .tp_dealloc = (destructor)Socket_dealloc,
    .tp_methods = Socket_methods,
};
