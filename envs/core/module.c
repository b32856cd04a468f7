/*
 * CPython binding of the simulator core: mpsched.envs._core.
 *
 * Types:
 *   Sim     one episode (sim.h) driven natively (run) or decision by decision
 *   Batch   N episodes stepped in one call into caller-owned numpy buffers
 *   Buffer  a read-only zero-copy view of an array owned by a Sim
 * Every argument is checked here; the core itself trusts its inputs.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <string.h>

#include "cc.h"
#include "obs.h"
#include "policy.h"
#include "sim.h"

/* ------------------------------------------------------------------------- */
/* Buffer                                                                    */
/* ------------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD PyObject *owner;
    void *ptr;
    Py_ssize_t itemsize;
    char format[4];
    int ndim;
    Py_ssize_t shape[2];
    Py_ssize_t strides[2];
} BufferObject;

static int Buffer_getbuffer(PyObject *obj, Py_buffer *view, int flags) {
    BufferObject *self = (BufferObject *)obj;
    if (flags & PyBUF_WRITABLE) {
        PyErr_SetString(PyExc_BufferError, "simulator state views are read-only");
        view->obj = NULL;
        return -1;
    }
    const int contiguous = self->strides[self->ndim - 1] == self->itemsize;
    if (!contiguous && ((flags & PyBUF_STRIDES) != PyBUF_STRIDES || (flags & PyBUF_ANY_CONTIGUOUS) == PyBUF_ANY_CONTIGUOUS)) {
        PyErr_SetString(PyExc_BufferError, "this simulator view is strided: request strides (numpy.asarray does)");
        view->obj = NULL;
        return -1;
    }
    Py_ssize_t n = 1;
    for (int i = 0; i < self->ndim; i++) n *= self->shape[i];
    view->buf = self->ptr;
    view->obj = Py_NewRef(obj);
    view->len = n * self->itemsize;
    view->readonly = 1;
    view->itemsize = self->itemsize;
    view->format = (flags & PyBUF_FORMAT) ? self->format : NULL;
    view->ndim = self->ndim;
    view->shape = self->shape;
    view->strides = self->strides;
    view->suboffsets = NULL;
    view->internal = NULL;
    return 0;
}

static void Buffer_dealloc(PyObject *obj) {
    BufferObject *self = (BufferObject *)obj;
    Py_XDECREF(self->owner);
    Py_TYPE(obj)->tp_free(obj);
}

static PyBufferProcs Buffer_as_buffer = {Buffer_getbuffer, NULL};

static PyTypeObject BufferType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "mpsched.envs._core.Buffer",
    .tp_basicsize = sizeof(BufferObject),
    .tp_dealloc = Buffer_dealloc,
    .tp_as_buffer = &Buffer_as_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Read-only view of an array owned by a Sim (use numpy.asarray).",
};

/* A view of n0 items `stride` bytes apart, or of an n0 x n1 C-contiguous array. */
static PyObject *make_buffer(PyObject *owner, void *ptr, const char *format, Py_ssize_t itemsize, Py_ssize_t n0,
                             Py_ssize_t n1, Py_ssize_t stride) {
    BufferObject *b = PyObject_New(BufferObject, &BufferType);
    if (!b) return NULL;
    b->owner = Py_NewRef(owner);
    b->ptr = ptr;
    b->itemsize = itemsize;
    strncpy(b->format, format, sizeof b->format - 1);
    b->format[sizeof b->format - 1] = '\0';
    b->ndim = n1 > 0 ? 2 : 1;
    b->shape[0] = n0;
    b->shape[1] = n1;
    b->strides[0] = n1 > 0 ? n1 * itemsize : stride;
    b->strides[1] = itemsize;
    return (PyObject *)b;
}

/* ------------------------------------------------------------------------- */
/* Argument helpers                                                          */
/* ------------------------------------------------------------------------- */

static int get_int64(PyObject *dict, const char *key, const char *ctx, int64_t *out) {
    PyObject *v = PyDict_GetItemString(dict, key);
    if (!v) {
        PyErr_Format(PyExc_KeyError, "%s.%s: missing", ctx, key);
        return -1;
    }
    if (PyBool_Check(v) || !PyLong_Check(v)) {
        PyErr_Format(PyExc_TypeError, "%s.%s: expected an int, got %s", ctx, key, Py_TYPE(v)->tp_name);
        return -1;
    }
    long long x = PyLong_AsLongLong(v);
    if (x == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        PyErr_Format(PyExc_OverflowError, "%s.%s: does not fit in a signed 64-bit integer", ctx, key);
        return -1;
    }
    *out = (int64_t)x;
    return 0;
}

static int as_uint64(PyObject *v, const char *what, uint64_t *out) {
    if (PyBool_Check(v) || !PyLong_Check(v)) {
        PyErr_Format(PyExc_TypeError, "%s: expected an int, got %s", what, Py_TYPE(v)->tp_name);
        return -1;
    }
    unsigned long long x = PyLong_AsUnsignedLongLong(v);
    if (x == (unsigned long long)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        PyErr_Format(PyExc_OverflowError, "%s: must be in [0, 2^64)", what);
        return -1;
    }
    *out = (uint64_t)x;
    return 0;
}

/* kind: 'q' int64, 'i' int32, 'd' float64, 'b' one-byte bool/uint8. */
static int format_matches(const char *fmt, char kind, Py_ssize_t itemsize) {
    if (!fmt) fmt = "B";
    if (*fmt == '<' || *fmt == '=' || *fmt == '@') fmt++;
    if (fmt[0] == '\0' || fmt[1] != '\0') return 0;
    switch (kind) {
    case 'q':
        return itemsize == 8 && (fmt[0] == 'q' || fmt[0] == 'l');
    case 'i':
        return itemsize == 4 && (fmt[0] == 'i' || (fmt[0] == 'l' && sizeof(long) == 4));
    case 'd':
        return itemsize == 8 && fmt[0] == 'd';
    case 'f':
        return itemsize == 4 && fmt[0] == 'f';
    case 'b':
        return itemsize == 1 && (fmt[0] == '?' || fmt[0] == 'B' || fmt[0] == 'b');
    default:
        return 0;
    }
}

static const char *kind_name(char kind) {
    switch (kind) {
    case 'q':
        return "int64";
    case 'i':
        return "int32";
    case 'd':
        return "float64";
    case 'f':
        return "float32";
    default:
        return "bool or uint8";
    }
}

/* A C-contiguous buffer of the given kind with ndim dimensions; shape entries < 0 are
 * free. Writable when asked. */
static int get_array(PyObject *obj, char kind, int ndim, const Py_ssize_t *shape, int writable, const char *what,
                     Py_buffer *view) {
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, view, flags) != 0) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "%s: expected a C-contiguous%s %s array, got %s", what,
                     writable ? " writable" : "", kind_name(kind), Py_TYPE(obj)->tp_name);
        return -1;
    }
    if (!format_matches(view->format, kind, view->itemsize)) {
        PyErr_Format(PyExc_TypeError, "%s: expected dtype %s, got buffer format '%s'", what, kind_name(kind),
                     view->format ? view->format : "B");
        PyBuffer_Release(view);
        return -1;
    }
    if (view->ndim != ndim) {
        PyErr_Format(PyExc_ValueError, "%s: expected %d dimension(s), got %d", what, ndim, view->ndim);
        PyBuffer_Release(view);
        return -1;
    }
    for (int i = 0; i < ndim; i++) {
        if (shape[i] >= 0 && view->shape[i] != shape[i]) {
            PyErr_Format(PyExc_ValueError, "%s: expected size %zd along axis %d, got %zd", what, shape[i], i,
                         view->shape[i]);
            PyBuffer_Release(view);
            return -1;
        }
    }
    return 0;
}

/* A spent work budget is the project's BudgetError (a ScenarioError), raised with the
 * budget and the simulated time reached so that the message can say how far it got. */
static PyObject *budget_error(const mps_sim *s) {
    PyObject *errors = PyImport_ImportModule("mpsched.envs.errors");
    PyObject *cls = errors ? PyObject_GetAttrString(errors, "BudgetError") : NULL;
    Py_XDECREF(errors);
    if (!cls) return NULL;
    PyObject *exc = PyObject_CallFunction(cls, "LLL", (long long)s->max_events, (long long)s->now,
                                          (long long)s->end_ns);
    Py_DECREF(cls);
    if (!exc) return NULL;
    PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
    Py_DECREF(exc);
    return NULL;
}

static PyObject *core_error(const mps_sim *s) {
    if (s->error == MPS_ERR_NOMEM) return PyErr_NoMemory();
    if (s->error == MPS_ERR_BUDGET) return budget_error(s);
    PyErr_SetString(PyExc_RuntimeError, s->errmsg[0] ? s->errmsg : "simulator core error");
    return NULL;
}

/* ------------------------------------------------------------------------- */
/* Sim                                                                       */
/* ------------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD mps_sim *sim;
    mps_policy policy; /* native policy state for run() */
    /* observation buffers bound by bind_obs() and written by every obs_step() */
    Py_buffer obs, mask, slots;
    int obs_bound, K, Pmax, invalid_as_wait;
    int obs_copies; /* the episode took copies when bound: copy actions (envs/core/obs.h) */
    int busy; /* set while the GIL is released around this Sim */
} SimObject;

static void release_obs(SimObject *self) {
    if (!self->obs_bound) return;
    PyBuffer_Release(&self->obs);
    PyBuffer_Release(&self->mask);
    PyBuffer_Release(&self->slots);
    self->obs_bound = 0;
}

static PyTypeObject SimType;

static void Sim_dealloc(PyObject *obj) {
    SimObject *self = (SimObject *)obj;
    release_obs(self);
    mps_policy_free(&self->policy);
    mps_sim_free(self->sim);
    Py_TYPE(obj)->tp_free(obj);
}

