/*
 * assay._accel: the native JSONL scan of replay's hot path, in C.
 *
 * scan_native(data, guarded, checkpoints) reads a whole native trajectory file
 * in one pass and either vouches for it or gives way (returns None). It vouches
 * only for what the typed decode (assay.ingest._native_typed.typed_records)
 * accepts: every line before the last one an object of a declared event type
 * holding only its declared keys, well typed, seq strictly increasing, the last
 * line a "final" object, no key repeated in any object at any depth, strings
 * valid UTF-8 with valid escapes, numbers of JSON's grammar. Anything unusual
 * (an escaped key, a number of 19 digits or more, deep nesting, a blank line)
 * gives way too: the Python readers then read the file and name any problem.
 * This module never decides that a file is bad, and never judges anything.
 *
 * What it returns is what the replay engine reads of a file when the spec
 * selects nothing (CompiledSpec.typed): the agents in first-seen order, the
 * counts of actions, irreversible actions, handoffs and checkpoints, and the
 * events a rule reads: guarded actions, checkpoints a rule names, and every
 * handoff, each with the byte spans Python decodes when it needs more.
 *
 * The Python path is the reference: tests compare the two on every file in the
 * repository and on generated and mutated files.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

typedef const unsigned char *cp;

#define OK 0
#define GIVE_WAY (-1)
#define FAIL (-2) /* a Python exception is set */

#define MAX_DEPTH 200
#define MAX_KEYS 512
#define MAX_AGENTS 64

typedef struct {
    cp p, end;
    int depth;
    int any_number; /* numbers of any length (check_lines), not only what both readers agree on */
    /* the keys of the objects being read, for the repeated-key check */
    cp *kptr;
    Py_ssize_t *klen;
    Py_ssize_t kn, kcap;
} Ctx;

/* byte classes inside a string: 0 plain, 1 quote or backslash or control, 2 non-ASCII */
static unsigned char str_class[256];

static void
init_tables(void)
{
    for (int c = 0; c < 256; c++) {
        str_class[c] = (c < 0x20 || c == '"' || c == '\\') ? 1 : (c >= 0x80 ? 2 : 0);
    }
}

static inline void
skip_ws(Ctx *x)
{
    while (x->p < x->end && (*x->p == ' ' || *x->p == '\t' || *x->p == '\r' || *x->p == '\n'))
        x->p++;
}

static inline int
hexval(unsigned char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static int
read_u4(Ctx *x, unsigned *out)
{
    if (x->end - x->p < 4) return GIVE_WAY;
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hexval(x->p[i]);
        if (h < 0) return GIVE_WAY;
        v = (v << 4) | (unsigned)h;
    }
    x->p += 4;
    *out = v;
    return OK;
}

/* One UTF-8 sequence at x->p (its first byte >= 0x80), checked as RFC 3629 has it. */
static int
utf8_seq(Ctx *x)
{
    cp s = x->p;
    Py_ssize_t left = x->end - s;
    unsigned char c = s[0];
    int n;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) n = 1;
    else if (c == 0xE0) { n = 2; lo = 0xA0; }
    else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) n = 2;
    else if (c == 0xED) { n = 2; hi = 0x9F; }
    else if (c == 0xF0) { n = 3; lo = 0x90; }
    else if (c >= 0xF1 && c <= 0xF3) n = 3;
    else if (c == 0xF4) { n = 3; hi = 0x8F; }
    else return GIVE_WAY;
    if (left <= n) return GIVE_WAY;
    if (s[1] < lo || s[1] > hi) return GIVE_WAY;
    for (int i = 2; i <= n; i++)
        if (s[i] < 0x80 || s[i] > 0xBF) return GIVE_WAY;
    x->p += n + 1;
    return OK;
}

/* A string at x->p (the opening quote). Its raw body is [*s, *s + *len); *esc is set
 * when it holds an escape. */
static int
read_string(Ctx *x, cp *s, Py_ssize_t *len, int *esc)
{
    x->p++; /* the quote */
    *s = x->p;
    *esc = 0;
    for (;;) {
#ifdef __SSE2__
        /* sixteen bytes at a time while sixteen are left: stop at a quote, a backslash,
         * a control character or a non-ASCII byte (signed: below 0x20 or negative) */
        {
            const __m128i quote = _mm_set1_epi8('"'), slash = _mm_set1_epi8('\\');
            const __m128i space = _mm_set1_epi8(0x20);
            while (x->end - x->p >= 16) {
                __m128i v = _mm_loadu_si128((const __m128i *)x->p);
                __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote),
                                                        _mm_cmpeq_epi8(v, slash)),
                                           _mm_cmplt_epi8(v, space));
                int mask = _mm_movemask_epi8(hit);
                if (mask) {
                    x->p += __builtin_ctz((unsigned)mask);
                    break;
                }
                x->p += 16;
            }
        }
#endif
        while (x->p < x->end && str_class[*x->p] == 0) x->p++;
        if (x->p >= x->end) return GIVE_WAY;
        unsigned char c = *x->p;
        if (c == '"') {
            *len = x->p - *s;
            x->p++;
            return OK;
        }
        if (c == '\\') {
            *esc = 1;
            if (x->end - x->p < 2) return GIVE_WAY;
            unsigned char e = x->p[1];
            x->p += 2;
            if (e == 'u') {
                unsigned u;
                if (read_u4(x, &u) != OK) return GIVE_WAY;
                if (u >= 0xDC00 && u <= 0xDFFF) return GIVE_WAY; /* a lone low surrogate */
                if (u >= 0xD800 && u <= 0xDBFF) {
                    unsigned v;
                    if (x->end - x->p < 2 || x->p[0] != '\\' || x->p[1] != 'u') return GIVE_WAY;
                    x->p += 2;
                    if (read_u4(x, &v) != OK || v < 0xDC00 || v > 0xDFFF) return GIVE_WAY;
                }
            }
            else if (!(e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n'
                       || e == 'r' || e == 't'))
                return GIVE_WAY;
            continue;
        }
        if (c < 0x20) return GIVE_WAY;
        if (utf8_seq(x) != OK) return GIVE_WAY;
    }
}

/* A number at x->p. *is_int when it has no fraction and no exponent, then *value holds it. */
static int
read_number(Ctx *x, int *is_int, long long *value)
{
    cp s = x->p;
    int neg = 0, digits = 0;
    unsigned long long v = 0;
    if (x->p < x->end && *x->p == '-') { neg = 1; x->p++; }
    if (x->p >= x->end) return GIVE_WAY;
    if (*x->p == '0') {
        x->p++;
        digits = 1;
    }
    else if (*x->p >= '1' && *x->p <= '9') {
        while (x->p < x->end && *x->p >= '0' && *x->p <= '9') {
            if (++digits > 18 && !x->any_number) return GIVE_WAY; /* readers disagree */
            v = v * 10 + (unsigned)(*x->p - '0');
            x->p++;
        }
    }
    else return GIVE_WAY;
    *is_int = 1;
    if (x->p < x->end && *x->p == '.') {
        x->p++;
        int frac = 0;
        while (x->p < x->end && *x->p >= '0' && *x->p <= '9') {
            if (++frac > 18 && !x->any_number) return GIVE_WAY;
            x->p++;
        }
        if (!frac) return GIVE_WAY;
        *is_int = 0;
    }
    if (x->p < x->end && (*x->p == 'e' || *x->p == 'E')) {
        x->p++;
        if (x->p < x->end && (*x->p == '+' || *x->p == '-')) x->p++;
        int exp = 0;
        while (x->p < x->end && *x->p >= '0' && *x->p <= '9') {
            if (++exp > 2 && !x->any_number) return GIVE_WAY; /* near a double's limits */
            x->p++;
        }
        if (!exp) return GIVE_WAY;
        *is_int = 0;
    }
    (void)s;
    *value = neg ? -(long long)v : (long long)v;
    return OK;
}

static int
literal(Ctx *x, const char *word, Py_ssize_t n)
{
    if (x->end - x->p < n || memcmp(x->p, word, (size_t)n) != 0) return GIVE_WAY;
    x->p += n;
    return OK;
}

static int read_value(Ctx *x);

/* Remember a key of the object whose keys start at kbase; GIVE_WAY when it repeats one. */
static int
push_key(Ctx *x, Py_ssize_t kbase, cp s, Py_ssize_t len)
{
    for (Py_ssize_t i = kbase; i < x->kn; i++) {
        if (x->klen[i] == len && memcmp(x->kptr[i], s, (size_t)len) == 0) return GIVE_WAY;
    }
    if (x->kn - kbase >= MAX_KEYS) return GIVE_WAY;
    if (x->kn == x->kcap) {
        Py_ssize_t cap = x->kcap ? x->kcap * 2 : 64;
        cp *np = PyMem_Realloc(x->kptr, (size_t)cap * sizeof(cp));
        if (!np) { PyErr_NoMemory(); return FAIL; }
        x->kptr = np;
        Py_ssize_t *nl = PyMem_Realloc(x->klen, (size_t)cap * sizeof(Py_ssize_t));
        if (!nl) { PyErr_NoMemory(); return FAIL; }
        x->klen = nl;
        x->kcap = cap;
    }
    x->kptr[x->kn] = s;
    x->klen[x->kn] = len;
    x->kn++;
    return OK;
}

/* An opening bracket at x->p; *empty when the container closes at once. */
static inline int
open_container(Ctx *x, unsigned char close, int *empty)
{
    if (++x->depth > MAX_DEPTH) return GIVE_WAY;
    x->p++;
    skip_ws(x);
    *empty = x->p < x->end && *x->p == close;
    if (*empty) {
        x->p++;
        x->depth--;
    }
    return OK;
}

/* An object's key and its colon: a string written without escapes (an escaped key is
 * compared here only as written, so it gives way). */
static inline int
read_key(Ctx *x, cp *s, Py_ssize_t *len)
{
    int rc, esc;
    if (x->p >= x->end || *x->p != '"') return GIVE_WAY;
    if ((rc = read_string(x, s, len, &esc)) != OK) return rc;
    if (esc) return GIVE_WAY;
    skip_ws(x);
    if (x->p >= x->end || *x->p != ':') return GIVE_WAY;
    x->p++;
    skip_ws(x);
    return OK;
}

/* After a member: a comma (another follows) or the closing bracket (*done). */
static inline int
next_member(Ctx *x, unsigned char close, int *done)
{
    skip_ws(x);
    if (x->p >= x->end) return GIVE_WAY;
    if (*x->p == ',') {
        x->p++;
        skip_ws(x);
        *done = 0;
        return OK;
    }
    if (*x->p != close) return GIVE_WAY;
    x->p++;
    x->depth--;
    *done = 1;
    return OK;
}

/* An object at x->p: every key unescaped and said once, every value valid. */
static int
read_object(Ctx *x)
{
    int rc, done;
    if ((rc = open_container(x, '}', &done)) != OK || done) return rc;
    Py_ssize_t kbase = x->kn;
    do {
        cp s;
        Py_ssize_t len;
        if ((rc = read_key(x, &s, &len)) != OK || (rc = push_key(x, kbase, s, len)) != OK
            || (rc = read_value(x)) != OK || (rc = next_member(x, '}', &done)) != OK)
            return rc;
    } while (!done);
    x->kn = kbase;
    return OK;
}

static int
read_array(Ctx *x)
{
    int rc, done;
    if ((rc = open_container(x, ']', &done)) != OK || done) return rc;
    do {
        if ((rc = read_value(x)) != OK || (rc = next_member(x, ']', &done)) != OK) return rc;
    } while (!done);
    return OK;
}

static int
read_value(Ctx *x)
{
    if (x->p >= x->end) return GIVE_WAY;
    switch (*x->p) {
    case '"': {
        cp s;
        Py_ssize_t len;
        int esc;
        return read_string(x, &s, &len, &esc);
    }
    case '{':
        return read_object(x);
    case '[':
        return read_array(x);
    case 't':
        return literal(x, "true", 4);
    case 'f':
        return literal(x, "false", 5);
    case 'n':
        return literal(x, "null", 4);
    default: {
        int is_int;
        long long v;
        return read_number(x, &is_int, &v);
    }
    }
}

/* -- the records ---------------------------------------------------------------------- */

enum {
    F_SEQ, F_EVENT, F_AGENT, F_TS,
    F_ACTION_TYPE, F_IRREVERSIBLE, F_ARGS, F_RESULT,
    F_CHECKPOINT_ID, F_CONFIRMED_BY,
    F_FROM_AGENT, F_TO_AGENT, F_PAYLOAD,
    F_ROLE, F_TEXT, F_YIELDS_TURN,
    F_TASK_SUCCESS, /* the final line's own */
    N_FIELDS
};

