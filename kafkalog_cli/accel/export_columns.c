/* kafkalog_cli/accel/export_columns.c: the Arrow column buffers of kafkalog export --format parquet
 * (kafkalog_cli/render/export_parquet.py): export_columns (one v2 batch), export_columns_run (a run of plain v2
 * batches, their batch fields included) and export_codes / export_valid (per-row dictionary indices and validity
 * bitmaps at a row group's end). Part of the one translation unit kafkalog_cli/_accel.c (included there after
 * export_records.c, whose ex_next it uses; never compiled alone; see its head).
 *
 * Why (issue 31 item 4, bench/HISTORY.md "Issue 31: Parquet export"): per batch, the Python between two
 * export_columns calls (the walk's Entry, BatchItem, the sink's tuple of batch fields) cost about as much as the
 * C walk of the batch's 100 records; pyarrow's writer then spent a third of its time materialising and re-hashing
 * the batch columns, whose dictionaries (one entry per batch, repeated values) changed with every row group. The
 * run takes whole runs of plain batches in one call, and the batch columns' dictionaries are now the distinct
 * values of the export (stable: pyarrow writes the indices as they are), which export_codes expands per row.
 */

/* a bytearray used as a growable buffer during one call: its size is the capacity, `p` the cursor; cut to the
 * cursor (or back to len0 on a decline) when the call ends */
typedef struct {
    PyObject *ba;
    Py_ssize_t len0; /* its size before the call */
    char *p;
} excol;

static inline void ex_put(excol *c, const void *s, Py_ssize_t n) {
    memcpy(c->p, s, (size_t)n);
    c->p += n;
}
static inline void ex_i16(excol *c, int16_t v) { ex_put(c, &v, 2); }
static inline void ex_i32(excol *c, int32_t v) { ex_put(c, &v, 4); }
static inline void ex_i64(excol *c, int64_t v) { ex_put(c, &v, 8); }
static inline Py_ssize_t ex_used(const excol *c) { return c->p - PyByteArray_AS_STRING(c->ba); }

/* room for `extra` more bytes after the cursor: the capacity doubles (a run appends a row group's worth) */
static int ex_reserve(excol *c, Py_ssize_t extra) {
    Py_ssize_t used = ex_used(c), size = PyByteArray_GET_SIZE(c->ba);
    if (used + extra <= size) return 0;
    Py_ssize_t ns = size < PY_SSIZE_T_MAX / 2 ? 2 * size : used + extra;
    if (ns < used + extra) ns = used + extra;
    if (ns < 4096) ns = 4096;
    if (PyByteArray_Resize(c->ba, ns) < 0) return -1;
    c->p = PyByteArray_AS_STRING(c->ba) + used;
    return 0;
}

/* the n bytearrays of a tuple into cols (cursors at their ends); -1 with an exception set */
static int ex_open(PyObject *outs, excol *cols, Py_ssize_t n) {
    if (!PyTuple_Check(outs) || PyTuple_GET_SIZE(outs) != n) {
        PyErr_Format(PyExc_ValueError, "expected a tuple of %zd bytearrays", n);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        cols[i].ba = PyTuple_GET_ITEM(outs, i);
        if (!PyByteArray_Check(cols[i].ba)) {
            PyErr_Format(PyExc_TypeError, "expected a tuple of %zd bytearrays", n);
            return -1;
        }
        cols[i].len0 = PyByteArray_GET_SIZE(cols[i].ba);
        cols[i].p = PyByteArray_AS_STRING(cols[i].ba) + cols[i].len0;
    }
    return 0;
}

/* every bytearray cut to its cursor (keep) or back to its size before the call; -1 with an exception set */
static int ex_close(excol *cols, Py_ssize_t n, int keep) {
    int rc = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t to = keep ? ex_used(&cols[i]) : cols[i].len0;
        if (PyByteArray_GET_SIZE(cols[i].ba) != to && PyByteArray_Resize(cols[i].ba, to) < 0) rc = -1;
    }
    return rc;
}

#define EX_COLS 15

/* room for one batch's records: count rows; the records' bytes for the data columns; a header takes at least two
 * bytes of the records */
