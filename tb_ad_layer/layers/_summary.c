/* Native fast paths of the per-layer summary (layered.layer_graph, external.external_inputs).
 *
 * Both walk every node once in Python otherwise, which on a node-dense dump (180k nodes) cost as
 * much as the membership and group passes together. The Python functions they replace are the
 * reference (layered._members_and_counts, external._sources); tests/layers/
 * test_native_summary.py holds them equal. Anything unexpected declines (returns None).
 *
 * layer_members(nodes, owners, groups, call) -> (members, calls) | None
 *     members: layer -> positions of its nodes (each Node's own index int); calls: layer ->
 *     {group: how many of its call nodes are in it}, groups in order of first appearance.
 * external_sources(nodes, members, producers, owners, layer, buffers) -> list | None
 *     What layer `layer` reads from outside, in first-use order: the position of each producer
 *     another layer (or no layer) computed, and the name of each model-level buffer it reads.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define NO_LAYER (-1)

static PyObject *s_kind, *s_index, *s_name, *s_weights;

/* calls[owner][group] += 1, creating the inner dict on first use; 0 on error. */
static int count_one(PyObject *calls, PyObject *owner, PyObject *group)
{
    PyObject *counts = PyDict_GetItemWithError(calls, owner); /* borrowed */
    if (counts == NULL) {
        if (PyErr_Occurred() || (counts = PyDict_New()) == NULL) return 0;
        int r = PyDict_SetItem(calls, owner, counts);
        Py_DECREF(counts); /* the dict holds it */
        if (r < 0) return 0;
    }
    PyObject *c = PyDict_GetItemWithError(counts, group); /* borrowed */
    if (c == NULL && PyErr_Occurred()) return 0;
    PyObject *v = PyLong_FromLong(c ? PyLong_AsLong(c) + 1 : 1);
    int ok = v != NULL && PyDict_SetItem(counts, group, v) == 0;
    Py_XDECREF(v);
    return ok;
}

static PyObject *layer_members(PyObject *mod, PyObject *args)
{
    PyObject *nodes, *owners, *groups, *call;
    if (!PyArg_ParseTuple(args, "O!O!O!U:layer_members", &PyList_Type, &nodes, &PyList_Type,
                          &owners, &PyList_Type, &groups, &call))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(nodes);
    if (PyList_GET_SIZE(owners) != n || PyList_GET_SIZE(groups) != n) Py_RETURN_NONE;
    PyObject *members = PyDict_New(), *calls = PyDict_New(), *out = NULL;
    int ok = members != NULL && calls != NULL, decline = 0;
    for (Py_ssize_t j = 0; ok && !decline && j < n; j++) {
        PyObject *owner = PyList_GET_ITEM(owners, j);
        long o = PyLong_CheckExact(owner) ? PyLong_AsLong(owner) : -2;
        if (o == NO_LAYER) continue;
        if (o < 0) {
            PyErr_Clear();
            decline = 1;
            break;
        }
        PyObject *node = PyList_GET_ITEM(nodes, j);
        PyObject *index = PyObject_GetAttr(node, s_index);
        PyObject *kind = index ? PyObject_GetAttr(node, s_kind) : NULL;
        ok = kind != NULL;
        if (ok && (!PyLong_CheckExact(index) || PyLong_AsSsize_t(index) != j
                   || !PyUnicode_CheckExact(kind))) {
            PyErr_Clear();
            decline = 1; /* Node.index must be the position, as Graph promises */
        }
        if (ok && !decline) {
            PyObject *list = PyDict_GetItemWithError(members, owner); /* borrowed */
            if (list == NULL && !PyErr_Occurred()) {
                list = PyList_New(0);
                ok = list != NULL && PyDict_SetItem(members, owner, list) == 0;
                Py_XDECREF(list); /* the dict holds it */
            }
            ok = ok && list != NULL && PyList_Append(list, index) == 0;
        }
        if (ok && !decline && PyUnicode_Compare(kind, call) == 0)
            ok = count_one(calls, owner, PyList_GET_ITEM(groups, j));
        Py_XDECREF(index);
        Py_XDECREF(kind);
    }
    if (ok && !decline) out = PyTuple_Pack(2, members, calls);
    Py_XDECREF(members);
    Py_XDECREF(calls);
    if (decline && !PyErr_Occurred()) Py_RETURN_NONE;
    return out;
}

