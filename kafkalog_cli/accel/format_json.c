/* kafkalog_cli/accel/format_json.c: json_records: the record objects of dump --format json.
 * Part of the one translation unit kafkalog_cli/_accel.c (included there, never compiled alone; see its head). */
/* =====================================================================================================================
 * dump --format json: the record objects of one v2 batch (issue 20).
 *
 * Why: the JSON renderer built a dict per record and ran json.dumps on it, 70x slower than the text dump. This formats
 * the same objects, byte for byte what json.dumps(obj, ensure_ascii=False, separators=(",", ":")) prints for the
 * dict of kafkalog_cli/render/jsonl.py:JsonRenderer.on_RecordEvent (keys in the same order), for the default String
 * decoders only. Like put_records it declines (returns None, Python re-does the batch) on anything it does not
 * reproduce exactly: malformed records, text that is not strictly valid UTF-8 (Java's replacement rules live in
 * Python), more than MAX_HEADERS_INLINE headers. Self-contained apart from the helpers at the top of the file.
 * ===================================================================================================================*/
static const char b64_alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static char b64_pairs[4096][2]; /* every 12-bit value as its two base64 characters */
static int b64_ready;

/* base64 with padding (base64.b64encode), in quotes; the caller reserved 4 * (n / 3 + 1) + 2 bytes */
static void ob_b64(outbuf *o, const uint8_t *s, Py_ssize_t n) {
    if (!b64_ready) {
        for (int v = 0; v < 4096; v++) {
            b64_pairs[v][0] = b64_alphabet[v >> 6];
            b64_pairs[v][1] = b64_alphabet[v & 63];
        }
        b64_ready = 1;
    }
    char *d = o->data + o->len;
    *d++ = '"';
    Py_ssize_t i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8 | s[i + 2];
        memcpy(d, b64_pairs[v >> 12], 2);
        memcpy(d + 2, b64_pairs[v & 4095], 2);
        d += 4;
    }
    if (n - i == 1) {
        uint32_t v = (uint32_t)s[i] << 16;
        *d++ = b64_alphabet[v >> 18];
        *d++ = b64_alphabet[(v >> 12) & 63];
        *d++ = '=';
        *d++ = '=';
    } else if (n - i == 2) {
        uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8;
        *d++ = b64_alphabet[v >> 18];
        *d++ = b64_alphabet[(v >> 12) & 63];
        *d++ = b64_alphabet[(v >> 6) & 63];
        *d++ = '=';
    }
    *d++ = '"';
    o->len = (size_t)(d - o->data);
}

/* a JSON string of valid UTF-8 text as json.dumps(ensure_ascii=False) writes it; reserved: 6 * n + 2 bytes */
static void ob_json_str(outbuf *o, const uint8_t *s, Py_ssize_t n) {
    static const char hex[] = "0123456789abcdef";
    char *d = o->data + o->len;
    *d++ = '"';
    const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    Py_ssize_t i = 0;
    while (i < n) {
        /* 8 bytes at a time while none is a control byte, a quote or a backslash (SWAR "has zero byte" tests) */
        while (i + 8 <= n) {
            uint64_t w, q, bs;
            memcpy(&w, s + i, 8);
            q = w ^ (ones * '"');
            bs = w ^ (ones * '\\');
            if ((((w - ones * 0x20) & ~w) | ((q - ones) & ~q) | ((bs - ones) & ~bs)) & highs) break;
            memcpy(d, &w, 8);
            d += 8;
            i += 8;
        }
        if (i >= n) break;
        uint8_t c = s[i++];
        if (c >= 0x20 && c != '"' && c != '\\') {
            *d++ = (char)c;
            continue;
        }
        *d++ = '\\';
        switch (c) {
        case '"': *d++ = '"'; break;
        case '\\': *d++ = '\\'; break;
        case '\n': *d++ = 'n'; break;
        case '\r': *d++ = 'r'; break;
        case '\t': *d++ = 't'; break;
        case '\b': *d++ = 'b'; break;
        case '\f': *d++ = 'f'; break;
        default:
            *d++ = 'u';
            *d++ = '0';
            *d++ = '0';
            *d++ = hex[c >> 4];
            *d++ = hex[c & 15];
        }
    }
    *d++ = '"';
    o->len = (size_t)(d - o->data);
}

