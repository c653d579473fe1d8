/*
 * roadcheck._accel: the native JSONL scan of replay's hot path, in C.
 *
 * scan_native(data, guarded, checkpoints) reads a whole native trajectory file
 * in one pass and either vouches for it or gives way (returns None). It vouches
 * only for what the typed decode (roadcheck.ingest._native_typed.typed_records)
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
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <limits.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/vfs.h>
#endif
#ifdef __SSE2__
#include <emmintrin.h>
#endif

typedef const unsigned char *cp;

#define OK 0
#define GIVE_WAY (-1)
#define FAIL (-2) /* a Python exception is set (or, without the GIL, memory ran out) */

/* Memory ran out: the MemoryError is set here when this thread holds the GIL, else by the
 * caller once it holds it again (judge_files judges without it). Every allocation of the
 * module goes through PyMem_Raw*, which needs no GIL. */
static void
no_memory(void)
{
    if (PyGILState_Check()) PyErr_NoMemory();
}

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

/* The line of [p, stop) that starts at p, for a reader of JSON lines: the context set to it
 * and past its leading white space. Returns where the line ends (its newline, or stop). */
static inline cp
line_at(Ctx *x, cp p, cp stop)
{
    cp nl = memchr(p, '\n', (size_t)(stop - p));
    if (!nl) nl = stop;
    x->p = p;
    x->end = nl;
    x->depth = 0;
    x->kn = 0;
    skip_ws(x);
    return nl;
}

/* After a line's value: OK when nothing but white space is left of the line */
static inline int
line_rest(Ctx *x)
{
    skip_ws(x);
    return x->p == x->end ? OK : GIVE_WAY;
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
        cp *np = PyMem_RawRealloc(x->kptr, (size_t)cap * sizeof(cp));
        if (!np) { no_memory(); return FAIL; }
        x->kptr = np;
        Py_ssize_t *nl = PyMem_RawRealloc(x->klen, (size_t)cap * sizeof(Py_ssize_t));
        if (!nl) { no_memory(); return FAIL; }
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

/* A top-level object whose keys are all fields roadcheck knows (others: GIVE_WAY unless
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
    Py_ssize_t n_at; /* the index agent_at found or added last */
    cp s[MAX_AGENTS];
    Py_ssize_t len[MAX_AGENTS];
    PyObject *obj[MAX_AGENTS]; /* each agent's str, made when first asked for (agent_obj) */
} Agents;

/* The agent's index, added in first-seen order, or -1 with *rc set */
static Py_ssize_t
agent_at(Agents *a, const Val *v, int *rc)
{
    for (Py_ssize_t i = a->n - 1; i >= 0; i--) {
        if (a->len[i] == v->len && memcmp(a->s[i], v->s, (size_t)v->len) == 0) {
            a->n_at = i;
            return i;
        }
    }
    if (a->n >= MAX_AGENTS) {
        *rc = GIVE_WAY;
        return -1;
    }
    a->s[a->n] = v->s;
    a->len[a->n] = v->len;
    a->obj[a->n] = NULL;
    a->n_at = a->n;
    return a->n++;
}

/* Agent i's str (a borrowed reference), or NULL with an exception set */
static PyObject *
agent_obj(Agents *a, Py_ssize_t i)
{
    if (!a->obj[i]) a->obj[i] = PyUnicode_DecodeUTF8((const char *)a->s[i], a->len[i], "strict");
    return a->obj[i];
}

static void
agents_clear(Agents *a)
{
    for (Py_ssize_t i = 0; i < a->n; i++) Py_CLEAR(a->obj[i]);
    a->n = 0;
}

