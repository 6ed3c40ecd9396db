/* Native fast path of tb_ad_layer.layers.weights.weight_table: each weight name's layer and role.
 *
 * weight_table(names, layer_of, role_of) returns the (layers, roles) dicts of the Python
 * function. Names made of [A-Za-z0-9_.] only are matched here against the two patterns of
 * weights.py, written out by hand with the regex engine's order of tries:
 *
 *   _LAYER = (?:^|[_.])(?:layers|layer|h|blocks)[_.](\d+)(?=[_.]|$)      searched
 *   _FUSED = ^_?fused_(?:[A-Za-z]\w*?_)?(\d+)(?=_|$)                    matched at 0
 *
 * Any other name (non-ASCII digits are \d too, and "$" also matches before a final newline) is
 * answered by layer_of(name) and role_of(name), the Python functions, which are the reference.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

static int is_digit(char c) { return c >= '0' && c <= '9'; }
static int is_alpha(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }
static int is_word(char c) { return is_alpha(c) || is_digit(c) || c == '_'; }
static int is_sep(char c) { return c == '_' || c == '.'; }

/* Where a pattern matched: the digits are s[d0:d1]. */
typedef struct {
    Py_ssize_t d0, d1;
} Hit;

static const char *WORDS[] = {"layers", "layer", "h", "blocks"};

static int search_layer(const char *s, Py_ssize_t n, Hit *hit)
{
    for (Py_ssize_t p = 0; p < n; p++) {
        if (p > 0 && !is_sep(s[p - 1])) continue;
        for (int w = 0; w < 4; w++) {
            Py_ssize_t k = (Py_ssize_t)strlen(WORDS[w]);
            if (p + k >= n || memcmp(s + p, WORDS[w], (size_t)k) != 0 || !is_sep(s[p + k]))
                continue;
            Py_ssize_t q = p + k + 1, r = q;
            while (r < n && is_digit(s[r])) r++;
            if (r > q && (r == n || is_sep(s[r]))) {
                hit->d0 = q;
                hit->d1 = r;
                return 1;
            }
        }
    }
    return 0;
}

static int digits_at(const char *s, Py_ssize_t n, Py_ssize_t q, Hit *hit)
{
    Py_ssize_t r = q;
    while (r < n && is_digit(s[r])) r++;
    if (r > q && (r == n || s[r] == '_')) {
        hit->d0 = q;
        hit->d1 = r;
        return 1;
    }
    return 0;
}

static int match_fused(const char *s, Py_ssize_t n, Hit *hit)
{
    Py_ssize_t p = (n > 0 && s[0] == '_') ? 1 : 0;
    if (n - p < 6 || memcmp(s + p, "fused_", 6) != 0) return 0;
    Py_ssize_t q = p + 6;
    if (q < n && is_alpha(s[q])) {
        /* the optional group, tried first: a letter, as few word characters as possible, '_' */
        for (Py_ssize_t k = q + 1; k < n && is_word(s[k]); k++)
            if (s[k] == '_' && digits_at(s, n, k + 1, hit)) return 1;
    }
    return digits_at(s, n, q, hit);
}

static int plain(const char *s, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; i < n; i++)
        if (!is_word(s[i]) && s[i] != '.') return 0;
    return 1;
}

/* layer and role of one plain name; new references in *layer and *role. A role repeats in every
 * layer (one weight per layer, expert and projection), so one str per distinct role is kept in
 * `seen` and shared. */