static inline size_t json_need(Py_ssize_t n) { return (size_t)n * 6 + 2 + 4 * ((size_t)n / 3 + 1) + 2 + 32; }

/*
 * json_records(buf, start, end, count, base_offset, base_ts, max_ts, log_append, base_seq, prefix, ts_part,
 *              print_data, last, java_gaps) -> (bytes, last, gaps) | None
 * prefix = '{"type":"record","file":...,"batch_position":N,"offset":' and ts_part = ',"timestamp_type":"X","timestamp":'
 * (both made by Python with json.dumps). One line per record, each ending in a newline.
 */
static PyObject *json_records(PyObject *self, PyObject *args) {
    Py_buffer view;
    Py_ssize_t start, end, count, prefix_len, ts_len;
    long long base_offset, base_ts, max_ts, last;
    int log_append, base_seq, print_data, java_gaps;
    const char *prefix, *ts_part;
    if (!PyArg_ParseTuple(args, "y*nnnLLLpiy#y#pLp", &view, &start, &end, &count, &base_offset, &base_ts, &max_ts,
                          &log_append, &base_seq, &prefix, &prefix_len, &ts_part, &ts_len, &print_data, &last,
                          &java_gaps))
        return NULL;
    const uint8_t *b = (const uint8_t *)view.buf;
    static outbuf keep = {NULL, 0, 0};
    outbuf o = keep;
    keep.data = NULL;
    keep.cap = 0;
    PyObject *gaps = PyList_New(0);
    if (!gaps) goto error;
    if (start < 0 || start > end || end > view.len || count < 0) goto fallback;
    Py_ssize_t pos = start;
    for (Py_ssize_t i = 0; i < count; i++) {
        int32_t size, off_delta, klen, vlen, nh;
        int64_t ts_delta;
        if (rd_varint(b, &pos, end, &size) < 0) goto fallback;
        if (size <= 0 || size > end - pos) goto fallback;
        Py_ssize_t body_end = pos + size;
        pos++; /* attributes */
        if (rd_varlong(b, &pos, body_end, &ts_delta) < 0) goto fallback;
        if (rd_varint(b, &pos, body_end, &off_delta) < 0) goto fallback;
        if (rd_varint(b, &pos, body_end, &klen) < 0) goto fallback;
        Py_ssize_t kpos = pos;
        if (klen >= 0) {
            if (klen > body_end - pos) goto fallback;
            pos += klen;
        }
        if (rd_varint(b, &pos, body_end, &vlen) < 0) goto fallback;
        Py_ssize_t vpos = pos;
        if (vlen >= 0) {
            if (vlen > body_end - pos) goto fallback;
            pos += vlen;
        }
        if (rd_varint(b, &pos, body_end, &nh) < 0) goto fallback;
        if (nh < 0 || nh > body_end - pos || nh > MAX_HEADERS_INLINE) goto fallback;
        Py_ssize_t hk_pos[MAX_HEADERS_INLINE], hv_pos[MAX_HEADERS_INLINE];
        int32_t hk_len[MAX_HEADERS_INLINE], hv_len[MAX_HEADERS_INLINE];
        size_t need = 256 + (size_t)prefix_len + (size_t)ts_len;
        for (int32_t h = 0; h < nh; h++) {
            int32_t hkl, hvl;
            if (rd_varint(b, &pos, body_end, &hkl) < 0) goto fallback;
            if (hkl < 0 || hkl > body_end - pos) goto fallback;
            hk_pos[h] = pos;
            hk_len[h] = hkl;
            pos += hkl;
            if (rd_varint(b, &pos, body_end, &hvl) < 0) goto fallback;
            hv_pos[h] = pos;
            hv_len[h] = hvl;
            if (hvl >= 0) {
                if (hvl > body_end - pos) goto fallback;
                pos += hvl;
                if (!utf8_valid(b + hv_pos[h], hvl)) goto fallback;
                need += json_need(hvl);
            }
            if (!utf8_valid(b + hk_pos[h], hkl)) goto fallback;
            need += json_need(hkl) + 48;
        }
        if (pos != body_end) goto fallback;
        if (i == count - 1 && pos != end) goto fallback;
        int64_t offset, ts;
        if (__builtin_add_overflow((int64_t)base_offset, (int64_t)off_delta, &offset)) goto fallback;
        if (log_append)
            ts = max_ts;
        else if (__builtin_add_overflow((int64_t)base_ts, ts_delta, &ts))
            goto fallback;
        if (print_data) {
            if (klen >= 0) {
                if (!utf8_valid(b + kpos, klen)) goto fallback;
                need += 2 * json_need(klen);
            }
            if (vlen >= 0) {
                if (!utf8_valid(b + vpos, vlen)) goto fallback;
                need += 2 * json_need(vlen);
            }
        }
        if (java_gaps || last != -1) {
            if (offset != (int64_t)((uint64_t)last + 1u)) {
                PyObject *pair = Py_BuildValue("(LL)", (long long)last, (long long)offset);
                if (!pair || PyList_Append(gaps, pair) < 0) {
                    Py_XDECREF(pair);
                    goto error;
                }
                Py_DECREF(pair);
            }
        }
        last = offset;
        int32_t seq = base_seq >= 0 ? increment_sequence(base_seq, off_delta) : -1;
        if (ob_reserve(&o, need) < 0) goto nomem;
        ob_put(&o, prefix, (size_t)prefix_len);
        ob_int(&o, offset);
        ob_put(&o, ts_part, (size_t)ts_len);
        ob_int(&o, ts);
        PUTLIT(&o, ",\"key_size\":");
        ob_int(&o, klen >= 0 ? klen : -1);
        PUTLIT(&o, ",\"value_size\":");
        ob_int(&o, vlen >= 0 ? vlen : -1);
        PUTLIT(&o, ",\"sequence\":");
        ob_int(&o, seq);
        PUTLIT(&o, ",\"headers\":[");
        for (int32_t h = 0; h < nh; h++) {
            if (h) PUTLIT(&o, ",");
            PUTLIT(&o, "{\"key\":");
            ob_json_str(&o, b + hk_pos[h], hk_len[h]);
            PUTLIT(&o, ",\"value\":");
            if (hv_len[h] >= 0) {
                ob_json_str(&o, b + hv_pos[h], hv_len[h]);
                PUTLIT(&o, ",\"value_b64\":");
                ob_b64(&o, b + hv_pos[h], hv_len[h]);
            } else {
                PUTLIT(&o, "null,\"value_b64\":null");
            }
            PUTLIT(&o, "}");
        }
        PUTLIT(&o, "]");
        if (print_data) {
            PUTLIT(&o, ",\"key\":");
            if (klen >= 0)
                ob_json_str(&o, b + kpos, klen);
            else
                PUTLIT(&o, "null");
            PUTLIT(&o, ",\"payload\":");
            if (vlen >= 0)
                ob_json_str(&o, b + vpos, vlen);
            else
                PUTLIT(&o, "null");
            PUTLIT(&o, ",\"key_b64\":");
            if (klen >= 0)
                ob_b64(&o, b + kpos, klen);
            else
                PUTLIT(&o, "null");
            PUTLIT(&o, ",\"value_b64\":");
            if (vlen >= 0)
                ob_b64(&o, b + vpos, vlen);
            else
                PUTLIT(&o, "null");
        }
        PUTLIT(&o, "}\n");
    }
    {
        PyObject *text = PyBytes_FromStringAndSize(o.data ? o.data : "", (Py_ssize_t)o.len);
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