static int ex_reserve_batch(excol *col, Py_ssize_t count, Py_ssize_t bytes) {
    Py_ssize_t maxh = bytes / 2;
    Py_ssize_t add[EX_COLS] = {8 * count, 8 * count, 4 * count, 4 * count, bytes, 4 * count, bytes, 4 * count, bytes,
                               4 * maxh, bytes, 4 * maxh, 4 * maxh, 4 * count, 4 * count};
    for (int i = 0; i < EX_COLS; i++)
        if (ex_reserve(&col[i], add[i]) < 0) return -1;
    return 0;
}

/* the selected records of one batch (records buffer b[start:end]) appended at the cursors of col (room reserved
 * by ex_reserve_batch); *taken_out: how many. 0 ok, -1 decline (a record rec_next rejects, a header key that is
 * not strict UTF-8, column data past int32 offsets: the caller moves the cursors back). The offsets columns hold
 * end offsets from the start of each bytearray (its len0 included: a row group's buffers are filled by several
 * calls). Touches no Python object: runs without the GIL. */
static int ex_columns_records(excol *col, const uint8_t *b, Py_ssize_t start, Py_ssize_t end, Py_ssize_t count,
                              const dumpctx *cp, int64_t lo, int64_t t_lo, int64_t t_hi, int64_t limit,
                              int32_t base_seq, Py_ssize_t *taken_out) {
    const dumpctx c = *cp;
    int64_t kbytes = col[4].p - PyByteArray_AS_STRING(col[4].ba), vbytes = col[6].p - PyByteArray_AS_STRING(col[6].ba);
    int64_t hkbytes = col[8].p - PyByteArray_AS_STRING(col[8].ba), hvbytes = col[10].p - PyByteArray_AS_STRING(col[10].ba);
    int64_t hcount = (col[9].p - PyByteArray_AS_STRING(col[9].ba)) / 4;
    Py_ssize_t pos = start, taken = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        dumprec d;
        v2rec *r = &d.r;
        int64_t offset, ts;
        int sel = ex_next(b, &pos, end, i == count - 1, &c, lo, t_lo, t_hi, limit, taken, &d, &offset, &ts);
        if (sel < 0) return -1;
        if (!sel) continue;
        taken++;
        int32_t kl = r->klen > 0 ? r->klen : 0, vl = r->vlen > 0 ? r->vlen : 0;
        kbytes += kl;
        vbytes += vl;
        ex_i64(&col[0], offset);
        ex_i64(&col[1], ts);
        ex_i32(&col[2], r->klen >= 0 ? r->klen : -1);
        ex_i32(&col[3], r->vlen >= 0 ? r->vlen : -1);
        if (kl) ex_put(&col[4], b + r->kpos, kl);
        if (vl) ex_put(&col[6], b + r->vpos, vl);
        for (int32_t h = 0; h < r->nh; h++) {
            const v2rechdr *hd = &d.hdrs[h];
            if (!utf8_valid(b + hd->kpos, hd->klen)) return -1;
            ex_put(&col[8], b + hd->kpos, hd->klen);
            hkbytes += hd->klen;
            if (hd->vlen > 0) {
                ex_put(&col[10], b + hd->vpos, hd->vlen);
                hvbytes += hd->vlen;
            }
            if (hkbytes > INT32_MAX || hvbytes > INT32_MAX) return -1;
            ex_i32(&col[9], (int32_t)hkbytes);
            ex_i32(&col[11], (int32_t)hvbytes);
            ex_i32(&col[12], hd->vlen >= 0 ? hd->vlen : -1);
        }
        hcount += r->nh;
        if (kbytes > INT32_MAX || vbytes > INT32_MAX || hcount > INT32_MAX) return -1;
        ex_i32(&col[5], (int32_t)kbytes);
        ex_i32(&col[7], (int32_t)vbytes);
        ex_i32(&col[13], (int32_t)hcount);
        ex_i32(&col[14], base_seq >= 0 ? increment_sequence(base_seq, r->off_delta) : -1);
    }
    *taken_out = taken;
    return 0;
}

