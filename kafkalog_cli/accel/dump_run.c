/* kafkalog_cli/accel/dump_run.c: dump_run: the text or JSON dump of a whole run of clean v2 batches in one call.
 * Part of the one translation unit kafkalog_cli/_accel.c (included there, never compiled alone; see its head). */
/* =====================================================================================================================
 * Why (issue 20): with dump_batch / json_records formatting one batch per call, the per-batch Python around them (the
 * walk generator, the Batch object, the CRC call, the formatter's argument tuple, the event and its dispatch, the
 * stdout sink) was ~15-20 % of an end-to-end dump of 100-byte records. Like verify_run for verify-crc, this walks a
 * run of batches in C and formats each one exactly as dump_batch (mode 0) or json_records (mode 1) would, into one
 * buffer of about max_out bytes that Python writes with one write(2).
 *
 * It accepts only batches for which kafkalog_cli/ops/dump.py:Dumper._log would take the compiled per-batch path
 * with the same result: >= 61 bytes left before `end`, magic 2, batch length >= 49 and inside `end`, CRC-32C valid,
 * codec id <= max_codec, and for a deep dump: not a control batch, recordsCount >= 0, records that put_records /
 * put_json_records format without declining, and if compressed, a `decompress(codec, buf, start, end)` (Python:
 * kafkalog_cli.format.codecs with the dump's size cap) that returns the records' bytes; an exception of class
 * `decline` from it (KafkalogError: corrupt data, the cap) stops the run before the batch, any other propagates. It stops before the first batch that fails any of these
 * (Python then handles that batch, with its exact text or error), at `end`, or once the text reaches max_out bytes.
 * A batch that declines half way is rolled back (text, last offset, gaps).
 *
 * dump_run(buf, pos, end, mode, deep, print_data, print_horizon, max_codec, (label0, label1),
 *          (codec0, .., codec4), file_json, last, java_gaps, max_out, decompress, decline[, decoders])
 *   -> (text, next_pos, batches, records, last, gaps, full); text is a bytearray (see run_buffer); decoders (text
 *   mode only): format_text.c's parse_decoders
 * labels are the timestamp-type names, codecN the codec names as printed (text: upper or lower case per version;
 * JSON: lower case); file_json is the file's JSON string (mode 1 only). `full` says it stopped at max_out (call
 * again at next_pos) rather than before a batch it does not take.
 * ===================================================================================================================*/
/* The text is written straight into a bytearray that is returned as it is: copying a separate buffer into a new
 * bytes object was one more pass over every output byte (~7 % of a JSON dump by perf), and a fresh 1 MiB object per
 * call costs page faults instead. The bytearrays are pooled: one is reused only when the pool holds the sole
 * reference to it (Python dropped it: no one can see it change), else a new one is made. Returns a new reference. */
#define RUN_POOL 4
static PyObject *run_pool[RUN_POOL];

static PyObject *run_buffer(Py_ssize_t size) {
    PyObject *ba = NULL;
    int free_slot = -1;
    for (int i = 0; i < RUN_POOL; i++) {
        if (run_pool[i] == NULL) {
            if (free_slot < 0) free_slot = i;
        } else if (Py_REFCNT(run_pool[i]) == 1) {
            ba = run_pool[i];
            break;
        }
    }
    if (ba == NULL) {
        ba = PyByteArray_FromStringAndSize(NULL, 0);
        if (!ba) return NULL;
        if (free_slot >= 0) run_pool[free_slot] = Py_NewRef(ba);
    } else {
        Py_INCREF(ba);
    }
    if (PyByteArray_GET_SIZE(ba) < size && PyByteArray_Resize(ba, size) < 0) {
        Py_DECREF(ba);
        return NULL;
    }
    return ba;
}