static const char *field_names[N_FIELDS] = {
    "seq", "event", "agent", "ts",
    "action_type", "irreversible", "args", "result",
    "checkpoint_id", "confirmed_by",
    "from_agent", "to_agent", "payload",
    "role", "text", "yields_turn",
    "task_success",
};
static Py_ssize_t field_lens[N_FIELDS];

#define BIT(f) (1u << (f))
#define COMMON (BIT(F_SEQ) | BIT(F_EVENT) | BIT(F_AGENT) | BIT(F_TS))

enum { K_ACTION, K_CHECKPOINT, K_HANDOFF, K_MESSAGE, N_KINDS };

static const char *kind_names[N_KINDS] = {"action", "checkpoint", "handoff", "message"};
static const unsigned allowed[N_KINDS] = {
    COMMON | BIT(F_ACTION_TYPE) | BIT(F_IRREVERSIBLE) | BIT(F_ARGS) | BIT(F_RESULT),
    COMMON | BIT(F_CHECKPOINT_ID) | BIT(F_CONFIRMED_BY),
    COMMON | BIT(F_FROM_AGENT) | BIT(F_TO_AGENT) | BIT(F_PAYLOAD),
    COMMON | BIT(F_ROLE) | BIT(F_TEXT) | BIT(F_YIELDS_TURN),
};
static const unsigned required[N_KINDS] = {
    BIT(F_SEQ) | BIT(F_EVENT) | BIT(F_ACTION_TYPE),
    BIT(F_SEQ) | BIT(F_EVENT) | BIT(F_CHECKPOINT_ID),
    BIT(F_SEQ) | BIT(F_EVENT) | BIT(F_FROM_AGENT) | BIT(F_TO_AGENT) | BIT(F_PAYLOAD),
    BIT(F_SEQ) | BIT(F_EVENT) | BIT(F_ROLE),
};

/* The type of a value as read */
enum { T_STRING, T_INT, T_NUMBER, T_TRUE, T_FALSE, T_NULL, T_OBJECT, T_ARRAY };

typedef struct {
    cp start, end;    /* the value's bytes */
    cp s;             /* a string's body */
    Py_ssize_t len;
    int esc;
    int type;
    long long ival;
} Val;

#define IS(f) (memcmp(s, field_names[f], (size_t)len) == 0 ? (f) : -1)

/* The field a key names, or -1 */
static int
field_of(cp s, Py_ssize_t len)
{
    switch (len) {
    case 2: return IS(F_TS);
    case 3: return IS(F_SEQ);
    case 4: return s[0] == 'a' ? IS(F_ARGS) : s[0] == 'r' ? IS(F_ROLE) : IS(F_TEXT);
    case 5: return s[0] == 'e' ? IS(F_EVENT) : IS(F_AGENT);
    case 6: return IS(F_RESULT);
    case 7: return IS(F_PAYLOAD);
    case 8: return IS(F_TO_AGENT);
    case 10: return IS(F_FROM_AGENT);
    case 11: return s[0] == 'a' ? IS(F_ACTION_TYPE) : IS(F_YIELDS_TURN);
    case 12:
        return s[0] == 'i' ? IS(F_IRREVERSIBLE) : s[0] == 'c' ? IS(F_CONFIRMED_BY)
                                                              : IS(F_TASK_SUCCESS);
    case 13: return IS(F_CHECKPOINT_ID);
    default: return -1;
    }
}

#undef IS

/* A value at x->p, recorded in *v with its type. */
static int
read_typed(Ctx *x, Val *v)
{
    int rc;
    v->start = x->p;
    if (x->p >= x->end) return GIVE_WAY;
    switch (*x->p) {
    case '"':
        v->type = T_STRING;
        rc = read_string(x, &v->s, &v->len, &v->esc);
        break;
    case '{':
        v->type = T_OBJECT;
        rc = read_object(x);
        break;
    case '[':
        v->type = T_ARRAY;
        rc = read_array(x);
        break;
    case 't':
        v->type = T_TRUE;
        rc = literal(x, "true", 4);
        break;
    case 'f':
        v->type = T_FALSE;
        rc = literal(x, "false", 5);
        break;
    case 'n':
        v->type = T_NULL;
        rc = literal(x, "null", 4);
        break;
    default: {
        int is_int;
        rc = read_number(x, &is_int, &v->ival);
        v->type = is_int ? T_INT : T_NUMBER;
    }
    }
    v->end = x->p;
    return rc;
}

/* A top-level object whose keys are all fields assay knows (others: GIVE_WAY unless
 * `others` is set, when they are read as any value), each once. */
static int
read_fields(Ctx *x, Val *vals, unsigned *seen, int others)
{
    int rc, done;
    *seen = 0;
    if (x->p >= x->end || *x->p != '{') return GIVE_WAY;
    x->depth = 0;
    if ((rc = open_container(x, '}', &done)) != OK || done) return rc;
    Py_ssize_t kbase = x->kn;
    do {
        cp s;
        Py_ssize_t len;
        if ((rc = read_key(x, &s, &len)) != OK) return rc;
        int f = field_of(s, len);
        if (f >= 0) {
            if (*seen & BIT(f)) return GIVE_WAY; /* a field given twice */
            if ((rc = read_typed(x, &vals[f])) != OK) return rc;
            *seen |= BIT(f);
        }
        else if (!others) return GIVE_WAY;
        else if ((rc = push_key(x, kbase, s, len)) != OK || (rc = read_value(x)) != OK)
            return rc; /* no other key is a field: the fields' bits leave them out */
        if ((rc = next_member(x, '}', &done)) != OK) return rc;
    } while (!done);
    x->kn = kbase;
    return OK;
}

static inline int
is_str(const Val *v)
{
    return v->type == T_STRING;
}

/* A string or null, given or not */
static inline int
str_or_null(unsigned seen, int f, const Val *vals)
{
    return !(seen & BIT(f)) || vals[f].type == T_STRING || vals[f].type == T_NULL;
}

static inline int
raw_is(const Val *v, const char *word)
{
    size_t n = strlen(word);
    return v->type == T_STRING && !v->esc && (size_t)v->len == n && memcmp(v->s, word, n) == 0;
}

/* The index of a name (UTF-8 bytes) in a tuple of bytes, or -1 */
static Py_ssize_t
name_index(PyObject *names, cp s, Py_ssize_t len)
{
    Py_ssize_t n = PyTuple_GET_SIZE(names);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *b = PyTuple_GET_ITEM(names, i);
        if (PyBytes_GET_SIZE(b) == len && memcmp(PyBytes_AS_STRING(b), s, (size_t)len) == 0)
            return i;
    }
    return -1;
}

static PyObject *
str_of(const Val *v)
{
    return PyUnicode_DecodeUTF8((const char *)v->s, v->len, "strict");
}

typedef struct {
    Py_ssize_t n;
    Py_ssize_t n_at; /* the index agent_of found or added last */
    cp s[MAX_AGENTS];
    Py_ssize_t len[MAX_AGENTS];
    PyObject *obj[MAX_AGENTS];
} Agents;

/* The agent's str, added in first-seen order (a borrowed reference), or NULL with
 * *rc set. */
static PyObject *
agent_of(Agents *a, const Val *v, int *rc)
{
    for (Py_ssize_t i = a->n - 1; i >= 0; i--) {
        if (a->len[i] == v->len && memcmp(a->s[i], v->s, (size_t)v->len) == 0) {
            a->n_at = i;
            return a->obj[i];
        }
    }
    if (a->n >= MAX_AGENTS) {
        *rc = GIVE_WAY;
        return NULL;
    }
    PyObject *o = str_of(v);
    if (!o) {
        *rc = FAIL;
        return NULL;
    }
    a->s[a->n] = v->s;
    a->len[a->n] = v->len;
    a->obj[a->n] = o;
    a->n_at = a->n;
    a->n++;
    return o;
}

/* The agents met, in order, as a new list */
static PyObject *
agents_list(const Agents *a)
{
    PyObject *out = PyList_New(a->n);
    if (!out) return NULL;
    for (Py_ssize_t i = 0; i < a->n; i++) {
        Py_INCREF(a->obj[i]);
        PyList_SET_ITEM(out, i, a->obj[i]);
    }
    return out;
}

static inline Py_ssize_t
rstripped(cp data, Py_ssize_t n)
{
    /* bytes.rstrip(): ASCII whitespace */
    while (n > 0) {
        unsigned char c = data[n - 1];
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == 0x0b || c == 0x0c) n--;
        else break;
    }
    return n;
}

static PyObject *
relevant_event(int kind, long long seq, Py_ssize_t line, PyObject *agent, const Val *name,
               const Val *name2, const Val *value, int has_value, cp data, cp ls, cp le)
{
    PyObject *n1 = str_of(name);
    if (!n1) return NULL;
    PyObject *n2;
    if (name2) {
        n2 = str_of(name2);
        if (!n2) {
            Py_DECREF(n1);
            return NULL;
        }
    }
    else {
        n2 = Py_None;
        Py_INCREF(n2);
    }
    Py_ssize_t vs = has_value ? value->start - data : -1;
    Py_ssize_t ve = has_value ? value->end - data : -1;
    return Py_BuildValue("(iLnONNnnnn)", kind, seq, line, agent ? agent : Py_None, n1, n2, vs,
                         ve, (Py_ssize_t)(ls - data), (Py_ssize_t)(le - data));
}

typedef struct Judge Judge;
static int judge_action(Judge *j, long long seq, Py_ssize_t line, Py_ssize_t agent,
                        const Val *at);
static int judge_checkpoint(Judge *j, long long seq, Py_ssize_t line, const Val *cid,
                            const Val *confirmed_by, int has);
static int judge_handoff(Judge *j, Ctx *x, long long seq, Py_ssize_t line, const Val *src,
                         const Val *dst, const Val *payload);

/* The whole file. With a Judge (judge_native), each event goes to the rules here; without
 * one (scan_native), the events a rule reads are listed in `relevant` for Python. */
