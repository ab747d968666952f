/* kafkalog_cli/accel/index_build.c: rebuild_index: the recovery-rule index build of rebuild-index.
 * Part of the one translation unit kafkalog_cli/_accel.c (included there, never compiled alone; see its head). */
/* ---------------------------------------------------------------------------------------------- rebuild_index */
/*
 * rebuild_index(buffer, base_offset, interval, segment_index_bytes)
 *   -> None | (valid_bytes, batches, last_offset | None, index: bytes, timeindex: bytes, stop_code, stop_pos, a, b)
 *
 * The recovery-rule loop of kafkalog_cli.ops.rebuild_index.rebuild_segment (the reference), statement for statement,
 * with the GIL released. Returns None (the caller runs the Python function) on anything it does not reproduce: a
 * legacy (magic < 2) entry, an int64 overflow. stop_code says where
 * and why recovery would stop (0: it did not); a and b are the numbers of the problem text built in Python:
 *   1 size < 14 (a = size field)            2 partial batch (a = entry size, b = bytes left)
 *   3 v2 < 61 bytes (a = entry size)        4 CRC mismatch (a = stored, b = computed)
 *   5 offset outside the 32-bit range (a = last offset)
 *   6 non-increasing offset at an index point (a = last indexed offset, b = offset)
 *   7 offset index full (a = max entries)   8 time index offset backwards (a = last time offset, b = offset)
 *   9 time index full (a = max entries)     10 trailing bytes (a = count)
 *   11 batch position above 2^31-1 (a = position)
 *   12 final time entry offset backwards (a = last time offset, b = offset): InvalidOffsetException in the broker
 */
