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

/* The batch object of JsonRenderer._batch_obj for a valid v2 batch (magic 2, computed_crc = crc, is_valid true), as
 * json.dumps(..., ensure_ascii=False, separators=(",", ":")) prints it, newline-terminated. file_json is the file
 * name's JSON string (made by Python); codec and ts_name are plain ASCII names. Reserved by the caller:
 * JSON_HEAD_MAX + fj_len + codec_len + ts_len. */
#define JSON_HEAD_MAX 900
static void put_json_head(outbuf *o, const char *file_json, Py_ssize_t fj_len, int64_t position, int64_t base_offset,
                          int64_t last_offset, int64_t size, const char *codec, Py_ssize_t codec_len, const char *ts_name,
                          Py_ssize_t ts_len, int64_t crc, int32_t count, int32_t base_seq, int32_t last_seq,
                          int64_t producer_id, int producer_epoch, int ple, int attributes, int64_t base_ts,
                          int64_t max_ts) {
    PUTLIT(o, "{\"type\":\"batch\",\"file\":");
    ob_put(o, file_json, (size_t)fj_len);
    PUTLIT(o, ",\"position\":");
    ob_int(o, position);
    PUTLIT(o, ",\"magic\":2,\"base_offset\":");
    ob_int(o, base_offset);
    PUTLIT(o, ",\"last_offset\":");
    ob_int(o, last_offset);
    PUTLIT(o, ",\"size\":");
    ob_int(o, size);
    PUTLIT(o, ",\"compress_codec\":\"");
    ob_put(o, codec, (size_t)codec_len);
    PUTLIT(o, "\",\"timestamp_type\":\"");
    ob_put(o, ts_name, (size_t)ts_len);
    PUTLIT(o, "\",\"crc\":");
    ob_int(o, crc);
    PUTLIT(o, ",\"computed_crc\":");
    ob_int(o, crc);
    PUTLIT(o, ",\"is_valid\":true,\"count\":");
    ob_int(o, count);
    PUTLIT(o, ",\"base_sequence\":");
    ob_int(o, base_seq);
    PUTLIT(o, ",\"last_sequence\":");
    ob_int(o, last_seq);
    PUTLIT(o, ",\"producer_id\":");
    ob_int(o, producer_id);
    PUTLIT(o, ",\"producer_epoch\":");
    ob_int(o, producer_epoch);
    PUTLIT(o, ",\"partition_leader_epoch\":");
    ob_int(o, ple);
    PUTLIT(o, ",\"is_transactional\":");
    ob_bool(o, attributes & 0x10);
    PUTLIT(o, ",\"is_control\":");
    ob_bool(o, attributes & 0x20);
    PUTLIT(o, ",\"delete_horizon_ms\":");
    if (attributes & 0x40)
        ob_int(o, base_ts);
    else
        PUTLIT(o, "null");
    PUTLIT(o, ",\"base_timestamp\":");
    ob_int(o, base_ts);
    PUTLIT(o, ",\"max_timestamp\":");
    ob_int(o, max_ts);
    PUTLIT(o, ",\"attributes\":");
    ob_int(o, attributes);
    PUTLIT(o, "}\n");
}

typedef struct {
    const char *file_json, *ts_name;
    Py_ssize_t fj_len, ts_len;
    int64_t position;
} jsonfmt;

/* One record object; a dump_emit_fn. Declines on header text (key, or a non-null value) that is not strict UTF-8. */
REC_INLINE int json_record(outbuf *o, const uint8_t *b, const dumprec *d, const dumpctx *c, const void *fmt) {
    const jsonfmt *j = (const jsonfmt *)fmt;
    int32_t klen = d->r.klen, vlen = d->r.vlen, nh = d->r.nh;
    Py_ssize_t kpos = d->r.kpos, vpos = d->r.vpos;
    size_t need = 420 + (size_t)j->fj_len + (size_t)j->ts_len; /* the fixed text of a record object is < 400 bytes */
    if (c->print_data) need += (klen >= 0 ? 2 * json_need(klen) : 0) + (vlen >= 0 ? 2 * json_need(vlen) : 0);
    for (int32_t h = 0; h < nh; h++) {
        const v2rechdr *hd = &d->hdrs[h];
        if (hd->vlen >= 0 && !utf8_valid(b + hd->vpos, hd->vlen)) return 0;
        if (!utf8_valid(b + hd->kpos, hd->klen)) return 0;
        need += json_need(hd->klen) + 48 + (hd->vlen >= 0 ? json_need(hd->vlen) : 0);
    }
    if (dump_track_gap(d->offset, c->last, c->java_gaps, c->gaps) < 0) return -1;
    int64_t offset = d->offset, ts = d->ts;
    int32_t seq = d->seq;
    if (ob_reserve(o, need) < 0) {
        PyErr_NoMemory();
        return -1;
    }
    PUTLIT(o, "{\"type\":\"record\",\"file\":");
    ob_put(o, j->file_json, (size_t)j->fj_len);
    PUTLIT(o, ",\"batch_position\":");
    ob_int(o, j->position);
    PUTLIT(o, ",\"offset\":");
    ob_int(o, offset);
    PUTLIT(o, ",\"timestamp_type\":\"");
    ob_put(o, j->ts_name, (size_t)j->ts_len);
    PUTLIT(o, "\",\"timestamp\":");
    ob_int(o, ts);
    PUTLIT(o, ",\"key_size\":");
    ob_int(o, klen >= 0 ? klen : -1);
    PUTLIT(o, ",\"value_size\":");
    ob_int(o, vlen >= 0 ? vlen : -1);
    PUTLIT(o, ",\"sequence\":");
    ob_int(o, seq);
    PUTLIT(o, ",\"headers\":[");
    for (int32_t h = 0; h < nh; h++) {
        if (h) PUTLIT(o, ",");
        PUTLIT(o, "{\"key\":");
        ob_json_str(o, b + d->hdrs[h].kpos, d->hdrs[h].klen);
        PUTLIT(o, ",\"value\":");
        if (d->hdrs[h].vlen >= 0) {
            ob_json_str(o, b + d->hdrs[h].vpos, d->hdrs[h].vlen);
            PUTLIT(o, ",\"value_b64\":");
            ob_b64(o, b + d->hdrs[h].vpos, d->hdrs[h].vlen);
        } else {
            PUTLIT(o, "null,\"value_b64\":null");
        }
        PUTLIT(o, "}");
    }
    PUTLIT(o, "]");
    if (c->print_data) {
        PUTLIT(o, ",\"key\":");
        if (klen >= 0)
            ob_json_str(o, b + kpos, klen);
        else
            PUTLIT(o, "null");
        PUTLIT(o, ",\"payload\":");
        if (vlen >= 0)
            ob_json_str(o, b + vpos, vlen);
        else
            PUTLIT(o, "null");
        PUTLIT(o, ",\"key_b64\":");
        if (klen >= 0)
            ob_b64(o, b + kpos, klen);
        else
            PUTLIT(o, "null");
        PUTLIT(o, ",\"value_b64\":");
        if (vlen >= 0)
            ob_b64(o, b + vpos, vlen);
        else
            PUTLIT(o, "null");
    }
    PUTLIT(o, "}\n");
    return 1;
}

