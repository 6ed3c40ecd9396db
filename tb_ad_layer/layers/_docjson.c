/* Native fast path of tb_ad_layer.layers.document: a layer's node and edge lists as JSON text.
 *
 * encode_nodes(...) writes exactly what json.dumps(..., separators=(",", ":"),
 * ensure_ascii=False) writes for the "nodes" and "edges" lists of document.layer_document (the
 * reference, and the only code that builds the document as Python objects). The converter stores
 * that text, so building tens of megabytes of small dicts only to encode them is skipped.
 *
 * It declines (returns None) on anything it does not expect: a field of another type, a string
 * with no UTF-8 form (a lone surrogate). The caller then falls back to the reference code, so any
 * error is raised there.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>

#define ARGS_SHOWN 2000 /* document.ARGS_SHOWN */

enum { DECLINE = 0, OK = 1, FAIL = -1 }; /* FAIL: a Python exception is set */

/* ---- output buffer ------------------------------------------------------------------------ */

typedef struct {
    char *data;
    size_t len, cap;
} Buf;

static int grow(Buf *b, size_t extra)
{
    if (b->len + extra <= b->cap) return OK;
    size_t cap = b->cap ? b->cap : 1 << 16;
    while (cap < b->len + extra) cap *= 2;
    char *d = PyMem_Realloc(b->data, cap);
    if (d == NULL) {
        PyErr_NoMemory();
        return FAIL;
    }
    b->data = d;
    b->cap = cap;
    return OK;
}

static int put(Buf *b, const char *s, size_t n)
{
    if (grow(b, n) < 0) return FAIL;
    memcpy(b->data + b->len, s, n);
    b->len += n;
    return OK;
}

#define PUT_LIT(b, lit) put((b), (lit), sizeof(lit) - 1)

/* json's ESCAPE_DCT with ensure_ascii=False: '"', '\\' and control characters below 0x20;
 * every other byte of the UTF-8 text is copied as is. */
static const char HEX[] = "0123456789abcdef";

#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL
#define HAS_ZERO(x) (((x) - ONES) & ~(x) & HIGHS)

static int put_escaped(Buf *b, const char *s, Py_ssize_t n)
{
    if (grow(b, (size_t)n * 6 + 2) < 0) return FAIL;
    char *o = b->data + b->len;
    *o++ = '"';
    Py_ssize_t i = 0;
    /* eight bytes at a time while none needs escaping: no byte below 0x20, no '"', no '\\' */
    for (; i + 8 <= n; i += 8) {
        uint64_t v;
        memcpy(&v, s + i, 8);
        if (((v - 0x2020202020202020ULL) & ~v & HIGHS) | HAS_ZERO(v ^ 0x2222222222222222ULL)
                | HAS_ZERO(v ^ 0x5C5C5C5C5C5C5C5CULL))
            break;
        memcpy(o, &v, 8);
        o += 8;
    }
    for (; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\') {
            *o++ = (char)c;
            continue;
        }
        *o++ = '\\';
        switch (c) {
        case '"': *o++ = '"'; break;
        case '\\': *o++ = '\\'; break;
        case '\n': *o++ = 'n'; break;
        case '\r': *o++ = 'r'; break;
        case '\t': *o++ = 't'; break;
        case '\b': *o++ = 'b'; break;
        case '\f': *o++ = 'f'; break;
        default:
            *o++ = 'u';
            *o++ = '0';
            *o++ = '0';
            *o++ = HEX[c >> 4];
            *o++ = HEX[c & 15];
        }
    }
    *o++ = '"';
    b->len = (size_t)(o - b->data);
    return OK;
}

/* A str as a JSON string, None as null; DECLINE for other types or text without UTF-8 form. */
static int put_str(Buf *b, PyObject *s)
{
    if (s == Py_None) return PUT_LIT(b, "null");
    if (!PyUnicode_CheckExact(s)) return DECLINE;
    Py_ssize_t n;
    const char *u = PyUnicode_AsUTF8AndSize(s, &n);
    if (u == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) return FAIL;
        PyErr_Clear();
        return DECLINE;
    }
    return put_escaped(b, u, n);
}

