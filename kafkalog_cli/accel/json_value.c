/* kafkalog_cli/accel/json_value.c: JSON text of a decoded value, and the per-record decoder calls of the text dump.
 * Part of the one translation unit kafkalog_cli/_accel.c (included there, never compiled alone; see its head). */
/* =====================================================================================================================
 * Why (issue 30.6): `dump --value-decoder schema-registry` fell back to the Python record tier for every batch, whose
 * per-record Python cost about twice the fastavro decode itself. With a `recdec` the text formatter (format_text.c,
 * and so dump_batch and dump_run) stays in C and calls the record parser's own callables for the key and value
 * bytes; a callable returns the text to print (a str) or a 1-tuple (value,): the decoded value, which jv_put writes
 * as the JSON text Python's `json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=DEFAULT).encode`
 * gives (kafkalog_cli/internal_topics/schema_decode.py's _ENCODE), byte for byte:
 *   None/True/False -> null/true/false; an exact int -> int.__repr__; an exact float -> float.__repr__, NaN,
 *   Infinity, -Infinity; an exact str -> json's escape_unicode (\" \\ \b \f \n \r \t, other controls \u00xx in lower
 *   case, everything else as it is, in UTF-8); an exact list or tuple -> [..]; an exact dict with str keys -> {..}
 *   in its order; any other object -> DEFAULT(object), written the same way (as json does). An exact datetime,
 *   date or time (naive, or a datetime in datetime.timezone.utc: Avro's timestamp and date logical types as
 *   fastavro gives them) is written as the string of its isoformat() without the call (DEFAULT's rule for them).
 * Anything else (a str that is not valid UTF-8: lone surrogates, a dict key that is not a str, a subclass of a
 * builtin, nesting deeper than JV_MAX_DEPTH) makes jv_put decline; then `encode(value)` (the Python encoder) writes
 * the text. An exception from a callable (other than a BaseException such as KeyboardInterrupt, which propagates)
 * declines the whole batch: Python formats it and words the problem exactly.
 * ===================================================================================================================*/
#define JV_MAX_DEPTH 64
#include <datetime.h>

/* The record parser's callables (render/accel.py builds them from the parser): `key` / `value` None means the bytes
 * are printed as they are (strict UTF-8, as without a decoder); `encode` is the Python JSON encoder, `fallback` its
 * `default`. A callable is called as fn(bytes) for a record without headers and fn(bytes, headers) with them, headers
 * being the record's [(key, value or None), ...] as bytes. `kknown` / `vknown` (NULL or a dict the parser fills):
 * for bytes of a record without headers whose first `known_len` bytes are a key of it (a schema-id prefix already
 * decoded once), C calls that entry, f(bytes, known_len), and writes its result as the decoded value (no frame of
 * fn per record); an Exception from it sends the bytes to fn, which words the problem. */
#define KNOWN_MAX 16
/* The last prefix a side found in its `known` dict and the entry (borrowed: the parser only ever adds entries, and
 * the dict outlives the call), so that a run of one schema id costs a memcmp per record, not a bytes object and a
 * dict lookup. */
typedef struct {
    uint8_t prefix[KNOWN_MAX];
    PyObject *fn;
} knowncache;

typedef struct {
    PyObject *key, *value, *encode, *fallback, *kknown, *vknown;
    Py_ssize_t known_len;
    knowncache *kcache, *vcache; /* NULL: no cache */
} recdec;

/* format_json.c's JSON string writer (json's escape_unicode over UTF-8 text; the caller reserves 6 * n + 2) */
static void ob_json_str(outbuf *o, const uint8_t *s, Py_ssize_t n);

static int jv_string(outbuf *o, const unsigned char *s, Py_ssize_t n) {
    if (ob_reserve(o, (size_t)n * 6 + 2) < 0) return -1;
    ob_json_str(o, s, n);
    return 1;
}