/* A string field that must be one of names[0..count-1]; stores its index. */
static int parse_name(PyObject *dict, const char *ctx, const char *key, const char *const *names, int count,
                      int32_t *out) {
    PyObject *v = PyDict_GetItemString(dict, key);
    if (!v) {
        PyErr_Format(PyExc_KeyError, "%s.%s: missing", ctx, key);
        return -1;
    }
    if (!PyUnicode_Check(v)) {
        PyErr_Format(PyExc_TypeError, "%s.%s: expected a str, got %s", ctx, key, Py_TYPE(v)->tp_name);
        return -1;
    }
    const char *name = PyUnicode_AsUTF8(v);
    if (!name) return -1;
    for (int k = 0; k < count; k++) {
        if (strcmp(name, names[k]) == 0) {
            *out = k;
            return 0;
        }
    }
    char known[128] = "";
    for (int k = 0; k < count; k++) {
        strncat(known, names[k], sizeof known - strlen(known) - 1);
        if (k + 1 < count) strncat(known, ", ", sizeof known - strlen(known) - 1);
    }
    PyErr_Format(PyExc_ValueError, "%s.%s: unknown value '%s' (known: %s)", ctx, key, name, known);
    return -1;
}

static int get_threshold(PyObject *dict, const char *key, const char *ctx, uint64_t *out) {
    int64_t x;
    if (get_int64(dict, key, ctx, &x) != 0) return -1;
    if (x < 0) {
        PyErr_Format(PyExc_ValueError, "%s.%s: %lld is negative", ctx, key, (long long)x);
        return -1;
    }
    *out = (uint64_t)x;
    return 0;
}

static const char *const LOSS_MODELS[2] = {"iid", "gilbert_elliott"};
static const char *const FAST_RECOVERIES[2] = {"immediate", "prr"}; /* enum mps_fast_recovery */
static const char *const CUBIC_ARITHMETICS[2] = {"rfc9438", "segments"}; /* enum mps_cubic_arithmetic */
static const char *const RECEIVERS[2] = {"block", "in_order"};

/* Buffers acquired while a Sim is built, released together. */
typedef struct {
    Py_buffer bufs[2 * MPS_MAX_LINKS + 5 * MPS_MAX_SUBFLOWS + 5];
    int n;
} buffer_pool;

static int parse_link(PyObject *ld, int l, buffer_pool *pool, mps_link_config *lc) {
    char ctx[32], what[64];
    snprintf(ctx, sizeof ctx, "links[%d]", l);
    if (!PyDict_Check(ld)) {
        PyErr_Format(PyExc_TypeError, "%s: expected a dict, got %s", ctx, Py_TYPE(ld)->tp_name);
        return -1;
    }
    if (get_int64(ld, "queue_bytes", ctx, &lc->queue_bytes) || get_int64(ld, "bw_cycle_ns", ctx, &lc->bw_cycle_ns))
        return -1;
    PyObject *starts = PyDict_GetItemString(ld, "bw_start_ns");
    PyObject *rates = PyDict_GetItemString(ld, "bw_rate_bps");
    if (!starts || !rates) {
        PyErr_Format(PyExc_KeyError, "%s: bw_start_ns and bw_rate_bps are required", ctx);
        return -1;
    }
    Py_ssize_t free_shape[1] = {-1};
    snprintf(what, sizeof what, "%s.bw_start_ns", ctx);
    if (get_array(starts, 'q', 1, free_shape, 0, what, &pool->bufs[pool->n]) != 0) return -1;
    Py_buffer *sb = &pool->bufs[pool->n++];
    Py_ssize_t rate_shape[1] = {sb->shape[0]};
    snprintf(what, sizeof what, "%s.bw_rate_bps", ctx);
    if (get_array(rates, 'q', 1, rate_shape, 0, what, &pool->bufs[pool->n]) != 0) return -1;
    Py_buffer *rb = &pool->bufs[pool->n++];
    if (sb->shape[0] < 1 || sb->shape[0] > INT32_MAX) {
        PyErr_Format(PyExc_ValueError, "%s.bw_start_ns: the bandwidth schedule is empty", ctx);
        return -1;
    }
    lc->bw_n = (int32_t)sb->shape[0];
    lc->bw_start_ns = (const int64_t *)sb->buf;
    lc->bw_rate_bps = (const int64_t *)rb->buf;
    return 0;
}

/* The optional delay dynamics of a subflow (docs/model.md 4 and 6): delay steps (three
 * arrays, all or none) and jitter bounds (0 when absent). */
static int parse_delay_dynamics(PyObject *pd, const char *ctx, buffer_pool *pool, mps_subflow_config *pc) {
    static const char *const names[3] = {"delay_start_ns", "fwd_delay_step_ns", "rev_delay_step_ns"};
    pc->fwd_jitter_ns = pc->rev_jitter_ns = 0;
    if ((PyDict_GetItemString(pd, "fwd_jitter_ns") && get_int64(pd, "fwd_jitter_ns", ctx, &pc->fwd_jitter_ns)) ||
        (PyDict_GetItemString(pd, "rev_jitter_ns") && get_int64(pd, "rev_jitter_ns", ctx, &pc->rev_jitter_ns)))
        return -1;
    PyObject *arrays[3];
    int given = 0;
    for (int k = 0; k < 3; k++) given += (arrays[k] = PyDict_GetItemString(pd, names[k])) != NULL;
    pc->delay_n = 0;
    if (given == 0) return 0;
    if (given != 3) {
        PyErr_Format(PyExc_KeyError, "%s: delay_start_ns, fwd_delay_step_ns and rev_delay_step_ns go together", ctx);
        return -1;
    }
    Py_ssize_t shape[1] = {-1};
    const int64_t *ptrs[3];
    for (int k = 0; k < 3; k++) {
        char what[64];
        snprintf(what, sizeof what, "%s.%s", ctx, names[k]);
        if (get_array(arrays[k], 'q', 1, shape, 0, what, &pool->bufs[pool->n]) != 0) return -1;
        shape[0] = pool->bufs[pool->n].shape[0];
        ptrs[k] = (const int64_t *)pool->bufs[pool->n].buf;
        pool->n++;
    }
    if (shape[0] > MPS_MAX_DELAY_STEPS) {
        PyErr_Format(PyExc_ValueError, "%s.delay_start_ns: %zd delay steps; at most %d are supported", ctx, shape[0],
                     MPS_MAX_DELAY_STEPS);
        return -1;
    }
    pc->delay_n = (int32_t)shape[0];
    pc->delay_start_ns = ptrs[0];
    pc->fwd_delay_step_ns = ptrs[1];
    pc->rev_delay_step_ns = ptrs[2];
    return 0;
}

/* The optional outages of a subflow (docs/model.md 4 and 6): two arrays, both or none. */
static int parse_outages(PyObject *pd, const char *ctx, buffer_pool *pool, mps_subflow_config *pc) {
    PyObject *starts = PyDict_GetItemString(pd, "down_start_ns"), *ends = PyDict_GetItemString(pd, "down_end_ns");
    pc->down_n = 0;
    if (!starts && !ends) return 0;
    if (!starts || !ends) {
        PyErr_Format(PyExc_KeyError, "%s: down_start_ns and down_end_ns go together", ctx);
        return -1;
    }
    char what[64];
    Py_ssize_t shape[1] = {-1};
    snprintf(what, sizeof what, "%s.down_start_ns", ctx);
    if (get_array(starts, 'q', 1, shape, 0, what, &pool->bufs[pool->n]) != 0) return -1;
    shape[0] = pool->bufs[pool->n].shape[0];
    pc->down_start_ns = (const int64_t *)pool->bufs[pool->n++].buf;
    snprintf(what, sizeof what, "%s.down_end_ns", ctx);
    if (get_array(ends, 'q', 1, shape, 0, what, &pool->bufs[pool->n]) != 0) return -1;
    pc->down_end_ns = (const int64_t *)pool->bufs[pool->n++].buf;
    if (shape[0] > MPS_MAX_OUTAGES) {
        PyErr_Format(PyExc_ValueError, "%s.down_start_ns: %zd outages; at most %d are supported", ctx, shape[0],
                     MPS_MAX_OUTAGES);
        return -1;
    }
    pc->down_n = (int32_t)shape[0];
    return 0;
}