/* A literal (a key with its punctuation) then a str value. */
#define put_kv(b, lit, v) (PUT_LIT((b), lit) < 0 ? FAIL : put_str((b), (v)))

static int put_int(Buf *b, PyObject *v)
{
    if (!PyLong_CheckExact(v)) return DECLINE;
    long long x = PyLong_AsLongLong(v);
    if (x == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return DECLINE;
    }
    char tmp[24], *e = tmp + sizeof tmp, *p = e;
    unsigned long long u = x < 0 ? 0ULL - (unsigned long long)x : (unsigned long long)x;
    do {
        *--p = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (x < 0) *--p = '-';
    return put(b, p, (size_t)(e - p));
}

/* ---- node fields -------------------------------------------------------------------------- */

static PyObject *s_name, *s_kind, *s_target, *s_shape, *s_dtype, *s_inputs, *s_weights, *s_args,
    *s_line;

/* Where one attribute lives in instances of one class: Node and Weight are slots dataclasses,
 * and reading a slot directly is several times cheaper than the attribute protocol. */
typedef struct {
    PyTypeObject *type;
    unsigned int version; /* the class's tp_version_tag: any change to the class resets it */
    Py_ssize_t offset;
} Slot;

static Slot sl_name, sl_kind, sl_target, sl_shape, sl_dtype, sl_inputs, sl_weights, sl_args,
    sl_line, sl_wshape, sl_wdtype;

/* The attribute as a new reference, or NULL with an exception set. */
static PyObject *field_at(PyObject *o, PyObject *name, Slot *sl)
{
    PyTypeObject *tp = Py_TYPE(o);
    if (tp == sl->type && tp->tp_version_tag == sl->version
            && PyType_HasFeature(tp, Py_TPFLAGS_VALID_VERSION_TAG)) {
        PyObject *v = *(PyObject **)((char *)o + sl->offset);
        if (v != NULL) {
            Py_INCREF(v);
            return v;
        }
    }
    else if (PyType_HasFeature(tp, Py_TPFLAGS_VALID_VERSION_TAG) || PyType_Ready(tp) == 0) {
        PyObject *d = _PyType_Lookup(tp, name); /* borrowed; also assigns the version tag */
        if (d != NULL && Py_IS_TYPE(d, &PyMemberDescr_Type)
                && ((PyMemberDescrObject *)d)->d_member->type == T_OBJECT_EX
                && PyType_HasFeature(tp, Py_TPFLAGS_VALID_VERSION_TAG)
                && tp->tp_getattro == PyObject_GenericGetAttr) {
            Py_INCREF(tp);
            Py_XSETREF(sl->type, tp);
            sl->version = tp->tp_version_tag;
            sl->offset = ((PyMemberDescrObject *)d)->d_member->offset;
        }
    }
    return PyObject_GetAttr(o, name);
}

#define field(o, attr) field_at((o), s_##attr, &sl_##attr)

#define TRY(expr)                                                                              \
    do {                                                                                       \
        int r_ = (expr);                                                                       \
        if (r_ != OK) {                                                                        \
            rc = r_;                                                                           \
            goto done;                                                                         \
        }                                                                                      \
    } while (0)

typedef struct {
    PyObject *nodes;     /* list of Node */
    PyObject *producers; /* Graph.topology()[0]: positions of each node's inputs */
    PyObject *weights;   /* dict name -> Weight */
    PyObject *ext;       /* dict external-input id -> shape, or NULL: keep every input, no edges */
    char *in_layer;      /* per node position: computed by the layer being written */
    PyObject *labels;    /* dict target -> friendly name (filled on miss) */
    PyObject *friendly;
} Ctx;

static int put_label(Buf *b, Ctx *c, PyObject *target)
{
    PyObject *label = PyDict_GetItemWithError(c->labels, target); /* borrowed */
    if (label == NULL) {
        if (PyErr_Occurred()) return FAIL;
        label = PyObject_CallOneArg(c->friendly, target);
        if (label == NULL) return FAIL;
        int r = PyDict_SetItem(c->labels, target, label);
        Py_DECREF(label);
        if (r < 0) return FAIL;
    }
    return put_str(b, label);
}

/* One weight as {"name":..,"shape":..,"dtype":..}. */
static int put_weight(Buf *b, Ctx *c, PyObject *w)
{
    PyObject *wt = PyDict_GetItemWithError(c->weights, w); /* borrowed */
    if (wt == NULL) return PyErr_Occurred() ? FAIL : DECLINE;
    PyObject *shape = NULL, *dtype = NULL;
    int rc = OK;
    shape = field_at(wt, s_shape, &sl_wshape);
    dtype = shape ? field_at(wt, s_dtype, &sl_wdtype) : NULL;
    if (dtype == NULL) {
        rc = FAIL;
        goto done;
    }
    TRY(put_kv(b, "{\"name\":", w));
    TRY(put_kv(b, ",\"shape\":", shape));
    TRY(put_kv(b, ",\"dtype\":", dtype));
    TRY(PUT_LIT(b, "}"));
done:
    Py_XDECREF(shape);
    Py_XDECREF(dtype);
    return rc;
}

/* One edge {"from":src,"to":dst,"shape":...}. */
static int put_edge(Buf *e, PyObject *src, PyObject *dst, PyObject *shape)
{
    if (e->len > 1 && PUT_LIT(e, ",") < 0) return FAIL;
    int rc = OK;
    TRY(put_kv(e, "{\"from\":", src));
    TRY(put_kv(e, ",\"to\":", dst));
    TRY(put_kv(e, ",\"shape\":", shape));
    TRY(PUT_LIT(e, "}"));
done:
    return rc;
}

static int put_sep(Buf *b, int *first)
{
    if (*first) {
        *first = 0;
        return OK;
    }
    return PUT_LIT(b, ",");
}

/* The inputs a layer document shows for node j: the producers the layer computes or lists as
 * external inputs (the producer's shape on the edge), then the weights that are external inputs
 * of the layer (their own shape). Without ext (nodes outside layers) every input, no edges. */
static int put_inputs(Buf *b, Buf *e, Ctx *c, Py_ssize_t j, PyObject *to, PyObject *inputs,
                      PyObject *weights)
{
    PyObject *row = PyList_GET_ITEM(c->producers, j);
    Py_ssize_t n = PyList_GET_SIZE(c->nodes);
    if (!PyList_CheckExact(row) || PyList_GET_SIZE(row) != PyTuple_GET_SIZE(inputs)) return DECLINE;
    int first = 1;
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(inputs); k++) {
        PyObject *name = PyTuple_GET_ITEM(inputs, k), *pos = PyList_GET_ITEM(row, k);
        Py_ssize_t i = PyLong_CheckExact(pos) ? PyLong_AsSsize_t(pos) : -1;
        if (i < 0 || i >= n) {
            PyErr_Clear();
            return DECLINE;
        }
        if (c->ext != NULL && !c->in_layer[i]) {
            int in = PyDict_Contains(c->ext, name);
            if (in <= 0) {
                if (in < 0) return FAIL;
                continue;
            }
        }
        int r = put_sep(b, &first);
        if (r == OK) r = put_str(b, name);
        if (r == OK && c->ext != NULL) {
            PyObject *shape = field(PyList_GET_ITEM(c->nodes, i), shape);
            r = shape ? put_edge(e, name, to, shape) : FAIL;
            Py_XDECREF(shape);
        }
        if (r != OK) return r;
    }
    for (Py_ssize_t k = 0; c->ext != NULL && k < PyTuple_GET_SIZE(weights); k++) {
        PyObject *w = PyTuple_GET_ITEM(weights, k);
        PyObject *shape = PyDict_GetItemWithError(c->ext, w); /* borrowed */
        if (shape == NULL) {
            if (PyErr_Occurred()) return FAIL;
            continue;
        }
        int r = put_sep(b, &first);
        if (r == OK) r = put_str(b, w);
        if (r == OK) r = put_edge(e, w, to, shape);
        if (r != OK) return r;
    }
    return OK;
}

