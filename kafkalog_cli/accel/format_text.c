/* kafkalog_cli/accel/format_text.c: dump_batch: one v2 batch's DumpLogSegments text (batch line and record lines).
 * Part of the one translation unit kafkalog_cli/_accel.c (included there, never compiled alone; see its head). */
#define MAX_HEADERS_INLINE 64

/* One record of a dump, text or JSON (put_records, put_json_records): record.h's rec_next plus the rules the two
 * dumps share on top of it (record.h's head lists them): at most MAX_HEADERS_INLINE headers (their per-record
 * arrays, d->hdrs), baseOffset + offsetDelta and baseTimestamp + timestampDelta without int64 overflow, and with print_data a
 * strictly UTF-8 key and value. No side effects: 1 with d filled (the record's offset, timestamp and sequence), or 0
 * to decline. */
typedef struct {
    v2rec r;
    int64_t offset, ts;
    int32_t seq;
    v2rechdr hdrs[MAX_HEADERS_INLINE];
} dumprec;

/* What a dump knows of the batch whose records it formats, and the run's offset-gap state. */
typedef struct {
    int64_t base_offset, base_ts, max_ts;
    int log_append, print_data, java_gaps;
    int32_t base_seq;
    long long *last;
    PyObject *gaps;
    const recdec *dec; /* the text dump's key/value decoders (json_value.c), or NULL: the bytes as UTF-8 text */
} dumpctx;

REC_INLINE int dump_rec_next(const uint8_t *b, Py_ssize_t *pos, Py_ssize_t end, int last_rec, const dumpctx *c,
                             dumprec *d) {
    v2rec *r = &d->r;
    if (rec_next_call(b, pos, end, last_rec, r, d->hdrs, MAX_HEADERS_INLINE) != REC_OK) return 0;
    if (__builtin_add_overflow(c->base_offset, (int64_t)r->off_delta, &d->offset)) return 0;
    if (c->log_append)
        d->ts = c->max_ts;
    else if (__builtin_add_overflow(c->base_ts, r->ts_delta, &d->ts))
        return 0;
    if (c->print_data) { /* a part a decoder prints need not be text */
        if (r->klen >= 0 && !(c->dec && c->dec->key != Py_None) && !utf8_valid(b + r->kpos, r->klen)) return 0;
        if (r->vlen >= 0 && !(c->dec && c->dec->value != Py_None) && !utf8_valid(b + r->vpos, r->vlen)) return 0;
    }
    d->seq = c->base_seq >= 0 ? increment_sequence(c->base_seq, r->off_delta) : -1;
    return 1;
}

/* The dumps' non-consecutive offset tracker (Scala: the first record is not checked; Java port: every record):
 * appends (last, offset) to gaps where offset does not follow *last, then *last = offset. -1 on a Python error. */
REC_INLINE int dump_track_gap(int64_t offset, long long *last, int java_gaps, PyObject *gaps) {
    if ((java_gaps || *last != -1) && offset != (int64_t)((uint64_t)*last + 1u)) { /* Java long arithmetic wraps */
        PyObject *pair = Py_BuildValue("(LL)", (long long)*last, (long long)offset);
        if (!pair || PyList_Append(gaps, pair) < 0) {
            Py_XDECREF(pair);
            return -1;
        }
        Py_DECREF(pair);
    }
    *last = offset;
    return 0;
}

/* A dump's record formatter: checks its own rules on d (decline: 0), tracks the gap (dump_track_gap), appends the
 * record to o; 1, 0 or -1 (a Python error). fmt: the formatter's own arguments. */
typedef int (*dump_emit_fn)(outbuf *o, const uint8_t *b, const dumprec *d, const dumpctx *c, const void *fmt);

/* The record loop of both dumps: dump_rec_next, then `emit` per record. 1: all formatted, 0: decline, -1: error. */
REC_INLINE int dump_records(outbuf *o, const uint8_t *b, Py_ssize_t start, Py_ssize_t end, Py_ssize_t count,
                            const dumpctx *c, dump_emit_fn emit, const void *fmt) {
    if (start < 0 || start > end || count < 0) return 0;
    Py_ssize_t pos = start;
    for (Py_ssize_t i = 0; i < count; i++) {
        dumprec d;
        if (!dump_rec_next(b, &pos, end, i == count - 1, c, &d)) return 0;
        int rc = emit(o, b, &d, c, fmt);
        if (rc != 1) return rc;
    }
    return 1;
}


typedef struct {
    const char *label;
    Py_ssize_t label_len;
} textfmt;

/* One record line (DumpLogSegments' compact 3.0+ form); a dump_emit_fn. Declines on a header key that is not strict
 * UTF-8. With c->dec, a key or value with a decoder is what its callable makes of it (json_value.c's dec_emit). */
