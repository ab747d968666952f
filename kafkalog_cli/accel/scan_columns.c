/* kafkalog_cli/accel/scan_columns.c: scan_table: the header walk of kafkalog scan, into the final Arrow buffers of the
 * batches dataset, plus the window's aggregates ("facts") for the report and the partition pass.
 * Part of the one translation unit kafkalog_cli/_accel.c (included there, never compiled alone; see its head).
 *
 * scan_table(buffer, start, end, base, crc) -> (data: bytes, n, cap, stop, reason, facts)
 *
 * Why: the previous scan_columns filled raw columns and Python then derived the rest with about twenty pyarrow.compute calls per
 * window (codec ids, flags, null timestamps, position + base), and the report and the partition pass ran as many
 * again over the same rows: a third of the scan's CPU on a segment of small batches (profile in BENCHMARKS.md,
 * "Issue 14, session 3"). Here one walk writes every column in its final Arrow layout and aggregates as it goes.
 *
 * The walk and its stop rules are scan_v2's ("end", "bad-size", "magic", "small", plus "overflow" when base offset +
 * lastOffsetDelta does not fit an int64; kafkalog_cli/scan/columns.py:py_walk is the reference). `crc`
 * false means the caller knows every batch in [start, end) has a sound checksum (verify-crc's pass checked them and
 * reported none in this range), so crc_ok is set without computing it again.
 * `data` holds cap (a multiple of 64) slots per column, n used, in this order (SCAN_TABLE in scan/columns.py):
 * int64 position (+ base), size, base_offset, last_offset, first_timestamp, max_timestamp (ms; -1 stays -1 and
 * is null in the validity bitmap), producer_id; int32 count, base_sequence, last_sequence, partition_leader_epoch,
 * codec index (attributes & 7), timestamp-type index (bit 3, + 1); int16 producer_epoch; int8 magic (2);
 * bitmaps (cap / 8 bytes, LSB first) first_timestamp validity, max_timestamp validity, transactional, control, crc_ok.
 * `facts` (over all rows, or over rows with crc_ok ("good") where said; None where there is no such row):
 *   (n_bad, first_ts_nulls, max_ts_nulls, size_sum, count_sum, good_base_min, good_last_max,
 *    first_ts_min (good, max_ts >= 0, first_ts >= 0), max_ts_max (good, max_ts >= 0),
 *    producer ids (good, >= 0; a tuple, None past 64 distinct), leader epochs (same),
 *    bytes by codec index (8 sums),
 *    timed: None, or (monotone: bool, (first max_ts, its base_offset), (last max_ts, its base_offset)) over good rows
 *      with max_ts >= 0 in order,
 *    sequences: None when more than 16 (producer id, epoch) keys, else a tuple per key, in order of first appearance,
 *      over good rows with producer_id >= 0, base_sequence >= 0, not control:
 *      (pid, epoch, chained: bool (each baseSequence = incrementSequence(previous lastSequence, 1)), first
 *       base_sequence, last last_sequence, last base_offset))
 */
#define STAB_I64 7
#define STAB_I32 6
#define STAB_BITMAPS 5
#define STAB_SET_MAX 64
#define STAB_KEYS 16

typedef struct {
    int64_t pid;
    int16_t epoch;
    int chained;
    int32_t first_seq, last_seq;
    int64_t last_base;
} stab_key;

static int stab_add(int64_t *set, int *n, int64_t v) {
    for (int k = 0; k < *n; k++)
        if (set[k] == v) return 0;
    if (*n >= STAB_SET_MAX) return -1;
    set[(*n)++] = v;
    return 0;
}

static PyObject *stab_set(const int64_t *set, int n, int overflow) {
    if (overflow) Py_RETURN_NONE;
    PyObject *t = PyTuple_New(n);
    if (!t) return NULL;
    for (int k = 0; k < n; k++) PyTuple_SET_ITEM(t, k, PyLong_FromLongLong(set[k]));
    return t;
}

static PyObject *stab_opt(int have, int64_t v) {
    if (!have) Py_RETURN_NONE;
    return PyLong_FromLongLong(v);
}

