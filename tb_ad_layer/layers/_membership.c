/* Native fast path of tb_ad_layer.layers.membership: the four passes of _Membership on arrays.
 *
 * assign_layers(nodes, inputs, consumers, weight_layer, is_buffer_like, target_flags) returns
 * what membership._Membership(graph, weight_layer).run() returns, the owner of every node, or
 * None ("declines") for anything it does not expect: a weight missing from weight_layer, a layer
 * index that is not a small non-negative int, a field of another type. The caller then runs the
 * Python passes, which are the reference: each function below is the method of the same name
 * there, step for step, and tests/layers/test_native_membership.py holds them equal.
 *
 * Per-string questions stay in Python and are asked once per distinct string: is_buffer_like(w)
 * (only where pass 1 needs it) and target_flags(target) -> int (bit 1: the op is a getitem,
 * bit 2: it is a step of a normalisation written out in elementwise ops).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdlib.h>
#include <string.h>

#include "_rows.h"

#define NO_LAYER (-1)
#define UNSET (-2)
#define MAX_LAYER (1 << 20) /* larger layer indexes are declined, so per-layer arrays stay small */

enum { K_PLACEHOLDER, K_CALL, K_OUTPUT, K_OTHER };
enum { F_GETITEM = 1, F_NORM_STEP = 2 };

typedef struct {
    Py_ssize_t n;
    int layers;      /* 1 + the largest layer index seen */
    char *kind;      /* K_* */
    char *flags;     /* F_* of call targets */
    Rows in, out;    /* inputs, consumers */
    int *seed, *derived, *owner;
    char *candidate, *floating;
} M;

static PyObject *s_kind, *s_target, *s_weights;
static PyObject *kind_placeholder, *kind_call, *kind_output;

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* ---- pass 1 ------------------------------------------------------------------------------- */

/* The seed of a node from the layers of the weights it reads: the most common layer, the lowest
 * one on a tie (owned is sorted in place). */
static int most_common(int *owned, Py_ssize_t k)
{
    int all_same = 1;
    for (Py_ssize_t q = 1; q < k && all_same; q++) all_same = owned[q] == owned[0];
    if (all_same) return owned[0];
    qsort(owned, (size_t)k, sizeof(int), cmp_int);
    int best = owned[0];
    Py_ssize_t best_count = 0;
    for (Py_ssize_t q = 0; q < k;) {
        Py_ssize_t e = q;
        while (e < k && owned[e] == owned[q]) e++;
        if (e - q > best_count) { /* ascending, so the first of the top counts is the lowest */
            best_count = e - q;
            best = owned[q];
        }
        q = e;
    }
    return best;
}