/* The agents met, in order, as a new list */
static PyObject *
agents_list(Agents *a)
{
    PyObject *out = PyList_New(a->n);
    if (!out) return NULL;
    for (Py_ssize_t i = 0; i < a->n; i++) {
        PyObject *o = agent_obj(a, i);
        if (!o) {
            Py_DECREF(out);
            return NULL;
        }
        Py_INCREF(o);
        PyList_SET_ITEM(out, i, o);
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
    return Py_BuildValue("(iLnONNnnnn)", kind, seq, line, agent, n1, n2, vs,
                         ve, (Py_ssize_t)(ls - data), (Py_ssize_t)(le - data));
}

typedef struct Judge Judge;
static int judge_action(Judge *j, long long seq, Py_ssize_t line, Py_ssize_t agent,
                        const Val *at);
static int judge_checkpoint(Judge *j, long long seq, Py_ssize_t line, const Val *cid,
                            const Val *confirmed_by, int has);
static int judge_handoff(Judge *j, Ctx *x, long long seq, Py_ssize_t line, const Val *src,
                         const Val *dst, const Val *payload);

/* What judge_files reads of the final line beyond its place */
typedef struct {
    Val agent; /* type T_NULL when it has none */
    int task_success;
} Final;

/* The whole file. With a Judge (judge_native), each event goes to the rules here; without
 * one (scan_native), the events a rule reads are listed in `relevant` for Python. `final`,
 * when given, gets the final line's agent and task_success. */
static int
scan(cp data, Py_ssize_t size, PyObject *guarded, PyObject *cids, Ctx *x, Agents *ag,
     PyObject *relevant, long long counts[6], Py_ssize_t fin[2], Judge *jd, Final *final)
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
        Py_ssize_t agent = -1;
        if ((seen & BIT(F_AGENT)) && vals[F_AGENT].type == T_STRING) {
            if (vals[F_AGENT].esc) return GIVE_WAY;
            rc = OK;
            agent = agent_at(ag, &vals[F_AGENT], &rc);
            if (agent < 0) return rc;
        }
        /* the agent's str, where scan_native lists the event */
#define AGENT_OBJ() (agent < 0 ? Py_None : agent_obj(ag, agent))
        PyObject *ev = NULL;
        switch (kind) {
        case K_ACTION: {
            const Val *at = &vals[F_ACTION_TYPE];
            if (!is_str(at) || at->len == 0 || at->esc) return GIVE_WAY;
            actions++;
            if ((seen & BIT(F_IRREVERSIBLE)) && vals[F_IRREVERSIBLE].type == T_TRUE)
                irreversible++;
            if (jd) {
                if ((rc = judge_action(jd, seq, line, agent, at)) != OK) return rc;
            }
            else if (name_index(guarded, at->s, at->len) >= 0) {
                PyObject *ao = AGENT_OBJ();
                if (!ao) return FAIL;
                ev = relevant_event(0, seq, line, ao, at, NULL, NULL, 0, data, p, nl);
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
                PyObject *ao = AGENT_OBJ();
                if (!ao) return FAIL;
                ev = relevant_event(2, seq, line, ao, cid, NULL, &vals[F_CONFIRMED_BY], has,
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
            PyObject *ao = AGENT_OBJ();
            if (!ao) return FAIL;
            ev = relevant_event(1, seq, line, ao, src, dst, &vals[F_PAYLOAD], 1, data, p, nl);
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
#undef AGENT_OBJ
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
    if (final) {
        if (seen & BIT(F_AGENT)) final->agent = vals[F_AGENT];
        else final->agent.type = T_NULL;
        final->task_success = vals[F_TASK_SUCCESS].type == T_TRUE;
    }
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
 * The replay engine (roadcheck.conformance.engine.Replayer) for a spec whose rules read only
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
        char *nb = PyMem_RawRealloc(b->b, (size_t)cap);
        if (!nb) {
            no_memory();
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
    /* as "%lld" writes it, without the cost of a format string */
    char t[24];
    int n = (int)sizeof t;
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    do {
        t[--n] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0) t[--n] = '-';
    return buf_add(b, t + n, (Py_ssize_t)sizeof t - n);
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
    Py_ssize_t rec; /* the finding, in Judge.recs */
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

/* Which list a finding belongs to: a rule's reasons (ordered by judge_finish), a handoff's
 * reasons, the warnings (both in the order made) */
enum { L_RULE, L_HANDOFF, L_WARNING };

/* A finding as the judge makes it, with no Python object: judge_native turns it into a
 * tuple, judge_files renders it. The spans point into the file or the plan. */
typedef struct {
    int list, code, hops;
    long long seq;
    Py_ssize_t line;
    Span cid, action, from, to;
    Py_ssize_t at, len; /* the message, in Judge.texts */
} Rec;

struct Judge {
    const Plan *plan;
    int busy; /* a call is using it (a finalizer run by the collector could call again) */
    RState st[MAX_RULES];
    unsigned char crossed[MAX_CONTRACTS], absent[MAX_CONTRACTS];
    Agents *ag;
    Border borders[MAX_HANDOFFS];
    Py_ssize_t n_borders;
    Chain chains[MAX_CHAINS];
    Py_ssize_t n_chains;
    /* the findings of the file being judged, and their messages */
    Rec *recs;
    Py_ssize_t n_recs, cap_recs;
    Buf texts;
    /* after judge_finish: the reasons in order (indices into recs), the rules no guarded
     * action reached and the contracts never crossed */
    Py_ssize_t *order;
    Py_ssize_t n_order;
    Py_ssize_t unseen[MAX_RULES], n_unseen;
    Py_ssize_t uncrossed[MAX_CONTRACTS], n_uncrossed;
};

enum { R_AFTER, R_SKIPPED, R_VIOLATION, R_UNVERIFIED, R_PROPAGATED, W_ABSENT, W_UNCONTRACTED };

static const Span NOSPAN = {NULL, 0};

/* A finding made (its message taken from `msg`, which is left empty): its index in
 * j->recs, or -1 with an exception set */
static Py_ssize_t
add_rec(Judge *j, int list, int code, Buf *msg, long long seq, Py_ssize_t line, Span cid,
        Span action, Span from, Span to, int hops)
{
    if (j->n_recs == j->cap_recs) {
        Py_ssize_t cap = j->cap_recs ? j->cap_recs * 2 : 16;
        Rec *recs = PyMem_RawRealloc(j->recs, (size_t)cap * sizeof(Rec));
        if (!recs) {
            no_memory();
            return -1;
        }
        j->recs = recs;
        Py_ssize_t *order = PyMem_RawRealloc(j->order, (size_t)cap * sizeof(Py_ssize_t));
        if (!order) {
            no_memory();
            return -1;
        }
        j->order = order;
        j->cap_recs = cap;
    }
    Rec *r = &j->recs[j->n_recs];
    r->list = list;
    r->code = code;
    r->hops = hops;
    r->seq = seq;
    r->line = line;
    r->cid = cid;
    r->action = action;
    r->from = from;
    r->to = to;
    r->at = j->texts.n;
    r->len = msg->n;
    if (buf_add(&j->texts, msg->b, msg->n) != OK) return -1;
    msg->n = 0;
    return j->n_recs++;
}

/* A finding made, as add_rec: OK or FAIL */
static int
put_rec(Judge *j, int list, int code, Buf *msg, long long seq, Py_ssize_t line, Span cid,
        Span action, Span from, Span to, int hops)
{
    return add_rec(j, list, code, msg, seq, line, cid, action, from, to, hops) < 0 ? FAIL : OK;
}

static PyObject *
span_str(Span sp)
{
    if (!sp.s) Py_RETURN_NONE;
    return PyUnicode_DecodeUTF8((const char *)sp.s, sp.len, "strict");
}

/* Finding i as the tuple judge_native gives: (code, message, seq, line, checkpoint_id,
 * action_type, from_agent, to_agent, hops) */
static PyObject *
rec_tuple(const Judge *j, Py_ssize_t i)
{
    const Rec *r = &j->recs[i];
    PyObject *m = PyUnicode_DecodeUTF8(j->texts.b + r->at, r->len, "strict");
    if (!m) return NULL;
    PyObject *c = span_str(r->cid), *a = c ? span_str(r->action) : NULL;
    PyObject *f = a ? span_str(r->from) : NULL, *t = f ? span_str(r->to) : NULL;
    if (!t) {
        Py_DECREF(m);
        Py_XDECREF(c);
        Py_XDECREF(a);
        Py_XDECREF(f);
        return NULL;
    }
    return Py_BuildValue("(iNLnNNNNi)", r->code, m, r->seq, r->line, c, a, f, t, r->hops);
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
        pd->why = PyMem_RawMalloc((size_t)st->why_not.n);
        if (!pd->why) {
            no_memory();
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
            rc = put_rec(j, L_WARNING, W_ABSENT, &msg, seq, line, NOSPAN, action, k->from, k->to,
                         0);
        }
    }
    for (Py_ssize_t i = 0; i < pl->n_rules && rc == OK; i++) {
        const Rule *r = &pl->rules[i];
        for (Py_ssize_t g = 0; g < r->n_guarded && rc == OK; g++) {
            if (span_eq(r->guarded[g], at->s, at->len))
                rc = guarded_action(j, &j->st[i], r, seq, line, action, &msg);
        }
    }
    PyMem_RawFree(msg.b);
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
            Py_ssize_t f = add_rec(j, L_RULE, R_AFTER, &msg, pd->seq, pd->line, r->cid,
                                   pd->action, NOSPAN, NOSPAN, 0);
            if (f < 0) {
                rc = FAIL;
                break;
            }
            st->fail[st->n_fail].seq = pd->seq;
            st->fail[st->n_fail].rec = f;
            st->n_fail++;
        }
        if (rc == OK) {
            for (Py_ssize_t k = 0; k < st->n_pending; k++) PyMem_RawFree(st->pending[k].why);
            st->n_pending = 0;
        }
    }
    PyMem_RawFree(msg.b);
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
        if (put_rec(j, L_WARNING, W_UNCONTRACTED, &msg, seq, line, NOSPAN, NOSPAN, src, dst, 0)
            != OK)
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
            if (put_rec(j, L_HANDOFF, R_VIOLATION, &msg, seq, line, NOSPAN, NOSPAN, src, dst, 0)
                != OK)
                goto fail;
        }
        if (k->require_verified && n_unverified) {
            if (border_text(&msg, src, dst, seq) != OK
                || buf_str(&msg, ": required fields ") != OK
                || quote_names(&msg, unverified, n_unverified) != OK
                || buf_str(&msg, " arrived without verified=true where the contract demands "
                                 "verification") != OK)
                goto fail;
            if (put_rec(j, L_HANDOFF, R_UNVERIFIED, &msg, seq, line, NOSPAN, NOSPAN, src, dst,
                        0) != OK)
                goto fail;
        }
    }
    PyMem_RawFree(msg.b);
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
    PyMem_RawFree(msg.b);
    return GIVE_WAY;
fail:
    PyMem_RawFree(msg.b);
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
judge_finish(Judge *j)
{
    const Plan *pl = j->plan;
    Buf msg = {0};
    int rc = OK;
    j->n_order = j->n_unseen = j->n_uncrossed = 0;
    for (Py_ssize_t i = 0; i < pl->n_rules && rc == OK; i++) {
        RState *st = &j->st[i];
        const Rule *r = &pl->rules[i];
        if (!st->seen) {
            j->unseen[j->n_unseen++] = i;
            continue;
        }
        if (!st->n_fail && !st->n_pending) continue;
        Py_ssize_t total = st->n_fail + st->n_pending;
        Failure *judged = PyMem_RawMalloc((size_t)total * sizeof(Failure));
        if (!judged) {
            no_memory();
            rc = FAIL;
            break;
        }
        Py_ssize_t m = 0;
        for (Py_ssize_t k = 0; k < st->n_fail; k++) judged[m++] = st->fail[k];
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
            Py_ssize_t f = bad ? -1 : add_rec(j, L_RULE, R_SKIPPED, &msg, pd->seq, pd->line,
                                              r->cid, pd->action, NOSPAN, NOSPAN, 0);
            if (f < 0) {
                rc = FAIL;
                break;
            }
            judged[m].seq = pd->seq;
            judged[m].rec = f;
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
        /* j->order holds room for every finding (add_rec grows both) */
        if (rc == OK) {
            for (Py_ssize_t k = 0; k < m; k++) j->order[j->n_order++] = judged[k].rec;
        }
        PyMem_RawFree(judged);
    }
    if (rc == OK) {
        for (Py_ssize_t k = 0; k < j->n_recs; k++) {
            if (j->recs[k].list == L_HANDOFF) j->order[j->n_order++] = k;
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
        Py_ssize_t f = add_rec(j, L_RULE, R_PROPAGATED, &msg, last->seq, last->line, NOSPAN,
                               NOSPAN, last->src, last->dst, ch->best_hops);
        if (f < 0) rc = FAIL;
        else j->order[j->n_order++] = f;
    }
    for (Py_ssize_t c = 0; c < pl->n_contracts && rc == OK; c++) {
        if (j->crossed[c] || j->absent[c]) continue;
        j->uncrossed[j->n_uncrossed++] = c;
    }
    PyMem_RawFree(msg.b);
    return rc;
}

/* Leave the state as a new file finds it (buffers kept for the next one). */
static void
judge_reset(Judge *j)
{
    for (Py_ssize_t i = 0; i < j->plan->n_rules; i++) {
        RState *st = &j->st[i];
        for (Py_ssize_t k = 0; k < st->n_pending; k++) PyMem_RawFree(st->pending[k].why);
        st->n_pending = st->n_fail = st->n_lic = 0;
        st->done = st->seen = 0;
        st->why_not.n = 0;
    }
    memset(j->crossed, 0, sizeof j->crossed);
    memset(j->absent, 0, sizeof j->absent);
    j->n_borders = j->n_chains = 0;
    j->n_recs = j->n_order = j->n_unseen = j->n_uncrossed = 0;
    j->texts.n = 0;
}

static void
judge_free(Judge *j)
{
    judge_reset(j);
    for (Py_ssize_t i = 0; i < MAX_RULES; i++) PyMem_RawFree(j->st[i].why_not.b);
    PyMem_RawFree(j->recs);
    PyMem_RawFree(j->order);
    PyMem_RawFree(j->texts.b);
    PyMem_RawFree(j);
}

/* -- the plan: a spec's rules, read once ----------------------------------------------- */

static const char *PLAN = "roadcheck._accel.plan";

static void
plan_free(PyObject *capsule)
{
    Plan *pl = PyCapsule_GetPointer(capsule, PLAN);
    if (!pl) return;
    Py_XDECREF(pl->source);
    Py_XDECREF(pl->guarded);
    Py_XDECREF(pl->cids);
    if (pl->scratch) judge_free(pl->scratch);
    PyMem_RawFree(pl);
}

/* The bytes object o as a span, or FAIL with `error` as the TypeError */
static int
span_of_bytes(PyObject *o, Span *sp, const char *error)
{
    if (!PyBytes_Check(o)) {
        PyErr_SetString(PyExc_TypeError, error);
        return FAIL;
    }
    sp->s = (cp)PyBytes_AS_STRING(o);
    sp->len = PyBytes_GET_SIZE(o);
    return OK;
}

static int
bytes_span(PyObject *o, Span *sp)
{
    return span_of_bytes(o, sp, "make_plan: names must be bytes");
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
    Plan *pl = PyMem_RawCalloc(1, sizeof(Plan) + (size_t)(total + 1) * sizeof(Span));
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
    pl->scratch = PyMem_RawCalloc(1, sizeof(Judge));
    if (!pl->scratch) {
        no_memory();
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
    if (pl->scratch) PyMem_RawFree(pl->scratch);
    PyMem_RawFree(pl);
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
    PyObject *result = NULL, *reasons = NULL, *warnings = NULL, *unseen = NULL,
             *uncrossed = NULL, *agents = NULL;
    long long counts[6];
    Py_ssize_t fin[2];
    j->ag = &ag;
    int rc = scan((cp)buf.buf, buf.len, pl->guarded, pl->cids, &x, &ag, NULL, counts, fin, j,
                  NULL);
    if (rc == OK) rc = judge_finish(j);
    if (rc == FAIL) goto done;
    if (rc == GIVE_WAY) {
        result = Py_None;
        Py_INCREF(result);
        goto done;
    }
    reasons = PyList_New(j->n_order);
    warnings = PyList_New(0);
    unseen = PyList_New(j->n_unseen);
    uncrossed = PyList_New(j->n_uncrossed);
    agents = agents_list(&ag);
    if (!reasons || !warnings || !unseen || !uncrossed || !agents) goto done;
    for (Py_ssize_t k = 0; k < j->n_order; k++) {
        PyObject *f = rec_tuple(j, j->order[k]);
        if (!f) goto done;
        PyList_SET_ITEM(reasons, k, f);
    }
    for (Py_ssize_t k = 0; k < j->n_recs; k++) {
        if (j->recs[k].list != L_WARNING) continue;
        PyObject *f = rec_tuple(j, k);
        if (!f) goto done;
        int bad = PyList_Append(warnings, f);
        Py_DECREF(f);
        if (bad) goto done;
    }
    for (Py_ssize_t k = 0; k < j->n_unseen; k++) {
        PyObject *o = PyLong_FromSsize_t(j->unseen[k]);
        if (!o) goto done;
        PyList_SET_ITEM(unseen, k, o);
    }
    for (Py_ssize_t k = 0; k < j->n_uncrossed; k++) {
        PyObject *o = PyLong_FromSsize_t(j->uncrossed[k]);
        if (!o) goto done;
        PyList_SET_ITEM(uncrossed, k, o);
    }
    result = Py_BuildValue("(OLLLLLLnnOOOO)", agents, counts[0], counts[1], counts[2],
                           counts[3], counts[4], counts[5], fin[0], fin[1], reasons, warnings,
                           unseen, uncrossed);
done:
    judge_reset(j);
    j->busy = 0;
    agents_clear(&ag);
    Py_XDECREF(agents);
    Py_XDECREF(reasons);
    Py_XDECREF(warnings);
    Py_XDECREF(unseen);
    Py_XDECREF(uncrossed);
    PyMem_RawFree(x.kptr);
    PyMem_RawFree(x.klen);
    PyBuffer_Release(&buf);
    return result;
}

/* -- judging and rendering a run of files (judge_files) ---------------------------------- */

PyDoc_STRVAR(judge_files_doc,
"judge_files(blob, ends, start, stop, plan, style, number, listed, fd=-1) -> tuple\n\n"
"Read, judge and render files start..stop-1 of a path list: blob holds each path's bytes\n"
"and a NUL, ends the native uint64 offsets just past each NUL. Each file is read as\n"
"read_regular reads it (the first `listed` paths were found to be regular files by the\n"
"listing that made them: they are opened without a stat first), judged as judge_native\n"
"judges it, and its result rendered as\n"
"roadcheck.report.replay.ResultRenderer.from_native renders it for the report's mode; the\n"
"results of text reports are numbered from `number`. `style` (from\n"
"ResultRenderer.native_style) holds the mode and what the spec gives every result.\n"
"Stops before the first file it does not vouch for (the caller reads, judges and renders\n"
"that one as usual) and returns (next, entries, bodies, passed, blocked, warned): the index\n"
"it stopped at (stop when every file was done), the files' entries as the report writer\n"
"spools them, the rendered results (each after a ',\\n' in JSON), and the counts. With a\n"
"file descriptor fd, the results are written at its end instead, and bodies is (fd, offset,\n"
"length). The files are read and judged without the GIL: calls on other threads run at\n"
"the same time.");

enum { M_JSON, M_JSON_SUMMARY, M_TEXT, M_TEXT_SUMMARY };

static int valid_utf8(const char *s, size_t n);

typedef struct {
    int mode;
    Span pass_json, pass_text, pass_head, prop_suffix;
    Span codes[7];
    PyObject *notes_json, *notes_text, *crossed_json, *crossed_text; /* tuples of bytes */
    Span no_actions_json, no_actions_text;                          /* s NULL: none */
} Style;

static int
style_bytes(PyObject *o, Span *sp, int none_ok)
{
    if (none_ok && o == Py_None) {
        sp->s = NULL;
        sp->len = 0;
        return OK;
    }
    return span_of_bytes(o, sp, "judge_files: style fields must be bytes");
}

static int
style_tuple(PyObject *o, Py_ssize_t n, PyObject **out)
{
    if (!PyTuple_Check(o) || PyTuple_GET_SIZE(o) != n) {
        PyErr_SetString(PyExc_TypeError, "judge_files: a style tuple does not fit the plan");
        return FAIL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!PyBytes_Check(PyTuple_GET_ITEM(o, i))) {
            PyErr_SetString(PyExc_TypeError, "judge_files: style fields must be bytes");
            return FAIL;
        }
    }
    *out = o;
    return OK;
}

static int
read_style(PyObject *t, const Plan *pl, Style *st)
{
    if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != 12) {
        PyErr_SetString(PyExc_TypeError, "judge_files: the style is a 12-tuple");
        return FAIL;
    }
    st->mode = (int)PyLong_AsLong(PyTuple_GET_ITEM(t, 0));
    if (st->mode == -1 && PyErr_Occurred()) return FAIL;
    if (st->mode < M_JSON || st->mode > M_TEXT_SUMMARY) {
        PyErr_SetString(PyExc_ValueError, "judge_files: unknown mode");
        return FAIL;
    }
    PyObject *codes = PyTuple_GET_ITEM(t, 4);
    if (!PyTuple_Check(codes) || PyTuple_GET_SIZE(codes) != 7) {
        PyErr_SetString(PyExc_TypeError, "judge_files: seven codes");
        return FAIL;
    }
    for (int i = 0; i < 7; i++) {
        if (style_bytes(PyTuple_GET_ITEM(codes, i), &st->codes[i], 0) != OK) return FAIL;
        for (Py_ssize_t k = 0; k < st->codes[i].len; k++) {
            unsigned char c = st->codes[i].s[k];
            if (c < 0x21 || c > 0x7e || c == '"' || c == '\\') {
                PyErr_SetString(PyExc_ValueError, "judge_files: a code is plain ASCII");
                return FAIL;
            }
        }
    }
    if (style_bytes(PyTuple_GET_ITEM(t, 1), &st->pass_json, 0) != OK
        || style_bytes(PyTuple_GET_ITEM(t, 2), &st->pass_text, 0) != OK
        || style_bytes(PyTuple_GET_ITEM(t, 3), &st->pass_head, 0) != OK
        || style_bytes(PyTuple_GET_ITEM(t, 5), &st->prop_suffix, 0) != OK
        || style_tuple(PyTuple_GET_ITEM(t, 6), pl->n_rules, &st->notes_json) != OK
        || style_tuple(PyTuple_GET_ITEM(t, 7), pl->n_rules, &st->notes_text) != OK
        || style_bytes(PyTuple_GET_ITEM(t, 8), &st->no_actions_json, 1) != OK
        || style_bytes(PyTuple_GET_ITEM(t, 9), &st->no_actions_text, 1) != OK
        || style_tuple(PyTuple_GET_ITEM(t, 10), pl->n_contracts, &st->crossed_json) != OK
        || style_tuple(PyTuple_GET_ITEM(t, 11), pl->n_contracts, &st->crossed_text) != OK)
        return FAIL;
    return OK;
}

static int
buf_bytes(Buf *b, PyObject *o)
{
    return buf_add(b, PyBytes_AS_STRING(o), PyBytes_GET_SIZE(o));
}

static int
buf_c(Buf *b, char c)
{
    return buf_add(b, &c, 1);
}

/* A JSON string as orjson writes it: the quote, the backslash and the controls escaped
 * (the short escapes where JSON has one, else \u00XX), every other byte as it is. */
static int
buf_json_str(Buf *b, cp s, Py_ssize_t len)
{
    static const char hex[] = "0123456789abcdef";
    if (buf_c(b, '"') != OK) return FAIL;
    Py_ssize_t run = 0;
    for (Py_ssize_t i = 0; i < len; i++) {
        unsigned char c = s[i];
        if (c >= 0x20 && c != '"' && c != '\\') continue;
        if (buf_add(b, s + run, i - run) != OK) return FAIL;
        run = i + 1;
        char e[6] = {'\\', 0, 0, 0, 0, 0};
        int n = 2;
        switch (c) {
        case '"': e[1] = '"'; break;
        case '\\': e[1] = '\\'; break;
        case '\b': e[1] = 'b'; break;
        case '\f': e[1] = 'f'; break;
        case '\n': e[1] = 'n'; break;
        case '\r': e[1] = 'r'; break;
        case '\t': e[1] = 't'; break;
        default:
            e[1] = 'u';
            e[2] = '0';
            e[3] = '0';
            e[4] = hex[c >> 4];
            e[5] = hex[c & 15];
            n = 6;
        }
        if (buf_add(b, e, n) != OK) return FAIL;
    }
    if (buf_add(b, s + run, len - run) != OK) return FAIL;
    return buf_c(b, '"');
}

/* Whether text is printed as it is by the text report (roadcheck.report._text.escape_controls
 * leaves it unchanged): no C0 or C1 control, DEL, bidi mark, embedding, override or isolate,
 * nor line or paragraph separator. The text is valid UTF-8. */
static int
text_plain(cp s, Py_ssize_t len)
{
    for (Py_ssize_t i = 0; i < len; i++) {
        unsigned char c = s[i];
        if (c < 0x20 || c == 0x7f) return 0;
        if (c < 0x80) continue;
        unsigned char c1 = i + 1 < len ? s[i + 1] : 0, c2 = i + 2 < len ? s[i + 2] : 0;
        if (c == 0xC2 && c1 >= 0x80 && c1 <= 0x9F) return 0;      /* U+0080..U+009F */
        if (c == 0xD8 && c1 == 0x9C) return 0;                      /* U+061C */
        if (c == 0xE2 && c1 == 0x80
            && (c2 == 0x8E || c2 == 0x8F || (c2 >= 0xA8 && c2 <= 0xAE)))
            return 0; /* U+200E, U+200F, U+2028..U+202E */
        if (c == 0xE2 && c1 == 0x81 && c2 >= 0xA6 && c2 <= 0xA9) return 0; /* U+2066..U+2069 */
    }
    return 1;
}

static int
buf_code(Buf *b, const Style *sy, const Rec *r)
{
    if (buf_span(b, sy->codes[r->code]) != OK) return FAIL;
    if (r->code != R_PROPAGATED) return OK;
    if (buf_ll(b, r->hops) != OK) return FAIL;
    return buf_span(b, sy->prop_suffix);
}

/* `"key": ` and a string, at a finding's depth in a JSON result */
static int
json_field(Buf *b, const char *key, Span v)
{
    if (buf_str(b, ",\n          \"") != OK || buf_str(b, key) != OK || buf_str(b, "\": ") != OK)
        return FAIL;
    return buf_json_str(b, v.s, v.len);
}

/* A finding as a JSON result lists it (Finding.to_dict() indented in its place); the codes
 * need no escape (read_style checks) */
static int
json_rec(Buf *b, const Judge *j, const Style *sy, const Rec *r)
{
    int bad = buf_str(b, "        {\n          \"code\": \"") != OK || buf_code(b, sy, r) != OK
              || buf_str(b, "\",\n          \"message\": ") != OK
              || buf_json_str(b, (cp)j->texts.b + r->at, r->len) != OK
              || buf_str(b, ",\n          \"seq\": ") != OK || buf_ll(b, r->seq) != OK
              || buf_str(b, ",\n          \"line\": ") != OK || buf_ll(b, (long long)r->line) != OK
              || (r->cid.s && json_field(b, "checkpoint_id", r->cid) != OK)
              || (r->action.s && json_field(b, "action_type", r->action) != OK)
              || (r->from.s && json_field(b, "from_agent", r->from) != OK)
              || (r->to.s && json_field(b, "to_agent", r->to) != OK)
              || buf_str(b, "\n        }") != OK;
    return bad ? FAIL : OK;
}

/* The items of a JSON list (each rendered by `item`, or given as bytes), in its place */
typedef struct {
    Buf *b;
    int n;
} List;

static int
list_next(List *l)
{
    return buf_str(l->b, l->n++ ? ",\n" : "[\n");
}

static int
list_end(List *l)
{
    return buf_str(l->b, l->n ? "\n      ]" : "[]");
}

/* "[N] path": N as text */
static int
text_rec_line(Buf *b, const char *head, const Judge *j, const Style *sy, const Rec *r,
              int with_code)
{
    if (buf_str(b, head) != OK) return FAIL;
    if (with_code && (buf_code(b, sy, r) != OK || buf_str(b, ": ") != OK)) return FAIL;
    if (buf_add(b, j->texts.b + r->at, r->len) != OK) return FAIL;
    return buf_c(b, '\n');
}

static int
plural_of(Buf *b, long long n, const char *word)
{
    if (buf_ll(b, n) != OK || buf_c(b, ' ') != OK || buf_str(b, word) != OK) return FAIL;
    return n == 1 ? OK : buf_c(b, 's');
}

/* Renders the result of the file just judged; GIVE_WAY when a text report would have to
 * escape something (the caller renders that file as usual). */
static int
render_file(Buf *bodies, Buf *entries, const Judge *j, const Style *sy, cp path,
            Py_ssize_t plen, const long long counts[6], int task_success, const Val *fin_agent,
            long long number, int *verdict_block, int *warned)
{
    const Plan *pl = j->plan;
    int block = j->n_order > 0;
    int no_actions = sy->no_actions_json.s && pl->n_rules && counts[0] == 0;
    Py_ssize_t n_warn = no_actions + j->n_uncrossed;
    for (Py_ssize_t k = 0; k < j->n_recs; k++) n_warn += j->recs[k].list == L_WARNING;
    *verdict_block = block;
    *warned = !block && n_warn > 0;
    int text = sy->mode == M_TEXT || sy->mode == M_TEXT_SUMMARY;
    if (text) {
        if (buf_c(entries, '[') != OK || buf_json_str(entries, path, plen) != OK
            || buf_str(entries, block ? ",\"native\",0,1,0]\n" : ",\"native\",1,0,0]\n") != OK)
            return FAIL;
    }
    else {
        if (buf_str(entries, ",\n    {\n      \"path\": ") != OK
            || buf_json_str(entries, path, plen) != OK
            || buf_str(entries, ",\n      \"format\": \"native\"\n    }") != OK)
            return FAIL;
    }
    if (sy->mode == M_JSON) {
        Buf *b = bodies;
        if (buf_str(b, ",\n    {\n      \"id\": ") != OK || buf_json_str(b, path, plen) != OK
            || buf_str(b, ",\n      \"path\": ") != OK || buf_json_str(b, path, plen) != OK
            || buf_str(b, block ? ",\n      \"verdict\": \"BLOCK\",\n      \"exit\": 1,\n"
                                : ",\n      \"verdict\": \"PASS\",\n      \"exit\": 0,\n") != OK
            || buf_str(b, "      \"reasons\": ") != OK)
            return FAIL;
        if (!block) {
            if (buf_span(b, sy->pass_json) != OK) return FAIL;
        }
        else {
            List l = {b, 0};
            for (Py_ssize_t k = 0; k < j->n_order; k++) {
                if (list_next(&l) != OK || json_rec(b, j, sy, &j->recs[j->order[k]]) != OK)
                    return FAIL;
            }
            if (list_end(&l) != OK) return FAIL;
        }
        if (buf_str(b, ",\n      \"warnings\": ") != OK) return FAIL;
        List w = {b, 0};
        for (Py_ssize_t k = 0; k < j->n_recs; k++) {
            if (j->recs[k].list != L_WARNING) continue;
            if (list_next(&w) != OK || json_rec(b, j, sy, &j->recs[k]) != OK) return FAIL;
        }
        if (no_actions && (list_next(&w) != OK || buf_span(b, sy->no_actions_json) != OK))
            return FAIL;
        for (Py_ssize_t k = 0; k < j->n_uncrossed; k++) {
            if (list_next(&w) != OK
                || buf_bytes(b, PyTuple_GET_ITEM(sy->crossed_json, j->uncrossed[k])) != OK)
                return FAIL;
        }
        if (list_end(&w) != OK || buf_str(b, ",\n      \"notes\": ") != OK) return FAIL;
        List n = {b, 0};
        for (Py_ssize_t k = 0; k < j->n_unseen; k++) {
            if (list_next(&n) != OK
                || buf_bytes(b, PyTuple_GET_ITEM(sy->notes_json, j->unseen[k])) != OK)
                return FAIL;
        }
        if (list_end(&n) != OK
            || buf_str(b, task_success ? ",\n      \"task_success\": true"
                                       : ",\n      \"task_success\": false") != OK
            || buf_str(b, ",\n      \"source\": \"native\"\n    }") != OK)
            return FAIL;
    }
    else if (sy->mode == M_TEXT) {
        /* everything printed must print as it is: else Python renders the file */
        const Agents *ag = j->ag;
        if (!text_plain(path, plen)) return GIVE_WAY;
        for (Py_ssize_t k = 0; k < ag->n; k++) {
            if (!text_plain(ag->s[k], ag->len[k])) return GIVE_WAY;
        }
        int fin_new = 0;
        if (fin_agent->type == T_STRING) {
            if (fin_agent->esc || !text_plain(fin_agent->s, fin_agent->len)) return GIVE_WAY;
            fin_new = 1;
            for (Py_ssize_t k = 0; k < ag->n && fin_new; k++) {
                if (ag->len[k] == fin_agent->len
                    && memcmp(ag->s[k], fin_agent->s, (size_t)fin_agent->len) == 0)
                    fin_new = 0;
            }
        }
        for (Py_ssize_t k = 0; k < j->n_recs; k++) {
            if (!text_plain((cp)j->texts.b + j->recs[k].at, j->recs[k].len)) return GIVE_WAY;
        }
        Buf *b = bodies;
        const char *ts = task_success ? "true" : "false";
        if (buf_c(b, '[') != OK || buf_ll(b, number) != OK || buf_str(b, "] ") != OK
            || buf_add(b, path, plen) != OK || buf_str(b, "\ntrajectory: ") != OK
            || plural_of(b, counts[4] + 1, "event") != OK || buf_str(b, ", agents: ") != OK)
            return FAIL;
        Py_ssize_t agents_at = b->n;
        for (Py_ssize_t k = 0; k < ag->n; k++) {
            if ((k && buf_str(b, ", ") != OK) || buf_add(b, ag->s[k], ag->len[k]) != OK)
                return FAIL;
        }
        if (fin_new && ((ag->n && buf_str(b, ", ") != OK)
                        || buf_add(b, fin_agent->s, fin_agent->len) != OK))
            return FAIL;
        /* ", ".join(agents) or "-" */
        if ((b->n == agents_at && buf_c(b, '-') != OK) || buf_str(b, "; ") != OK
            || plural_of(b, counts[2], "handoff") != OK || buf_str(b, ", ") != OK
            || plural_of(b, counts[3], "checkpoint") != OK || buf_str(b, ", ") != OK
            || plural_of(b, counts[1], "irreversible action") != OK
            || buf_str(b, "\nfinal : task_success=") != OK || buf_str(b, ts) != OK
            || buf_str(b, " (recorded, printed for contrast, ignored for the verdict)\n"
                          "verdict : ") != OK)
            return FAIL;
        if (!block) {
            if (buf_str(b, "PASS (") != OK || buf_span(b, sy->pass_head) != OK
                || buf_str(b, ") exit 0\n") != OK || buf_span(b, sy->pass_text) != OK)
                return FAIL;
        }
        else {
            const Rec *head = &j->recs[j->order[0]];
            if (buf_str(b, "BLOCK (") != OK || buf_code(b, sy, head) != OK
                || buf_str(b, ") exit 1\n") != OK)
                return FAIL;
            for (Py_ssize_t k = 0; k < j->n_order; k++) {
                if (text_rec_line(b, "reason : ", j, sy, &j->recs[j->order[k]], 1) != OK)
                    return FAIL;
            }
        }
        for (Py_ssize_t k = 0; k < j->n_recs; k++) {
            if (j->recs[k].list == L_WARNING
                && text_rec_line(b, "warn : ", j, sy, &j->recs[k], 1) != OK)
                return FAIL;
        }
        if (no_actions && buf_span(b, sy->no_actions_text) != OK) return FAIL;
        for (Py_ssize_t k = 0; k < j->n_uncrossed; k++) {
            if (buf_bytes(b, PyTuple_GET_ITEM(sy->crossed_text, j->uncrossed[k])) != OK)
                return FAIL;
        }
        for (Py_ssize_t k = 0; k < j->n_unseen; k++) {
            if (buf_bytes(b, PyTuple_GET_ITEM(sy->notes_text, j->unseen[k])) != OK) return FAIL;
        }
        if (block) {
            const Rec *head = &j->recs[j->order[0]];
            if (buf_str(b, "contrast : final metric says task_success=") != OK
                || buf_str(b, ts) != OK || buf_str(b, " / trajectory says ") != OK
                || buf_code(b, sy, head) != OK || buf_c(b, '\n') != OK)
                return FAIL;
        }
    }
    return OK;
}

/* A regular file's bytes into *b (grown as needed), as read_regular reads them; GIVE_WAY
 * for anything else, a file larger than `limit` or one that grows while it is read.
 * `listed`: a listing found it a regular file just before, so it is opened without a
 * stat first (read_regular's stat keeps a FIFO from being opened; a listed file replaced
 * by a FIFO since is opened, found out by the fstat and never read). */
static int
read_into(const char *path, Buf *b, Py_ssize_t limit, int listed)
{
    struct stat st;
    if (!listed && (stat(path, &st) != 0 || !S_ISREG(st.st_mode))) return GIVE_WAY;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return GIVE_WAY;
    int rc = GIVE_WAY;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size >= limit) goto done;
    Py_ssize_t want = (Py_ssize_t)st.st_size + 1;
    b->n = 0;
    if (want > b->cap) {
        Py_ssize_t cap = b->cap ? b->cap : 1 << 16;
        while (cap < want) cap *= 2;
        char *nb = PyMem_RawRealloc(b->b, (size_t)cap);
        if (!nb) {
            no_memory();
            rc = FAIL;
            goto done;
        }
        b->b = nb;
        b->cap = cap;
    }
    for (;;) {
        ssize_t got = read(fd, b->b + b->n, (size_t)(want - b->n));
        if (got < 0) {
            if (errno == EINTR) {
                /* a signal's handler runs once the GIL is taken again, where it is not held */
                if (PyGILState_Check() && PyErr_CheckSignals() != 0) {
                    rc = FAIL;
                    goto done;
                }
                continue;
            }
            goto done;
        }
        if (got == 0) break;
        b->n += got;
        if (b->n == want) goto done; /* it grew since the stat: read_regular reads it whole */
        break;                       /* a short read of a regular file is its end */
    }
    rc = OK;
done:
    close(fd);
    return rc;
}

#define FILES_LIMIT ((Py_ssize_t)1 << 26)

/* What judge_files does between taking and giving back the GIL: no Python object is
 * touched (the style's bytes are only read, and their tuples kept alive by the caller).
 * Returns OK with *at where it stopped, or FAIL when memory ran out. */
typedef struct {
    const char *blob;
    Py_ssize_t blob_len;
    const uint64_t *ends;
    Py_ssize_t start, stop, listed;
    long long number;
    const Plan *pl;
    const Style *sy;
    Judge *j;
    Buf entries, bodies;
    long long passed, blocked, warned;
} FileRun;

static int
judge_run(FileRun *r, Py_ssize_t *at)
{
    Buf data = {0};
    Agents ag;
    ag.n = 0;
    Ctx x = {0};
    Judge *j = r->j;
    j->ag = &ag;
    int rc = OK;
    Py_ssize_t i = r->start;
    for (; i < r->stop; i++) {
        uint64_t lo = i ? r->ends[i - 1] : 0, hi = r->ends[i];
        if (hi <= lo || hi > (uint64_t)r->blob_len) break;
        cp path = (cp)r->blob + lo;
        Py_ssize_t plen = (Py_ssize_t)(hi - lo) - 1;
        if (path[plen] != 0 || plen == 0 || memchr(path, 0, (size_t)plen)) break;
        if (plen == 1 && path[0] == '-') break; /* standard input */
        if (!valid_utf8((const char *)path, (size_t)plen)) break;
        rc = read_into((const char *)path, &data, FILES_LIMIT, i < r->listed);
        if (rc == FAIL) break;
        if (rc != OK) {
            rc = OK;
            break;
        }
        long long counts[6];
        Py_ssize_t fin[2];
        Final final;
        x.kn = 0;
        rc = scan((cp)data.b, data.n, r->pl->guarded, r->pl->cids, &x, &ag, NULL, counts, fin, j,
                  &final);
        if (rc == OK) rc = judge_finish(j);
        if (rc == OK) {
            Py_ssize_t bodies_n = r->bodies.n, entries_n = r->entries.n;
            int block = 0, warn = 0;
            rc = render_file(&r->bodies, &r->entries, j, r->sy, path, plen, counts,
                             final.task_success, &final.agent, r->number + (i - r->start),
                             &block, &warn);
            if (rc == GIVE_WAY) {
                r->bodies.n = bodies_n;
                r->entries.n = entries_n;
            }
            else if (rc == OK) {
                r->passed += !block;
                r->blocked += block;
                r->warned += warn;
            }
        }
        judge_reset(j);
        agents_clear(&ag);
        if (rc == FAIL) break;
        if (rc != OK) {
            rc = OK;
            break;
        }
    }
    *at = i;
    agents_clear(&ag);
    PyMem_RawFree(x.kptr);
    PyMem_RawFree(x.klen);
    PyMem_RawFree(data.b);
    return rc;
}

static PyObject *
judge_files(PyObject *module, PyObject *args)
{
    Py_buffer blob, ends;
    Py_ssize_t start, stop, listed;
    PyObject *capsule, *style;
    long long number;
    int fd = -1;
    (void)module;
    if (!PyArg_ParseTuple(args, "y*y*nnOOLn|i:judge_files", &blob, &ends, &start, &stop,
                          &capsule, &style, &number, &listed, &fd))
        return NULL;
    PyObject *result = NULL;
    FileRun r;
    memset(&r, 0, sizeof r);
    Py_ssize_t n_ends = ends.len / (Py_ssize_t)sizeof(uint64_t);
    if (!PyCapsule_IsValid(capsule, PLAN)) {
        PyErr_SetString(PyExc_TypeError, "judge_files: the plan must come from make_plan");
        goto out;
    }
    if (start < 0 || stop > n_ends || start > stop) {
        PyErr_SetString(PyExc_IndexError, "judge_files: files out of range");
        goto out;
    }
    Plan *pl = PyCapsule_GetPointer(capsule, PLAN);
    Style sy;
    if (read_style(style, pl, &sy) != OK) goto out;
    /* a state of its own (not the plan's): calls on other threads judge at the same time */
    r.j = PyMem_RawCalloc(1, sizeof(Judge));
    if (!r.j) {
        PyErr_NoMemory();
        goto out;
    }
    r.j->plan = pl;
    r.blob = (const char *)blob.buf;
    r.blob_len = blob.len;
    r.ends = (const uint64_t *)ends.buf;
    r.start = start;
    r.stop = stop;
    r.listed = listed;
    r.number = number;
    r.pl = pl;
    r.sy = &sy;
    Py_ssize_t at = start;
    int rc, io_errno = 0;
    off_t offset = 0;
    Py_BEGIN_ALLOW_THREADS
    rc = judge_run(&r, &at);
    if (rc == OK && fd >= 0) {
        /* the results to the end of fd, where the caller reads them back */
        offset = lseek(fd, 0, SEEK_END);
        Py_ssize_t put = 0;
        if (offset < 0) io_errno = errno;
        while (!io_errno && put < r.bodies.n) {
            ssize_t w = write(fd, r.bodies.b + put, (size_t)(r.bodies.n - put));
            if (w < 0) {
                if (errno != EINTR) io_errno = errno;
                continue;
            }
            put += w;
        }
    }
    Py_END_ALLOW_THREADS
    if (rc == FAIL) {
        if (!PyErr_Occurred()) PyErr_NoMemory();
        goto out;
    }
    if (io_errno) {
        errno = io_errno;
        PyErr_SetFromErrno(PyExc_OSError);
        goto out;
    }
    if (fd >= 0)
        result = Py_BuildValue("(ny#(iLn)LLL)", at, r.entries.b ? r.entries.b : "", r.entries.n,
                               fd, (long long)offset, r.bodies.n, r.passed, r.blocked, r.warned);
    else
        result = Py_BuildValue("(ny#y#LLL)", at, r.entries.b ? r.entries.b : "", r.entries.n,
                               r.bodies.b ? r.bodies.b : "", r.bodies.n, r.passed, r.blocked,
                               r.warned);
out:
    if (r.j) judge_free(r.j);
    PyMem_RawFree(r.entries.b);
    PyMem_RawFree(r.bodies.b);
    PyBuffer_Release(&blob);
    PyBuffer_Release(&ends);
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
        cp nl = line_at(&x, p, stop);
        if (x.p < x.end) {
            rc = read_value(&x);
            if (rc == OK) rc = line_rest(&x);
        }
        p = nl + 1;
    }
    PyMem_RawFree(x.kptr);
    PyMem_RawFree(x.klen);
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
    int rc = scan((cp)buf.buf, buf.len, guarded, cids, &x, &ag, relevant, counts, fin, NULL,
                  NULL);
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
    agents_clear(&ag);
    Py_XDECREF(relevant);
    PyMem_RawFree(x.kptr);
    PyMem_RawFree(x.klen);
    PyBuffer_Release(&buf);
    return result;
}