/* Append the record objects of one batch (JsonRenderer.on_RecordEvent's dict, keys in the same order) to `o`.
 * Returns 1 on success, 0 to fall back (o, *last and gaps may then hold a partial batch: the caller rolls back),
 * -1 on a Python error. */
static int put_json_records(outbuf *o, const uint8_t *b, Py_ssize_t start, Py_ssize_t end, Py_ssize_t count,
                            int64_t base_offset, int64_t base_ts, int64_t max_ts, int log_append, int32_t base_seq,
                            const char *file_json, Py_ssize_t fj_len, int64_t position, const char *ts_name,
                            Py_ssize_t ts_len, int print_data, long long *last, int java_gaps, PyObject *gaps) {
    dumpctx c = {base_offset, base_ts, max_ts, log_append, print_data, java_gaps, base_seq, last, gaps, NULL};
    jsonfmt j = {file_json, ts_name, fj_len, ts_len, position};
    return dump_records(o, b, start, end, count, &c, json_record, &j);
}

/*
 * json_records(buf, start, end, hdr, file_json, ts_name, codec_name, print_data, last, java_gaps)
 *   hdr = (position, size, base_offset, last_offset_delta, count, base_seq, producer_id, producer_epoch,
 *          partition_leader_epoch, attributes, base_ts, max_ts, magic, crc, valid)   (as dump_batch's)
 * -> (bytes, last, gaps) | None: the batch object and the record objects of one valid v2 batch, one line each.
 * file_json is json.dumps(file) as UTF-8; ts_name and codec_name the plain names. Declines (None) on an invalid
 * batch and wherever put_json_records does.
 */
static PyObject *json_records(PyObject *self, PyObject *args) {
    Py_buffer view;
    Py_ssize_t start, end, fj_len, ts_len, codec_len;
    long long position, size, base_offset, producer_id, base_ts, max_ts, crc, last;
    int last_offset_delta, count, base_seq, producer_epoch, ple, attributes, magic, valid, print_data, java_gaps;
    const char *file_json, *ts_name, *codec;
    if (!PyArg_ParseTuple(args, "y*nn(LLLiiiLiiiLLiLp)y#y#y#pLp", &view, &start, &end, &position, &size, &base_offset,
                          &last_offset_delta, &count, &base_seq, &producer_id, &producer_epoch, &ple, &attributes,
                          &base_ts, &max_ts, &magic, &crc, &valid, &file_json, &fj_len, &ts_name, &ts_len, &codec,
                          &codec_len, &print_data, &last, &java_gaps))
        return NULL;
    const uint8_t *b = (const uint8_t *)view.buf;
    static outbuf keep = {NULL, 0, 0};
    outbuf o = ob_take(&keep);
    int64_t last_offset;
    PyObject *gaps = PyList_New(0);
    if (!gaps) goto error;
    if (!valid || magic != 2 || end > view.len || count < 0) goto fallback;
    if (__builtin_add_overflow((int64_t)base_offset, (int64_t)last_offset_delta, &last_offset)) goto fallback;
    if (ob_reserve(&o, JSON_HEAD_MAX + (size_t)fj_len + (size_t)codec_len + (size_t)ts_len) < 0) goto nomem;
    put_json_head(&o, file_json, fj_len, position, base_offset, last_offset, size, codec, codec_len, ts_name, ts_len,
                  crc, count, base_seq, base_seq == -1 ? -1 : increment_sequence(base_seq, last_offset_delta),
                  producer_id, producer_epoch, ple, attributes, base_ts, max_ts);
    int r = put_json_records(&o, b, start, end, count, base_offset, base_ts, max_ts, (attributes & 0x08) != 0,
                             base_seq, file_json, fj_len, position, ts_name, ts_len, print_data, &last, java_gaps, gaps);
    if (r < 0) goto error;
    if (r == 0) goto fallback;
    {
        PyObject *text = PyBytes_FromStringAndSize(o.data, (Py_ssize_t)o.len);
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