static int
scan(cp data, Py_ssize_t size, PyObject *guarded, PyObject *cids, Ctx *x, Agents *ag,
     PyObject *relevant, long long counts[6], Py_ssize_t fin[2], Judge *jd)
{
    int rc;
    Py_ssize_t end = rstripped(data, size);
    if (end == 0) return GIVE_WAY;
    Py_ssize_t cut = end;
    while (cut > 0 && data[cut - 1] != '\n') cut--;
    long long actions = 0, irreversible = 0, handoffs = 0, checkpoints = 0;
    long long last_seq = 0;
    Py_ssize_t line = 0;
    Val vals[N_FIELDS];
    cp p = data, body_end = data + cut;
    while (p < body_end) {
        cp nl = memchr(p, '\n', (size_t)(body_end - p));
        line++;
        x->p = p;
        x->end = nl;
        unsigned seen;
        skip_ws(x);
        if ((rc = read_fields(x, vals, &seen, 0)) != OK) return rc;
        skip_ws(x);
        if (x->p != nl) return GIVE_WAY;
        if (!(seen & BIT(F_EVENT)) || vals[F_EVENT].type != T_STRING) return GIVE_WAY;
        int kind = -1;
        for (int k = 0; k < N_KINDS; k++) {
            if (raw_is(&vals[F_EVENT], kind_names[k])) {
                kind = k;
                break;
            }
        }
        if (kind < 0) return GIVE_WAY;
        if ((seen & ~allowed[kind]) || (seen & required[kind]) != required[kind])
            return GIVE_WAY;
        if (vals[F_SEQ].type != T_INT) return GIVE_WAY;
        long long seq = vals[F_SEQ].ival;
        if (line == 1 ? seq <= -(1LL << 62) : seq <= last_seq) return GIVE_WAY;
        last_seq = seq;
        if (!str_or_null(seen, F_AGENT, vals) || !str_or_null(seen, F_TS, vals)) return GIVE_WAY;
        PyObject *agent = NULL;
        if ((seen & BIT(F_AGENT)) && vals[F_AGENT].type == T_STRING) {
            if (vals[F_AGENT].esc) return GIVE_WAY;
            rc = OK;
            agent = agent_of(ag, &vals[F_AGENT], &rc);
            if (!agent) return rc;
        }
        PyObject *ev = NULL;
        switch (kind) {
        case K_ACTION: {
            const Val *at = &vals[F_ACTION_TYPE];
            if (!is_str(at) || at->len == 0 || at->esc) return GIVE_WAY;
            actions++;
            if ((seen & BIT(F_IRREVERSIBLE)) && vals[F_IRREVERSIBLE].type == T_TRUE)
                irreversible++;
            if (jd) {
                if ((rc = judge_action(jd, seq, line, agent ? ag->n_at : -1, at)) != OK)
                    return rc;
            }
            else if (name_index(guarded, at->s, at->len) >= 0) {
                ev = relevant_event(0, seq, line, agent, at, NULL, NULL, 0, data, p, nl);
                if (!ev) return FAIL;
            }
            break;
        }
        case K_CHECKPOINT: {
            const Val *cid = &vals[F_CHECKPOINT_ID];
            if (!is_str(cid) || cid->len == 0 || cid->esc) return GIVE_WAY;
            checkpoints++;
            if (jd) {
                rc = judge_checkpoint(jd, seq, line, cid, &vals[F_CONFIRMED_BY],
                                      (seen & BIT(F_CONFIRMED_BY)) != 0);
                if (rc != OK) return rc;
            }
            else if (name_index(cids, cid->s, cid->len) >= 0) {
                int has = (seen & BIT(F_CONFIRMED_BY)) != 0;
                ev = relevant_event(2, seq, line, agent, cid, NULL, &vals[F_CONFIRMED_BY], has,
                                    data, p, nl);
                if (!ev) return FAIL;
            }
            break;
        }
        case K_HANDOFF: {
            const Val *src = &vals[F_FROM_AGENT], *dst = &vals[F_TO_AGENT];
            if (!is_str(src) || src->len == 0 || src->esc || !is_str(dst) || dst->len == 0
                || dst->esc || vals[F_PAYLOAD].type != T_OBJECT)
                return GIVE_WAY;
            handoffs++;
            if (jd) {
                Ctx sub = *x;
                if ((rc = judge_handoff(jd, &sub, seq, line, src, dst, &vals[F_PAYLOAD])) != OK)
                    return rc;
                x->kptr = sub.kptr;
                x->klen = sub.klen;
                x->kcap = sub.kcap;
                break;
            }
            ev = relevant_event(1, seq, line, agent, src, dst, &vals[F_PAYLOAD], 1, data, p, nl);
            if (!ev) return FAIL;
            break;
        }
        default: { /* K_MESSAGE */
            const Val *role = &vals[F_ROLE];
            if (!(raw_is(role, "user") || raw_is(role, "assistant") || raw_is(role, "system")
                  || raw_is(role, "tool")))
                return GIVE_WAY;
            if (!str_or_null(seen, F_TEXT, vals)) return GIVE_WAY;
            if ((seen & BIT(F_YIELDS_TURN)) && vals[F_YIELDS_TURN].type != T_TRUE
                && vals[F_YIELDS_TURN].type != T_FALSE && vals[F_YIELDS_TURN].type != T_NULL)
                return GIVE_WAY;
        }
        }
        if (ev) {
            int bad = PyList_Append(relevant, ev);
            Py_DECREF(ev);
            if (bad) return FAIL;
        }
        p = nl + 1;
    }
    /* the final line, read whole by Python afterwards: here its keys and types */
    x->p = data + cut;
    x->end = data + end;
    unsigned seen;
    skip_ws(x);
    Py_ssize_t fs = x->p - data;
    if ((rc = read_fields(x, vals, &seen, 1)) != OK) return rc;
    if (x->p != x->end) return GIVE_WAY;
    unsigned need = BIT(F_SEQ) | BIT(F_EVENT) | BIT(F_TASK_SUCCESS);
    if ((seen & need) != need || !raw_is(&vals[F_EVENT], "final")) return GIVE_WAY;
    if (vals[F_SEQ].type != T_INT) return GIVE_WAY;
    long long seq = vals[F_SEQ].ival;
    if (line == 0 ? seq <= -(1LL << 62) : seq <= last_seq) return GIVE_WAY;
    if (vals[F_TASK_SUCCESS].type != T_TRUE && vals[F_TASK_SUCCESS].type != T_FALSE)
        return GIVE_WAY;
    if (!str_or_null(seen, F_AGENT, vals) || !str_or_null(seen, F_TS, vals)) return GIVE_WAY;
    counts[0] = actions;
    counts[1] = irreversible;
    counts[2] = handoffs;
    counts[3] = checkpoints;
    counts[4] = line;
    counts[5] = seq;
    fin[0] = fs;
    fin[1] = end;
    return OK;
}

/* -- the rules (judge_native) ----------------------------------------------------------
 *
 * The replay engine (assay.conformance.engine.Replayer) for a spec whose rules read only
 * each event type's own fields and bind no call: mandatory checkpoints (scope first or
 * each, consume, confirmed_by) and handoff contracts (required fields, verification,
 * unverified claims carried across handoffs). The messages are the engine's, byte for
 * byte. What this code does not hold (a value whose canonical JSON is not its own text,
 * more state than the fixed limits below) gives way: Python judges the file.
 */

#define MAX_RULES 32
#define MAX_CONTRACTS 32
#define MAX_LICENCES 64
#define MAX_PENDING 64
#define MAX_FAILURES 64
#define MAX_HANDOFFS 256
#define MAX_CHAINS 128
#define MAX_HOLDERS 16
#define MAX_PAYLOAD 64

typedef struct {
    cp s;
    Py_ssize_t len;
} Span;

typedef struct {
    char *b;
    Py_ssize_t n, cap;
} Buf;

static int
buf_add(Buf *b, const void *s, Py_ssize_t n)
{
    if (b->n + n > b->cap) {
        Py_ssize_t cap = b->cap ? b->cap * 2 : 256;
        while (cap < b->n + n) cap *= 2;
        char *nb = PyMem_Realloc(b->b, (size_t)cap);
        if (!nb) {
            PyErr_NoMemory();
            return FAIL;
        }
        b->b = nb;
        b->cap = cap;
    }
    memcpy(b->b + b->n, s, (size_t)n);
    b->n += n;
    return OK;
}

static int
buf_str(Buf *b, const char *s)
{
    return buf_add(b, s, (Py_ssize_t)strlen(s));
}

static int
buf_span(Buf *b, Span sp)
{
    return buf_add(b, sp.s, sp.len);
}

static int
buf_ll(Buf *b, long long v)
{
    char t[32];
    int n = snprintf(t, sizeof t, "%lld", v);
    return buf_add(b, t, n);
}

/* "seq N" */
static int
buf_seq(Buf *b, long long seq)
{
    if (buf_str(b, "seq ") != OK) return FAIL;
    return buf_ll(b, seq);
}

typedef struct {
    Span cid;
    int each, consume;
    Span *guarded;
    Py_ssize_t n_guarded;
    Span *confirmers;
    Py_ssize_t n_confirmers;
    int has_confirmers;
    Span allowed; /* the confirmers as messages list them: "['a', 'b']" */
} Rule;

typedef struct {
    Span from, to;
    Span *required;
    Py_ssize_t n_required;
    int require_verified;
} Contract;

typedef struct {
    PyObject *source; /* the tuples the spans point into */
    Py_ssize_t n_rules, n_contracts;
    Rule rules[MAX_RULES];
    Contract contracts[MAX_CONTRACTS];
    PyObject *guarded, *cids; /* for scan(): every guarded action type, every rule's id */
    struct Judge *scratch;    /* the state of a file being judged, reused file after file */
    Span spans[];             /* the guarded, confirmers and required names, in one block */
} Plan;

typedef struct {
    long long seq;
    Span action;
    Py_ssize_t line;
    char *why; /* NULL: no reason known */
    Py_ssize_t why_len;
} Pending;

typedef struct {
    long long seq;
    PyObject *finding;
} Failure;

typedef struct {
    long long lic[MAX_LICENCES];
    Py_ssize_t n_lic;
    Pending pending[MAX_PENDING];
    Py_ssize_t n_pending;
    Failure fail[MAX_FAILURES];
    Py_ssize_t n_fail;
    int done, seen;
    Buf why_not; /* n == 0: none */
} RState;

typedef struct {
    Span src, dst;
    long long seq;
    Py_ssize_t line;
} Border;

typedef struct {
    Span agent;
    int hops;
    long long first_seq;
    Py_ssize_t first_border;
} Holder;

typedef struct {
    Span name, value; /* the value as canonical JSON: its own text here */
    Holder holders[MAX_HOLDERS];
    Py_ssize_t n_holders;
    int best_hops; /* 0: no chain of two handoffs or more yet */
    long long best_first_seq, best_seq;
    Py_ssize_t best_first_border, best_border;
} Chain;

struct Judge {
    const Plan *plan;
    int busy; /* a call is using it (a finalizer run by the collector could call again) */
    RState st[MAX_RULES];
    unsigned char crossed[MAX_CONTRACTS], absent[MAX_CONTRACTS];
    Agents *ag;
    PyObject *handoff_reasons, *warnings;
    Border borders[MAX_HANDOFFS];
    Py_ssize_t n_borders;
    Chain chains[MAX_CHAINS];
    Py_ssize_t n_chains;
};

enum { R_AFTER, R_SKIPPED, R_VIOLATION, R_UNVERIFIED, R_PROPAGATED, W_ABSENT, W_UNCONTRACTED };

static PyObject *
span_str(Span sp)
{
    if (!sp.s) Py_RETURN_NONE;
    return PyUnicode_DecodeUTF8((const char *)sp.s, sp.len, "strict");
}

/* (code, message, seq, line, checkpoint_id, action_type, from_agent, to_agent, hops) */
static PyObject *
finding(int code, Buf *msg, long long seq, Py_ssize_t line, Span cid, Span action, Span from,
        Span to, int hops)
{
    PyObject *m = PyUnicode_DecodeUTF8(msg->b, msg->n, "strict");
    msg->n = 0;
    if (!m) return NULL;
    PyObject *c = span_str(cid), *a = c ? span_str(action) : NULL;
    PyObject *f = a ? span_str(from) : NULL, *t = f ? span_str(to) : NULL;
    if (!t) {
        Py_DECREF(m);
        Py_XDECREF(c);
        Py_XDECREF(a);
        Py_XDECREF(f);
        return NULL;
    }
    return Py_BuildValue("(iNLnNNNNi)", code, m, seq, line, c, a, f, t, hops);
}

static const Span NOSPAN = {NULL, 0};

/* A finding made and put at the end of `list` */
static int
append_finding(PyObject *list, int code, Buf *msg, long long seq, Py_ssize_t line, Span cid,
               Span action, Span from, Span to, int hops)
{
    PyObject *f = finding(code, msg, seq, line, cid, action, from, to, hops);
    if (!f) return FAIL;
    int bad = PyList_Append(list, f);
    Py_DECREF(f);
    return bad ? FAIL : OK;
}


static inline int
span_eq(Span a, cp s, Py_ssize_t len)
{
    return a.len == len && memcmp(a.s, s, (size_t)len) == 0;
}

static inline Span
span_of(const Val *v)
{
    Span sp = {v->s, v->len};
    return sp;
}

static int
quote_names(Buf *b, Span *names, Py_ssize_t n)
{
    if (buf_str(b, "[") != OK) return FAIL;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (i && buf_str(b, ", ") != OK) return FAIL;
        if (buf_str(b, "'") != OK || buf_span(b, names[i]) != OK || buf_str(b, "'") != OK)
            return FAIL;
    }
    return buf_str(b, "]");
}

static int
border_text(Buf *b, Span src, Span dst, long long seq)
{
    if (buf_span(b, src) != OK || buf_str(b, "->") != OK || buf_span(b, dst) != OK
        || buf_str(b, " (") != OK || buf_seq(b, seq) != OK)
        return FAIL;
    return buf_str(b, ")");
}

static int
set_why(Buf *why, Buf *text)
{
    why->n = 0;
    return buf_add(why, text->b, text->n);
}

static int
guarded_action(Judge *j, RState *st, const Rule *r, long long seq, Py_ssize_t line, Span action,
               Buf *msg)
{
    st->seen = 1;
    if (!r->each) {
        if (st->done) return OK;
        st->done = 1;
    }
    if (st->n_lic) {
        if (r->consume) {
            long long used = st->lic[0];
            memmove(st->lic, st->lic + 1, (size_t)(st->n_lic - 1) * sizeof(long long));
            st->n_lic--;
            msg->n = 0;
            if (buf_str(msg, "checkpoint '") != OK || buf_span(msg, r->cid) != OK
                || buf_str(msg, "' at ") != OK || buf_seq(msg, used) != OK
                || buf_str(msg, " was already used by ") != OK || buf_seq(msg, seq) != OK
                || set_why(&st->why_not, msg) != OK)
                return FAIL;
            msg->n = 0;
        }
        return OK;
    }
    if (st->n_pending >= MAX_PENDING) return GIVE_WAY;
    Pending *pd = &st->pending[st->n_pending];
    pd->seq = seq;
    pd->action = action;
    pd->line = line;
    pd->why = NULL;
    pd->why_len = st->why_not.n;
    if (st->why_not.n) {
        pd->why = PyMem_Malloc((size_t)st->why_not.n);
        if (!pd->why) {
            PyErr_NoMemory();
            return FAIL;
        }
        memcpy(pd->why, st->why_not.b, (size_t)st->why_not.n);
    }
    st->n_pending++;
    (void)j;
    return OK;
}

