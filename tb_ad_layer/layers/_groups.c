/* Native fast path of tb_ad_layer.layers.groups.assign_groups: the per-node passes on arrays.
 *
 * assign_groups(nodes, layers, inputs, consumers, roles, target_info, role_class) returns what
 * groups.assign_groups returns, or None ("declines") for anything unexpected (a weight without a
 * role, a field of another type, a layer index out of range); the caller then runs the Python
 * code, which is the reference. The passes below follow it step for step.
 *
 * What a string says stays in Python and is asked once per distinct string:
 * target_info(target) -> (op_group, op_sub, target_group, target_sub, bits) and
 * role_class(role) -> (group, sub); see groups._target_info for the bits.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#include "_rows.h"

#define NO_LAYER (-1)
#define MAX_LAYER (1 << 20)

enum {
    B_ATTN_KERNEL = 1, B_MLA_OP = 2, B_GENERIC = 4, B_BEGIN = 8, B_END = 16, B_MARKER = 32,
    B_WAITS = 64, B_GETITEM = 128
};

static PyObject *s_kind, *s_target, *s_weights;
/* configure(): CALL, NORM, ATTENTION, MLA, OTHER, AUX_STREAM, "main", "aux", "rope" */
static PyObject *k_call, *g_norm, *g_attention, *g_mla, *g_other, *sub_aux, *st_main, *st_aux,
    *sub_rope;

static const char *MLA_WEIGHTS[] = {"q_a_proj", "kv_a_proj", "kv_b_proj", "kv_a_layernorm",
                                    "q_a_layernorm", "fused_qkv_a"};

/* Equality of two str-or-None values, as Python's == on them. */
static int same(PyObject *a, PyObject *b)
{
    if (a == b) return 1;
    if (a == Py_None || b == Py_None) return 0;
    return PyUnicode_Compare(a, b) == 0;
}

static int truthy(PyObject *s) { return s != Py_None && PyUnicode_GET_LENGTH(s) > 0; }

/* A cached answer of a Python function of one str: the tuple it returned (owned by cache). */
static PyObject *ask(PyObject *cache, PyObject *fn, PyObject *key, Py_ssize_t size)
{
    PyObject *v = PyDict_GetItemWithError(cache, key);
    if (v != NULL || PyErr_Occurred()) return v;
    v = PyObject_CallOneArg(fn, key);
    if (v == NULL) return NULL;
    if (!PyTuple_CheckExact(v) || PyTuple_GET_SIZE(v) != size) {
        Py_DECREF(v);
        PyErr_SetString(PyExc_TypeError, "assign_groups: unexpected answer of a classifier");
        return NULL;
    }
    int r = PyDict_SetItem(cache, key, v);
    Py_DECREF(v);
    return r < 0 ? NULL : v;
}

static int mla_weight(PyObject *w)
{
    Py_ssize_t n;
    const char *s = PyUnicode_AsUTF8AndSize(w, &n);
    if (s == NULL) return -1;
    for (int k = 0; k < 6; k++) {
        size_t m = strlen(MLA_WEIGHTS[k]);
        for (Py_ssize_t i = 0; i + (Py_ssize_t)m <= n; i++)
            if (s[i] == MLA_WEIGHTS[k][0] && memcmp(s + i, MLA_WEIGHTS[k], m) == 0) return 1;
    }
    return 0;
}

typedef struct {
    Py_ssize_t n;
    int nlayers;
    int *layer;
    char *is_call, *has_weights;
    int *bits;
    PyObject **group, **sub; /* borrowed: constants or items of the caches' tuples */
    Rows in, out;
    char *mla, *attn;        /* per layer */
} G;

/* Pass 0: each call's own class (by its weights' roles, else its target), the MLA and
 * attention layers, and every node's target bits. */
