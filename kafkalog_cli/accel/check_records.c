/* kafkalog_cli/accel/check_records.c: check_records: the record walk of verify-crc --deep.
 * Part of the one translation unit kafkalog_cli/_accel.c (included there, never compiled alone; see its head). */
/* =====================================================================================================================
 * verify-crc --deep: the record walk of one v2 batch (issue 20).
 *
 * Why: `verify-crc --deep` parsed every record in Python (a Record object, key/value views, a header list each), 30x
 * slower than the dump it is meant to keep up with. check_records walks the same structure as
 * kafkalog_cli/format/batch.py:_decode_records (DefaultRecord.readFrom) and the offset checks of
 * storage/segment_check.py:_Walker._deep, creating nothing. It answers only "certainly clean": True when the Python walk would
 * find nothing to report, False for anything else (a malformed varint, a size that does not add up, an offset out of
 * [base, last] or not increasing), and the caller then runs the Python walk, the reference, which words the problem.
 * It may be stricter than Python (a false "no" only costs time), never looser. The GIL is released during the walk.
 * The record walk itself is record.h's rec_next (shared with the dumps and scan --records, issue 21).
 * ===================================================================================================================*/
static int records_clean(const uint8_t *b, Py_ssize_t pos, Py_ssize_t end, Py_ssize_t count, int64_t base,
                         int64_t last) {
    int have_prev = 0;
    int64_t prev = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        v2rec r; /* the walk and its rules: record.h; the offset checks below are this caller's own */
        if (rec_next(b, &pos, end, i == count - 1, &r, NULL, 0) != REC_OK) return 0;
        int32_t off_delta = r.off_delta;
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
