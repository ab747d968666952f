/* kafkalog_cli/accel/check_records.c: check_records: the record walk of verify-crc --deep.
 * Part of the one translation unit kafkalog_cli/_accel.c (included there, never compiled alone; see its head). */
/* =====================================================================================================================
 * verify-crc --deep: the record walk of one v2 batch (issue 20).
 *
 * Why: `verify-crc --deep` parsed every record in Python (a Record object, key/value views, a header list each), 30x
 * slower than the dump it is meant to keep up with. check_records walks the same structure as
 * kafkalog_cli/format/batch.py:_decode_records (DefaultRecord.readFrom) and the offset checks of
 * ops/verify.py:_Walker._deep, creating nothing. It answers only "certainly clean": True when the Python walk would
 * find nothing to report, False for anything else (a malformed varint, a size that does not add up, an offset out of
 * [base, last] or not increasing), and the caller then runs the Python walk, the reference, which words the problem.
 * It may be stricter than Python (a false "no" only costs time), never looser. The GIL is released during the walk.
 * Self-contained on purpose (only rd_varint/rd_varlong above are shared) so that merges with other work stay easy.
 * ===================================================================================================================*/
static int records_clean(const uint8_t *b, Py_ssize_t pos, Py_ssize_t end, Py_ssize_t count, int64_t base,
                         int64_t last) {
    int have_prev = 0;
    int64_t prev = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        int32_t size, off_delta, klen, vlen, nh;
        int64_t ts_delta;
        if (rd_varint(b, &pos, end, &size) < 0) return 0;
        if (size <= 0 || size > end - pos) return 0;
        Py_ssize_t body_end = pos + size;
        pos++; /* attributes (int8); the field order is layouts.RECORD_V2_FIELDS */
        if (rd_varlong(b, &pos, body_end, &ts_delta) < 0) return 0;
        if (rd_varint(b, &pos, body_end, &off_delta) < 0) return 0;
        if (rd_varint(b, &pos, body_end, &klen) < 0) return 0;
        if (klen >= 0) {
            if (klen > body_end - pos) return 0;
            pos += klen;
        }
        if (rd_varint(b, &pos, body_end, &vlen) < 0) return 0;
        if (vlen >= 0) {
            if (vlen > body_end - pos) return 0;
            pos += vlen;
        }
        if (rd_varint(b, &pos, body_end, &nh) < 0) return 0;
        if (nh < 0 || nh > body_end - pos) return 0;
        for (int32_t h = 0; h < nh; h++) {
            int32_t hkl, hvl;
            if (rd_varint(b, &pos, body_end, &hkl) < 0) return 0;
            if (hkl < 0 || hkl > body_end - pos) return 0;
            pos += hkl;
            if (rd_varint(b, &pos, body_end, &hvl) < 0) return 0;
            if (hvl >= 0) {
                if (hvl > body_end - pos) return 0;
                pos += hvl;
            }
        }
        if (pos != body_end) return 0;
        if (i == count - 1 && pos != end) return 0;
        /* int64(base + offsetDelta) with Java's wrap, then the walker's checks */
        int64_t offset = (int64_t)((uint64_t)base + (uint64_t)(int64_t)off_delta);
        if (offset < base || offset > last || (have_prev && offset <= prev)) return 0;
        prev = offset;
        have_prev = 1;
    }
    return 1;
}

/* check_records(buf, start, end, count, base_offset, last_offset) -> bool: records buf[start:end] of a v2 batch
 * (the mmap slice of an uncompressed batch, or a decompressed payload) are certainly clean; False: ask Python. */
static PyObject *check_records(PyObject *self, PyObject *args) {
    Py_buffer view;
    Py_ssize_t start, end, count;
    long long base, last;
    if (!PyArg_ParseTuple(args, "y*nnnLL", &view, &start, &end, &count, &base, &last)) return NULL;
    int ok = 0;
    if (start >= 0 && start <= end && end <= view.len && count >= 0) {
        Py_BEGIN_ALLOW_THREADS ok = records_clean((const uint8_t *)view.buf, start, end, count, (int64_t)base,
                                                  (int64_t)last);
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&view);
    return PyBool_FromLong(ok);
}
