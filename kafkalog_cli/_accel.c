/*
 * kafkalog_cli._accel: the compiled fast path of `kafkalog dump --deep-iteration [--print-data-log]`.
 *
 * It decodes the records of one v2 batch (an uncompressed slice of the mmap'd segment, or a decompressed payload)
 * and formats their DumpLogSegments record lines (the compact 3.0+ form) straight into one bytes object, without
 * creating a Python object per record. It is an accelerator only: the pure-Python path in kafkalog_cli/ops/dump.py
 * and kafkalog_cli/render/dls.py is the reference. Whenever the input is anything but well-formed (a varint too
 * long, a size that does not add up, a key that is not strictly valid UTF-8, an arithmetic overflow) this code
 * returns None and the caller re-does the batch in Python, which produces the exact error text. Both paths must
 * give identical output on every golden fixture (tests/test_accel.py runs them with the accelerator on and off).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

typedef struct {
    char *data;
    size_t len;
    size_t cap;
} outbuf;

static int ob_reserve(outbuf *o, size_t extra) {
    if (o->len + extra <= o->cap) return 0;
    size_t ncap = o->cap ? o->cap : 4096;
    while (ncap < o->len + extra) ncap *= 2;
    char *n = (char *)PyMem_Realloc(o->data, ncap);
    if (!n) return -1;
    o->data = n;
    o->cap = ncap;
    return 0;
}

/* The formatters run with the GIL held, one at a time: each keeps its buffer for the next call instead of growing a
 * fresh one per batch (a 100 KiB batch text cost a realloc chain and fresh zeroed pages each time). */
#define OB_KEEP_MAX ((size_t)16 << 20)
static inline void ob_release(outbuf *o, outbuf *keep) {
    if (o->cap <= OB_KEEP_MAX) {
        keep->data = o->data;
        keep->cap = o->cap;
    } else {
        PyMem_Free(o->data);
        keep->data = NULL;
        keep->cap = 0;
    }
    keep->len = 0;
}

static inline void ob_put(outbuf *o, const char *s, size_t n) {
    memcpy(o->data + o->len, s, n);
    o->len += n;
}

#define PUTLIT(o, s) ob_put((o), (s), sizeof(s) - 1)

static const char digit_pairs[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

/* decimal text of v, two digits per division (the integer fields were the largest part of dump_batch's time) */
static inline void ob_int(outbuf *o, int64_t v) {
    char tmp[24];
    int i = 24;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    while (u >= 100) {
        unsigned r = (unsigned)(u % 100);
        u /= 100;
        i -= 2;
        memcpy(tmp + i, digit_pairs + 2 * r, 2);
    }
    if (u >= 10) {
        i -= 2;
        memcpy(tmp + i, digit_pairs + 2 * u, 2);
    } else {
        tmp[--i] = (char)('0' + u);
    }
    if (v < 0) tmp[--i] = '-';
    ob_put(o, tmp + i, (size_t)(24 - i));
}

/* zig-zag varint (at most 5 bytes), as kafkalog_cli.format.varint.read_varint: -1 on any problem */
static inline int rd_varint(const uint8_t *b, Py_ssize_t *pos, Py_ssize_t end, int32_t *out) {
    uint64_t r = 0;
    int shift = 0;
    for (;;) {
        if (*pos >= end) return -1;
        uint8_t x = b[(*pos)++];
        r |= (uint64_t)(x & 0x7F) << shift;
        if (x < 0x80) break;
        shift += 7;
        if (shift > 28) return -1;
    }
    uint32_t u = (uint32_t)(r & 0xFFFFFFFFu);
    *out = (int32_t)((u >> 1) ^ (uint32_t)(-(int32_t)(u & 1)));
    return 0;
}

static inline int rd_varlong(const uint8_t *b, Py_ssize_t *pos, Py_ssize_t end, int64_t *out) {
    uint64_t r = 0;
    int shift = 0;
    for (;;) {
        if (*pos >= end) return -1;
        uint8_t x = b[(*pos)++];
        if (shift < 64) r |= (uint64_t)(x & 0x7F) << shift;
        if (x < 0x80) break;
        shift += 7;
        if (shift > 63) return -1;
    }
    *out = (int64_t)((r >> 1) ^ (uint64_t)(-(int64_t)(r & 1)));
    return 0;
}

/* strict UTF-8 validation (no overlongs, no surrogates, <= U+10FFFF): such bytes decode to themselves in Java */
static int utf8_valid(const uint8_t *s, Py_ssize_t n) {
    Py_ssize_t i = 0;
    while (i < n) {
        /* ASCII runs 8 bytes at a time (most keys and payloads are ASCII; this was 7% of a deep dump) */
        while (i + 8 <= n) {
            uint64_t w;
            memcpy(&w, s + i, 8);
            if (w & 0x8080808080808080ull) break;
            i += 8;
        }
        if (i >= n) break;
        uint8_t c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0xC2 && c <= 0xDF) {
            if (i + 1 >= n || (s[i + 1] & 0xC0) != 0x80) return 0;
            i += 2;
        } else if (c >= 0xE0 && c <= 0xEF) {
            if (i + 2 >= n) return 0;
            uint8_t c1 = s[i + 1], c2 = s[i + 2];
            if ((c1 & 0xC0) != 0x80 || (c2 & 0xC0) != 0x80) return 0;
            if (c == 0xE0 && c1 < 0xA0) return 0;
            if (c == 0xED && c1 >= 0xA0) return 0;
            i += 3;
        } else if (c >= 0xF0 && c <= 0xF4) {
            if (i + 3 >= n) return 0;
            uint8_t c1 = s[i + 1], c2 = s[i + 2], c3 = s[i + 3];
            if ((c1 & 0xC0) != 0x80 || (c2 & 0xC0) != 0x80 || (c3 & 0xC0) != 0x80) return 0;
            if (c == 0xF0 && c1 < 0x90) return 0;
            if (c == 0xF4 && c1 >= 0x90) return 0;
            i += 4;
        } else {
            return 0;
        }
    }
    return 1;
}

static inline int32_t increment_sequence(int32_t seq, int32_t inc) {
    int32_t lim = (int32_t)((uint32_t)INT32_MAX - (uint32_t)inc);
    if (seq > lim) {
        int32_t t = (int32_t)((uint32_t)INT32_MAX - (uint32_t)seq);
        return (int32_t)((uint32_t)inc - (uint32_t)t - 1u);
    }
    return (int32_t)((uint32_t)seq + (uint32_t)inc);
}

#define MAX_HEADERS_INLINE 64


