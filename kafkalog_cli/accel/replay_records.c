/* kafkalog_cli/accel/replay_records.c: replay_items and replay_count, the record walks of kafkalog replay.
 * Part of the one translation unit kafkalog_cli/_accel.c (included there after record.h; never compiled alone; see
 * its head).
 *
 * Why (issue 31 item 2): replay decoded every record of a partition directory in Python twice (the plan pass, then
 * the produce pass; Batch.iter_records, a Record and a SourceRecord each), 13.7-17.0 k records/s against the bare
 * client's 66-84 k. These two walk one v2 batch's records (an uncompressed batch's bytes after its header, or a
 * decompressed payload) with the one record decoder (record.h's rec_next and rec_header_next, the walk export's
 * export_records.c uses too; nothing of it is copied here) and hand out:
 *   - replay_items: per record the tuple the produce loop passes to confluent-kafka's produce() as it is,
 *     (offset, timestamp, key, value, headers): key and value bytes (None when null), the produce timestamp (the
 *     record's timestamp, max_ts for a LogAppendTime batch, 0 when not > 0: the client's "now"), headers a list of
 *     (name str decoded as bytes.decode("utf-8", "replace"), value bytes or None) with the offset header
 *     (name, prefix + decimal offset) last, or None when that list would be empty;
 *   - replay_count: what the plan pass needs, no object per record: (taken, first, last) of the records whose offset
 *     is above the running maximum (`after`, then each taken offset), the others being duplicates.
 * The reference is kafkalog_cli/ops/replay_source.py:python_items / python_count over Batch.iter_records. Both
 * decline (None) where the reference might differ: a record rec_next rejects (Python words the problem) and offset
 * arithmetic that overflows int64 (Python wraps it as Java's long does).
 */

/* one record's offset; 0 on an int64 overflow (decline) */
REC_INLINE int rp_offset(int64_t base, int32_t delta, int64_t *out) {
    return !__builtin_add_overflow(base, (int64_t)delta, out);
}

/* the decimal text of v (>= INT64_MIN) into s (room for 20 bytes); returns its length */
static Py_ssize_t rp_itoa(char *s, int64_t v) {
    char tmp[24];
    int n = 0;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    Py_ssize_t len = 0;
    if (v < 0) s[len++] = '-';
    while (n) s[len++] = tmp[--n];
    return len;
}

static PyObject *rp_bytes_or_none(const uint8_t *b, Py_ssize_t pos, int32_t len) {
    if (len < 0) Py_RETURN_NONE;
    return PyBytes_FromStringAndSize((const char *)b + pos, len);
}

/* the headers list of one record (NULL on an error with the exception set); *out stays NULL for "no headers" */
static int rp_headers(const uint8_t *b, const v2rec *r, PyObject *hname, const char *prefix, Py_ssize_t plen,
                      int64_t offset, PyObject **out) {
    *out = NULL;
    Py_ssize_t n = r->nh + (hname != NULL);
    if (n == 0) return 0;
    PyObject *list = PyList_New(n);
    if (!list) return -1;
    Py_ssize_t p = r->hpos;
    for (int32_t h = 0; h < r->nh; h++) {
        v2rechdr hd;
        if (rec_header_next(b, &p, r->body_end, &hd) != REC_OK) { /* rec_next accepted it: cannot happen */
            Py_DECREF(list);
            PyErr_SetString(PyExc_AssertionError, "replay_items: a header rec_next accepted does not parse");
            return -1;
        }
        PyObject *k = PyUnicode_DecodeUTF8((const char *)b + hd.kpos, hd.klen, "replace");
        PyObject *v = k ? rp_bytes_or_none(b, hd.vpos, hd.vlen) : NULL;
        PyObject *t = v ? PyTuple_Pack(2, k, v) : NULL;
        Py_XDECREF(k);
        Py_XDECREF(v);
        if (!t) {
            Py_DECREF(list);
            return -1;
        }
        PyList_SET_ITEM(list, h, t);
    }
    if (hname) {
        char text[32];
        PyObject *v = PyBytes_FromStringAndSize(NULL, plen + 20);
        if (!v) {
            Py_DECREF(list);
            return -1;
        }
        char *d = PyBytes_AS_STRING(v);
        if (plen) memcpy(d, prefix, (size_t)plen);
        Py_ssize_t tl = rp_itoa(text, offset);
        memcpy(d + plen, text, (size_t)tl);
        if (_PyBytes_Resize(&v, plen + tl) < 0) {
            Py_DECREF(list);
            return -1;
        }
        PyObject *t = PyTuple_Pack(2, hname, v);
        Py_DECREF(v);
        if (!t) {
            Py_DECREF(list);
            return -1;
        }
        PyList_SET_ITEM(list, r->nh, t);
    }
    *out = list;
    return 0;
}

