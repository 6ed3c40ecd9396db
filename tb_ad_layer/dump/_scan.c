/* Native fast path of tb_ad_layer.dump.reader: one GraphModule section -> Node/Weight objects.
 *
 * scan_section(lines, start) does what reader._parse_section + reader._resolve do, for the plain
 * well-formed case only; lines is a list of str, or an ASCII file's bytes given as
 * scan_section(data, start, line_starts(data)) so that it never has to be split into str lines.
 * For anything else (non-ASCII text, a line the Python code would reject, a duplicate or forward
 * reference, a second output line, ...) it returns None, "declines", and
 * the Python code parses the section again: it is the reference, and every error message comes
 * from it. Declining is always safe, so when in doubt this file declines.
 *
 * Lines are checked to be ASCII, so a str's data is read as bytes and the character classes below
 * give the Python regex/str semantics exactly (\w, \s, str.isspace, str.isidentifier).
 *
 * The result: (end, nodes, weights, outputs, (inputs, consumers)) where end is the index of the
 * line that ended the section, nodes the list of Node objects, weights the dict name -> Weight in
 * the insertion order of the Python code, outputs the output line's names, and (inputs, consumers)
 * the value of Graph.topology(). Node and Weight are created without running their __init__
 * (plain slots dataclasses, checked by configure()): that is 8x cheaper than calling the class.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>

#define BANNER_LEN 80
#define ARGS_KEPT 1000 /* reader._ARGS_KEPT */

enum { DECLINE = 0, OK = 1, FAIL = -1 }; /* FAIL: a Python exception is set */

/* ---- character classes: Python's meaning, restricted to ASCII ---------------------------- */

enum {
    WORD = 1,      /* \w: [A-Za-z0-9_] */
    IDSTART = 2,   /* [A-Za-z_] */
    SPACE = 4,     /* \s and str.isspace(): \t\n\v\f\r, \x1c-\x1f, space */
    SHAPECH = 8,   /* [^\s,()\[\]:], a shape printed without parentheses */
    DTYPECH = 16,  /* [\w./], a dtype printed without parentheses */
    NOTBEFORE = 32 /* [\w.%'"], may not precede a bare name in a list (_BARE's look-behind) */
};
static unsigned char cc[256];
#define IS(c, k) (cc[(unsigned char)(c)] & (k))

static void init_classes(void)
{
    for (int c = 0; c < 128; c++) {
        int alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
        int is_digit = c >= '0' && c <= '9';
        int space = (c >= 9 && c <= 13) || (c >= 28 && c <= 32);
        unsigned char k = 0;
        if (alpha || is_digit || c == '_') k |= WORD | DTYPECH | NOTBEFORE;
        if (alpha || c == '_') k |= IDSTART;
        if (space) k |= SPACE;
        if (!space && (c == 0 || !strchr(",()[]:", c))) k |= SHAPECH; /* NUL too, as in re */
        if (c == '.' || c == '/') k |= DTYPECH;
        if (c == '.' || c == '%' || c == '\'' || c == '"') k |= NOTBEFORE;
        cc[c] = k;
    }
}

typedef struct { Py_ssize_t a, b; } Span; /* s[a:b] */

/* Make the array *arr (capacity *cap elements of elem bytes) hold at least need elements,
 * doubling from first; the one growth rule of every array here. */
static int grow(void **arr, Py_ssize_t *cap, size_t elem, Py_ssize_t need, Py_ssize_t first)
{
    if (need <= *cap) return OK;
    Py_ssize_t c = *cap ? *cap : first;
    while (c < need) c *= 2;
    void *p = PyMem_Realloc(*arr, (size_t)c * elem);
    if (p == NULL) {
        PyErr_NoMemory();
        return FAIL;
    }
    *arr = p;
    *cap = c;
    return OK;
}

static Py_ssize_t span_len(Span x) { return x.b - x.a; }

static int is_identifier(const char *s, Span x)
{
    if (x.b <= x.a || !IS(s[x.a], IDSTART)) return 0;
    for (Py_ssize_t i = x.a + 1; i < x.b; i++)
        if (!IS(s[i], WORD)) return 0;
    return 1;
}

/* Python's str.isspace() on a non-empty line. */
static int all_space(const char *s, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; i < n; i++)
        if (!IS(s[i], SPACE)) return 0;
    return 1;
}

static int is_sep(const char *s, Py_ssize_t p, Py_ssize_t end) /* " : " at s[p] */
{
    return p + 3 <= end && s[p] == ' ' && s[p + 1] == ':' && s[p + 2] == ' ';
}

/* Start of the last " : " lying wholly inside s[a:b], or -1 (str.rsplit's search). */
static Py_ssize_t rfind_sep(const char *s, Py_ssize_t a, Py_ssize_t b)
{
    for (Py_ssize_t p = b - 3; p >= a; p--)
        if (s[p + 1] == ':' && s[p] == ' ' && s[p + 2] == ' ') return p;
    return -1;
}

/* Start of the first " = " inside s[a:b], or -1. */
static Py_ssize_t find_eq(const char *s, Py_ssize_t a, Py_ssize_t b)
{
    for (Py_ssize_t p = a; p + 3 <= b; p++)
        if (s[p + 1] == '=' && s[p] == ' ' && s[p + 2] == ' ') return p;
    return -1;
}

/* ---- string table: bytes -> small integer id --------------------------------------------- */

/* Open addressing, power-of-two size, at most half full. A key either owns a str holding its
 * bytes (and points into it) or borrows bytes that outlive the table. */
typedef struct { uint64_t hash; Py_ssize_t id; } Slot;
typedef struct { const char *s; Py_ssize_t len; PyObject *str; } Key;
typedef struct {
    Slot *slots;
    size_t mask;
    Key *keys;
    Py_ssize_t n, cap;
} Table;