static int
judge_action(Judge *j, long long seq, Py_ssize_t line, Py_ssize_t agent, const Val *at)
{
    const Plan *pl = j->plan;
    Span action = span_of(at);
    int guarded = 0;
    for (Py_ssize_t i = 0; i < pl->n_rules && !guarded; i++) {
        for (Py_ssize_t g = 0; g < pl->rules[i].n_guarded; g++) {
            if (span_eq(pl->rules[i].guarded[g], at->s, at->len)) {
                guarded = 1;
                break;
            }
        }
    }
    if (!guarded) return OK;
    Buf msg = {0};
    int rc = OK;
    if (agent >= 0) {
        /* a contracted border into this agent never crossed before it: warned once */
        cp as = j->ag->s[agent];
        Py_ssize_t alen = j->ag->len[agent];
        for (Py_ssize_t c = 0; c < pl->n_contracts && rc == OK; c++) {
            const Contract *k = &pl->contracts[c];
            if (!span_eq(k->to, as, alen) || j->crossed[c] || j->absent[c]) continue;
            j->absent[c] = 1;
            if (buf_str(&msg, "guarded action '") != OK || buf_span(&msg, action) != OK
                || buf_str(&msg, "' ran at ") != OK || buf_seq(&msg, seq) != OK
                || buf_str(&msg, " but the contracted handoff ") != OK
                || buf_span(&msg, k->from) != OK || buf_str(&msg, "->") != OK
                || buf_span(&msg, k->to) != OK
                || buf_str(&msg, " never happened before it; what the contract checks was "
                                 "never delivered") != OK) {
                rc = FAIL;
                break;
            }
            rc = append_finding(j->warnings, W_ABSENT, &msg, seq, line, NOSPAN, action, k->from,
                                k->to, 0);
        }
    }
    for (Py_ssize_t i = 0; i < pl->n_rules && rc == OK; i++) {
        const Rule *r = &pl->rules[i];
        for (Py_ssize_t g = 0; g < r->n_guarded && rc == OK; g++) {
            if (span_eq(r->guarded[g], at->s, at->len))
                rc = guarded_action(j, &j->st[i], r, seq, line, action, &msg);
        }
    }
    PyMem_Free(msg.b);
    return rc;
}

/* A value as orjson writes it sorted and compact, when that is its own text here */
static int
canonical(const Val *v, Span *out)
{
    switch (v->type) {
    case T_STRING:
        if (v->esc) return GIVE_WAY;
        break;
    case T_INT:
        if (v->end - v->start == 2 && v->start[0] == '-' && v->start[1] == '0') return GIVE_WAY;
        break;
    case T_TRUE:
    case T_FALSE:
    case T_NULL:
        break;
    default:
        return GIVE_WAY;
    }
    out->s = v->start;
    out->len = v->end - v->start;
    return OK;
}

static int
judge_checkpoint(Judge *j, long long seq, Py_ssize_t line, const Val *cid,
                 const Val *confirmed_by, int has)
{
    const Plan *pl = j->plan;
    Buf msg = {0};
    int rc = OK;
    for (Py_ssize_t i = 0; i < pl->n_rules && rc == OK; i++) {
        const Rule *r = &pl->rules[i];
        if (!span_eq(r->cid, cid->s, cid->len)) continue;
        RState *st = &j->st[i];
        if (r->has_confirmers) {
            int ok = 0;
            if (has && confirmed_by->type == T_STRING) {
                if (confirmed_by->esc) {
                    rc = GIVE_WAY;
                    break;
                }
                for (Py_ssize_t k = 0; k < r->n_confirmers; k++) {
                    if (span_eq(r->confirmers[k], confirmed_by->s, confirmed_by->len)) {
                        ok = 1;
                        break;
                    }
                }
            }
            if (!ok) {
                Span shown = {(cp)"null", 4};
                if (has && (rc = canonical(confirmed_by, &shown)) != OK) break;
                msg.n = 0;
                if (buf_str(&msg, "checkpoint '") != OK || buf_span(&msg, r->cid) != OK
                    || buf_str(&msg, "' at ") != OK || buf_seq(&msg, seq) != OK
                    || buf_str(&msg, " was confirmed by ") != OK || buf_span(&msg, shown) != OK
                    || buf_str(&msg, ", not one of ") != OK || buf_span(&msg, r->allowed) != OK
                    || set_why(&st->why_not, &msg) != OK) {
                    rc = FAIL;
                    break;
                }
                msg.n = 0;
                continue;
            }
        }
        if (st->n_lic >= MAX_LICENCES) {
            rc = GIVE_WAY;
            break;
        }
        st->lic[st->n_lic++] = seq;
        for (Py_ssize_t k = 0; k < st->n_pending && rc == OK; k++) {
            Pending *pd = &st->pending[k];
            if (st->n_fail >= MAX_FAILURES) {
                rc = GIVE_WAY;
                break;
            }
            msg.n = 0;
            if (buf_str(&msg, "checkpoint '") != OK || buf_span(&msg, r->cid) != OK
                || buf_str(&msg, "' came at ") != OK || buf_seq(&msg, seq) != OK
                || buf_str(&msg, ", after the action it guards: '") != OK
                || buf_span(&msg, pd->action) != OK || buf_str(&msg, "' ran at ") != OK
                || buf_seq(&msg, pd->seq) != OK) {
                rc = FAIL;
                break;
            }
            PyObject *f = finding(R_AFTER, &msg, pd->seq, pd->line, r->cid, pd->action, NOSPAN,
                                  NOSPAN, 0);
            if (!f) {
                rc = FAIL;
                break;
            }
            st->fail[st->n_fail].seq = pd->seq;
            st->fail[st->n_fail].finding = f;
            st->n_fail++;
        }
        if (rc == OK) {
            for (Py_ssize_t k = 0; k < st->n_pending; k++) PyMem_Free(st->pending[k].why);
            st->n_pending = 0;
        }
    }
    PyMem_Free(msg.b);
    return rc;
}

/* The top-level keys of an object an object value holds: "value" and "verified" */
static int
inner_fields(Ctx *x, const Val *obj, Val *value, int *has_value, int *verified_true,
             int *has_verified)
{
    int rc, done;
    *has_value = *verified_true = *has_verified = 0;
    x->p = obj->start;
    x->end = obj->end;
    x->depth = 0;
    if ((rc = open_container(x, '}', &done)) != OK || done) return rc;
    do {
        cp s;
        Py_ssize_t len;
        Val v;
        if ((rc = read_key(x, &s, &len)) != OK || (rc = read_typed(x, &v)) != OK) return rc;
        if (len == 5 && memcmp(s, "value", 5) == 0) {
            *has_value = 1;
            *value = v;
        }
        else if (len == 8 && memcmp(s, "verified", 8) == 0) {
            *has_verified = 1;
            *verified_true = v.type == T_TRUE;
        }
        if ((rc = next_member(x, '}', &done)) != OK) return rc;
    } while (!done);
    return OK;
}

static Holder *
holder_of(Chain *ch, Span agent)
{
    for (Py_ssize_t i = 0; i < ch->n_holders; i++) {
        if (span_eq(ch->holders[i].agent, agent.s, agent.len)) return &ch->holders[i];
    }
    return NULL;
}

static int
judge_handoff(Judge *j, Ctx *x, long long seq, Py_ssize_t line, const Val *srcv,
              const Val *dstv, const Val *payload)
{
    const Plan *pl = j->plan;
    Span src = span_of(srcv), dst = span_of(dstv);
    int rc = OK;
    if (j->n_borders >= MAX_HANDOFFS) return GIVE_WAY;
    Py_ssize_t here = j->n_borders++;
    j->borders[here].src = src;
    j->borders[here].dst = dst;
    j->borders[here].seq = seq;
    j->borders[here].line = line;
    /* the payload's keys and values, in order */
    Span names[MAX_PAYLOAD];
    Val values[MAX_PAYLOAD];
    Py_ssize_t n = 0;
    int done;
    x->p = payload->start;
    x->end = payload->end;
    x->depth = 0;
    if ((rc = open_container(x, '}', &done)) != OK) return rc;
    while (!done) {
        if (n >= MAX_PAYLOAD) return GIVE_WAY;
        if ((rc = read_key(x, &names[n].s, &names[n].len)) != OK
            || (rc = read_typed(x, &values[n])) != OK || (rc = next_member(x, '}', &done)) != OK)
            return rc;
        n++;
    }
    /* what each value says of itself: {"value": v, "verified": b} */
    Val inner[MAX_PAYLOAD];
    int has_value[MAX_PAYLOAD], verified_true[MAX_PAYLOAD], has_verified[MAX_PAYLOAD];
    for (Py_ssize_t i = 0; i < n; i++) {
        has_value[i] = verified_true[i] = has_verified[i] = 0;
        if (values[i].type == T_OBJECT) {
            rc = inner_fields(x, &values[i], &inner[i], &has_value[i], &verified_true[i],
                              &has_verified[i]);
            if (rc != OK) return rc;
        }
    }
    Py_ssize_t ci = -1;
    for (Py_ssize_t c = 0; c < pl->n_contracts; c++) {
        if (span_eq(pl->contracts[c].from, src.s, src.len)
            && span_eq(pl->contracts[c].to, dst.s, dst.len)) {
            ci = c;
            break;
        }
    }
    Buf msg = {0};
    if (ci >= 0) j->crossed[ci] = 1;
    if (ci < 0) {
        if (border_text(&msg, src, dst, seq) != OK
            || buf_str(&msg, " is covered by no contract; flagged, not blocked, because the "
                             "spec may be incomplete") != OK)
            goto fail;
        if (append_finding(j->warnings, W_UNCONTRACTED, &msg, seq, line, NOSPAN, NOSPAN, src,
                           dst, 0) != OK)
            goto fail;
    }
    else {
        const Contract *k = &pl->contracts[ci];
        Span missing[MAX_PAYLOAD], unverified[MAX_PAYLOAD];
        Py_ssize_t n_missing = 0, n_unverified = 0;
        for (Py_ssize_t r = 0; r < k->n_required; r++) {
            Py_ssize_t at = -1;
            for (Py_ssize_t i = 0; i < n; i++) {
                if (span_eq(k->required[r], names[i].s, names[i].len)) {
                    at = i;
                    break;
                }
            }
            if (at < 0) {
                if (n_missing >= MAX_PAYLOAD) goto give_way;
                missing[n_missing++] = k->required[r];
            }
            else if (!(values[at].type == T_OBJECT && verified_true[at] && has_value[at])) {
                if (n_unverified >= MAX_PAYLOAD) goto give_way;
                unverified[n_unverified++] = k->required[r];
            }
        }
        if (n_missing) {
            if (border_text(&msg, src, dst, seq) != OK
                || buf_str(&msg, " did not deliver required fields ") != OK
                || quote_names(&msg, missing, n_missing) != OK)
                goto fail;
            if (append_finding(j->handoff_reasons, R_VIOLATION, &msg, seq, line, NOSPAN, NOSPAN,
                               src, dst, 0) != OK)
                goto fail;
        }
        if (k->require_verified && n_unverified) {
            if (border_text(&msg, src, dst, seq) != OK
                || buf_str(&msg, ": required fields ") != OK
                || quote_names(&msg, unverified, n_unverified) != OK
                || buf_str(&msg, " arrived without verified=true where the contract demands "
                                 "verification") != OK)
                goto fail;
            if (append_finding(j->handoff_reasons, R_UNVERIFIED, &msg, seq, line, NOSPAN, NOSPAN,
                               src, dst, 0) != OK)
                goto fail;
        }
    }
    PyMem_Free(msg.b);
    msg.b = NULL;
    /* the claims: each unverified value, carried from holder to holder */
    for (Py_ssize_t i = 0; i < n; i++) {
        const Val *value = &values[i];
        if (values[i].type == T_OBJECT && has_value[i]) {
            if (verified_true[i]) continue;
            if (has_verified[i]) value = &inner[i];
        }
        Span canon;
        if ((rc = canonical(value, &canon)) != OK) return rc;
        Chain *ch = NULL;
        for (Py_ssize_t c = 0; c < j->n_chains; c++) {
            Chain *cc = &j->chains[c];
            if (span_eq(cc->name, names[i].s, names[i].len)
                && span_eq(cc->value, canon.s, canon.len)) {
                ch = cc;
                break;
            }
        }
        if (!ch) {
            if (j->n_chains >= MAX_CHAINS) return GIVE_WAY;
            ch = &j->chains[j->n_chains++];
            ch->name = names[i];
            ch->value = canon;
            ch->n_holders = 0;
            ch->best_hops = 0;
        }
        int hops;
        long long first_seq;
        Py_ssize_t first_border;
        Holder *held = holder_of(ch, src);
        if (!held) {
            hops = 1;
            first_seq = seq;
            first_border = here;
        }
        else {
            hops = held->hops + 1;
            first_seq = held->first_seq;
            first_border = held->first_border;
        }
        Holder *prior = holder_of(ch, dst);
        if (!prior) {
            if (ch->n_holders >= MAX_HOLDERS) return GIVE_WAY;
            prior = &ch->holders[ch->n_holders++];
            prior->agent = dst;
            prior->hops = 0;
        }
        if (prior->hops < hops) {
            prior->hops = hops;
            prior->first_seq = first_seq;
            prior->first_border = first_border;
        }
        if (hops >= 2 && ch->best_hops < hops) {
            ch->best_hops = hops;
            ch->best_first_seq = first_seq;
            ch->best_first_border = first_border;
            ch->best_seq = seq;
            ch->best_border = here;
        }
    }
    return OK;
give_way:
    PyMem_Free(msg.b);
    return GIVE_WAY;
fail:
    PyMem_Free(msg.b);
    return FAIL;
}