/* ---- listing a directory of trajectory files ---------------------------------------- */

/* A name roadcheck reads from a directory: not hidden, ending in .jsonl, .ndjson or .json,
 * each optionally followed by .gz or .zst (roadcheck._inputs.is_trajectory_name). */
static int
trajectory_name(const char *name, size_t n)
{
    static const char *const zipped[] = {".gz", ".zst"};
    static const char *const kinds[] = {".jsonl", ".ndjson", ".json"};
    if (n == 0 || name[0] == '.') return 0;
    for (int i = 0; i < 2; i++) {
        size_t k = strlen(zipped[i]);
        if (n >= k && memcmp(name + n - k, zipped[i], k) == 0) {
            n -= k;
            break;
        }
    }
    for (int i = 0; i < 3; i++) {
        size_t k = strlen(kinds[i]);
        if (n >= k && memcmp(name + n - k, kinds[i], k) == 0) return 1;
    }
    return 0;
}

typedef struct {
    char *name;
    size_t len;
    unsigned long long dev, ino;
    unsigned char type;  /* the entry's d_type; 0 once found to be no regular file */
    unsigned char known; /* dev and ino are known without a stat (dirent_identities) */
} Entry;

typedef struct {
    int dir;
    Entry *entries;
    size_t start, stop;
    int give_way;
} StatJob;