REC_INLINE int text_record(outbuf *o, const uint8_t *b, const dumprec *d, const dumpctx *c, const void *fmt) {
    const textfmt *t = (const textfmt *)fmt;
    int32_t klen = d->r.klen, vlen = d->r.vlen, nh = d->r.nh;
    Py_ssize_t kpos = d->r.kpos, vpos = d->r.vpos;
    for (int32_t h = 0; h < nh; h++)
        if (!utf8_valid(b + d->hdrs[h].kpos, d->hdrs[h].klen)) return 0;
    if (dump_track_gap(d->offset, c->last, c->java_gaps, c->gaps) < 0) return -1;
    int64_t offset = d->offset, ts = d->ts;
    int32_t seq = d->seq;
    const recdec *dec = c->print_data ? c->dec : NULL;
    PyObject *kfn = dec && dec->key != Py_None ? dec->key : NULL, *vfn = dec && dec->value != Py_None ? dec->value : NULL;
    size_t need = 200 + (size_t)t->label_len + (c->print_data ? (size_t)(klen > 0 && !kfn ? klen : 0) + (size_t)(vlen > 0 && !vfn ? vlen : 0) : 0);
    for (int32_t h = 0; h < nh; h++) need += (size_t)d->hdrs[h].klen + 1;
    if (ob_reserve(o, need) < 0) {
        PyErr_NoMemory();
        return -1;
    }
    PUTLIT(o, "| offset: ");
    ob_int(o, offset);
    PUTLIT(o, " ");
    ob_put(o, t->label, (size_t)t->label_len);
    PUTLIT(o, ": ");
    ob_int(o, ts);
    PUTLIT(o, " keySize: ");
    ob_int(o, klen >= 0 ? klen : -1);
    PUTLIT(o, " valueSize: ");
    ob_int(o, vlen >= 0 ? vlen : -1);
    PUTLIT(o, " sequence: ");
    ob_int(o, seq);
    PUTLIT(o, " headerKeys: [");
    for (int32_t h = 0; h < nh; h++) {
        if (h) PUTLIT(o, ",");
        ob_put(o, (const char *)b + d->hdrs[h].kpos, (size_t)d->hdrs[h].klen);
    }
    PUTLIT(o, "]");
    if (c->print_data) {
        if (kfn || vfn) { /* the decoded parts: their callables, the rest as above (reserved again after each call) */
            PyObject *headers = NULL;
            int rc = 1;
            if (klen >= 0) {
                PUTLIT(o, " key: ");
                if (kfn)
                    rc = dec_emit(o, kfn, dec->kknown, dec, b, kpos, klen, d->hdrs, nh, &headers);
                else
                    ob_put(o, (const char *)b + kpos, (size_t)klen);
            }
            if (rc == 1 && vlen >= 0) {
                if (ob_reserve(o, 16 + (size_t)(vfn ? 0 : vlen)) < 0) {
                    PyErr_NoMemory();
                    rc = -1;
                } else {
                    PUTLIT(o, " payload: ");
                    if (vfn)
                        rc = dec_emit(o, vfn, dec->vknown, dec, b, vpos, vlen, d->hdrs, nh, &headers);
                    else
                        ob_put(o, (const char *)b + vpos, (size_t)vlen);
                }
            }
            Py_XDECREF(headers);
            if (rc != 1) return rc;
            if (ob_reserve(o, 1) < 0) {
                PyErr_NoMemory();
                return -1;
            }
        } else {
            if (klen >= 0) {
                PUTLIT(o, " key: ");
                ob_put(o, (const char *)b + kpos, (size_t)klen);
            }
            if (vlen >= 0) {
                PUTLIT(o, " payload: ");
                ob_put(o, (const char *)b + vpos, (size_t)vlen);
            }
        }
    }
    PUTLIT(o, "\n");
    return 1;
}

/* Append the record lines of one batch to `o`. Returns 1 on success, 0 to fall back, -1 on a Python error. */
static int put_records(outbuf *o, const uint8_t *b, Py_ssize_t start, Py_ssize_t end, Py_ssize_t count,
                       int64_t base_offset, int64_t base_ts, int64_t max_ts, int log_append, int32_t base_seq,
                       const char *label, Py_ssize_t label_len, int print_data, long long *last, int java_gaps,
                       PyObject *gaps, const recdec *dec) {
    dumpctx c = {base_offset, base_ts, max_ts, log_append, print_data, java_gaps, base_seq, last, gaps, dec};
    textfmt t = {label, label_len};
    return dump_records(o, b, start, end, count, &c, text_record, &t);
}

static inline void ob_bool(outbuf *o, int v) {
    if (v)
        PUTLIT(o, "true");
    else
        PUTLIT(o, "false");
}