/* Append the record lines of one batch to `o`. Returns 1 on success, 0 to fall back, -1 on a Python error. */
static int put_records(outbuf *o, const uint8_t *b, Py_ssize_t start, Py_ssize_t end, Py_ssize_t count,
                       int64_t base_offset, int64_t base_ts, int64_t max_ts, int log_append, int32_t base_seq,
                       const char *label, Py_ssize_t label_len, int print_data, long long *last, int java_gaps,
                       PyObject *gaps) {
    if (start < 0 || start > end || count < 0) return 0;
    Py_ssize_t pos = start;
    for (Py_ssize_t i = 0; i < count; i++) {
        int32_t size;
        if (rd_varint(b, &pos, end, &size) < 0) return 0;
        if (size < 0 || pos + size > end) return 0;
        Py_ssize_t body_end = pos + size;
        if (pos >= body_end) return 0;
        pos++; /* attributes */
        int64_t ts_delta;
        int32_t off_delta, klen, vlen, nh;
        if (rd_varlong(b, &pos, body_end, &ts_delta) < 0) return 0;
        if (rd_varint(b, &pos, body_end, &off_delta) < 0) return 0;
        if (rd_varint(b, &pos, body_end, &klen) < 0) return 0;
        Py_ssize_t kpos = pos;
        if (klen >= 0) {
            if (pos + klen > body_end) return 0;
            pos += klen;
        }
        if (rd_varint(b, &pos, body_end, &vlen) < 0) return 0;
        Py_ssize_t vpos = pos;
        if (vlen >= 0) {
            if (pos + vlen > body_end) return 0;
            pos += vlen;
        }
        if (rd_varint(b, &pos, body_end, &nh) < 0) return 0;
        if (nh < 0 || nh > body_end - pos || nh > MAX_HEADERS_INLINE) return 0;
        Py_ssize_t hk_pos[MAX_HEADERS_INLINE];
        int32_t hk_len[MAX_HEADERS_INLINE];
        for (int32_t h = 0; h < nh; h++) {
            int32_t hkl, hvl;
            if (rd_varint(b, &pos, body_end, &hkl) < 0) return 0;
            if (hkl < 0 || pos + hkl > body_end) return 0;
            hk_pos[h] = pos;
            hk_len[h] = hkl;
            pos += hkl;
            if (rd_varint(b, &pos, body_end, &hvl) < 0) return 0;
            if (hvl >= 0) {
                if (pos + hvl > body_end) return 0;
                pos += hvl;
            }
            if (!utf8_valid(b + hk_pos[h], hkl)) return 0;
        }
        if (pos != body_end) return 0;
        if (i == count - 1 && pos != end) return 0;
        int64_t offset, ts;
        if (__builtin_add_overflow(base_offset, (int64_t)off_delta, &offset)) return 0;
        if (log_append)
            ts = max_ts;
        else if (__builtin_add_overflow(base_ts, ts_delta, &ts))
            return 0;
        if (print_data) {
            if (klen >= 0 && !utf8_valid(b + kpos, klen)) return 0;
            if (vlen >= 0 && !utf8_valid(b + vpos, vlen)) return 0;
        }
        /* non-consecutive offset tracker (Scala: the first record is not checked; Java port: every record) */
        if (java_gaps || *last != -1) {
            if (offset != (int64_t)((uint64_t)*last + 1u)) { /* Java long arithmetic wraps */
                PyObject *pair = Py_BuildValue("(LL)", (long long)*last, (long long)offset);
                if (!pair || PyList_Append(gaps, pair) < 0) {
                    Py_XDECREF(pair);
                    return -1;
                }
                Py_DECREF(pair);
            }
        }
        *last = offset;
        int32_t seq = base_seq >= 0 ? increment_sequence(base_seq, off_delta) : -1;
        size_t need = 200 + (size_t)label_len + (print_data ? (size_t)(klen > 0 ? klen : 0) + (size_t)(vlen > 0 ? vlen : 0) : 0);
        for (int32_t h = 0; h < nh; h++) need += (size_t)hk_len[h] + 1;
        if (ob_reserve(o, need) < 0) {
            PyErr_NoMemory();
            return -1;
        }
        PUTLIT(o, "| offset: ");
        ob_int(o, offset);
        PUTLIT(o, " ");
        ob_put(o, label, (size_t)label_len);
        PUTLIT(o, ": ");
        ob_int(o, ts);
        PUTLIT(o, " keySize: ");
        ob_int(o, klen >= 0 ? klen : -1);
        PUTLIT(o, " valueSize: ");
        ob_int(o, vlen >= 0 ? vlen : -1);
        PUTLIT(o, " sequence: ");
        ob_int(o, seq);
        PUTLIT(o, " headerKeys: [");
        for (int32_t h = 0; h < nh; h++) {
            if (h) PUTLIT(o, ",");
            ob_put(o, (const char *)b + hk_pos[h], (size_t)hk_len[h]);
        }
        PUTLIT(o, "]");
        if (print_data) {
            if (klen >= 0) {
                PUTLIT(o, " key: ");
                ob_put(o, (const char *)b + kpos, (size_t)klen);
            }
            if (vlen >= 0) {
                PUTLIT(o, " payload: ");
                ob_put(o, (const char *)b + vpos, (size_t)vlen);
            }
        }
        PUTLIT(o, "\n");
    }
    return 1;
}

static inline void ob_bool(outbuf *o, int v) {
    if (v)
        PUTLIT(o, "true");
    else
        PUTLIT(o, "false");
}

/*
 * dump_batch(buf, start, end, hdr, label, codec_name, print_horizon, deep, print_data, last, java_gaps)
 *   hdr = (position, size, base_offset, last_offset_delta, count, base_seq, producer_id, producer_epoch,
 *          partition_leader_epoch, attributes, base_ts, max_ts, magic, crc, valid)
 * [, as_bytes] -> (text, last, gaps) | None; text is str, or the UTF-8 bytes with as_bytes (written to stdout as
 * they are). The batch line is DumpLogSegments' 2.2+ form (with deleteHorizonMs when
 * print_horizon); with `deep` the record lines follow (compact 3.0+ form).
 */
