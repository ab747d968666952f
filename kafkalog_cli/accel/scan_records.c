/* kafkalog_cli/accel/scan_records.c: the record walk of `kafkalog scan --records`, into the records dataset's columns.
 * Part of the one translation unit kafkalog_cli/_accel.c (included there after check_records.c, never compiled alone).
 *
 * Why: --records decoded every record into a Python Record (key and value copies, a header list) and appended six
 * Python values per record to lists: 0.09 M records/s, 30x below the batch walk. These functions walk the same
 * structure as kafkalog_cli/format/batch.py:_decode_records (DefaultRecord.readFrom) and append each record's
 * values to the column buffers the caller owns (scan/records.py: RecordBuffers), ten bytearrays, in this order:
 *   batch_position int64, offset int64, timestamp int64 (-1: null), key_size int32, value_size int32,
 *   key bytes, key end offsets int32 (one per record), header-key bytes, header-key end offsets int32 (one per
 *   header key), header-list end offsets int32 (one per record, counting header keys)
 * (all native byte order). They only append when the whole batch decodes with nothing to report: the Python walk,
 * the reference, raises for a malformed record (after yielding the good records before it, for an uncompressed
 * batch) and the scan words that as a `bad-records` problem. So on anything Python might report (a varint, a size
 * or a count that does not add up, a header key that is not strict UTF-8, which Python would decode with
 * replacement characters) the C walk appends nothing and says so; the caller then runs the Python walk for that
 * batch. Being stricter than Python only costs time; being looser is a bug (tests compare both ways).
 */
typedef struct {
    rawbuf bpos, off, ts, ksz, vsz, kdata, koff, hdata, hoff, hlist;
} recbufs;

typedef struct {
    int64_t position, base_offset, base_ts, max_ts;
    int log_append;
    int32_t count;
} recbatch;

static void recbufs_free(recbufs *r) {
    rawbuf *all[] = {&r->bpos, &r->off, &r->ts, &r->ksz, &r->vsz, &r->kdata, &r->koff, &r->hdata, &r->hoff, &r->hlist};
    for (int k = 0; k < 10; k++) PyMem_RawFree(all[k]->data);
}

HOT_INLINE int rb_put(rawbuf *o, const void *p, size_t n) { /* always: one call per column per record otherwise */
    if (rb_reserve(o, n) < 0) return -1;
    memcpy(o->data + o->len, p, n);
    o->len += n;
    return 0;
}

/* Decode the records of one batch from b[pos:end] into r (appending); 1: done, 0: ask Python, -1: no memory.
 * key_base / hkey_base / hcount_base: the lengths the caller's key bytes, header bytes and header-key offsets have
 * already (the offsets written are absolute). On 0 or -1 the caller drops what this call appended. */