/* DumpLogSegments' 2.2+ batch line (deleteHorizonMs when print_horizon), newline-terminated; the caller reserved
 * 600 + label_len + codec_len bytes. Shared by dump_batch and dump_run (one batch / a run of batches). */
static void put_batch_line(outbuf *o, int64_t position, int64_t size, int64_t base_offset, int64_t last_offset,
                           int32_t count, int32_t base_seq, int32_t last_seq, int64_t producer_id, int producer_epoch,
                           int ple, int attributes, int64_t base_ts, int64_t max_ts, int magic, int64_t crc, int valid,
                           const char *label, Py_ssize_t label_len, const char *codec, Py_ssize_t codec_len,
                           int print_horizon) {
    PUTLIT(o, "baseOffset: ");
    ob_int(o, base_offset);
    PUTLIT(o, " lastOffset: ");
    ob_int(o, last_offset);
    PUTLIT(o, " count: ");
    ob_int(o, count);
    PUTLIT(o, " baseSequence: ");
    ob_int(o, base_seq);
    PUTLIT(o, " lastSequence: ");
    ob_int(o, last_seq);
    PUTLIT(o, " producerId: ");
    ob_int(o, producer_id);
    PUTLIT(o, " producerEpoch: ");
    ob_int(o, producer_epoch);
    PUTLIT(o, " partitionLeaderEpoch: ");
    ob_int(o, ple);
    PUTLIT(o, " isTransactional: ");
    ob_bool(o, attributes & 0x10);
    PUTLIT(o, " isControl: ");
    ob_bool(o, attributes & 0x20);
    if (print_horizon) {
        if (attributes & 0x40) {
            PUTLIT(o, " deleteHorizonMs: OptionalLong[");
            ob_int(o, base_ts);
            PUTLIT(o, "]");
        } else {
            PUTLIT(o, " deleteHorizonMs: OptionalLong.empty");
        }
    }
    PUTLIT(o, " position: ");
    ob_int(o, position);
    PUTLIT(o, " ");
    ob_put(o, label, (size_t)label_len);
    PUTLIT(o, ": ");
    ob_int(o, max_ts);
    PUTLIT(o, " size: ");
    ob_int(o, size);
    PUTLIT(o, " magic: ");
    ob_int(o, magic);
    PUTLIT(o, " compresscodec: ");
    ob_put(o, codec, (size_t)codec_len);
    PUTLIT(o, " crc: ");
    ob_int(o, crc);
    PUTLIT(o, " isvalid: ");
    ob_bool(o, valid);
    PUTLIT(o, "\n");
}

/* The `decoders` argument of dump_batch / dump_run: None (NULL out) or (key, value, encode, default, known_len), key
 * and value each None or (callable, known dict or None) (json_value.c's recdec). 0, or -1 with a TypeError. */
static int parse_side(PyObject *side, PyObject **fn, PyObject **known) {
    *fn = Py_None;
    *known = NULL;
    if (side == Py_None) return 0;
    if (!PyTuple_Check(side) || PyTuple_GET_SIZE(side) != 2 || !PyCallable_Check(PyTuple_GET_ITEM(side, 0)) ||
        (PyTuple_GET_ITEM(side, 1) != Py_None && !PyDict_CheckExact(PyTuple_GET_ITEM(side, 1)))) {
        PyErr_SetString(PyExc_TypeError, "decoders: key and value must be None or (callable, dict or None)");
        return -1;
    }
    *fn = PyTuple_GET_ITEM(side, 0);
    if (PyTuple_GET_ITEM(side, 1) != Py_None) *known = PyTuple_GET_ITEM(side, 1);
    return 0;
}

static int parse_decoders(PyObject *arg, recdec *out, const recdec **res, knowncache caches[2]) {
    *res = NULL;
    memset(caches, 0, 2 * sizeof(knowncache));
    out->kcache = &caches[0];
    out->vcache = &caches[1];
    if (arg == NULL || arg == Py_None) return 0;
    if (!PyTuple_Check(arg) || PyTuple_GET_SIZE(arg) != 5 || !PyCallable_Check(PyTuple_GET_ITEM(arg, 2))) {
        PyErr_SetString(PyExc_TypeError, "decoders must be None or (key, value, encode, default, known_len)");
        return -1;
    }
    if (parse_side(PyTuple_GET_ITEM(arg, 0), &out->key, &out->kknown) < 0 ||
        parse_side(PyTuple_GET_ITEM(arg, 1), &out->value, &out->vknown) < 0)
        return -1;
    out->encode = PyTuple_GET_ITEM(arg, 2);
    out->fallback = PyTuple_GET_ITEM(arg, 3);
    out->known_len = PyLong_AsSsize_t(PyTuple_GET_ITEM(arg, 4));
    if (out->known_len == -1 && PyErr_Occurred()) return -1;
    if (out->known_len < 0) out->known_len = 0;
    if (out->key != Py_None || out->value != Py_None) *res = out;
    return 0;
}

