/* kafkalog_cli/accel/export_records.c: export_ndjson and export_columns, the record walks of kafkalog export.
 * Part of the one translation unit kafkalog_cli/_accel.c (included there after format_json.c, whose ob_json_str and
 * ob_b64 it uses; never compiled alone; see its head).
 *
 * Why (issue 31 item 4): the export's Python path decoded each record into a Python object and ran json.dumps on a
 * dict per record, 0.01-0.02 M records/s, against a compiled deep dump at several M records/s. These two walk one v2
 * batch's records (an uncompressed batch's bytes after its header, or a decompressed payload) with the one record
 * decoder (record.h) and write:
 *   - export_ndjson: the lines of kafkalog_cli/render/export_ndjson.py, byte for byte what
 *     json.dumps(record_object(...), ensure_ascii=False, separators=(",", ":")) + "\n" prints; the batch-constant
 *     parts of each line come from Python as five pieces (p1 offset p2 ts p3 [headers] key payload [encodings] p4
 *     sequence p5);
 *   - export_columns (accel/export_columns.c): the per-record columns of kafkalog_cli/render/export_parquet.py.
 * Both select the records as kafkalog_cli/ops/export.py:Selection does (offset >= lo, start <= ts <= end, at most
 * `limit`; INT64 bounds / -1 mean none). Both decline (None / -1, nothing appended) where the Python reference might
 * differ: a record rec_next rejects, more than MAX_HEADERS_INLINE headers, offset or timestamp arithmetic that
 * overflows int64, and (columns) a header key that is not strict UTF-8 or column data past int32 offsets.
 */

/* the text of one byte string as export_ndjson writes it: a JSON string (strict UTF-8) or base64 in quotes;
 * returns 1 when base64 was used. Reserved by the caller: json_need(n). */
REC_INLINE int ex_put_bytes(outbuf *o, const uint8_t *s, Py_ssize_t n) {
    if (utf8_valid(s, n)) {
        ob_json_str(o, s, n);
        return 0;
    }
    ob_b64(o, s, n);
    return 1;
}

typedef struct {
    const char *p[5];
    Py_ssize_t n[5];
} expieces;

/* selection and the batch's arithmetic: 1 take, 0 skip, -1 decline */
REC_INLINE int ex_select(const dumpctx *c, const v2rec *r, int64_t lo, int64_t t_lo, int64_t t_hi, int64_t *offset,
                         int64_t *ts) {
    if (__builtin_add_overflow(c->base_offset, (int64_t)r->off_delta, offset)) return -1;
    if (c->log_append)
        *ts = c->max_ts;
    else if (__builtin_add_overflow(c->base_ts, r->ts_delta, ts))
        return -1;
    if (*offset < lo || *ts < t_lo || *ts > t_hi) return 0;
    return 1;
}

/* the next record of a batch's walk into d, and whether to write it: 1 take, 0 skip (not selected, or `limit`
 * records taken already), -1 decline (a record rec_next rejects, an overflow) */
REC_INLINE int ex_next(const uint8_t *b, Py_ssize_t *pos, Py_ssize_t end, int last_rec, const dumpctx *c, int64_t lo,
                       int64_t t_lo, int64_t t_hi, int64_t limit, Py_ssize_t taken, dumprec *d, int64_t *offset,
                       int64_t *ts) {
    if (rec_next_call(b, pos, end, last_rec, &d->r, d->hdrs, MAX_HEADERS_INLINE) != REC_OK) return -1;
    int sel = ex_select(c, &d->r, lo, t_lo, t_hi, offset, ts);
    if (sel <= 0) return sel;
    return limit >= 0 && taken >= limit ? 0 : 1;
}

/*
 * export_ndjson(buf, start, end, count, base_offset, base_ts, max_ts, log_append, base_seq,
 *               (p1, p2, p3, p4, p5), lo_offset, start_ms, end_ms, limit)
 * -> (bytes, records) | None. limit < 0: no limit. Declines as the head of this file says.
 */
/* the lines of one batch's selected records (export_ndjson's layout, p1 offset p2 ts p3 [headers] key payload
 * [encodings] p4 sequence p5) appended to o; *taken_out: how many. 0 ok, -1 decline (o's length is restored by the
 * caller), -2 no memory. */