/* Eight bytes at a time (names are 20-70 characters), then a final mix so that the low bits,
 * which pick the slot, depend on every byte. */
static uint64_t hash_bytes(const char *s, Py_ssize_t n)
{
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ (uint64_t)n, w;
    for (; n >= 8; s += 8, n -= 8) {
        memcpy(&w, s, 8);
        h = (h ^ w) * 0xFF51AFD7ED558CCDULL;
        h ^= h >> 32;
    }
    w = 0;
    memcpy(&w, s, (size_t)n);
    h = (h ^ w) * 0xC4CEB9FE1A85EC53ULL;
    h ^= h >> 33;
    h *= 0xFF51AFD7ED558CCDULL;
    return h ^ (h >> 33);
}

/* A new exact str holding the ASCII bytes s[0:n]. */
static PyObject *ascii_str(const char *s, Py_ssize_t n)
{
    PyObject *o = PyUnicode_New(n, 127);
    if (o != NULL && n > 0) memcpy(PyUnicode_DATA(o), s, (size_t)n);
    return o;
}

static void table_free(Table *t)
{
    for (Py_ssize_t i = 0; i < t->n; i++) Py_XDECREF(t->keys[i].str);
    PyMem_Free(t->slots);
    PyMem_Free(t->keys);
    memset(t, 0, sizeof *t);
}

static void table_place(Table *t, uint64_t hash, Py_ssize_t id)
{
    size_t i = (size_t)hash & t->mask;
    while (t->slots[i].id >= 0) i = (i + 1) & t->mask;
    t->slots[i].hash = hash;
    t->slots[i].id = id;
}

static int table_grow(Table *t)
{
    size_t size = t->slots ? (t->mask + 1) * 2 : 256;
    Slot *old = t->slots;
    size_t old_size = old ? t->mask + 1 : 0;
    t->slots = PyMem_Malloc(size * sizeof(Slot));
    if (t->slots == NULL) {
        t->slots = old;
        PyErr_NoMemory();
        return FAIL;
    }
    for (size_t i = 0; i < size; i++) t->slots[i].id = -1;
    t->mask = size - 1;
    for (size_t i = 0; i < old_size; i++)
        if (old[i].id >= 0) table_place(t, old[i].hash, old[i].id);
    PyMem_Free(old);
    return OK;
}

/* The id of s[0:n], or -1 if absent. */
static Py_ssize_t table_find(const Table *t, const char *s, Py_ssize_t n, uint64_t hash)
{
    if (t->slots == NULL) return -1;
    for (size_t i = (size_t)hash & t->mask;; i = (i + 1) & t->mask) {
        const Slot *sl = &t->slots[i];
        if (sl->id < 0) return -1;
        const Key *k = &t->keys[sl->id];
        if (sl->hash == hash && k->len == n && memcmp(k->s, s, (size_t)n) == 0) return sl->id;
    }
}

/* The id of s[0:n], adding it (*added = 1) if absent; -1 with an exception set on failure.
 * With own_str the new key gets its own str; else it borrows s. */
static Py_ssize_t table_get(Table *t, const char *s, Py_ssize_t n, int own_str, int *added)
{
    uint64_t hash = hash_bytes(s, n);
    Py_ssize_t id = table_find(t, s, n, hash);
    *added = 0;
    if (id >= 0) return id;
    if (t->slots == NULL || (size_t)(t->n + 1) * 2 > t->mask + 1)
        if (table_grow(t) < 0) return -1;
    if (grow((void **)&t->keys, &t->cap, sizeof(Key), t->n + 1, 128) < 0) return -1;
    Key *k = &t->keys[t->n];
    k->str = NULL;
    k->s = s;
    k->len = n;
    if (own_str) {
        if ((k->str = ascii_str(s, n)) == NULL) return -1;
        k->s = PyUnicode_DATA(k->str);
    }
    id = t->n++;
    table_place(t, hash, id);
    *added = 1;
    return id;
}

/* ---- growable id lists -------------------------------------------------------------------- */

typedef struct { Py_ssize_t *v; Py_ssize_t n, cap; } Ids;

static int ids_push(Ids *x, Py_ssize_t id)
{
    if (grow((void **)&x->v, &x->cap, sizeof(Py_ssize_t), x->n + 1, 64) < 0) return FAIL;
    x->v[x->n++] = id;
    return OK;
}

/* ---- configuration: the Node and Weight classes, the kind strings ------------------------- */

static const char *NODE_FIELDS[] = {"name", "kind", "target", "shape", "dtype",
                                    "inputs", "weights", "args", "line", "index"};
enum { N_NAME, N_KIND, N_TARGET, N_SHAPE, N_DTYPE, N_INPUTS, N_WEIGHTS, N_ARGS, N_LINE, N_INDEX,
       N_FIELDS };
static const char *WEIGHT_FIELDS[] = {"name", "shape", "dtype"};
enum { W_FIELDS = 3 };

typedef struct {
    PyTypeObject *type;
    Py_ssize_t offsets[N_FIELDS];
    int n;
} SlotsClass;

static SlotsClass node_class, weight_class;
static PyObject *kind_placeholder, *kind_call, *kind_output;
static PyObject *str_output, *str_unknown_shape, *str_unknown_dtype;

/* Record the slot offsets of a class whose instances are exactly the given object fields
 * (a dataclass with slots=True: no __dict__, no other slot). */