/* Append the UTF-8 of str `t` as it is: 1, 0 (not a str, or not encodable: lone surrogates; error cleared), -1 */
static int ob_put_str(outbuf *o, PyObject *t) {
    Py_ssize_t len;
    const char *s = PyUnicode_Check(t) ? PyUnicode_AsUTF8AndSize(t, &len) : NULL;
    if (!s) {
        if (PyErr_Occurred() && !PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) return -1;
        PyErr_Clear();
        return 0;
    }
    if (ob_reserve(o, (size_t)len) < 0) return -1;
    ob_put(o, s, (size_t)len);
    return 1;
}

/* 1 written, 0 declined (nothing appended that the caller keeps: it resets o->len), -1 a Python error */
static int jv_str(outbuf *o, PyObject *v) {
    Py_ssize_t n;
    const char *s = PyUnicode_AsUTF8AndSize(v, &n);
    if (!s) {
        if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) return -1;
        PyErr_Clear(); /* lone surrogates: json writes them, the UTF-8 stdout would not: Python's path decides */
        return 0;
    }
    return jv_string(o, (const unsigned char *)s, n);
}

/* "%04d-%02d-%02d" of year/month/day (what date.isoformat and datetime.isoformat start with) */
static void jv_ymd(outbuf *o, int y, int m, int d) {
    char *w = o->data + o->len;
    w[0] = (char)('0' + y / 1000 % 10);
    w[1] = (char)('0' + y / 100 % 10);
    w[2] = (char)('0' + y / 10 % 10);
    w[3] = (char)('0' + y % 10);
    w[4] = '-';
    memcpy(w + 5, digit_pairs + 2 * m, 2);
    w[7] = '-';
    memcpy(w + 8, digit_pairs + 2 * d, 2);
    o->len += 10;
}

/* "%02d:%02d:%02d" and ".%06d" when us != 0 (time.isoformat / datetime.isoformat with timespec "auto") */
static void jv_hms(outbuf *o, int h, int mi, int sec, int us) {
    char *w = o->data + o->len;
    memcpy(w, digit_pairs + 2 * h, 2);
    w[2] = ':';
    memcpy(w + 3, digit_pairs + 2 * mi, 2);
    w[5] = ':';
    memcpy(w + 6, digit_pairs + 2 * sec, 2);
    o->len += 8;
    if (us) {
        w += 8;
        w[0] = '.';
        for (int i = 6; i >= 1; i--) {
            w[i] = (char)('0' + us % 10);
            us /= 10;
        }
        o->len += 7;
    }
}

/* An exact datetime (naive or in timezone.utc), date, or naive time as the JSON string of its isoformat(): 1; 0 for
 * anything else (jv_put goes on), -1 on an error. */
static int jv_datetime(outbuf *o, PyObject *v) {
    if (PyDateTime_CheckExact(v)) {
        PyObject *tz = PyDateTime_DATE_GET_TZINFO(v);
        if (tz != Py_None && tz != PyDateTime_TimeZone_UTC) return 0;
        if (ob_reserve(o, 40) < 0) return -1;
        PUTLIT(o, "\"");
        jv_ymd(o, PyDateTime_GET_YEAR(v), PyDateTime_GET_MONTH(v), PyDateTime_GET_DAY(v));
        PUTLIT(o, "T");
        jv_hms(o, PyDateTime_DATE_GET_HOUR(v), PyDateTime_DATE_GET_MINUTE(v), PyDateTime_DATE_GET_SECOND(v),
               PyDateTime_DATE_GET_MICROSECOND(v));
        if (tz != Py_None) PUTLIT(o, "+00:00");
        PUTLIT(o, "\"");
        return 1;
    }
    if (PyDate_CheckExact(v)) {
        if (ob_reserve(o, 12) < 0) return -1;
        PUTLIT(o, "\"");
        jv_ymd(o, PyDateTime_GET_YEAR(v), PyDateTime_GET_MONTH(v), PyDateTime_GET_DAY(v));
        PUTLIT(o, "\"");
        return 1;
    }
    if (PyTime_CheckExact(v) && PyDateTime_TIME_GET_TZINFO(v) == Py_None) {
        if (ob_reserve(o, 20) < 0) return -1;
        PUTLIT(o, "\"");
        jv_hms(o, PyDateTime_TIME_GET_HOUR(v), PyDateTime_TIME_GET_MINUTE(v), PyDateTime_TIME_GET_SECOND(v),
               PyDateTime_TIME_GET_MICROSECOND(v));
        PUTLIT(o, "\"");
        return 1;
    }
    return 0;
}