/*
 * export_columns(buf, start, end, count, base_offset, base_ts, max_ts, log_append, base_seq,
 *                lo_offset, start_ms, end_ms, limit, outs) -> records appended, or -1 (declined: nothing appended)
 * outs: 15 bytearrays, native byte order (kafkalog_cli/render/export_parquet.py:ColumnBuffers):
 *   0 offset i64, 1 timestamp i64, 2 key_size i32, 3 value_size i32, 4 key bytes, 5 key end offsets i32,
 *   6 value bytes, 7 value end offsets i32, 8 header-key bytes, 9 header-key end offsets i32, 10 header-value bytes,
 *   11 header-value end offsets i32, 12 header-value sizes i32 (-1 null), 13 header-list end offsets i32 (counts),
 *   14 sequence i32.
 * One pass: every bytearray is first grown by what the batch can add at most, filled, then cut to the bytes
 * written; a decline cuts every bytearray back to its size before the call, so nothing is appended.
 */
static PyObject *export_columns(PyObject *self, PyObject *args) {
    Py_buffer view;
    Py_ssize_t start, end, count;
    long long base_offset, base_ts, max_ts, lo, t_lo, t_hi, limit;
    int log_append, base_seq;
    PyObject *outs;
    if (!PyArg_ParseTuple(args, "y*nnnLLLpiLLLLO!", &view, &start, &end, &count, &base_offset, &base_ts, &max_ts,
                          &log_append, &base_seq, &lo, &t_lo, &t_hi, &limit, &PyTuple_Type, &outs))
        return NULL;
    excol col[EX_COLS];
    if (ex_open(outs, col, EX_COLS) < 0) {
        PyBuffer_Release(&view);
        return NULL;
    }
    const uint8_t *b = (const uint8_t *)view.buf;
    dumpctx c = {base_offset, base_ts, max_ts, log_append, 0, 0, base_seq, NULL, NULL};
    Py_ssize_t taken = -1;
    if (start < 0 || start > end || end > view.len || count < 0 || count > end - start) goto done;
    if (ex_reserve_batch(col, count, end - start) < 0) {
        ex_close(col, EX_COLS, 0);
        PyBuffer_Release(&view);
        return NULL;
    }
    if (ex_columns_records(col, b, start, end, count, &c, lo, t_lo, t_hi, limit, base_seq, &taken) < 0) taken = -1;
done:
    PyBuffer_Release(&view);
    if (ex_close(col, EX_COLS, taken >= 0) < 0) return NULL;
    return PyLong_FromSsize_t(taken);
}

#define EX_BATCH_COLS 7

/*
 * export_columns_run(buf, pos, end, next_offset, max_batch_size, outs, bouts, codes_create, codes_append, batch_no,
 *                    rows, nbytes, max_rows, max_bytes)
 *   -> (next_pos, batches, records, first_offset, last_taken, last_offset, nbytes)
 * The records of a run of consecutive plain v2 batches from `pos` into outs (export_columns' 15 bytearrays) and
 * each batch's fields into bouts, 7 bytearrays (native order): 0 the batch number of each row i32 (from batch_no,
 * the row group's batches so far), 1 position i64, 2 partition leader epoch i32, 3 producer id i64, 4 producer epoch
 * i16, 5 base offset i64, 6 the batch's dictionary codes (codes_create or codes_append: the bytes of the batch's
 * i32 codes, CreateTime / LogAppendTime). A batch is taken under export_ndjson_run's rules (export_records.c: the
 * checks of _entries' compiled walk, base offset >= next_offset, not compressed, transactional or control);
 * batches without records add no row and no batch fields (as ParquetSink.batch). It stops before the first batch it
 * does not take, or after the batch that brings the row group to max_rows rows or max_bytes batch bytes (`rows` and
 * `nbytes` are the row group's so far: ParquetSink flushes at the same points as for batches one by one). Returns
 * the next position, the batches with records and their records, the first one's base offset (-1: none), the last
 * offset of the last of them (-1: none), the last offset walked (INT64_MIN: none) and the batch bytes walked.
 */