static int slots_class_init(SlotsClass *c, PyObject *type, const char **fields, int n)
{
    if (!PyType_Check(type)) {
        PyErr_SetString(PyExc_TypeError, "expected a class");
        return FAIL;
    }
    PyTypeObject *tp = (PyTypeObject *)type;
    if (tp->tp_dictoffset != 0 || tp->tp_itemsize != 0
            || tp->tp_basicsize != (Py_ssize_t)(sizeof(PyObject) + (size_t)n * sizeof(PyObject *))) {
        PyErr_Format(PyExc_TypeError, "%s: expected a slots class with %d fields", tp->tp_name, n);
        return FAIL;
    }
    for (int i = 0; i < n; i++) {
        PyObject *d = PyObject_GetAttrString(type, fields[i]);
        if (d == NULL) return FAIL;
        int ok = Py_IS_TYPE(d, &PyMemberDescr_Type)
                 && ((PyMemberDescrObject *)d)->d_member->type == T_OBJECT_EX
                 && !(((PyMemberDescrObject *)d)->d_member->flags & READONLY);
        if (ok) c->offsets[i] = ((PyMemberDescrObject *)d)->d_member->offset;
        Py_DECREF(d);
        if (!ok) {
            PyErr_Format(PyExc_TypeError, "%s.%s is not a plain slot", tp->tp_name, fields[i]);
            return FAIL;
        }
    }
    Py_INCREF(type);
    Py_XSETREF(c->type, tp);
    c->n = n;
    return OK;
}

/* An instance with its slots set to values, whose references are stolen (all non-NULL);
 * NULL on failure (the values are released). */
static PyObject *slots_new(const SlotsClass *c, PyObject **values)
{
    PyObject *o = c->type->tp_alloc(c->type, 0);
    for (int i = 0; i < c->n; i++) {
        if (o == NULL) Py_DECREF(values[i]);
        else *(PyObject **)((char *)o + c->offsets[i]) = values[i];
    }
    return o;
}

static PyObject *configure(PyObject *mod, PyObject *args)
{
    PyObject *node, *weight, *ph, *call, *out;
    if (!PyArg_ParseTuple(args, "OOUUU:configure", &node, &weight, &ph, &call, &out)) return NULL;
    if (slots_class_init(&node_class, node, NODE_FIELDS, N_FIELDS) < 0
            || slots_class_init(&weight_class, weight, WEIGHT_FIELDS, W_FIELDS) < 0)
        return NULL;
    Py_INCREF(ph);
    Py_XSETREF(kind_placeholder, ph);
    Py_INCREF(call);
    Py_XSETREF(kind_call, call);
    Py_INCREF(out);
    Py_XSETREF(kind_output, out);
    Py_RETURN_NONE;
}

/* ---- one section ------------------------------------------------------------------------- */

/* What is known about one name (node name or reference) of the section. */
typedef struct {
    Py_ssize_t node;         /* index of the node defining it, -1 while undefined */
    Py_ssize_t pending;      /* line of the reference that made an undefined name a weight, or 0 */
    Py_ssize_t seen;         /* 1 + index of the last node that listed it: de-duplication */
    PyObject *shape, *dtype; /* metadata printed at its first reference that had some (owned) */
    char filtered;           /* None/True/inf/s12...: a bare mention never makes a weight */
    char dropped;            /* a bare mention was ignored since it was not (yet) a weight */
    char is_call;
} Name;

typedef struct {
    Table names;      /* every node name and reference; keys own their str */
    Name *info;       /* parallel to names */
    Py_ssize_t info_cap;
    Table atoms;      /* target/shape/dtype strings, shared between nodes */
    PyObject *nodes, *inputs, *consumers, *outputs;
    PyObject **index_objs; /* Node.index of each node, shared with the topology lists */
    Py_ssize_t n_nodes, index_cap;
    Ids pending;      /* names that became weights, in the order they did (reader's `pending`) */
    Ids meta;         /* weights first seen with metadata, in that order */
    Ids refs;         /* the current node's references, in reader order */
    Ids in_ids, wt_ids, out_ids;
    char *clean;      /* the current line's arguments with quoted strings blanked */
    Py_ssize_t clean_cap;
} Scan;

static void scan_free(Scan *S)
{
    for (Py_ssize_t i = 0; i < S->names.n; i++) {
        Py_XDECREF(S->info[i].shape);
        Py_XDECREF(S->info[i].dtype);
    }
    table_free(&S->names);
    table_free(&S->atoms);
    PyMem_Free(S->info);
    Py_XDECREF(S->nodes);
    Py_XDECREF(S->inputs);
    Py_XDECREF(S->consumers);
    Py_XDECREF(S->outputs);
    for (Py_ssize_t i = 0; i < S->n_nodes; i++) Py_DECREF(S->index_objs[i]);
    PyMem_Free(S->index_objs);
    PyMem_Free(S->pending.v);
    PyMem_Free(S->meta.v);
    PyMem_Free(S->refs.v);
    PyMem_Free(S->in_ids.v);
    PyMem_Free(S->wt_ids.v);
    PyMem_Free(S->out_ids.v);
    PyMem_Free(S->clean);
}

/* reader._NOT_REFS and reader._SYMBOL ("[su]\d+$"): bare list names that are never weights. */
static int is_filtered(const char *s, Py_ssize_t n)
{
    static const char *not_refs[] = {"None", "True", "False", "inf", "nan", "Ellipsis"};
    for (size_t i = 0; i < sizeof not_refs / sizeof *not_refs; i++)
        if ((size_t)n == strlen(not_refs[i]) && memcmp(s, not_refs[i], (size_t)n) == 0) return 1;
    if (n < 2 || (s[0] != 's' && s[0] != 'u')) return 0;
    for (Py_ssize_t i = 1; i < n; i++)
        if (s[i] < '0' || s[i] > '9') return 0;
    return 1;
}