static PyObject *dump_run(PyObject *self, PyObject *args) {
    Py_buffer view;
    long long pos, end, last, max_out;
    int mode, deep, print_data, print_horizon, max_codec, java_gaps;
    const char *labels[2], *codecs[5], *file_json;
    Py_ssize_t label_lens[2], codec_lens[5], fj_len;
    PyObject *decompress, *decline, *decoders = NULL;
    recdec decs;
    knowncache caches[2];
    const recdec *dec;
    if (!PyArg_ParseTuple(args, "y*LLipppi(y#y#)(y#y#y#y#y#)y#LpLOO|O", &view, &pos, &end, &mode, &deep, &print_data,
                          &print_horizon, &max_codec, &labels[0], &label_lens[0], &labels[1], &label_lens[1],
                          &codecs[0], &codec_lens[0], &codecs[1], &codec_lens[1], &codecs[2], &codec_lens[2],
                          &codecs[3], &codec_lens[3], &codecs[4], &codec_lens[4], &file_json, &fj_len, &last,
                          &java_gaps, &max_out, &decompress, &decline, &decoders))
        return NULL;
    if (parse_decoders(decoders, &decs, &dec, caches) < 0) {
        PyBuffer_Release(&view);
        return NULL;
    }
    if (dec && mode != 0) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "decoders are for the text dump (mode 0) only");
        return NULL;
    }
    const uint8_t *b = (const uint8_t *)view.buf;
    if (end > view.len) end = view.len;
    if (pos < 0) pos = end; /* defensive: never read before the buffer */
    if (max_codec > 4) max_codec = 4;
    outbuf o = {NULL, 0, 0, NULL};
    long long batches = 0, records = 0;
    int full = 0;
    PyObject *gaps = PyList_New(0);
    if (!gaps) goto error;
    o.ba = run_buffer((Py_ssize_t)(max_out > 0 ? max_out : 0) + (64 << 10));
    if (!o.ba) goto error;
    o.data = PyByteArray_AS_STRING(o.ba);
    o.cap = (size_t)PyByteArray_GET_SIZE(o.ba);
    if (decompress != Py_None && (view.obj == NULL || !PyCallable_Check(decompress))) decompress = Py_None;
    while (end - pos >= V2_HEADER_SIZE) {
        if ((long long)o.len >= max_out) {
            full = 1;
            break;
        }
        const uint8_t *p = b + pos;
        int32_t length = be32(p + V2_BATCH_LENGTH_OFFSET);
        if (p[V2_MAGIC_OFFSET] != 2 || length < V2_MIN_BATCH_LENGTH || pos + LOG_OVERHEAD + (long long)length > end)
            break;
        v2hdr h;
        read_v2(p, &h);
        int attributes = h.attributes & 0xFF; /* Kafka reads only the low byte (Batch.attributes) */
        int codec = attributes & 7;
        if (codec > max_codec) break;
        if (deep && ((attributes & 0x20) || h.records_count < 0 || (codec != 0 && decompress == Py_None))) break;
        if (mode == 1 && !deep) break; /* the JSON fast path is for deep dumps only */
        int64_t last_offset;
        if (__builtin_add_overflow(h.base_offset, (int64_t)h.last_offset_delta, &last_offset)) break;
        if (crc32c_of(p + V2_ATTRIBUTES_OFFSET, (size_t)length + LOG_OVERHEAD - V2_ATTRIBUTES_OFFSET) != h.crc) break;
        int64_t size = (int64_t)length + LOG_OVERHEAD;
        int32_t last_seq = h.base_sequence == -1 ? -1 : increment_sequence(h.base_sequence, h.last_offset_delta);
        const char *label = labels[(attributes & 0x08) ? 1 : 0];
        Py_ssize_t label_len = label_lens[(attributes & 0x08) ? 1 : 0];
        /* the records: in the segment, or (deep, compressed) in what `decompress` returns */
        const uint8_t *rb = b;
        Py_ssize_t rstart = (Py_ssize_t)pos + V2_HEADER_SIZE, rend = (Py_ssize_t)(pos + size);
        PyObject *plain = NULL;
        Py_buffer pv;
        if (deep && codec != 0) {
            plain = PyObject_CallFunction(decompress, "iOnn", codec, view.obj, rstart, rend);
            if (!plain) {
                if (PyErr_ExceptionMatches(decline)) { /* Python re-does the batch and reports the problem */
                    PyErr_Clear();
                    break;
                }
                goto error;
            }
            if (PyObject_GetBuffer(plain, &pv, PyBUF_SIMPLE) < 0) {
                Py_DECREF(plain);
                goto error;
            }
            rb = (const uint8_t *)pv.buf;
            rstart = 0;
            rend = pv.len;
        }
        size_t mark = o.len;
        long long mark_last = last;
        Py_ssize_t mark_gaps = PyList_GET_SIZE(gaps);
        size_t guess = JSON_HEAD_MAX + (size_t)fj_len + (size_t)label_len + (size_t)codec_lens[codec];
        if (deep && h.records_count > 0 && h.records_count < (1 << 24))
            guess += (size_t)(rend - rstart) + (size_t)h.records_count * (160 + (size_t)label_len);
        if (ob_reserve(&o, guess) < 0) {
            if (plain) {
                PyBuffer_Release(&pv);
                Py_DECREF(plain);
            }
            goto nomem;
        }
        int r = 1;
        if (mode == 0) {
            put_batch_line(&o, pos, size, h.base_offset, last_offset, h.records_count, h.base_sequence, last_seq,
                           h.producer_id, h.producer_epoch, h.epoch, attributes, h.base_ts, h.max_ts, 2,
                           (int64_t)h.crc, 1, label, label_len, codecs[codec], codec_lens[codec], print_horizon);
            if (deep)
                r = put_records(&o, rb, rstart, rend, h.records_count, h.base_offset, h.base_ts, h.max_ts,
                                (attributes & 0x08) != 0, h.base_sequence, label, label_len, print_data, &last,
                                java_gaps, gaps, dec);
        } else {
            put_json_head(&o, file_json, fj_len, pos, h.base_offset, last_offset, size, codecs[codec],
                          codec_lens[codec], label, label_len, (int64_t)h.crc, h.records_count, h.base_sequence,
                          last_seq, h.producer_id, h.producer_epoch, h.epoch, attributes, h.base_ts, h.max_ts);
            r = put_json_records(&o, rb, rstart, rend, h.records_count, h.base_offset, h.base_ts, h.max_ts,
                                 (attributes & 0x08) != 0, h.base_sequence, file_json, fj_len, pos, label, label_len,
                                 print_data, &last, java_gaps, gaps);
        }
        if (plain) {
            PyBuffer_Release(&pv);
            Py_DECREF(plain);
        }
        if (r < 0) goto error;
        if (r == 0) { /* roll the batch back: Python formats it (or words its problem) */
            o.len = mark;
            last = mark_last;
            if (PyList_SetSlice(gaps, mark_gaps, PyList_GET_SIZE(gaps), NULL) < 0) goto error;
            break;
        }
        batches++;
        records += h.records_count;
        pos += size;
    }
    if (PyByteArray_Resize(o.ba, (Py_ssize_t)o.len) < 0) goto error; /* keeps the allocation (CPython's rule) */
    PyBuffer_Release(&view);
    return Py_BuildValue("(NLLLLNi)", o.ba, pos, batches, records, last, gaps, full);
nomem:
    PyErr_NoMemory();
error:
    Py_XDECREF(o.ba);
    Py_XDECREF(gaps);
    PyBuffer_Release(&view);
    return NULL;
}