/* stat (following links, as os.stat) the entries [start, stop) of one directory */
static void *
stat_range(void *arg)
{
    StatJob *job = arg;
    for (size_t i = job->start; i < job->stop; i++) {
        Entry *en = &job->entries[i];
        if (en->known) continue;
        struct stat st;
        if (fstatat(job->dir, en->name, &st, 0) != 0) {
            /* a broken link is no file; a file gone since it was listed is Python's to name */
            if (en->type == DT_REG) job->give_way = 1;
            en->type = 0;
            continue;
        }
        if (!S_ISREG(st.st_mode)) {
            if (en->type == DT_REG) job->give_way = 1; /* replaced since it was listed */
            en->type = 0;
            continue;
        }
        en->dev = (unsigned long long)st.st_dev;
        en->ino = (unsigned long long)st.st_ino;
    }
    return NULL;
}

/* Each entry's identity, the stat calls spread over a few threads for a large directory
 * (they are most of a listing's cost). 0 done, 1 give way. */
static int
stat_entries(int dir, Entry *entries, size_t n)
{
    enum { MAX_THREADS = 4, PER_THREAD = 1024 };
    size_t unknown = 0;
    for (size_t i = 0; i < n; i++) unknown += !entries[i].known;
    if (!unknown) return 0;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    size_t threads = unknown / PER_THREAD;
    if (threads > (size_t)MAX_THREADS) threads = MAX_THREADS;
    if (cpus > 0 && threads > (size_t)cpus) threads = (size_t)cpus;
    if (threads < 1) threads = 1;
    StatJob jobs[MAX_THREADS];
    pthread_t ids[MAX_THREADS];
    size_t started = 0;
    for (size_t t = 0; t < threads; t++) {
        jobs[t] = (StatJob){dir, entries, n * t / threads, n * (t + 1) / threads, 0};
        if (t == 0) continue; /* the first range is this thread's own */
        if (pthread_create(&ids[t], NULL, stat_range, &jobs[t]) != 0) {
            stat_range(&jobs[t]); /* no thread to be had: this one does it */
            continue;
        }
        started |= (size_t)1 << t;
    }
    stat_range(&jobs[0]);
    int give_way = jobs[0].give_way;
    for (size_t t = 1; t < threads; t++) {
        if (started & ((size_t)1 << t)) pthread_join(ids[t], NULL);
        give_way |= jobs[t].give_way;
    }
    return give_way ? 1 : 0;
}

/* Whether a directory's entries carry their files' identities: on the file systems below,
 * a regular file's entry holds its inode number (d_ino is st_ino) and the file is on the
 * directory's device, so a regular file needs no stat to be identified. Elsewhere
 * (overlayfs, network and FUSE file systems, where the two may differ) every entry is
 * stat'ed. */
static int
dirent_identities(int dir, unsigned long long *dev)
{
#ifdef __linux__
    struct statfs fs;
    struct stat st;
    if (fstatfs(dir, &fs) != 0 || fstat(dir, &st) != 0) return 0;
    switch ((unsigned long)fs.f_type) {
    case 0xEF53UL:     /* ext2, ext3, ext4 */
    case 0x58465342UL: /* xfs */
    case 0x9123683EUL: /* btrfs */
    case 0x01021994UL: /* tmpfs */
        *dev = (unsigned long long)st.st_dev;
        return 1;
    default:
        return 0;
    }
#else
    (void)dir;
    (void)dev;
    return 0;
#endif
}

static int
entry_by_name(const void *a, const void *b)
{
    /* names hold no NUL; strcmp orders bytes as unsigned, which for UTF-8 is the order
     * of the code points, the order of Python's sorted() on the decoded names */
    return strcmp(((const Entry *)a)->name, ((const Entry *)b)->name);
}

static int
entry_by_key(const void *a, const void *b)
{
    const Entry *x = *(const Entry *const *)a, *y = *(const Entry *const *)b;
    if (x->dev != y->dev) return x->dev < y->dev ? -1 : 1;
    if (x->ino != y->ino) return x->ino < y->ino ? -1 : 1;
    return 0;
}

static int
valid_utf8(const char *s, size_t n)
{
    Ctx x = {0};
    x.p = (cp)s;
    x.end = (cp)s + n;
    while (x.p < x.end) {
        if (*x.p < 0x80) x.p++;
        else if (utf8_seq(&x) != OK) return 0;
    }
    return 1;
}

PyDoc_STRVAR(list_trajectories_doc,
"list_trajectories(path, prefix) -> (paths, ends, keys) | None\n\n"
"The trajectory files directly in the directory path (roadcheck._inputs._list: hidden\n"
"names skipped, regular files or links to them only), sorted by name, each identified\n"
"by its device and inode as os.stat gives them (a regular file's read from its directory\n"
"entry on the file systems where the two agree, else stat'ed). paths is prefix + name +\n"
"NUL for each\n"
"file, ends the native uint64 offsets where each ends, keys two native uint64 (device,\n"
"inode) per file. None gives way to the Python listing: a directory that cannot be\n"
"read, a name that is not UTF-8, a file that cannot be stat'ed, two names of one file.");

static PyObject *
list_trajectories(PyObject *module, PyObject *args)
{
    (void)module;
    PyObject *encoded = NULL, *result = NULL;
    Py_buffer prefix;
    if (!PyArg_ParseTuple(args, "O&y*:list_trajectories", PyUnicode_FSConverter, &encoded,
                          &prefix))
        return NULL;
    Entry *entries = NULL, **byk = NULL;
    size_t n = 0, cap = 0, chars = 0;
    int give_way = 0, no_memory = 0;
    /* the directory is read without the GIL (plain malloc, no Python object): another
     * thread, such as one importing the worker pool's modules, runs meanwhile */
    Py_BEGIN_ALLOW_THREADS
    DIR *dir = NULL;
    int fd = open(PyBytes_AS_STRING(encoded), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 || !(dir = fdopendir(fd))) {
        if (fd >= 0) close(fd);
        give_way = 1;
    }
    struct dirent *e;
    errno = 0;
    while (dir && !give_way && !no_memory && (e = readdir(dir)) != NULL) {
        size_t len = strlen(e->d_name);
        if (!trajectory_name(e->d_name, len)) continue;
        unsigned char type = e->d_type;
        if (type != DT_REG && type != DT_LNK && type != DT_UNKNOWN) continue; /* no file */
        if (!valid_utf8(e->d_name, len)) {
            give_way = 1;
            break;
        }
        if (n == cap) {
            size_t more = cap ? cap * 2 : 256;
            Entry *grown = realloc(entries, more * sizeof(Entry));
            if (!grown) {
                no_memory = 1;
                break;
            }
            entries = grown;
            cap = more;
        }
        char *copy = malloc(len + 1);
        if (!copy) {
            no_memory = 1;
            break;
        }
        memcpy(copy, e->d_name, len + 1);
        entries[n].name = copy;
        entries[n].len = len;
        entries[n].type = type;
        entries[n].known = 0;
        entries[n].ino = (unsigned long long)e->d_ino;
        n++;
        chars += len;
        errno = 0;
    }
    if (dir && !give_way && !no_memory && errno != 0) give_way = 1; /* readdir failed */
    if (dir && !give_way && !no_memory && n) {
        unsigned long long dev;
        if (dirent_identities(dirfd(dir), &dev)) {
            for (size_t i = 0; i < n; i++) {
                if (entries[i].type != DT_REG) continue; /* a link, or a kind not told */
                entries[i].dev = dev;
                entries[i].known = 1;
            }
        }
        give_way = stat_entries(dirfd(dir), entries, n);
        /* a link to no regular file (or to nothing) is left out, as os.DirEntry.is_file has it */
        size_t kept = 0;
        chars = 0;
        for (size_t i = 0; i < n; i++) {
            if (entries[i].type == 0) {
                free(entries[i].name);
                continue;
            }
            chars += entries[i].len;
            entries[kept++] = entries[i];
        }
        n = kept;
    }
    if (dir) closedir(dir);
    if (n && !give_way && !no_memory) {
        qsort(entries, n, sizeof(Entry), entry_by_name);
        /* two names of one file (hard links): Python's listing notes them */
        byk = malloc(n * sizeof(Entry *));
        if (!byk) no_memory = 1;
        else {
            for (size_t i = 0; i < n; i++) byk[i] = &entries[i];
            qsort(byk, n, sizeof(Entry *), entry_by_key);
            for (size_t i = 1; i < n && !give_way; i++)
                if (entry_by_key(&byk[i - 1], &byk[i]) == 0) give_way = 1;
        }
    }
    Py_END_ALLOW_THREADS
    if (no_memory) {
        PyErr_NoMemory();
        goto done;
    }
    if (give_way) goto done;
    {
        size_t total = chars + n * ((size_t)prefix.len + 1);
        PyObject *blob = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)total);
        PyObject *ends = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(n * 8));
        PyObject *keys = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(n * 16));
        if (!blob || !ends || !keys) {
            Py_XDECREF(blob);
            Py_XDECREF(ends);
            Py_XDECREF(keys);
            goto done;
        }
        char *b = PyBytes_AS_STRING(blob);
        uint64_t *end = (uint64_t *)PyBytes_AS_STRING(ends);
        uint64_t *key = (uint64_t *)PyBytes_AS_STRING(keys);
        size_t at = 0;
        for (size_t i = 0; i < n; i++) {
            memcpy(b + at, prefix.buf, (size_t)prefix.len);
            at += (size_t)prefix.len;
            memcpy(b + at, entries[i].name, entries[i].len + 1); /* and its NUL */
            at += entries[i].len + 1;
            end[i] = at;
            key[2 * i] = entries[i].dev;
            key[2 * i + 1] = entries[i].ino;
        }
        result = Py_BuildValue("(NNN)", blob, ends, keys);
    }
done:
    for (size_t i = 0; i < n; i++) free(entries[i].name);
    free(entries);
    free(byk);
    PyBuffer_Release(&prefix);
    Py_XDECREF(encoded);
    if (give_way && !PyErr_Occurred()) Py_RETURN_NONE;
    return result;
}

/* -- OpenTelemetry span exports (otel_index, otel_map) ---------------------------------
 *
 * otel_index(data, event_type) reads a file of OTLP/JSON lines (one resourceSpans document
 * per line) once and keeps, in C, what the mapping reads of each span: where its ids, name,
 * status message and GenAI attributes are in data, its times and status code. It vouches
 * only for what the reader's typed decode accepts (roadcheck.ingest.otel: the closed structs,
 * the ids and times it checks, no key repeated at any depth, strings valid UTF-8) and gives
 * way (None) on anything else: an unknown field, an escaped key, base64 or upper-case ids,
 * an attribute of the mapping given twice in one span. otel_map(index, traces, result)
 * maps the spans of the traces of one run to events as roadcheck.ingest.otel.spans_to_events
 * does, for spans of the GenAI conventions alone; it gives way (None) on anything else
 * (another convention, span events, an attribute the mapping reads that is not a string,
 * a malformed span, arguments that are not plain JSON), and Python maps that run.
 */

/* A string of a line: where its body starts from the line's start, its length, whether it
 * holds an escape, whether it is there at all */
typedef struct {
    uint32_t off;
    uint32_t len : 30, esc : 1, set : 1;
} Ref;

#define MAX_LINE ((Py_ssize_t)1 << 30)

enum {
    A_OP, A_AGENT, A_TOOL, A_CALL_ID, A_ARGS, A_RESULT, A_CONV, A_CID, A_CONFIRMED, A_DECISION,
    N_ATTRS
};
static const char *attr_names[N_ATTRS] = {
    "gen_ai.operation.name", "gen_ai.agent.name", "gen_ai.tool.name", "gen_ai.tool.call.id",
    "gen_ai.tool.call.arguments", "gen_ai.tool.call.result", "gen_ai.conversation.id",
    "roadcheck.checkpoint.id", "roadcheck.checkpoint.confirmed_by", "roadcheck.checkpoint.decision",
};
/* Attributes that mark another convention's span: otel_map gives way on them. */
static const char *convention_names[2] = {"openinference.span.kind", "traceloop.span.kind"};

#define SF_EVENTS 1      /* more span events than otel_map orders (Python maps the run) */
#define SF_UNUSUAL 2     /* an attribute the mapping reads that is not a plain string */
#define SF_CONVENTION 4  /* OpenInference or OpenLLMetry */

/* What a list of attributes says of the attributes the mapping reads */
typedef struct {
    unsigned present, unusual; /* by attribute: named (any value); not a plain string */
    int convention;
    Ref attrs[N_ATTRS];
} Attrs;

#define CHECKPOINT_BITS ((1u << A_CID) | (1u << A_CONFIRMED) | (1u << A_DECISION))
/* Span events are ordered by their position under 998 (spans_to_events: tie + 2 + i) */
#define MAX_SPAN_EVENTS 997

/* A span event that names roadcheck.checkpoint.id */
typedef struct {
    long long time;
    int32_t i; /* its position among the span's events */
    unsigned unusual;
    Ref cid, confirmed, decision;
} OEvent;