/*
 * replay_items(buf, start, end, count, base_offset, base_ts, max_ts, log_append, after, header_name, prefix)
 * -> [(offset, timestamp, key, value, headers)] of the records whose offset is above the running maximum (after,
 * then each record taken; after = INT64_MIN: none yet, every record is taken), or None (declined: a record rec_next rejects, an offset or timestamp overflow).
 * header_name: str or None (no offset header); prefix: the offset header value's bytes before the offset.
 */
static PyObject *replay_items(PyObject *self, PyObject *args) {
    Py_buffer view, pview;
    Py_ssize_t start, end, count;
    long long base_offset, base_ts, max_ts, after;
    int log_append;
    PyObject *hname;
    if (!PyArg_ParseTuple(args, "y*nnnLLLpLOy*", &view, &start, &end, &count, &base_offset, &base_ts, &max_ts,
                          &log_append, &after, &hname, &pview))
        return NULL;
    PyObject *out = NULL;
    if (hname == Py_None) hname = NULL;
    if (hname && !PyUnicode_Check(hname)) {
        PyErr_SetString(PyExc_TypeError, "header_name must be a str or None");
        goto done;
    }
    if (start < 0 || start > end || end > view.len || count < 0 || count > end - start) {
        out = Py_None;
        Py_INCREF(out);
        goto done;
    }
    out = PyList_New(0);
    if (!out) goto done;
    {
        const uint8_t *b = (const uint8_t *)view.buf;
        Py_ssize_t pos = start;
        int64_t last = (int64_t)after;
        int have_last = after != INT64_MIN;
        for (Py_ssize_t i = 0; i < count; i++) {
            v2rec r;
            int64_t offset, ts;
            if (rec_next(b, &pos, end, i == count - 1, &r, NULL, 0) != REC_OK ||
                !rp_offset((int64_t)base_offset, r.off_delta, &offset))
                goto decline;
            if (log_append)
                ts = (int64_t)max_ts;
            else if (__builtin_add_overflow((int64_t)base_ts, r.ts_delta, &ts))
                goto decline;
            if (have_last && offset <= last) continue;
            last = offset;
            have_last = 1;
            PyObject *hdrs;
            if (rp_headers(b, &r, hname, (const char *)pview.buf, pview.len, offset, &hdrs) < 0) goto error;
            PyObject *item = PyTuple_New(5); /* filled in place: no format string parsed per record */
            if (!item) {
                Py_XDECREF(hdrs);
                goto error;
            }
            PyTuple_SET_ITEM(item, 4, hdrs ? hdrs : (Py_INCREF(Py_None), Py_None));
            PyObject *f;
            if (!(f = PyLong_FromLongLong((long long)offset))) goto item_error;
            PyTuple_SET_ITEM(item, 0, f);
            if (!(f = PyLong_FromLongLong((long long)(ts > 0 ? ts : 0)))) goto item_error;
            PyTuple_SET_ITEM(item, 1, f);
            if (!(f = rp_bytes_or_none(b, r.kpos, r.klen))) goto item_error;
            PyTuple_SET_ITEM(item, 2, f);
            if (!(f = rp_bytes_or_none(b, r.vpos, r.vlen))) goto item_error;
            PyTuple_SET_ITEM(item, 3, f);
            int rc = PyList_Append(out, item);
            Py_DECREF(item);
            if (rc < 0) goto error;
            continue;
        item_error: /* the slots not filled yet are NULL: the tuple's dealloc skips them */
            Py_DECREF(item);
            goto error;
        }
    }
    goto done;
decline:
    Py_DECREF(out);
    out = Py_None;
    Py_INCREF(out);
    goto done;
error:
    Py_CLEAR(out);
done:
    PyBuffer_Release(&view);
    PyBuffer_Release(&pview);
    return out;
}

/*
 * replay_count(buf, start, end, count, base_offset, after) -> (taken, first, last) | None: the records whose offset
 * is above the running maximum (after, then each taken one), their first and last offsets (-1 when none taken).
 * Declines (None) as replay_items does. The GIL is released during the walk.
 */
