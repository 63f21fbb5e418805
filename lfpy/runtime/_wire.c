/* The module lfpy.runtime._wire (see _wire.h). */
#include "_wire.h"

#include <time.h>

/* What the fast lane sends and receives on: a ring or a socket. */

int is_wire(PyObject *o)
{
    return Py_IS_TYPE(o, &RingType) || Py_IS_TYPE(o, &SocketType);
}

int wire_send(PyObject *wire, int kind, const void *data, Py_ssize_t size)
{
    if (Py_IS_TYPE(wire, &RingType))
        return ring_send((Ring *)wire, kind, data, size);
    return socket_send((Socket *)wire, kind, data, size);
}

int wire_sendv(PyObject *wire, int kind, const struct iovec *parts, int nparts)
{
    if (Py_IS_TYPE(wire, &RingType))
        return ring_sendv((Ring *)wire, kind, parts, nparts);
    return socket_sendv((Socket *)wire, kind, parts, nparts);
}

PyObject *new_payload(int kind, Py_ssize_t size)
{
    return kind == KIND_ARRAYS ? PyByteArray_FromStringAndSize(NULL, size) : PyBytes_FromStringAndSize(NULL, size);
}

unsigned char *payload_bytes(PyObject *payload)
{
    return (unsigned char *)(PyByteArray_CheckExact(payload) ? PyByteArray_AS_STRING(payload) : PyBytes_AS_STRING(payload));
}

PyObject *wire_receive(PyObject *wire, int *kind)
{
    if (Py_IS_TYPE(wire, &RingType))
        return ring_receive((Ring *)wire, kind);
    return socket_receive((Socket *)wire, kind);
}

/* send(kind, payload): one frame (a Ring's or a Socket's method). */
PyObject *wire_send_method(PyObject *wire, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "send(kind, payload)");
        return NULL;
    }
    long kind = PyLong_AsLong(args[0]);
    if (kind == -1 && PyErr_Occurred())
        return NULL;
    if (kind < 0 || kind > 255) {
        PyErr_SetString(PyExc_ValueError, "send: a kind is 0..255");
        return NULL;
    }
    Py_buffer payload;
    if (PyObject_GetBuffer(args[1], &payload, PyBUF_SIMPLE) < 0)
        return NULL;
    int rc = wire_send(wire, (int)kind, payload.buf, payload.len);
    PyBuffer_Release(&payload);
    if (rc < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* receive() -> (kind, payload bytes): the next frame, waited for (a Ring's or a Socket's method). */
PyObject *wire_receive_method(PyObject *wire, PyObject *unused)
{
    int kind;
    PyObject *payload = wire_receive(wire, &kind);
    if (payload == NULL)
        return NULL;
    return Py_BuildValue("(iN)", kind, payload);
}

long long monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}


static PyObject *unpack(PyObject *module, PyObject *payload)
{
    if (!PyByteArray_CheckExact(payload)) {
        PyErr_SetString(PyExc_TypeError, "unpack: a frame's payload, a bytearray");
        return NULL;
    }
    return unpack_arrays(payload);
}

static PyObject *dumps(PyObject *module, PyObject *value)
{
    return plain_dumps(value);
}

static PyObject *loads(PyObject *module, PyObject *data)
{
    Py_buffer view;
    if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    PyObject *o = plain_decode(view.buf, view.len);
    PyBuffer_Release(&view);
    return o;
}

static PyMethodDef module_methods[] = {
    {"format", (PyCFunction)ring_format, METH_O, "format(memory) -> capacity: an empty ring in the memory."},
    {"unpack", (PyCFunction)unpack, METH_O,
     "unpack(payload) -> the message of a frame of kind ARRAYS (plain data whose numpy arrays follow it raw)."},
    {"dumps", (PyCFunction)dumps, METH_O,
     "dumps(value) -> the bytes of a frame of kind PLAIN: plain data (None, bools, ints, floats, complex numbers, "
     "strings, bytes, Ellipsis, and tuples, lists and dicts of those, of these exact types), exactly."},
    {"loads", (PyCFunction)loads, METH_O,
     "loads(data) -> the value of a frame of kind PLAIN (ValueError where it is corrupt)."},
    {NULL},
};

static struct PyModuleDef wire_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "lfpy.runtime._wire",
    .m_doc = "How a federation's messages cross: rings in shared memory between the processes of one machine, "
             "frames over sockets to other machines, and the fast lane of plain tags (see lfpy/runtime/federation/: transport.py, coordinator.py, server.py).",
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC PyInit__wire(void)
{
    if (PyType_Ready(&RingType) < 0 || PyType_Ready(&SocketType) < 0 || PyType_Ready(&FederateLaneType) < 0 || PyType_Ready(&CoordinatorLaneType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&wire_module);
    if (m == NULL)
        return NULL;
    if (PyModule_AddObjectRef(m, "Ring", (PyObject *)&RingType) < 0 ||
        PyModule_AddObjectRef(m, "Socket", (PyObject *)&SocketType) < 0 ||
        PyModule_AddObjectRef(m, "FederateLane", (PyObject *)&FederateLaneType) < 0 ||
        PyModule_AddObjectRef(m, "CoordinatorLane", (PyObject *)&CoordinatorLaneType) < 0 ||
        PyModule_AddIntConstant(m, "HEADER", (long)ring_header_size) < 0 ||
        PyModule_AddIntConstant(m, "PLAIN", KIND_PLAIN) < 0 ||
        PyModule_AddIntConstant(m, "ARRAYS", KIND_ARRAYS) < 0 ||
        PyModule_AddIntConstant(m, "INBAND_MAX", INBAND_MAX) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