static PyObject *dump_batch(PyObject *self, PyObject *args) {
    Py_buffer view;
    Py_ssize_t start, end;
    long long position, size, base_offset, producer_id, base_ts, max_ts, crc, last;
    int last_offset_delta, count, base_seq, producer_epoch, ple, attributes, magic, valid;
    const char *label, *codec;
    Py_ssize_t label_len, codec_len;
    int print_horizon, deep, print_data, java_gaps, as_bytes = 0;
    if (!PyArg_ParseTuple(args, "y*nn(LLLiiiLiiiLLiLp)y#y#pppLp|p", &view, &start, &end, &position, &size, &base_offset,
                          &last_offset_delta, &count, &base_seq, &producer_id, &producer_epoch, &ple, &attributes,
                          &base_ts, &max_ts, &magic, &crc, &valid, &label, &label_len, &codec, &codec_len,
                          &print_horizon, &deep, &print_data, &last, &java_gaps, &as_bytes))
        return NULL;
    const uint8_t *b = (const uint8_t *)view.buf;
    static outbuf keep = {NULL, 0, 0};
    outbuf o = keep;
    keep.data = NULL;
    keep.cap = 0;
    PyObject *gaps = PyList_New(0);
    if (!gaps) goto error;
    if (end > view.len) goto fallback;
    /* the record lines take about the batch's bytes plus ~150 per record: one allocation, not a realloc chain */
    size_t guess = 600 + (size_t)label_len + (size_t)codec_len;
    if (deep && end > start && count > 0 && count < (1 << 24))
        guess += (size_t)(end - start) + (size_t)count * (160 + (size_t)label_len);
    if (ob_reserve(&o, guess) < 0) goto nomem;
    int64_t last_offset;
    if (__builtin_add_overflow((int64_t)base_offset, (int64_t)last_offset_delta, &last_offset)) goto fallback;
    int32_t last_seq = base_seq == -1 ? -1 : increment_sequence(base_seq, last_offset_delta);
    PUTLIT(&o, "baseOffset: ");
    ob_int(&o, base_offset);
    PUTLIT(&o, " lastOffset: ");
    ob_int(&o, last_offset);
    PUTLIT(&o, " count: ");
    ob_int(&o, count);
    PUTLIT(&o, " baseSequence: ");
    ob_int(&o, base_seq);
    PUTLIT(&o, " lastSequence: ");
    ob_int(&o, last_seq);
    PUTLIT(&o, " producerId: ");
    ob_int(&o, producer_id);
    PUTLIT(&o, " producerEpoch: ");
    ob_int(&o, producer_epoch);
    PUTLIT(&o, " partitionLeaderEpoch: ");
    ob_int(&o, ple);
    PUTLIT(&o, " isTransactional: ");
    ob_bool(&o, attributes & 0x10);
    PUTLIT(&o, " isControl: ");
    ob_bool(&o, attributes & 0x20);
    if (print_horizon) {
        if (attributes & 0x40) {
            PUTLIT(&o, " deleteHorizonMs: OptionalLong[");
            ob_int(&o, base_ts);
            PUTLIT(&o, "]");
        } else {
            PUTLIT(&o, " deleteHorizonMs: OptionalLong.empty");
        }
    }
    PUTLIT(&o, " position: ");
    ob_int(&o, position);
    PUTLIT(&o, " ");
    ob_put(&o, label, (size_t)label_len);
    PUTLIT(&o, ": ");
    ob_int(&o, max_ts);
    PUTLIT(&o, " size: ");
    ob_int(&o, size);
    PUTLIT(&o, " magic: ");
    ob_int(&o, magic);
    PUTLIT(&o, " compresscodec: ");
    ob_put(&o, codec, (size_t)codec_len);
    PUTLIT(&o, " crc: ");
    ob_int(&o, crc);
    PUTLIT(&o, " isvalid: ");
    ob_bool(&o, valid);
    PUTLIT(&o, "\n");
    if (deep) {
        int r = put_records(&o, b, start, end, count, base_offset, base_ts, max_ts, (attributes & 0x08) != 0, base_seq,
                            label, label_len, print_data, &last, java_gaps, gaps);
        if (r < 0) goto error;
        if (r == 0) goto fallback;
    }
    {
        /* as_bytes: the UTF-8 bytes as they go to stdout (every key, value and header key was checked to be strictly
         * valid UTF-8 above, so decoding and re-encoding them would only cost two copies of the whole text) */
        PyObject *text = as_bytes ? PyBytes_FromStringAndSize(o.data, (Py_ssize_t)o.len)
                                  : PyUnicode_DecodeUTF8(o.data, (Py_ssize_t)o.len, "strict");
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

/* =====================================================================================================================
 * CRC-32C and the header walks of verify-crc and rebuild-index.
 *
 * Why in C: the per-batch cost of the Python walk (a memoryview slice, one crc32c() call with ~2.8 us of call overhead,
 * a struct unpack and a few compares) was 5x the cost of the CRC itself on 16 KiB batches. Here the walk, the CRC and
 * the checks of a whole run of batches happen in one call with the GIL released; Python only sees aggregates (or one
 * small packed struct per batch) and takes over, with the reference code, at the first entry that is not plainly good.
 * ===================================================================================================================*/

#define CRC32C_POLY 0x82F63B78u /* Castagnoli polynomial, bit-reflected */
#define CRC_LONG 2048           /* block length of the 3-stream interleave for long buffers */
#define CRC_SHORT 256           /* ... and for the tail of a batch */
#ifndef CRC_PREFETCH
#define CRC_PREFETCH 4096 /* bytes ahead of each stream to prefetch (DRAM latency hiding) */
#endif

static uint32_t crc_table[8][256];                   /* slicing-by-8 tables (portable path) */
static uint32_t crc_shift_long[4][256];              /* multiply a CRC state by x^(8*CRC_LONG) mod P */
static uint32_t crc_shift_short[4][256];             /* multiply a CRC state by x^(8*CRC_SHORT) mod P */
static uint32_t (*crc_update)(uint32_t, const uint8_t *, size_t); /* chosen at import: hardware or tables */
static const char *crc_impl_name = "slicing-by-8";

/* a*b modulo P in the reflected representation (bit 31 = x^0), as zlib's multmodp */
static uint32_t multmodp(uint32_t a, uint32_t b) {
    uint32_t m = (uint32_t)1 << 31, p = 0;
    for (;;) {
        if (a & m) {
            p ^= b;
            if ((a & (m - 1)) == 0) break;
        }
        m >>= 1;
        b = b & 1 ? (b >> 1) ^ CRC32C_POLY : b >> 1;
    }
    return p;
}

/* x^(8n) mod P: the operator that appends n zero bytes to a raw (unconditioned) CRC state */
static uint32_t x8nmodp(size_t n) {
    uint32_t p = (uint32_t)1 << 31; /* x^0 */
    for (size_t i = 0; i < 8 * n; i++) p = p & 1 ? (p >> 1) ^ CRC32C_POLY : p >> 1;
    return p;
}

/* Byte-wise tables so that shifting a state by a fixed length costs 4 lookups (multmodp is linear in b). */
static void make_shift_table(uint32_t t[4][256], size_t n) {
    uint32_t op = x8nmodp(n);
    for (int k = 0; k < 4; k++)
        for (uint32_t i = 0; i < 256; i++) t[k][i] = multmodp(op, i << (8 * k));
}

static inline uint32_t crc_shift(uint32_t t[4][256], uint32_t crc) {
    return t[0][crc & 0xff] ^ t[1][(crc >> 8) & 0xff] ^ t[2][(crc >> 16) & 0xff] ^ t[3][crc >> 24];
}

/* Portable CRC-32C: slicing-by-8 (bytes assembled explicitly, so it is endian-neutral). State in, state out. */
static uint32_t crc_sw(uint32_t crc, const uint8_t *p, size_t n) {
    while (n && ((uintptr_t)p & 7)) {
        crc = crc_table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
        n--;
    }
    while (n >= 8) {
        uint32_t lo = crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
        uint32_t hi = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24;
        crc = crc_table[7][lo & 0xff] ^ crc_table[6][(lo >> 8) & 0xff] ^ crc_table[5][(lo >> 16) & 0xff] ^
              crc_table[4][lo >> 24] ^ crc_table[3][hi & 0xff] ^ crc_table[2][(hi >> 8) & 0xff] ^
              crc_table[1][(hi >> 16) & 0xff] ^ crc_table[0][hi >> 24];
        p += 8;
        n -= 8;
    }
    while (n--) crc = crc_table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return crc;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define KAFKALOG_HW_CRC 1
#include <nmmintrin.h>

/* SSE4.2 CRC-32C. The crc32 instruction has a latency of 3 cycles and a throughput of 1 per cycle, so one stream runs
 * at a third of the possible speed: split each 3*L block into three L-byte streams computed together, then merge them
 * with the linearity of the CRC: state(A||B) = state(A) * x^(8|B|) + state_from_zero(B)  (mod P). */
__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t crc, const uint8_t *p, size_t n) {
    uint64_t c0 = crc;
    while (n && ((uintptr_t)p & 7)) { /* align the 8-byte loads */
        c0 = _mm_crc32_u8((uint32_t)c0, *p++);
        n--;
    }
    while (n >= 3 * CRC_LONG) {
        uint64_t c1 = 0, c2 = 0, a, b, c;
        const uint8_t *e = p + CRC_LONG;
        do {
            if (((uintptr_t)p & 63) == 0) { /* pull the next lines of all three streams early (DRAM-bound case) */
                __builtin_prefetch(p + CRC_PREFETCH);
                __builtin_prefetch(p + CRC_LONG + CRC_PREFETCH);
                __builtin_prefetch(p + 2 * CRC_LONG + CRC_PREFETCH);
            }
            memcpy(&a, p, 8);
            memcpy(&b, p + CRC_LONG, 8);
            memcpy(&c, p + 2 * CRC_LONG, 8);
            c0 = _mm_crc32_u64(c0, a);
            c1 = _mm_crc32_u64(c1, b);
            c2 = _mm_crc32_u64(c2, c);
            p += 8;
        } while (p < e);
        c0 = crc_shift(crc_shift_long, (uint32_t)c0) ^ (uint32_t)c1;
        c0 = crc_shift(crc_shift_long, (uint32_t)c0) ^ (uint32_t)c2;
        p += 2 * CRC_LONG;
        n -= 3 * CRC_LONG;
    }
    while (n >= 3 * CRC_SHORT) {
        uint64_t c1 = 0, c2 = 0, a, b, c;
        const uint8_t *e = p + CRC_SHORT;
        do {
            memcpy(&a, p, 8);
            memcpy(&b, p + CRC_SHORT, 8);
            memcpy(&c, p + 2 * CRC_SHORT, 8);
            c0 = _mm_crc32_u64(c0, a);
            c1 = _mm_crc32_u64(c1, b);
            c2 = _mm_crc32_u64(c2, c);
            p += 8;
        } while (p < e);
        c0 = crc_shift(crc_shift_short, (uint32_t)c0) ^ (uint32_t)c1;
        c0 = crc_shift(crc_shift_short, (uint32_t)c0) ^ (uint32_t)c2;
        p += 2 * CRC_SHORT;
        n -= 3 * CRC_SHORT;
    }
    while (n >= 8) {
        uint64_t a;
        memcpy(&a, p, 8);
        c0 = _mm_crc32_u64(c0, a);
        p += 8;
        n -= 8;
    }
    while (n--) c0 = _mm_crc32_u8((uint32_t)c0, *p++);
    return (uint32_t)c0;
}
#endif

static void crc_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ CRC32C_POLY : c >> 1;
        crc_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int k = 1; k < 8; k++) crc_table[k][i] = (crc_table[k - 1][i] >> 8) ^ crc_table[0][crc_table[k - 1][i] & 0xff];
    make_shift_table(crc_shift_long, CRC_LONG);
    make_shift_table(crc_shift_short, CRC_SHORT);
    crc_update = crc_sw;
#ifdef KAFKALOG_HW_CRC
    __builtin_cpu_init();
    if (__builtin_cpu_supports("sse4.2")) {
        crc_update = crc_hw;
        crc_impl_name = "sse4.2-3way";
    }
#endif
}