static int jv_put(outbuf *o, PyObject *v, const recdec *dec, int depth) {
    if (depth > JV_MAX_DEPTH) return 0;
    if (v == Py_None) {
        if (ob_reserve(o, 4) < 0) return -1;
        PUTLIT(o, "null");
        return 1;
    }
    if (v == Py_True || v == Py_False) {
        if (ob_reserve(o, 5) < 0) return -1;
        if (v == Py_True)
            PUTLIT(o, "true");
        else
            PUTLIT(o, "false");
        return 1;
    }
    if (PyUnicode_CheckExact(v)) return jv_str(o, v);
    if (PyLong_CheckExact(v)) {
        int overflow = 0;
        long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (!overflow) {
            if (x == -1 && PyErr_Occurred()) return -1;
            if (ob_reserve(o, 24) < 0) return -1;
            ob_int(o, (int64_t)x);
            return 1;
        }
        PyObject *r = PyObject_Repr(v);
        if (!r) return -1;
        int rc = ob_put_str(o, r);
        Py_DECREF(r);
        return rc;
    }
    if (PyFloat_CheckExact(v)) {
        double x = PyFloat_AS_DOUBLE(v);
        if (ob_reserve(o, 32) < 0) return -1;
        if (x != x) {
            PUTLIT(o, "NaN");
        } else if (x == Py_HUGE_VAL) {
            PUTLIT(o, "Infinity");
        } else if (x == -Py_HUGE_VAL) {
            PUTLIT(o, "-Infinity");
        } else {
            char *s = PyOS_double_to_string(x, 'r', 0, Py_DTSF_ADD_DOT_0, NULL);
            if (!s) return -1;
            size_t n = strlen(s);
            int rc = ob_reserve(o, n) < 0 ? -1 : 1;
            if (rc == 1) ob_put(o, s, n);
            PyMem_Free(s);
            return rc;
        }
        return 1;
    }
    if (PyList_CheckExact(v) || PyTuple_CheckExact(v)) {
        int is_list = PyList_CheckExact(v);
        if (ob_reserve(o, 1) < 0) return -1;
        PUTLIT(o, "[");
        for (Py_ssize_t i = 0; i < (is_list ? PyList_GET_SIZE(v) : PyTuple_GET_SIZE(v)); i++) {
            if (i) {
                if (ob_reserve(o, 1) < 0) return -1;
                PUTLIT(o, ",");
            }
            int rc = jv_put(o, is_list ? PyList_GET_ITEM(v, i) : PyTuple_GET_ITEM(v, i), dec, depth + 1);
            if (rc != 1) return rc;
        }
        if (ob_reserve(o, 1) < 0) return -1;
        PUTLIT(o, "]");
        return 1;
    }
    if (PyDict_CheckExact(v)) {
        Py_ssize_t it = 0, i = 0;
        PyObject *k, *x;
        if (ob_reserve(o, 1) < 0) return -1;
        PUTLIT(o, "{");
        while (PyDict_Next(v, &it, &k, &x)) {
            if (!PyUnicode_CheckExact(k)) return 0; /* json converts int/float/bool/None keys: Python's path does */
            if (i++) {
                if (ob_reserve(o, 1) < 0) return -1;
                PUTLIT(o, ",");
            }
            int rc = jv_str(o, k);
            if (rc != 1) return rc;
            if (ob_reserve(o, 1) < 0) return -1;
            PUTLIT(o, ":");
            Py_INCREF(x); /* the default callable below runs Python code: keep the value alive */
            rc = jv_put(o, x, dec, depth + 1);
            Py_DECREF(x);
            if (rc != 1) return rc;
        }
        if (ob_reserve(o, 1) < 0) return -1;
        PUTLIT(o, "}");
        return 1;
    }
    if (PyDateTimeAPI == NULL) {
        PyDateTime_IMPORT;
        if (PyDateTimeAPI == NULL) return -1;
    }
    int dt = jv_datetime(o, v);
    if (dt != 0) return dt;
    if (PyUnicode_Check(v) || PyLong_Check(v) || PyFloat_Check(v) || PyList_Check(v) || PyTuple_Check(v) ||
        PyDict_Check(v))
        return 0; /* a subclass: json has its own rules for those (Python's path) */
    if (dec->fallback == NULL || dec->fallback == Py_None) return 0;
    PyObject *r = PyObject_CallOneArg(dec->fallback, v); /* json: default(o), then that object's text */
    if (!r) {
        if (!PyErr_ExceptionMatches(PyExc_Exception)) return -1;
        PyErr_Clear();
        return 0;
    }
    int rc = jv_put(o, r, dec, depth + 1);
    Py_DECREF(r);
    return rc;
}