static int
span_cmp(Span a, Span b)
{
    Py_ssize_t n = a.len < b.len ? a.len : b.len;
    int c = memcmp(a.s, b.s, (size_t)n);
    if (c) return c;
    return a.len < b.len ? -1 : a.len > b.len;
}

/* The verdict's findings: each rule's in seq order, then the handoffs', then the claims
 * carried two handoffs or more, in the order they entered. */
static int
judge_finish(Judge *j, PyObject *reasons, PyObject *unseen, PyObject *uncrossed)
{
    const Plan *pl = j->plan;
    Buf msg = {0};
    int rc = OK;
    for (Py_ssize_t i = 0; i < pl->n_rules && rc == OK; i++) {
        RState *st = &j->st[i];
        const Rule *r = &pl->rules[i];
        if (!st->seen) {
            PyObject *o = PyLong_FromSsize_t(i);
            if (!o || PyList_Append(unseen, o)) rc = FAIL;
            Py_XDECREF(o);
            continue;
        }
        if (!st->n_fail && !st->n_pending) continue;
        Py_ssize_t total = st->n_fail + st->n_pending;
        Failure *judged = PyMem_Malloc((size_t)total * sizeof(Failure));
        if (!judged) {
            PyErr_NoMemory();
            rc = FAIL;
            break;
        }
        Py_ssize_t m = 0;
        for (Py_ssize_t k = 0; k < st->n_fail; k++) {
            judged[m++] = st->fail[k];
            st->fail[k].finding = NULL; /* now judged's */
        }
        st->n_fail = 0;
        for (Py_ssize_t k = 0; k < st->n_pending && rc == OK; k++) {
            Pending *pd = &st->pending[k];
            msg.n = 0;
            int bad;
            if (pd->why) {
                bad = buf_str(&msg, "no valid checkpoint '") != OK || buf_span(&msg, r->cid) != OK
                      || buf_str(&msg, "' before '") != OK || buf_span(&msg, pd->action) != OK
                      || buf_str(&msg, "' at ") != OK || buf_seq(&msg, pd->seq) != OK
                      || buf_str(&msg, ": ") != OK || buf_add(&msg, pd->why, pd->why_len) != OK;
            }
            else {
                bad = buf_str(&msg, "checkpoint '") != OK || buf_span(&msg, r->cid) != OK
                      || buf_str(&msg, "' is absent from the trajectory; the guarded action '")
                             != OK
                      || buf_span(&msg, pd->action) != OK || buf_str(&msg, "' ran at ") != OK
                      || buf_seq(&msg, pd->seq) != OK;
            }
            PyObject *f = bad ? NULL : finding(R_SKIPPED, &msg, pd->seq, pd->line, r->cid,
                                               pd->action, NOSPAN, NOSPAN, 0);
            if (!f) {
                rc = FAIL;
                break;
            }
            judged[m].seq = pd->seq;
            judged[m].finding = f;
            m++;
        }
        /* a stable sort by seq, as list.sort */
        for (Py_ssize_t a = 1; a < m; a++) {
            Failure t = judged[a];
            Py_ssize_t b = a;
            while (b > 0 && judged[b - 1].seq > t.seq) {
                judged[b] = judged[b - 1];
                b--;
            }
            judged[b] = t;
        }
        for (Py_ssize_t k = 0; k < m; k++) {
            if (rc == OK && PyList_Append(reasons, judged[k].finding)) rc = FAIL;
            Py_DECREF(judged[k].finding);
        }
        PyMem_Free(judged);
    }
    if (rc == OK) {
        Py_ssize_t n = PyList_GET_SIZE(j->handoff_reasons);
        for (Py_ssize_t k = 0; k < n && rc == OK; k++) {
            if (PyList_Append(reasons, PyList_GET_ITEM(j->handoff_reasons, k))) rc = FAIL;
        }
    }
    /* the chains of two handoffs or more, by (first seq, field name, value) */
    Py_ssize_t order[MAX_CHAINS], n_long = 0;
    for (Py_ssize_t c = 0; c < j->n_chains; c++) {
        if (j->chains[c].best_hops) order[n_long++] = c;
    }
    for (Py_ssize_t a = 1; a < n_long; a++) {
        Py_ssize_t t = order[a], b = a;
        const Chain *ct = &j->chains[t];
        while (b > 0) {
            const Chain *cb = &j->chains[order[b - 1]];
            int gt = cb->best_first_seq != ct->best_first_seq
                         ? cb->best_first_seq > ct->best_first_seq
                         : (span_cmp(cb->name, ct->name) ? span_cmp(cb->name, ct->name) > 0
                                                         : span_cmp(cb->value, ct->value) > 0);
            if (!gt) break;
            order[b] = order[b - 1];
            b--;
        }
        order[b] = t;
    }
    for (Py_ssize_t k = 0; k < n_long && rc == OK; k++) {
        const Chain *ch = &j->chains[order[k]];
        const Border *first = &j->borders[ch->best_first_border];
        const Border *last = &j->borders[ch->best_border];
        msg.n = 0;
        if (buf_str(&msg, "field '") != OK || buf_span(&msg, ch->name) != OK
            || buf_str(&msg, "'=") != OK || buf_span(&msg, ch->value) != OK
            || buf_str(&msg, " entered unverified at ") != OK
            || border_text(&msg, first->src, first->dst, first->seq) != OK
            || buf_str(&msg, " and crossed ") != OK || buf_ll(&msg, ch->best_hops) != OK
            || buf_str(&msg, " handoffs without anyone verifying it, the last at ") != OK
            || border_text(&msg, last->src, last->dst, last->seq) != OK) {
            rc = FAIL;
            break;
        }
        rc = append_finding(reasons, R_PROPAGATED, &msg, last->seq, last->line, NOSPAN, NOSPAN,
                            last->src, last->dst, ch->best_hops);
    }
    for (Py_ssize_t c = 0; c < pl->n_contracts && rc == OK; c++) {
        if (j->crossed[c] || j->absent[c]) continue;
        PyObject *o = PyLong_FromSsize_t(c);
        if (!o || PyList_Append(uncrossed, o)) rc = FAIL;
        Py_XDECREF(o);
    }
    PyMem_Free(msg.b);
    return rc;
}

/* Leave the state as a new file finds it (buffers kept for the next one). */
static void
judge_reset(Judge *j)
{
    for (Py_ssize_t i = 0; i < j->plan->n_rules; i++) {
        RState *st = &j->st[i];
        for (Py_ssize_t k = 0; k < st->n_pending; k++) PyMem_Free(st->pending[k].why);
        for (Py_ssize_t k = 0; k < st->n_fail; k++) Py_XDECREF(st->fail[k].finding);
        st->n_pending = st->n_fail = st->n_lic = 0;
        st->done = st->seen = 0;
        st->why_not.n = 0;
    }
    memset(j->crossed, 0, sizeof j->crossed);
    memset(j->absent, 0, sizeof j->absent);
    j->n_borders = j->n_chains = 0;
    Py_CLEAR(j->handoff_reasons);
    Py_CLEAR(j->warnings);
}

static void
judge_free(Judge *j)
{
    judge_reset(j);
    for (Py_ssize_t i = 0; i < MAX_RULES; i++) PyMem_Free(j->st[i].why_not.b);
    PyMem_Free(j);
}

/* -- the plan: a spec's rules, read once ----------------------------------------------- */

static const char *PLAN = "assay._accel.plan";

static void
plan_free(PyObject *capsule)
{
    Plan *pl = PyCapsule_GetPointer(capsule, PLAN);
    if (!pl) return;
    Py_XDECREF(pl->source);
    Py_XDECREF(pl->guarded);
    Py_XDECREF(pl->cids);
    if (pl->scratch) judge_free(pl->scratch);
    PyMem_Free(pl);
}

static int
bytes_span(PyObject *o, Span *sp)
{
    if (!PyBytes_Check(o)) {
        PyErr_SetString(PyExc_TypeError, "make_plan: names must be bytes");
        return FAIL;
    }
    sp->s = (cp)PyBytes_AS_STRING(o);
    sp->len = PyBytes_GET_SIZE(o);
    return OK;
}

static int
span_list(PyObject *tuple, Span **at, Span **out, Py_ssize_t *n)
{
    if (!PyTuple_Check(tuple)) {
        PyErr_SetString(PyExc_TypeError, "make_plan: names must be a tuple");
        return FAIL;
    }
    *n = PyTuple_GET_SIZE(tuple);
    *out = *at;
    for (Py_ssize_t i = 0; i < *n; i++) {
        if (bytes_span(PyTuple_GET_ITEM(tuple, i), &(*at)[i]) != OK) return FAIL;
    }
    *at += *n;
    return OK;
}

static Py_ssize_t
names_in(PyObject *tuple)
{
    return PyTuple_Check(tuple) ? PyTuple_GET_SIZE(tuple) : 0;
}

PyDoc_STRVAR(make_plan_doc,
"make_plan(rules, contracts) -> plan | None\n\n"
"rules: tuples (checkpoint_id, guarded, each, consume, confirmed_by, allowed) with\n"
"guarded a tuple of action types, confirmed_by a tuple of names or None, allowed the\n"
"text messages give them; contracts: tuples (from_agent, to_agent, required_fields,\n"
"require_verified). Names are UTF-8 bytes. None when the spec is larger than this\n"
"module holds (Python judges alone then).");

static PyObject *
make_plan(PyObject *module, PyObject *args)
{
    PyObject *rules, *contracts;
    (void)module;
    if (!PyArg_ParseTuple(args, "O!O!:make_plan", &PyTuple_Type, &rules, &PyTuple_Type,
                          &contracts))
        return NULL;
    Py_ssize_t nr = PyTuple_GET_SIZE(rules), nc = PyTuple_GET_SIZE(contracts);
    if (nr > MAX_RULES || nc > MAX_CONTRACTS) Py_RETURN_NONE;
    Py_ssize_t total = 0;
    for (Py_ssize_t i = 0; i < nr; i++) {
        PyObject *r = PyTuple_GET_ITEM(rules, i);
        if (!PyTuple_Check(r) || PyTuple_GET_SIZE(r) != 6) {
            PyErr_SetString(PyExc_TypeError, "make_plan: a rule is a 6-tuple");
            return NULL;
        }
        total += names_in(PyTuple_GET_ITEM(r, 1)) + names_in(PyTuple_GET_ITEM(r, 4));
    }
    for (Py_ssize_t i = 0; i < nc; i++) {
        PyObject *c = PyTuple_GET_ITEM(contracts, i);
        if (!PyTuple_Check(c) || PyTuple_GET_SIZE(c) != 4) {
            PyErr_SetString(PyExc_TypeError, "make_plan: a contract is a 4-tuple");
            return NULL;
        }
        total += names_in(PyTuple_GET_ITEM(c, 2));
    }
    Plan *pl = PyMem_Calloc(1, sizeof(Plan) + (size_t)(total + 1) * sizeof(Span));
    if (!pl) return PyErr_NoMemory();
    pl->source = PyTuple_Pack(2, rules, contracts);
    PyObject *guarded = PyList_New(0), *cids = PyList_New(0);
    Span *at = pl->spans;
    if (!pl->source || !guarded || !cids) goto fail;
    pl->n_rules = nr;
    pl->n_contracts = nc;
    for (Py_ssize_t i = 0; i < nr; i++) {
        PyObject *r = PyTuple_GET_ITEM(rules, i);
        Rule *ru = &pl->rules[i];
        if (bytes_span(PyTuple_GET_ITEM(r, 0), &ru->cid) != OK
            || span_list(PyTuple_GET_ITEM(r, 1), &at, &ru->guarded, &ru->n_guarded) != OK)
            goto fail;
        ru->each = PyObject_IsTrue(PyTuple_GET_ITEM(r, 2));
        ru->consume = PyObject_IsTrue(PyTuple_GET_ITEM(r, 3));
        PyObject *conf = PyTuple_GET_ITEM(r, 4);
        ru->has_confirmers = conf != Py_None;
        if (ru->has_confirmers
            && span_list(conf, &at, &ru->confirmers, &ru->n_confirmers) != OK)
            goto fail;
        if (bytes_span(PyTuple_GET_ITEM(r, 5), &ru->allowed) != OK) goto fail;
        if (PyList_Append(cids, PyTuple_GET_ITEM(r, 0))) goto fail;
        for (Py_ssize_t g = 0; g < ru->n_guarded; g++) {
            if (PyList_Append(guarded, PyTuple_GET_ITEM(PyTuple_GET_ITEM(r, 1), g))) goto fail;
        }
    }
    for (Py_ssize_t i = 0; i < nc; i++) {
        PyObject *c = PyTuple_GET_ITEM(contracts, i);
        Contract *k = &pl->contracts[i];
        if (bytes_span(PyTuple_GET_ITEM(c, 0), &k->from) != OK
            || bytes_span(PyTuple_GET_ITEM(c, 1), &k->to) != OK
            || span_list(PyTuple_GET_ITEM(c, 2), &at, &k->required, &k->n_required) != OK)
            goto fail;
        k->require_verified = PyObject_IsTrue(PyTuple_GET_ITEM(c, 3));
    }
    pl->guarded = PyList_AsTuple(guarded);
    pl->cids = PyList_AsTuple(cids);
    Py_DECREF(guarded);
    Py_DECREF(cids);
    guarded = cids = NULL;
    if (!pl->guarded || !pl->cids) goto fail;
    pl->scratch = PyMem_Calloc(1, sizeof(Judge));
    if (!pl->scratch) {
        PyErr_NoMemory();
        goto fail;
    }
    pl->scratch->plan = pl;
    PyObject *capsule = PyCapsule_New(pl, PLAN, plan_free);
    if (!capsule) goto fail;
    return capsule;
fail:
    Py_XDECREF(guarded);
    Py_XDECREF(cids);
    Py_XDECREF(pl->source);
    Py_XDECREF(pl->guarded);
    Py_XDECREF(pl->cids);
    if (pl->scratch) PyMem_Free(pl->scratch);
    PyMem_Free(pl);
    return NULL;
}