static int parse_subflow(PyObject *pd, const char *what, int j, int cross, buffer_pool *pool,
                         mps_subflow_config *pc) {
    char ctx[32];
    snprintf(ctx, sizeof ctx, "%s[%d]", what, j);
    if (!PyDict_Check(pd)) {
        PyErr_Format(PyExc_TypeError, "%s: expected a dict, got %s", ctx, Py_TYPE(pd)->tp_name);
        return -1;
    }
    int64_t link;
    if (get_int64(pd, "link", ctx, &link) || get_int64(pd, "fwd_delay_ns", ctx, &pc->fwd_delay_ns) ||
        get_int64(pd, "rev_delay_ns", ctx, &pc->rev_delay_ns) ||
        parse_name(pd, ctx, "loss_model", LOSS_MODELS, 2, &pc->loss_model) ||
        get_threshold(pd, "loss_threshold", ctx, &pc->loss_threshold) ||
        get_threshold(pd, "ge_p_threshold", ctx, &pc->ge_p_threshold) ||
        get_threshold(pd, "ge_r_threshold", ctx, &pc->ge_r_threshold) ||
        get_threshold(pd, "ge_bad_loss_threshold", ctx, &pc->ge_bad_loss_threshold) ||
        parse_name(pd, ctx, "cc", mps_cc_names, MPS_CC_COUNT, &pc->cc) ||
        get_int64(pd, "initial_cwnd_bytes", ctx, &pc->initial_cwnd_bytes) ||
        get_int64(pd, "min_rto_ns", ctx, &pc->min_rto_ns) || get_int64(pd, "max_rto_ns", ctx, &pc->max_rto_ns) ||
        get_int64(pd, "ring_capacity", ctx, &pc->ring_capacity))
        return -1;
    pc->fast_recovery = MPS_FR_IMMEDIATE; /* optional: the QUIC-style default */
    if (PyDict_GetItemString(pd, "fast_recovery") &&
        parse_name(pd, ctx, "fast_recovery", FAST_RECOVERIES, 2, &pc->fast_recovery))
        return -1;
    pc->cubic_arithmetic = MPS_CUBIC_RFC9438; /* optional: RFC 9438 in bytes (7.8) */
    if (PyDict_GetItemString(pd, "cubic_arithmetic") &&
        parse_name(pd, ctx, "cubic_arithmetic", CUBIC_ARITHMETICS, 2, &pc->cubic_arithmetic))
        return -1;
    if (parse_delay_dynamics(pd, ctx, pool, pc) != 0 || parse_outages(pd, ctx, pool, pc) != 0) return -1;
    pc->ack_loss_threshold = 0; /* optional: acknowledgements are not lost at random */
    if (PyDict_GetItemString(pd, "ack_loss_threshold") &&
        get_threshold(pd, "ack_loss_threshold", ctx, &pc->ack_loss_threshold))
        return -1;
    pc->rev_rate_bps = pc->ack_bytes = 0; /* optional: no reverse bottleneck */
    pc->rev_queue_bytes = MPS_MAX_TIME_NS;
    if ((PyDict_GetItemString(pd, "rev_rate_bps") && get_int64(pd, "rev_rate_bps", ctx, &pc->rev_rate_bps)) ||
        (PyDict_GetItemString(pd, "ack_bytes") && get_int64(pd, "ack_bytes", ctx, &pc->ack_bytes)) ||
        (PyDict_GetItemString(pd, "rev_queue_bytes") && get_int64(pd, "rev_queue_bytes", ctx, &pc->rev_queue_bytes)))
        return -1;
    pc->ccp_gain_milli = 2000; /* optional: ccp's gain Kp = 2 (docs/model.md 7.13) */
    pc->ccp_storage_bytes = 0; /* optional: ccp estimates its storage */
    if ((PyDict_GetItemString(pd, "ccp_gain_milli") && get_int64(pd, "ccp_gain_milli", ctx, &pc->ccp_gain_milli)) ||
        (PyDict_GetItemString(pd, "ccp_storage_bytes") &&
         get_int64(pd, "ccp_storage_bytes", ctx, &pc->ccp_storage_bytes)))
        return -1;
    PyObject *backup = PyDict_GetItemString(pd, "backup"); /* optional: false */
    pc->backup = backup ? PyObject_IsTrue(backup) : 0;
    if (pc->backup < 0) return -1;
    if (link < 0 || link >= MPS_MAX_LINKS) {
        PyErr_Format(PyExc_ValueError, "%s.link: %lld is not a link index", ctx, (long long)link);
        return -1;
    }
    pc->link = (int32_t)link;
    if (cross) return get_int64(pd, "start_ns", ctx, &pc->start_ns) || get_int64(pd, "stop_ns", ctx, &pc->stop_ns);
    pc->start_ns = 0; /* optional for paths: from the start, for ever */
    pc->stop_ns = MPS_MAX_TIME_NS;
    if ((PyDict_GetItemString(pd, "start_ns") && get_int64(pd, "start_ns", ctx, &pc->start_ns)) ||
        (PyDict_GetItemString(pd, "stop_ns") && get_int64(pd, "stop_ns", ctx, &pc->stop_ns)))
        return -1;
    return 0;
}

/* A list (or tuple) argument of at most `most` items. */
static Py_ssize_t sequence_arg(PyObject *seq, const char *what, Py_ssize_t least, Py_ssize_t most) {
    if (!PyList_Check(seq) && !PyTuple_Check(seq)) {
        PyErr_Format(PyExc_TypeError, "%s: expected a list of dicts", what);
        return -1;
    }
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n < least || n > most) {
        PyErr_Format(PyExc_ValueError, "%s: %zd given; %zd to %zd are supported", what, n, least, most);
        return -1;
    }
    return n;
}

static int Sim_init(PyObject *obj, PyObject *args, PyObject *kwds) {
    SimObject *self = (SimObject *)obj;
    static char *kwlist[] = {"mss_bytes", "header_bytes", "end_ns", "seed", "receiver", "rbuf_bytes", "links",
                             "paths", "cross", "blocks", "drop_expired", "sequence", "max_events", NULL};
    long long mss, header, end_ns, rbuf, max_events = 0;
    PyObject *seed_obj, *receiver, *links, *paths, *cross, *blocks;
    int drop_expired = 0;
    const char *sequence = "send";
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "LLLOOLOOOO|psL", kwlist, &mss, &header, &end_ns, &seed_obj,
                                     &receiver, &rbuf, &links, &paths, &cross, &blocks, &drop_expired, &sequence,
                                     &max_events))
        return -1;
    if (max_events < 0) {
        PyErr_Format(PyExc_ValueError, "max_events: %lld is negative (0: no work budget)", max_events);
        return -1;
    }
    if (strcmp(sequence, "send") != 0 && strcmp(sequence, "stream") != 0) {
        PyErr_Format(PyExc_ValueError, "sequence: '%s' is not 'send' or 'stream'", sequence);
        return -1;
    }
    if (self->sim) {
        PyErr_SetString(PyExc_RuntimeError, "Sim is already initialized");
        return -1;
    }
    mps_config cfg;
    memset(&cfg, 0, sizeof cfg);
    if (mss < 1 || mss > 65535 || header < 0 || header > 1024) {
        PyErr_Format(PyExc_ValueError, "mss_bytes %lld must be in [1, 65535] and header_bytes %lld in [0, 1024]", mss,
                     header);
        return -1;
    }
    cfg.mss_bytes = (int32_t)mss;
    cfg.header_bytes = (int32_t)header;
    cfg.end_ns = (int64_t)end_ns;
    cfg.rbuf_bytes = (int64_t)rbuf;
    cfg.drop_expired = drop_expired;
    cfg.max_events = (int64_t)max_events;
    cfg.stream_sequence = strcmp(sequence, "stream") == 0;
    if (as_uint64(seed_obj, "seed", &cfg.seed) != 0) return -1;
    {
        PyObject *holder = Py_BuildValue("{sO}", "receiver", receiver);
        if (!holder) return -1;
        int bad = parse_name(holder, "sim", "receiver", RECEIVERS, 2, &cfg.receiver);
        Py_DECREF(holder);
        if (bad) return -1;
    }
    const Py_ssize_t n_links = sequence_arg(links, "links", 1, MPS_MAX_LINKS);
    const Py_ssize_t n_paths = n_links < 0 ? -1 : sequence_arg(paths, "paths", 1, MPS_MAX_PATHS);
    const Py_ssize_t n_cross = n_paths < 0 ? -1 : sequence_arg(cross, "cross", 0, MPS_MAX_CROSS);
    if (n_cross < 0) return -1;
    if (!PyDict_Check(blocks)) {
        PyErr_SetString(PyExc_TypeError, "blocks: expected a dict of arrays");
        return -1;
    }
    cfg.n_links = (int32_t)n_links;
    cfg.n_paths = (int32_t)n_paths;
    cfg.n_cross = (int32_t)n_cross;

    buffer_pool pool;
    pool.n = 0;
    int rc = -1;
    for (Py_ssize_t l = 0; l < n_links; l++)
        if (parse_link(PySequence_Fast_GET_ITEM(links, l), (int)l, &pool, &cfg.links[l]) != 0) goto done;
    for (Py_ssize_t j = 0; j < n_paths; j++)
        if (parse_subflow(PySequence_Fast_GET_ITEM(paths, j), "paths", (int)j, 0, &pool, &cfg.subflows[j]) != 0) goto done;
    for (Py_ssize_t x = 0; x < n_cross; x++)
        if (parse_subflow(PySequence_Fast_GET_ITEM(cross, x), "cross", (int)x, 1, &pool,
                          &cfg.subflows[n_paths + x]) != 0)
            goto done;
    {
        static const char *names[5] = {"arrival_ns", "size_bytes", "deadline_ns", "priority", "weight"};
        static const char kinds[5] = {'q', 'q', 'q', 'i', 'd'};
        Py_ssize_t shape[1] = {-1};
        const void *ptrs[5];
        for (int k = 0; k < 5; k++) {
            PyObject *a = PyDict_GetItemString(blocks, names[k]);
            char what[48];
            snprintf(what, sizeof what, "blocks.%s", names[k]);
            if (!a) {
                PyErr_Format(PyExc_KeyError, "%s: missing", what);
                goto done;
            }
            if (get_array(a, kinds[k], 1, shape, 0, what, &pool.bufs[pool.n]) != 0) goto done;
            shape[0] = pool.bufs[pool.n].shape[0];
            ptrs[k] = pool.bufs[pool.n].buf;
            pool.n++;
        }
        if (shape[0] < 1 || shape[0] >= INT32_MAX) {
            PyErr_Format(PyExc_ValueError, "blocks: %zd blocks given; at least 1 is needed", shape[0]);
            goto done;
        }
        cfg.n_blocks = (int32_t)shape[0];
        cfg.arrival_ns = ptrs[0];
        cfg.size_bytes = ptrs[1];
        cfg.deadline_ns = ptrs[2];
        cfg.priority = ptrs[3];
        cfg.weight = ptrs[4];
    }
    {
        char err[256];
        if (mps_config_check(&cfg, err, sizeof err) != 0) {
            PyErr_SetString(PyExc_ValueError, err);
            goto done;
        }
    }
    self->sim = mps_sim_create(&cfg);
    if (!self->sim) {
        PyErr_NoMemory();
        goto done;
    }
    rc = 0;
done:
    for (int i = 0; i < pool.n; i++) PyBuffer_Release(&pool.bufs[i]);
    return rc;
}