typedef struct {
    int32_t trace, next; /* the trace's number; the next span of that trace, -1 */
    int32_t line;        /* index of its line in the index's lines */
    int32_t flags;
    uint64_t id, parent; /* span id and parent span id as numbers */
    int has_parent;
    int code; /* 0 UNSET, 1 OK, 2 ERROR */
    long long start, end; /* end -1: none */
    Ref name, message;
    unsigned present; /* which attributes the span names (any value) */
    int32_t ev_first, ev_count; /* its events naming a checkpoint, in the index's events */
    Ref attrs[N_ATTRS];
} OSpan;

typedef struct {
    Py_ssize_t n, start, end, first;
    int32_t traces;
} OLine;

typedef struct {
    unsigned char id[16];
    int32_t first, last; /* spans */
    int32_t last_line;
    int n_conv; /* 0, 1 or 2 (two or more) */
    Py_ssize_t conv_off[2], conv_len[2]; /* in data */
} OTrace;

typedef struct {
    Py_buffer buf;
    int has_buf;
    PyObject *event_type;
    OSpan **blocks; /* the spans, SPAN_BLOCK a block (never moved once written) */
    Py_ssize_t n_spans, n_blocks;
    OEvent *events;
    Py_ssize_t n_events, cap_events;
    OLine *lines;
    Py_ssize_t n_lines, cap_lines;
    OTrace *traces;
    Py_ssize_t n_traces, cap_traces;
    int32_t *table; /* trace ids, open addressing */
    Py_ssize_t table_cap;
} OIndex;

#define SPAN_BLOCK 512
/* What the index may hold: 30% of the file's size (at least 1 MB). A file of spans so
 * small that their records would pass it gives way (the Python reader holds about 1.1x
 * the file, the index adds to that). */
#define INDEX_SHARE(size) \
    ((size_t)(size) / 10 * 3 > ((size_t)1 << 20) ? (size_t)(size) / 10 * 3 : ((size_t)1 << 20))
#define SPAN(ix, i) (&(ix)->blocks[(i) / SPAN_BLOCK][(i) % SPAN_BLOCK])

static const char *OINDEX = "roadcheck._accel.otel_index";

static void
oindex_free(OIndex *ix)
{
    if (!ix) return;
    if (ix->has_buf) PyBuffer_Release(&ix->buf);
    Py_XDECREF(ix->event_type);
    for (Py_ssize_t b = 0; b < ix->n_blocks; b++) PyMem_RawFree(ix->blocks[b]);
    PyMem_RawFree(ix->blocks);
    PyMem_RawFree(ix->events);
    PyMem_RawFree(ix->lines);
    PyMem_RawFree(ix->traces);
    PyMem_RawFree(ix->table);
    PyMem_RawFree(ix);
}

static void
oindex_capsule_free(PyObject *capsule)
{
    oindex_free(PyCapsule_GetPointer(capsule, OINDEX));
}

static int
grow(void **p, Py_ssize_t *cap, Py_ssize_t need, size_t size)
{
    if (need <= *cap) return OK;
    Py_ssize_t c = *cap ? *cap : 64;
    while (c < need) c *= 2;
    void *np = PyMem_RawRealloc(*p, (size_t)c * size);
    if (!np) {
        no_memory();
        return FAIL;
    }
    *p = np;
    *cap = c;
    return OK;
}

static inline int
key_is(cp s, Py_ssize_t len, const char *word)
{
    size_t n = strlen(word);
    return (size_t)len == n && memcmp(s, word, n) == 0;
}

/* Lower-case hex of exactly n digits, as a number (n <= 16) */
static int
lower_hex(cp s, Py_ssize_t len, Py_ssize_t n, uint64_t *out)
{
    if (len != n) return GIVE_WAY;
    uint64_t v = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned char c = s[i];
        int h;
        if (c >= '0' && c <= '9') h = c - '0';
        else if (c >= 'a' && c <= 'f') h = c - 'a' + 10;
        else return GIVE_WAY;
        v = (v << 4) | (unsigned)h;
    }
    *out = v;
    return OK;
}

/* A string at s of the line starting at data (a line is shorter than MAX_LINE) */
static inline Ref
ref_of(cp data, cp s, Py_ssize_t len, int esc)
{
    Ref r;
    r.off = (uint32_t)(s - data);
    r.len = (uint32_t)len;
    r.esc = esc ? 1 : 0;
    r.set = 1;
    return r;
}

/* Nanoseconds: a string of 1 to 20 digits or a non-negative integer, within a long long */
static int
read_nanos(Ctx *x, long long *out)
{
    if (x->p >= x->end) return GIVE_WAY;
    if (*x->p == '"') {
        cp s;
        Py_ssize_t len;
        int esc, rc;
        if ((rc = read_string(x, &s, &len, &esc)) != OK) return rc;
        if (esc || len < 1 || len > 20) return GIVE_WAY;
        unsigned long long v = 0;
        for (Py_ssize_t i = 0; i < len; i++) {
            if (s[i] < '0' || s[i] > '9') return GIVE_WAY;
            unsigned d = (unsigned)(s[i] - '0');
            if (v > (unsigned long long)(LLONG_MAX - d) / 10) return GIVE_WAY;
            v = v * 10 + d;
        }
        *out = (long long)v;
        return OK;
    }
    if (*x->p == '-') return GIVE_WAY;
    int is_int, rc;
    long long v;
    if ((rc = read_number(x, &is_int, &v)) != OK) return rc;
    if (!is_int || v < 0) return GIVE_WAY;
    *out = v;
    return OK;
}

/* A member loop over an object whose keys are all known: `body` reads the value of key
 * (s, len) and sets `bit` to its bit (0: an unknown key, which gives way). */
#define OBJECT_MEMBERS(x, seen, ...)                                               \
    do {                                                                           \
        int rc_, done_;                                                            \
        if (x->p >= x->end || *x->p != '{') return GIVE_WAY;                       \
        if ((rc_ = open_container(x, '}', &done_)) != OK) return rc_;              \
        while (!done_) {                                                           \
            cp s;                                                                  \
            Py_ssize_t len;                                                        \
            unsigned bit = 0;                                                      \
            if ((rc_ = read_key(x, &s, &len)) != OK) return rc_;                   \
            __VA_ARGS__                                                            \
            if (!bit || (seen & bit)) return GIVE_WAY;                             \
            seen |= bit;                                                           \
            if ((rc_ = next_member(x, '}', &done_)) != OK) return rc_;             \
        }                                                                          \
    } while (0)

#define TRY(e)                          \
    do {                                \
        int rc__ = (e);                 \
        if (rc__ != OK) return rc__;    \
    } while (0)

static inline int
is_null(Ctx *x)
{
    if (x->end - x->p >= 4 && memcmp(x->p, "null", 4) == 0) {
        x->p += 4;
        return 1;
    }
    return 0;
}

static int ox_any_value(Ctx *x, Ref *str, cp data);

/* A list of KeyValue, or null. With span set, what it says of the mapping's attributes. */
static int
ox_key_values(Ctx *x, cp data, Attrs *span)
{
    int rc, done;
    if (is_null(x)) return OK;
    if (x->p >= x->end || *x->p != '[') return GIVE_WAY;
    if ((rc = open_container(x, ']', &done)) != OK) return rc;
    while (!done) {
        cp key = NULL;
        Py_ssize_t key_len = 0;
        int has_value = 0;
        Ref str = {0, 0, 0, 0};
        unsigned seen = 0;
        OBJECT_MEMBERS(x, seen, {
            if (key_is(s, len, "key")) {
                int esc;
                bit = 1;
                if (x->p >= x->end || *x->p != '"') return GIVE_WAY;
                TRY(read_string(x, &key, &key_len, &esc));
                if (esc) return GIVE_WAY; /* compared as written */
            }
            else if (key_is(s, len, "value")) {
                bit = 2;
                has_value = 1;
                TRY(ox_any_value(x, &str, data));
            }
        });
        if (!key) return GIVE_WAY;
        if (span) {
            for (int a = 0; a < N_ATTRS; a++) {
                if (!key_is(key, key_len, attr_names[a])) continue;
                if (span->present & (1u << a)) return GIVE_WAY; /* given twice */
                span->present |= 1u << a;
                if (has_value && str.set) span->attrs[a] = str;
                else span->unusual |= 1u << a;
            }
            for (int c = 0; c < 2; c++) {
                if (key_is(key, key_len, convention_names[c])) span->convention = 1;
            }
        }
        if ((rc = next_member(x, ']', &done)) != OK) return rc;
    }
    return OK;
}

/* An AnyValue, checked as the reader checks it; *str the stringValue when there is one. An
 * intValue string must be one int() reads alike everywhere: -?[0-9]{1,18}. */
static int
ox_any_value(Ctx *x, Ref *str, cp data)
{
    unsigned seen = 0;
    str->set = 0;
    OBJECT_MEMBERS(x, seen, {
        if (key_is(s, len, "stringValue")) {
            cp t;
            Py_ssize_t tl;
            int esc;
            bit = 1;
            if (x->p >= x->end || *x->p != '"') return GIVE_WAY;
            TRY(read_string(x, &t, &tl, &esc));
            *str = ref_of(data, t, tl, esc);
        }
        else if (key_is(s, len, "boolValue")) {
            bit = 2;
            if (literal(x, "true", 4) != OK && literal(x, "false", 5) != OK) return GIVE_WAY;
        }
        else if (key_is(s, len, "intValue")) {
            bit = 4;
            if (x->p < x->end && *x->p == '"') {
                cp t;
                Py_ssize_t tl;
                int esc;
                TRY(read_string(x, &t, &tl, &esc));
                Py_ssize_t i = (tl > 0 && t[0] == '-') ? 1 : 0;
                if (esc || tl - i < 1 || tl - i > 18) return GIVE_WAY;
                for (; i < tl; i++) {
                    if (t[i] < '0' || t[i] > '9') return GIVE_WAY;
                }
            }
            else {
                int is_int;
                long long v;
                TRY(read_number(x, &is_int, &v));
                if (!is_int) return GIVE_WAY;
            }
        }
        else if (key_is(s, len, "doubleValue")) {
            int is_int;
            long long v;
            bit = 8;
            TRY(read_number(x, &is_int, &v));
        }
        else if (key_is(s, len, "bytesValue")) {
            cp t;
            Py_ssize_t tl;
            int esc;
            bit = 16;
            if (x->p >= x->end || *x->p != '"') return GIVE_WAY;
            TRY(read_string(x, &t, &tl, &esc));
        }
        else if (key_is(s, len, "arrayValue") || key_is(s, len, "kvlistValue")) {
            int array = s[0] == 'a';
            bit = array ? 32 : 64;
            if (!is_null(x)) {
                unsigned inner = 0;
                OBJECT_MEMBERS(x, inner, {
                    if (key_is(s, len, "values")) {
                        bit = 1;
                        if (!array) TRY(ox_key_values(x, data, NULL));
                        else if (!is_null(x)) {
                            int rc2, done2;
                            if (x->p >= x->end || *x->p != '[') return GIVE_WAY;
                            TRY(open_container(x, ']', &done2));
                            while (!done2) {
                                Ref ignored;
                                TRY(ox_any_value(x, &ignored, data));
                                if ((rc2 = next_member(x, ']', &done2)) != OK) return rc2;
                            }
                        }
                    }
                });
                bit = array ? 32 : 64;
            }
        }
    });
    return OK;
}

/* A span's status: its code and, when a string, its message */
static int
ox_status(Ctx *x, cp data, OSpan *sp)
{
    unsigned seen = 0;
    if (is_null(x)) return OK;
    OBJECT_MEMBERS(x, seen, {
        if (key_is(s, len, "code")) {
            bit = 1;
            if (x->p < x->end && *x->p == '"') {
                cp t;
                Py_ssize_t tl;
                int esc;
                TRY(read_string(x, &t, &tl, &esc));
                if (esc) return GIVE_WAY;
                if (key_is(t, tl, "STATUS_CODE_UNSET") || key_is(t, tl, "UNSET")) sp->code = 0;
                else if (key_is(t, tl, "STATUS_CODE_OK") || key_is(t, tl, "OK")) sp->code = 1;
                else if (key_is(t, tl, "STATUS_CODE_ERROR") || key_is(t, tl, "ERROR"))
                    sp->code = 2;
                else return GIVE_WAY;
            }
            else {
                int is_int;
                long long v;
                TRY(read_number(x, &is_int, &v));
                if (!is_int || v < 0 || v > 2) return GIVE_WAY;
                sp->code = (int)v;
            }
        }
        else if (key_is(s, len, "message")) {
            bit = 2;
            if (x->p < x->end && *x->p == '"') {
                cp t;
                Py_ssize_t tl;
                int esc;
                TRY(read_string(x, &t, &tl, &esc));
                sp->message = ref_of(data, t, tl, esc);
            }
            else TRY(read_value(x));
        }
    });
    return OK;
}

static int
ox_events(Ctx *x, OIndex *ix, OSpan *sp, cp data)
{
    int rc, done;
    if (is_null(x)) return OK;
    if (x->p >= x->end || *x->p != '[') return GIVE_WAY;
    if ((rc = open_container(x, ']', &done)) != OK) return rc;
    int32_t i = 0;
    sp->ev_first = (int32_t)ix->n_events;
    while (!done) {
        unsigned seen = 0;
        long long t = 0;
        Attrs at;
        memset(&at, 0, sizeof at);
        if (i >= MAX_SPAN_EVENTS) sp->flags |= SF_EVENTS;
        OBJECT_MEMBERS(x, seen, {
            if (key_is(s, len, "timeUnixNano")) {
                bit = 1;
                TRY(read_nanos(x, &t));
            }
            else if (key_is(s, len, "name")) {
                bit = 2;
                TRY(read_value(x));
            }
            else if (key_is(s, len, "attributes")) {
                bit = 4;
                TRY(ox_key_values(x, data, &at));
            }
            else if (key_is(s, len, "droppedAttributesCount")) {
                bit = 8;
                TRY(read_value(x));
            }
        });
        if (at.present & (1u << A_CID)) {
            if (ix->n_events >= INT32_MAX - 1
                || (size_t)(ix->n_spans + 1) * sizeof(OSpan)
                           + (size_t)(ix->n_events + 1) * 2 * sizeof(OEvent)
                       > INDEX_SHARE(ix->buf.len))
                return GIVE_WAY;
            if (grow((void **)&ix->events, &ix->cap_events, ix->n_events + 1, sizeof(OEvent))
                != OK)
                return FAIL;
            OEvent *ev = &ix->events[ix->n_events++];
            ev->time = t;
            ev->i = i;
            ev->unusual = at.unusual & CHECKPOINT_BITS;
            ev->cid = at.attrs[A_CID];
            ev->confirmed = at.attrs[A_CONFIRMED];
            ev->decision = at.attrs[A_DECISION];
            if (!(at.present & (1u << A_CONFIRMED))) ev->confirmed.set = 0;
            if (!(at.present & (1u << A_DECISION))) ev->decision.set = 0;
            sp->ev_count++;
        }
        i++;
        if ((rc = next_member(x, ']', &done)) != OK) return rc;
    }
    return OK;
}

static uint64_t
id_hash(const unsigned char id[16])
{
    uint64_t a, b;
    memcpy(&a, id, 8);
    memcpy(&b, id + 8, 8);
    uint64_t h = a * 0x9E3779B97F4A7C15ULL ^ (b + 0x632BE59BD9B4E019ULL);
    return h ^ (h >> 29);
}