static PyObject *scan_table(PyObject *self, PyObject *args) {
    Py_buffer view;
    Py_ssize_t start, end;
    long long base;
    int want_crc;
    if (!PyArg_ParseTuple(args, "y*nnLp", &view, &start, &end, &base, &want_crc)) return NULL;
    if (start < 0 || end > view.len || start > end) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "scan_table: need 0 <= start <= end <= len(buffer)");
        return NULL;
    }
    const uint8_t *b = (const uint8_t *)view.buf;
    size_t cap = ((size_t)(end - start) / V2_HEADER_SIZE + 64) & ~(size_t)63;
    size_t bm = cap / 8;
    size_t total = cap * (STAB_I64 * 8 + STAB_I32 * 4 + 2 + 1) + bm * STAB_BITMAPS;
    PyObject *data = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)total);
    if (!data) {
        PyBuffer_Release(&view);
        return NULL;
    }
    uint8_t *cols = (uint8_t *)PyBytes_AS_STRING(data);
    int64_t *i64[STAB_I64];
    int32_t *i32[STAB_I32];
    for (int k = 0; k < STAB_I64; k++) i64[k] = (int64_t *)(cols + cap * 8 * k);
    for (int k = 0; k < STAB_I32; k++) i32[k] = (int32_t *)(cols + cap * (8 * STAB_I64 + 4 * k));
    int16_t *pepoch = (int16_t *)(cols + cap * (8 * STAB_I64 + 4 * STAB_I32));
    int8_t *magic = (int8_t *)(cols + cap * (8 * STAB_I64 + 4 * STAB_I32 + 2));
    uint8_t *bms = cols + cap * (8 * STAB_I64 + 4 * STAB_I32 + 3);
    memset(bms, 0, bm * STAB_BITMAPS);
    uint8_t *v_first = bms, *v_max = bms + bm, *b_tx = bms + 2 * bm, *b_ctl = bms + 3 * bm, *b_ok = bms + 4 * bm;

    const char *reason = "end";
    int64_t pos = start;
    size_t n = 0;
    /* facts */
    int64_t n_bad = 0, first_nulls = 0, max_nulls = 0, size_sum = 0, count_sum = 0;
    int64_t base_min = 0, last_max = 0, fts_min = 0, mts_max = 0;
    int have_good = 0, have_fts = 0, have_mts = 0;
    int64_t pids[STAB_SET_MAX], epochs[STAB_SET_MAX];
    int npids = 0, nepochs = 0, pid_over = 0, epoch_over = 0;
    int64_t codec_bytes[8] = {0};
    int monotone = 1;
    int64_t t_first = 0, t_first_base = 0, t_last = 0, t_last_base = 0;
    stab_key keys[STAB_KEYS];
    int nkeys = 0, keys_over = 0;

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
        int64_t last;
        if (__builtin_add_overflow(h.base_offset, (int64_t)h.last_offset_delta, &last)) {
            reason = "overflow";
            break;
        }
        int ok = want_crc ? crcw_get(&w, pos, size) == h.crc : 1;
        int32_t last_seq = h.base_sequence == -1 ? -1 : increment_sequence(h.base_sequence, h.last_offset_delta);
        int codec = h.attributes & 7;
        int control = (h.attributes & 0x20) != 0;
        uint8_t bit = (uint8_t)(1u << (n & 7));
        i64[0][n] = pos + base;
        i64[1][n] = esize;
        i64[2][n] = h.base_offset;
        i64[3][n] = last;
        i64[4][n] = h.base_ts;
        i64[5][n] = h.max_ts;
        i64[6][n] = h.producer_id;
        i32[0][n] = h.records_count;
        i32[1][n] = h.base_sequence;
        i32[2][n] = last_seq;
        i32[3][n] = h.epoch;
        i32[4][n] = codec;
        i32[5][n] = ((h.attributes >> 3) & 1) + 1;
        pepoch[n] = h.producer_epoch;
        magic[n] = 2;
        if (h.base_ts != -1) v_first[n >> 3] |= bit;
        else first_nulls++;
        if (h.max_ts != -1) v_max[n >> 3] |= bit;
        else max_nulls++;
        if (h.attributes & 0x10) b_tx[n >> 3] |= bit;
        if (control) b_ctl[n >> 3] |= bit;
        size_sum += esize;
        count_sum += h.records_count;
        codec_bytes[codec] += esize;
        if (ok) {
            b_ok[n >> 3] |= bit;
            if (!have_good || h.base_offset < base_min) base_min = h.base_offset;
            if (!have_good || last > last_max) last_max = last;
            have_good = 1;
            if (h.max_ts >= 0) {
                if (!have_mts) {
                    t_first = h.max_ts;
                    t_first_base = h.base_offset;
                } else if (h.max_ts < t_last) {
                    monotone = 0;
                }
                if (!have_mts || h.max_ts > mts_max) mts_max = h.max_ts;
                have_mts = 1;
                t_last = h.max_ts;
                t_last_base = h.base_offset;
                if (h.base_ts >= 0 && (!have_fts || h.base_ts < fts_min)) {
                    fts_min = h.base_ts;
                    have_fts = 1;
                }
            }
            if (h.producer_id >= 0 && !pid_over) pid_over = stab_add(pids, &npids, h.producer_id) < 0;
            if (h.epoch >= 0 && !epoch_over) epoch_over = stab_add(epochs, &nepochs, h.epoch) < 0;
            if (h.producer_id >= 0 && h.base_sequence >= 0 && !control && !keys_over) {
                int k = 0;
                while (k < nkeys && !(keys[k].pid == h.producer_id && keys[k].epoch == h.producer_epoch)) k++;
                if (k == nkeys) {
                    if (nkeys == STAB_KEYS) {
                        keys_over = 1;
                    } else {
                        keys[k].pid = h.producer_id;
                        keys[k].epoch = h.producer_epoch;
                        keys[k].chained = 1;
                        keys[k].first_seq = h.base_sequence;
                        nkeys++;
                    }
                } else if (h.base_sequence != increment_sequence(keys[k].last_seq, 1)) {
                    keys[k].chained = 0;
                }
                if (!keys_over) {
                    keys[k].last_seq = last_seq;
                    keys[k].last_base = h.base_offset;
                }
            }
        } else {
            n_bad++;
        }
        n++;
        pos += esize;
    }
    crcw_free(&w);
    Py_END_ALLOW_THREADS PyBuffer_Release(&view);

    PyObject *timed, *seqs;
    if (have_mts)
        timed = Py_BuildValue("(N(LL)(LL))", PyBool_FromLong(monotone), (long long)t_first, (long long)t_first_base,
                              (long long)t_last, (long long)t_last_base);
    else
        timed = (Py_INCREF(Py_None), Py_None);
    if (keys_over) {
        seqs = (Py_INCREF(Py_None), Py_None);
    } else {
        seqs = PyTuple_New(nkeys);
        for (int k = 0; seqs && k < nkeys; k++)
            PyTuple_SET_ITEM(seqs, k, Py_BuildValue("(LiNiiL)", (long long)keys[k].pid, (int)keys[k].epoch,
                                                    PyBool_FromLong(keys[k].chained), (int)keys[k].first_seq,
                                                    (int)keys[k].last_seq, (long long)keys[k].last_base));
    }
    PyObject *facts = Py_BuildValue("(LLLLLNNNNNN(LLLLLLLL)NN)", (long long)n_bad, (long long)first_nulls,
                                    (long long)max_nulls, (long long)size_sum, (long long)count_sum,
                                    stab_opt(have_good, base_min), stab_opt(have_good, last_max),
                                    stab_opt(have_fts, fts_min), stab_opt(have_mts, mts_max),
                                    stab_set(pids, npids, pid_over), stab_set(epochs, nepochs, epoch_over),
                                    (long long)codec_bytes[0], (long long)codec_bytes[1], (long long)codec_bytes[2],
                                    (long long)codec_bytes[3], (long long)codec_bytes[4], (long long)codec_bytes[5],
                                    (long long)codec_bytes[6], (long long)codec_bytes[7], timed, seqs);
    if (!facts) {
        Py_DECREF(data);
        return NULL;
    }
    return Py_BuildValue("(NnnLsN)", data, (Py_ssize_t)n, (Py_ssize_t)cap, (long long)pos, reason, facts);
}