/* Every method checks that the Sim exists and is not being run by another thread:
 * run() and Batch.step() release the GIL while the core works. */
#define SIM_READY(self)                                                                    \
    do {                                                                                   \
        if (!(self)->sim) {                                                                \
            PyErr_SetString(PyExc_RuntimeError, "Sim is not initialized");                 \
            return NULL;                                                                   \
        }                                                                                  \
        if ((self)->busy) {                                                                \
            PyErr_SetString(PyExc_RuntimeError, "Sim is being run by another thread");      \
            return NULL;                                                                   \
        }                                                                                  \
    } while (0)

static PyObject *Sim_reset(PyObject *obj, PyObject *arg) {
    SimObject *self = (SimObject *)obj;
    SIM_READY(self);
    uint64_t seed;
    if (as_uint64(arg, "seed", &seed) != 0) return NULL;
    mps_sim_reset(self->sim, seed);
    Py_RETURN_NONE;
}

/* A new Sim holding a deep copy of this one's episode (mps_sim_clone): no native policy
 * state and no bound observation buffers, which belong to whoever drives it. */
static PyObject *Sim_clone(PyObject *obj, PyObject *unused) {
    SimObject *self = (SimObject *)obj;
    SIM_READY(self);
    mps_sim *copy = mps_sim_clone(self->sim);
    if (!copy) return PyErr_NoMemory();
    SimObject *clone = (SimObject *)SimType.tp_alloc(&SimType, 0);
    if (!clone) {
        mps_sim_free(copy);
        return NULL;
    }
    clone->sim = copy;
    return (PyObject *)clone;
}

static PyObject *Sim_hold_future(PyObject *obj, PyObject *args, PyObject *kwds) {
    SimObject *self = (SimObject *)obj;
    SIM_READY(self);
    static char *kwlist[] = {"rates_bps", "seed", "arrivals", NULL};
    PyObject *rates, *seed_arg;
    int arrivals = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO|$p:hold_future", kwlist, &rates, &seed_arg, &arrivals))
        return NULL;
    uint64_t seed;
    if (as_uint64(seed_arg, "seed", &seed) != 0) return NULL;
    PyObject *seq = PySequence_Fast(rates, "hold_future: rates_bps must be a sequence of ints, one per path");
    if (!seq) return NULL;
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n != self->sim->n_paths) {
        PyErr_Format(PyExc_ValueError, "hold_future: %zd rates given for %d paths", n, self->sim->n_paths);
        Py_DECREF(seq);
        return NULL;
    }
    int64_t rate[MPS_MAX_PATHS];
    for (Py_ssize_t l = 0; l < n; l++) {
        const long long r = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, l));
        if (r == -1 && PyErr_Occurred()) {
            Py_DECREF(seq);
            return NULL;
        }
        if (r < 0 || r > MPS_MAX_RATE_BPS) {
            PyErr_Format(PyExc_ValueError, "hold_future: rates_bps[%zd] = %lld is outside [0, 1e12]", l, r);
            Py_DECREF(seq);
            return NULL;
        }
        rate[l] = (int64_t)r;
    }
    Py_DECREF(seq);
    mps_hold_future(self->sim, rate, seed, arrivals);
    Py_RETURN_NONE;
}

static PyObject *Sim_next_decision(PyObject *obj, PyObject *unused) {
    SimObject *self = (SimObject *)obj;
    SIM_READY(self);
    int j = mps_next_decision(self->sim);
    if (j == -2) return core_error(self->sim);
    return PyLong_FromLong(j);
}

static int as_block_index(PyObject *arg, const char *what, long long *out) {
    if (PyBool_Check(arg) || !PyIndex_Check(arg)) {
        PyErr_Format(PyExc_TypeError, "%s: expected an int, got %s", what, Py_TYPE(arg)->tp_name);
        return -1;
    }
    int overflow = 0;
    PyObject *index = PyNumber_Index(arg);
    if (!index) return -1;
    *out = PyLong_AsLongLongAndOverflow(index, &overflow);
    Py_DECREF(index);
    if (*out == -1 && PyErr_Occurred()) return -1;
    if (overflow) {
        PyErr_Format(PyExc_ValueError, "%s: %R is out of range (no block or piece has that index)", what, arg);
        return -1;
    }
    return 0;
}

static PyObject *Sim_apply(PyObject *obj, PyObject *arg) {
    SimObject *self = (SimObject *)obj;
    SIM_READY(self);
    long long b;
    if (as_block_index(arg, "action", &b) != 0) return NULL;
    mps_sim *s = self->sim;
    if (s->pending < 0) {
        PyErr_SetString(PyExc_RuntimeError, "no decision is pending: call next_decision() first");
        return NULL;
    }
    if (b < MPS_WAIT) { /* MPS_COPY(piece) */
        const long long g = -2 - b;
        if (!s->copies) {
            PyErr_Format(PyExc_ValueError,
                         "action %lld: a copy of piece %lld, but this episode does not take copies (a policy that "
                         "sends them sets copies = True)", b, g);
            return NULL;
        }
        if (g >= s->n_pieces || !mps_piece_copyable(s, g, s->pending)) {
            PyErr_Format(PyExc_ValueError, "action %lld: piece %lld %s", b, g,
                         g >= s->n_pieces ? "does not exist"
                                          : "cannot be copied on this path (it is not in flight, this path has it in "
                                            "flight already, or its block was cancelled)");
            return NULL;
        }
        mps_apply(s, (int32_t)b);
        Py_RETURN_NONE;
    }
    if (b != MPS_WAIT && (b >= s->n_blocks || !mps_block_sendable(s, (int32_t)b))) {
        const char *why = b >= s->n_blocks ? "does not exist"
                          : !(s->blk[b].flags & MPS_BLK_ARRIVED) ? "has not arrived yet"
                          : (s->blk[b].flags & MPS_BLK_CANCELLED) ? "was cancelled"
                                                               : "has no bytes left to send";
        PyErr_Format(PyExc_ValueError, "action %lld: block %lld %s (choose a sendable block or WAIT = -1)", b, b, why);
        return NULL;
    }
    mps_apply(s, (int32_t)b);
    Py_RETURN_NONE;
}

static PyObject *Sim_copy_piece(PyObject *obj, PyObject *args) {
    SimObject *self = (SimObject *)obj;
    SIM_READY(self);
    long long b;
    int j;
    if (!PyArg_ParseTuple(args, "Li:copy_piece", &b, &j)) return NULL;
    mps_sim *s = self->sim;
    if (j < 0 || j >= s->n_paths) {
        PyErr_Format(PyExc_ValueError, "copy_piece: path %d does not exist (0..%d)", j, s->n_paths - 1);
        return NULL;
    }
    if (b < 0 || b >= s->n_blocks) {
        PyErr_Format(PyExc_ValueError, "copy_piece: block %lld does not exist", b);
        return NULL;
    }
    return PyLong_FromLong(mps_copy_piece(s, (int32_t)b, j));
}