/* The id of the name s[x], creating its entry if new (*added = 1); -1 on failure. */
static Py_ssize_t name_get(Scan *S, const char *s, Span x, int *added)
{
    Py_ssize_t id = table_get(&S->names, s + x.a, span_len(x), 1, added);
    if (id < 0 || !*added) return id;
    if (grow((void **)&S->info, &S->info_cap, sizeof(Name), id + 1, 256) < 0) return -1;
    Name *e = &S->info[id];
    memset(e, 0, sizeof *e);
    e->node = -1;
    e->filtered = (char)is_filtered(s + x.a, span_len(x));
    return id;
}

static PyObject *name_str(const Scan *S, Py_ssize_t id) { return S->names.keys[id].str; }

/* A shared str for s[x] (new reference). */
static PyObject *atom(Scan *S, const char *s, Span x)
{
    int added;
    Py_ssize_t id = table_get(&S->atoms, s + x.a, span_len(x), 1, &added);
    if (id < 0) return NULL;
    PyObject *o = S->atoms.keys[id].str;
    Py_INCREF(o);
    return o;
}

/* A node line cut into spans of the line. */
enum { K_PLACEHOLDER, K_CALL, K_OUTPUT };
typedef struct {
    int kind;
    Span name, target, args, shape, dtype;
} Line;

/* reader._meta_ok */
static int meta_ok(const char *s, Span m)
{
    if (m.b <= m.a) return 0;
    if (s[m.a] == '(') return s[m.b - 1] == ')';
    for (Py_ssize_t i = m.a; i < m.b; i++)
        if (s[i] == ' ' || s[i] == ',' || s[i] == ')') return 0;
    return 1;
}

/* Cut a '%...' line as _parse_section does; DECLINE where it would raise. */
static int split_node_line(const char *s, Py_ssize_t len, Line *L)
{
    Py_ssize_t sep2 = rfind_sep(s, 0, len);
    Py_ssize_t sep1 = sep2 < 0 ? -1 : rfind_sep(s, 0, sep2);
    if (sep1 < 0) return DECLINE;
    L->shape = (Span){sep1 + 3, sep2};
    L->dtype = (Span){sep2 + 3, len};
    if (!meta_ok(s, L->shape) || !meta_ok(s, L->dtype)) return DECLINE;
    Py_ssize_t eq = find_eq(s, 0, sep1);
    if (eq < 0) {
        L->kind = K_PLACEHOLDER;
        L->name = (Span){1, sep1};
        L->target = L->args = (Span){0, 0};
    } else {
        Span call = {eq + 3, sep1};
        const char *paren = memchr(s + call.a, '(', (size_t)span_len(call));
        if (paren == NULL || paren == s + call.a || s[call.b - 1] != ')') return DECLINE;
        L->kind = K_CALL;
        L->name = (Span){1, eq};
        L->target = (Span){call.a, paren - s};
        L->args = (Span){paren - s + 1, call.b - 1};
    }
    return is_identifier(s, L->name) ? OK : DECLINE;
}

/* Cut an 'output ...' line: the argument text is what follows, stripped, outer parens removed. */
static void split_output_line(const char *s, Py_ssize_t len, Line *L)
{
    Py_ssize_t a = 6, b = len;
    while (a < b && IS(s[a], SPACE)) a++;
    while (b > a && IS(s[b - 1], SPACE)) b--;
    if (b > a && s[a] == '(' && s[b - 1] == ')') {
        a++;
        b--;
    }
    L->kind = K_OUTPUT;
    L->name = L->target = L->shape = L->dtype = (Span){0, 0};
    L->args = (Span){a, b};
}

/* \([^()]*\) at s[p] == '(': the end of the match, or -1. */
static Py_ssize_t match_parens(const char *s, Py_ssize_t p, Py_ssize_t end)
{
    for (Py_ssize_t q = p + 1; q < end; q++) {
        if (s[q] == ')') return q + 1;
        if (s[q] == '(') return -1;
    }
    return -1;
}

/* A printed shape or dtype at s[p]: parenthesised, or a run of `chars`; its end, or -1. */
static Py_ssize_t match_meta_token(const char *s, Py_ssize_t p, Py_ssize_t end, int chars)
{
    if (p < end && s[p] == '(') return match_parens(s, p, end);
    Py_ssize_t q = p;
    while (q < end && IS(s[q], chars)) q++;
    return q > p ? q : -1;
}

/* _REF at s[p] == '%', within s[:end]: the name, and the metadata when its optional part matches
 * (else empty spans). Returns the end of the match, or -1 when no identifier follows the '%'.
 * Neither alternative of the shape/dtype groups can match shorter and still be followed by
 * " : " or end the pattern, so no backtracking is needed. */
static Py_ssize_t match_ref(const char *s, Py_ssize_t p, Py_ssize_t end, Span *name, Span *shape,
                            Span *dtype)
{
    Py_ssize_t q = p + 1;
    if (q >= end || !IS(s[q], IDSTART)) return -1;
    while (++q < end && IS(s[q], WORD)) {}
    *name = (Span){p + 1, q};
    *shape = *dtype = (Span){0, 0};
    if (!is_sep(s, q, end)) return q;
    Py_ssize_t e1 = match_meta_token(s, q + 3, end, SHAPECH);
    if (e1 < 0 || !is_sep(s, e1, end)) return q;
    Py_ssize_t e2 = match_meta_token(s, e1 + 3, end, DTYPECH);
    if (e2 < 0) return q;
    *shape = (Span){q + 3, e1};
    *dtype = (Span){e1 + 3, e2};
    return e2;
}