PyDoc_STRVAR(judge_native_doc,
"judge_native(data, plan) -> tuple | None\n\n"
"Read and judge a native JSONL trajectory against a plan (make_plan), or give way (None).\n"
"The result is (agents, actions, irreversible, handoffs, checkpoints, records, final_seq,\n"
"final_start, final_end, reasons, warnings, unseen, uncrossed): the agents of the records\n"
"before the final line in first-seen order, the counts, the findings as tuples (code,\n"
"message, seq, line, checkpoint_id, action_type, from_agent, to_agent, hops), the\n"
"indices of the rules no guarded action reached and of the contracts never crossed.");

static PyObject *
judge_native(PyObject *module, PyObject *args)
{
    Py_buffer buf;
    PyObject *capsule;
    (void)module;
    if (!PyArg_ParseTuple(args, "y*O:judge_native", &buf, &capsule)) return NULL;
    if (!PyCapsule_IsValid(capsule, PLAN)) {
        PyBuffer_Release(&buf);
        PyErr_SetString(PyExc_TypeError, "judge_native: the plan must come from make_plan");
        return NULL;
    }
    Plan *pl = PyCapsule_GetPointer(capsule, PLAN);
    Ctx x = {0};
    Agents ag;
    ag.n = 0;
    /* The plan's own state, unless a call that has not returned holds it. */
    Judge *j = pl->scratch;
    if (j->busy) {
        PyBuffer_Release(&buf);
        Py_RETURN_NONE;
    }
    j->busy = 1;
    PyObject *result = NULL, *reasons = NULL, *unseen = NULL, *uncrossed = NULL;
    long long counts[6];
    Py_ssize_t fin[2];
    j->ag = &ag;
    j->handoff_reasons = PyList_New(0);
    j->warnings = PyList_New(0);
    reasons = PyList_New(0);
    unseen = PyList_New(0);
    uncrossed = PyList_New(0);
    if (!j->handoff_reasons || !j->warnings || !reasons || !unseen || !uncrossed) goto done;
    int rc = scan((cp)buf.buf, buf.len, pl->guarded, pl->cids, &x, &ag, NULL, counts, fin, j);
    if (rc == OK) rc = judge_finish(j, reasons, unseen, uncrossed);
    if (rc == FAIL) goto done;
    if (rc == GIVE_WAY) {
        result = Py_None;
        Py_INCREF(result);
        goto done;
    }
    PyObject *agents = agents_list(&ag);
    if (!agents) goto done;
    result = Py_BuildValue("(NLLLLLLnnOOOO)", agents, counts[0], counts[1], counts[2],
                           counts[3], counts[4], counts[5], fin[0], fin[1], reasons, j->warnings,
                           unseen, uncrossed);
done:
    judge_reset(j);
    j->busy = 0;
    for (Py_ssize_t i = 0; i < ag.n; i++) Py_DECREF(ag.obj[i]);
    Py_XDECREF(reasons);
    Py_XDECREF(unseen);
    Py_XDECREF(uncrossed);
    PyMem_Free(x.kptr);
    PyMem_Free(x.klen);
    PyBuffer_Release(&buf);
    return result;
}

/* -- checking lines --------------------------------------------------------------- */

PyDoc_STRVAR(check_lines_doc,
"check_lines(data, start=0, end=len(data), *, any_number=False) -> bool\n\n"
"True when every line of data[start:end] that holds more than blanks is one JSON value,\n"
"with no key given twice in any object at any depth, every string valid UTF-8 with valid\n"
"escapes, and (unless any_number) every number one that orjson and msgspec read alike:\n"
"at most 18 digits before and after its point and an exponent of at most 2 digits.\n"
"False means \"look closer\", not \"bad\": an escaped key (compared here only as\n"
"written), nesting deeper than 200, a longer number or any invalid text all answer\n"
"False, and the caller's exact check decides.");

static PyObject *
check_lines(PyObject *module, PyObject *args, PyObject *kwargs)
{
    Py_buffer buf;
    Py_ssize_t start = 0, end = PY_SSIZE_T_MAX;
    int any_number = 0;
    static char *kwlist[] = {"data", "start", "end", "any_number", NULL};
    (void)module;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "y*|nn$p:check_lines", kwlist, &buf, &start,
                                     &end, &any_number))
        return NULL;
    if (start < 0) start = 0;
    if (end > buf.len) end = buf.len;
    Ctx x = {0};
    x.any_number = any_number;
    int rc = OK;
    cp p = (cp)buf.buf + start, stop = (cp)buf.buf + (end > start ? end : start);
    while (p < stop && rc == OK) {
        cp nl = memchr(p, '\n', (size_t)(stop - p));
        if (!nl) nl = stop;
        x.p = p;
        x.end = nl;
        x.depth = 0;
        x.kn = 0;
        skip_ws(&x);
        if (x.p < x.end) {
            rc = read_value(&x);
            if (rc == OK) {
                skip_ws(&x);
                if (x.p != x.end) rc = GIVE_WAY;
            }
        }
        p = nl + 1;
    }
    PyMem_Free(x.kptr);
    PyMem_Free(x.klen);
    PyBuffer_Release(&buf);
    if (rc == FAIL) return NULL;
    return PyBool_FromLong(rc == OK);
}

/* -- reading a file ----------------------------------------------------------------- */

PyDoc_STRVAR(read_regular_doc,
"read_regular(path) -> bytes | None\n\n"
"The bytes of a regular file, in a few system calls, or None when the path is not a\n"
"regular file or cannot be read (the general reader then opens it and names any problem).\n"
"A FIFO is never opened. A file that grows while it is read is read to its new end.");

/* Ask for huge pages under a large buffer about to be filled (Linux, where transparent huge
 * pages are left to madvise): a 50 MB file is then read into 25 pages, not 12,000, each
 * zeroed and mapped at once, which halves the time of reading it. Only advice: nothing
 * changes where the system does not take it. */
static void
advise_huge_pages(char *buf, Py_ssize_t size)
{
#ifdef MADV_HUGEPAGE
    const uintptr_t huge = (uintptr_t)1 << 21;
    if (size < (Py_ssize_t)(4 * huge)) return;
    uintptr_t start = ((uintptr_t)buf + huge - 1) & ~(huge - 1);
    uintptr_t end = ((uintptr_t)buf + (uintptr_t)size) & ~(huge - 1);
    if (end > start) (void)madvise((void *)start, end - start, MADV_HUGEPAGE);
#else
    (void)buf;
    (void)size;
#endif
}

static PyObject *
read_regular(PyObject *module, PyObject *arg)
{
    (void)module;
    PyObject *encoded;
    if (!PyUnicode_FSConverter(arg, &encoded)) return NULL;
    const char *path = PyBytes_AS_STRING(encoded);
    struct stat st;
    PyObject *data = NULL;
    int fd = -1;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) goto none;
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) goto none;
    Py_ssize_t cap = (Py_ssize_t)st.st_size + 1, n = 0;
    data = PyBytes_FromStringAndSize(NULL, cap);
    if (!data) goto fail;
    advise_huge_pages(PyBytes_AS_STRING(data), cap);
    for (;;) {
        if (n == cap) {
            Py_ssize_t more = cap < (1 << 16) ? (1 << 16) : cap;
            if (_PyBytes_Resize(&data, cap + more) != 0) goto fail;
            cap += more;
        }
        ssize_t got = read(fd, PyBytes_AS_STRING(data) + n, (size_t)(cap - n));
        if (got < 0) {
            if (errno == EINTR) {
                if (PyErr_CheckSignals() != 0) goto fail;
                continue;
            }
            goto none;
        }
        if (got == 0) break;
        n += got;
        if (n < cap) break; /* a short read of a regular file is its end */
    }
    close(fd);
    Py_DECREF(encoded);
    if (_PyBytes_Resize(&data, n) != 0) return NULL;
    return data;
none:
    if (fd >= 0) close(fd);
    Py_XDECREF(data);
    Py_DECREF(encoded);
    Py_RETURN_NONE;
fail:
    if (fd >= 0) close(fd);
    Py_XDECREF(data);
    Py_DECREF(encoded);
    return NULL;
}

PyDoc_STRVAR(scan_native_doc,
"scan_native(data, guarded, checkpoints) -> tuple | None\n\n"
"Read a native JSONL trajectory in one pass, or give way (None).\n\n"
"guarded and checkpoints are tuples of UTF-8 bytes: the action types a rule guards and\n"
"the checkpoint ids a rule names. The result is (agents, actions, irreversible,\n"
"handoffs, checkpoints, records, final_seq, final_start, final_end, relevant), the same\n"
"head as judge_native's: the agents of the records before the final line in first-seen\n"
"order, the counts, where the final line is, and the\n"
"events a rule reads as tuples (kind, seq, line, agent, name, to_agent, value_start,\n"
"value_end, line_start, line_end): kind 0 a guarded action, 1 a handoff (name its\n"
"from_agent, the value its payload), 2 a named checkpoint (the value its confirmed_by,\n"
"-1 when absent). data[final_start:final_end] is the final line.");

static PyObject *
scan_native(PyObject *module, PyObject *args)
{
    Py_buffer buf;
    PyObject *guarded, *cids;
    (void)module;
    if (!PyArg_ParseTuple(args, "y*O!O!:scan_native", &buf, &PyTuple_Type, &guarded,
                          &PyTuple_Type, &cids))
        return NULL;
    for (int t = 0; t < 2; t++) {
        PyObject *names = t ? cids : guarded;
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(names); i++) {
            if (!PyBytes_Check(PyTuple_GET_ITEM(names, i))) {
                PyBuffer_Release(&buf);
                PyErr_SetString(PyExc_TypeError, "scan_native: names must be bytes");
                return NULL;
            }
        }
    }
    Ctx x = {0};
    Agents ag;
    ag.n = 0;
    long long counts[6];
    Py_ssize_t fin[2];
    PyObject *result = NULL;
    PyObject *relevant = PyList_New(0);
    if (!relevant) goto done;
    int rc = scan((cp)buf.buf, buf.len, guarded, cids, &x, &ag, relevant, counts, fin, NULL);
    if (rc == FAIL) goto done;
    if (rc == GIVE_WAY) {
        result = Py_None;
        Py_INCREF(result);
        goto done;
    }
    PyObject *agents = agents_list(&ag);
    if (!agents) goto done;
    result = Py_BuildValue("(NLLLLLLnnO)", agents, counts[0], counts[1], counts[2], counts[3],
                           counts[4], counts[5], fin[0], fin[1], relevant);
done:
    for (Py_ssize_t i = 0; i < ag.n; i++) Py_DECREF(ag.obj[i]);
    Py_XDECREF(relevant);
    PyMem_Free(x.kptr);
    PyMem_Free(x.klen);
    PyBuffer_Release(&buf);
    return result;
}