static PyObject *export_columns_run(PyObject *self, PyObject *args) {
    Py_buffer view, cc, ca;
    long long pos, end, next_offset, max_batch, batch_no, rows, nbytes, max_rows, max_bytes;
    PyObject *outs, *bouts;
    if (!PyArg_ParseTuple(args, "y*LLLLO!O!y*y*LLLLL", &view, &pos, &end, &next_offset, &max_batch, &PyTuple_Type,
                          &outs, &PyTuple_Type, &bouts, &cc, &ca, &batch_no, &rows, &nbytes, &max_rows, &max_bytes))
        return NULL;
    excol col[EX_COLS], bc[EX_BATCH_COLS];
    long long batches = 0, records = 0, first = -1, last_taken = -1, last = INT64_MIN, walked = 0;
    int failed = 0;
    if (cc.len != ca.len || ex_open(outs, col, EX_COLS) < 0 || ex_open(bouts, bc, EX_BATCH_COLS) < 0) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "codes_create and codes_append differ in length");
        PyBuffer_Release(&view);
        PyBuffer_Release(&cc);
        PyBuffer_Release(&ca);
        return NULL;
    }
    const uint8_t *b = (const uint8_t *)view.buf;
    if (end > view.len) end = view.len;
    if (pos < 0) pos = end;
    while (end - pos >= V2_HEADER_SIZE && rows < max_rows && nbytes < max_bytes) {
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
        Py_ssize_t rstart = (Py_ssize_t)pos + V2_HEADER_SIZE, rend = (Py_ssize_t)(pos + LOG_OVERHEAD + length);
        if (h.records_count > rend - rstart) break; /* as export_columns: Python words it */
        int log_append = (attributes & 0x08) != 0;
        if (ex_reserve_batch(col, h.records_count, rend - rstart) < 0 || ex_reserve(&bc[0], 4 * (Py_ssize_t)h.records_count) < 0 ||
            ex_reserve(&bc[1], 8) < 0 || ex_reserve(&bc[2], 4) < 0 || ex_reserve(&bc[3], 8) < 0 ||
            ex_reserve(&bc[4], 2) < 0 || ex_reserve(&bc[5], 8) < 0 || ex_reserve(&bc[6], cc.len) < 0) {
            failed = 1;
            break;
        }
        char *mark[EX_COLS];
        for (int i = 0; i < EX_COLS; i++) mark[i] = col[i].p;
        dumpctx c = {h.base_offset, h.base_ts, h.max_ts, log_append, 0, 0, h.base_sequence, NULL, NULL};
        Py_ssize_t taken = 0;
        int rc;
        uint32_t crc;
        Py_BEGIN_ALLOW_THREADS;
        crc = crc32c_of(p + V2_ATTRIBUTES_OFFSET, (size_t)length + LOG_OVERHEAD - V2_ATTRIBUTES_OFFSET);
        rc = crc != h.crc ? -1
                          : ex_columns_records(col, b, rstart, rend, h.records_count, &c, INT64_MIN, INT64_MIN,
                                               INT64_MAX, -1, h.base_sequence, &taken);
        Py_END_ALLOW_THREADS;
        if (rc < 0) { /* a CRC that fails, records that decline: Python re-does the batch (and reports it) */
            for (int i = 0; i < EX_COLS; i++) col[i].p = mark[i];
            break;
        }
        if (taken) {
            int32_t bno = (int32_t)(batch_no + batches);
            for (Py_ssize_t k = 0; k < taken; k++) ex_i32(&bc[0], bno);
            ex_i64(&bc[1], pos);
            ex_i32(&bc[2], h.epoch);
            ex_i64(&bc[3], h.producer_id);
            ex_i16(&bc[4], h.producer_epoch);
            ex_i64(&bc[5], h.base_offset);
            ex_put(&bc[6], log_append ? ca.buf : cc.buf, cc.len);
            batches++;
            records += taken;
            rows += taken;
            if (first < 0) first = h.base_offset;
            last_taken = last_offset;
        }
        nbytes += LOG_OVERHEAD + length;
        walked += LOG_OVERHEAD + length;
        last = last_offset;
        next_offset = last_offset + 1;
        pos += LOG_OVERHEAD + length;
    }
    PyBuffer_Release(&view);
    PyBuffer_Release(&cc);
    PyBuffer_Release(&ca);
    if (ex_close(col, EX_COLS, 1) < 0 || ex_close(bc, EX_BATCH_COLS, 1) < 0 || failed) return NULL;
    return Py_BuildValue("(LLLLLLL)", pos, batches, records, first, last_taken, last, walked);
}