/* A '%name' reference of node idx (with its printed metadata, if any). */
static int ref_percent(Scan *S, const char *s, Span name, Span shape, Span dtype,
                       Py_ssize_t lineno, Py_ssize_t idx)
{
    int added;
    Py_ssize_t id = name_get(S, s, name, &added);
    if (id < 0 || ids_push(&S->refs, id) < 0) return FAIL;
    Name *e = &S->info[id];
    if (e->node == idx) return DECLINE; /* refers to itself */
    if (e->node >= 0) return OK;
    if (!e->pending) {
        /* An earlier node's bare mention was dropped: Python would make it a weight of that
         * node after all, since it resolves against the final set of weights. */
        if (e->dropped) return DECLINE;
        e->pending = lineno;
        if (ids_push(&S->pending, id) < 0) return FAIL;
    }
    if (span_len(shape) > 0 && e->shape == NULL) {
        if ((e->shape = atom(S, s, shape)) == NULL || (e->dtype = atom(S, s, dtype)) == NULL)
            return FAIL;
        if (ids_push(&S->meta, id) < 0) return FAIL;
    }
    return OK;
}

/* A bare name in a list argument of node idx. */
static int ref_bare(Scan *S, const char *s, Span name, Py_ssize_t lineno, Py_ssize_t idx)
{
    int added;
    Py_ssize_t id = name_get(S, s, name, &added);
    if (id < 0 || ids_push(&S->refs, id) < 0) return FAIL;
    Name *e = &S->info[id];
    if (e->node == idx) return DECLINE;
    if (e->node >= 0 || e->pending) return OK;
    if (e->filtered) {
        e->dropped = 1;
        return OK;
    }
    e->pending = lineno;
    return ids_push(&S->pending, id);
}

/* One innermost list t[a:b]: _REF matches blanked, then each _BARE name. `prev` is the character
 * before the current position in the blanked text (0 at the start: the look-behind sees
 * nothing there). A name followed by '.' or '(' is not one, nor is any suffix of it. */
static int scan_group(Scan *S, const char *t, Py_ssize_t a, Py_ssize_t b, Py_ssize_t lineno,
                      Py_ssize_t idx)
{
    char prev = 0;
    Py_ssize_t q = a;
    while (q < b) {
        char c = t[q];
        Span name, shape, dtype;
        Py_ssize_t e;
        if (c == '%' && (e = match_ref(t, q, b, &name, &shape, &dtype)) >= 0) {
            q = e;
            prev = ' ';
        } else if (IS(c, IDSTART)) {
            Py_ssize_t r = q + 1;
            while (r < b && IS(t[r], WORD)) r++;
            int ok = !(prev && IS(prev, NOTBEFORE)) && !(r < b && (t[r] == '.' || t[r] == '('));
            if (ok) {
                int rc = ref_bare(S, t, (Span){q, r}, lineno, idx);
                if (rc != OK) return rc;
            }
            prev = t[r - 1];
            q = r;
        } else {
            prev = c;
            q++;
        }
    }
    return OK;
}

/* _QUOTED.sub(" ", s[x]) into S->clean; returns its length, or -1 on failure. An unterminated
 * quote is no match: the text goes on from the next character. */