static int rec_walk(const uint8_t *b, Py_ssize_t pos, Py_ssize_t end, const recbatch *bt, recbufs *r, int64_t key_base,
                    int64_t hkey_base, int64_t hcount_base) {
    for (int32_t i = 0; i < bt->count; i++) {
        v2rec rec; /* the walk and its rules: record.h; the header-key and column checks below are this caller's */
        if (rec_next(b, &pos, end, i == bt->count - 1, &rec, NULL, 0) != REC_OK) return 0;
        int32_t off_delta = rec.off_delta, klen = rec.klen, vlen = rec.vlen;
        int64_t ts_delta = rec.ts_delta;
        Py_ssize_t kpos = rec.kpos, hp = rec.hpos;
        for (int32_t h = 0; h < rec.nh; h++) {
            v2rechdr hd;
            if (rec_header_next(b, &hp, rec.body_end, &hd) != REC_OK) return 0; /* cannot fail after rec_next */
            if (!utf8_valid(b + hd.kpos, hd.klen)) return 0;
            if (rb_put(&r->hdata, b + hd.kpos, (size_t)hd.klen) < 0) return -1;
            int64_t hend = hkey_base + (int64_t)r->hdata.len;
            if (hend > INT32_MAX) return 0;
            int32_t he = (int32_t)hend;
            if (rb_put(&r->hoff, &he, 4) < 0) return -1;
        }
        int64_t offset = (int64_t)((uint64_t)bt->base_offset + (uint64_t)(int64_t)off_delta);
        int64_t ts = bt->log_append ? bt->max_ts : (int64_t)((uint64_t)bt->base_ts + (uint64_t)ts_delta);
        if (klen > 0 && rb_put(&r->kdata, b + kpos, (size_t)klen) < 0) return -1;
        int64_t kend = key_base + (int64_t)r->kdata.len;
        int64_t hcount = hcount_base + (int64_t)(r->hoff.len / 4);
        if (kend > INT32_MAX || hcount > INT32_MAX) return 0;
        int32_t ke = (int32_t)kend, hc = (int32_t)hcount, ks = klen < 0 ? -1 : klen, vs = vlen < 0 ? -1 : vlen;
        if (rb_put(&r->bpos, &bt->position, 8) < 0 || rb_put(&r->off, &offset, 8) < 0 || rb_put(&r->ts, &ts, 8) < 0 ||
            rb_put(&r->ksz, &ks, 4) < 0 || rb_put(&r->vsz, &vs, 4) < 0 || rb_put(&r->koff, &ke, 4) < 0 ||
            rb_put(&r->hlist, &hc, 4) < 0)
            return -1;
    }
    return 1;
}

/* Append r's buffers to the caller's ten bytearrays. */
static int recbufs_commit(recbufs *r, PyObject *outs) {
    rawbuf *all[] = {&r->bpos, &r->off, &r->ts, &r->ksz, &r->vsz, &r->kdata, &r->koff, &r->hdata, &r->hoff, &r->hlist};
    for (int k = 0; k < 10; k++) {
        PyObject *ba = PyTuple_GET_ITEM(outs, k);
        Py_ssize_t old = PyByteArray_GET_SIZE(ba);
        if (!all[k]->len) continue;
        if (PyByteArray_Resize(ba, old + (Py_ssize_t)all[k]->len) < 0) return -1;
        memcpy(PyByteArray_AS_STRING(ba) + old, all[k]->data, all[k]->len);
    }
    return 0;
}

static int rec_outs_ok(PyObject *outs) {
    if (!PyTuple_Check(outs) || PyTuple_GET_SIZE(outs) != 10) return 0;
    for (int k = 0; k < 10; k++)
        if (!PyByteArray_CheckExact(PyTuple_GET_ITEM(outs, k))) return 0;
    return 1;
}

#define REC_BASES(outs)                                                                                               \
    int64_t key_base = PyByteArray_GET_SIZE(PyTuple_GET_ITEM(outs, 5)),                                               \
            hkey_base = PyByteArray_GET_SIZE(PyTuple_GET_ITEM(outs, 7)),                                              \
            hcount_base = PyByteArray_GET_SIZE(PyTuple_GET_ITEM(outs, 8)) / 4

/* scan_records(buf, start, end, outs, position, base_offset, base_timestamp, max_timestamp, log_append, count)
 * -> bool: the records buf[start:end] of one v2 batch (at `position` in the file; an uncompressed batch's bytes
 * after the header, or a decompressed payload) appended to `outs` (the ten bytearrays above); False: nothing was
 * appended, ask Python. */
static PyObject *scan_records(PyObject *self, PyObject *args) {
    Py_buffer view;
    Py_ssize_t start, end;
    PyObject *outs;
    recbatch bt;
    int count;
    if (!PyArg_ParseTuple(args, "y*nnOLLLLpi", &view, &start, &end, &outs, &bt.position, &bt.base_offset, &bt.base_ts,
                          &bt.max_ts, &bt.log_append, &count))
        return NULL;
    bt.count = count;
    if (start < 0 || start > end || end > view.len || count < 0 || !rec_outs_ok(outs)) {
        PyBuffer_Release(&view);
        Py_RETURN_FALSE;
    }
    REC_BASES(outs);
    recbufs r;
    memset(&r, 0, sizeof r);
    int rc;
    Py_BEGIN_ALLOW_THREADS rc = rec_walk((const uint8_t *)view.buf, start, end, &bt, &r, key_base, hkey_base, hcount_base);
    Py_END_ALLOW_THREADS PyBuffer_Release(&view);
    if (rc == 1 && recbufs_commit(&r, outs) < 0) rc = -2;
    recbufs_free(&r);
    if (rc == -1) return PyErr_NoMemory();
    if (rc == -2) return NULL;
    return PyBool_FromLong(rc == 1);
}