/*
 * export_codes(codes, k, batch_no) -> [(indices: bytes, validity: bytes, nulls), ...] (k of them)
 * A row group's dictionary indices, per row, from its batches' codes: `codes` holds k i32 codes per batch entry
 * (-1: null), `batch_no` the i32 batch entry of each row. Column j gets, per row, the code of its batch entry and
 * an Arrow validity bit (code >= 0; a null's index is written as 0).
 */
static PyObject *export_codes(PyObject *self, PyObject *args) {
    Py_buffer codes, bno;
    Py_ssize_t k;
    if (!PyArg_ParseTuple(args, "y*ny*", &codes, &k, &bno)) return NULL;
    PyObject *out = NULL;
    Py_ssize_t n = bno.len / 4, entries = k > 0 ? codes.len / (4 * k) : 0;
    if (k <= 0 || codes.len % (4 * k) || bno.len % 4) {
        PyErr_SetString(PyExc_ValueError, "export_codes: codes must hold k i32 per batch entry");
        goto done;
    }
    out = PyList_New(k);
    if (!out) goto done;
    const int32_t *cv = (const int32_t *)codes.buf, *bv = (const int32_t *)bno.buf;
    for (Py_ssize_t j = 0; j < k; j++) {
        PyObject *idx = PyBytes_FromStringAndSize(NULL, 4 * n), *valid = PyBytes_FromStringAndSize(NULL, (n + 7) / 8);
        if (!idx || !valid) {
            Py_XDECREF(idx);
            Py_XDECREF(valid);
            Py_CLEAR(out);
            goto done;
        }
        int32_t *iv = (int32_t *)PyBytes_AS_STRING(idx);
        uint8_t *vb = (uint8_t *)PyBytes_AS_STRING(valid);
        memset(vb, 0, (size_t)(n + 7) / 8);
        Py_ssize_t nulls = 0;
        for (Py_ssize_t r = 0; r < n; r++) {
            int32_t e = bv[r];
            int32_t v = e >= 0 && e < entries ? cv[(Py_ssize_t)e * k + j] : -1;
            if (v >= 0) {
                iv[r] = v;
                vb[r >> 3] |= (uint8_t)(1u << (r & 7));
            } else {
                iv[r] = 0;
                nulls++;
            }
        }
        PyList_SET_ITEM(out, j, Py_BuildValue("(NNn)", idx, valid, nulls));
        if (!PyList_GET_ITEM(out, j)) {
            Py_CLEAR(out);
            goto done;
        }
    }
done:
    PyBuffer_Release(&codes);
    PyBuffer_Release(&bno);
    return out;
}

/*
 * export_valid(buf, width) -> (validity: bytes, nulls)
 * The Arrow validity bitmap of an array of native-order int32 (width 4) or int64 (width 8) values: a bit per value,
 * set where the value is not -1 (Kafka's null size or timestamp).
 */
static PyObject *export_valid(PyObject *self, PyObject *args) {
    Py_buffer v;
    int width;
    if (!PyArg_ParseTuple(args, "y*i", &v, &width)) return NULL;
    if ((width != 4 && width != 8) || v.len % width) {
        PyBuffer_Release(&v);
        PyErr_SetString(PyExc_ValueError, "export_valid: width 4 or 8, a whole number of values");
        return NULL;
    }
    Py_ssize_t n = v.len / width, nulls = 0;
    PyObject *valid = PyBytes_FromStringAndSize(NULL, (n + 7) / 8);
    if (!valid) {
        PyBuffer_Release(&v);
        return NULL;
    }
    uint8_t *vb = (uint8_t *)PyBytes_AS_STRING(valid);
    memset(vb, 0, (size_t)(n + 7) / 8);
    const char *p = (const char *)v.buf;
    for (Py_ssize_t r = 0; r < n; r++) {
        int64_t x;
        if (width == 4) {
            int32_t y;
            memcpy(&y, p + 4 * r, 4);
            x = y;
        } else {
            memcpy(&x, p + 8 * r, 8);
        }
        if (x != -1)
            vb[r >> 3] |= (uint8_t)(1u << (r & 7));
        else
            nulls++;
    }
    PyBuffer_Release(&v);
    return Py_BuildValue("(Nn)", valid, nulls);
}
