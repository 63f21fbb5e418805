/* The module lfpy.runtime._wire (see _wire.h). */
#include "_wire.h"

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

PyObject *wire_receive(PyObject *wire, int *kind)
{
    if (Py_IS_TYPE(wire, &RingType))
        return ring_receive((Ring *)wire, kind);
    return socket_receive((Socket *)wire, kind);
}


static PyMethodDef module_methods[] = {
    {"format", (PyCFunction)ring_format, METH_O, "format(memory) -> capacity: an empty ring in the memory."},
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
        PyModule_AddIntConstant(m, "MARSHAL", KIND_MARSHAL) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
