/* kafkalog_cli/accel/scan_columns.c: scan_columns: the header walk of kafkalog scan, into column buffers.
 * Part of the one translation unit kafkalog_cli/_accel.c (included there, never compiled alone; see its head). */

/* ===================================================================================== scan: column buffers ===== */
/*
 * scan_columns(buffer, start, end) -> (data: bytes, n: int, stop: int, reason: str)
 *
 * Why: `kafkalog scan` turns every batch header into a row; building Python objects per batch cost ~2 KB and ~20 us
 * per batch. This is the walk of scan_v2 above (same entries, same stop rules and reasons: "end", "bad-size",
 * "magic", "small", plus "overflow" when base offset + lastOffsetDelta does not fit an int64), but it writes the
 * fields column by column, so Python wraps each column as an Arrow array without touching single values.
 * `data` holds the columns one after the other, n values each, native byte order, in this order (SCAN_COLUMNS in
 * kafkalog_cli/scan/columns.py): int64 position, size (whole entry), base_offset, last_offset, base_timestamp,
 * max_timestamp, producer_id; int32 records_count, base_sequence, last_sequence (incrementSequence with Kafka's wrap,
 * -1 when baseSequence is -1), partition_leader_epoch; int16 attributes, producer_epoch; uint8 crc_ok.
 * Self-contained on purpose (only the helpers above are shared) so that merges with other work stay easy.
 */
#define SCOL_I64 7
#define SCOL_I32 4
#define SCOL_I16 2
#define SCOL_BYTES (SCOL_I64 * 8 + SCOL_I32 * 4 + SCOL_I16 * 2 + 1)

static PyObject *scan_columns(PyObject *self, PyObject *args) {
    Py_buffer view;
    Py_ssize_t start, end;
    if (!PyArg_ParseTuple(args, "y*nn", &view, &start, &end)) return NULL;
    if (start < 0 || end > view.len || start > end) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "scan_columns: need 0 <= start <= end <= len(buffer)");
        return NULL;
    }
    const uint8_t *b = (const uint8_t *)view.buf;
    size_t cap = (size_t)(end - start) / 61 + 1;
    uint8_t *cols = (uint8_t *)PyMem_RawMalloc(cap * SCOL_BYTES);
    if (!cols) {
        PyBuffer_Release(&view);
        return PyErr_NoMemory();
    }
    int64_t *i64[SCOL_I64];
    int32_t *i32[SCOL_I32];
    int16_t *i16[SCOL_I16];
    for (int k = 0; k < SCOL_I64; k++) i64[k] = (int64_t *)(cols + cap * 8 * k);
    for (int k = 0; k < SCOL_I32; k++) i32[k] = (int32_t *)(cols + cap * (8 * SCOL_I64 + 4 * k));
    for (int k = 0; k < SCOL_I16; k++) i16[k] = (int16_t *)(cols + cap * (8 * SCOL_I64 + 4 * SCOL_I32 + 2 * k));
    uint8_t *ok = cols + cap * (8 * SCOL_I64 + 4 * SCOL_I32 + 2 * SCOL_I16);
    const char *reason = "end";
    int64_t pos = start;
    size_t n = 0;
    crcwin w;
    crcw_init(&w, b, end, end, INT32_MAX);
    Py_BEGIN_ALLOW_THREADS while (pos < (int64_t)end - 17) {
        int32_t size = be32(b + pos + 8);
        if (size < 14) {
            reason = "bad-size";
            break;
        }
        if (pos > (int64_t)end - 12 - size) break;
        if ((int8_t)b[pos + 16] != 2) {
            reason = "magic";
            break;
        }
        int64_t esize = (int64_t)size + 12;
        if (esize < 61) {
            reason = "small";
            break;
        }
        v2hdr h;
        read_v2(b + pos, &h);
        int64_t last;
        if (__builtin_add_overflow(h.base_offset, (int64_t)h.last_offset_delta, &last)) {
            reason = "overflow";
            break;
        }
        i64[0][n] = pos;
        i64[1][n] = esize;
        i64[2][n] = h.base_offset;
        i64[3][n] = last;
        i64[4][n] = h.base_ts;
        i64[5][n] = h.max_ts;
        i64[6][n] = h.producer_id;
        i32[0][n] = h.records_count;
        i32[1][n] = h.base_sequence;
        i32[2][n] = h.base_sequence == -1 ? -1 : increment_sequence(h.base_sequence, h.last_offset_delta);
        i32[3][n] = h.epoch;
        i16[0][n] = h.attributes;
        i16[1][n] = h.producer_epoch;
        ok[n] = crcw_get(&w, pos, size) == h.crc;
        n++;
        pos += esize;
    }
    crcw_free(&w);
    Py_END_ALLOW_THREADS PyBuffer_Release(&view);
    PyObject *data = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(n * SCOL_BYTES));
    if (!data) {
        PyMem_RawFree(cols);
        return NULL;
    }
    uint8_t *o = (uint8_t *)PyBytes_AS_STRING(data);
    for (int k = 0; k < SCOL_I64; k++, o += n * 8) memcpy(o, i64[k], n * 8);
    for (int k = 0; k < SCOL_I32; k++, o += n * 4) memcpy(o, i32[k], n * 4);
    for (int k = 0; k < SCOL_I16; k++, o += n * 2) memcpy(o, i16[k], n * 2);
    memcpy(o, ok, n);
    PyMem_RawFree(cols);
    return Py_BuildValue("(NnLs)", data, (Py_ssize_t)n, (long long)pos, reason);
}