/* The record's headers as the Python record has them: [(key bytes, value bytes or None), ...]. New reference. */
static PyObject *dec_headers(const uint8_t *b, const v2rechdr *h, int32_t nh) {
    PyObject *list = PyList_New(nh);
    if (!list) return NULL;
    for (int32_t i = 0; i < nh; i++) {
        PyObject *k = PyBytes_FromStringAndSize((const char *)b + h[i].kpos, h[i].klen);
        PyObject *v = h[i].vlen >= 0 ? PyBytes_FromStringAndSize((const char *)b + h[i].vpos, h[i].vlen) : Py_NewRef(Py_None);
        PyObject *t = (k && v) ? PyTuple_Pack(2, k, v) : NULL;
        Py_XDECREF(k);
        Py_XDECREF(v);
        if (!t) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, i, t);
    }
    return list;
}

/* Append what `fn` makes of the `n` bytes at `s` (see the head). *headers is built on first use (NULL: not yet;
 * the caller releases it). 1 appended, 0 decline the batch, -1 a Python error. */
/* The value a `known` entry decodes the bytes to (a new reference), or NULL: no entry, or the entry raised an
 * Exception (cleared: fn words it); -1 in *err on a Python error to pass on. */
static PyObject *dec_known(PyObject *known, knowncache *cache, Py_ssize_t known_len, PyObject *data, int *err) {
    *err = 0;
    if (known == NULL || PyBytes_GET_SIZE(data) < known_len || PyDict_GET_SIZE(known) == 0) return NULL;
    PyObject *f;
    if (cache && cache->fn && known_len <= KNOWN_MAX && memcmp(cache->prefix, PyBytes_AS_STRING(data), (size_t)known_len) == 0) {
        f = cache->fn;
    } else {
        PyObject *prefix = PyBytes_FromStringAndSize(PyBytes_AS_STRING(data), known_len);
        if (!prefix) {
            *err = -1;
            return NULL;
        }
        f = PyDict_GetItemWithError(known, prefix); /* borrowed */
        Py_DECREF(prefix);
        if (!f) {
            if (PyErr_Occurred()) *err = -1;
            return NULL;
        }
        if (cache && known_len <= KNOWN_MAX) {
            memcpy(cache->prefix, PyBytes_AS_STRING(data), (size_t)known_len);
            cache->fn = f;
        }
    }
    Py_INCREF(f);
    PyObject *start = PyLong_FromSsize_t(known_len);
    PyObject *args[3] = {NULL, data, start};
    PyObject *v = start ? PyObject_Vectorcall(f, args + 1, 2 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL) : NULL;
    Py_XDECREF(start);
    Py_DECREF(f);
    if (!v) {
        if (PyErr_ExceptionMatches(PyExc_Exception))
            PyErr_Clear();
        else
            *err = -1;
    }
    return v;
}