static Py_ssize_t blank_quotes(Scan *S, const char *s, Span x)
{
    if (span_len(x) + 1 > S->clean_cap) {
        char *buf = PyMem_Realloc(S->clean, (size_t)span_len(x) + 1);
        if (buf == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        S->clean = buf;
        S->clean_cap = span_len(x) + 1;
    }
    Py_ssize_t n = 0, p = x.a;
    while (p < x.b) {
        char c = s[p];
        Py_ssize_t close = -1;
        if (c == '\'' || c == '"') {
            for (Py_ssize_t q = p + 1; q < x.b; q++) {
                if (s[q] == '\\') q++; /* an escape pair; a trailing lone backslash fails */
                else if (s[q] == c) {
                    close = q;
                    break;
                }
            }
        }
        if (close >= 0) {
            S->clean[n++] = ' ';
            p = close + 1;
        } else {
            S->clean[n++] = c;
            p++;
        }
    }
    return n;
}

/* The references of one node's argument text s[x], in reader order: every _REF of the raw text,
 * then the bare names of each innermost [...] of the quote-blanked text. */
static int collect_refs(Scan *S, const char *s, Span x, int kind, Py_ssize_t lineno,
                        Py_ssize_t idx)
{
    Py_ssize_t po = 0, pc = 0, bo = 0, bc = 0, pct = 0, quotes = 0;
    for (Py_ssize_t i = x.a; i < x.b; i++) {
        switch (s[i]) {
        case '(': po++; break;
        case ')': pc++; break;
        case '[': bo++; break;
        case ']': bc++; break;
        case '%': pct++; break;
        case '\'': case '"': quotes++; break;
        }
    }
    if (kind == K_CALL && (po != pc || bo != bc)) return DECLINE; /* unbalanced brackets */
    for (Py_ssize_t p = x.a; pct && p < x.b;) {
        const char *hit = memchr(s + p, '%', (size_t)(x.b - p));
        if (hit == NULL) break;
        Span name, shape, dtype;
        Py_ssize_t e = match_ref(s, hit - s, x.b, &name, &shape, &dtype);
        if (e < 0) {
            p = hit - s + 1;
            continue;
        }
        int rc = ref_percent(S, s, name, shape, dtype, lineno, idx);
        if (rc != OK) return rc;
        p = e;
    }
    if (!bo) return OK;
    const char *t = s;
    Py_ssize_t a = x.a, b = x.b;
    if (quotes) {
        if ((b = blank_quotes(S, s, x)) < 0) return FAIL;
        t = S->clean;
        a = 0;
    }
    /* _GROUP.findall: each '[' whose next bracket is a ']' opens an innermost list. */
    for (Py_ssize_t p = a; p < b;) {
        const char *open = memchr(t + p, '[', (size_t)(b - p));
        if (open == NULL) break;
        Py_ssize_t q = open - t + 1;
        while (q < b && t[q] != '[' && t[q] != ']') q++;
        if (q >= b) break;
        if (t[q] == ']') {
            int rc = scan_group(S, t, open - t + 1, q, lineno, idx);
            if (rc != OK) return rc;
            q++;
        }
        p = q;
    }
    return OK;
}

/* A tuple of the names of the given ids (new reference). It holds only strs, so it cannot be
 * part of a reference cycle: untracked, as the collector itself would do on its next pass. */
static PyObject *names_tuple(const Scan *S, const Ids *x)
{
    PyObject *t = PyTuple_New(x->n);
    for (Py_ssize_t i = 0; t != NULL && i < x->n; i++) {
        PyObject *o = name_str(S, x->v[i]);
        Py_INCREF(o);
        PyTuple_SET_ITEM(t, i, o);
    }
    if (t != NULL && x->n > 0 && PyObject_GC_IsTracked(t)) PyObject_GC_UnTrack(t);
    return t;
}

/* Split the node's references into inputs and weights, as _resolve does: each name once, in
 * order. Only the final state of a name decides, and here it is already final: a defined name
 * was defined earlier (a later definition declines) and an undefined one stays a weight
 * exactly when it is pending now (see ref_percent for the one exception). */
static void resolve_refs(Scan *S, Py_ssize_t idx)
{
    S->in_ids.n = S->wt_ids.n = S->out_ids.n = 0;
    for (Py_ssize_t i = 0; i < S->refs.n; i++) {
        Py_ssize_t id = S->refs.v[i];
        Name *e = &S->info[id];
        if (e->seen == idx + 1) continue;
        e->seen = idx + 1;
        S->out_ids.v[S->out_ids.n++] = id;
        if (e->node >= 0) S->in_ids.v[S->in_ids.n++] = id;
        else if (e->pending) S->wt_ids.v[S->wt_ids.n++] = id;
    }
}

static int reserve(Ids *x, Py_ssize_t n)
{
    return grow((void **)&x->v, &x->cap, sizeof(Py_ssize_t), n, 64);
}

/* Node.args: the raw text, cut to ARGS_KEPT characters + "... (+12,345 characters)". */
static PyObject *args_text(const char *s, Span x)
{
    Py_ssize_t n = span_len(x);
    if (n <= ARGS_KEPT) return ascii_str(s + x.a, n);
    char digits[32], tail[64];
    int nd = snprintf(digits, sizeof digits, "%zd", n - ARGS_KEPT), k = 0;
    k += snprintf(tail, sizeof tail, "... (+");
    for (int i = 0; i < nd; i++) {
        if (i > 0 && (nd - i) % 3 == 0) tail[k++] = ',';
        tail[k++] = digits[i];
    }
    k += snprintf(tail + k, sizeof tail - (size_t)k, " characters)");
    PyObject *o = PyUnicode_New(ARGS_KEPT + k, 127);
    if (o == NULL) return NULL;
    memcpy(PyUnicode_DATA(o), s + x.a, ARGS_KEPT);
    memcpy((char *)PyUnicode_DATA(o) + ARGS_KEPT, tail, (size_t)k);
    return o;
}

/* Append node idx and its row of the topology; the node's refs are resolved already. */
static int emit_node(Scan *S, const char *s, const Line *L, Py_ssize_t name_id, Py_ssize_t lineno,
                     Py_ssize_t idx)
{
    if (S->n_nodes == S->index_cap) {
        Py_ssize_t cap = S->index_cap ? S->index_cap * 2 : 1024;
        PyObject **v = PyMem_Realloc(S->index_objs, (size_t)cap * sizeof(PyObject *));
        if (v == NULL) {
            PyErr_NoMemory();
            return FAIL;
        }
        S->index_objs = v;
        S->index_cap = cap;
    }
    PyObject *index = PyLong_FromSsize_t(idx);
    if (index == NULL) return FAIL;
    S->index_objs[S->n_nodes++] = index;

    PyObject *in_list = PyList_New(S->in_ids.n), *cons = PyList_New(0);
    int rc = in_list && cons && PyList_Append(S->inputs, in_list) == 0
             && PyList_Append(S->consumers, cons) == 0;
    for (Py_ssize_t i = 0; rc && i < S->in_ids.n; i++) {
        Py_ssize_t j = S->info[S->in_ids.v[i]].node;
        Py_INCREF(S->index_objs[j]);
        PyList_SET_ITEM(in_list, i, S->index_objs[j]);
        rc = PyList_Append(PyList_GET_ITEM(S->consumers, j), index) == 0;
    }
    Py_XDECREF(in_list);
    Py_XDECREF(cons);
    if (!rc) return FAIL;

    PyObject *v[N_FIELDS] = {NULL};
    int is_output = L->kind == K_OUTPUT;
    v[N_NAME] = is_output ? str_output : name_str(S, name_id);
    v[N_KIND] = is_output ? kind_output : L->kind == K_CALL ? kind_call : kind_placeholder;
    v[N_INDEX] = index;
    Py_INCREF(v[N_NAME]);
    Py_INCREF(v[N_KIND]);
    Py_INCREF(index);
    int ok = (v[N_TARGET] = atom(S, s, L->target)) && (v[N_SHAPE] = atom(S, s, L->shape))
             && (v[N_DTYPE] = atom(S, s, L->dtype)) && (v[N_INPUTS] = names_tuple(S, &S->in_ids))
             && (v[N_WEIGHTS] = names_tuple(S, &S->wt_ids)) && (v[N_ARGS] = args_text(s, L->args))
             && (v[N_LINE] = PyLong_FromSsize_t(lineno));
    if (!ok) {
        for (int j = 0; j < N_FIELDS; j++) Py_XDECREF(v[j]);
        return FAIL;
    }
    PyObject *node = slots_new(&node_class, v);
    if (node == NULL) return FAIL;
    rc = PyList_Append(S->nodes, node);
    Py_DECREF(node);
    return rc == 0 ? OK : FAIL;
}

/* One line (one trailing '\r' already cut off). */
static int scan_line(Scan *S, const char *s, Py_ssize_t len, Py_ssize_t lineno)
{
    if (len == 0 || s[0] == '#' || all_space(s, len)) return OK;
    Line L;
    if (s[0] == '%') {
        if (split_node_line(s, len, &L) != OK) return DECLINE;
    } else if (len >= 6 && memcmp(s, "output", 6) == 0) {
        if (S->outputs != NULL) return DECLINE; /* a second output line */
        split_output_line(s, len, &L);
    } else {
        return DECLINE;
    }
    Py_ssize_t idx = S->n_nodes, name_id = -1;
    if (L.kind == K_OUTPUT) {
        Py_ssize_t id = table_find(&S->names, "output", 6, hash_bytes("output", 6));
        if (id >= 0 && S->info[id].node >= 0) return DECLINE; /* duplicate name */
    } else {
        int added;
        if ((name_id = name_get(S, s, L.name, &added)) < 0) return FAIL;
        if (!added) return DECLINE; /* a duplicate, or referenced before its definition */
        S->info[name_id].node = idx;
        S->info[name_id].is_call = L.kind == K_CALL;
    }
    S->refs.n = 0;
    if (span_len(L.args) > 0) {
        int rc = collect_refs(S, s, L.args, L.kind, lineno, idx);
        if (rc != OK) return rc;
    }
    if (reserve(&S->in_ids, S->refs.n) < 0 || reserve(&S->wt_ids, S->refs.n) < 0
            || reserve(&S->out_ids, S->refs.n) < 0)
        return FAIL;
    resolve_refs(S, idx);
    if (L.kind == K_OUTPUT && (S->outputs = names_tuple(S, &S->out_ids)) == NULL) return FAIL;
    return emit_node(S, s, &L, name_id, lineno, idx);
}

/* Length of a name without reader._TRAILING_INDEX ("_\d+$"). */
static Py_ssize_t base_len(const char *s, Py_ssize_t n)
{
    Py_ssize_t i = n;
    while (i > 0 && s[i - 1] >= '0' && s[i - 1] <= '9') i--;
    return i < n && i > 0 && s[i - 1] == '_' ? i - 1 : n;
}

/* _resolve's check: an undefined name that follows the naming of the graph's call nodes
 * (getitem_99 where getitem nodes exist) is a missing node, an error: decline. */
static int check_undefined(Scan *S)
{
    if (S->pending.n == 0) return OK;
    Table bases = {0};
    int rc = OK, added;
    for (Py_ssize_t id = 0; rc == OK && id < S->names.n; id++) {
        const Key *k = &S->names.keys[id];
        if (S->info[id].is_call && table_get(&bases, k->s, base_len(k->s, k->len), 0, &added) < 0)
            rc = FAIL;
    }
    for (Py_ssize_t i = 0; rc == OK && i < S->pending.n; i++) {
        const Key *k = &S->names.keys[S->pending.v[i]];
        Py_ssize_t n = base_len(k->s, k->len);
        if (table_find(&bases, k->s, n, hash_bytes(k->s, n)) >= 0) rc = DECLINE;
    }
    table_free(&bases);
    return rc;
}

/* Graph.weights: weights seen with metadata in the order seen, then the other pending names. */
static PyObject *weights_dict(Scan *S)
{
    PyObject *d = PyDict_New();
    for (int pass = 0; d != NULL && pass < 2; pass++) {
        const Ids *x = pass == 0 ? &S->meta : &S->pending;
        for (Py_ssize_t i = 0; i < x->n; i++) {
            const Name *e = &S->info[x->v[i]];
            if (pass == 1 && e->shape != NULL) continue;
            PyObject *v[W_FIELDS] = {name_str(S, x->v[i]),
                                     pass == 0 ? e->shape : str_unknown_shape,
                                     pass == 0 ? e->dtype : str_unknown_dtype};
            for (int j = 0; j < W_FIELDS; j++) Py_INCREF(v[j]);
            PyObject *w = slots_new(&weight_class, v);
            int rc = w == NULL ? -1 : PyDict_SetItem(d, v[0], w);
            Py_XDECREF(w);
            if (rc < 0) {
                Py_CLEAR(d);
                break;
            }
        }
    }
    return d;
}

static int is_banner(const char *s, Py_ssize_t len)
{
    if (len != BANNER_LEN) return 0;
    for (Py_ssize_t i = 0; i < len; i++)
        if (s[i] != '=') return 0;
    return 1;
}

/* Line i of the section's source: an item of a list of str (checked to be ASCII), or a span of
 * an ASCII bytes object whose line starts are given (see line_starts). DECLINE: not ASCII. */
static int line_at(PyObject *src, const Py_ssize_t *starts, Py_ssize_t i, const char **s,
                   Py_ssize_t *len)
{
    if (starts != NULL) {
        *s = PyBytes_AS_STRING(src) + starts[i];
        *len = starts[i + 1] - 1 - starts[i];
        return OK;
    }
    PyObject *item = PyList_GET_ITEM(src, i);
    if (!PyUnicode_CheckExact(item)) return DECLINE;
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(item) < 0) return FAIL;
#endif
    if (!PyUnicode_IS_ASCII(item)) return DECLINE;
    *s = PyUnicode_DATA(item);
    *len = PyUnicode_GET_LENGTH(item);
    return OK;
}