/* scan_records_run(window, start, stop, base, ok_bitmap, first_bit, outs) -> (pos, index)
 * The records of the v2 batches window[start:stop] in walk order (exactly the entries one scan_table call walked
 * there: `ok_bitmap` is its crc_ok bitmap, entry k of this walk is bit first_bit + k), appended to `outs`; batches
 * whose crc_ok is false, and batches with recordsCount 0, have none. Stops at the first batch it leaves to Python
 * (compressed, or anything the record walk declines): returns its position in the window and its index in the walk
 * (pos == stop: all done). */
static PyObject *scan_records_run(PyObject *self, PyObject *args) {
    Py_buffer view, okv;
    Py_ssize_t start, stop, first_bit;
    long long base;
    PyObject *outs;
    if (!PyArg_ParseTuple(args, "y*nnLy*nO", &view, &start, &stop, &base, &okv, &first_bit, &outs)) return NULL;
    if (start < 0 || start > stop || stop > view.len || first_bit < 0 || !rec_outs_ok(outs)) {
        PyBuffer_Release(&view);
        PyBuffer_Release(&okv);
        PyErr_SetString(PyExc_ValueError, "scan_records_run: bad arguments");
        return NULL;
    }
    const uint8_t *b = (const uint8_t *)view.buf;
    const uint8_t *ok = (const uint8_t *)okv.buf;
    Py_ssize_t okbits = okv.len * 8;
    REC_BASES(outs);
    recbufs r;
    memset(&r, 0, sizeof r);
    Py_ssize_t pos = start, k = first_bit;
    int rc = 1;
    Py_BEGIN_ALLOW_THREADS while (pos < stop - HEADER_SIZE_UP_TO_MAGIC) {
        int32_t size = be32(b + pos + V2_BATCH_LENGTH_OFFSET);
        int64_t esize = (int64_t)size + LOG_OVERHEAD;
        if (size < V2_MIN_BATCH_LENGTH || pos + esize > stop || k >= okbits) break; /* not an entry scan_table walked: Python's */
        if (ok[k >> 3] & (1u << (k & 7))) {
            v2hdr h;
            read_v2(b + pos, &h);
            if ((h.attributes & 7) != 0 || h.records_count < 0) break;
            if (h.records_count > 0) {
                recbatch bt = {(int64_t)base + pos, h.base_offset, h.base_ts, h.max_ts, (h.attributes & 8) != 0,
                               h.records_count};
                size_t mark[10];
                rawbuf *all[] = {&r.bpos, &r.off, &r.ts, &r.ksz, &r.vsz, &r.kdata, &r.koff, &r.hdata, &r.hoff, &r.hlist};
                for (int j = 0; j < 10; j++) mark[j] = all[j]->len;
                rc = rec_walk(b, pos + V2_HEADER_SIZE, pos + esize, &bt, &r, key_base, hkey_base, hcount_base);
                if (rc != 1) {
                    for (int j = 0; j < 10; j++) all[j]->len = mark[j];
                    break;
                }
            }
        }
        pos += esize;
        k++;
    }
    Py_END_ALLOW_THREADS PyBuffer_Release(&view);
    PyBuffer_Release(&okv);
    if (rc == -1) {
        recbufs_free(&r);
        return PyErr_NoMemory();
    }
    if (recbufs_commit(&r, outs) < 0) {
        recbufs_free(&r);
        return NULL;
    }
    recbufs_free(&r);
    return Py_BuildValue("(nn)", pos, k);
}