/* CRC-32C of a byte range with the standard pre/post inversion (what crc32c.crc32c computes) */
static inline uint32_t crc32c_of(const uint8_t *p, size_t n) { return ~crc_update(0xFFFFFFFFu, p, n); }

/* crc32c(data, value=0) -> int: same contract as crc32c.crc32c (value continues a previous CRC) */
static PyObject *py_crc32c(PyObject *self, PyObject *args) {
    Py_buffer view;
    unsigned int value = 0;
    if (!PyArg_ParseTuple(args, "y*|I", &view, &value)) return NULL;
    uint32_t r;
    Py_BEGIN_ALLOW_THREADS r = ~crc_update(~(uint32_t)value, (const uint8_t *)view.buf, (size_t)view.len);
    Py_END_ALLOW_THREADS PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(r);
}

/* ---------------------------------------------------------------------------------------------- big-endian reads */
static inline int64_t be64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v = v << 8 | p[i];
    return (int64_t)v;
}
static inline int32_t be32(const uint8_t *p) {
    return (int32_t)((uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3]);
}
static inline int16_t be16(const uint8_t *p) { return (int16_t)((uint16_t)p[0] << 8 | (uint16_t)p[1]); }

/* little-endian writes of the packed records handed to Python (struct format '<...') */
static inline uint8_t *le_put(uint8_t *o, uint64_t v, int n) {
    for (int i = 0; i < n; i++) o[i] = (uint8_t)(v >> (8 * i));
    return o + n;
}
static inline uint8_t *be_put(uint8_t *o, uint64_t v, int n) {
    for (int i = 0; i < n; i++) o[i] = (uint8_t)(v >> (8 * (n - 1 - i)));
    return o + n;
}

/* A growable byte buffer usable without the GIL (PyMem_Raw* are thread-safe). */
typedef struct {
    uint8_t *data;
    size_t len, cap;
} rawbuf;

static int rb_reserve(rawbuf *o, size_t extra) {
    if (o->len + extra <= o->cap) return 0;
    size_t ncap = o->cap ? o->cap : 4096;
    while (ncap < o->len + extra) ncap *= 2;
    uint8_t *n = (uint8_t *)PyMem_RawRealloc(o->data, ncap);
    if (!n) return -1;
    o->data = n;
    o->cap = ncap;
    return 0;
}

static PyObject *rb_bytes(rawbuf *o) { return PyBytes_FromStringAndSize((const char *)o->data, (Py_ssize_t)o->len); }

/* Fields of the 61-byte v2 batch header (byte offsets as in DefaultRecordBatch). */
typedef struct {
    int64_t base_offset, base_ts, max_ts, producer_id;
    int32_t length, epoch, last_offset_delta, base_sequence, records_count;
    uint32_t crc;
    int16_t attributes, producer_epoch;
    int8_t magic;
} v2hdr;

