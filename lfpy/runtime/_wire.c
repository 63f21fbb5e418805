/* The module lfpy.runtime._wire (see _wire.h). */
#include "_wire.h"

static PyMethodDef module_methods[] = {
    {"format", (PyCFunction)ring_format, METH_O, "format(memory) -> capacity: an empty ring in the memory."},
    {NULL},
};

static struct PyModuleDef wire_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "lfpy.runtime._wire",
    .m_doc = "How a federation's messages cross between the processes of one machine: rings in shared memory and "
             "the fast lane of plain tags (see lfpy/runtime/federation/: transport.py, coordinator.py, server.py).",
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC PyInit__wire(void)
{
    if (PyType_Ready(&RingType) < 0 || PyType_Ready(&FederateLaneType) < 0 || PyType_Ready(&CoordinatorLaneType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&wire_module);
    if (m == NULL)
        return NULL;
    if (PyModule_AddObjectRef(m, "Ring", (PyObject *)&RingType) < 0 ||
        PyModule_AddObjectRef(m, "FederateLane", (PyObject *)&FederateLaneType) < 0 ||
        PyModule_AddObjectRef(m, "CoordinatorLane", (PyObject *)&CoordinatorLaneType) < 0 ||
        PyModule_AddIntConstant(m, "HEADER", (long)ring_header_size) < 0 ||
        PyModule_AddIntConstant(m, "MARSHAL", KIND_MARSHAL) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