/* The number of the trace with this id, added when new */
static int
trace_of(OIndex *ix, const unsigned char id[16], int32_t *out)
{
    if (ix->n_traces * 2 >= ix->table_cap) {
        Py_ssize_t cap = ix->table_cap ? ix->table_cap * 2 : 1024;
        int32_t *t = PyMem_RawMalloc((size_t)cap * sizeof(int32_t));
        if (!t) {
            no_memory();
            return FAIL;
        }
        for (Py_ssize_t i = 0; i < cap; i++) t[i] = -1;
        for (Py_ssize_t k = 0; k < ix->n_traces; k++) {
            Py_ssize_t h = (Py_ssize_t)(id_hash(ix->traces[k].id) & (uint64_t)(cap - 1));
            while (t[h] >= 0) h = (h + 1) & (cap - 1);
            t[h] = (int32_t)k;
        }
        PyMem_RawFree(ix->table);
        ix->table = t;
        ix->table_cap = cap;
    }
    Py_ssize_t h = (Py_ssize_t)(id_hash(id) & (uint64_t)(ix->table_cap - 1));
    while (ix->table[h] >= 0) {
        if (memcmp(ix->traces[ix->table[h]].id, id, 16) == 0) {
            *out = ix->table[h];
            return OK;
        }
        h = (h + 1) & (ix->table_cap - 1);
    }
    if (ix->n_traces >= INT32_MAX - 1) return GIVE_WAY;
    if (grow((void **)&ix->traces, &ix->cap_traces, ix->n_traces + 1, sizeof(OTrace)) != OK)
        return FAIL;
    OTrace *t = &ix->traces[ix->n_traces];
    memcpy(t->id, id, 16);
    t->first = t->last = -1;
    t->last_line = -1;
    t->n_conv = 0;
    ix->table[h] = (int32_t)ix->n_traces;
    *out = (int32_t)ix->n_traces++;
    return OK;
}

static int
ox_span(Ctx *x, OIndex *ix, cp data, int32_t line_k)
{
    if (ix->n_spans >= INT32_MAX - 1) return GIVE_WAY;
    if (ix->n_spans == ix->n_blocks * SPAN_BLOCK) {
        OSpan **nb = PyMem_RawRealloc(ix->blocks, (size_t)(ix->n_blocks + 1) * sizeof(OSpan *));
        if (!nb) {
            no_memory();
            return FAIL;
        }
        ix->blocks = nb;
        if (!(nb[ix->n_blocks] = PyMem_RawMalloc(SPAN_BLOCK * sizeof(OSpan)))) {
            no_memory();
            return FAIL;
        }
        ix->n_blocks++;
    }
    if ((size_t)(ix->n_spans + 1) * sizeof(OSpan) + (size_t)ix->cap_events * sizeof(OEvent)
        > INDEX_SHARE(ix->buf.len))
        return GIVE_WAY;
    OSpan *sp = SPAN(ix, ix->n_spans);
    memset(sp, 0, sizeof *sp);
    sp->end = -1;
    unsigned char tid[16];
    int has_tid = 0, has_sid = 0, has_start = 0;
    unsigned seen = 0;
    OBJECT_MEMBERS(x, seen, {
        cp t;
        Py_ssize_t tl;
        int esc;
        switch (len) {
        case 4:
            if (key_is(s, len, "name")) {
                bit = 1u << 0;
                if (!is_null(x)) {
                    if (x->p >= x->end || *x->p != '"') return GIVE_WAY;
                    TRY(read_string(x, &t, &tl, &esc));
                    sp->name = ref_of(data, t, tl, esc);
                }
            }
            else if (key_is(s, len, "kind")) {
                bit = 1u << 1;
                TRY(read_value(x));
            }
            break;
        case 5:
            if (key_is(s, len, "flags")) {
                bit = 1u << 2;
                TRY(read_value(x));
            }
            else if (key_is(s, len, "links")) {
                bit = 1u << 3;
                TRY(read_value(x));
            }
            break;
        case 6:
            if (key_is(s, len, "spanId")) {
                bit = 1u << 4;
                if (x->p >= x->end || *x->p != '"') return GIVE_WAY;
                TRY(read_string(x, &t, &tl, &esc));
                if (esc) return GIVE_WAY;
                TRY(lower_hex(t, tl, 16, &sp->id));
                has_sid = 1;
            }
            else if (key_is(s, len, "events")) {
                bit = 1u << 5;
                TRY(ox_events(x, ix, sp, data));
            }
            else if (key_is(s, len, "status")) {
                bit = 1u << 6;
                TRY(ox_status(x, data, sp));
            }
            break;
        case 7:
            if (key_is(s, len, "traceId")) {
                uint64_t hi, lo;
                bit = 1u << 7;
                if (x->p >= x->end || *x->p != '"') return GIVE_WAY;
                TRY(read_string(x, &t, &tl, &esc));
                if (esc || tl != 32) return GIVE_WAY;
                TRY(lower_hex(t, 16, 16, &hi));
                TRY(lower_hex(t + 16, 16, 16, &lo));
                memcpy(tid, &hi, 8);
                memcpy(tid + 8, &lo, 8);
                has_tid = 1;
            }
            break;
        case 10:
            if (key_is(s, len, "traceState")) {
                bit = 1u << 8;
                TRY(read_value(x));
            }
            else if (key_is(s, len, "attributes")) {
                Attrs at;
                bit = 1u << 9;
                memset(&at, 0, sizeof at);
                TRY(ox_key_values(x, data, &at));
                sp->present = at.present;
                memcpy(sp->attrs, at.attrs, sizeof at.attrs);
                if (at.unusual) sp->flags |= SF_UNUSUAL;
                if (at.convention) sp->flags |= SF_CONVENTION;
            }
            break;
        case 12:
            if (key_is(s, len, "parentSpanId")) {
                bit = 1u << 10;
                if (!is_null(x)) {
                    if (x->p >= x->end || *x->p != '"') return GIVE_WAY;
                    TRY(read_string(x, &t, &tl, &esc));
                    if (esc) return GIVE_WAY;
                    if (tl) {
                        TRY(lower_hex(t, tl, 16, &sp->parent));
                        sp->has_parent = 1;
                    }
                }
            }
            break;
        case 15:
            if (key_is(s, len, "endTimeUnixNano")) {
                bit = 1u << 11;
                if (!is_null(x)) TRY(read_nanos(x, &sp->end));
            }
            break;
        case 17:
            if (key_is(s, len, "startTimeUnixNano")) {
                bit = 1u << 12;
                TRY(read_nanos(x, &sp->start));
                has_start = 1;
            }
            else if (key_is(s, len, "droppedLinksCount")) {
                bit = 1u << 13;
                TRY(read_value(x));
            }
            break;
        case 18:
            if (key_is(s, len, "droppedEventsCount")) {
                bit = 1u << 14;
                TRY(read_value(x));
            }
            break;
        case 22:
            if (key_is(s, len, "droppedAttributesCount")) {
                bit = 1u << 15;
                TRY(read_value(x));
            }
            break;
        default:
            break;
        }
    });
    if (!has_tid || !has_sid || !has_start) return GIVE_WAY;
    int32_t k;
    TRY(trace_of(ix, tid, &k));
    OTrace *tr = &ix->traces[k];
    sp->trace = k;
    sp->next = -1;
    sp->line = line_k;
    Py_ssize_t me = ix->n_spans++;
    if (tr->last >= 0) SPAN(ix, tr->last)->next = (int32_t)me;
    else tr->first = (int32_t)me;
    tr->last = (int32_t)me;
    if (tr->last_line != line_k) {
        tr->last_line = line_k;
        ix->lines[line_k].traces++;
    }
    /* the conversation it names, for the grouping (a non-empty string) */
    if (sp->attrs[A_CONV].set && sp->attrs[A_CONV].len > 0 && tr->n_conv < 2) {
        Ref c = sp->attrs[A_CONV];
        if (c.esc) return GIVE_WAY; /* compared as written */
        cp all = (cp)ix->buf.buf;
        int known = 0;
        for (int i = 0; i < tr->n_conv; i++) {
            if (tr->conv_len[i] == c.len
                && memcmp(all + tr->conv_off[i], data + c.off, (size_t)c.len) == 0)
                known = 1;
        }
        if (!known) {
            tr->conv_off[tr->n_conv] = (data - all) + c.off;
            tr->conv_len[tr->n_conv++] = c.len;
        }
    }
    return OK;
}

static int
ox_spans_list(Ctx *x, OIndex *ix, cp data, int32_t line_k)
{
    int rc, done;
    if (x->p >= x->end || *x->p != '[') return GIVE_WAY;
    if ((rc = open_container(x, ']', &done)) != OK) return rc;
    while (!done) {
        if ((rc = ox_span(x, ix, data, line_k)) != OK) return rc;
        if ((rc = next_member(x, ']', &done)) != OK) return rc;
    }
    return OK;
}

typedef int (*OxList)(Ctx *x, OIndex *ix, cp data, int32_t line_k);

/* A list of OTLP wrappers, each {head: ..., list_key: [...], "schemaUrl": ...}: the
 * resourceSpans entries ({resource, scopeSpans}) and the scopeSpans entries ({scope,
 * spans}) alike, inner() reading each wrapper's list. */
static int
ox_wrappers(Ctx *x, OIndex *ix, cp data, int32_t line_k, const char *head,
            const char *list_key, OxList inner)
{
    int rc, done;
    if (x->p >= x->end || *x->p != '[') return GIVE_WAY;
    if ((rc = open_container(x, ']', &done)) != OK) return rc;
    while (!done) {
        unsigned seen = 0;
        OBJECT_MEMBERS(x, seen, {
            if (key_is(s, len, head)) {
                bit = 1;
                TRY(read_value(x));
            }
            else if (key_is(s, len, list_key)) {
                bit = 2;
                TRY(inner(x, ix, data, line_k));
            }
            else if (key_is(s, len, "schemaUrl")) {
                bit = 4;
                TRY(read_value(x));
            }
            /* instrumentationLibrarySpans and anything else: Python reads it */
        });
        if ((rc = next_member(x, ']', &done)) != OK) return rc;
    }
    return OK;
}

static int
ox_scope_spans(Ctx *x, OIndex *ix, cp data, int32_t line_k)
{
    if (is_null(x)) return OK;
    return ox_wrappers(x, ix, data, line_k, "scope", "spans", ox_spans_list);
}

static int
ox_document(Ctx *x, OIndex *ix, cp data, int32_t line_k)
{
    unsigned seen = 0;
    OBJECT_MEMBERS(x, seen, {
        if (key_is(s, len, "resourceSpans")) {
            bit = 1;
            TRY(ox_wrappers(x, ix, data, line_k, "resource", "scopeSpans", ox_scope_spans));
        }
    });
    if (!seen) return GIVE_WAY;
    return OK;
}

static int
otel_scan(OIndex *ix)
{
    cp data = (cp)ix->buf.buf;
    Py_ssize_t size = ix->buf.len;
    Ctx x = {0};
    int rc = OK;
    cp p = data, stop = data + size;
    Py_ssize_t n = 0;
    while (p < stop && rc == OK) {
        cp nl = line_at(&x, p, stop);
        n++;
        if (x.p < x.end) {
            if (ix->n_lines >= INT32_MAX - 1) {
                rc = GIVE_WAY;
                break;
            }
            if (grow((void **)&ix->lines, &ix->cap_lines, ix->n_lines + 1, sizeof(OLine)) != OK) {
                rc = FAIL;
                break;
            }
            OLine *ln = &ix->lines[ix->n_lines];
            ln->n = n;
            ln->start = p - data;
            ln->end = nl - data;
            ln->first = ix->n_spans;
            ln->traces = 0;
            ix->n_lines++;
            if (nl - p >= MAX_LINE) rc = GIVE_WAY;
            else rc = ox_document(&x, ix, p, (int32_t)(ix->n_lines - 1));
            if (rc == OK) rc = line_rest(&x);
        }
        p = nl + 1;
    }
    PyMem_RawFree(x.kptr);
    PyMem_RawFree(x.klen);
    if (rc == OK && ix->n_spans == 0) rc = GIVE_WAY;
    return rc;
}

/* The text of a JSON string whose raw body is [s, s + len), its escapes read (read_string
 * has checked them); both readers build their strings with it. */
static PyObject *
json_text(cp s, Py_ssize_t len, int esc)
{
    if (!esc) return PyUnicode_DecodeUTF8((const char *)s, len, "strict");
    unsigned char *buf = PyMem_RawMalloc((size_t)len + 1);
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
    PyMem_RawFree(buf);
    return out;
}

/* A string of data as str, its escapes read */
static PyObject *
ref_str(cp data, Ref r)
{
    return json_text(data + r.off, r.len, r.esc);
}

/* -- JSON values built as orjson builds them: the values a transcript's lines hold, and the
 * JSON held in a string (a tool call's arguments and result in a span) */

/* push_key for an object whose keys so far are summed up in *seen (a bit per key, from its
 * length and its first and last bytes): a key whose bit is new equals none of them, and is
 * remembered without comparing. */
static int
push_key_seen(Ctx *x, Py_ssize_t kbase, uint64_t *seen, cp s, Py_ssize_t len)
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

/* Short strings met again and again (keys, block and entry types), one object each: a
 * direct-mapped cache, as orjson and msgspec keep one for keys. */
#define SHORT_TEXTS 1024
#define SHORT_TEXT_LEN 32
static PyObject *short_texts[SHORT_TEXTS];

static PyObject *
short_text(cp s, Py_ssize_t len)
{
    if (len > SHORT_TEXT_LEN) return PyUnicode_DecodeUTF8((const char *)s, len, "strict");
    uint32_t h = 2166136261u;
    for (Py_ssize_t i = 0; i < len; i++) h = (h ^ s[i]) * 16777619u;
    h = (h ^ (uint32_t)len) % SHORT_TEXTS;
    PyObject *o = short_texts[h];
    if (o && PyUnicode_GET_LENGTH(o) == len && memcmp(PyUnicode_DATA(o), s, (size_t)len) == 0)
        return Py_NewRef(o);
    o = PyUnicode_DecodeUTF8((const char *)s, len, "strict");
    if (!o) return NULL;
    if (PyUnicode_IS_COMPACT_ASCII(o)) {
        Py_XSETREF(short_texts[h], Py_NewRef(o));
    }
    return o;
}

/* A number at x->p as orjson reads it: an int, or a float (numbers read_number accepts
 * here have at most 18 digits before and after the point and an exponent of two); with
 * floats 0, a float gives way. */
static int
json_number(Ctx *x, int floats, PyObject **out)
{
    cp s = x->p;
    int is_int, rc;
    long long v;
    if ((rc = read_number(x, &is_int, &v)) != OK) return rc;
    if (is_int) {
        *out = PyLong_FromLongLong(v);
        return *out ? OK : FAIL;
    }
    if (!floats) return GIVE_WAY;
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

/* Any JSON value at x->p, built as orjson builds it (keys checked as read_object does:
 * one given twice, or escaped, gives way; floats as json_number has them). */
static int
json_value(Ctx *x, int floats, PyObject **out)
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
        *out = json_text(s, len, esc);
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
                || (rc = push_key_seen(x, kbase, &seen, s, len)) != OK
                || (rc = json_value(x, floats, &v)) != OK) {
                Py_DECREF(d);
                return rc;
            }
            k = short_text(s, len);
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
            if ((rc = json_value(x, floats, &v)) != OK) {
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
        return json_number(x, floats, out);
    }
}

/* The JSON a string attribute holds, as orjson.loads reads it with no key repeated; gives
 * way on anything else (not JSON, blank, a float, a repeated or escaped key). */
static int
embedded(cp data, Ref r, PyObject **out)
{
    PyObject *text = NULL;
    cp s = data + r.off;
    Py_ssize_t len = r.len;
    if (r.esc) {
        text = ref_str(data, r);
        if (!text) return FAIL;
        s = (cp)PyUnicode_AsUTF8AndSize(text, &len);
        if (!s) {
            Py_DECREF(text);
            return FAIL;
        }
    }
    Ctx x = {0};
    x.p = s;
    x.end = s + len;
    skip_ws(&x);
    int rc = json_value(&x, 0, out);
    if (rc == OK) {
        skip_ws(&x);
        if (x.p != x.end) {
            Py_CLEAR(*out);
            rc = GIVE_WAY;
        }
    }
    Py_XDECREF(text);
    PyMem_RawFree(x.kptr);
    PyMem_RawFree(x.klen);
    return rc;
}

