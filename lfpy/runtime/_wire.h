/* lfpy.runtime._wire: how a federation's messages cross between its processes.
 *
 * _ring.c:   `Ring`, one end of a one-way channel through a ring buffer in shared memory (one machine).
 * _socket.c: `Socket`, the same frames both ways over a connected stream socket (another machine).
 * _plain.c:  the encoding of the fast lane's plain data (in place of marshal's, which raises an audit event).
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
#include <sys/uio.h>

#define MAX_PARTS 256 /* parts of one frame (`ring_sendv`, `socket_sendv`): below sendmsg's IOV_MAX */

/* What a frame's payload is (federation/transport.py's kinds): a pickle, a pickle whose large buffers are in
 * shared memory, plain data (the fast lane's messages, in _plain.c's encoding), a pickle whose large
 * buffers follow the frame raw (a socket's), plain data whose numpy arrays follow it raw (the fast lane's
 * messages with arrays, _lane.c). A receiver gets the last kind's payload as a bytearray: its arrays are
 * views of it, writable as unpickled ones are. */
enum { KIND_PICKLE = 0, KIND_SHARED = 1, KIND_PLAIN = 2, KIND_RAW = 3, KIND_ARRAYS = 4 };

/* Arrays smaller than this travel inside a frame; larger ones through shared memory or raw after their
 * pickle (transport.SHARED_MIN, which tests/test_lane.py checks is the same). */
#define INBAND_MAX (128 * 1024)

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
 * the receiver has gone). `ring_sendv`: the frame's payload is the parts one after the other. */
int ring_send(Ring *ring, int kind, const void *data, Py_ssize_t size);
int ring_sendv(Ring *ring, int kind, const struct iovec *parts, int nparts);
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
int socket_sendv(Socket *socket, int kind, const struct iovec *parts, int nparts); /* nparts < MAX_PARTS */
PyObject *socket_receive(Socket *socket, int *kind);

/* Either a Ring or a Socket (`is_wire`): what the fast lane sends and receives on. */
int is_wire(PyObject *o);
int wire_send(PyObject *wire, int kind, const void *data, Py_ssize_t size);
int wire_sendv(PyObject *wire, int kind, const struct iovec *parts, int nparts);
PyObject *wire_receive(PyObject *wire, int *kind);
/* A received frame's payload of `size` bytes, to fill: a bytearray for KIND_ARRAYS, bytes otherwise;
 * `payload_bytes` is where its bytes are. */
PyObject *new_payload(int kind, Py_ssize_t size);
unsigned char *payload_bytes(PyObject *payload);
/* The message of a KIND_ARRAYS payload (_lane.c; the module's `unpack`). */
PyObject *unpack_arrays(PyObject *payload);
/* Their methods send(kind, payload) and receive() -> (kind, payload). */
PyObject *wire_send_method(PyObject *wire, PyObject *const *args, Py_ssize_t nargs);
PyObject *wire_receive_method(PyObject *wire, PyObject *unused);

/* CLOCK_MONOTONIC in ns: how long a receiver has polled. */
long long monotonic_ns(void);

extern PyTypeObject FederateLaneType, CoordinatorLaneType;

/* _plain.c: plain data (None, bools, ints, floats, complex numbers, strings, bytes, Ellipsis, and tuples,
 * lists and dicts of those, of these exact types) encoded into a buffer of the caller's, released with
 * `plain_release` (0, or -1 with an exception, the buffer released), and decoded (a new reference, or
 * NULL with an exception: ValueError where the bytes are corrupt). */
typedef struct {
    char *data; /* `here`, or memory of its own once it outgrows it */
    Py_ssize_t len, cap;
    char here[512];
} PlainBuffer;

int plain_encode(PyObject *o, PlainBuffer *out);
void plain_release(PlainBuffer *b);
PyObject *plain_dumps(PyObject *o);
PyObject *plain_decode(const char *data, Py_ssize_t size);

#endif