/* jv_put's text of `value`, or the Python encoder's where it declines: 1, 0 (decline the batch), -1 */
static int dec_value(outbuf *o, PyObject *value, const recdec *dec) {
    size_t mark = o->len;
    int rc = jv_put(o, value, dec, 0);
    if (rc != 0) return rc;
    o->len = mark;
    PyObject *t = PyObject_CallOneArg(dec->encode, value);
    if (!t) {
        if (!PyErr_ExceptionMatches(PyExc_Exception)) return -1;
        PyErr_Clear();
        return 0;
    }
    rc = ob_put_str(o, t);
    Py_DECREF(t);
    return rc;
}

static int dec_emit(outbuf *o, PyObject *fn, PyObject *known, const recdec *dec, const uint8_t *b, Py_ssize_t pos,
                    int32_t n, const v2rechdr *hdrs, int32_t nh, PyObject **headers) {
    PyObject *args[3] = {NULL, NULL, NULL};
    PyObject *data = PyBytes_FromStringAndSize((const char *)b + pos, n);
    if (!data) return -1;
    args[1] = data;
    size_t nargs = 1;
    int rc = -1;
    if (nh > 0) {
        if (*headers == NULL && (*headers = dec_headers(b, hdrs, nh)) == NULL) {
            Py_DECREF(data);
            return -1;
        }
        args[2] = *headers;
        nargs = 2;
    } else {
        int err;
        PyObject *v = dec_known(known, known == dec->kknown ? dec->kcache : dec->vcache, dec->known_len, data, &err);
        if (v) {
            rc = dec_value(o, v, dec);
            Py_DECREF(v);
            Py_DECREF(data);
            if (rc < 0 && !PyErr_Occurred()) PyErr_NoMemory();
            return rc;
        }
        if (err < 0) {
            Py_DECREF(data);
            return -1;
        }
    }
    PyObject *r = PyObject_Vectorcall(fn, args + 1, nargs | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
    Py_DECREF(data);
    if (!r) {
        if (PyErr_ExceptionMatches(PyExc_Exception)) { /* the parser would raise: Python's path words it */
            PyErr_Clear();
            return 0;
        }
        return -1;
    }
    if (PyUnicode_CheckExact(r)) {
        rc = ob_put_str(o, r);
    } else if (PyTuple_CheckExact(r) && PyTuple_GET_SIZE(r) == 1) {
        rc = dec_value(o, PyTuple_GET_ITEM(r, 0), dec);
    } else {
        rc = 0; /* not the protocol: Python's path */
    }
    Py_DECREF(r);
    if (rc < 0 && !PyErr_Occurred()) PyErr_NoMemory();
    return rc;
}

/* json_text(value, encode, default) -> bytes | None: jv_put's text of one value (None where it declines), for the
 * tests that hold it against the Python encoder. */
static PyObject *json_text(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *v, *encode, *fallback;
    if (!PyArg_ParseTuple(args, "OOO", &v, &encode, &fallback)) return NULL;
    recdec dec = {NULL, NULL, encode, fallback, NULL, NULL, 0, NULL, NULL};
    outbuf o = {NULL, 0, 0, NULL};
    int rc = jv_put(&o, v, &dec, 0);
    PyObject *out = NULL;
    if (rc == 1)
        out = PyBytes_FromStringAndSize(o.data ? o.data : "", (Py_ssize_t)o.len);
    else if (rc == 0)
        out = Py_NewRef(Py_None);
    else if (!PyErr_Occurred())
        PyErr_NoMemory();
    PyMem_Free(o.data);
    return out;
}
