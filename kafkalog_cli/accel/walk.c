/* kafkalog_cli/accel/walk.c: scan_v2 and verify_run: the header walks of dump/verify-crc with CRCs.
 * Part of the one translation unit kafkalog_cli/_accel.c (included there, never compiled alone; see its head). */
/* -------------------------------------------------------------------------------------------------- scan_v2 */
/* One packed record per v2 batch, struct format SCAN_FORMAT below (little-endian, no padding, 70 bytes). */
#define SCAN_RECORD 70

/*
 * scan_v2(buffer, start, end) -> (records: bytes, stop: int, reason: str)
 *
 * The walk of kafkalog_cli.storage.segment.walk (FileLogInputStream): entries from `start` while more than 17 bytes
 * are left before `end`; an entry running past `end` ends the walk. For each entry that is a v2 batch of at least 61
 * bytes it appends (position, entry size, magic, crc_ok, attributes, base offset, last offset delta, records count,
 * base timestamp, max timestamp, partition leader epoch, producer id, producer epoch, base sequence, stored crc).
 * It stops at the first entry it does not handle and says why, so the Python reader takes over exactly there:
 *   "end"       the walk is over (the Python walk stops silently at the same place)
 *   "bad-size"  size field < 14 (walk raises CorruptRecordError there)
 *   "magic"     magic != 2 (a legacy message, or a magic Python parses its own way)
 *   "small"     a v2 entry shorter than its 61-byte header
 * The GIL is released for the walk and the CRCs; the buffer is held through Py_buffer.
 */
static PyObject *scan_v2(PyObject *self, PyObject *args) {
    Py_buffer view;
    Py_ssize_t start, end;
    if (!PyArg_ParseTuple(args, "y*nn", &view, &start, &end)) return NULL;
    if (start < 0 || end > view.len || start > end) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "scan_v2: need 0 <= start <= end <= len(buffer)");
        return NULL;
    }
    const uint8_t *b = (const uint8_t *)view.buf;
    rawbuf out = {NULL, 0, 0};
    const char *reason = "end";
    int64_t pos = start;
    int nomem = 0;
    crcwin w;
    crcw_init(&w, b, end, end, INT32_MAX);
    Py_BEGIN_ALLOW_THREADS while (pos < (int64_t)end - HEADER_SIZE_UP_TO_MAGIC) {
        int32_t size;
        int64_t esize;
        const char *why = v2_entry_at(b, pos, (int64_t)end, &size, &esize);
        if (why) {
            reason = why;
            break;
        }
        v2hdr h;
        read_v2(b + pos, &h);
        int crc_ok = crcw_get(&w, pos, size) == h.crc;
        if (rb_reserve(&out, SCAN_RECORD) < 0) {
            nomem = 1;
            break;
        }
        uint8_t *o = out.data + out.len;
        o = le_put(o, (uint64_t)pos, 8);
        o = le_put(o, (uint64_t)esize, 4);
        o = le_put(o, (uint8_t)h.magic, 1);
        o = le_put(o, (uint64_t)crc_ok, 1);
        o = le_put(o, (uint16_t)h.attributes, 2);
        o = le_put(o, (uint64_t)h.base_offset, 8);
        o = le_put(o, (uint32_t)h.last_offset_delta, 4);
        o = le_put(o, (uint32_t)h.records_count, 4);
        o = le_put(o, (uint64_t)h.base_ts, 8);
        o = le_put(o, (uint64_t)h.max_ts, 8);
        o = le_put(o, (uint32_t)h.epoch, 4);
        o = le_put(o, (uint64_t)h.producer_id, 8);
        o = le_put(o, (uint16_t)h.producer_epoch, 2);
        o = le_put(o, (uint32_t)h.base_sequence, 4);
        le_put(o, h.crc, 4);
        out.len += SCAN_RECORD;
        pos += esize;
    }
    crcw_free(&w);
    Py_END_ALLOW_THREADS PyBuffer_Release(&view);
    if (nomem) {
        PyMem_RawFree(out.data);
        return PyErr_NoMemory();
    }
    PyObject *data = rb_bytes(&out);
    PyMem_RawFree(out.data);
    if (!data) return NULL;
    return Py_BuildValue("(NLs)", data, (long long)pos, reason);
}

/* ------------------------------------------------------------------------------------------------ verify_run */
/* One packed record per accepted batch for the index observers: '<qiqqq' (position, entry size, base offset, last
 * offset, max timestamp), 36 bytes. */
#define RUN_RECORD 36