/* -- Claude Code transcript lines ------------------------------------------------------
 *
 * claude_lines(data, start, end, first_line, unset, no_message, later, text) reads the
 * lines of a Claude Code transcript in data[start:end] (whole lines) and gives, for each
 * line that holds more than blanks, the fields the reader reads, or gives way (None). It
 * checks what check_lines checks (one JSON value per line, no key given twice at any
 * depth, valid UTF-8 and escapes, numbers both readers read alike) and builds Python
 * values only for the fields the reader reads, as orjson would read them. A line it does
 * not expect (an entry that is not an object, a field of another type than the reader's
 * structs declare, an escaped key) gives way, and the reader's typed decode reads the
 * file. */

/* push_key for an object whose keys so far are summed up in *seen (a bit per key, from its
 * length and its first and last bytes): a key whose bit is new equals none of them, and is
 * remembered without comparing. */
static int
cc_push_key(Ctx *x, Py_ssize_t kbase, uint64_t *seen, cp s, Py_ssize_t len)
{
    uint64_t bit = (uint64_t)1 << ((len ? (size_t)len * 7 + s[0] * 3u + s[len - 1] : 0) & 63);
    if (*seen & bit) return push_key(x, kbase, s, len);
    *seen |= bit;
    if (x->kn - kbase >= MAX_KEYS) return GIVE_WAY;
    if (x->kn == x->kcap) return push_key(x, kbase, s, len); /* it grows the stack */
    x->kptr[x->kn] = s;
    x->klen[x->kn] = len;
    x->kn++;
    return OK;
}

/* The decoded text of a string whose raw body is [s, s + len), escapes and all (already
 * checked by read_string). */
static PyObject *
cc_str(cp s, Py_ssize_t len, int esc)
{
    if (!esc) return PyUnicode_DecodeUTF8((const char *)s, len, "strict");
    unsigned char *buf = PyMem_Malloc((size_t)len + 1);
    if (!buf) return PyErr_NoMemory();
    unsigned char *o = buf;
    cp p = s, end = s + len;
    while (p < end) {
        if (*p != '\\') {
            *o++ = *p++;
            continue;
        }
        unsigned char e = p[1];
        p += 2;
        switch (e) {
        case 'b': *o++ = '\b'; break;
        case 'f': *o++ = '\f'; break;
        case 'n': *o++ = '\n'; break;
        case 'r': *o++ = '\r'; break;
        case 't': *o++ = '\t'; break;
        case 'u': {
            unsigned u = 0;
            for (int i = 0; i < 4; i++) u = (u << 4) | (unsigned)hexval(p[i]);
            p += 4;
            if (u >= 0xD800 && u <= 0xDBFF) { /* a pair, checked by read_string */
                unsigned v = 0;
                for (int i = 0; i < 4; i++) v = (v << 4) | (unsigned)hexval(p[2 + i]);
                p += 6;
                u = 0x10000 + ((u - 0xD800) << 10) + (v - 0xDC00);
            }
            if (u < 0x80) *o++ = (unsigned char)u;
            else if (u < 0x800) {
                *o++ = (unsigned char)(0xC0 | (u >> 6));
                *o++ = (unsigned char)(0x80 | (u & 0x3F));
            }
            else if (u < 0x10000) {
                *o++ = (unsigned char)(0xE0 | (u >> 12));
                *o++ = (unsigned char)(0x80 | ((u >> 6) & 0x3F));
                *o++ = (unsigned char)(0x80 | (u & 0x3F));
            }
            else {
                *o++ = (unsigned char)(0xF0 | (u >> 18));
                *o++ = (unsigned char)(0x80 | ((u >> 12) & 0x3F));
                *o++ = (unsigned char)(0x80 | ((u >> 6) & 0x3F));
                *o++ = (unsigned char)(0x80 | (u & 0x3F));
            }
            break;
        }
        default: *o++ = e; break; /* the quote, the backslash, the slash */
        }
    }
    PyObject *out = PyUnicode_DecodeUTF8((const char *)buf, o - buf, "strict");
    PyMem_Free(buf);
    return out;
}

/* Short strings met again and again (keys, block and entry types), one object each: a
 * direct-mapped cache, as orjson and msgspec keep one for keys. */
#define CC_CACHE 1024
#define CC_CACHED_LEN 32
static PyObject *cc_cache[CC_CACHE];

static PyObject *
cc_short(cp s, Py_ssize_t len)
{
    if (len > CC_CACHED_LEN) return PyUnicode_DecodeUTF8((const char *)s, len, "strict");
    uint32_t h = 2166136261u;
    for (Py_ssize_t i = 0; i < len; i++) h = (h ^ s[i]) * 16777619u;
    h = (h ^ (uint32_t)len) % CC_CACHE;
    PyObject *o = cc_cache[h];
    if (o && PyUnicode_GET_LENGTH(o) == len && memcmp(PyUnicode_DATA(o), s, (size_t)len) == 0)
        return Py_NewRef(o);
    o = PyUnicode_DecodeUTF8((const char *)s, len, "strict");
    if (!o) return NULL;
    if (PyUnicode_IS_COMPACT_ASCII(o)) {
        Py_XSETREF(cc_cache[h], Py_NewRef(o));
    }
    return o;
}

/* A number at x->p as orjson reads it: an int, or a float (numbers read_number accepts
 * here have at most 18 digits before and after the point and an exponent of two). */
static int
cc_number(Ctx *x, PyObject **out)
{
    cp s = x->p;
    int is_int, rc;
    long long v;
    if ((rc = read_number(x, &is_int, &v)) != OK) return rc;
    if (is_int) {
        *out = PyLong_FromLongLong(v);
        return *out ? OK : FAIL;
    }
    char text[64];
    Py_ssize_t n = x->p - s;
    if (n >= (Py_ssize_t)sizeof text) return GIVE_WAY;
    memcpy(text, s, (size_t)n);
    text[n] = 0;
    double d = PyOS_string_to_double(text, NULL, NULL);
    if (d == -1.0 && PyErr_Occurred()) return FAIL;
    *out = PyFloat_FromDouble(d);
    return *out ? OK : FAIL;
}

/* Any JSON value at x->p, built as orjson builds it (keys checked as read_object does). */
static int
cc_value(Ctx *x, PyObject **out)
{
    int rc, done;
    *out = NULL;
    if (x->p >= x->end) return GIVE_WAY;
    switch (*x->p) {
    case '"': {
        cp s;
        Py_ssize_t len;
        int esc;
        if ((rc = read_string(x, &s, &len, &esc)) != OK) return rc;
        *out = cc_str(s, len, esc);
        return *out ? OK : FAIL;
    }
    case '{': {
        if ((rc = open_container(x, '}', &done)) != OK) return rc;
        PyObject *d = PyDict_New();
        if (!d) return FAIL;
        if (done) {
            *out = d;
            return OK;
        }
        Py_ssize_t kbase = x->kn;
        uint64_t seen = 0;
        do {
            cp s;
            Py_ssize_t len;
            PyObject *k, *v;
            if ((rc = read_key(x, &s, &len)) != OK
                || (rc = cc_push_key(x, kbase, &seen, s, len)) != OK
                || (rc = cc_value(x, &v)) != OK) {
                Py_DECREF(d);
                return rc;
            }
            k = cc_short(s, len);
            if (!k || PyDict_SetItem(d, k, v) < 0) {
                Py_XDECREF(k);
                Py_DECREF(v);
                Py_DECREF(d);
                return FAIL;
            }
            Py_DECREF(k);
            Py_DECREF(v);
            if ((rc = next_member(x, '}', &done)) != OK) {
                Py_DECREF(d);
                return rc;
            }
        } while (!done);
        x->kn = kbase;
        *out = d;
        return OK;
    }
    case '[': {
        if ((rc = open_container(x, ']', &done)) != OK) return rc;
        PyObject *l = PyList_New(0);
        if (!l) return FAIL;
        while (!done) {
            PyObject *v;
            if ((rc = cc_value(x, &v)) != OK) {
                Py_DECREF(l);
                return rc;
            }
            if (PyList_Append(l, v) < 0) {
                Py_DECREF(v);
                Py_DECREF(l);
                return FAIL;
            }
            Py_DECREF(v);
            if ((rc = next_member(x, ']', &done)) != OK) {
                Py_DECREF(l);
                return rc;
            }
        }
        *out = l;
        return OK;
    }
    case 't':
        if ((rc = literal(x, "true", 4)) != OK) return rc;
        *out = Py_NewRef(Py_True);
        return OK;
    case 'f':
        if ((rc = literal(x, "false", 5)) != OK) return rc;
        *out = Py_NewRef(Py_False);
        return OK;
    case 'n':
        if ((rc = literal(x, "null", 4)) != OK) return rc;
        *out = Py_NewRef(Py_None);
        return OK;
    default:
        return cc_number(x, out);
    }
}

#define KEY_IS(s, len, name) \
    ((len) == (Py_ssize_t)sizeof(name) - 1 && memcmp((s), (name), sizeof(name) - 1) == 0)

/* The index of the key [s, s + len) in names (lens their lengths), or -1. */
static inline int
cc_key(cp s, Py_ssize_t len, const char **names, const Py_ssize_t *lens, int n)
{
    for (int i = 0; i < n; i++) {
        if (lens[i] == len && names[i][0] == (char)s[0]
            && memcmp(s, names[i], (size_t)len) == 0)
            return i;
    }
    return -1;
}

/* A type: a string, kept once (cc_short) when it has no escape; anything else gives way. */
static int
cc_type_field(Ctx *x, PyObject **out)
{
    cp s;
    Py_ssize_t len;
    int esc, rc;
    if (x->p >= x->end || *x->p != '"') return GIVE_WAY;
    if ((rc = read_string(x, &s, &len, &esc)) != OK) return rc;
    *out = esc ? cc_str(s, len, esc) : cc_short(s, len);
    return *out ? OK : FAIL;
}

/* A string, or null when nullable; anything else gives way. */
static int
cc_str_field(Ctx *x, int nullable, PyObject **out)
{
    if (x->p < x->end && *x->p == '"') return cc_value(x, out);
    if (nullable && x->p < x->end && *x->p == 'n') return cc_value(x, out);
    return GIVE_WAY;
}

/* true, false or null; anything else gives way. */
static int
cc_bool_field(Ctx *x, PyObject **out)
{
    if (x->p < x->end && (*x->p == 't' || *x->p == 'f' || *x->p == 'n')) return cc_value(x, out);
    return GIVE_WAY;
}

enum { CB_TYPE, CB_TEXT, CB_ID, CB_NAME, CB_INPUT, CB_TOOL_USE_ID, CB_CONTENT, CB_IS_ERROR,
       CB_N };
static const char *cc_block_keys[CB_N] = {"type", "text", "id", "name", "input",
                                          "tool_use_id", "content", "is_error"};
static Py_ssize_t cc_block_lens[CB_N];

/* A content block: (type, text, id, name, input, tool_use_id, content, is_error), each
 * absent field ``unset``. Without ``text``, a content that is a string is checked but
 * built only for a block that is an error (the reader reads no other result's text):
 * for any other it is "". */
static int
cc_block(Ctx *x, PyObject *unset, int text, PyObject **out)
{
    int rc, done, held = 0, held_esc = 0;
    cp held_s = NULL;
    Py_ssize_t held_len = 0;
    PyObject *f[CB_N] = {NULL};
    if (x->p >= x->end || *x->p != '{') return GIVE_WAY;
    if ((rc = open_container(x, '}', &done)) != OK) return rc;
    if (done) return GIVE_WAY; /* no type */
    Py_ssize_t kbase = x->kn;
    uint64_t seen = 0;
    do {
        cp s;
        Py_ssize_t len;
        if ((rc = read_key(x, &s, &len)) != OK
            || (rc = cc_push_key(x, kbase, &seen, s, len)) != OK)
            goto fail;
        int k = cc_key(s, len, cc_block_keys, cc_block_lens, CB_N);
        if (k == CB_TYPE) rc = cc_type_field(x, &f[k]);
        else if (k == CB_CONTENT && !text && x->p < x->end && *x->p == '"') {
            rc = read_string(x, &held_s, &held_len, &held_esc);
            held = 1;
        }
        else if (k >= 0) rc = cc_value(x, &f[k]);
        else rc = read_value(x);
        if (rc != OK || (rc = next_member(x, '}', &done)) != OK) goto fail;
    } while (!done);
    x->kn = kbase;
    if (!f[CB_TYPE]) {
        rc = GIVE_WAY;
        goto fail;
    }
    if (held) {
        f[CB_CONTENT] = f[CB_IS_ERROR] == Py_True ? cc_str(held_s, held_len, held_esc)
                                                  : PyUnicode_New(0, 0);
        if (!f[CB_CONTENT]) {
            rc = FAIL;
            goto fail;
        }
    }
    PyObject *t = PyTuple_New(CB_N);
    if (!t) {
        rc = FAIL;
        goto fail;
    }
    for (int i = 0; i < CB_N; i++) PyTuple_SET_ITEM(t, i, f[i] ? f[i] : Py_NewRef(unset));
    *out = t;
    return OK;
fail:
    for (int i = 0; i < CB_N; i++) Py_XDECREF(f[i]);
    return rc;
}