/* "YYYY-MM-DDTHH:MM:SS.ffffffZ" of nanoseconds since the epoch, as otel._iso writes it */
static PyObject *
iso_of(long long nanos)
{
    long long secs = nanos / 1000000000LL, rest = nanos % 1000000000LL;
    long long days = secs / 86400, clock = secs % 86400;
    /* civil from days (H. Hinnant) */
    long long z = days + 719468;
    long long era = z / 146097;
    long long doe = z - era * 146097;
    long long yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    long long y = yoe + era * 400;
    long long doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    long long mp = (5 * doy + 2) / 153;
    long long d = doy - (153 * mp + 2) / 5 + 1;
    long long m = mp < 10 ? mp + 3 : mp - 9;
    if (m <= 2) y++;
    char t[40];
    int n = snprintf(t, sizeof t, "%04lld-%02lld-%02lldT%02lld:%02lld:%02lld.%06lldZ", y, m, d,
                     clock / 3600, clock / 60 % 60, clock % 60, rest / 1000);
    return PyUnicode_FromStringAndSize(t, n);
}

static PyObject *S_seq, *S_ts, *S_agent, *S_event, *S_action_type, *S_args, *S_call_id,
    *S_result, *S_error, *S_span_id, *S_checkpoint_id, *S_confirmed_by, *S_decision,
    *S_from_agent, *S_to_agent, *S_payload, *S_task_success, *S_arguments, *S_action,
    *S_checkpoint, *S_handoff, *S_final, *S_error_text;

static int
intern_names(void)
{
#define I(var, text) if (!(var = PyUnicode_InternFromString(text))) return FAIL
    I(S_seq, "seq"); I(S_ts, "ts"); I(S_agent, "agent"); I(S_event, "event");
    I(S_action_type, "action_type"); I(S_args, "args"); I(S_call_id, "call_id");
    I(S_result, "result"); I(S_error, "error"); I(S_span_id, "span_id");
    I(S_checkpoint_id, "checkpoint_id"); I(S_confirmed_by, "confirmed_by");
    I(S_decision, "decision"); I(S_from_agent, "from_agent"); I(S_to_agent, "to_agent");
    I(S_payload, "payload"); I(S_task_success, "task_success"); I(S_arguments, "arguments");
    I(S_action, "action"); I(S_checkpoint, "checkpoint"); I(S_handoff, "handoff");
    I(S_final, "final"); I(S_error_text, "error");
#undef I
    return OK;
}

enum { SK_ACTION, SK_HANDOFF, SK_CHECKPOINT };

typedef struct {
    long long when, order;
    int kind;
    int32_t event;  /* a checkpoint: the span event naming it (in the index), -1: the span */
    int32_t span;   /* its position in the run */
    int32_t agent;  /* the position of the span naming the agent, -1 */
    int32_t outer;  /* a handoff: the tool span; its from agent's span */
    int32_t from;
} Staged;

static int
staged_cmp(const void *a, const void *b)
{
    const Staged *x = a, *y = b;
    if (x->when != y->when) return x->when < y->when ? -1 : 1;
    return (x->order > y->order) - (x->order < y->order);
}

typedef struct {
    OIndex *ix;
    cp data;
    int32_t *run;      /* index of each span of the run */
    Py_ssize_t n;
    int *kind;         /* 0 none, 1 tool, 2 agent */
    int32_t *parent;   /* the position of each span's parent in the run, -1 */
    int32_t *slots;    /* by span id */
    Py_ssize_t n_slots;
} Run;

static int32_t
run_find(Run *r, uint64_t id)
{
    Py_ssize_t mask = r->n_slots - 1;
    Py_ssize_t h = (Py_ssize_t)((id * 0x9E3779B97F4A7C15ULL) >> 20) & mask;
    while (r->slots[h] >= 0) {
        if (SPAN(r->ix, r->run[r->slots[h]])->id == id) return r->slots[h];
        h = (h + 1) & mask;
    }
    return -1;
}

static inline OSpan *
run_span(Run *r, Py_ssize_t i)
{
    return SPAN(r->ix, r->run[i]);
}

/* agent_of: the nearest span up the parents (itself first) naming an agent, -1 */
static int32_t
run_agent(Run *r, int32_t i)
{
    Py_ssize_t seen = 0;
    while (i >= 0 && seen < r->n) {
        OSpan *sp = run_span(r, i);
        if (sp->attrs[A_AGENT].set && sp->attrs[A_AGENT].len > 0) return i;
        i = sp->has_parent ? r->parent[i] : -1;
        seen++;
    }
    return -1;
}

/* Where the strings of a span are */
#define BASE(r, sp) ((r)->data + (r)->ix->lines[(sp)->line].start)

/* Two strings, each of its own line, the same as written */
static int
refs_equal(cp a_base, Ref a, cp b_base, Ref b)
{
    return a.len == b.len && memcmp(a_base + a.off, b_base + b.off, (size_t)a.len) == 0;
}

/* A span or parent id as lower-case hex */
static PyObject *
id_str(uint64_t id)
{
    static const char digits[] = "0123456789abcdef";
    char hex[16];
    for (int i = 0; i < 16; i++) hex[15 - i] = digits[(id >> (4 * i)) & 15];
    return PyUnicode_FromStringAndSize(hex, 16);
}

static int
ref_is(cp data, Ref r, const char *word)
{
    return r.set && !r.esc && key_is(data + r.off, r.len, word);
}

static int
set_str(PyObject *d, PyObject *key, cp data, Ref r)
{
    PyObject *v = ref_str(data, r);
    if (!v) return FAIL;
    int bad = PyDict_SetItem(d, key, v);
    Py_DECREF(v);
    return bad ? FAIL : OK;
}

static int
set_new(PyObject *d, PyObject *key, PyObject *v)
{
    if (!v) return FAIL;
    int bad = PyDict_SetItem(d, key, v);
    Py_DECREF(v);
    return bad ? FAIL : OK;
}

/* The fields of the action a tool span records (after seq, ts, agent and event) */
static int
action_fields(Run *r, int32_t i, int keep_result, PyObject *d)
{
    OSpan *sp = run_span(r, i);
    cp data = BASE(r, sp);
    PyObject *args = NULL;
    int rc;
    if (sp->attrs[A_ARGS].set) {
        if ((rc = embedded(data, sp->attrs[A_ARGS], &args)) != OK) return rc;
    }
    else if (!(args = PyDict_New())) return FAIL;
    if (set_str(d, S_action_type, data, sp->attrs[A_TOOL]) != OK || set_new(d, S_args, args) != OK)
        return FAIL;
    if (sp->attrs[A_CALL_ID].set && set_str(d, S_call_id, data, sp->attrs[A_CALL_ID]) != OK)
        return FAIL;
    if (keep_result && sp->attrs[A_RESULT].set) {
        PyObject *result;
        if ((rc = embedded(data, sp->attrs[A_RESULT], &result)) != OK) return rc;
        if (set_new(d, S_result, result) != OK) return FAIL;
    }
    if (sp->code == 2) {
        if (sp->message.set && sp->message.len > 0) {
            if (set_str(d, S_error, data, sp->message) != OK) return FAIL;
        }
        else if (PyDict_SetItem(d, S_error, S_error_text)) return FAIL;
    }
    return set_new(d, S_span_id, id_str(sp->id));
}

/* Whether a checkpoint's decision approves it: absent, or one of the words of
 * otel._APPROVED in any case (ASCII; other text gives way) */
static int
approves(cp data, Ref dec, int *approved)
{
    char low[16];
    *approved = 1;
    if (!dec.set) return OK;
    if (dec.esc) return GIVE_WAY;
    *approved = 0;
    for (uint32_t k = 0; k < dec.len; k++) {
        if (data[dec.off + k] >= 0x80) return GIVE_WAY; /* lower() beyond ASCII: Python's */
    }
    if (dec.len >= sizeof low) return OK;
    for (uint32_t k = 0; k < dec.len; k++) {
        unsigned char c = data[dec.off + k];
        low[k] = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
    }
    low[dec.len] = 0;
    *approved = !strcmp(low, "approved") || !strcmp(low, "approve") || !strcmp(low, "accepted")
                || !strcmp(low, "confirmed");
    return OK;
}

static int
map_run(Run *r, int keep_result, PyObject **out)
{
    cp data;
    Py_ssize_t n = r->n;
    int rc = OK;
    Staged *staged = NULL;
    Py_ssize_t n_staged = 0;
    PyObject *events = NULL;
    PyObject **agent_str = NULL;
    *out = NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        OSpan *sp = run_span(r, i);
        data = BASE(r, sp);
        if (sp->flags) return GIVE_WAY;
        /* strings the mapping compares: as written */
        if (sp->attrs[A_OP].esc || sp->attrs[A_AGENT].esc || sp->attrs[A_DECISION].esc)
            return GIVE_WAY;
        int32_t slot_at = -1;
        Py_ssize_t mask = r->n_slots - 1;
        Py_ssize_t h = (Py_ssize_t)((sp->id * 0x9E3779B97F4A7C15ULL) >> 20) & mask;
        while (r->slots[h] >= 0) {
            if (run_span(r, r->slots[h])->id == sp->id) return GIVE_WAY; /* an id twice */
            h = (h + 1) & mask;
        }
        slot_at = (int32_t)i;
        r->slots[h] = slot_at;
        Ref op = sp->attrs[A_OP];
        r->kind[i] = ref_is(data, op, "execute_tool") ? 1 : ref_is(data, op, "invoke_agent") ? 2 : 0;
        if (!r->kind[i]) {
            /* a span recording a call without the operation name: Python names it */
            if (sp->present & ((1u << A_TOOL) | (1u << A_CALL_ID) | (1u << A_ARGS)
                               | (1u << A_RESULT)))
                return GIVE_WAY;
            Ref nm = sp->name;
            if (nm.set && nm.esc) return GIVE_WAY;
            if (nm.set && (key_is(data + nm.off, nm.len, "execute_tool")
                           || (nm.len >= 13 && memcmp(data + nm.off, "execute_tool ", 13) == 0)))
                return GIVE_WAY;
        }
        else if (r->kind[i] == 1 && !(sp->attrs[A_TOOL].set && sp->attrs[A_TOOL].len > 0))
            return GIVE_WAY;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        OSpan *sp = run_span(r, i);
        r->parent[i] = sp->has_parent ? run_find(r, sp->parent) : -1;
    }
    Py_ssize_t marks = 2 * n + 1;
    for (Py_ssize_t i = 0; i < n; i++) marks += run_span(r, i)->ev_count;
    staged = PyMem_RawMalloc((size_t)marks * sizeof(Staged));
    agent_str = PyMem_RawCalloc((size_t)n + 1, sizeof(PyObject *));
    if (!staged || !agent_str) {
        no_memory();
        rc = FAIL;
        goto done;
    }
    /* handed: (tool span, to agent) pairs met, a handoff each */
    for (Py_ssize_t i = 0; i < n; i++) {
        OSpan *sp = run_span(r, i);
        data = BASE(r, sp);
        long long tie = (long long)r->run[i] * 1000;
        Staged *st = &staged[n_staged];
        st->span = (int32_t)i;
        st->when = sp->start;
        st->order = tie;
        if (r->kind[i] == 1) {
            st->kind = SK_ACTION;
            st->agent = run_agent(r, (int32_t)i);
            n_staged++;
        }
        else if (r->kind[i] == 2 && sp->attrs[A_AGENT].set && sp->attrs[A_AGENT].len > 0) {
            /* the nearest enclosing GenAI span */
            int32_t cur = sp->has_parent ? r->parent[i] : -1;
            Py_ssize_t seen = 0;
            while (cur >= 0 && seen < n && !r->kind[cur]) {
                OSpan *cs = run_span(r, cur);
                cur = cs->has_parent ? r->parent[cur] : -1;
                seen++;
            }
            if (cur >= 0 && seen < n && r->kind[cur] == 1) {
                int32_t from = run_agent(r, cur);
                Ref to = sp->attrs[A_AGENT];
                OSpan *fs = from >= 0 ? run_span(r, from) : NULL;
                if (fs && !refs_equal(BASE(r, fs), fs->attrs[A_AGENT], data, to)) {
                    int handed = 0;
                    for (Py_ssize_t k = 0; k < n_staged; k++) {
                        Staged *o = &staged[k];
                        OSpan *os = run_span(r, o->span);
                        if (o->kind == SK_HANDOFF && o->outer == cur
                            && refs_equal(BASE(r, os), os->attrs[A_AGENT], data, to))
                            handed = 1;
                    }
                    if (!handed) {
                        st->kind = SK_HANDOFF;
                        st->agent = from;
                        st->outer = cur;
                        st->from = from;
                        n_staged++;
                    }
                }
            }
        }
        if (sp->present & (1u << A_CID)) {
            Ref cid = sp->attrs[A_CID];
            int approved;
            if (!cid.set || cid.len == 0) {
                rc = GIVE_WAY; /* Python names the span */
                goto done;
            }
            if ((rc = approves(data, sp->attrs[A_DECISION], &approved)) != OK) goto done;
            if (approved) {
                Staged *c = &staged[n_staged++];
                c->kind = SK_CHECKPOINT;
                c->event = -1;
                c->span = (int32_t)i;
                c->when = sp->start;
                c->order = tie + 1;
                c->agent = run_agent(r, (int32_t)i);
            }
        }
        for (int32_t q = 0; q < sp->ev_count; q++) {
            OEvent *ev = &r->ix->events[sp->ev_first + q];
            int approved;
            if (ev->unusual || !ev->cid.set || ev->cid.len == 0) {
                rc = GIVE_WAY;
                goto done;
            }
            if ((rc = approves(data, ev->decision, &approved)) != OK) goto done;
            if (approved) {
                Staged *c = &staged[n_staged++];
                c->kind = SK_CHECKPOINT;
                c->event = sp->ev_first + q;
                c->span = (int32_t)i;
                c->when = ev->time;
                c->order = tie + 2 + ev->i;
                c->agent = run_agent(r, (int32_t)i);
            }
        }
    }
    qsort(staged, (size_t)n_staged, sizeof(Staged), staged_cmp);
    events = PyTuple_New(n_staged + 1);
    if (!events) {
        rc = FAIL;
        goto done;
    }
    PyTypeObject *etype = (PyTypeObject *)r->ix->event_type;
    for (Py_ssize_t e = 0; e <= n_staged; e++) {
        Staged *st = e < n_staged ? &staged[e] : NULL;
        PyObject *agent = Py_None, *kind, *line = Py_None, *flag = NULL;
        int32_t who;
        long long when;
        if (st) {
            who = st->agent;
            when = st->when;
            kind = st->kind == SK_ACTION ? S_action : st->kind == SK_HANDOFF ? S_handoff
                                                                            : S_checkpoint;
        }
        else {
            /* the final event: the end of the last span, the first root with an agent */
            int ok = 1;
            when = -1;
            who = -1;
            for (Py_ssize_t i = 0; i < n; i++) {
                OSpan *sp = run_span(r, i);
                long long t = sp->end > 0 ? sp->end : sp->start;
                if (t > when) when = t;
                if (!sp->has_parent || r->parent[i] < 0) {
                    ok = ok && sp->code != 2;
                    if (who < 0) who = run_agent(r, (int32_t)i);
                }
            }
            kind = S_final;
            flag = ok ? Py_True : Py_False;
        }
        if (who >= 0) {
            if (!agent_str[who])
                agent_str[who] = ref_str(BASE(r, run_span(r, who)), run_span(r, who)->attrs[A_AGENT]);
            if (!agent_str[who]) {
                rc = FAIL;
                goto done;
            }
            agent = agent_str[who];
        }
        OSpan *sp = st ? run_span(r, st->span) : NULL;
        data = sp ? BASE(r, sp) : r->data;
        PyObject *ts = iso_of(when), *seq = PyLong_FromSsize_t(e + 1), *d = PyDict_New();
        if (sp) line = PyLong_FromSsize_t(r->ix->lines[sp->line].n);
        else Py_INCREF(line);
        int bad = !ts || !seq || !line || !d || PyDict_SetItem(d, S_seq, seq)
                  || PyDict_SetItem(d, S_ts, ts)
                  || (agent != Py_None && PyDict_SetItem(d, S_agent, agent))
                  || PyDict_SetItem(d, S_event, kind);
        if (bad) rc = FAIL;
        else if (!st) {
            if (PyDict_SetItem(d, S_task_success, flag)) rc = FAIL;
        }
        else if (st->kind == SK_ACTION) {
            rc = action_fields(r, st->span, keep_result, d);
        }
        else if (st->kind == SK_HANDOFF) {
            PyObject *args = NULL, *payload = NULL;
            OSpan *tool = run_span(r, st->outer);
            if (tool->attrs[A_ARGS].set)
                rc = embedded(BASE(r, tool), tool->attrs[A_ARGS], &args);
            else if (!(args = PyDict_New())) rc = FAIL;
            if (rc == OK) {
                if (PyDict_Check(args)) payload = Py_NewRef(args);
                else if (!(payload = PyDict_New()) || PyDict_SetItem(payload, S_arguments, args))
                    rc = FAIL;
            }
            Py_XDECREF(args);
            if (rc == OK
                && (PyDict_SetItem(d, S_from_agent, agent) != 0
                    || set_str(d, S_to_agent, data, sp->attrs[A_AGENT]) != OK
                    || PyDict_SetItem(d, S_payload, payload) != 0
                    || set_new(d, S_span_id, id_str(sp->id)) != OK))
                rc = FAIL;
            Py_XDECREF(payload);
        }
        else {
            OEvent *ev = st->event >= 0 ? &r->ix->events[st->event] : NULL;
            Ref cid = ev ? ev->cid : sp->attrs[A_CID];
            Ref who_ref = ev ? ev->confirmed : sp->attrs[A_CONFIRMED];
            Ref dec = ev ? ev->decision : sp->attrs[A_DECISION];
            if (set_str(d, S_checkpoint_id, data, cid) != OK
                || set_new(d, S_span_id, id_str(sp->id)) != OK
                || (who_ref.set && set_str(d, S_confirmed_by, data, who_ref) != OK)
                || (dec.set && set_str(d, S_decision, data, dec) != OK))
                rc = FAIL;
        }
        PyObject *ev = rc == OK ? etype->tp_alloc(etype, 6) : NULL;
        if (!ev) {
            Py_XDECREF(ts);
            Py_XDECREF(seq);
            Py_XDECREF(line);
            Py_XDECREF(d);
            if (rc == OK) rc = FAIL;
            goto done;
        }
        PyTuple_SET_ITEM(ev, 0, seq);
        PyTuple_SET_ITEM(ev, 1, Py_NewRef(kind));
        PyTuple_SET_ITEM(ev, 2, Py_NewRef(agent));
        PyTuple_SET_ITEM(ev, 3, ts);
        PyTuple_SET_ITEM(ev, 4, d);
        PyTuple_SET_ITEM(ev, 5, line);
        PyTuple_SET_ITEM(events, e, ev);
    }
    *out = events;
    events = NULL;