static int derive(M *m, PyObject *nodes, PyObject *weight_layer, PyObject *is_buffer_like)
{
    int *owned = NULL;
    Py_ssize_t owned_cap = 0;
    int rc = OK;
    for (Py_ssize_t j = 0; j < m->n; j++) {
        if (m->kind[j] == K_PLACEHOLDER || m->kind[j] == K_OUTPUT) {
            m->seed[j] = NO_LAYER;
            continue;
        }
        int d = UNSET;
        ROW(m->in, j, q) if (m->derived[m->in.at[q]] > d) d = m->derived[m->in.at[q]];
        PyObject *weights = PyObject_GetAttr(PyList_GET_ITEM(nodes, j), s_weights);
        if (weights == NULL) {
            rc = FAIL;
            break;
        }
        if (!PyTuple_CheckExact(weights)) {
            Py_DECREF(weights);
            rc = DECLINE;
            break;
        }
        Py_ssize_t nw = PyTuple_GET_SIZE(weights), k = 0;
        if (nw > owned_cap) {
            PyMem_Free(owned);
            owned_cap = nw * 2;
            owned = PyMem_Malloc((size_t)owned_cap * sizeof(int));
            if (owned == NULL) {
                Py_DECREF(weights);
                PyErr_NoMemory();
                rc = FAIL;
                break;
            }
        }
        for (Py_ssize_t q = 0; q < nw && rc == OK; q++) {
            PyObject *layer = PyDict_GetItemWithError(weight_layer, PyTuple_GET_ITEM(weights, q));
            if (layer == NULL) rc = PyErr_Occurred() ? FAIL : DECLINE;
            else if (layer != Py_None) {
                long x = PyLong_CheckExact(layer) ? PyLong_AsLong(layer) : -1;
                if (x < 0 || x >= MAX_LAYER) {
                    PyErr_Clear();
                    rc = DECLINE;
                }
                else {
                    owned[k++] = (int)x;
                    if (x + 1 > m->layers) m->layers = (int)x + 1;
                }
            }
        }
        if (rc == OK && k > 0) {
            m->seed[j] = m->derived[j] = most_common(owned, k);
        }
        else if (rc == OK && nw > 0) {
            /* model-level parameter, or a model-level buffer read by model-level preparation */
            int model_level = d == UNSET;
            for (Py_ssize_t q = 0; q < nw && !model_level; q++) {
                PyObject *r = PyObject_CallOneArg(is_buffer_like, PyTuple_GET_ITEM(weights, q));
                if (r == NULL) {
                    rc = FAIL;
                    break;
                }
                int truth = PyObject_IsTrue(r);
                Py_DECREF(r);
                if (truth < 0) {
                    rc = FAIL;
                    break;
                }
                model_level = !truth;
            }
            if (rc == OK) {
                if (model_level) m->seed[j] = NO_LAYER;
                else m->derived[j] = d;
            }
        }
        else if (rc == OK) {
            m->derived[j] = d;
        }
        Py_DECREF(weights);
        if (rc != OK) break;
    }
    PyMem_Free(owned);
    return rc;
}

/* For each layer X, the position of the last seed of any earlier layer (-1 if none); has[X]
 * says whether X has seeds at all (the Python dict's keys). */
static void seed_span_starts(const M *m, int *start, char *has)
{
    Py_ssize_t *last = PyMem_Calloc((size_t)m->layers + 1, sizeof(Py_ssize_t));
    for (int x = 0; x < m->layers; x++) {
        last[x] = -1;
        has[x] = 0;
    }
    for (Py_ssize_t j = 0; j < m->n; j++)
        if (m->seed[j] >= 0) {
            last[m->seed[j]] = j;
            has[m->seed[j]] = 1;
        }
    Py_ssize_t running = -1;
    for (int x = 0; x < m->layers; x++) {
        start[x] = -1;
        if (!has[x]) continue;
        start[x] = (int)running;
        if (last[x] > running) running = last[x];
    }
    PyMem_Free(last);
}

/* ---- pass 2 ------------------------------------------------------------------------------- */

static void own_by_consumers(M *m, const int *start)
{
    for (Py_ssize_t j = m->n - 1; j >= 0; j--) {
        if (m->seed[j] != UNSET) {
            m->owner[j] = m->seed[j];
            continue;
        }
        int d = m->derived[j];
        int count = 0, x = 0;
        ROW(m->out, j, q) {
            Py_ssize_t c = m->out.at[q];
            if (m->floating[c] || m->kind[c] == K_OUTPUT) continue;
            if (count == 0) {
                x = m->owner[c];
                count = 1;
            }
            else if (m->owner[c] != x) {
                count = 2;
                break;
            }
        }
        if (count == 0) {
            m->floating[j] = 1;
            m->owner[j] = d >= 0 ? d : NO_LAYER;
            continue;
        }
        if (count != 1) {
            m->owner[j] = d >= 0 ? d : NO_LAYER;
            continue;
        }
        if (d < 0) {
            int s = (x >= 0 && x < m->layers) ? start[x] : -1;
            m->owner[j] = (x == NO_LAYER || j > s) ? x : NO_LAYER;
        }
        else if (d == x)
            m->owner[j] = x;
        else if (x == NO_LAYER || d < x) {
            m->owner[j] = x;
            m->candidate[j] = 1;
        }
        else
            m->owner[j] = d;
    }
}