static int classify(G *g, PyObject *nodes, PyObject *roles, PyObject *target_info,
                    PyObject *role_class, PyObject *tcache, PyObject *rcache)
{
    int rc = OK;
    for (Py_ssize_t j = 0; j < g->n && rc == OK; j++) {
        PyObject *node = PyList_GET_ITEM(nodes, j);
        PyObject *kind = PyObject_GetAttr(node, s_kind);
        PyObject *target = kind ? PyObject_GetAttr(node, s_target) : NULL;
        PyObject *weights = target ? PyObject_GetAttr(node, s_weights) : NULL;
        PyObject *info = NULL;
        g->group[j] = g->sub[j] = Py_None;
        g->bits[j] = 0;
        if (weights == NULL)
            rc = FAIL;
        else if (!PyUnicode_CheckExact(kind) || !PyUnicode_CheckExact(target)
                 || !PyTuple_CheckExact(weights))
            rc = DECLINE;
        if (rc == OK) {
            g->is_call[j] = (char)same(kind, k_call);
            g->has_weights[j] = PyTuple_GET_SIZE(weights) > 0;
            if (PyUnicode_GET_LENGTH(target) > 0) {
                info = ask(tcache, target_info, target, 5);
                long b = info ? PyLong_AsLong(PyTuple_GET_ITEM(info, 4)) : -1;
                if (b == -1) rc = FAIL;
                else {
                    /* op_name is the kind for a non-call: only the aux bits (from the target
                     * itself) apply to it */
                    g->bits[j] = g->is_call[j] ? (int)b
                                               : (int)b & (B_BEGIN | B_END | B_MARKER | B_WAITS);
                }
            }
        }
        int L = rc == OK ? g->layer[j] : NO_LAYER;
        if (rc == OK && g->is_call[j] && L != NO_LAYER) {
            PyObject *gr = Py_None, *sb = Py_None;
            Py_ssize_t nw = PyTuple_GET_SIZE(weights);
            if (info == NULL || L < 0 || L >= g->nlayers)
                rc = DECLINE; /* a call without a target; a layer out of range */
            else if (nw == 0) {
                gr = PyTuple_GET_ITEM(info, 0);
                sb = PyTuple_GET_ITEM(info, 1);
            }
            else if (g->bits[j] & B_ATTN_KERNEL) {
                /* the attention kernel reads both branches' weights: it is neither branch */
                gr = g_attention;
            }
            else {
                int decided = 0;
                for (Py_ssize_t q = 0; q < nw; q++) {
                    PyObject *role = PyDict_GetItemWithError(roles, PyTuple_GET_ITEM(weights, q));
                    if (role == NULL || !PyUnicode_CheckExact(role)) {
                        rc = PyErr_Occurred() ? FAIL : DECLINE;
                        break;
                    }
                    PyObject *cls = ask(rcache, role_class, role, 2);
                    if (cls == NULL) {
                        rc = FAIL;
                        break;
                    }
                    PyObject *cg = PyTuple_GET_ITEM(cls, 0);
                    if (cg == Py_None) continue;
                    if (same(cg, g_norm) && same(PyTuple_GET_ITEM(info, 3), sub_rope)) break;
                    gr = cg;
                    sb = PyTuple_GET_ITEM(cls, 1);
                    decided = 1;
                    break;
                }
                if (!decided) {
                    gr = PyTuple_GET_ITEM(info, 2);
                    sb = PyTuple_GET_ITEM(info, 3);
                }
            }
            if (rc == OK && ((gr != Py_None && !PyUnicode_CheckExact(gr))
                             || (sb != Py_None && !PyUnicode_CheckExact(sb))))
                rc = DECLINE;
            if (rc == OK) {
                g->group[j] = gr;
                g->sub[j] = sb;
                if (!g->mla[L]) {
                    int is_mla = (g->bits[j] & B_MLA_OP) != 0;
                    for (Py_ssize_t q = 0; q < nw && !is_mla && rc == OK; q++) {
                        PyObject *w = PyTuple_GET_ITEM(weights, q);
                        int r = PyUnicode_CheckExact(w) ? mla_weight(w) : -2;
                        if (r < 0) rc = r == -1 ? FAIL : DECLINE;
                        else is_mla = r;
                    }
                    if (is_mla) g->mla[L] = 1;
                }
                if (same(gr, g_attention)) g->attn[L] = 1;
            }
        }
        Py_XDECREF(kind);
        Py_XDECREF(target);
        Py_XDECREF(weights);
    }
    return rc;
}