static int one(PyObject *name, const char *s, Py_ssize_t n, PyObject **layer, PyObject **role,
               PyObject *seen)
{
    Hit h;
    if (search_layer(s, n, &h)) {
        Py_ssize_t e = h.d1;
        while (e < n && is_sep(s[e])) e++; /* .lstrip("_.") */
        *role = PyUnicode_FromStringAndSize(s + e, n - e);
    }
    else if (match_fused(s, n, &h)) {
        char *buf = PyMem_Malloc((size_t)n + 2);
        if (buf == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        memcpy(buf, s, (size_t)h.d0);
        buf[h.d0] = 'N';
        memcpy(buf + h.d0 + 1, s + h.d1, (size_t)(n - h.d1));
        *role = PyUnicode_FromStringAndSize(buf, h.d0 + 1 + (n - h.d1));
        PyMem_Free(buf);
    }
    else {
        Py_INCREF(Py_None);
        *layer = Py_None;
        Py_INCREF(name);
        *role = name;
        return 0;
    }
    if (*role == NULL) return -1;
    PyObject *shared = PyDict_SetDefault(seen, *role, *role); /* borrowed */
    if (shared == NULL) {
        Py_CLEAR(*role);
        return -1;
    }
    Py_INCREF(shared);
    Py_SETREF(*role, shared);
    Py_ssize_t k = h.d1 - h.d0;
    if (k <= 18) {
        long long v = 0;
        for (Py_ssize_t i = h.d0; i < h.d1; i++) v = v * 10 + (s[i] - '0');
        *layer = PyLong_FromLongLong(v);
    }
    else {
        PyObject *digits = PyUnicode_FromStringAndSize(s + h.d0, k);
        *layer = digits ? PyLong_FromUnicodeObject(digits, 10) : NULL;
        Py_XDECREF(digits);
    }
    if (*layer == NULL) {
        Py_CLEAR(*role);
        return -1;
    }
    return 0;
}

static PyObject *weight_table(PyObject *mod, PyObject *args)
{
    PyObject *names, *layer_of, *role_of;
    if (!PyArg_ParseTuple(args, "OOO:weight_table", &names, &layer_of, &role_of)) return NULL;
    PyObject *it = PyObject_GetIter(names);
    if (it == NULL) return NULL;
    /* sized for every name at once: growing a dict of 400k names step by step copies it often */
    Py_ssize_t hint = PyDict_Check(names) ? PyDict_GET_SIZE(names) : 0;
    PyObject *layers = _PyDict_NewPresized(hint), *roles = _PyDict_NewPresized(hint),
             *seen = PyDict_New(), *name;
    if (layers == NULL || roles == NULL || seen == NULL) goto fail;
    while ((name = PyIter_Next(it)) != NULL) {
        PyObject *layer = NULL, *role = NULL;
        Py_ssize_t n;
        const char *s = PyUnicode_CheckExact(name) && PyUnicode_IS_ASCII(name)
                        ? PyUnicode_AsUTF8AndSize(name, &n) : NULL;
        int r;
        if (s != NULL && plain(s, n)) {
            r = one(name, s, n, &layer, &role, seen);
        }
        else {
            layer = PyObject_CallOneArg(layer_of, name);
            role = layer ? PyObject_CallOneArg(role_of, name) : NULL;
            r = role ? 0 : -1;
        }
        if (r == 0) r = PyDict_SetItem(layers, name, layer);
        if (r == 0) r = PyDict_SetItem(roles, name, role);
        Py_XDECREF(layer);
        Py_XDECREF(role);
        Py_DECREF(name);
        if (r < 0) goto fail;
    }
    if (PyErr_Occurred()) goto fail;
    Py_DECREF(it);
    Py_DECREF(seen);
    PyObject *out = PyTuple_Pack(2, layers, roles);
    Py_DECREF(layers);
    Py_DECREF(roles);
    return out;
fail:
    Py_DECREF(it);
    Py_XDECREF(seen);
    Py_XDECREF(layers);
    Py_XDECREF(roles);
    return NULL;
}

static PyMethodDef methods[] = {
    {"weight_table", weight_table, METH_VARARGS,
     "weight_table(names, layer_of, role_of) -> (layers, roles)\n\n"
     "weights.weight_table; names that are not plain ASCII go to layer_of/role_of."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_weights",
                                    "Native weight-name table.", -1, methods};

PyMODINIT_FUNC PyInit__weights(void) { return PyModule_Create(&module); }
