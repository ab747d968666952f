/* kafkalog_cli/accel/record.h: THE v2 record decoder of the accelerator (DefaultRecord.readFrom), one place.
 * Part of the one translation unit kafkalog_cli/_accel.c (included there after buffers.h and before its users,
 * never compiled alone; see its head).
 *
 * Why: the record walk (length varint, attributes int8, timestampDelta varlong, offsetDelta varint, key length +
 * bytes, value length + bytes, header count + headers) was written four times, in format_text.c (put_records),
 * format_json.c (put_json_records), check_records.c (records_clean) and scan_records.c (rec_walk), each with the same
 * bounds rules spelled slightly differently (issue 21: every layout declared once). The field order is
 * kafkalog_cli/format/layouts.py:RECORD_V2_FIELDS; the fixed rules (one attributes byte, varints of at most
 * VARINT_MAX_BYTES and varlongs of at most VARLONG_MAX_BYTES bytes) come from there through the generated
 * layouts.h. The reference is kafkalog_cli/format/batch.py:_decode_records, which raises where rec_next says no.
 *
 * rec_next parses one record and walks (checks) its headers, optionally into the caller's array; rec_header_next
 * iterates the headers of a record rec_next accepted (for a caller without an array: scan --records). rec_next answers REC_OK or the first rule broken (a REC_* code); every caller today maps any
 * code but REC_OK to "decline" (return 0: Python re-does the batch and words the problem), so the codes only say
 * why. The rules rec_next applies are exactly the ones all four callers applied before (any of them failing made
 * every caller decline):
 *   - a record length that is not a varint, <= 0 (a record body holds at least the attributes byte) or runs past
 *     the records' end; a timestampDelta / offsetDelta / length / header count that is not a well-formed varint
 *     (varlong) inside the record body;
 *   - a key or value length >= 0 running past the body (any negative length is null, as in Java);
 *   - a header count < 0 or larger than the bytes left in the body; a header key length < 0 or running past the
 *     body; a header value length >= 0 running past the body;
 *   - a record whose fields do not end exactly at its length (pos != body end), and, for the batch's last record
 *     (`last`), records that do not end exactly at the records' end.
 * Where the callers' rules differ they stay in the callers (differences, kept as they were):
 *   - text and JSON dumps (put_records, put_json_records) decline on more than MAX_HEADERS_INLINE (64) headers
 *     (their per-record arrays of header positions, given to rec_next: REC_TOO_MANY_HEADERS), on a key or value that is not strict UTF-8 with print_data,
 *     on a header key that is not strict UTF-8, and (JSON only) on a header value that is not strict UTF-8;
 *     they decline when baseOffset + offsetDelta or baseTimestamp + timestampDelta overflows int64;
 *   - scan --records (rec_walk) declines on a header key that is not strict UTF-8 and on column offsets past
 *     int32, but wraps offset and timestamp arithmetic as Java's long does;
 *   - verify-crc --deep (records_clean) checks no text; it wraps the offset and then declines on an offset outside
 *     [base, last] or not increasing (the walker's checks).
 */
#if defined(__GNUC__) || defined(__clang__)
#define REC_INLINE static inline __attribute__((always_inline))
#else
#define REC_INLINE static inline
#endif

/* rd_varint / rd_varlong (buffers.h) stop after these many bytes; the numbers are the declaration's */
_Static_assert(VARINT_MAX_BYTES == 5 && VARLONG_MAX_BYTES == 10, "rd_varint/rd_varlong hard-code 5 and 10 bytes");

enum {
    REC_OK = 0,
    REC_BAD_LENGTH,       /* the length varint is malformed, <= 0 or runs past the records' end */
    REC_BAD_VARINT,       /* a varint or varlong inside the body is malformed or cut by the body's end */
    REC_BAD_KEY,          /* key bytes run past the body */
    REC_BAD_VALUE,        /* value bytes run past the body */
    REC_BAD_HEADER_COUNT, /* header count < 0 or more than the bytes left */
    REC_BAD_HEADER,       /* a header key length < 0, or header key / value bytes run past the body */
    REC_BAD_BODY_END,     /* the fields do not end at the record's length */
    REC_BAD_BATCH_END,    /* the last record does not end at the records' end */
    REC_TOO_MANY_HEADERS, /* more headers than the caller's array holds (only with hdrs) */
};

/* One record. Positions are into the caller's buffer; a negative klen / vlen is a null key / value. */
typedef struct {
    Py_ssize_t body_end; /* the record's end (its first byte after the length varint + length) */
    Py_ssize_t kpos, vpos, hpos; /* key bytes, value bytes, first header (rec_header_next starts there) */
    int64_t ts_delta;
    int32_t off_delta, klen, vlen, nh;
} v2rec;