/* Node j's record into b and its edges into e. */
static int put_node(Buf *b, Buf *e, Ctx *c, Py_ssize_t j, PyObject *group, PyObject *sub,
                    PyObject *stream)
{
    PyObject *node = PyList_GET_ITEM(c->nodes, j);
    PyObject *name = NULL, *kind = NULL, *target = NULL, *shape = NULL, *dtype = NULL,
             *inputs = NULL, *weights = NULL, *args = NULL, *line = NULL, *cut = NULL;
    int rc = OK;
    if (!(name = field(node, name)) || !(kind = field(node, kind))
            || !(target = field(node, target)) || !(shape = field(node, shape))
            || !(dtype = field(node, dtype)) || !(inputs = field(node, inputs))
            || !(weights = field(node, weights)) || !(args = field(node, args))
            || !(line = field(node, line))) {
        rc = FAIL;
        goto done;
    }
    if (!PyUnicode_CheckExact(target) || !PyUnicode_CheckExact(args) || !PyTuple_CheckExact(inputs)
            || !PyTuple_CheckExact(weights)) {
        rc = DECLINE;
        goto done;
    }
    int has_target = PyUnicode_GET_LENGTH(target) > 0;
    TRY(put_kv(b, "{\"id\":", name));
    TRY(put_kv(b, ",\"op\":", has_target ? target : kind));
    TRY(PUT_LIT(b, ",\"label\":"));
    TRY(has_target ? put_label(b, c, target) : put_str(b, kind));
    TRY(put_kv(b, ",\"node_kind\":", kind));
    TRY(put_kv(b, ",\"shape\":", shape));
    TRY(put_kv(b, ",\"dtype\":", dtype));
    TRY(put_kv(b, ",\"group\":", group));
    TRY(put_kv(b, ",\"sub_group\":", sub));
    TRY(put_kv(b, ",\"stream\":", stream));

    /* inputs: producers the layer shows, then weights that are external inputs of the layer */
    TRY(PUT_LIT(b, ",\"inputs\":["));
    TRY(put_inputs(b, e, c, j, name, inputs, weights));
    TRY(PUT_LIT(b, "],\"weights\":["));
    int first = 1;
    Py_ssize_t nw = PyTuple_GET_SIZE(weights);
    for (Py_ssize_t k = 0; k < nw; k++) {
        PyObject *w = PyTuple_GET_ITEM(weights, k);
        if (c->ext != NULL) {
            int in = PyDict_Contains(c->ext, w);
            if (in < 0) {
                rc = FAIL;
                goto done;
            }
            if (in) continue;
        }
        if (!first) TRY(PUT_LIT(b, ","));
        first = 0;
        TRY(put_weight(b, c, w));
    }
    TRY(PUT_LIT(b, "],\"args\":"));
    if (PyUnicode_GET_LENGTH(args) > ARGS_SHOWN) {
        cut = PyUnicode_Substring(args, 0, ARGS_SHOWN);
        if (cut == NULL) {
            rc = FAIL;
            goto done;
        }
        TRY(put_str(b, cut));
    }
    else
        TRY(put_str(b, args));
    TRY(PUT_LIT(b, ",\"line\":"));
    TRY(put_int(b, line));
    TRY(PUT_LIT(b, ",\"kernels\":[],\"time_us\":0.0}"));
done:
    Py_XDECREF(name);
    Py_XDECREF(kind);
    Py_XDECREF(target);
    Py_XDECREF(shape);
    Py_XDECREF(dtype);
    Py_XDECREF(inputs);
    Py_XDECREF(weights);
    Py_XDECREF(args);
    Py_XDECREF(line);
    Py_XDECREF(cut);
    return rc;
}