/* Move each layer's start past the model-level nodes computed before its first seed. */
static void model_prep_ends(const M *m, const int *start, int *out)
{
    Py_ssize_t *first = PyMem_Malloc(((size_t)m->layers + 1) * sizeof(Py_ssize_t));
    for (int x = 0; x < m->layers; x++) {
        first[x] = -1;
        out[x] = start[x];
    }
    for (Py_ssize_t j = 0; j < m->n; j++)
        if (m->seed[j] >= 0 && first[m->seed[j]] < 0) first[m->seed[j]] = j;
    /* A layer's start is raised to the last model-level node strictly before its first seed:
     * at position first[x], last_model holds the last such node before first[x]. */
    Py_ssize_t *before = PyMem_Malloc(((size_t)m->n + 1) * sizeof(Py_ssize_t));
    Py_ssize_t last_model = -1;
    for (Py_ssize_t j = 0; j < m->n; j++) {
        before[j] = last_model;
        if (m->owner[j] == NO_LAYER && !m->floating[j] && m->kind[j] != K_PLACEHOLDER
                && m->kind[j] != K_OUTPUT)
            last_model = j;
    }
    for (int x = 0; x < m->layers; x++)
        if (first[x] >= 0 && before[first[x]] > out[x]) out[x] = (int)before[first[x]];
    PyMem_Free(before);
    PyMem_Free(first);
}

/* ---- pass 3 ------------------------------------------------------------------------------- */

static int is_live(const M *m, Py_ssize_t c) { return !m->floating[c] && m->kind[c] != K_OUTPUT; }