static PyObject *rebuild_index(PyObject *self, PyObject *args) {
    Py_buffer view;
    long long base_offset, interval, segment_index_bytes;
    if (!PyArg_ParseTuple(args, "y*LLL", &view, &base_offset, &interval, &segment_index_bytes)) return NULL;
    const uint8_t *b = (const uint8_t *)view.buf;
    const int64_t end = view.len;
    rawbuf index = {NULL, 0, 0}, tindex = {NULL, 0, 0};
    const int64_t max_off_entries = segment_index_bytes / OFFSET_INDEX_ENTRY_SIZE,
                  max_time_entries = segment_index_bytes / TIME_INDEX_ENTRY_SIZE - 1;
    int64_t valid = 0, last_indexed = 0, max_ts = -1, max_ts_off = base_offset, last_index_off = -1;
    int64_t last_time_ts = -1, last_time_off = base_offset, pos = 0, batches = 0, last = 0;
    int64_t n_index = 0, n_time = 0, code = 0, sa = 0, sb = 0;
    int has_last = 0, fallback = 0, nomem = 0;
    crcwin w;
    crcw_init(&w, b, end, end, INT32_MAX);
    Py_BEGIN_ALLOW_THREADS while (pos < end - HEADER_SIZE_UP_TO_MAGIC) {
        if (pos > 2147483647LL) { /* the broker's positions are int: it refuses such a segment */
            code = 11, sa = pos;
            break;
        }
        const uint8_t *p = b + pos;
        int32_t length = be32(p + LOG_ENTRY_SIZE_OFFSET);
        int8_t magic = (int8_t)p[ENTRY_PREFIX_MAGIC_OFFSET];
        if (length < LEGACY_V0_RECORD_OVERHEAD) {
            code = 1, sa = length;
            break;
        }
        int64_t size = (int64_t)length + LOG_OVERHEAD;
        if (pos > end - size) {
            code = 2, sa = size, sb = end - pos;
            break;
        }
        if (magic < 2) { /* legacy: the Python function handles the whole segment */
            fallback = 1;
            break;
        }
        if (size < V2_HEADER_SIZE) {
            code = 3, sa = size;
            break;
        }
        v2hdr h;
        read_v2(p, &h);
        uint32_t computed = crcw_get(&w, pos, length); /* bytes 21 .. size (on two threads for long runs) */
        if (computed != h.crc) {
            code = 4, sa = h.crc, sb = computed;
            break;
        }
        int64_t b_last, rel;
        if (__builtin_add_overflow(h.base_offset, (int64_t)h.last_offset_delta, &b_last) ||
            __builtin_sub_overflow(b_last, base_offset, &rel)) {
            fallback = 1;
            break;
        }
        if (rel < 0 || rel > 2147483647LL) {
            code = 5, sa = b_last;
            break;
        }
        if (h.max_ts > max_ts) max_ts = h.max_ts, max_ts_off = b_last;
        if (valid - last_indexed > interval) { /* (valid - last_indexed cannot overflow: both are in [0, end]) */
            /* the broker's order: isFull, then the offset (OffsetIndex.append, TimeIndex.maybeAppend) */
            if (n_index >= max_off_entries) {
                code = 7, sa = max_off_entries;
                break;
            }
            if (n_index && b_last <= last_index_off) {
                code = 6, sa = last_index_off, sb = b_last;
                break;
            }
            if (rb_reserve(&index, OFFSET_INDEX_ENTRY_SIZE) < 0) {
                nomem = 1;
                break;
            }
            be_put(be_put(index.data + index.len, (uint32_t)rel, OFFSET_INDEX_ENTRY_RELATIVE_OFFSET_SIZE), (uint32_t)valid,
                   OFFSET_INDEX_ENTRY_POSITION_SIZE);
            index.len += OFFSET_INDEX_ENTRY_SIZE, n_index++;
            last_index_off = b_last;
            if (n_time >= max_time_entries) {
                code = 9, sa = max_time_entries;
                break;
            }
            if (n_time && max_ts_off < last_time_off) {
                code = 8, sa = last_time_off, sb = max_ts_off;
                break;
            }
            if (max_ts > last_time_ts) {
                if (rb_reserve(&tindex, TIME_INDEX_ENTRY_SIZE) < 0) {
                    nomem = 1;
                    break;
                }
                be_put(be_put(tindex.data + tindex.len, (uint64_t)max_ts, TIME_INDEX_ENTRY_TIMESTAMP_SIZE),
                       (uint32_t)(max_ts_off - base_offset), TIME_INDEX_ENTRY_RELATIVE_OFFSET_SIZE);
                tindex.len += TIME_INDEX_ENTRY_SIZE, n_time++;
                last_time_ts = max_ts, last_time_off = max_ts_off;
            }
            last_indexed = valid;
        }
        valid += size;
        pos += size;
        batches++;
        last = b_last, has_last = 1;
    }
    if (!code && !fallback && !nomem && pos < end && !(pos < end - HEADER_SIZE_UP_TO_MAGIC)) code = 10, sa = end - pos; /* while-else */
    if (!fallback && !nomem && n_time && max_ts_off < last_time_off) {
        /* the final maybeAppend throws InvalidOffsetException too: a problem, not a skipped entry */
        if (!code) code = 12, sa = last_time_off, sb = max_ts_off, pos = valid;
    } else if (!fallback && !nomem && max_ts > last_time_ts) {
        if (rb_reserve(&tindex, TIME_INDEX_ENTRY_SIZE) < 0)
            nomem = 1;
        else {
            be_put(be_put(tindex.data + tindex.len, (uint64_t)max_ts, TIME_INDEX_ENTRY_TIMESTAMP_SIZE),
                       (uint32_t)(max_ts_off - base_offset), TIME_INDEX_ENTRY_RELATIVE_OFFSET_SIZE);
            tindex.len += TIME_INDEX_ENTRY_SIZE;
        }
    }
    crcw_free(&w);
    Py_END_ALLOW_THREADS PyBuffer_Release(&view);
    PyObject *res = NULL;
    if (nomem) {
        PyErr_NoMemory();
    } else if (fallback) {
        res = Py_NewRef(Py_None);
    } else {
        PyObject *ib = rb_bytes(&index), *tb = rb_bytes(&tindex);
        PyObject *lo = has_last ? PyLong_FromLongLong(last) : Py_NewRef(Py_None);
        if (ib && tb && lo)
            res = Py_BuildValue("(LLOOOLLLL)", (long long)valid, (long long)batches, lo, ib, tb, (long long)code,
                                (long long)pos, (long long)sa, (long long)sb);
        Py_XDECREF(ib);
        Py_XDECREF(tb);
        Py_XDECREF(lo);
    }
    PyMem_RawFree(index.data);
    PyMem_RawFree(tindex.data);
    return res;
}