/* The list (or bytes) keeps every line alive for the whole call, so scan_line may point into
 * it while it runs. */
static int scan_lines(Scan *S, PyObject *src, const Py_ssize_t *starts, Py_ssize_t count,
                      Py_ssize_t start, Py_ssize_t *end)
{
    Py_ssize_t i;
    for (i = start; i < count; i++) {
        const char *s;
        Py_ssize_t len;
        int rc = line_at(src, starts, i, &s, &len);
        if (rc != OK) return rc;
        if (len > 0 && s[len - 1] == '\r') len--;
        if (is_banner(s, len)) break;
        rc = scan_line(S, s, len, i + 1);
        if (rc != OK) return rc;
    }
    *end = i;
    return OK;
}

static PyObject *scan_section(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    /* (lines: list[str], start) or (data: bytes, start, starts: bytes from line_starts(data)) */
    const Py_ssize_t *starts = NULL;
    Py_ssize_t count = 0;
    if (nargs == 2 && PyList_CheckExact(args[0]) && PyLong_Check(args[1])) {
        count = PyList_GET_SIZE(args[0]);
    }
    else if (nargs == 3 && PyBytes_CheckExact(args[0]) && PyLong_Check(args[1])
             && PyBytes_CheckExact(args[2])
             && PyBytes_GET_SIZE(args[2]) % (Py_ssize_t)sizeof(Py_ssize_t) == 0
             && PyBytes_GET_SIZE(args[2]) >= (Py_ssize_t)(2 * sizeof(Py_ssize_t))) {
        starts = (const Py_ssize_t *)PyBytes_AS_STRING(args[2]);
        count = PyBytes_GET_SIZE(args[2]) / (Py_ssize_t)sizeof(Py_ssize_t) - 1;
        if (starts[count] != PyBytes_GET_SIZE(args[0]) + 1) {
            PyErr_SetString(PyExc_ValueError, "scan_section: starts are not line_starts(data)");
            return NULL;
        }
    }
    else {
        PyErr_SetString(PyExc_TypeError, "scan_section(lines: list[str], start: int) or "
                                         "scan_section(data: bytes, start: int, starts: bytes)");
        return NULL;
    }
    if (node_class.type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_scan.configure() was not called");
        return NULL;
    }
    Py_ssize_t start = PyLong_AsSsize_t(args[1]), end = 0;
    if (start < 0) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "start must be >= 0");
        return NULL;
    }
    Scan S;
    memset(&S, 0, sizeof S);
    PyObject *result = NULL;
    int rc = FAIL;
    /* A big section allocates ~5 tracked objects per node, none of them in a cycle: with the
     * collector running, its repeated passes over them cost 3x the scan itself. */
    int gc_was_enabled = PyGC_Disable();
    if ((S.nodes = PyList_New(0)) && (S.inputs = PyList_New(0)) && (S.consumers = PyList_New(0)))
        rc = scan_lines(&S, args[0], starts, count, start, &end);
    if (rc == OK) rc = check_undefined(&S);
    if (rc == OK) {
        PyObject *weights = weights_dict(&S);
        if (S.outputs == NULL) S.outputs = PyTuple_New(0);
        if (weights != NULL && S.outputs != NULL)
            result = Py_BuildValue("(nOOO(OO))", end, S.nodes, weights, S.outputs, S.inputs,
                                   S.consumers);
        Py_XDECREF(weights);
    }
    scan_free(&S);
    if (gc_was_enabled) PyGC_Enable();
    if (rc == DECLINE) Py_RETURN_NONE;
    return result;
}