static inline void read_v2(const uint8_t *b, v2hdr *h) {
    h->base_offset = be64(b);
    h->length = be32(b + 8);
    h->epoch = be32(b + 12);
    h->magic = (int8_t)b[16];
    h->crc = (uint32_t)be32(b + 17);
    h->attributes = be16(b + 21);
    h->last_offset_delta = be32(b + 23);
    h->base_ts = be64(b + 27);
    h->max_ts = be64(b + 35);
    h->producer_id = be64(b + 43);
    h->producer_epoch = be16(b + 51);
    h->base_sequence = be32(b + 53);
    h->records_count = be32(b + 57);
}

/* ------------------------------------------------------------------------------------- CRCs on two threads */
/*
 * Why: one core's crc32 instruction stream reads page-cache memory at 13-16 GB/s, about half of what a plain read
 * reaches, so the walks below were CRC-bound on one core. Two threads on two halves of a buffer measured ~32 GB/s.
 *
 * How, without changing any result: the walks stay exactly as they were, sequential, and only ask for "the CRC of
 * the entry at pos" through crcw_get. Once a call has CRC'd min_bytes on its own (so short runs, e.g. between two
 * corrupt batches, never pay for a thread), crcw_get predicts the following entries from their length fields (the
 * walks' own structural rule: magic 2, 49 <= length <= max_len, inside the buffer, starting below `limit`) for a
 * window of up to as many bytes as the call has CRC'd so far (so wasted CRCs, past where a walk stops for another
 * reason, never exceed the useful ones) and at most window_max (so memory stays flat in the segment size),
 * computes those CRCs on `threads` threads (the calling thread plus workers created for the window, claiming
 * ~window/16-byte chunks so that a busy core does not hold the other one up), and hands them out in order. A request
 * the prediction does not hold (another position or length) is computed directly. The values are the same whichever
 * thread computes them, so every walk returns what its sequential version returned.
 */
#if !defined(_WIN32)
#define KAFKALOG_THREADS 1
#include <pthread.h>
#include <unistd.h>
#endif

#define CRCW_MAX_THREADS 8
#define CRCW_MAX_ENTRIES 65536 /* 1 MiB of bookkeeping at most, whatever the batch size */

static int par_threads = 1;                  /* set in crc_init: 2 when more than one CPU is online */
static int64_t par_min_bytes = 4 << 20;      /* a call CRCs this much on its own before using threads */
static int64_t par_window_max = 32 << 20;    /* largest window of predicted entries */
static uint64_t par_windows;                 /* windows computed on more than one thread (for tests and benchmarks) */

typedef struct {
    const uint8_t *b;
    int64_t n, limit, max_len; /* prediction bounds: entries inside [0, n), starting below limit, length <= max_len */
    int threads;
    int64_t min_bytes, window_max, consumed; /* consumed: bytes CRC'd so far in this call */
    int64_t *pos;                            /* predicted entries (start, length field) and their CRCs */
    int32_t *len;
    uint32_t *crc;
    size_t cap, count, next;
    size_t *chunk; /* chunk k is entries [chunk[k], chunk[k + 1]) */
    size_t ccap, nchunks, claim;
} crcwin;

static void crcw_init(crcwin *w, const uint8_t *b, int64_t n, int64_t limit, int64_t max_len) {
    memset(w, 0, sizeof(*w));
    w->b = b, w->n = n, w->limit = limit, w->max_len = max_len;
    w->threads = par_threads, w->min_bytes = par_min_bytes, w->window_max = par_window_max;
}

static void crcw_free(crcwin *w) {
    PyMem_RawFree(w->pos);
    PyMem_RawFree(w->len);
    PyMem_RawFree(w->crc);
    PyMem_RawFree(w->chunk);
}

static void crcw_work(crcwin *w) {
    for (;;) {
        size_t k = __atomic_fetch_add(&w->claim, 1, __ATOMIC_RELAXED);
        if (k >= w->nchunks) return;
        for (size_t i = w->chunk[k]; i < w->chunk[k + 1]; i++)
            w->crc[i] = crc32c_of(w->b + w->pos[i] + 21, (size_t)w->len[i] - 9);
    }
}

#ifdef KAFKALOG_THREADS
static void *crcw_thread(void *arg) {
    crcw_work((crcwin *)arg);
    return NULL;
}
#endif

static int crcw_grow(crcwin *w) {
    size_t ncap = w->cap ? 2 * w->cap : 1024;
    if (ncap > CRCW_MAX_ENTRIES) ncap = CRCW_MAX_ENTRIES;
    int64_t *p = (int64_t *)PyMem_RawRealloc(w->pos, ncap * sizeof(int64_t));
    if (p) w->pos = p;
    int32_t *l = (int32_t *)PyMem_RawRealloc(w->len, ncap * sizeof(int32_t));
    if (l) w->len = l;
    uint32_t *c = (uint32_t *)PyMem_RawRealloc(w->crc, ncap * sizeof(uint32_t));
    if (c) w->crc = c;
    size_t *k = (size_t *)PyMem_RawRealloc(w->chunk, (ncap + 1) * sizeof(size_t));
    if (k) w->chunk = k;
    if (!p || !l || !c || !k) return -1;
    w->cap = ncap;
    return 0;
}

/* Predict the entries from q on (at least one, up to `target` bytes) and compute their CRCs. On any shortage it
 * predicts fewer (possibly none): crcw_get then computes directly, so this never fails. */
static void crcw_fill(crcwin *w, int64_t q, int64_t target) {
    const int64_t chunk_bytes = target / 16 + 1;
    int64_t total = 0, cbytes = 0;
    w->count = w->next = w->nchunks = w->claim = 0;
    while ((w->count == 0 || total < target) && q < w->limit && w->n - q >= 61) {
        const uint8_t *p = w->b + q;
        int32_t length = be32(p + 8);
        if (p[16] != 2 || length < 49 || length > w->max_len || q + 12 + length > w->n) break;
        if (w->count == w->cap && (w->cap == CRCW_MAX_ENTRIES || crcw_grow(w) < 0)) break;
        if (cbytes == 0) w->chunk[w->nchunks++] = w->count;
        w->pos[w->count] = q;
        w->len[w->count] = length;
        w->count++;
        total += length, cbytes += length;
        if (cbytes >= chunk_bytes) cbytes = 0;
        q += 12 + (int64_t)length;
    }
    if (!w->count) return;
    w->chunk[w->nchunks] = w->count;
    w->consumed += total;
#ifdef KAFKALOG_THREADS
    pthread_t tid[CRCW_MAX_THREADS];
    int started = 0;
    if (total >= w->min_bytes)
        for (int t = 1; t < w->threads && (size_t)t < w->nchunks; t++) {
            if (pthread_create(&tid[started], NULL, crcw_thread, w) != 0) break; /* fewer threads: same results */
            started++;
        }
    crcw_work(w);
    for (int t = 0; t < started; t++) pthread_join(tid[t], NULL);
    if (started) __atomic_fetch_add(&par_windows, 1, __ATOMIC_RELAXED);
#else
    crcw_work(w);
#endif
}