/* One header of a record. A negative vlen is a null value (the key is never null). */
typedef struct {
    Py_ssize_t kpos, vpos;
    int32_t klen, vlen;
} v2rechdr;

/* The header at *pos (before `end`, the record's body end) into h; *pos moves past it. REC_OK or the code. On a
 * record rec_next accepted it cannot fail (callers still decline on a failure: for the compiler and for safety). */
REC_INLINE int rec_header_next(const uint8_t *b, Py_ssize_t *pos, Py_ssize_t end, v2rechdr *h) {
    if (rd_varint(b, pos, end, &h->klen) < 0) return REC_BAD_VARINT;
    if (h->klen < 0 || h->klen > end - *pos) return REC_BAD_HEADER;
    h->kpos = *pos;
    *pos += h->klen;
    if (rd_varint(b, pos, end, &h->vlen) < 0) return REC_BAD_VARINT;
    h->vpos = *pos;
    if (h->vlen >= 0) {
        if (h->vlen > end - *pos) return REC_BAD_HEADER;
        *pos += h->vlen;
    }
    return REC_OK;
}

/* The record at *pos (the records end at `end`; `last`: it is the batch's last record) into r. On REC_OK *pos is
 * r->body_end; on anything else *pos and r are unspecified (the callers decline the whole batch).
 * hdrs: NULL, or room for max_hdrs headers, filled on REC_OK (one header walk instead of rec_next's plus the
 * caller's: the dumps' A/B, issue 21); with hdrs, more than max_hdrs headers is REC_TOO_MANY_HEADERS.
 * Inlined into the record-only walks (check_records, scan --records); the dumps call it through rec_next_call
 * (issue 21's A/B, BENCHMARKS.md: inlined into the formatters, whose loops are long, the text dump took +6 % CPU
 * against the four copies; out of line everywhere, verify-crc --deep's walk took +14 %). */
REC_INLINE int rec_next(const uint8_t *b, Py_ssize_t *pos, Py_ssize_t end, int last, v2rec *r, v2rechdr *hdrs,
                        int32_t max_hdrs) {
    int32_t size;
    if (rd_varint(b, pos, end, &size) < 0) return REC_BAD_LENGTH;
    if (size <= 0 || size > end - *pos) return REC_BAD_LENGTH;
    Py_ssize_t p = *pos, body_end = p + size;
    r->body_end = body_end;
    p += RECORD_V2_ATTRIBUTES_SIZE; /* attributes: unused (DefaultRecord.readFrom reads and drops it) */
    if (rd_varlong(b, &p, body_end, &r->ts_delta) < 0) return REC_BAD_VARINT;
    if (rd_varint(b, &p, body_end, &r->off_delta) < 0) return REC_BAD_VARINT;
    if (rd_varint(b, &p, body_end, &r->klen) < 0) return REC_BAD_VARINT;
    r->kpos = p;
    if (r->klen >= 0) {
        if (r->klen > body_end - p) return REC_BAD_KEY;
        p += r->klen;
    }
    if (rd_varint(b, &p, body_end, &r->vlen) < 0) return REC_BAD_VARINT;
    r->vpos = p;
    if (r->vlen >= 0) {
        if (r->vlen > body_end - p) return REC_BAD_VALUE;
        p += r->vlen;
    }
    if (rd_varint(b, &p, body_end, &r->nh) < 0) return REC_BAD_VARINT;
    if (r->nh < 0 || r->nh > body_end - p) return REC_BAD_HEADER_COUNT;
    if (hdrs && r->nh > max_hdrs) return REC_TOO_MANY_HEADERS;
    r->hpos = p;
    for (int32_t h = 0; h < r->nh; h++) {
        v2rechdr hd;
        int rc = rec_header_next(b, &p, body_end, hdrs ? &hdrs[h] : &hd);
        if (rc != REC_OK) return rc;
    }
    if (p != body_end) return REC_BAD_BODY_END;
    if (last && p != end) return REC_BAD_BATCH_END;
    *pos = p;
    return REC_OK;
}

/* rec_next as a call (see above: for the formatters) */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((noinline))
#endif
static int rec_next_call(const uint8_t *b, Py_ssize_t *pos, Py_ssize_t end, int last, v2rec *r, v2rechdr *hdrs,
                         int32_t max_hdrs) {
    return rec_next(b, pos, end, last, r, hdrs, max_hdrs);
}