static int resolve_candidates(M *m)
{
    Py_ssize_t n = m->n;
    int rc = OK;
    int *target = PyMem_Malloc((size_t)n * sizeof(int) + 1);
    Py_ssize_t *exit_ = PyMem_Malloc((size_t)n * sizeof(Py_ssize_t) + 1);
    Py_ssize_t *entry = PyMem_Malloc(((size_t)m->layers + 1) * sizeof(Py_ssize_t));
    char *norm_chain = PyMem_Calloc((size_t)n + 1, 1);
    /* per node i: the (layer, exit) pairs seen so far among its consumers */
    Py_ssize_t cap = 16;
    int *seen_t = PyMem_Malloc((size_t)cap * sizeof(int));
    Py_ssize_t *seen_e = PyMem_Malloc((size_t)cap * sizeof(Py_ssize_t));
    if (!target || !exit_ || !entry || !norm_chain || !seen_t || !seen_e) goto nomem;
    memcpy(target, m->owner, (size_t)n * sizeof(int));
    for (Py_ssize_t j = 0; j < n; j++) exit_[j] = j;
    for (int x = 0; x < m->layers; x++) entry[x] = -1;
    /* exit[c]: the first node outside the candidates that candidate c flows into */
    for (Py_ssize_t j = n - 1; j >= 0; j--) {
        if (!m->candidate[j]) continue;
        Py_ssize_t best = -1;
        ROW(m->out, j, q) {
            Py_ssize_t c = m->out.at[q];
            if (!is_live(m, c)) continue;
            Py_ssize_t e = m->candidate[c] ? exit_[c] : c;
            if (best < 0 || e < best) best = e;
        }
        exit_[j] = best < 0 ? j : best;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        int d = m->derived[i];
        if (d < 0) continue;
        Py_ssize_t k = 0;
        ROW(m->out, i, q) {
            Py_ssize_t c = m->out.at[q];
            if (!is_live(m, c)) continue;
            int t;
            Py_ssize_t e;
            if (m->derived[c] > d) {
                t = m->derived[c];
                e = c;
            }
            else {
                t = target[c];
                e = m->candidate[c] ? exit_[c] : c;
            }
            if (t <= d) continue;
            Py_ssize_t s = 0;
            while (s < k && seen_t[s] != t) s++;
            if (s == k) {
                if (k == cap) {
                    cap *= 2;
                    int *nt = PyMem_Realloc(seen_t, (size_t)cap * sizeof(int));
                    if (nt) seen_t = nt;
                    Py_ssize_t *ne = PyMem_Realloc(seen_e, (size_t)cap * sizeof(Py_ssize_t));
                    if (ne) seen_e = ne;
                    if (!nt || !ne) goto nomem;
                }
                seen_t[k] = t;
                seen_e[k] = e;
                k++;
            }
            else if (seen_e[s] != e && t >= 0 && t < m->layers && i > entry[t])
                entry[t] = i;
        }
    }
    for (Py_ssize_t j = n - 1; j >= 0; j--) {
        if (!(m->candidate[j] && target[j] == NO_LAYER && (m->flags[j] & F_NORM_STEP))) continue;
        int all = 1;
        ROW(m->out, j, q) {
            Py_ssize_t c = m->out.at[q];
            if (!is_live(m, c)) continue;
            if (!(norm_chain[c] || (!m->candidate[c] && target[c] == NO_LAYER))) {
                all = 0;
                break;
            }
        }
        norm_chain[j] = (char)all;
    }
    for (Py_ssize_t j = 0; j < n; j++) {
        if (!m->candidate[j]) continue;
        int x = target[j], accepted;
        if (x == NO_LAYER) {
            Py_ssize_t outside = 0;
            ROW(m->in, j, q) {
                Py_ssize_t i = m->in.at[q];
                if (m->derived[i] >= 0 && !(m->candidate[i] && m->owner[i] == NO_LAYER)) outside++;
            }
            accepted = norm_chain[j] && outside <= 1;
        }
        else {
            Py_ssize_t gate = (x >= 0 && x < m->layers) ? entry[x] : -1;
            accepted = j != gate;
            ROW(m->in, j, q) {
                if (!accepted) break;
                Py_ssize_t i = m->in.at[q];
                accepted = (m->derived[i] < 0 && (m->owner[i] == x || m->owner[i] == NO_LAYER))
                           || (m->candidate[i] && m->owner[i] == x) || i == gate;
            }
        }
        if (!accepted) {
            m->candidate[j] = 0;
            m->owner[j] = m->derived[j];
        }
    }
    goto done;
nomem:
    PyErr_NoMemory();
    rc = FAIL;
done:
    PyMem_Free(target);
    PyMem_Free(exit_);
    PyMem_Free(entry);
    PyMem_Free(norm_chain);
    PyMem_Free(seen_t);
    PyMem_Free(seen_e);
    return rc;
}

/* ---- pass 4 ------------------------------------------------------------------------------- */

static void resolve_sinks(M *m)
{
    for (Py_ssize_t j = 0; j < m->n; j++) {
        if (!m->floating[j] || m->out.off[j + 1] > m->out.off[j]) continue;
        Py_ssize_t best = -1;
        ROW(m->in, j, q) {
            Py_ssize_t i = m->in.at[q];
            ROW(m->out, i, r) {
                Py_ssize_t c = m->out.at[r];
                if (c > j && !m->floating[c] && (best < 0 || c < best)) best = c;
            }
        }
        if (best >= 0) {
            m->owner[j] = m->owner[best];
        }
        else {
            ROW(m->in, j, q) {
                Py_ssize_t i = m->in.at[q];
                if (m->owner[i] >= 0 && !m->floating[i]) {
                    m->owner[j] = m->owner[i];
                    break;
                }
            }
        }
    }
    for (Py_ssize_t j = m->n - 1; j >= 0; j--) {
        if (!m->floating[j] || m->out.off[j + 1] == m->out.off[j]) continue;
        int found = 0;
        ROW(m->out, j, q) {
            Py_ssize_t c = m->out.at[q];
            if (m->owner[c] >= 0) {
                m->owner[j] = m->owner[c];
                found = 1;
                break;
            }
        }
        if (!found) m->owner[j] = m->owner[m->out.at[m->out.off[j]]];
    }
}