/* Passes 1-3: getitems with their op, then consumers' groups, then producers'. */
static void propagate(G *g)
{
    Py_ssize_t n = g->n;
    int *layer = g->layer;
    PyObject **group = g->group, **sub = g->sub;
    for (Py_ssize_t j = 0; j < n; j++) {
        if (group[j] != Py_None || layer[j] == NO_LAYER || !(g->bits[j] & B_GETITEM)
                || g->in.off[j + 1] == g->in.off[j])
            continue;
        Py_ssize_t src = g->in.at[g->in.off[j]];
        if (layer[src] == layer[j]) {
            group[j] = group[src];
            sub[j] = sub[src];
        }
    }
    for (Py_ssize_t j = n - 1; j >= 0; j--) {
        if (layer[j] == NO_LAYER || !g->is_call[j]) continue;
        if (group[j] != Py_None && sub[j] != Py_None) continue;
        ROW(g->out, j, q) {
            Py_ssize_t c = g->out.at[q];
            if (group[c] != Py_None && layer[c] == layer[j]
                    && (group[j] == Py_None || same(group[j], group[c]))) {
                group[j] = group[c];
                if (!truthy(sub[j])) sub[j] = sub[c];
                break;
            }
        }
    }
    for (Py_ssize_t j = 0; j < n; j++) {
        if (layer[j] == NO_LAYER || !g->is_call[j]) continue;
        if (group[j] == Py_None) {
            group[j] = g_other;
            ROW(g->in, j, q) {
                Py_ssize_t i = g->in.at[q];
                if (layer[i] == layer[j] && group[i] != Py_None) {
                    group[j] = group[i];
                    sub[j] = sub[i];
                    break;
                }
            }
        }
        else if ((g->bits[j] & B_GENERIC) && !g->has_weights[j]) {
            /* routing arithmetic between the router and the experts stays with the router */
            ROW(g->in, j, q) {
                Py_ssize_t i = g->in.at[q];
                if (layer[i] == layer[j] && group[i] != Py_None && same(group[i], group[j])
                        && sub[i] != Py_None) {
                    sub[j] = sub[i];
                    break;
                }
            }
        }
    }
}

/* groups._mark_aux_regions; streams[j] is 1 for "aux". */
static void mark_aux(G *g, char *streams, char *after, char *before)
{
    Py_ssize_t n = g->n;
    int any = 0;
    for (Py_ssize_t j = 0; j < n && !any; j++) any = (g->bits[j] & B_BEGIN) != 0;
    if (!any) return;
    for (Py_ssize_t j = 0; j < n; j++) {
        int b = g->bits[j];
        int on = (b & B_BEGIN) != 0;
        if (!on && !(b & B_END)) ROW(g->in, j, q) if (after[g->in.at[q]]) {
                on = 1;
                break;
            }
        after[j] = (char)on;
    }
    for (Py_ssize_t j = n - 1; j >= 0; j--) {
        int b = g->bits[j];
        int on = (b & B_END) != 0;
        if (!on && !(b & B_BEGIN)) ROW(g->out, j, q) if (before[g->out.at[q]]) {
                on = 1;
                break;
            }
        before[j] = (char)on;
    }
    for (Py_ssize_t j = 0; j < n; j++) {
        int marker = (g->bits[j] & B_MARKER) != 0;
        if ((after[j] && before[j]) || marker) {
            if (!(g->bits[j] & B_WAITS)) streams[j] = 1;
            if (g->layer[j] != NO_LAYER && (marker || g->sub[j] == Py_None)) g->sub[j] = sub_aux;
        }
    }
}

static PyObject *outputs(G *g, const char *streams)
{
    PyObject *groups = PyList_New(g->n), *subs = PyList_New(g->n), *st = PyList_New(g->n);
    PyObject *attention = PyDict_New(), *out = NULL;
    if (!groups || !subs || !st || !attention) goto done;
    for (Py_ssize_t j = 0; j < g->n; j++) {
        PyObject *gr = g->group[j];
        int L = g->layer[j];
        if (L == NO_LAYER || gr == Py_None) gr = g_other;
        else if (same(gr, g_attention) && L >= 0 && L < g->nlayers && g->mla[L]) gr = g_mla;
        Py_INCREF(gr);
        PyList_SET_ITEM(groups, j, gr);
        Py_INCREF(g->sub[j]);
        PyList_SET_ITEM(subs, j, g->sub[j]);
        PyObject *s = streams[j] ? st_aux : st_main;
        Py_INCREF(s);
        PyList_SET_ITEM(st, j, s);
    }
    for (int L = 0; L < g->nlayers; L++) {
        if (!g->attn[L] && !g->mla[L]) continue;
        PyObject *key = PyLong_FromLong(L);
        int r = key ? PyDict_SetItem(attention, key, g->mla[L] ? g_mla : g_attention) : -1;
        Py_XDECREF(key);
        if (r < 0) goto done;
    }
    out = PyTuple_Pack(4, groups, subs, st, attention);
done:
    Py_XDECREF(groups);
    Py_XDECREF(subs);
    Py_XDECREF(st);
    Py_XDECREF(attention);
    return out;
}

