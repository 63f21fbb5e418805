/* lfpy.runtime._wire: how a federation's messages cross between its processes.
 *
 * _ring.c:   `Ring`, one end of a one-way channel through a ring buffer in shared memory (one machine).
 * _socket.c: `Socket`, the same frames both ways over a connected stream socket (another machine).
 * _lane.c:   the federation's fast lane, the requests and answers of a plain tag handled in C on both
 *            sides, over rings or sockets (the federation's Python falls back to its own code for
 *            everything else).
 * _wire.c:   the module, and `wire_send` / `wire_receive` on either.
 */
#ifndef LFPY_WIRE_H
#define LFPY_WIRE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdatomic.h>
#include <stdint.h>

/* What a frame's payload is (federation/transport.py's kinds): a pickle, a pickle whose large buffers are in
 * shared memory, a marshal (the fast lane's plain messages), a pickle whose large buffers follow the
 * frame raw (a socket's). */
enum { KIND_PICKLE = 0, KIND_SHARED = 1, KIND_MARSHAL = 2, KIND_RAW = 3 };

struct RingHeader;

typedef struct {
    PyObject_HEAD
    Py_buffer view; /* the shared memory, held mapped */
    int have_view;
    struct RingHeader *header;
    unsigned char *data;
    uint64_t mask;
    int fd; /* the pipe: its write end for a sender, its read end for a receiver */
    int sender;
    long long poll_ns;
} Ring;

extern PyTypeObject RingType;
extern const Py_ssize_t ring_header_size;

/* One frame to the receiver (waits for room): 0, or -1 with an exception (BrokenPipeError once
 * the receiver has gone). */
int ring_send(Ring *ring, int kind, const void *data, Py_ssize_t size);
/* The next frame's payload (waited for), its kind in *kind: a new reference, or NULL with an
 * exception (EOFError once the sender has gone and the ring is empty). */
PyObject *ring_receive(Ring *ring, int *kind);
/* format(memory) -> capacity */
PyObject *ring_format(PyObject *module, PyObject *memory);

typedef struct {
    PyObject_HEAD
    PyObject *sock; /* the Python socket, kept alive: the descriptor is its */
    int fd;
    long long poll_ns; /* how long a receiver polls before it blocks */
    unsigned char *pending; /* bytes received past the last frame: pending[start:end] */
    Py_ssize_t start, end;
} Socket;

extern PyTypeObject SocketType;

/* A Socket's ring_send and ring_receive: the same contracts (EOFError, BrokenPipeError). */
int socket_send(Socket *socket, int kind, const void *data, Py_ssize_t size);
PyObject *socket_receive(Socket *socket, int *kind);

/* Either a Ring or a Socket (`is_wire`): what the fast lane sends and receives on. */
int is_wire(PyObject *o);
int wire_send(PyObject *wire, int kind, const void *data, Py_ssize_t size);
PyObject *wire_receive(PyObject *wire, int *kind);
/* Their methods send(kind, payload) and receive() -> (kind, payload). */
PyObject *wire_send_method(PyObject *wire, PyObject *const *args, Py_ssize_t nargs);
PyObject *wire_receive_method(PyObject *wire, PyObject *unused);

/* CLOCK_MONOTONIC in ns: how long a receiver has polled. */
long long monotonic_ns(void);

extern PyTypeObject FederateLaneType, CoordinatorLaneType;

#endif