done:
    Py_XDECREF(events);
    if (agent_str) {
        for (Py_ssize_t i = 0; i < n; i++) Py_XDECREF(agent_str[i]);
    }
    PyMem_RawFree(agent_str);
    PyMem_RawFree(staged);
    return rc;
}

PyDoc_STRVAR(otel_index_doc,
"otel_index(data, event_type) -> (index, traces) | None\n\n"
"Read a file of OTLP/JSON lines (one resourceSpans document per line) once, or give way\n"
"(None). index holds, in C, what the mapping reads of every span (otel_map, otel_lines);\n"
"traces lists each trace in the order it first appears as (trace id, conversations): the\n"
"non-empty gen_ai.conversation.id strings its spans name, none, one, or the first two\n"
"when they name more. event_type is the class otel_map builds events of\n"
"(roadcheck.events.Event).");

static PyObject *
otel_index(PyObject *module, PyObject *args)
{
    PyObject *event_type;
    (void)module;
    OIndex *ix = PyMem_RawCalloc(1, sizeof(OIndex));
    if (!ix) return PyErr_NoMemory();
    if (!PyArg_ParseTuple(args, "y*O!:otel_index", &ix->buf, &PyType_Type, &event_type)) {
        PyMem_RawFree(ix);
        return NULL;
    }
    ix->has_buf = 1;
    if (!PyType_IsSubtype((PyTypeObject *)event_type, &PyTuple_Type)
        || ((PyTypeObject *)event_type)->tp_dictoffset) {
        oindex_free(ix);
        PyErr_SetString(PyExc_TypeError, "otel_index: event_type must be a named tuple class");
        return NULL;
    }
    ix->event_type = Py_NewRef(event_type);
    int rc = otel_scan(ix);
    if (rc != OK) {
        oindex_free(ix);
        if (rc == FAIL) return NULL;
        Py_RETURN_NONE;
    }
    cp data = (cp)ix->buf.buf;
    PyObject *traces = PyList_New(ix->n_traces);
    if (!traces) {
        oindex_free(ix);
        return NULL;
    }
    for (Py_ssize_t k = 0; k < ix->n_traces; k++) {
        OTrace *t = &ix->traces[k];
        char hex[33];
        static const char digits[] = "0123456789abcdef";
        uint64_t hi, lo;
        memcpy(&hi, t->id, 8);
        memcpy(&lo, t->id + 8, 8);
        for (int i = 0; i < 16; i++) {
            hex[15 - i] = digits[(hi >> (4 * i)) & 15];
            hex[31 - i] = digits[(lo >> (4 * i)) & 15];
        }
        PyObject *id = PyUnicode_FromStringAndSize(hex, 32);
        PyObject *conv = PyTuple_New(t->n_conv);
        int bad = !id || !conv;
        for (int i = 0; !bad && i < t->n_conv; i++) {
            PyObject *c = PyUnicode_DecodeUTF8((const char *)data + t->conv_off[i],
                                               t->conv_len[i], "strict");
            if (!c) bad = 1;
            else PyTuple_SET_ITEM(conv, i, c);
        }
        PyObject *item = bad ? NULL : PyTuple_Pack(2, id, conv);
        Py_XDECREF(id);
        Py_XDECREF(conv);
        if (!item) {
            Py_DECREF(traces);
            oindex_free(ix);
            return NULL;
        }
        PyList_SET_ITEM(traces, k, item);
    }
    /* the table of trace ids is no longer needed */
    PyMem_RawFree(ix->table);
    ix->table = NULL;
    ix->table_cap = 0;
    PyObject *capsule = PyCapsule_New(ix, OINDEX, oindex_capsule_free);
    if (!capsule) {
        Py_DECREF(traces);
        oindex_free(ix);
        return NULL;
    }
    return Py_BuildValue("(NN)", capsule, traces);
}

/* The spans of the traces numbered in a tuple, in order, as indices (a new array) */
static int
run_spans(OIndex *ix, PyObject *numbers, int32_t **out, Py_ssize_t *n)
{
    Py_ssize_t count = 0, m = PyTuple_GET_SIZE(numbers);
    for (int pass = 0; pass < 2; pass++) {
        for (Py_ssize_t i = 0; i < m; i++) {
            Py_ssize_t k = PyLong_AsSsize_t(PyTuple_GET_ITEM(numbers, i));
            if (k == -1 && PyErr_Occurred()) return FAIL;
            if (k < 0 || k >= ix->n_traces) {
                PyErr_SetString(PyExc_IndexError, "otel_map: no such trace");
                return FAIL;
            }
            for (int32_t s = ix->traces[k].first; s >= 0; s = SPAN(ix, s)->next) {
                if (pass) (*out)[count] = s;
                count++;
            }
        }
        if (!pass) {
            *n = count;
            *out = PyMem_RawMalloc((size_t)(count + 1) * sizeof(int32_t));
            if (!*out) {
                no_memory();
                return FAIL;
            }
            count = 0;
        }
    }
    return OK;
}

static OIndex *
index_of(PyObject *capsule)
{
    if (!PyCapsule_IsValid(capsule, OINDEX)) {
        PyErr_SetString(PyExc_TypeError, "the index must come from otel_index");
        return NULL;
    }
    return PyCapsule_GetPointer(capsule, OINDEX);
}

PyDoc_STRVAR(otel_map_doc,
"otel_map(index, traces, result) -> (events, spans) | None\n\n"
"The events of one run, the spans of the traces numbered in the tuple traces (positions\n"
"in otel_index's list), mapped as roadcheck.ingest.otel.spans_to_events maps spans of the\n"
"GenAI conventions, with the final event; spans is how many spans the run holds. result:\n"
"keep each tool call's result. None: the run is Python's to map (another convention,\n"
"span events, an attribute of the mapping that is not a plain string, a malformed span).");

static PyObject *
otel_map(PyObject *module, PyObject *args)
{
    PyObject *capsule, *numbers;
    int keep_result;
    (void)module;
    if (!PyArg_ParseTuple(args, "OO!p:otel_map", &capsule, &PyTuple_Type, &numbers, &keep_result))
        return NULL;
    OIndex *ix = index_of(capsule);
    if (!ix) return NULL;
    Run r = {0};
    r.ix = ix;
    r.data = (cp)ix->buf.buf;
    if (run_spans(ix, numbers, &r.run, &r.n) != OK) return NULL;
    PyObject *result = NULL, *events = NULL;
    r.n_slots = 16;
    while (r.n_slots < 2 * r.n) r.n_slots *= 2;
    r.kind = PyMem_RawMalloc((size_t)(r.n + 1) * sizeof(int));
    r.parent = PyMem_RawMalloc((size_t)(r.n + 1) * sizeof(int32_t));
    r.slots = PyMem_RawMalloc((size_t)r.n_slots * sizeof(int32_t));
    if (!r.kind || !r.parent || !r.slots) {
        no_memory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < r.n_slots; i++) r.slots[i] = -1;
    int rc = r.n ? map_run(&r, keep_result, &events) : GIVE_WAY;
    if (rc == FAIL) goto done;
    if (rc == GIVE_WAY) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    result = Py_BuildValue("(Nn)", events, r.n);
done:
    PyMem_RawFree(r.run);
    PyMem_RawFree(r.kind);
    PyMem_RawFree(r.parent);
    PyMem_RawFree(r.slots);
    return result;
}

PyDoc_STRVAR(otel_lines_doc,
"otel_lines(index, traces) -> list\n\n"
"The lines that hold the spans of the traces numbered in the tuple traces, in file order,\n"
"as (line number, start, end, first span, traces): data[start:end] is the line, first\n"
"the index in the file of its first span, traces how many traces its spans belong to.");

static PyObject *
otel_lines(PyObject *module, PyObject *args)
{
    PyObject *capsule, *numbers;
    (void)module;
    if (!PyArg_ParseTuple(args, "OO!:otel_lines", &capsule, &PyTuple_Type, &numbers))
        return NULL;
    OIndex *ix = index_of(capsule);
    if (!ix) return NULL;
    int32_t *spans;
    Py_ssize_t n;
    if (run_spans(ix, numbers, &spans, &n) != OK) return NULL;
    unsigned char *mark = PyMem_RawCalloc((size_t)ix->n_lines + 1, 1);
    PyObject *out = mark ? PyList_New(0) : NULL;
    if (!mark) PyErr_NoMemory();
    for (Py_ssize_t i = 0; out && i < n; i++) mark[SPAN(ix, spans[i])->line] = 1;
    for (Py_ssize_t k = 0; out && k < ix->n_lines; k++) {
        if (!mark[k]) continue;
        OLine *ln = &ix->lines[k];
        PyObject *t = Py_BuildValue("(nnnni)", ln->n, ln->start, ln->end, ln->first,
                                    (int)ln->traces);
        if (!t || PyList_Append(out, t)) Py_CLEAR(out);
        Py_XDECREF(t);
    }
    PyMem_RawFree(mark);
    PyMem_RawFree(spans);
    return out;
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

/* A type: a string, kept once (short_text) when it has no escape; anything else gives way. */
static int
cc_type_field(Ctx *x, PyObject **out)
{
    cp s;
    Py_ssize_t len;
    int esc, rc;
    if (x->p >= x->end || *x->p != '"') return GIVE_WAY;
    if ((rc = read_string(x, &s, &len, &esc)) != OK) return rc;
    *out = esc ? json_text(s, len, esc) : short_text(s, len);
    return *out ? OK : FAIL;
}

/* A string, or null when nullable; anything else gives way. */
static int
cc_str_field(Ctx *x, int nullable, PyObject **out)
{
    if (x->p < x->end && *x->p == '"') return json_value(x, 1, out);
    if (nullable && x->p < x->end && *x->p == 'n') return json_value(x, 1, out);
    return GIVE_WAY;
}

/* true, false or null; anything else gives way. */
static int
cc_bool_field(Ctx *x, PyObject **out)
{
    if (x->p < x->end && (*x->p == 't' || *x->p == 'f' || *x->p == 'n')) return json_value(x, 1, out);
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
            || (rc = push_key_seen(x, kbase, &seen, s, len)) != OK)
            goto fail;
        int k = cc_key(s, len, cc_block_keys, cc_block_lens, CB_N);
        if (k == CB_TYPE) rc = cc_type_field(x, &f[k]);
        else if (k == CB_CONTENT && !text && x->p < x->end && *x->p == '"') {
            rc = read_string(x, &held_s, &held_len, &held_esc);
            held = 1;
        }
        else if (k >= 0) rc = json_value(x, 1, &f[k]);
        else rc = read_value(x);
        if (rc != OK || (rc = next_member(x, '}', &done)) != OK) goto fail;
    } while (!done);
    x->kn = kbase;
    if (!f[CB_TYPE]) {
        rc = GIVE_WAY;
        goto fail;
    }
    if (held) {
        f[CB_CONTENT] = f[CB_IS_ERROR] == Py_True ? json_text(held_s, held_len, held_esc)
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
        if ((rc = read_key(x, &s, &len)) != OK || (rc = push_key_seen(x, kbase, &seen, s, len)) != OK)
            goto fail;
        if (KEY_IS(s, len, "content")) {
            if (x->p < x->end && (*x->p == '"' || *x->p == 'n')) rc = json_value(x, 1, &content);
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
    if (x->p < x->end && *x->p == '"') return json_value(x, 1, out);
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
        if ((rc = read_key(x, &s, &len)) != OK || (rc = push_key_seen(x, kbase, &seen, s, len)) != OK)
            goto fail;
        if (KEY_IS(s, len, "answers")) rc = json_value(x, 1, &answers);
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
        if ((rc = read_key(x, &s, &len)) != OK || (rc = push_key_seen(x, kbase, &seen, s, len)) != OK)
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
        cp nl = line_at(&x, p, stop);
        if (x.p < x.end) {
            PyObject *entry;
            rc = cc_entry(&x, line, unset, no_message, later, text, &entry);
            if (rc == OK) {
                rc = line_rest(&x);
                if (rc == OK && PyList_Append(out, entry) < 0) rc = FAIL;
                Py_DECREF(entry);
            }
        }
        line++;
        p = nl + 1;
    }
    PyMem_RawFree(x.kptr);
    PyMem_RawFree(x.klen);
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
    {"judge_files", judge_files, METH_VARARGS, judge_files_doc},
    {"list_trajectories", list_trajectories, METH_VARARGS, list_trajectories_doc},
    {"claude_lines", claude_lines, METH_VARARGS, claude_lines_doc},
    {"otel_index", otel_index, METH_VARARGS, otel_index_doc},
    {"otel_map", otel_map, METH_VARARGS, otel_map_doc},
    {"otel_lines", otel_lines, METH_VARARGS, otel_lines_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "roadcheck._accel",
    "The native JSONL scan of replay's hot path, in C (see scan_native).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__accel(void)
{
    init_tables();
    for (int f = 0; f < N_FIELDS; f++) field_lens[f] = (Py_ssize_t)strlen(field_names[f]);
    if (intern_names() != OK) return NULL;
    cc_init();
    return PyModule_Create(&module_def);
}