static int ex_ndjson_records(outbuf *o_, const uint8_t *b, Py_ssize_t start, Py_ssize_t end, Py_ssize_t count,
                             const dumpctx *cp, const expieces *pcp, int64_t lo, int64_t t_lo, int64_t t_hi,
                             int64_t limit, int32_t base_seq, Py_ssize_t *taken_out) {
    const dumpctx c = *cp;
    const expieces pc = *pcp;
    size_t fixed = 80;
    for (int i = 0; i < 5; i++) fixed += (size_t)pc.n[i];
    Py_ssize_t taken = 0;
#define o (*o_)
    Py_ssize_t pos = start;
    for (Py_ssize_t i = 0; i < count; i++) {
        dumprec d;
        v2rec *r = &d.r;
        int64_t offset, ts;
        int sel = ex_next(b, &pos, end, i == count - 1, &c, lo, t_lo, t_hi, limit, taken, &d, &offset, &ts);
        if (sel < 0) return -1;
        if (!sel) continue;
        size_t need = fixed + (r->klen > 0 ? json_need(r->klen) : 8) + (r->vlen > 0 ? json_need(r->vlen) : 8);
        for (int32_t h = 0; h < r->nh; h++)
            need += json_need(d.hdrs[h].klen) + (d.hdrs[h].vlen > 0 ? json_need(d.hdrs[h].vlen) : 8) + 24;
        if (ob_reserve(&o, need) < 0) return -2;
        ob_put(&o, pc.p[0], (size_t)pc.n[0]);
        ob_int(&o, offset);
        ob_put(&o, pc.p[1], (size_t)pc.n[1]);
        ob_int(&o, ts);
        ob_put(&o, pc.p[2], (size_t)pc.n[2]);
        uint64_t hb64 = 0; /* bit 2h: header h's key is base64, bit 2h+1 its value (nh <= 64: two words) */
        uint64_t hb64b = 0;
        if (r->nh > 0) {
            PUTLIT(&o, ",\"headers\":[");
            for (int32_t h = 0; h < r->nh; h++) {
                const v2rechdr *hd = &d.hdrs[h];
                if (h) PUTLIT(&o, ",");
                int kb = ex_put_bytes(&o, b + hd->kpos, hd->klen);
                PUTLIT(&o, ",");
                int vb = 0;
                if (hd->vlen >= 0)
                    vb = ex_put_bytes(&o, b + hd->vpos, hd->vlen);
                else
                    PUTLIT(&o, "null");
                int bit = 2 * h;
                if (bit < 64) {
                    hb64 |= (uint64_t)kb << bit | (uint64_t)vb << (bit + 1);
                } else {
                    hb64b |= (uint64_t)kb << (bit - 64) | (uint64_t)vb << (bit - 63);
                }
            }
            PUTLIT(&o, "]");
        }
        int kb = 0, vb = 0;
        PUTLIT(&o, ",\"key\":");
        if (r->klen >= 0)
            kb = ex_put_bytes(&o, b + r->kpos, r->klen);
        else
            PUTLIT(&o, "null");
        PUTLIT(&o, ",\"payload\":");
        if (r->vlen >= 0)
            vb = ex_put_bytes(&o, b + r->vpos, r->vlen);
        else
            PUTLIT(&o, "null");
        if (kb) PUTLIT(&o, ",\"key_encoding\":\"base64\"");
        if (vb) PUTLIT(&o, ",\"payload_encoding\":\"base64\"");
        if (hb64 | hb64b) {
            PUTLIT(&o, ",\"header_encodings\":[");
            for (int32_t e = 0; e < 2 * r->nh; e++) {
                int is64 = e < 64 ? (int)((hb64 >> e) & 1) : (int)((hb64b >> (e - 64)) & 1);
                if (e) PUTLIT(&o, ",");
                if (is64)
                    PUTLIT(&o, "\"base64\"");
                else
                    PUTLIT(&o, "\"utf8\"");
            }
            PUTLIT(&o, "]");
        }
        ob_put(&o, pc.p[3], (size_t)pc.n[3]);
        ob_int(&o, base_seq >= 0 ? increment_sequence(base_seq, r->off_delta) : -1);
        ob_put(&o, pc.p[4], (size_t)pc.n[4]);
        taken++;
    }
#undef o
    *taken_out = taken;
    return 0;
}