/* ---- the run ------------------------------------------------------------------------------ */

static int node_kinds(M *m, PyObject *nodes, PyObject *target_flags)
{
    PyObject *cache = PyDict_New(); /* target -> flags */
    if (cache == NULL) return FAIL;
    int rc = OK;
    for (Py_ssize_t j = 0; j < m->n && rc == OK; j++) {
        PyObject *node = PyList_GET_ITEM(nodes, j);
        PyObject *kind = PyObject_GetAttr(node, s_kind);
        if (kind == NULL) {
            rc = FAIL;
            break;
        }
        int eq_ph = PyUnicode_Compare(kind, kind_placeholder) == 0;
        int eq_call = !eq_ph && PyUnicode_Compare(kind, kind_call) == 0;
        int eq_out = !eq_ph && !eq_call && PyUnicode_Compare(kind, kind_output) == 0;
        Py_DECREF(kind);
        if (PyErr_Occurred()) {
            PyErr_Clear();
            rc = DECLINE;
            break;
        }
        m->kind[j] = eq_ph ? K_PLACEHOLDER : eq_call ? K_CALL : eq_out ? K_OUTPUT : K_OTHER;
        m->flags[j] = 0;
        if (!eq_call) continue;
        PyObject *target = PyObject_GetAttr(node, s_target);
        if (target == NULL) {
            rc = FAIL;
            break;
        }
        PyObject *f = PyDict_GetItemWithError(cache, target); /* borrowed */
        if (f == NULL && !PyErr_Occurred()) {
            f = PyObject_CallOneArg(target_flags, target);
            if (f != NULL) {
                int r = PyDict_SetItem(cache, target, f);
                Py_DECREF(f); /* the cache holds it */
                if (r < 0) f = NULL;
            }
        }
        Py_DECREF(target);
        if (f == NULL) {
            rc = FAIL;
            break;
        }
        long v = PyLong_AsLong(f);
        if (v == -1 && PyErr_Occurred()) {
            rc = FAIL;
            break;
        }
        m->flags[j] = (char)v;
    }
    Py_DECREF(cache);
    return rc;
}

static int run(M *m, PyObject *nodes, PyObject *weight_layer, PyObject *is_buffer_like,
               PyObject *target_flags)
{
    int rc = node_kinds(m, nodes, target_flags);
    if (rc != OK) return rc;
    for (Py_ssize_t j = 0; j < m->n; j++) m->seed[j] = m->derived[j] = m->owner[j] = UNSET;
    rc = derive(m, nodes, weight_layer, is_buffer_like);
    if (rc != OK) return rc;
    size_t nl = (size_t)m->layers + 1;
    int *starts = PyMem_Malloc(nl * sizeof(int)), *refined = PyMem_Malloc(nl * sizeof(int));
    char *has = PyMem_Malloc(nl);
    if (!starts || !refined || !has) {
        PyMem_Free(starts);
        PyMem_Free(refined);
        PyMem_Free(has);
        PyErr_NoMemory();
        return FAIL;
    }
    seed_span_starts(m, starts, has);
    own_by_consumers(m, starts);
    model_prep_ends(m, starts, refined);
    if (memcmp(starts, refined, (size_t)m->layers * sizeof(int)) != 0) {
        for (Py_ssize_t j = 0; j < m->n; j++) {
            m->owner[j] = UNSET;
            m->candidate[j] = m->floating[j] = 0;
        }
        own_by_consumers(m, refined);
    }
    PyMem_Free(starts);
    PyMem_Free(refined);
    PyMem_Free(has);
    int any = 0;
    for (Py_ssize_t j = 0; j < m->n && !any; j++) any = m->candidate[j];
    if (any && resolve_candidates(m) != OK) return FAIL;
    resolve_sinks(m);
    /* a getitem goes where the multi-output op it reads went */
    for (Py_ssize_t j = 0; j < m->n; j++)
        if ((m->flags[j] & F_GETITEM) && m->in.off[j + 1] > m->in.off[j])
            m->owner[j] = m->owner[m->in.at[m->in.off[j]]];
    return OK;
}

