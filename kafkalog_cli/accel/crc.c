/* kafkalog_cli/accel/crc.c: CRC-32C: hardware (SSE4.2, 3-stream interleave) or slicing-by-8 tables, chosen at import; crc32c(), crc32c_portable(), crc_implementation().
 * Part of the one translation unit kafkalog_cli/_accel.c (included there, never compiled alone; see its head). */
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