static PyObject *Sim_cancel(PyObject *obj, PyObject *arg) {
    SimObject *self = (SimObject *)obj;
    SIM_READY(self);
    long long b;
    if (as_block_index(arg, "block", &b) != 0) return NULL;
    mps_sim *s = self->sim;
    if (s->pending < 0) {
        PyErr_SetString(PyExc_RuntimeError, "blocks can only be cancelled during a decision");
        return NULL;
    }
    if (b < 0 || b >= s->n_blocks || mps_cancel(s, (int32_t)b) != 0) {
        PyErr_Format(PyExc_ValueError, "cancel: block %lld %s", b,
                     b < 0 || b >= s->n_blocks ? "does not exist" : "has not arrived yet");
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *Sim_run(PyObject *obj, PyObject *args) {
    SimObject *self = (SimObject *)obj;
    SIM_READY(self);
    const char *name;
    PyObject *params = NULL;
    long long until_ns = MPS_NEVER;
    if (!PyArg_ParseTuple(args, "s|OL:run", &name, &params, &until_ns)) return NULL;
    if (until_ns < 0) {
        PyErr_Format(PyExc_ValueError, "run: until_ns = %lld; expected a time >= 0", until_ns);
        return NULL;
    }
    const mps_policy_def *def = mps_policy_find(name);
    if (!def) {
        PyErr_Format(PyExc_ValueError, "run: unknown native policy '%s'", name);
        return NULL;
    }
    double param[MPS_POLICY_MAX_PARAMS];
    Py_ssize_t n = 0;
    if (params) {
        PyObject *seq = PySequence_Fast(params, "run: params must be a sequence of numbers");
        if (!seq) return NULL;
        n = PySequence_Fast_GET_SIZE(seq);
        for (Py_ssize_t k = 0; k < n && k < MPS_POLICY_MAX_PARAMS; k++) {
            param[k] = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(seq, k));
            if (param[k] == -1.0 && PyErr_Occurred()) {
                Py_DECREF(seq);
                return NULL;
            }
        }
        Py_DECREF(seq);
    }
    if (n != def->n_params) {
        PyErr_Format(PyExc_ValueError, "run: native policy '%s' takes %d parameters, %zd given", name, def->n_params,
                     n);
        return NULL;
    }
    const int bad = mps_policy_bad_param(def, param);
    if (bad >= 0) {
        PyObject *value = PyFloat_FromDouble(param[bad]);
        PyObject *low = PyFloat_FromDouble(def->params[bad].min);
        PyObject *high = PyFloat_FromDouble(def->params[bad].max);
        if (value && low && high)
            PyErr_Format(PyExc_ValueError, "run: native policy '%s': %s = %R is outside [%R, %R]", name,
                         def->params[bad].name, value, low, high);
        Py_XDECREF(value);
        Py_XDECREF(low);
        Py_XDECREF(high);
        return NULL;
    }
    if (mps_policy_prepare(&self->policy, def, param, (int)n, self->sim) != 0) return PyErr_NoMemory();
    int rc;
    self->busy = 1;
    Py_BEGIN_ALLOW_THREADS rc = mps_run_until(self->sim, &self->policy, (int64_t)until_ns);
    Py_END_ALLOW_THREADS self->busy = 0;
    if (rc != 0) return core_error(self->sim);
    Py_RETURN_NONE;
}

static PyObject *Sim_take_reward(PyObject *obj, PyObject *unused) {
    SimObject *self = (SimObject *)obj;
    SIM_READY(self);
    return PyFloat_FromDouble(mps_take_reward(self->sim));
}

static PyObject *Sim_sendable(PyObject *obj, PyObject *arg) {
    SimObject *self = (SimObject *)obj;
    SIM_READY(self);
    Py_buffer out;
    Py_ssize_t shape[1] = {-1};
    if (get_array(arg, 'i', 1, shape, 1, "sendable(out)", &out) != 0) return NULL;
    int32_t n = mps_sendable_list(self->sim, (int32_t *)out.buf, (int32_t)out.shape[0]);
    PyBuffer_Release(&out);
    return PyLong_FromLong(n);
}

/* Arrays that can be viewed: a field of the block records (stride 64 bytes), a cold
 * per-block array, a per-block x path array, a field of the path records, or a
 * per-piece array of the in-order receiver. */
enum { V_BLOCK, V_COLD, V_BLOCK_PATH, V_PATH, V_PIECE, V_PIECE_ALL };

typedef struct {
    const char *name;
    int where;
    const char *format;
    Py_ssize_t itemsize;
    size_t offset; /* in mps_block, mps_path, or of the array pointer in mps_sim */
} view_desc;

#define VB(name, field, fmt) {name, V_BLOCK, fmt, sizeof(((mps_block *)0)->field), offsetof(mps_block, field)}
#define VC(name, field) {name, V_COLD, "q", 8, offsetof(mps_sim, field)}
#define VX(name, field) {name, V_BLOCK_PATH, "q", 8, offsetof(mps_sim, field)}
#define VP(name, field, fmt) {name, V_PATH, fmt, sizeof(((mps_path *)0)->field), offsetof(mps_path, field)}
#define VQ(name, field, fmt, size) {name, V_PIECE, fmt, size, offsetof(mps_sim, field)}
#define VA(name, field, fmt, size) {name, V_PIECE_ALL, fmt, size, offsetof(mps_sim, field)}

static const view_desc VIEWS[] = {
    VC("arrival_ns", arrival_ns),
    VB("size_bytes", size_bytes, "i"),
    VB("deadline_ns", deadline_ns, "q"),
    VB("priority", priority, "i"),
    VB("weight", weight, "d"),
    VB("unsent_bytes", unsent_bytes, "i"),
    VB("lost_pending_bytes", lost_pending_bytes, "i"),
    VB("acked_bytes", acked_bytes, "i"),
    VB("recv_bytes", recv_bytes, "i"),
    VB("flags", flags, "I"),
    VB("piece_off", piece_off, "i"),
    VC("duplicate_bytes", duplicate_bytes),
    VC("first_send_ns", first_send_ns),
    VC("completion_ns", completion_ns),
    VC("cancel_ns", cancel_ns),
    VX("bytes_sent", blk_bytes_sent),
    VX("inflight_bytes", blk_inflight),
    VP("srtt_ns", srtt_ns, "q"),
    VP("rttvar_ns", rttvar_ns, "q"),
    VP("min_rtt_ns", min_rtt_ns, "q"),
    VP("rto_ns", rto_ns, "q"),
    VP("cwnd_bytes", cwnd_bytes, "q"),
    VP("path_inflight_bytes", inflight_bytes, "q"),
    VP("delivery_rate_bps", delivery_rate_bps, "q"),
    VP("recovery", recovery, "i"),
    VP("can_send", can_send, "?"),
    VP("last_send_ns", last_send_ns, "q"),
    VP("link_rate_bps", link_rate_bps, "q"),
    VP("rate_bps", rate_bps, "d"),
    VP("packets_sent", packets_sent, "q"),
    VP("path_bytes_sent", bytes_sent, "q"),
    VP("retransmissions", retransmissions, "q"),
    VP("queue_drops", queue_drops, "q"),
    VP("random_losses", random_losses, "q"),
    VP("declared_lost", declared_lost, "q"),
    VP("rto_count", rto_count, "q"),
    VP("fast_recoveries", fast_recoveries, "q"),
    VP("delivered_bytes", delivered_bytes, "q"),
    VP("dropped_bytes", dropped_bytes, "q"),
    VP("loss_bursts", loss_bursts, "q"),
    VP("outage_losses", outage_losses, "q"),
    VP("outage_ack_losses", outage_ack_losses, "q"),
    VP("ack_losses", ack_losses, "q"),
    VP("ack_queue_drops", ack_queue_drops, "q"),
    VP("redundant_packets", redundant_packets, "q"),
    VP("redundant_bytes", redundant_bytes, "q"),
    VP("rto_streak", rto_streak, "q"),
    VP("backup", backup, "?"),
    VP("start_ns", start_ns, "q"),
    VP("stop_ns", stop_ns, "q"),
    VP("next_pn", next_pn, "q"),
    VP("oldest_pn", oldest_pn, "q"),
    VA("piece_state", piece_state, "B", 1),
    VA("piece_paths", piece_paths, "B", 1),
    VA("piece_sent_ns", piece_sent_ns, "q", 8),
    VQ("piece_arrival_ns", piece_arrival_ns, "q", 8),
    VQ("piece_delivery_ns", piece_delivery_ns, "q", 8),
    VQ("piece_first_send_ns", piece_first_send_ns, "q", 8),
    VQ("dsn_order", dsn_order, "i", 4),
};

/* view(name) for paths, cross_view(name) for the cross flows' records. */
static PyObject *make_view(PyObject *obj, const char *name, int cross) {
    mps_sim *s = ((SimObject *)obj)->sim;
    for (size_t k = 0; k < sizeof VIEWS / sizeof VIEWS[0]; k++) {
        const view_desc *d = &VIEWS[k];
        if (strcmp(d->name, name) != 0) continue;
        if (cross && d->where != V_PATH) break;
        switch (d->where) {
        case V_BLOCK:
            return make_buffer(obj, (char *)s->blk + d->offset, d->format, d->itemsize, s->n_blocks, 0,
                               sizeof(mps_block));
        case V_COLD:
            return make_buffer(obj, *(void **)((char *)s + d->offset), d->format, d->itemsize, s->n_blocks, 0,
                               d->itemsize);
        case V_BLOCK_PATH:
            return make_buffer(obj, *(void **)((char *)s + d->offset), d->format, d->itemsize, s->n_blocks,
                               s->n_paths, d->itemsize);
        case V_PIECE:
            if (s->receiver != MPS_RECEIVER_IN_ORDER) {
                PyErr_Format(PyExc_KeyError, "view: '%s' exists only with the in-order receiver", name);
                return NULL;
            }
            /* fall through */
        case V_PIECE_ALL:
            /* the transmission times exist once asked for (mps_piece_sent_times) */
            if (d->offset == offsetof(mps_sim, piece_sent_ns) && !mps_piece_sent_times(s)) return core_error(s);
            return make_buffer(obj, *(void **)((char *)s + d->offset), d->format, d->itemsize, s->n_pieces, 0,
                               d->itemsize);
        default:
            return make_buffer(obj, (char *)&s->paths[cross ? s->n_paths : 0] + d->offset, d->format, d->itemsize,
                               cross ? s->n_cross : s->n_paths, 0, sizeof(mps_path));
        }
    }
    PyErr_Format(PyExc_KeyError, "%s: no array named '%s'", cross ? "cross_view" : "view", name);
    return NULL;
}

static PyObject *view_method(PyObject *obj, PyObject *arg, int cross) {
    SimObject *self = (SimObject *)obj;
    SIM_READY(self);
    const char *name = PyUnicode_Check(arg) ? PyUnicode_AsUTF8(arg) : NULL;
    if (!name) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "view: expected an array name");
        return NULL;
    }
    return make_view(obj, name, cross);
}

static PyObject *Sim_view(PyObject *obj, PyObject *arg) { return view_method(obj, arg, 0); }
static PyObject *Sim_cross_view(PyObject *obj, PyObject *arg) { return view_method(obj, arg, 1); }

static PyObject *Sim_view_names(PyObject *cls, PyObject *unused) {
    size_t n = sizeof VIEWS / sizeof VIEWS[0];
    PyObject *t = PyTuple_New((Py_ssize_t)n);
    if (!t) return NULL;
    for (size_t k = 0; k < n; k++) PyTuple_SET_ITEM(t, (Py_ssize_t)k, PyUnicode_FromString(VIEWS[k].name));
    return t;
}

static int check_obs_dims(int K, int Pmax, int n_paths) {
    if (K < 1 || K > 64) {
        PyErr_Format(PyExc_ValueError, "num_slots: %d is outside [1, 64]", K);
        return -1;
    }
    if (Pmax < n_paths || Pmax > MPS_MAX_PATHS) {
        PyErr_Format(PyExc_ValueError, "max_paths: %d must be in [%d (the scenario's paths), %d]", Pmax, n_paths,
                     MPS_MAX_PATHS);
        return -1;
    }
    return 0;
}

/* bind_obs(K, Pmax, invalid_as_wait, obs, mask, slots): the buffers obs_step writes; with
 * copies on (the copies attribute, set before) the mask has the copy actions too. */