static PyObject *to_str(Buf *b)
{
    return PyUnicode_DecodeUTF8(b->data, (Py_ssize_t)b->len, "strict");
}

static PyObject *encode_nodes(PyObject *mod, PyObject *args)
{
    PyObject *group, *sub, *stream, *ext, *members, *result = NULL;
    Ctx c = {0};
    if (!PyArg_ParseTuple(args, "O!O!O!O!O!O!O!OO!O:encode_nodes", &PyList_Type, &c.nodes,
                          &PyList_Type, &members, &PyList_Type, &group, &PyList_Type, &sub,
                          &PyList_Type, &stream, &PyDict_Type, &c.weights, &PyList_Type,
                          &c.producers, &ext, &PyDict_Type, &c.labels, &c.friendly))
        return NULL;
    if (ext != Py_None && !PyDict_Check(ext)) {
        PyErr_SetString(PyExc_TypeError, "encode_nodes: ext must be a dict or None");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(c.nodes);
    if (PyList_GET_SIZE(group) != n || PyList_GET_SIZE(sub) != n || PyList_GET_SIZE(stream) != n
            || PyList_GET_SIZE(c.producers) != n) {
        PyErr_SetString(PyExc_ValueError,
                        "encode_nodes: group/sub/stream/producers must parallel nodes");
        return NULL;
    }
    Buf b = {0}, e = {0};
    int rc = OK;
    Py_ssize_t m = PyList_GET_SIZE(members);
    c.ext = ext == Py_None ? NULL : ext;
    c.in_layer = PyMem_Calloc((size_t)n + 1, 1);
    if (c.in_layer == NULL) {
        PyErr_NoMemory();
        rc = FAIL;
        goto done;
    }
    /* members, checked once, so the loops below index safely */
    for (Py_ssize_t k = 0; k < m; k++) {
        PyObject *jo = PyList_GET_ITEM(members, k);
        Py_ssize_t j = PyLong_CheckExact(jo) ? PyLong_AsSsize_t(jo) : -1;
        if (j < 0 || j >= n) {
            PyErr_Clear();
            rc = DECLINE;
            goto done;
        }
        c.in_layer[j] = 1;
    }
    TRY(PUT_LIT(&b, "["));
    TRY(PUT_LIT(&e, "["));
    for (Py_ssize_t k = 0; k < m; k++) {
        Py_ssize_t j = PyLong_AsSsize_t(PyList_GET_ITEM(members, k));
        if (k) TRY(PUT_LIT(&b, ","));
        TRY(put_node(&b, &e, &c, j, PyList_GET_ITEM(group, j), PyList_GET_ITEM(sub, j),
                     PyList_GET_ITEM(stream, j)));
    }
    TRY(PUT_LIT(&b, "]"));
    TRY(PUT_LIT(&e, "]"));
    PyObject *nt = to_str(&b);
    PyObject *et = nt ? to_str(&e) : NULL;
    if (et != NULL) result = PyTuple_Pack(2, nt, et);
    Py_XDECREF(nt);
    Py_XDECREF(et);
    if (result == NULL) rc = FAIL;
done:
    PyMem_Free(b.data);
    PyMem_Free(e.data);
    PyMem_Free(c.in_layer);
    if (rc == FAIL) {
        Py_XDECREF(result);
        return NULL;
    }
    if (rc == DECLINE) {
        Py_XDECREF(result);
        Py_RETURN_NONE;
    }
    return result;
}

static PyMethodDef methods[] = {
    {"encode_nodes", encode_nodes, METH_VARARGS,
     "encode_nodes(nodes, members, group, sub_group, stream, weights, producers, ext, labels, "
     "friendly) -> (nodes_json, edges_json) | None\n\n"
     "The 'nodes' and 'edges' lists of document.layer_document as compact JSON text. ext maps "
     "the layer's external input ids to shapes; None keeps every input and writes no edges. "
     "labels caches friendly(target). None means: use the reference code."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_docjson",
                                    "Native JSON encoder of layer documents.", -1, methods};

PyMODINIT_FUNC PyInit__docjson(void)
{
    if (!(s_name = PyUnicode_InternFromString("name"))
            || !(s_kind = PyUnicode_InternFromString("kind"))
            || !(s_target = PyUnicode_InternFromString("target"))
            || !(s_shape = PyUnicode_InternFromString("shape"))
            || !(s_dtype = PyUnicode_InternFromString("dtype"))
            || !(s_inputs = PyUnicode_InternFromString("inputs"))
            || !(s_weights = PyUnicode_InternFromString("weights"))
            || !(s_args = PyUnicode_InternFromString("args"))
            || !(s_line = PyUnicode_InternFromString("line")))
        return NULL;
    return PyModule_Create(&module);
}
