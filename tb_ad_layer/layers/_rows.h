/* Adjacency lists of a graph in compressed rows, shared by the C layer passes.
 *
 * rows_from() copies Graph.topology()'s inputs or consumers (a list of lists of node positions)
 * into two arrays: the items of row j are at[off[j] .. off[j + 1]). The passes then walk plain
 * integers instead of Python lists. Declining (DECLINE) means the value was not what
 * Graph.topology() gives, and the caller hands the graph to the Python reference code.
 */
#ifndef TB_AD_LAYER_ROWS_H
#define TB_AD_LAYER_ROWS_H

#include <Python.h>

enum { DECLINE = 0, OK = 1, FAIL = -1 }; /* FAIL: a Python exception is set */

typedef struct {
    Py_ssize_t *off;
    Py_ssize_t *at;
} Rows;

#define ROW(r, j, q) for (Py_ssize_t q = (r).off[j]; q < (r).off[(j) + 1]; q++)

static void rows_free(Rows *r)
{
    PyMem_Free(r->off);
    PyMem_Free(r->at);
    r->off = r->at = NULL;
}

static int rows_from(Rows *r, PyObject *lists, Py_ssize_t n)
{
    if (!PyList_CheckExact(lists) || PyList_GET_SIZE(lists) != n) return DECLINE;
    Py_ssize_t total = 0;
    for (Py_ssize_t j = 0; j < n; j++) {
        PyObject *row = PyList_GET_ITEM(lists, j);
        if (!PyList_CheckExact(row)) return DECLINE;
        total += PyList_GET_SIZE(row);
    }
    r->off = PyMem_Calloc((size_t)n + 1, sizeof(Py_ssize_t));
    r->at = PyMem_Calloc((size_t)total + 1, sizeof(Py_ssize_t));
    if (r->off == NULL || r->at == NULL) {
        PyErr_NoMemory();
        return FAIL;
    }
    Py_ssize_t k = 0;
    for (Py_ssize_t j = 0; j < n; j++) {
        PyObject *row = PyList_GET_ITEM(lists, j);
        r->off[j] = k;
        for (Py_ssize_t q = 0; q < PyList_GET_SIZE(row); q++) {
            PyObject *v = PyList_GET_ITEM(row, q);
            Py_ssize_t x = PyLong_CheckExact(v) ? PyLong_AsSsize_t(v) : -1;
            if (x < 0 || x >= n) {
                PyErr_Clear();
                return DECLINE;
            }
            r->at[k++] = x;
        }
    }
    r->off[n] = k;
    return OK;
}

#endif
