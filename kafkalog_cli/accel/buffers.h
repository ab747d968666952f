/* kafkalog_cli/accel/buffers.h: the growable output buffer, digit/varint/UTF-8 helpers shared by the formatters and the record walks.
 * Part of the one translation unit kafkalog_cli/_accel.c (included there, never compiled alone; see its head). */
/* Always inlined: the hot helpers of the formatters and record walks. With the record decoder (record.h) inlined
 * into four walks, gcc's size budget stopped inlining ob_put / ob_int / rd_varint into put_records (a call per
 * field: +50 % CPU for the text dump in issue 21's A/B); forcing them keeps the code gcc produced before. */
#if defined(__GNUC__) || defined(__clang__)
#define HOT_INLINE static inline __attribute__((always_inline))
#else
#define HOT_INLINE static inline
#endif

typedef struct {
    char *data;
    size_t len;
    size_t cap;
    /* when set, `data` is this bytearray's storage, grown with PyByteArray_Resize and handed to Python as it is (no
     * copy; dump_run). Such a buffer is never ob_release'd. */
    PyObject *ba;
} outbuf;

static int ob_reserve(outbuf *o, size_t extra) {
    if (o->len + extra <= o->cap) return 0;
    size_t ncap = o->cap ? o->cap : 4096;
    while (ncap < o->len + extra) ncap *= 2;
    if (o->ba) {
        if (PyByteArray_Resize(o->ba, (Py_ssize_t)ncap) < 0) return -1;
        o->data = PyByteArray_AS_STRING(o->ba);
        o->cap = ncap;
        return 0;
    }
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

/* a formatter's kept buffer, taken for this call (handed back by ob_release): `static outbuf keep` in each */
static inline outbuf ob_take(outbuf *keep) {
    outbuf o = *keep;
    keep->data = NULL;
    keep->cap = 0;
    return o;
}

HOT_INLINE void ob_put(outbuf *o, const char *s, size_t n) {
    memcpy(o->data + o->len, s, n);
    o->len += n;
}

#define PUTLIT(o, s) ob_put((o), (s), sizeof(s) - 1)

static const char digit_pairs[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

/* decimal text of v, two digits per division (the integer fields were the largest part of dump_batch's time) */
HOT_INLINE void ob_int(outbuf *o, int64_t v) {
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
HOT_INLINE int rd_varint(const uint8_t *b, Py_ssize_t *pos, Py_ssize_t end, int32_t *out) {
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

HOT_INLINE int rd_varlong(const uint8_t *b, Py_ssize_t *pos, Py_ssize_t end, int64_t *out) {
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
        /* ASCII runs 32, then 8 bytes at a time (most keys and payloads are ASCII; this was 7% of a deep dump) */
        while (i + 32 <= n) {
            uint64_t w0, w1, w2, w3;
            memcpy(&w0, s + i, 8);
            memcpy(&w1, s + i + 8, 8);
            memcpy(&w2, s + i + 16, 8);
            memcpy(&w3, s + i + 24, 8);
            if ((w0 | w1 | w2 | w3) & 0x8080808080808080ull) break;
            i += 32;
        }
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