static PyObject *Sim_bind_obs(PyObject *obj, PyObject *args) {
    SimObject *self = (SimObject *)obj;
    SIM_READY(self);
    int K, Pmax, invalid_as_wait;
    PyObject *o, *m, *sl;
    if (!PyArg_ParseTuple(args, "iipOOO", &K, &Pmax, &invalid_as_wait, &o, &m, &sl)) return NULL;
    if (check_obs_dims(K, Pmax, self->sim->n_paths) != 0) return NULL;
    const int copies = self->sim->copies;
    if (copies) mps_track_flight(self->sim);
    Py_buffer ob, mb, sb;
    Py_ssize_t os[1] = {(Py_ssize_t)mps_obs_dim(K, Pmax)}, ms[1] = {mps_obs_actions(copies, K)}, ss[1] = {K};
    if (get_array(o, 'f', 1, os, 1, "obs", &ob) != 0) return NULL;
    if (get_array(m, 'b', 1, ms, 1, "mask", &mb) != 0) {
        PyBuffer_Release(&ob);
        return NULL;
    }
    if (get_array(sl, 'i', 1, ss, 1, "slots", &sb) != 0) {
        PyBuffer_Release(&ob);
        PyBuffer_Release(&mb);
        return NULL;
    }
    release_obs(self);
    self->obs = ob;
    self->mask = mb;
    self->slots = sb;
    self->K = K;
    self->Pmax = Pmax;
    self->invalid_as_wait = invalid_as_wait;
    self->obs_copies = copies;
    self->obs_bound = 1;
    mps_obs_write(self->sim, K, Pmax, copies, (float *)ob.buf, (uint8_t *)mb.buf, (int32_t *)sb.buf);
    Py_RETURN_NONE;
}

/* obs_step(action) -> (reward, done, path, now_ns): apply the action of a slot (K for
 * WAIT) to the pending decision, run to the next one and write its observation. */
static PyObject *Sim_obs_step(PyObject *obj, PyObject *arg) {
    SimObject *self = (SimObject *)obj;
    SIM_READY(self);
    if (!self->obs_bound) {
        PyErr_SetString(PyExc_RuntimeError, "obs_step: call bind_obs() first");
        return NULL;
    }
    long long action;
    if (as_block_index(arg, "action", &action) != 0) return NULL;
    const int K = self->K;
    double reward = 0.0;
    uint8_t done = 0;
    mps_sim *s = self->sim;
    const int copies = self->obs_copies;
    int rc = mps_obs_step(s, K, self->Pmax, copies, action, self->invalid_as_wait, (float *)self->obs.buf,
                          (uint8_t *)self->mask.buf, (int32_t *)self->slots.buf, &reward, &done);
    if (rc == -2) return core_error(s);
    if (rc == -1) {
        const int n = mps_obs_actions(copies, K);
        if (action < 0 || action >= n)
            PyErr_Format(PyExc_ValueError, "action %lld is outside Discrete(%d): slots 0..%d, WAIT = %d%s", action, n,
                         K - 1, K, copies ? ", copies from slots K + 1 + slot" : "");
        else if (action > K)
            PyErr_Format(PyExc_ValueError,
                         "action %lld: slot %lld holds no piece the deciding path may copy (see action_masks())",
                         action, action - K - 1);
        else if (((int32_t *)self->slots.buf)[action] >= 0)
            PyErr_Format(PyExc_ValueError, "action %lld: the block in slot %lld has nothing to send now (see "
                         "action_masks()); WAIT = %d", action, action, K);
        else
            PyErr_Format(PyExc_ValueError, "action %lld names an empty slot (see action_masks()); WAIT = %d", action,
                         K);
        return NULL;
    }
    return Py_BuildValue("(dNiL)", reward, PyBool_FromLong(done), s->pending, (long long)s->now);
}

#define SIM_GETTER(fname, expr)                                         \
    static PyObject *Sim_get_##fname(PyObject *obj, void *closure) {    \
        SimObject *self = (SimObject *)obj;                             \
        SIM_READY(self);                                                \
        mps_sim *s = self->sim;                                         \
        return expr;                                                    \
    }

SIM_GETTER(now_ns, PyLong_FromLongLong(s->now))
SIM_GETTER(n_arrived, PyLong_FromLong(s->n_arrived))
SIM_GETTER(n_sendable, PyLong_FromLong(mps_n_sendable(s)))
SIM_GETTER(n_cross, PyLong_FromLong(s->n_cross))
SIM_GETTER(n_links, PyLong_FromLong(s->n_links))
SIM_GETTER(n_pieces, PyLong_FromLongLong(s->n_pieces))
SIM_GETTER(receiver, PyUnicode_FromString(s->receiver == MPS_RECEIVER_IN_ORDER ? "in_order" : "block"))
SIM_GETTER(n_dsn, PyLong_FromLong(s->n_dsn))
SIM_GETTER(rcv_nxt, PyLong_FromLongLong(s->rcv_nxt))
SIM_GETTER(rbuf_used, PyLong_FromLongLong(s->rbuf_used))
SIM_GETTER(window_open, PyBool_FromLong(s->window_open))
SIM_GETTER(rbuf_bytes, PyLong_FromLongLong(s->rbuf_bytes))
SIM_GETTER(data_acked, PyLong_FromLongLong(s->data_acked))
SIM_GETTER(conn_next_dsn, PyLong_FromLongLong(s->conn_next_dsn))
SIM_GETTER(drop_expired, PyBool_FromLong(s->drop_expired))
SIM_GETTER(sequence, PyUnicode_FromString(s->stream_seq ? "stream" : "send"))
SIM_GETTER(n_blocks, PyLong_FromLong(s->n_blocks))
SIM_GETTER(n_paths, PyLong_FromLong(s->n_paths))
SIM_GETTER(mss_bytes, PyLong_FromLong(s->mss))
SIM_GETTER(end_ns, PyLong_FromLongLong(s->end_ns))
SIM_GETTER(pending_path, PyLong_FromLong(s->pending))
SIM_GETTER(done, PyBool_FromLong(s->done))
SIM_GETTER(decisions, PyLong_FromLongLong(s->decisions))
SIM_GETTER(events, PyLong_FromLongLong(s->events))
SIM_GETTER(policy_work, PyLong_FromLongLong(s->policy_work))
SIM_GETTER(last_event_ns, PyLong_FromLongLong(s->last_event_ns))
SIM_GETTER(reward_total, PyFloat_FromDouble(s->reward_total))
SIM_GETTER(seed, PyLong_FromUnsignedLongLong(s->seed))
SIM_GETTER(copies, PyBool_FromLong(s->copies))
SIM_GETTER(pieces_out, PyLong_FromLongLong(s->pieces_out))

static int Sim_set_copies(PyObject *obj, PyObject *value, void *closure) {
    SimObject *self = (SimObject *)obj;
    if (!self->sim || self->busy) {
        PyErr_SetString(PyExc_RuntimeError, "copies: the episode is not ready");
        return -1;
    }
    if (!value || !PyBool_Check(value)) {
        PyErr_SetString(PyExc_TypeError, "copies: expected True or False");
        return -1;
    }
    if (mps_set_copies(self->sim, value == Py_True) != 0) {
        core_error(self->sim);
        return -1;
    }
    return 0;
}