static PyObject *assign_layers(PyObject *mod, PyObject *args)
{
    PyObject *nodes, *inputs, *consumers, *weight_layer, *is_buffer_like, *target_flags;
    if (!PyArg_ParseTuple(args, "O!OOO!OO:assign_layers", &PyList_Type, &nodes, &inputs,
                          &consumers, &PyDict_Type, &weight_layer, &is_buffer_like, &target_flags))
        return NULL;
    M m = {0};
    m.n = PyList_GET_SIZE(nodes);
    size_t n1 = (size_t)m.n + 1;
    PyObject *result = NULL;
    int rc = rows_from(&m.in, inputs, m.n);
    if (rc == OK) rc = rows_from(&m.out, consumers, m.n);
    if (rc == OK) {
        m.kind = PyMem_Calloc(n1, 1);
        m.flags = PyMem_Calloc(n1, 1);
        m.candidate = PyMem_Calloc(n1, 1);
        m.floating = PyMem_Calloc(n1, 1);
        m.seed = PyMem_Calloc(n1, sizeof(int));
        m.derived = PyMem_Calloc(n1, sizeof(int));
        m.owner = PyMem_Calloc(n1, sizeof(int));
        if (!m.kind || !m.flags || !m.candidate || !m.floating || !m.seed || !m.derived
                || !m.owner) {
            PyErr_NoMemory();
            rc = FAIL;
        }
    }
    if (rc == OK) rc = run(&m, nodes, weight_layer, is_buffer_like, target_flags);
    if (rc == OK) {
        result = PyList_New(m.n);
        for (Py_ssize_t j = 0; result != NULL && j < m.n; j++) {
            PyObject *v = PyLong_FromLong(m.owner[j]);
            if (v == NULL) Py_CLEAR(result);
            else PyList_SET_ITEM(result, j, v);
        }
    }
    rows_free(&m.in);
    rows_free(&m.out);
    PyMem_Free(m.kind);
    PyMem_Free(m.flags);
    PyMem_Free(m.candidate);
    PyMem_Free(m.floating);
    PyMem_Free(m.seed);
    PyMem_Free(m.derived);
    PyMem_Free(m.owner);
    if (rc == FAIL) return NULL;
    if (rc == DECLINE) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    return result;
}

static PyObject *configure(PyObject *mod, PyObject *args)
{
    PyObject *ph, *call, *out;
    if (!PyArg_ParseTuple(args, "UUU:configure", &ph, &call, &out)) return NULL;
    Py_INCREF(ph);
    Py_XSETREF(kind_placeholder, ph);
    Py_INCREF(call);
    Py_XSETREF(kind_call, call);
    Py_INCREF(out);
    Py_XSETREF(kind_output, out);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"assign_layers", assign_layers, METH_VARARGS,
     "assign_layers(nodes, inputs, consumers, weight_layer, is_buffer_like, target_flags) -> "
     "list[int] | None\n\nmembership._Membership(...).run() on arrays; None: use the reference."},
    {"configure", configure, METH_VARARGS,
     "configure(PLACEHOLDER, CALL, OUTPUT): the node kind strings."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_membership",
                                    "Native layer membership passes.", -1, methods};

PyMODINIT_FUNC PyInit__membership(void)
{
    if (!(s_kind = PyUnicode_InternFromString("kind"))
            || !(s_target = PyUnicode_InternFromString("target"))
            || !(s_weights = PyUnicode_InternFromString("weights")))
        return NULL;
    return PyModule_Create(&module);
}