/* The text of a list of blocks as the reader joins it: the "text" blocks' texts, one line
 * apart; ``later`` where a text block's text is not a string (the reader decides). */
static int
cc_words(PyObject *blocks, PyObject *later, PyObject **words)
{
    PyObject *texts = NULL;
    Py_ssize_t n = PyList_GET_SIZE(blocks);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *b = PyList_GET_ITEM(blocks, i);
        PyObject *type = PyTuple_GET_ITEM(b, CB_TYPE), *text = PyTuple_GET_ITEM(b, CB_TEXT);
        if (PyUnicode_CompareWithASCIIString(type, "text") != 0) continue;
        if (!PyUnicode_CheckExact(text)) {
            Py_XDECREF(texts);
            *words = Py_NewRef(later);
            return OK;
        }
        if (!texts && !(texts = PyList_New(0))) return FAIL;
        if (PyList_Append(texts, text) < 0) {
            Py_DECREF(texts);
            return FAIL;
        }
    }
    if (!texts) *words = PyUnicode_New(0, 0);
    else if (PyList_GET_SIZE(texts) == 1) *words = Py_NewRef(PyList_GET_ITEM(texts, 0));
    else {
        PyObject *sep = PyUnicode_FromStringAndSize("\n", 1);
        *words = sep ? PyUnicode_Join(sep, texts) : NULL;
        Py_XDECREF(sep);
    }
    Py_XDECREF(texts);
    return *words ? OK : FAIL;
}

/* A message object: its content (a string, null or a list of blocks), ``unset`` when it
 * has none. */
static int
cc_message(Ctx *x, PyObject *unset, PyObject *later, int text, PyObject **out,
           PyObject **words)
{
    int rc, done;
    PyObject *content = NULL;
    *words = NULL;
    if (x->p >= x->end || *x->p != '{') return GIVE_WAY;
    if ((rc = open_container(x, '}', &done)) != OK) return rc;
    Py_ssize_t kbase = x->kn;
    uint64_t seen = 0;
    while (!done) {
        cp s;
        Py_ssize_t len;
        if ((rc = read_key(x, &s, &len)) != OK || (rc = cc_push_key(x, kbase, &seen, s, len)) != OK)
            goto fail;
        if (KEY_IS(s, len, "content")) {
            if (x->p < x->end && (*x->p == '"' || *x->p == 'n')) rc = cc_value(x, &content);
            else if (x->p < x->end && *x->p == '[') {
                int end;
                if ((rc = open_container(x, ']', &end)) != OK) goto fail;
                content = PyList_New(0);
                if (!content) {
                    rc = FAIL;
                    goto fail;
                }
                while (!end) {
                    PyObject *b;
                    if ((rc = cc_block(x, unset, text, &b)) != OK) goto fail;
                    if (PyList_Append(content, b) < 0) {
                        Py_DECREF(b);
                        rc = FAIL;
                        goto fail;
                    }
                    Py_DECREF(b);
                    if ((rc = next_member(x, ']', &end)) != OK) goto fail;
                }
                if ((rc = cc_words(content, later, words)) != OK) goto fail;
            }
            else rc = GIVE_WAY;
        }
        else rc = read_value(x);
        if (rc != OK || (rc = next_member(x, '}', &done)) != OK) goto fail;
    }
    x->kn = kbase;
    if (!*words) {
        /* a string is its own text; null or no content, none */
        *words = content && PyUnicode_Check(content) ? Py_NewRef(content)
                                                     : PyUnicode_New(0, 0);
        if (!*words) {
            rc = FAIL;
            goto fail;
        }
    }
    *out = content ? content : Py_NewRef(unset);
    return OK;
fail:
    Py_XDECREF(content);
    Py_CLEAR(*words);
    return rc;
}

/* toolUseResult as the reader keeps it: a string, {"answers": ...} for an object that has
 * answers, None for anything else. */
static int
cc_tool_use_result(Ctx *x, PyObject **out)
{
    int rc, done;
    if (x->p < x->end && *x->p == '"') return cc_value(x, out);
    if (x->p >= x->end || *x->p != '{') {
        if ((rc = read_value(x)) != OK) return rc;
        *out = Py_NewRef(Py_None);
        return OK;
    }
    PyObject *answers = NULL;
    if ((rc = open_container(x, '}', &done)) != OK) return rc;
    Py_ssize_t kbase = x->kn;
    uint64_t seen = 0;
    while (!done) {
        cp s;
        Py_ssize_t len;
        if ((rc = read_key(x, &s, &len)) != OK || (rc = cc_push_key(x, kbase, &seen, s, len)) != OK)
            goto fail;
        if (KEY_IS(s, len, "answers")) rc = cc_value(x, &answers);
        else rc = read_value(x);
        if (rc != OK || (rc = next_member(x, '}', &done)) != OK) goto fail;
    }
    x->kn = kbase;
    if (!answers) {
        *out = Py_NewRef(Py_None);
        return OK;
    }
    *out = Py_BuildValue("{sN}", "answers", answers);
    return *out ? OK : FAIL;
fail:
    Py_XDECREF(answers);
    return rc;
}

enum { CE_TYPE, CE_UUID, CE_PARENT, CE_LOGICAL, CE_SIDECHAIN, CE_AGENT_ID, CE_SESSION,
       CE_TIMESTAMP, CE_IS_META, CE_MESSAGE, CE_TOOL_USE_RESULT, CE_N };
static const char *cc_entry_keys[CE_N] = {
    "type", "uuid", "parentUuid", "logicalParentUuid", "isSidechain", "agentId", "sessionId",
    "timestamp", "isMeta", "message", "toolUseResult"};
static Py_ssize_t cc_entry_lens[CE_N];

static void
cc_init(void)
{
    for (int i = 0; i < CB_N; i++) cc_block_lens[i] = (Py_ssize_t)strlen(cc_block_keys[i]);
    for (int i = 0; i < CE_N; i++) cc_entry_lens[i] = (Py_ssize_t)strlen(cc_entry_keys[i]);
}

/* One entry: (line, type, uuid, parentUuid, logicalParentUuid, isSidechain, agentId,
 * sessionId, timestamp, isMeta, content, toolUseResult); content is ``no_message`` when
 * the entry has no message. */
static int
cc_entry(Ctx *x, Py_ssize_t line, PyObject *unset, PyObject *no_message, PyObject *later,
         int text, PyObject **out)
{
    int rc, done;
    PyObject *f[CE_N] = {NULL}, *words = NULL;
    if (x->p >= x->end || *x->p != '{') return GIVE_WAY;
    if ((rc = open_container(x, '}', &done)) != OK) return rc;
    if (done) return GIVE_WAY; /* no type */
    Py_ssize_t kbase = x->kn;
    uint64_t seen = 0;
    do {
        cp s;
        Py_ssize_t len;
        if ((rc = read_key(x, &s, &len)) != OK || (rc = cc_push_key(x, kbase, &seen, s, len)) != OK)
            goto fail;
        int k = cc_key(s, len, cc_entry_keys, cc_entry_lens, CE_N);
        switch (k) {
        case CE_TYPE: rc = cc_type_field(x, &f[k]); break;
        case CE_UUID: case CE_PARENT: case CE_LOGICAL: case CE_AGENT_ID: case CE_SESSION:
        case CE_TIMESTAMP:
            rc = cc_str_field(x, 1, &f[k]);
            break;
        case CE_SIDECHAIN: case CE_IS_META: rc = cc_bool_field(x, &f[k]); break;
        case CE_MESSAGE: rc = cc_message(x, unset, later, text, &f[k], &words); break;
        case CE_TOOL_USE_RESULT: rc = cc_tool_use_result(x, &f[k]); break;
        default: rc = read_value(x); break;
        }
        if (rc != OK || (rc = next_member(x, '}', &done)) != OK) goto fail;
    } while (!done);
    x->kn = kbase;
    if (!f[CE_TYPE]) {
        rc = GIVE_WAY;
        goto fail;
    }
    PyObject *t = PyTuple_New(CE_N + 2);
    if (!t) {
        rc = FAIL;
        goto fail;
    }
    PyObject *n = PyLong_FromSsize_t(line);
    if (!n) {
        Py_DECREF(t);
        rc = FAIL;
        goto fail;
    }
    PyTuple_SET_ITEM(t, 0, n);
    for (int i = 0; i < CE_N; i++) {
        PyObject *v = f[i] ? f[i] : Py_NewRef(i == CE_MESSAGE ? no_message : unset);
        PyTuple_SET_ITEM(t, i + 1, v);
    }
    PyTuple_SET_ITEM(t, CE_N + 1, words ? words : Py_NewRef(later));
    *out = t;
    return OK;
fail:
    for (int i = 0; i < CE_N; i++) Py_XDECREF(f[i]);
    Py_XDECREF(words);
    return rc;
}

PyDoc_STRVAR(claude_lines_doc,
"claude_lines(data, start, end, first_line, unset, no_message, later, text=True)\n"
"    -> (list, int) | None\n\n"
"The entries of the Claude Code transcript lines in data[start:end] and the number of the\n"
"line after them, or None (give way).\n"
"One tuple per line that holds more than blanks: (line, type, uuid, parentUuid,\n"
"logicalParentUuid, isSidechain, agentId, sessionId, timestamp, isMeta, content,\n"
"toolUseResult, words), the line numbered from first_line, each absent field unset, content\n"
"no_message for an entry without a message, else the message's content (unset when\n"
"absent): a string, None, or a list of blocks (type, text, id, name, input, tool_use_id,\n"
"content, is_error). toolUseResult is a string, {\"answers\": ...} or None. words is\n"
"the message's text (a string content, or its text blocks' texts one line apart), later\n"
"where a text block's text is no string or the entry has no message. Without text, a\n"
"block's content that is a string is \"\" unless the block's is_error is true. Values are\n"
"built as orjson reads them; the lines are checked as check_lines checks them.");

static PyObject *
claude_lines(PyObject *module, PyObject *args)
{
    Py_buffer buf;
    Py_ssize_t start, end, line;
    PyObject *unset, *no_message, *later;
    int text = 1;
    (void)module;
    if (!PyArg_ParseTuple(args, "y*nnnOOO|p:claude_lines", &buf, &start, &end, &line, &unset,
                          &no_message, &later, &text))
        return NULL;
    if (start < 0) start = 0;
    if (end > buf.len) end = buf.len;
    Ctx x = {0};
    int rc = OK;
    PyObject *out = PyList_New(0);
    if (!out) rc = FAIL;
    cp p = (cp)buf.buf + start, stop = (cp)buf.buf + (end > start ? end : start);
    while (p < stop && rc == OK) {
        cp nl = memchr(p, '\n', (size_t)(stop - p));
        if (!nl) nl = stop;
        x.p = p;
        x.end = nl;
        x.depth = 0;
        x.kn = 0;
        skip_ws(&x);
        if (x.p < x.end) {
            PyObject *entry;
            rc = cc_entry(&x, line, unset, no_message, later, text, &entry);
            if (rc == OK) {
                skip_ws(&x);
                if (x.p != x.end) rc = GIVE_WAY;
                if (rc == OK && PyList_Append(out, entry) < 0) rc = FAIL;
                Py_DECREF(entry);
            }
        }
        line++;
        p = nl + 1;
    }
    PyMem_Free(x.kptr);
    PyMem_Free(x.klen);
    PyBuffer_Release(&buf);
    if (rc == OK) return Py_BuildValue("(Nn)", out, line);
    Py_XDECREF(out);
    if (rc == FAIL) return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"scan_native", scan_native, METH_VARARGS, scan_native_doc},
    {"read_regular", read_regular, METH_O, read_regular_doc},
    {"check_lines", (PyCFunction)(void (*)(void))check_lines, METH_VARARGS | METH_KEYWORDS,
     check_lines_doc},
    {"make_plan", make_plan, METH_VARARGS, make_plan_doc},
    {"judge_native", judge_native, METH_VARARGS, judge_native_doc},
    {"claude_lines", claude_lines, METH_VARARGS, claude_lines_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "assay._accel",
    "The native JSONL scan of replay's hot path, in C (see scan_native).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__accel(void)
{
    init_tables();
    for (int f = 0; f < N_FIELDS; f++) field_lens[f] = (Py_ssize_t)strlen(field_names[f]);
    cc_init();
    return PyModule_Create(&module_def);
}