static PyGetSetDef Sim_getset[] = {
    {"now_ns", Sim_get_now_ns, NULL, "Current simulated time [ns].", NULL},
    {"n_arrived", Sim_get_n_arrived, NULL, "Blocks that have arrived at the sender.", NULL},
    {"n_sendable", Sim_get_n_sendable, NULL, "Blocks with bytes to send now.", NULL},
    {"n_blocks", Sim_get_n_blocks, NULL, "Blocks in the episode.", NULL},
    {"n_paths", Sim_get_n_paths, NULL, "Paths in the episode.", NULL},
    {"n_cross", Sim_get_n_cross, NULL, "Cross flows in the episode.", NULL},
    {"n_links", Sim_get_n_links, NULL, "Links in the episode.", NULL},
    {"n_pieces", Sim_get_n_pieces, NULL, "Pieces (packets of payload) of all blocks.", NULL},
    {"receiver", Sim_get_receiver, NULL, "'block' or 'in_order'.", NULL},
    {"n_dsn", Sim_get_n_dsn, NULL, "Pieces given a sequence position so far (in-order receiver).", NULL},
    {"rcv_nxt", Sim_get_rcv_nxt, NULL, "Bytes delivered in sequence (in-order receiver).", NULL},
    {"rbuf_used", Sim_get_rbuf_used, NULL, "Bytes waiting in the receive buffer (in-order receiver).", NULL},
    {"window_open", Sim_get_window_open, NULL, "Whether new data may be sent (section 7).", NULL},
    {"rbuf_bytes", Sim_get_rbuf_bytes, NULL, "Receive buffer of the in-order receiver [bytes].", NULL},
    {"data_acked", Sim_get_data_acked, NULL, "Largest data_ack the sender has received (section 7).", NULL},
    {"conn_next_dsn", Sim_get_conn_next_dsn, NULL, "Bytes of pieces sent at least once (section 7).", NULL},
    {"drop_expired", Sim_get_drop_expired, NULL, "Whether expired blocks are cancelled before each round.", NULL},
    {"sequence", Sim_get_sequence, NULL,
     "In-order receiver: 'send' (positions in first-transmission order) or 'stream' (byte order).", NULL},
    {"mss_bytes", Sim_get_mss_bytes, NULL, "Largest packet payload [bytes].", NULL},
    {"end_ns", Sim_get_end_ns, NULL, "Horizon [ns].", NULL},
    {"pending_path", Sim_get_pending_path, NULL, "Path of the pending decision, or -1.", NULL},
    {"done", Sim_get_done, NULL, "True once the episode is over.", NULL},
    {"decisions", Sim_get_decisions, NULL, "Decision points so far.", NULL},
    {"events", Sim_get_events, NULL, "Events processed so far (docs/model.md section 8), against max_events.", NULL},
    {"policy_work", Sim_get_policy_work, NULL,
     "Blocks native decisions that walk the sender buffer looked at so far, also against max_events.", NULL},
    {"last_event_ns", Sim_get_last_event_ns, NULL, "Time of the last processed event, -1 if none.", NULL},
    {"reward_total", Sim_get_reward_total, NULL, "Weight of blocks completed on time so far.", NULL},
    {"seed", Sim_get_seed, NULL, "Seed of the current episode.", NULL},
    {"copies", Sim_get_copies, Sim_set_copies,
     "Whether the policy may send copies of pieces in flight (docs/model.md 7.1): decision rounds then go on "
     "while a piece is in flight, and apply(-2 - g) sends a copy of piece g.", NULL},
    {"pieces_out", Sim_get_pieces_out, NULL, "Pieces in flight (state OUT).", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef Sim_methods[] = {
    {"reset", Sim_reset, METH_O, "reset(seed): restart the episode with a new seed."},
    {"clone", Sim_clone, METH_NOARGS,
     "clone() -> Sim: a deep copy of the episode as it stands, which continues exactly as this one would."},
    {"next_decision", Sim_next_decision, METH_NOARGS,
     "Run to the next decision point; returns the deciding path, or -1 when the episode is over."},
    {"apply", Sim_apply, METH_O,
     "apply(action): send a packet of block action on the pending path, WAIT (-1), or (copies on) a copy of "
     "piece g (its index among all pieces) in flight elsewhere (-2 - g)."},
    {"copy_piece", Sim_copy_piece, METH_VARARGS,
     "copy_piece(block, path) -> int: the lowest piece of block (its index among all pieces) that path may "
     "copy, or -1 (docs/model.md 7.1)."},
    {"cancel", Sim_cancel, METH_O, "cancel(block): drop the block's unsent bytes (during a decision)."},
    {"run", Sim_run, METH_VARARGS,
     "run(name, params=(), until_ns=never): run the episode on with a native policy and its parameters, a "
     "pending decision first, to its end or to the first decision point at or after until_ns (left pending); "
     "the policy starts with fresh state."},
    {"hold_future", (PyCFunction)(void (*)(void))Sim_hold_future, METH_VARARGS | METH_KEYWORDS,
     "hold_future(rates_bps, seed, *, arrivals=False): a what-if for look-ahead on a clone: from now each link "
     "serves at the sum of its paths' rates_bps, no further block arrives (unless arrivals: the application "
     "announced them), cross flows stop, each path's delays stay as they are now (its jitter goes on), no "
     "outage comes and the random streams restart from seed."},
    {"take_reward", Sim_take_reward, METH_NOARGS, "Weight completed on time since the last call."},
    {"sendable", Sim_sendable, METH_O, "sendable(out): write sendable block indices into an int32 array."},
    {"view", Sim_view, METH_O, "view(name): read-only buffer over a block or path array."},
    {"view_names", Sim_view_names, METH_NOARGS | METH_CLASS, "Names accepted by view()."},
    {"cross_view", Sim_cross_view, METH_O, "cross_view(name): read-only buffer over a cross-flow array."},
    {"bind_obs", Sim_bind_obs, METH_VARARGS,
     "bind_obs(K, Pmax, invalid_as_wait, obs, mask, slots): buffers for obs_step; writes the current observation."},
    {"obs_step", Sim_obs_step, METH_O,
     "obs_step(action) -> (reward, done, path, now_ns): apply a slot action (K = WAIT) and observe the next decision."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject SimType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "mpsched.envs._core.Sim",
    .tp_basicsize = sizeof(SimObject),
    .tp_dealloc = Sim_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "One simulated episode (docs/model.md).",
    .tp_methods = Sim_methods,
    .tp_getset = Sim_getset,
    .tp_init = Sim_init,
    .tp_new = PyType_GenericNew,
};

/* ------------------------------------------------------------------------- */
/* Batch                                                                     */
/* ------------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD Py_ssize_t n;
    PyObject **sims; /* SimObject references */
    mps_sim **core;  /* their episodes, read in step() without touching the Python objects */
    int K, Pmax;
    Py_ssize_t dim;
    Py_buffer obs, mask, slots, rewards, dones;
    int bound;
    int busy; /* set while step() runs without the GIL */
} BatchObject;

static void Batch_dealloc(PyObject *obj) {
    BatchObject *self = (BatchObject *)obj;
    if (self->sims) {
        for (Py_ssize_t i = 0; i < self->n; i++) Py_XDECREF(self->sims[i]);
        PyMem_Free(self->sims);
    }
    PyMem_Free(self->core);
    if (self->bound) {
        PyBuffer_Release(&self->obs);
        PyBuffer_Release(&self->mask);
        PyBuffer_Release(&self->slots);
        PyBuffer_Release(&self->rewards);
        PyBuffer_Release(&self->dones);
    }
    Py_TYPE(obj)->tp_free(obj);
}

static int check_sim(PyObject *o, int Pmax, Py_ssize_t i) {
    if (!PyObject_TypeCheck(o, &SimType) || !((SimObject *)o)->sim) {
        PyErr_Format(PyExc_TypeError, "sims[%zd]: expected an initialized Sim", i);
        return -1;
    }
    if (((SimObject *)o)->busy) {
        PyErr_Format(PyExc_RuntimeError, "sims[%zd] is being run by another thread", i);
        return -1;
    }
    if (((SimObject *)o)->sim->n_paths > Pmax) {
        PyErr_Format(PyExc_ValueError, "sims[%zd]: %d paths exceed max_paths %d", i, ((SimObject *)o)->sim->n_paths,
                     Pmax);
        return -1;
    }
    return 0;
}

/* Batch(sims, K, Pmax, obs[N, D] f32, mask[N, K+1] bool, slots[N, K] i32, rewards[N] f64, dones[N] bool) */
static int Batch_init(PyObject *obj, PyObject *args, PyObject *kwds) {
    BatchObject *self = (BatchObject *)obj;
    PyObject *sims, *o, *m, *sl, *r, *d;
    int K, Pmax;
    if (!PyArg_ParseTuple(args, "OiiOOOOO", &sims, &K, &Pmax, &o, &m, &sl, &r, &d)) return -1;
    if (self->sims) {
        PyErr_SetString(PyExc_RuntimeError, "Batch is already initialized");
        return -1;
    }
    if (!PyList_Check(sims) || PyList_GET_SIZE(sims) < 1) {
        PyErr_SetString(PyExc_TypeError, "sims: expected a non-empty list of Sim");
        return -1;
    }
    if (check_obs_dims(K, Pmax, 1) != 0) return -1;
    const Py_ssize_t n = PyList_GET_SIZE(sims);
    for (Py_ssize_t i = 0; i < n; i++)
        if (check_sim(PyList_GET_ITEM(sims, i), Pmax, i) != 0) return -1;
    self->K = K;
    self->Pmax = Pmax;
    self->dim = (Py_ssize_t)mps_obs_dim(K, Pmax);
    Py_ssize_t os[2] = {n, self->dim}, ms[2] = {n, K + 1}, ss[2] = {n, K}, rs[1] = {n};
    if (get_array(o, 'f', 2, os, 1, "observations", &self->obs) != 0) return -1;
    if (get_array(m, 'b', 2, ms, 1, "masks", &self->mask) != 0) goto fail1;
    if (get_array(sl, 'i', 2, ss, 1, "slots", &self->slots) != 0) goto fail2;
    if (get_array(r, 'd', 1, rs, 1, "rewards", &self->rewards) != 0) goto fail3;
    if (get_array(d, 'b', 1, rs, 1, "terminations", &self->dones) != 0) goto fail4;
    self->sims = PyMem_Calloc((size_t)n, sizeof(PyObject *));
    self->core = PyMem_Calloc((size_t)n, sizeof(mps_sim *));
    if (!self->sims || !self->core) {
        PyMem_Free(self->sims);
        PyMem_Free(self->core);
        self->sims = NULL;
        self->core = NULL;
        PyErr_NoMemory();
        goto fail5;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        self->sims[i] = Py_NewRef(PyList_GET_ITEM(sims, i));
        self->core[i] = ((SimObject *)self->sims[i])->sim;
    }
    self->n = n;
    self->bound = 1;
    return 0;
fail5:
    PyBuffer_Release(&self->dones);
fail4:
    PyBuffer_Release(&self->rewards);
fail3:
    PyBuffer_Release(&self->slots);
fail2:
    PyBuffer_Release(&self->mask);
fail1:
    PyBuffer_Release(&self->obs);
    return -1;
}

static int batch_usable(BatchObject *self) {
    if (!self->sims) {
        PyErr_SetString(PyExc_RuntimeError, "Batch is not initialized");
        return -1;
    }
    if (self->busy) {
        PyErr_SetString(PyExc_RuntimeError, "Batch is being stepped by another thread");
        return -1;
    }
    return 0;
}

static int batch_index(BatchObject *self, PyObject *arg, Py_ssize_t *i) {
    if (batch_usable(self) != 0) return -1;
    *i = PyLong_AsSsize_t(arg);
    if (*i == -1 && PyErr_Occurred()) return -1;
    if (*i < 0 || *i >= self->n) {
        PyErr_Format(PyExc_IndexError, "env index %zd is outside [0, %zd)", *i, self->n);
        return -1;
    }
    return 0;
}

/* set(i, sim): replace episode i, run it to its first decision and write its row. */
static PyObject *Batch_set(PyObject *obj, PyObject *args) {
    BatchObject *self = (BatchObject *)obj;
    PyObject *idx, *sim;
    if (!PyArg_ParseTuple(args, "OO", &idx, &sim)) return NULL;
    Py_ssize_t i;
    if (batch_index(self, idx, &i) != 0) return NULL;
    if (check_sim(sim, self->Pmax, i) != 0) return NULL;
    Py_SETREF(self->sims[i], Py_NewRef(sim));
    mps_sim *s = self->core[i] = ((SimObject *)sim)->sim;
    if (mps_next_decision(s) == -2) return core_error(s);
    const int K = self->K;
    mps_obs_write(s, K, self->Pmax, 0, (float *)self->obs.buf + i * self->dim, (uint8_t *)self->mask.buf + i * (K + 1),
                  (int32_t *)self->slots.buf + i * K);
    ((double *)self->rewards.buf)[i] = mps_take_reward(s);
    ((uint8_t *)self->dones.buf)[i] = (uint8_t)s->done;
    Py_RETURN_NONE;
}

static PyObject *Batch_sim(PyObject *obj, PyObject *arg) {
    BatchObject *self = (BatchObject *)obj;
    Py_ssize_t i;
    if (batch_index(self, arg, &i) != 0) return NULL;
    return Py_NewRef(self->sims[i]);
}

/* step(actions[N] int64, invalid_as_wait[, observations]) -> number of finished episodes.
 * observations, when given, becomes the batch's observation buffer from this step on (set()
 * writes there too), unless the actions are refused: the caller hands a fresh array per step
 * instead of copying one. */
static PyObject *Batch_step(PyObject *obj, PyObject *args) {
    BatchObject *self = (BatchObject *)obj;
    PyObject *a, *o = NULL;
    int invalid_as_wait;
    if (!PyArg_ParseTuple(args, "Op|O", &a, &invalid_as_wait, &o)) return NULL;
    if (batch_usable(self) != 0) return NULL;
    Py_buffer ab;
    Py_ssize_t as[1] = {self->n};
    if (get_array(a, 'q', 1, as, 0, "actions", &ab) != 0) return NULL;
    const int64_t *act = (const int64_t *)ab.buf;
    const int K = self->K;
    const int32_t *slots = (const int32_t *)self->slots.buf;
    /* Check every action before stepping any, so a bad batch changes nothing. */
    for (Py_ssize_t i = 0; i < self->n; i++) {
        const int64_t x = act[i];
        const int valid = x >= 0 && x <= K && (x == K || slots[i * K + x] >= 0 || invalid_as_wait);
        if (!valid) {
            PyBuffer_Release(&ab);
            PyErr_Format(PyExc_ValueError,
                         "actions[%zd] = %lld is not valid: use a slot in [0, %d) holding a block (see "
                         "action_masks()) or %d for WAIT",
                         i, (long long)x, K, K);
            return NULL;
        }
    }
    for (Py_ssize_t i = 0; i < self->n; i++) {
        if (((SimObject *)self->sims[i])->busy) {
            PyBuffer_Release(&ab);
            PyErr_Format(PyExc_RuntimeError, "sims[%zd] is being run by another thread", i);
            return NULL;
        }
    }
    if (o) { /* only once nothing can refuse the step */
        Py_buffer ob;
        Py_ssize_t os[2] = {self->n, self->dim};
        if (get_array(o, 'f', 2, os, 1, "observations", &ob) != 0) {
            PyBuffer_Release(&ab);
            return NULL;
        }
        PyBuffer_Release(&self->obs);
        self->obs = ob;
    }
    for (Py_ssize_t i = 0; i < self->n; i++) ((SimObject *)self->sims[i])->busy = 1;
    self->busy = 1;
    Py_ssize_t finished = 0, failed = -1;
    float *obs = (float *)self->obs.buf;
    uint8_t *mask = (uint8_t *)self->mask.buf;
    int32_t *slot = (int32_t *)self->slots.buf;
    double *rew = (double *)self->rewards.buf;
    uint8_t *done = (uint8_t *)self->dones.buf;
    mps_sim *const *core = self->core;
    const Py_ssize_t n = self->n;
    /* The episodes are stepped in turn, each far apart in memory: the state the next step
     * reads first is fetched one episode ahead and the episode itself two ahead, so that
     * its cache misses overlap this step's work instead of following it. */
    if (n > 1) mps_prefetch_state(core[1]);
    Py_BEGIN_ALLOW_THREADS for (Py_ssize_t i = 0; i < n; i++) {
        mps_sim *s = core[i];
        if (i + 2 < n) mps_prefetch_state(core[i + 2]);
        if (i + 1 < n) mps_prefetch_data(core[i + 1]);
        int rc = mps_obs_step(s, K, self->Pmax, 0, act[i], invalid_as_wait, obs + i * self->dim, mask + i * (K + 1),
                              slot + i * K, rew + i, done + i);
        if (rc != 0) {
            failed = i;
            break;
        }
        finished += done[i];
    }
    Py_END_ALLOW_THREADS self->busy = 0;
    for (Py_ssize_t i = 0; i < self->n; i++) ((SimObject *)self->sims[i])->busy = 0;
    PyBuffer_Release(&ab);
    if (failed >= 0) return core_error(((SimObject *)self->sims[failed])->sim);
    return PyLong_FromSsize_t(finished);
}

static PyMethodDef Batch_methods[] = {
    {"set", Batch_set, METH_VARARGS, "set(i, sim): install episode i and write its first observation."},
    {"sim", Batch_sim, METH_O, "sim(i): the Sim of episode i."},
    {"step", Batch_step, METH_VARARGS,
     "step(actions, invalid_as_wait[, observations]) -> number of episodes that ended; observations (optional) "
     "becomes the buffer the observations are written to."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject BatchType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "mpsched.envs._core.Batch",
    .tp_basicsize = sizeof(BatchObject),
    .tp_dealloc = Batch_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "N episodes stepped together into caller-owned buffers.",
    .tp_methods = Batch_methods,
    .tp_init = Batch_init,
    .tp_new = PyType_GenericNew,
};

/* ------------------------------------------------------------------------- */
/* Module                                                                    */
/* ------------------------------------------------------------------------- */

static PyObject *mod_obs_dim(PyObject *m, PyObject *args) {
    int K, Pmax;
    if (!PyArg_ParseTuple(args, "ii", &K, &Pmax)) return NULL;
    if (check_obs_dims(K, Pmax, 1) != 0) return NULL;
    return PyLong_FromLongLong(mps_obs_dim(K, Pmax));
}

static PyObject *mod_native_policies(PyObject *m, PyObject *unused) {
    PyObject *d = PyDict_New();
    if (!d) return NULL;
    for (int k = 0; k < mps_policy_count; k++) {
        const mps_policy_def *def = mps_policy_table[k];
        PyObject *params = PyTuple_New(def->n_params);
        if (!params) goto fail;
        for (int i = 0; i < def->n_params; i++) {
            PyObject *item = Py_BuildValue("(sdd)", def->params[i].name, def->params[i].min, def->params[i].max);
            if (!item) {
                Py_DECREF(params);
                goto fail;
            }
            PyTuple_SET_ITEM(params, i, item);
        }
        const int rc = PyDict_SetItemString(d, def->name, params);
        Py_DECREF(params);
        if (rc != 0) goto fail;
    }
    return d;
fail:
    Py_DECREF(d);
    return NULL;
}

/* A module attribute holding a tuple of names. */
static int add_names(PyObject *m, const char *attr, const char *const *names, int n) {
    PyObject *t = PyTuple_New(n);
    if (!t) return -1;
    for (int i = 0; i < n; i++) {
        PyObject *name = PyUnicode_FromString(names[i]);
        if (!name) {
            Py_DECREF(t);
            return -1;
        }
        PyTuple_SET_ITEM(t, i, name);
    }
    const int rc = PyModule_AddObjectRef(m, attr, t);
    Py_DECREF(t);
    return rc;
}

static PyMethodDef module_methods[] = {
    {"obs_dim", mod_obs_dim, METH_VARARGS, "obs_dim(K, Pmax): length of the flat observation."},
    {"native_policies", mod_native_policies, METH_NOARGS,
     "The policies compiled into the core: {name: ((parameter, min, max), ...)} in argument order."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef core_module = {
    PyModuleDef_HEAD_INIT, "_core", "The mpsched simulator core (docs/model.md).", -1, module_methods,
};

PyMODINIT_FUNC PyInit__core(void) {
    if (PyType_Ready(&BufferType) < 0 || PyType_Ready(&SimType) < 0 || PyType_Ready(&BatchType) < 0) return NULL;
    PyObject *m = PyModule_Create(&core_module);
    if (!m) return NULL;
    if (PyModule_AddObjectRef(m, "Sim", (PyObject *)&SimType) < 0 ||
        PyModule_AddObjectRef(m, "Batch", (PyObject *)&BatchType) < 0 ||
        PyModule_AddObjectRef(m, "Buffer", (PyObject *)&BufferType) < 0 || PyModule_AddIntConstant(m, "WAIT", MPS_WAIT) < 0 ||
        PyModule_AddIntConstant(m, "MAX_PATHS", MPS_MAX_PATHS) < 0 ||
        PyModule_AddIntConstant(m, "MAX_SLOTS", 64) < 0 ||
        PyModule_AddIntConstant(m, "MAX_PACKETS", (long)MPS_MAX_PIECES) < 0 ||
        PyModule_AddIntConstant(m, "FLAG_ARRIVED", MPS_BLK_ARRIVED) < 0 ||
        PyModule_AddIntConstant(m, "FLAG_CANCELLED", MPS_BLK_CANCELLED) < 0 ||
        PyModule_AddIntConstant(m, "FLAG_COMPLETE", MPS_BLK_COMPLETE) < 0 ||
        PyModule_AddIntConstant(m, "FLAG_ON_TIME", MPS_BLK_ON_TIME) < 0 ||
        PyModule_AddIntConstant(m, "FLAG_ACKED", MPS_BLK_ACKED) < 0 ||
        PyModule_AddIntConstant(m, "FLAG_SENT", MPS_BLK_SENT) < 0 ||
        PyModule_AddIntConstant(m, "PIECE_OUT", MPS_PIECE_OUT) < 0 ||
        add_names(m, "OBS_SLOT_FEATURES", mps_obs_slot_names, MPS_OBS_BLOCK_BASE) < 0 ||
        add_names(m, "OBS_PATH_FEATURES", mps_obs_path_names, MPS_OBS_PATH_FEATURES) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