/* line_starts(data) -> bytes: the offset where each line of data starts (lines as
 * data.split(b"\n") gives them), then len(data) + 1, as native Py_ssize_t values. */
static PyObject *line_starts(PyObject *mod, PyObject *data)
{
    if (!PyBytes_CheckExact(data)) {
        PyErr_SetString(PyExc_TypeError, "line_starts(data: bytes)");
        return NULL;
    }
    const char *s = PyBytes_AS_STRING(data), *end = s + PyBytes_GET_SIZE(data);
    Py_ssize_t lines = 1;
    for (const char *q = s; (q = memchr(q, '\n', (size_t)(end - q))) != NULL; q++) lines++;
    PyObject *out = PyBytes_FromStringAndSize(NULL, (lines + 1) * (Py_ssize_t)sizeof(Py_ssize_t));
    if (out == NULL) return NULL;
    Py_ssize_t *v = (Py_ssize_t *)PyBytes_AS_STRING(out), k = 0;
    v[k++] = 0;
    for (const char *q = s; (q = memchr(q, '\n', (size_t)(end - q))) != NULL; q++)
        v[k++] = q + 1 - s;
    v[k] = (end - s) + 1;
    return out;
}

static PyMethodDef methods[] = {
    {"line_starts", line_starts, METH_O,
     "line_starts(data: bytes) -> bytes: native offsets of each line's start, then len + 1."},
    {"configure", (PyCFunction)configure, METH_VARARGS,
     "configure(Node, Weight, PLACEHOLDER, CALL, OUTPUT): the classes and kind strings to use."},
    {"scan_section", (PyCFunction)(void (*)(void))scan_section, METH_FASTCALL,
     "scan_section(lines, start) -> (end, nodes, weights, outputs, (inputs, consumers)) | None\n"
     "Parse the section from lines[start] to the next banner like reader._parse_section; None\n"
     "for anything but the plain well-formed case (then parse it in Python)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_scan", "Native fast path of tb_ad_layer.dump.reader.", -1, methods,
};

PyMODINIT_FUNC PyInit__scan(void)
{
    init_classes();
    if (!str_output) {
        str_output = PyUnicode_InternFromString("output");
        str_unknown_shape = PyUnicode_InternFromString("?");
        str_unknown_dtype = PyUnicode_InternFromString("unknown");
        if (!str_output || !str_unknown_shape || !str_unknown_dtype) return NULL;
    }
    return PyModule_Create(&module);
}