/*
 * verify_run(buffer, pos, stop_at, max_size, seg_base, has_prev, prev_last, prev_epoch, ts_limit, want_entries)
 *   -> (pos, batches, records, first_base, prev_last, first_epoch, prev_epoch, saw_epoch, entries | None)
 *
 * The fast path of kafkalog_cli.storage.segment_check._Walker.run: from `pos`, accept v2 batches that the Python walk would
 * accept on its fast path (>= 61 bytes left, magic 2, 49 <= size <= max_size, inside the file, CRC-32C matches, codec
 * id <= 4, lastOffsetDelta >= 0, recordsCount >= 0) AND for which on_v2 would report nothing: offset above the
 * previous entry's last offset (or >= the segment base for the first entry), last offset within base + 2^31-1,
 * recordsCount <= lastOffsetDelta + 1, leader epoch not decreasing, timestamps plausible (same rules as
 * _Walker._timestamps with ts_limit = now + slack). It stops before the first batch that fails any of these (Python
 * then handles that batch with the reference code and its exact problem text), at the end of the buffer, or once
 * pos >= stop_at (the progress boundary). Any int64 overflow also stops it (Python's ints do not overflow).
 * first_epoch is the first epoch >= 0 of the run (-1 if none); saw_epoch says whether any epoch >= 0 was seen.
 */
static PyObject *verify_run(PyObject *self, PyObject *args) {
    Py_buffer view;
    long long pos, stop_at, max_size, seg_base, prev_last, prev_epoch, ts_limit;
    int has_prev, want_entries;
    if (!PyArg_ParseTuple(args, "y*LLLLpLLLp", &view, &pos, &stop_at, &max_size, &seg_base, &has_prev, &prev_last,
                          &prev_epoch, &ts_limit, &want_entries))
        return NULL;
    const uint8_t *b = (const uint8_t *)view.buf;
    const int64_t n = view.len;
    rawbuf out = {NULL, 0, 0};
    int64_t batches = 0, records = 0, first_base = 0, first_epoch = -1;
    int saw_epoch = 0, nomem = 0;
    if (pos < 0) pos = n; /* defensive: never read before the buffer */
    crcwin w;
    crcw_init(&w, b, n, stop_at, max_size);
    Py_BEGIN_ALLOW_THREADS while (pos < n && pos < stop_at) {
        if (n - pos < V2_HEADER_SIZE) break;
        const uint8_t *p = b + pos;
        v2hdr h;
        int32_t size = be32(p + LOG_ENTRY_SIZE_OFFSET);
        if (p[ENTRY_PREFIX_MAGIC_OFFSET] != 2 || size < V2_MIN_BATCH_LENGTH || size > max_size || pos + LOG_OVERHEAD + size > n) break;
        read_v2(p, &h);
        if ((h.attributes & 7) > 4 || h.last_offset_delta < 0 || h.records_count < 0) break;
        /* cheap checks first; the CRC last */
        int64_t last, rel;
        if (has_prev ? h.base_offset <= prev_last : h.base_offset < seg_base) break; /* offset-order / below-base */
        if (__builtin_add_overflow(h.base_offset, (int64_t)h.last_offset_delta, &last)) break;
        if (__builtin_sub_overflow(last, seg_base, &rel) || rel > 2147483647LL) break; /* offset-overflow */
        if ((int64_t)h.records_count > (int64_t)h.last_offset_delta + 1) break;         /* bad-count */
        if (h.epoch >= 0 && h.epoch < prev_epoch) break;                               /* leader-epoch warning */
        int horizon = h.attributes & 0x40;
        if (h.max_ts < -1 || (h.base_ts < -1 && !horizon)) break; /* timestamp warnings, as _timestamps */
        if (h.max_ts > ts_limit) break;
        if (!horizon && !(h.attributes & 0x08) && h.records_count > 0 && h.base_ts >= 0 && h.max_ts < h.base_ts) break;
        if (crcw_get(&w, pos, size) != h.crc) break; /* bytes 21 .. 12+size (on two threads for long runs) */
        if (want_entries) {
            if (rb_reserve(&out, RUN_RECORD) < 0) {
                nomem = 1;
                break;
            }
            uint8_t *o = out.data + out.len;
            o = le_put(o, (uint64_t)pos, 8);
            o = le_put(o, (uint64_t)(size + LOG_OVERHEAD), 4);
            o = le_put(o, (uint64_t)h.base_offset, 8);
            o = le_put(o, (uint64_t)last, 8);
            le_put(o, (uint64_t)h.max_ts, 8);
            out.len += RUN_RECORD;
        }
        if (batches == 0) first_base = h.base_offset;
        batches++;
        records += h.records_count;
        has_prev = 1;
        prev_last = last;
        if (h.epoch >= 0) {
            if (!saw_epoch) first_epoch = h.epoch;
            saw_epoch = 1;
            if (h.epoch > prev_epoch) prev_epoch = h.epoch;
        }
        pos += LOG_OVERHEAD + (int64_t)size;
    }
    crcw_free(&w);
    Py_END_ALLOW_THREADS PyBuffer_Release(&view);
    if (nomem) {
        PyMem_RawFree(out.data);
        return PyErr_NoMemory();
    }
    PyObject *entries;
    if (want_entries) {
        entries = rb_bytes(&out);
        PyMem_RawFree(out.data);
        if (!entries) return NULL;
    } else {
        entries = Py_NewRef(Py_None);
    }
    return Py_BuildValue("(LLLLLLLiN)", pos, (long long)batches, (long long)records, (long long)first_base, prev_last,
                         (long long)first_epoch, prev_epoch, saw_epoch, entries);
}
