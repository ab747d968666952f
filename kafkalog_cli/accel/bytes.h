/* kafkalog_cli/accel/bytes.h: big-endian reads, little-endian packing, a GIL-free byte buffer, and the v2 batch header reader.
 * Part of the one translation unit kafkalog_cli/_accel.c (included there, never compiled alone; see its head). */
/* ---------------------------------------------------------------------------------------------- big-endian reads */
/* One unaligned load and one byte swap per field where the compiler offers it (assembling the bytes one by one was
 * 7 % of a scan's CPU under perf, issue 14); the portable byte-by-byte form elsewhere. Same values either way. */
#if (defined(__GNUC__) || defined(__clang__)) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
static inline int64_t be64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return (int64_t)__builtin_bswap64(v);
}
static inline int32_t be32(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return (int32_t)__builtin_bswap32(v);
}
static inline int16_t be16(const uint8_t *p) {
    uint16_t v;
    memcpy(&v, p, 2);
    return (int16_t)__builtin_bswap16(v);
}
#else
static inline int64_t be64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v = v << 8 | p[i];
    return (int64_t)v;
}
static inline int32_t be32(const uint8_t *p) {
    return (int32_t)((uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3]);
}
static inline int16_t be16(const uint8_t *p) { return (int16_t)((uint16_t)p[0] << 8 | (uint16_t)p[1]); }
#endif

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

/* Fields of the V2_HEADER_SIZE (61) byte v2 batch header; offsets in layouts.h, generated from format/layouts.py. */
typedef struct {
    int64_t base_offset, base_ts, max_ts, producer_id;
    int32_t length, epoch, last_offset_delta, base_sequence, records_count;
    uint32_t crc;
    int16_t attributes, producer_epoch;
    int8_t magic;
} v2hdr;

static inline void read_v2(const uint8_t *b, v2hdr *h) { /* offsets from layouts.h (the Python declaration) */
    h->base_offset = be64(b + V2_BASE_OFFSET_OFFSET);
    h->length = be32(b + V2_BATCH_LENGTH_OFFSET);
    h->epoch = be32(b + V2_PARTITION_LEADER_EPOCH_OFFSET);
    h->magic = (int8_t)b[V2_MAGIC_OFFSET];
    h->crc = (uint32_t)be32(b + V2_CRC_OFFSET);
    h->attributes = be16(b + V2_ATTRIBUTES_OFFSET);
    h->last_offset_delta = be32(b + V2_LAST_OFFSET_DELTA_OFFSET);
    h->base_ts = be64(b + V2_BASE_TIMESTAMP_OFFSET);
    h->max_ts = be64(b + V2_MAX_TIMESTAMP_OFFSET);
    h->producer_id = be64(b + V2_PRODUCER_ID_OFFSET);
    h->producer_epoch = be16(b + V2_PRODUCER_EPOCH_OFFSET);
    h->base_sequence = be32(b + V2_BASE_SEQUENCE_OFFSET);
    h->records_count = be32(b + V2_RECORDS_COUNT_OFFSET);
}

/* One step of the entry walk of kafkalog_cli/storage/segment.py:walk (FileLogInputStream), shared by the header
 * walks scan_v2 (walk.c) and scan_table (scan_columns.c): the entry at `pos`, which the caller's loop guarantees has
 * more than HEADER_SIZE_UP_TO_MAGIC bytes before `end`. Returns NULL for a v2 entry of at least a v2 header (its size
 * field in *size, its whole length in *esize), else why the walk stops there: "end" (the entry runs past `end`: the
 * Python walk stops silently), "bad-size" (size field < 14: the walk raises CorruptRecordError), "magic" (not a v2
 * batch: Python parses it its own way) or "small" (a v2 entry shorter than its header). */
static inline const char *v2_entry_at(const uint8_t *b, int64_t pos, int64_t end, int32_t *size, int64_t *esize) {
    int32_t s = be32(b + pos + LOG_ENTRY_SIZE_OFFSET);
    if (s < LEGACY_V0_RECORD_OVERHEAD) return "bad-size";
    if (pos > end - LOG_OVERHEAD - s) return "end";
    if ((int8_t)b[pos + ENTRY_PREFIX_MAGIC_OFFSET] != 2) return "magic";
    *size = s;
    *esize = (int64_t)s + LOG_OVERHEAD;
    if (*esize < V2_HEADER_SIZE) return "small";
    return NULL;
}