static PyObject *replay_count(PyObject *self, PyObject *args) {
    Py_buffer view;
    Py_ssize_t start, end, count;
    long long base_offset, after;
    if (!PyArg_ParseTuple(args, "y*nnnLL", &view, &start, &end, &count, &base_offset, &after)) return NULL;
    int ok = 0;
    Py_ssize_t taken = 0;
    int64_t first = -1, last = (int64_t)after;
    int have_last = after != INT64_MIN;
    if (start >= 0 && start <= end && end <= view.len && count >= 0 && count <= end - start) {
        Py_BEGIN_ALLOW_THREADS;
        const uint8_t *b = (const uint8_t *)view.buf;
        Py_ssize_t pos = start;
        ok = 1;
        for (Py_ssize_t i = 0; i < count; i++) {
            v2rec r;
            int64_t offset;
            if (rec_next(b, &pos, end, i == count - 1, &r, NULL, 0) != REC_OK ||
                !rp_offset((int64_t)base_offset, r.off_delta, &offset)) {
                ok = 0;
                break;
            }
            if (have_last && offset <= last) continue;
            if (!taken) first = offset;
            last = offset;
            have_last = 1;
            taken++;
        }
        Py_END_ALLOW_THREADS;
    }
    PyBuffer_Release(&view);
    if (!ok) Py_RETURN_NONE;
    return Py_BuildValue("(nLL)", taken, (long long)first, (long long)(taken ? last : -1));
}

/*
 * replay_map_lines(prefix, first, offsets, middle, dos, start, stop) -> bytes: the offset map's lines of records
 * start..stop-1 of a produced chunk, prefix + source offset + middle + destination offset + "\n" each (prefix:
 * "<topic>,<partition>,", middle: ",<topic>,<partition>,", both CSV fields already quoted): the source offsets are
 * first + i (offsets None) or offsets[i], the destination offsets dos[i] (lists of ints). The reference:
 * kafkalog_cli/ops/replay.py:_Run.python_lines. TypeError / OverflowError for an item that is not an int64.
 */
static PyObject *replay_map_lines(PyObject *self, PyObject *args) {
    Py_buffer pre, mid;
    long long first;
    PyObject *offsets, *dos;
    Py_ssize_t start, stop;
    if (!PyArg_ParseTuple(args, "y*LOy*O!nn", &pre, &first, &offsets, &mid, &PyList_Type, &dos, &start, &stop))
        return NULL;
    PyObject *out = NULL;
    if (offsets != Py_None && !PyList_Check(offsets)) {
        PyErr_SetString(PyExc_TypeError, "offsets must be a list or None");
        goto done;
    }
    if (start < 0 || stop < start || stop > PyList_GET_SIZE(dos) ||
        (offsets != Py_None && stop > PyList_GET_SIZE(offsets))) {
        PyErr_SetString(PyExc_ValueError, "start/stop out of range");
        goto done;
    }
    {
        Py_ssize_t per = pre.len + mid.len + 2 * 20 + 1;
        Py_ssize_t n = stop - start;
        if (n > 0 && per > PY_SSIZE_T_MAX / n) {
            PyErr_NoMemory();
            goto done;
        }
        out = PyBytes_FromStringAndSize(NULL, per * n);
        if (!out) goto done;
        char *d = PyBytes_AS_STRING(out), *p = d;
        for (Py_ssize_t i = start; i < stop; i++) {
            long long so;
            if (offsets == Py_None) {
                if (__builtin_add_overflow(first, (long long)i, &so)) {
                    PyErr_SetString(PyExc_OverflowError, "source offset past int64");
                    goto fail;
                }
            } else {
                so = PyLong_AsLongLong(PyList_GET_ITEM(offsets, i));
                if (so == -1 && PyErr_Occurred()) goto fail;
            }
            long long dov = PyLong_AsLongLong(PyList_GET_ITEM(dos, i));
            if (dov == -1 && PyErr_Occurred()) goto fail;
            memcpy(p, pre.buf, (size_t)pre.len);
            p += pre.len;
            p += rp_itoa(p, (int64_t)so);
            memcpy(p, mid.buf, (size_t)mid.len);
            p += mid.len;
            p += rp_itoa(p, (int64_t)dov);
            *p++ = '\n';
        }
        if (_PyBytes_Resize(&out, p - d) < 0) out = NULL;
        goto done;
    fail:
        Py_CLEAR(out);
    }
done:
    PyBuffer_Release(&pre);
    PyBuffer_Release(&mid);
    return out;
}