/* The CRC-32C of bytes 21 .. 12+length of the entry at pos (its length field already checked by the caller). */
static inline uint32_t crcw_get(crcwin *w, int64_t pos, int32_t length) {
    if (w->next < w->count) {
        if (w->pos[w->next] == pos && w->len[w->next] == length) return w->crc[w->next++];
        w->count = w->next = 0; /* the walk went elsewhere than predicted (defensive: the callers' walks do not) */
    }
    if (w->threads > 1 && w->consumed >= w->min_bytes) {
        int64_t target = w->consumed < w->window_max ? w->consumed : w->window_max;
        crcw_fill(w, pos, target > 0 ? target : 1);
        if (w->count && w->pos[0] == pos && w->len[0] == length) return w->crc[w->next++];
    }
    w->consumed += length;
    return crc32c_of(w->b + pos + 21, (size_t)length - 9);
}

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
    Py_BEGIN_ALLOW_THREADS while (pos < (int64_t)end - 17) {
        int32_t size = be32(b + pos + 8);
        int8_t magic = (int8_t)b[pos + 16];
        if (size < 14) {
            reason = "bad-size";
            break;
        }
        if (pos > (int64_t)end - 12 - size) break; /* runs past end: the walk stops silently */
        if (magic != 2) {
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
 * The fast path of kafkalog_cli.ops.verify._Walker.run: from `pos`, accept v2 batches that the Python walk would
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
        if (n - pos < 61) break;
        const uint8_t *p = b + pos;
        v2hdr h;
        int32_t size = be32(p + 8);
        if (p[16] != 2 || size < 49 || size > max_size || pos + 12 + size > n) break;
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
            o = le_put(o, (uint64_t)(size + 12), 4);
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
        pos += 12 + (int64_t)size;
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
    const int64_t max_off_entries = segment_index_bytes / 8, max_time_entries = segment_index_bytes / 12 - 1;
    int64_t valid = 0, last_indexed = 0, max_ts = -1, max_ts_off = base_offset, last_index_off = -1;
    int64_t last_time_ts = -1, last_time_off = base_offset, pos = 0, batches = 0, last = 0;
    int64_t n_index = 0, n_time = 0, code = 0, sa = 0, sb = 0;
    int has_last = 0, fallback = 0, nomem = 0;
    crcwin w;
    crcw_init(&w, b, end, end, INT32_MAX);
    Py_BEGIN_ALLOW_THREADS while (pos < end - 17) {
        if (pos > 2147483647LL) { /* the broker's positions are int: it refuses such a segment */
            code = 11, sa = pos;
            break;
        }
        const uint8_t *p = b + pos;
        int32_t length = be32(p + 8);
        int8_t magic = (int8_t)p[16];
        if (length < 14) {
            code = 1, sa = length;
            break;
        }
        int64_t size = (int64_t)length + 12;
        if (pos > end - size) {
            code = 2, sa = size, sb = end - pos;
            break;
        }
        if (magic < 2) { /* legacy: the Python function handles the whole segment */
            fallback = 1;
            break;
        }
        if (size < 61) {
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
            if (rb_reserve(&index, 8) < 0) {
                nomem = 1;
                break;
            }
            be_put(be_put(index.data + index.len, (uint32_t)rel, 4), (uint32_t)valid, 4);
            index.len += 8, n_index++;
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
                if (rb_reserve(&tindex, 12) < 0) {
                    nomem = 1;
                    break;
                }
                be_put(be_put(tindex.data + tindex.len, (uint64_t)max_ts, 8), (uint32_t)(max_ts_off - base_offset), 4);
                tindex.len += 12, n_time++;
                last_time_ts = max_ts, last_time_off = max_ts_off;
            }
            last_indexed = valid;
        }
        valid += size;
        pos += size;
        batches++;
        last = b_last, has_last = 1;
    }
    if (!code && !fallback && !nomem && pos < end && !(pos < end - 17)) code = 10, sa = end - pos; /* while-else */
    if (!fallback && !nomem && n_time && max_ts_off < last_time_off) {
        /* the final maybeAppend throws InvalidOffsetException too: a problem, not a skipped entry */
        if (!code) code = 12, sa = last_time_off, sb = max_ts_off, pos = valid;
    } else if (!fallback && !nomem && max_ts > last_time_ts) {
        if (rb_reserve(&tindex, 12) < 0)
            nomem = 1;
        else {
            be_put(be_put(tindex.data + tindex.len, (uint64_t)max_ts, 8), (uint32_t)(max_ts_off - base_offset), 4);
            tindex.len += 12;
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

/* crc32c_portable(data, value=0) -> int: the slicing-by-8 path whatever the CPU, so tests cover it everywhere */
static PyObject *py_crc32c_portable(PyObject *self, PyObject *args) {
    Py_buffer view;
    unsigned int value = 0;
    if (!PyArg_ParseTuple(args, "y*|I", &view, &value)) return NULL;
    uint32_t r = ~crc_sw(~(uint32_t)value, (const uint8_t *)view.buf, (size_t)view.len);
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(r);
}

static PyObject *crc_impl(PyObject *self, PyObject *noargs) { return PyUnicode_FromString(crc_impl_name); }

/*
 * parallel_config(threads=-1, min_bytes=-1, window=-1) -> (threads, min_bytes, window, windows) as they were before
 * the call; `windows` counts the windows whose CRCs ran on more than one thread since import.
 * Negative (or absent) leaves a setting alone. Tests use it to force tiny windows and thresholds (many window
 * boundaries on small segments), benchmarks to compare one and two threads. Read once at the start of each walk.
 */
static PyObject *parallel_config(PyObject *self, PyObject *args) {
    long long threads = -1, min_bytes = -1, window = -1;
    if (!PyArg_ParseTuple(args, "|LLL", &threads, &min_bytes, &window)) return NULL;
    PyObject *old = Py_BuildValue("(iLLK)", par_threads, (long long)par_min_bytes, (long long)par_window_max,
                                  (unsigned long long)__atomic_load_n(&par_windows, __ATOMIC_RELAXED));
    if (!old) return NULL;
    if (threads == 0 || threads > CRCW_MAX_THREADS || window == 0) {
        Py_DECREF(old);
        PyErr_Format(PyExc_ValueError, "parallel_config: need 1 <= threads <= %d and window >= 1", CRCW_MAX_THREADS);
        return NULL;
    }
#ifndef KAFKALOG_THREADS
    if (threads > 1) threads = 1; /* no threads on this platform */
#endif
    if (threads > 0) par_threads = (int)threads;
    if (min_bytes >= 0) par_min_bytes = min_bytes;
    if (window > 0) par_window_max = window;
    return old;
}


/* ------------------------------------------------------------------------------------------------ SIGBUS guard
 * Why: a read through a file mapping raises SIGBUS when the page cannot be read (an I/O error under the page) or
 * no longer exists (the file was truncated while mapped). Python cannot catch it: the process dies with exit 135.
 * kafkalog maps segments, indexes and checkpoints read-only (storage/segment.py MappedFile) and reads them from
 * Python (struct, re, slicing) and from the C walks above on two threads, so the fix sits under all of them: every
 * map is registered here, and a process-wide SIGBUS handler replaces the one faulting page of a registered map by
 * an anonymous zero page (mmap MAP_FIXED over it) and records the page. The faulting instruction then re-executes
 * and reads zeros, whichever thread or code touched it; storage/safe_read.py asks for the recorded pages after the
 * walk and reports them as located `unreadable` / `truncated-during-read` findings. A fault outside every
 * registered map is passed to the previous handler (faulthandler, or the default action). Only async-signal-safe
 * operations run in the handler: atomics and the mmap system call.
 */
#if defined(__linux__) || defined(__APPLE__) || defined(__FreeBSD__)
#define KAFKALOG_GUARD 1
#include <signal.h>
#include <sys/mman.h>

#define GUARD_SLOTS 256
#define GUARD_RECS 65536

typedef struct {
    uintptr_t start; /* 0: free slot */
    uintptr_t len;
    int overflow;    /* more faults than GUARD_RECS could hold: lo/hi bound them */
    uintptr_t lo, hi;
} gslot;

static gslot g_slots[GUARD_SLOTS];
static uintptr_t g_rec_page[GUARD_RECS];
static int g_rec_slot[GUARD_RECS];
static unsigned g_rec_n;
static uintptr_t g_pagesz = 4096;
static struct sigaction g_old;
static int g_installed;

static void guard_chain(int sig, siginfo_t *si, void *uc) {
    if ((g_old.sa_flags & SA_SIGINFO) && g_old.sa_sigaction) {
        g_old.sa_sigaction(sig, si, uc);
        return;
    }
    if (g_old.sa_handler != SIG_DFL && g_old.sa_handler != SIG_IGN && g_old.sa_handler) {
        g_old.sa_handler(sig);
        return;
    }
    signal(sig, SIG_DFL); /* a real fault re-executes and kills; a raised signal is re-raised */
    raise(sig);
}

static void guard_handler(int sig, siginfo_t *si, void *uc) {
    uintptr_t a = (uintptr_t)si->si_addr;
    if (si->si_code > 0) { /* sent by the kernel for a fault, not by kill()/raise() */
        for (int i = 0; i < GUARD_SLOTS; i++) {
            uintptr_t s = __atomic_load_n(&g_slots[i].start, __ATOMIC_ACQUIRE);
            uintptr_t n = __atomic_load_n(&g_slots[i].len, __ATOMIC_ACQUIRE);
            if (!s || a < s || a >= s + n) continue;
            uintptr_t page = a & ~(g_pagesz - 1);
            void *r = mmap((void *)page, g_pagesz, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
            if (r == MAP_FAILED) break;
            unsigned k = __atomic_fetch_add(&g_rec_n, 1, __ATOMIC_ACQ_REL);
            if (k < GUARD_RECS) {
                g_rec_page[k] = page;
                __atomic_store_n(&g_rec_slot[k], i + 1, __ATOMIC_RELEASE);
            } else {
                __atomic_store_n(&g_slots[i].overflow, 1, __ATOMIC_RELEASE);
                uintptr_t lo = __atomic_load_n(&g_slots[i].lo, __ATOMIC_ACQUIRE);
                while ((lo == 0 || page < lo) &&
                       !__atomic_compare_exchange_n(&g_slots[i].lo, &lo, page, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
                }
                uintptr_t hi = __atomic_load_n(&g_slots[i].hi, __ATOMIC_ACQUIRE);
                while (page + g_pagesz > hi &&
                       !__atomic_compare_exchange_n(&g_slots[i].hi, &hi, page + g_pagesz, 0, __ATOMIC_ACQ_REL,
                                                    __ATOMIC_ACQUIRE)) {
                }
            }
            return;
        }
    }
    guard_chain(sig, si, uc);
}

/* (Re)install the handler when another one (faulthandler enabled later, say) replaced it. */
static int guard_install(void) {
    struct sigaction cur;
    if (sigaction(SIGBUS, NULL, &cur) != 0) return -1;
    if ((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == guard_handler) return 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = guard_handler;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGBUS, &sa, &g_old) != 0) return -1;
    g_installed = 1;
    return 0;
}

/* guard_register(buffer) -> slot (>= 0), or -1 when every slot is taken (the caller reads the file instead). */
static PyObject *guard_register(PyObject *self, PyObject *args) {
    Py_buffer view;
    if (!PyArg_ParseTuple(args, "y*", &view)) return NULL;
    uintptr_t s = (uintptr_t)view.buf;
    uintptr_t n = (uintptr_t)view.len;
    PyBuffer_Release(&view); /* the caller keeps the map alive until guard_release */
    if (s % g_pagesz) {
        PyErr_SetString(PyExc_ValueError, "guard_register: the buffer must start on a page (an mmap)");
        return NULL;
    }
    if (guard_install() != 0) return PyErr_SetFromErrno(PyExc_OSError);
    /* a slot overlapping the new map is stale: its map was unmapped later by the garbage collector (a view of it
     * was still alive at close), since the kernel gave the addresses to this one; drop it so faults here are
     * recorded for the new map */
    for (int i = 0; i < GUARD_SLOTS; i++) {
        uintptr_t os_ = g_slots[i].start, on = g_slots[i].len;
        if (os_ && os_ < s + n && s < os_ + on) {
            __atomic_store_n(&g_slots[i].start, 0, __ATOMIC_RELEASE);
            __atomic_store_n(&g_slots[i].len, 0, __ATOMIC_RELEASE);
        }
    }
    for (int i = 0; i < GUARD_SLOTS; i++) {
        if (g_slots[i].start) continue;
        g_slots[i].overflow = 0;
        g_slots[i].lo = g_slots[i].hi = 0;
        __atomic_store_n(&g_slots[i].len, n, __ATOMIC_RELEASE);
        __atomic_store_n(&g_slots[i].start, s, __ATOMIC_RELEASE);
        return PyLong_FromLong(i);
    }
    return PyLong_FromLong(-1);
}

/* guard_faults(slot) -> (sorted page offsets from the map's start, overflow (lo, hi) offsets or None); the
 * records returned are consumed. */
static PyObject *guard_faults(PyObject *self, PyObject *args) {
    int slot;
    if (!PyArg_ParseTuple(args, "i", &slot)) return NULL;
    if (slot < 0 || slot >= GUARD_SLOTS || !g_slots[slot].start) {
        PyErr_SetString(PyExc_ValueError, "guard_faults: not a registered slot");
        return NULL;
    }
    uintptr_t s = g_slots[slot].start;
    PyObject *out = PyList_New(0);
    if (!out) return NULL;
    unsigned n = __atomic_load_n(&g_rec_n, __ATOMIC_ACQUIRE);
    if (n > GUARD_RECS) n = GUARD_RECS;
    for (unsigned k = 0; k < n; k++) {
        if (__atomic_load_n(&g_rec_slot[k], __ATOMIC_ACQUIRE) != slot + 1) continue;
        PyObject *v = PyLong_FromUnsignedLongLong((unsigned long long)(g_rec_page[k] - s));
        if (!v || PyList_Append(out, v) != 0) {
            Py_XDECREF(v);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(v);
        __atomic_store_n(&g_rec_slot[k], 0, __ATOMIC_RELEASE);
    }
    if (PyList_Sort(out) != 0) {
        Py_DECREF(out);
        return NULL;
    }
    if (__atomic_load_n(&g_slots[slot].overflow, __ATOMIC_ACQUIRE)) {
        unsigned long long lo = g_slots[slot].lo - s, hi = g_slots[slot].hi - s;
        return Py_BuildValue("N(KK)", out, lo, hi);
    }
    return Py_BuildValue("NO", out, Py_None);
}

/* guard_release(slot): the map is about to be closed; the fault records of the process are reset when no map is
 * registered any more. */
static PyObject *guard_release(PyObject *self, PyObject *args) {
    int slot;
    if (!PyArg_ParseTuple(args, "i", &slot)) return NULL;
    if (slot < 0 || slot >= GUARD_SLOTS) {
        PyErr_SetString(PyExc_ValueError, "guard_release: not a slot");
        return NULL;
    }
    __atomic_store_n(&g_slots[slot].start, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&g_slots[slot].len, 0, __ATOMIC_RELEASE);
    unsigned n = __atomic_load_n(&g_rec_n, __ATOMIC_ACQUIRE);
    if (n > GUARD_RECS) n = GUARD_RECS;
    for (unsigned k = 0; k < n; k++)
        if (g_rec_slot[k] == slot + 1) g_rec_slot[k] = 0;
    int busy = 0;
    for (int i = 0; i < GUARD_SLOTS && !busy; i++) busy = g_slots[i].start != 0;
    if (!busy) __atomic_store_n(&g_rec_n, 0, __ATOMIC_RELEASE);
    Py_RETURN_NONE;
}

/* first_nonzero(buffer, start, end) -> position of the first non-zero byte in [start, end), or end. Memory speed
 * (8-byte words), GIL released: the zero-run skips of verify-crc over preallocated or sparse tails. */
static PyObject *first_nonzero(PyObject *self, PyObject *args) {
    Py_buffer view;
    Py_ssize_t start, end;
    if (!PyArg_ParseTuple(args, "y*nn", &view, &start, &end)) return NULL;
    if (start < 0) start = 0;
    if (end > view.len) end = view.len;
    const unsigned char *b = (const unsigned char *)view.buf;
    Py_ssize_t p = start;
    Py_BEGIN_ALLOW_THREADS
    while (p < end && ((uintptr_t)(b + p) & 7)) {
        if (b[p]) goto done;
        p++;
    }
    while (p + 64 <= end) {
        const uint64_t *w = (const uint64_t *)(b + p);
        if (w[0] | w[1] | w[2] | w[3] | w[4] | w[5] | w[6] | w[7]) break;
        p += 64;
    }
    while (p < end && !b[p]) p++;
done:
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    return PyLong_FromSsize_t(p < end ? p : end);
}
#endif
static PyObject *scan_columns(PyObject *self, PyObject *args); /* defined in the scan block at the end */
static PyObject *check_records(PyObject *self, PyObject *args); /* defined in the verify --deep block at the end */
static PyObject *json_records(PyObject *self, PyObject *args); /* defined in the dump --format json block at the end */

static PyMethodDef methods[] = {
    {"dump_batch", dump_batch, METH_VARARGS, "Format one v2 batch's line and record lines, or return None to fall back."},
    {"crc32c", py_crc32c, METH_VARARGS, "CRC-32C of a buffer (optionally continuing `value`), GIL released."},
    {"crc32c_portable", py_crc32c_portable, METH_VARARGS, "CRC-32C by the portable table code (for tests)."},
    {"crc_implementation", crc_impl, METH_NOARGS, "Which CRC-32C code was chosen at import."},
    {"parallel_config", parallel_config, METH_VARARGS, "Get/set the threads, threshold and window of the CRC walks."},
    {"scan_v2", scan_v2, METH_VARARGS, "Header walk + CRC of v2 batches as packed records; stops at what it cannot handle."},
    {"verify_run", verify_run, METH_VARARGS, "verify-crc fast path over a run of clean v2 batches."},
    {"rebuild_index", rebuild_index, METH_VARARGS, "The recovery-rule index build of rebuild_segment, or None to fall back."},
#ifdef KAFKALOG_GUARD
    {"guard_register", guard_register, METH_VARARGS, "Register a read-only map with the SIGBUS guard; -> slot or -1."},
    {"guard_faults", guard_faults, METH_VARARGS, "Pages of a registered map replaced by zeros after a SIGBUS."},
    {"guard_release", guard_release, METH_VARARGS, "Unregister a map before it is closed."},
    {"first_nonzero", first_nonzero, METH_VARARGS, "Position of the first non-zero byte in [start, end), or end."},
#endif
    {"scan_columns", scan_columns, METH_VARARGS, "scan_v2's walk, filling column buffers for kafkalog scan."},
    {"check_records", check_records, METH_VARARGS, "verify-crc --deep: True if a v2 batch's records are certainly clean."},
    {"json_records", json_records, METH_VARARGS, "dump --format json: a v2 batch's record objects, or None to fall back."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_accel", "kafkalog's compiled dump fast path", -1, methods};

/* Two threads when another CPU is online (os.cpu_count() > 1); KAFKALOG_ACCEL_THREADS=N overrides (1: one thread). */
static void par_init(void) {
    par_threads = 1;
#ifdef KAFKALOG_THREADS
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    par_threads = cpus > 1 ? 2 : 1;
    const char *env = getenv("KAFKALOG_ACCEL_THREADS");
    if (env && *env) {
        long t = strtol(env, NULL, 10);
        par_threads = t < 1 ? 1 : t > CRCW_MAX_THREADS ? CRCW_MAX_THREADS : (int)t;
    }
#endif
}

PyMODINIT_FUNC PyInit__accel(void) {
    crc_init(); /* tables and the CPU dispatch, once */
    par_init();
#ifdef KAFKALOG_GUARD
    long pg = sysconf(_SC_PAGESIZE);
    if (pg > 0) g_pagesz = (uintptr_t)pg;
#endif
    return PyModule_Create(&module);
}

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
        pos++; /* attributes */
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
