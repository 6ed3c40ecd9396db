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
    PyObject *weights; /* dict name -> Weight */
    PyObject *by_name; /* dict name -> Node */
    PyObject *ext;     /* dict external-input id -> shape, or NULL: keep every input, no edges */
    PyObject *allowed; /* set of names an input may have, or NULL */
    PyObject *labels;  /* dict target -> friendly name (filled on miss) */
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

/* One edge {"from":src,"to":dst,"shape":...}: the producer node's shape, else the external
 * input's. */
static int put_edge(Buf *e, Ctx *c, PyObject *src, PyObject *dst)
{
    PyObject *shape;
    PyObject *node = PyDict_GetItemWithError(c->by_name, src); /* borrowed */
    if (node != NULL) {
        shape = field(node, shape);
        if (shape == NULL) return FAIL;
    }
    else {
        if (PyErr_Occurred()) return FAIL;
        shape = PyDict_GetItemWithError(c->ext, src);
        if (shape == NULL) return PyErr_Occurred() ? FAIL : DECLINE;
        Py_INCREF(shape);
    }
    int rc = OK;
    if (e->len > 1) TRY(PUT_LIT(e, ","));
    TRY(put_kv(e, "{\"from\":", src));
    TRY(put_kv(e, ",\"to\":", dst));
    TRY(put_kv(e, ",\"shape\":", shape));
    TRY(PUT_LIT(e, "}"));
done:
    Py_DECREF(shape);
    return rc;
}

/* The items of a tuple that pass contains(filter, item) (all of them without a filter), as
 * JSON strings continuing a list; each also gets an edge to node `to` when the layer has edges. */
static int put_inputs(Buf *b, Buf *e, Ctx *c, PyObject *items, PyObject *filter,
                      int (*contains)(PyObject *, PyObject *), PyObject *to, int *first)
{
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(items); k++) {
        PyObject *item = PyTuple_GET_ITEM(items, k);
        int in = filter != NULL ? contains(filter, item) : 1;
        if (in < 0) return FAIL;
        if (!in) continue;
        if (!*first && PUT_LIT(b, ",") < 0) return FAIL;
        *first = 0;
        int r = put_str(b, item);
        if (r == OK && c->ext != NULL) r = put_edge(e, c, item, to);
        if (r != OK) return r;
    }
    return OK;
}

/* Node j's record into b and its edges into e. */
static int put_node(Buf *b, Buf *e, Ctx *c, PyObject *node, PyObject *group, PyObject *sub,
                    PyObject *stream)
{
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
    int first = 1;
    Py_ssize_t nw = PyTuple_GET_SIZE(weights);
    TRY(put_inputs(b, e, c, inputs, c->allowed, PySet_Contains, name, &first));
    if (c->ext != NULL) TRY(put_inputs(b, e, c, weights, c->ext, PyDict_Contains, name, &first));
    TRY(PUT_LIT(b, "],\"weights\":["));
    first = 1;
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

static PyObject *to_str(Buf *b) { return PyUnicode_DecodeUTF8(b->data, (Py_ssize_t)b->len, "strict"); }

static PyObject *encode_nodes(PyObject *mod, PyObject *args)
{
    PyObject *nodes, *members, *group, *sub, *stream, *ext, *result = NULL;
    Ctx c = {0};
    if (!PyArg_ParseTuple(args, "O!O!O!O!O!O!O!OO!O:encode_nodes", &PyList_Type, &nodes,
                          &PyList_Type, &members, &PyList_Type, &group, &PyList_Type, &sub,
                          &PyList_Type, &stream, &PyDict_Type, &c.weights, &PyDict_Type,
                          &c.by_name, &ext, &PyDict_Type, &c.labels, &c.friendly))
        return NULL;
    if (ext != Py_None && !PyDict_Check(ext)) {
        PyErr_SetString(PyExc_TypeError, "encode_nodes: ext must be a dict or None");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(nodes);
    if (PyList_GET_SIZE(group) != n || PyList_GET_SIZE(sub) != n || PyList_GET_SIZE(stream) != n) {
        PyErr_SetString(PyExc_ValueError, "encode_nodes: group/sub/stream must parallel nodes");
        return NULL;
    }
    Buf b = {0}, e = {0};
    int rc = OK;
    Py_ssize_t m = PyList_GET_SIZE(members);
    if (ext != Py_None) {
        c.ext = ext;
        /* an input is shown when the layer computes it or lists it as an external input */
        c.allowed = PySet_New(ext);
        if (c.allowed == NULL) {
            rc = FAIL;
            goto done;
        }
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
        if (c.allowed != NULL) {
            PyObject *name = field(PyList_GET_ITEM(nodes, j), name);
            if (name == NULL) {
                rc = FAIL;
                goto done;
            }
            int r = PySet_Add(c.allowed, name);
            Py_DECREF(name);
            if (r < 0) {
                rc = FAIL;
                goto done;
            }
        }
    }
    TRY(PUT_LIT(&b, "["));
    TRY(PUT_LIT(&e, "["));
    for (Py_ssize_t k = 0; k < m; k++) {
        Py_ssize_t j = PyLong_AsSsize_t(PyList_GET_ITEM(members, k));
        if (k) TRY(PUT_LIT(&b, ","));
        TRY(put_node(&b, &e, &c, PyList_GET_ITEM(nodes, j), PyList_GET_ITEM(group, j),
                     PyList_GET_ITEM(sub, j), PyList_GET_ITEM(stream, j)));
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
    Py_XDECREF(c.allowed);
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
     "encode_nodes(nodes, members, group, sub_group, stream, weights, by_name, ext, labels, "
     "friendly) -> (nodes_json, edges_json) | None\n\n"
     "The 'nodes' and 'edges' lists of document.layer_document as compact JSON text. ext maps "
     "the layer's external input ids to shapes; None keeps every input and writes no edges. "
     "labels caches friendly(target). None means: use the reference code."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_docjson",
                                    "Native JSON encoder of layer documents.", -1, methods};

PyMODINIT_FUNC PyInit__docjson(void)
{
    if (!(s_name = PyUnicode_InternFromString("name")) || !(s_kind = PyUnicode_InternFromString("kind"))
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