static PyObject *export_ndjson(PyObject *self, PyObject *args) {
    Py_buffer view;
    Py_ssize_t start, end, count;
    long long base_offset, base_ts, max_ts, lo, t_lo, t_hi, limit;
    int log_append, base_seq;
    expieces pc;
    if (!PyArg_ParseTuple(args, "y*nnnLLLpi(y#y#y#y#y#)LLLL", &view, &start, &end, &count, &base_offset, &base_ts,
                          &max_ts, &log_append, &base_seq, &pc.p[0], &pc.n[0], &pc.p[1], &pc.n[1], &pc.p[2], &pc.n[2],
                          &pc.p[3], &pc.n[3], &pc.p[4], &pc.n[4], &lo, &t_lo, &t_hi, &limit))
        return NULL;
    const uint8_t *b = (const uint8_t *)view.buf;
    static outbuf keep = {NULL, 0, 0};
    outbuf o = ob_take(&keep);
    dumpctx c = {base_offset, base_ts, max_ts, log_append, 1, 0, base_seq, NULL, NULL};
    Py_ssize_t taken = 0;
    if (start < 0 || start > end || end > view.len || count < 0) goto fallback;
    {
        int rc = ex_ndjson_records(&o, b, start, end, count, &c, &pc, lo, t_lo, t_hi, limit, base_seq, &taken);
        if (rc == -1) goto fallback;
        if (rc == -2) goto nomem;
    }
    {
        PyObject *text = PyBytes_FromStringAndSize(o.data ? o.data : "", (Py_ssize_t)o.len);
        ob_release(&o, &keep);
        PyBuffer_Release(&view);
        if (!text) return NULL;
        return Py_BuildValue("(Nn)", text, taken);
    }
nomem:
    ob_release(&o, &keep);
    PyBuffer_Release(&view);
    return PyErr_NoMemory();
fallback:
    ob_release(&o, &keep);
    PyBuffer_Release(&view);
    Py_RETURN_NONE;
}

/*
 * export_ndjson_run(buf, pos, end, max_out, next_offset, max_batch_size, (head, create, logappend, broker), file_json)
 *   -> (text: bytearray, used: int, next_pos, batches, records, first_offset, last_taken, last_offset)
 * The lines of a run of consecutive v2 batches from `pos`, each formatted as export_ndjson formats it with the pieces
 * render/export_ndjson.py:line_pieces builds (head = p1, create/logappend = p2, broker = p3; p4 and p5 from the batch
 * header and file_json here), in one call: issue 31 item 4 (the Python per batch was a fifth of an NDJSON export).
 * It takes only batches ops/export.py:Exporter._file would hand to the sink whole and unchanged, with the same
 * checks as _entries' compiled walk (scan_v2): >= 61 bytes, magic 2, size within `end` and within
 * [V2_MIN_BATCH_LENGTH, max_batch_size], CRC-32C valid, base offset >= next_offset (no duplicate offsets, no
 * partial batch), last offset delta and record count >= 0, and not compressed, transactional or control (those go
 * through Python: decompression, the transaction view, per-record control types). It stops before the first batch
 * it does not take, or once the text reaches max_out; a batch whose records decline is rolled back. `used` = the
 * text's length; `batches` counts batches with records, `last_taken` the last offset of the last of them (-1: none),
 * `first_offset` the base offset of the first (-1: none), `last_offset` the last offset of the last batch walked
 * (INT64_MIN: none).
 */