static PyObject *assign_groups(PyObject *mod, PyObject *args)
{
    PyObject *nodes, *layers, *inputs, *consumers, *roles, *target_info, *role_class;
    if (!PyArg_ParseTuple(args, "O!O!OOO!OO:assign_groups", &PyList_Type, &nodes, &PyList_Type,
                          &layers, &inputs, &consumers, &PyDict_Type, &roles, &target_info,
                          &role_class))
        return NULL;
    if (k_call == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_groups.configure() was not called");
        return NULL;
    }
    G g = {0};
    g.n = PyList_GET_SIZE(nodes);
    size_t n1 = (size_t)g.n + 1;
    PyObject *tcache = PyDict_New(), *rcache = PyDict_New(), *result = NULL;
    char *streams = PyMem_Calloc(n1, 1), *after = PyMem_Calloc(n1, 1),
         *before = PyMem_Calloc(n1, 1);
    g.layer = PyMem_Calloc(n1, sizeof(int));
    g.bits = PyMem_Calloc(n1, sizeof(int));
    g.is_call = PyMem_Calloc(n1, 1);
    g.has_weights = PyMem_Calloc(n1, 1);
    g.group = PyMem_Calloc(n1, sizeof(PyObject *));
    g.sub = PyMem_Calloc(n1, sizeof(PyObject *));
    int rc = OK;
    if (!tcache || !rcache || !streams || !after || !before || !g.layer || !g.bits || !g.is_call
            || !g.has_weights || !g.group || !g.sub) {
        if (!PyErr_Occurred()) PyErr_NoMemory();
        rc = FAIL;
    }
    if (rc == OK && PyList_GET_SIZE(layers) != g.n) rc = DECLINE;
    for (Py_ssize_t j = 0; rc == OK && j < g.n; j++) {
        PyObject *v = PyList_GET_ITEM(layers, j);
        long x = PyLong_CheckExact(v) ? PyLong_AsLong(v) : -2;
        if (x < NO_LAYER || x >= MAX_LAYER) {
            PyErr_Clear();
            rc = DECLINE;
        }
        else {
            g.layer[j] = (int)x;
            if (x + 1 > g.nlayers) g.nlayers = (int)x + 1;
        }
    }
    if (rc == OK) rc = rows_from(&g.in, inputs, g.n);
    if (rc == OK) rc = rows_from(&g.out, consumers, g.n);
    if (rc == OK) {
        g.mla = PyMem_Calloc((size_t)g.nlayers + 1, 1);
        g.attn = PyMem_Calloc((size_t)g.nlayers + 1, 1);
        if (!g.mla || !g.attn) {
            PyErr_NoMemory();
            rc = FAIL;
        }
    }
    if (rc == OK) rc = classify(&g, nodes, roles, target_info, role_class, tcache, rcache);
    if (rc == OK) {
        propagate(&g);
        mark_aux(&g, streams, after, before);
        /* the caches own the group/sub strings: build the lists before releasing them */
        result = outputs(&g, streams);
        if (result == NULL) rc = FAIL;
    }
    rows_free(&g.in);
    rows_free(&g.out);
    PyMem_Free(g.layer);
    PyMem_Free(g.bits);
    PyMem_Free(g.is_call);
    PyMem_Free(g.has_weights);
    PyMem_Free(g.group);
    PyMem_Free(g.sub);
    PyMem_Free(g.mla);
    PyMem_Free(g.attn);
    PyMem_Free(streams);
    PyMem_Free(after);
    PyMem_Free(before);
    Py_XDECREF(tcache);
    Py_XDECREF(rcache);
    if (rc == FAIL) return NULL;
    if (rc == DECLINE) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    return result;
}

static PyObject *configure(PyObject *mod, PyObject *args)
{
    PyObject *v[9];
    if (!PyArg_ParseTuple(args, "UUUUUUUUU:configure", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
                          &v[6], &v[7], &v[8]))
        return NULL;
    PyObject **slots[9] = {&k_call, &g_norm, &g_attention, &g_mla, &g_other, &sub_aux, &st_main,
                           &st_aux, &sub_rope};
    for (int i = 0; i < 9; i++) {
        Py_INCREF(v[i]);
        Py_XSETREF(*slots[i], v[i]);
    }
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"assign_groups", assign_groups, METH_VARARGS,
     "assign_groups(nodes, layers, inputs, consumers, roles, target_info, role_class) -> "
     "(groups, sub_groups, streams, attention) | None\n\n"
     "groups.assign_groups on arrays; None: use the reference."},
    {"configure", configure, METH_VARARGS,
     "configure(CALL, NORM, ATTENTION, MLA, OTHER, AUX_STREAM, main, aux, rope)."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_groups",
                                    "Native group passes.", -1, methods};

PyMODINIT_FUNC PyInit__groups(void)
{
    if (!(s_kind = PyUnicode_InternFromString("kind"))
            || !(s_target = PyUnicode_InternFromString("target"))
            || !(s_weights = PyUnicode_InternFromString("weights")))
        return NULL;
    return PyModule_Create(&module);
}