/*
 * dump_batch(buf, start, end, hdr, label, codec_name, print_horizon, deep, print_data, last, java_gaps)
 *   hdr = (position, size, base_offset, last_offset_delta, count, base_seq, producer_id, producer_epoch,
 *          partition_leader_epoch, attributes, base_ts, max_ts, magic, crc, valid)
 * [, as_bytes[, decoders]] -> (text, last, gaps) | None (decoders: parse_decoders); text is str, or the UTF-8 bytes with as_bytes (written to stdout as
 * they are). The batch line is DumpLogSegments' 2.2+ form (with deleteHorizonMs when
 * print_horizon); with `deep` the record lines follow (compact 3.0+ form).
 */
static PyObject *dump_batch(PyObject *self, PyObject *args) {
    Py_buffer view;
    Py_ssize_t start, end;
    long long position, size, base_offset, producer_id, base_ts, max_ts, crc, last;
    int last_offset_delta, count, base_seq, producer_epoch, ple, attributes, magic, valid;
    const char *label, *codec;
    Py_ssize_t label_len, codec_len;
    int print_horizon, deep, print_data, java_gaps, as_bytes = 0;
    PyObject *decoders = NULL;
    recdec decs;
    knowncache caches[2];
    const recdec *dec;
    if (!PyArg_ParseTuple(args, "y*nn(LLLiiiLiiiLLiLp)y#y#pppLp|pO", &view, &start, &end, &position, &size, &base_offset,
                          &last_offset_delta, &count, &base_seq, &producer_id, &producer_epoch, &ple, &attributes,
                          &base_ts, &max_ts, &magic, &crc, &valid, &label, &label_len, &codec, &codec_len,
                          &print_horizon, &deep, &print_data, &last, &java_gaps, &as_bytes, &decoders))
        return NULL;
    if (parse_decoders(decoders, &decs, &dec, caches) < 0) {
        PyBuffer_Release(&view);
        return NULL;
    }
    const uint8_t *b = (const uint8_t *)view.buf;
    static outbuf keep = {NULL, 0, 0};
    outbuf o = ob_take(&keep);
    PyObject *gaps = PyList_New(0);
    if (!gaps) goto error;
    if (end > view.len) goto fallback;
    /* the record lines take about the batch's bytes plus ~150 per record: one allocation, not a realloc chain */
    size_t guess = 600 + (size_t)label_len + (size_t)codec_len;
    if (deep && end > start && count > 0 && count < (1 << 24))
        guess += (size_t)(end - start) + (size_t)count * (160 + (size_t)label_len);
    if (ob_reserve(&o, guess) < 0) goto nomem;
    int64_t last_offset;
    if (__builtin_add_overflow((int64_t)base_offset, (int64_t)last_offset_delta, &last_offset)) goto fallback;
    put_batch_line(&o, position, size, base_offset, last_offset, count, base_seq,
                   base_seq == -1 ? -1 : increment_sequence(base_seq, last_offset_delta), producer_id, producer_epoch,
                   ple, attributes, base_ts, max_ts, magic, crc, valid, label, label_len, codec, codec_len,
                   print_horizon);
    if (deep) {
        int r = put_records(&o, b, start, end, count, base_offset, base_ts, max_ts, (attributes & 0x08) != 0, base_seq,
                            label, label_len, print_data, &last, java_gaps, gaps, dec);
        if (r < 0) goto error;
        if (r == 0) goto fallback;
    }
    {
        /* as_bytes: the UTF-8 bytes as they go to stdout (every key, value and header key was checked to be strictly
         * valid UTF-8 above, so decoding and re-encoding them would only cost two copies of the whole text) */
        PyObject *text = as_bytes ? PyBytes_FromStringAndSize(o.data, (Py_ssize_t)o.len)
                                  : PyUnicode_DecodeUTF8(o.data, (Py_ssize_t)o.len, "strict");
        if (!text) goto error;
        ob_release(&o, &keep);
        PyBuffer_Release(&view);
        return Py_BuildValue("(NLN)", text, last, gaps);
    }
nomem:
    PyErr_NoMemory();
error:
    ob_release(&o, &keep);
    Py_XDECREF(gaps);
    PyBuffer_Release(&view);
    return NULL;
fallback:
    ob_release(&o, &keep);
    Py_XDECREF(gaps);
    PyBuffer_Release(&view);
    Py_RETURN_NONE;
}