static PyObject *export_ndjson_run(PyObject *self, PyObject *args) {
    Py_buffer view;
    long long pos, end, max_out, next_offset, max_batch;
    expieces pc;
    const char *head, *tcreate, *tappend, *broker, *file_json;
    Py_ssize_t head_n, tcreate_n, tappend_n, broker_n, fj_n;
    if (!PyArg_ParseTuple(args, "y*LLLLL(y#y#y#y#)y#", &view, &pos, &end, &max_out, &next_offset, &max_batch, &head,
                          &head_n, &tcreate, &tcreate_n, &tappend, &tappend_n, &broker, &broker_n, &file_json, &fj_n))
        return NULL;
    const uint8_t *b = (const uint8_t *)view.buf;
    if (end > view.len) end = view.len;
    if (pos < 0) pos = end;
    outbuf o = {NULL, 0, 0, NULL};
    char *p4 = NULL, *p5 = NULL;
    long long batches = 0, records = 0, first = -1, last_taken = -1, last = INT64_MIN;
    o.ba = run_buffer((Py_ssize_t)(max_out > 0 ? max_out : 0) + (64 << 10));
    if (!o.ba) goto error;
    o.data = PyByteArray_AS_STRING(o.ba);
    o.cap = (size_t)PyByteArray_GET_SIZE(o.ba);
    p4 = PyMem_Malloc(160);
    p5 = PyMem_Malloc((size_t)fj_n + 320);
    if (!p4 || !p5) {
        PyErr_NoMemory();
        goto error;
    }
    while (end - pos >= V2_HEADER_SIZE && (long long)o.len < max_out) {
        const uint8_t *p = b + pos;
        int32_t length = be32(p + V2_BATCH_LENGTH_OFFSET);
        if (p[V2_MAGIC_OFFSET] != 2 || length < V2_MIN_BATCH_LENGTH || length > max_batch ||
            pos + LOG_OVERHEAD + (long long)length > end)
            break;
        v2hdr h;
        read_v2(p, &h);
        int attributes = h.attributes & 0xFF;
        if ((attributes & 0x37) != 0) break; /* compressed, transactional or control: Python */
        if (h.base_offset < 0 || h.base_offset < next_offset || h.last_offset_delta < 0 || h.records_count < 0) break;
        int64_t last_offset;
        if (__builtin_add_overflow(h.base_offset, (int64_t)h.last_offset_delta, &last_offset)) break;
        if (crc32c_of(p + V2_ATTRIBUTES_OFFSET, (size_t)length + LOG_OVERHEAD - V2_ATTRIBUTES_OFFSET) != h.crc) break;
        int log_append = (attributes & 0x08) != 0;
        pc.p[0] = head;
        pc.n[0] = head_n;
        pc.p[1] = log_append ? tappend : tcreate;
        pc.n[1] = log_append ? tappend_n : tcreate_n;
        pc.p[2] = broker;
        pc.n[2] = broker_n;
        pc.n[3] = snprintf(p4, 160, ",\"leader_epoch\":%d,\"producer_id\":%lld,\"producer_epoch\":%d,\"sequence\":",
                           (int)h.epoch, (long long)h.producer_id, (int)h.producer_epoch);
        pc.p[3] = p4;
        int k = snprintf(p5, 320, ",\"transactional\":false,\"txn\":null,\"control\":null,\"magic\":2,"
                                  "\"codec\":\"none\",\"batch_base_offset\":%lld,\"source\":{\"file\":",
                         (long long)h.base_offset);
        memcpy(p5 + k, file_json, (size_t)fj_n);
        k += (int)fj_n;
        k += snprintf(p5 + k, 64, ",\"position\":%lld}}\n", pos);
        pc.p[4] = p5;
        pc.n[4] = k;
        dumpctx c = {h.base_offset, h.base_ts, h.max_ts, log_append, 1, 0, h.base_sequence, NULL, NULL};
        size_t mark = o.len;
        Py_ssize_t taken = 0;
        int rc = ex_ndjson_records(&o, b, (Py_ssize_t)pos + V2_HEADER_SIZE, (Py_ssize_t)(pos + LOG_OVERHEAD + length),
                                   h.records_count, &c, &pc, INT64_MIN, INT64_MIN, INT64_MAX, -1, h.base_sequence,
                                   &taken);
        if (rc == -2) {
            PyErr_NoMemory();
            goto error;
        }
        if (rc == -1) { /* declined: Python re-does the batch (and reports what is wrong) */
            o.len = mark;
            break;
        }
        if (taken) {
            batches++;
            records += taken;
            if (first < 0) first = h.base_offset;
            last_taken = last_offset;
        }
        last = last_offset;
        next_offset = last_offset + 1;
        pos += LOG_OVERHEAD + length;
    }
    PyMem_Free(p4);
    PyMem_Free(p5);
    PyBuffer_Release(&view);
    return Py_BuildValue("(NnLLLLLL)", o.ba, (Py_ssize_t)o.len, pos, batches, records, first, last_taken, last);
error:
    PyMem_Free(p4);
    PyMem_Free(p5);
    Py_XDECREF(o.ba);
    PyBuffer_Release(&view);
    return NULL;
}