static PyObject *external_sources(PyObject *mod, PyObject *args)
{
    PyObject *nodes, *members, *producers, *owners, *layer, *buffers;
    if (!PyArg_ParseTuple(args, "O!O!O!O!OO!:external_sources", &PyList_Type, &nodes,
                          &PyList_Type, &members, &PyList_Type, &producers, &PyList_Type, &owners,
                          &layer, &PyFrozenSet_Type, &buffers))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(nodes);
    long me = PyLong_AsLong(layer);
    if (me == -1 && PyErr_Occurred()) return NULL;
    if (PyList_GET_SIZE(producers) != n || PyList_GET_SIZE(owners) != n) Py_RETURN_NONE;
    PyObject *seen = PySet_New(NULL), *out = PyList_New(0);
    int ok = seen != NULL && out != NULL, decline = 0;
    int any_buffers = PySet_GET_SIZE(buffers) > 0;
    for (Py_ssize_t k = 0; ok && !decline && k < PyList_GET_SIZE(members); k++) {
        PyObject *jo = PyList_GET_ITEM(members, k);
        Py_ssize_t j = PyLong_CheckExact(jo) ? PyLong_AsSsize_t(jo) : -1;
        PyObject *row = j >= 0 && j < n ? PyList_GET_ITEM(producers, j) : NULL;
        if (row == NULL || !PyList_CheckExact(row)) {
            PyErr_Clear();
            decline = 1;
            break;
        }
        for (Py_ssize_t q = 0; ok && !decline && q < PyList_GET_SIZE(row); q++) {
            PyObject *io = PyList_GET_ITEM(row, q);
            Py_ssize_t i = PyLong_CheckExact(io) ? PyLong_AsSsize_t(io) : -1;
            if (i < 0 || i >= n) {
                PyErr_Clear();
                decline = 1;
                break;
            }
            PyObject *owner = PyList_GET_ITEM(owners, i);
            long o = PyLong_CheckExact(owner) ? PyLong_AsLong(owner) : -2;
            if (o == me) continue;
            PyObject *name = PyObject_GetAttr(PyList_GET_ITEM(nodes, i), s_name);
            int in = name ? PySet_Contains(seen, name) : -1;
            if (in == 0) ok = PySet_Add(seen, name) == 0 && PyList_Append(out, io) == 0;
            else if (in < 0) ok = 0;
            Py_XDECREF(name);
        }
        if (!ok || decline || !any_buffers) continue;
        PyObject *weights = PyObject_GetAttr(PyList_GET_ITEM(nodes, j), s_weights);
        if (weights == NULL || !PyTuple_CheckExact(weights)) {
            ok = weights != NULL;
            decline = ok;
            Py_XDECREF(weights);
            continue;
        }
        for (Py_ssize_t q = 0; ok && q < PyTuple_GET_SIZE(weights); q++) {
            PyObject *w = PyTuple_GET_ITEM(weights, q);
            int buf = PySet_Contains(buffers, w);
            int in = buf > 0 ? PySet_Contains(seen, w) : 1;
            if (buf < 0 || in < 0) ok = 0;
            else if (buf > 0 && in == 0) ok = PySet_Add(seen, w) == 0 && PyList_Append(out, w) == 0;
        }
        Py_DECREF(weights);
    }
    Py_XDECREF(seen);
    if (!ok || decline) {
        Py_XDECREF(out);
        if (decline && !PyErr_Occurred()) Py_RETURN_NONE;
        return NULL;
    }
    return out;
}

static PyMethodDef methods[] = {
    {"layer_members", layer_members, METH_VARARGS,
     "layer_members(nodes, owners, groups, call) -> (members, calls) | None"},
    {"external_sources", external_sources, METH_VARARGS,
     "external_sources(nodes, members, producers, owners, layer, buffers) -> list | None"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_summary",
                                    "Native per-layer summary loops.", -1, methods};

PyMODINIT_FUNC PyInit__summary(void)
{
    if (!(s_kind = PyUnicode_InternFromString("kind"))
            || !(s_index = PyUnicode_InternFromString("index"))
            || !(s_name = PyUnicode_InternFromString("name"))
            || !(s_weights = PyUnicode_InternFromString("weights")))
        return NULL;
    return PyModule_Create(&module);
}
