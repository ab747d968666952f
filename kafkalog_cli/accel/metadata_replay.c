/* kafkalog_cli/accel/metadata_replay.c: metadata_apply, the compiled replay of the hot __cluster_metadata records.
 * Part of the one translation unit kafkalog_cli/_accel.c (included there, never compiled alone; see its head).
 *
 * Why (issue 33.3): a metadata log of a large cluster is a million PartitionChangeRecords; the Python replay
 * (ops/metadata.read_records -> internal_topics/metadata_fast.FastReader -> metadata_image.Replayer) costs ~10 us a
 * record. This walks the plain records of one uncompressed, CRC-checked batch, decodes TopicRecord, PartitionRecord
 * and PartitionChangeRecord by a field program compiled in Python from the schema tables
 * (internal_topics/metadata_fast.compile_program), and applies them to the image's own dicts and objects exactly as
 * metadata_image.Replayer._topic / _partition / _partition_change do (same values, same dict order, unchanged lists
 * shared; a PartitionChangeRecord sets the changed fields of the Partition in place where the reference makes a new
 * object: nothing outside the image holds one during a load). Every record is checked completely before anything is
 * changed; at the first record it does not take (another type, a version or tag without a program, a decoding it
 * would not reproduce, a record Kafka's delta refuses, an offset below `start` or past the point) it stops and
 * Python applies that record with the reference code. */

/* Field slots (metadata_fast.SLOTS, same order) and field types (metadata_fast.TYPES) of the programs. */
enum { MS_PARTITION_ID, MS_TOPIC_ID, MS_REPLICAS, MS_ISR, MS_REMOVING, MS_ADDING, MS_LEADER, MS_LRS, MS_LEADER_EPOCH,
       MS_PARTITION_EPOCH, MS_DIRECTORIES, MS_ELR, MS_LKELR, MS_NAME, MS_NSLOTS };
enum { MT_INT32 = 1, MT_INT8 = 2, MT_UUID = 3, MT_STRING = 4, MT_ARRAY_INT32 = 5, MT_ARRAY_UUID = 6 };
#define MT_NULLABLE 0x80
enum { MK_TOPIC = 1, MK_PARTITION = 2, MK_CHANGE = 3 };
/* The Partition fields in the order of metadata_image.Partition (the descriptor tuple of the context). */
enum { PF_REPLICAS, PF_DIRECTORIES, PF_ISR, PF_REMOVING, PF_ADDING, PF_LEADER, PF_LRS, PF_LEADER_EPOCH,
       PF_PARTITION_EPOCH, PF_ELR, PF_LKELR, PF_N };

typedef struct {
    int present;             /* the field was read (a tagged field may be absent) */
    int is_null;             /* a nullable array or string read as null */
    int64_t v;               /* int32 / int8 value */
    const uint8_t *p;        /* uuid bytes, string bytes, array elements */
    Py_ssize_t n;            /* string length in bytes, array element count */
} mfield;

static const char B64URL[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* Uuid.toString(): urlsafe base64 of the 16 bytes without padding (22 characters), as metadata_fast's uuid step. */
static PyObject *md_uuid_str(const uint8_t *u) {
    char out[24];
    int o = 0;
    for (int i = 0; i < 15; i += 3) {
        uint32_t v = (uint32_t)u[i] << 16 | (uint32_t)u[i + 1] << 8 | u[i + 2];
        out[o++] = B64URL[v >> 18 & 63];
        out[o++] = B64URL[v >> 12 & 63];
        out[o++] = B64URL[v >> 6 & 63];
        out[o++] = B64URL[v & 63];
    }
    out[o++] = B64URL[u[15] >> 2];
    out[o++] = B64URL[(u[15] & 3) << 4];
    return PyUnicode_FromStringAndSize(out, o);
}

/* metadata_fast._uv: an unsigned varint of at most 5 bytes (shift > 28 declines). -1 = decline. */
static inline int md_uv(const uint8_t *b, Py_ssize_t *pos, Py_ssize_t end, uint64_t *out) {
    uint64_t v = 0;
    int shift = 0;
    Py_ssize_t p = *pos;
    for (;;) {
        if (p >= end || shift > 28) return -1;
        uint8_t c = b[p++];
        v |= (uint64_t)(c & 0x7F) << shift;
        if (c < 0x80) break;
        shift += 7;
    }
    *pos = p;
    *out = v;
    return 0;
}

/* format/varint.read_varint / read_varlong (zig-zag; 5 / 10 bytes at most, masked to 32 / 64 bits). -1 = decline. */
static inline int md_zz(const uint8_t *b, Py_ssize_t *pos, Py_ssize_t end, int max_shift, int64_t *out) {
    uint64_t v = 0;
    int shift = 0;
    Py_ssize_t p = *pos;
    for (;;) {
        if (p >= end) return -1;
        uint8_t c = b[p++];
        if (shift < 64) v |= (uint64_t)(c & 0x7F) << shift;
        if (c < 0x80) break;
        shift += 7;
        if (shift > max_shift) return -1;
    }
    if (max_shift == 28) v &= 0xFFFFFFFFu;
    *pos = p;
    *out = (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
    return 0;
}

/* One step of a program: the field of type `t` at *pos into *f. -1 = decline. */
static int md_read_field(const uint8_t *b, Py_ssize_t *pos, Py_ssize_t end, int t, mfield *f) {
    int nullable = (t & MT_NULLABLE) != 0;
    Py_ssize_t p = *pos;
    uint64_t n;
    f->present = 1;
    f->is_null = 0;
    switch (t & 0x7F) {
    case MT_INT32:
        if (p + 4 > end) return -1;
        f->v = be32(b + p);
        p += 4;
        break;
    case MT_INT8:
        if (p + 1 > end) return -1;
        f->v = (int8_t)b[p];
        p += 1;
        break;
    case MT_UUID:
        if (p + 16 > end) return -1;
        f->p = b + p;
        p += 16;
        break;
    case MT_STRING:
    case MT_ARRAY_INT32:
    case MT_ARRAY_UUID: {
        if (md_uv(b, &p, end, &n) < 0) return -1;
        if (n == 0) {
            if (!nullable) return -1;
            f->is_null = 1;
            break;
        }
        uint64_t width = (t & 0x7F) == MT_STRING ? 1 : (t & 0x7F) == MT_ARRAY_INT32 ? 4 : 16;
        n -= 1;
        if (n > (uint64_t)(end - p) / width) return -1;
        f->p = b + p;
        f->n = (Py_ssize_t)n;
        p += (Py_ssize_t)(n * width);
        break;
    }
    default:
        return -1;
    }
    *pos = p;
    return 0;
}

/* metadata_fast.compile_reader's read over value[3:]: fixed fields in order, then the tagged fields (every tag known
 * for the version, each exactly its size), then nothing. `prog` = [kind, nfixed, (slot, type)*, ntagged,
 * (tag, slot, type)*]. -1 = decline. */
static int md_decode(const uint8_t *b, Py_ssize_t pos, Py_ssize_t end, const uint8_t *prog, Py_ssize_t plen,
                     mfield *fs) {
    for (int i = 0; i < MS_NSLOTS; i++) fs[i].present = 0;
    if (plen < 3) return -1;
    int nfixed = prog[1];
    if (plen < 2 + 2 * nfixed + 1) return -1;
    const uint8_t *fx = prog + 2;
    for (int i = 0; i < nfixed; i++) {
        int slot = fx[2 * i];
        if (slot >= MS_NSLOTS || md_read_field(b, &pos, end, fx[2 * i + 1], &fs[slot]) < 0) return -1;
    }
    const uint8_t *tg = fx + 2 * nfixed;
    int ntag = tg[0];
    if (plen < 2 + 2 * nfixed + 1 + 3 * ntag) return -1;
    tg++;
    uint64_t count, tag, size;
    if (md_uv(b, &pos, end, &count) < 0) return -1;
    for (uint64_t k = 0; k < count; k++) {
        if (md_uv(b, &pos, end, &tag) < 0 || md_uv(b, &pos, end, &size) < 0) return -1;
        int found = -1;
        for (int j = 0; j < ntag; j++)
            if (tg[3 * j] == tag) found = j;
        if (found < 0) return -1;
        int slot = tg[3 * found + 1];
        Py_ssize_t fend = pos;
        if (slot >= MS_NSLOTS || md_read_field(b, &fend, end, tg[3 * found + 2], &fs[slot]) < 0) return -1;
        if ((uint64_t)(fend - pos) != size) return -1;
        pos = fend;
    }
    return pos == end ? 0 : -1;
}

/* A new list of an int32 array field. */
static PyObject *md_int_list(const mfield *f) {
    PyObject *l = PyList_New(f->n);
    if (!l) return NULL;
    for (Py_ssize_t i = 0; i < f->n; i++) {
        PyObject *v = PyLong_FromLong(be32(f->p + 4 * i));
        if (!v) {
            Py_DECREF(l);
            return NULL;
        }
        PyList_SET_ITEM(l, i, v);
    }
    return l;
}

/* metadata_image._ints: list(v) if v else [] (absent, null and empty are all a new empty list). */
static PyObject *md_ints_or_empty(const mfield *f) {
    if (!f->present || f->is_null) return PyList_New(0);
    return md_int_list(f);
}

/* [migrating] * n */
static PyObject *md_migrating(PyObject *migrating, Py_ssize_t n) {
    PyObject *l = PyList_New(n);
    if (!l) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_INCREF(migrating);
        PyList_SET_ITEM(l, i, migrating);
    }
    return l;
}

/* metadata_image._dirs over a uuid array field: empty or all MIGRATING (all-zero uuids) -> [MIGRATING] * n, else the
 * list of the uuids' strings. */
static PyObject *md_dirs_field(const mfield *f, Py_ssize_t n, PyObject *migrating) {
    int all_zero = 1;
    for (Py_ssize_t i = 0; i < 16 * f->n && all_zero; i++) all_zero = f->p[i] == 0;
    if (f->n == 0 || all_zero) return md_migrating(migrating, n);
    PyObject *l = PyList_New(f->n);
    if (!l) return NULL;
    for (Py_ssize_t i = 0; i < f->n; i++) {
        PyObject *s = md_uuid_str(f->p + 16 * i);
        if (!s) {
            Py_DECREF(l);
            return NULL;
        }
        PyList_SET_ITEM(l, i, s);
    }
    return l;
}

/* metadata_image._dirs over a list already in the image (the old directories). */
static PyObject *md_dirs_list(PyObject *dirs, Py_ssize_t n, PyObject *migrating) {
    if (!PyList_Check(dirs)) {
        PyErr_SetString(PyExc_TypeError, "metadata_apply: directories is not a list");
        return NULL;
    }
    Py_ssize_t len = PyList_GET_SIZE(dirs);
    int all = 1;
    for (Py_ssize_t i = 0; i < len && all; i++) {
        int r = PyObject_RichCompareBool(PyList_GET_ITEM(dirs, i), migrating, Py_EQ);
        if (r < 0) return NULL;
        all = r;
    }
    if (len == 0 || all) return md_migrating(migrating, n);
    return PyList_GetSlice(dirs, 0, len);
}

typedef struct {
    PyObject *topics, *names, *topic_type, *migrating, *programs, *topic_partitions;
    PyTypeObject *partition_type;
    PyObject *pdescr[PF_N];
    PyObject *empty;
} mctx;

/* A new Partition object with the 11 values (references stolen; NULL values mean an error already set). */
static PyObject *md_new_partition(mctx *c, PyObject **vals) {
    PyObject *obj = NULL;
    for (int i = 0; i < PF_N; i++)
        if (!vals[i]) goto done;
    obj = c->partition_type->tp_new(c->partition_type, c->empty, NULL);
    if (!obj) goto done;
    for (int i = 0; i < PF_N; i++) {
        if (Py_TYPE(c->pdescr[i])->tp_descr_set(c->pdescr[i], obj, vals[i]) < 0) {
            Py_CLEAR(obj);
            goto done;
        }
    }
done:
    for (int i = 0; i < PF_N; i++) Py_XDECREF(vals[i]);
    return obj;
}

/* The topic's partitions dict (borrowed from the Topic: a new reference is returned), or NULL with no error set when
 * the topic is unknown. */
static PyObject *md_topic_partitions(mctx *c, PyObject *tid, PyObject **topic_out) {
    PyObject *topic = PyDict_GetItemWithError(c->topics, tid);
    if (!topic) return NULL;
    *topic_out = topic;
    return Py_TYPE(c->topic_partitions)->tp_descr_get(c->topic_partitions, topic, NULL);
}

/* A field of a Partition (new reference, NULL with an error set). */
static inline PyObject *md_get(mctx *c, int pf, PyObject *obj) {
    return Py_TYPE(c->pdescr[pf])->tp_descr_get(c->pdescr[pf], obj, NULL);
}

/* An int field of a Partition as a long long; LLONG_MAX (no error set) for anything else: the caller declines. */
static long long md_get_ll(mctx *c, int pf, PyObject *obj) {
    PyObject *v = md_get(c, pf, obj);
    if (!v) return LLONG_MAX;
    long long r = PyLong_Check(v) ? PyLong_AsLongLong(v) : LLONG_MAX;
    Py_DECREF(v);
    if (r == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return LLONG_MAX;
    }
    return r;
}

/* Apply one decoded record. 1 = applied, 0 = declined (nothing changed), -1 = a Python error. */
static int md_apply(mctx *c, int kind, mfield *fs) {
    if (kind == MK_TOPIC) {
        if (!fs[MS_NAME].present || fs[MS_NAME].is_null || !fs[MS_TOPIC_ID].present) return 0;
        PyObject *name = PyUnicode_DecodeUTF8((const char *)fs[MS_NAME].p, fs[MS_NAME].n, "strict");
        if (!name) {
            PyErr_Clear();
            return 0;
        }
        PyObject *tid = md_uuid_str(fs[MS_TOPIC_ID].p);
        PyObject *topic = tid ? PyObject_CallFunctionObjArgs(c->topic_type, name, tid, NULL) : NULL;
        int r = topic && PyDict_SetItem(c->topics, tid, topic) == 0 && PyDict_SetItem(c->names, name, tid) == 0;
        Py_XDECREF(topic);
        Py_XDECREF(tid);
        Py_DECREF(name);
        return r ? 1 : -1;
    }
    if (!fs[MS_PARTITION_ID].present || !fs[MS_TOPIC_ID].present) return 0;
    PyObject *tid = md_uuid_str(fs[MS_TOPIC_ID].p);
    if (!tid) return -1;
    PyObject *topic = NULL;
    PyObject *parts = md_topic_partitions(c, tid, &topic);
    Py_DECREF(tid);
    if (!parts) return PyErr_Occurred() ? -1 : 0; /* unknown topic: Python words Kafka's error */
    if (!PyDict_Check(parts)) {
        Py_DECREF(parts);
        return 0;
    }
    PyObject *pid = PyLong_FromLongLong(fs[MS_PARTITION_ID].v);
    if (!pid) {
        Py_DECREF(parts);
        return -1;
    }
    PyObject *vals[PF_N] = {NULL};
    PyObject *part = NULL;
    int rc = -1;
    if (kind == MK_PARTITION) {
        /* Replayer._partition */
        const mfield *rep = &fs[MS_REPLICAS], *dirs = &fs[MS_DIRECTORIES];
        if (!rep->present || rep->is_null || !fs[MS_LEADER].present || !fs[MS_LEADER_EPOCH].present ||
            !fs[MS_PARTITION_EPOCH].present) {
            rc = 0;
            goto out;
        }
        Py_ssize_t n = rep->n;
        int has_dirs = dirs->present && !dirs->is_null && dirs->n > 0;
        if (has_dirs && dirs->n != n) {
            rc = 0; /* InvalidReplicaDirectoriesException: Python reports it */
            goto out;
        }
        vals[PF_REPLICAS] = md_int_list(rep);
        vals[PF_DIRECTORIES] = has_dirs ? md_dirs_field(dirs, n, c->migrating) : md_migrating(c->migrating, n);
        vals[PF_ISR] = md_ints_or_empty(&fs[MS_ISR]);
        vals[PF_REMOVING] = md_ints_or_empty(&fs[MS_REMOVING]);
        vals[PF_ADDING] = md_ints_or_empty(&fs[MS_ADDING]);
        vals[PF_LEADER] = PyLong_FromLongLong(fs[MS_LEADER].v);
        vals[PF_LRS] = PyLong_FromLongLong(fs[MS_LRS].present ? fs[MS_LRS].v : 0);
        vals[PF_LEADER_EPOCH] = PyLong_FromLongLong(fs[MS_LEADER_EPOCH].v);
        vals[PF_PARTITION_EPOCH] = PyLong_FromLongLong(fs[MS_PARTITION_EPOCH].v);
        vals[PF_ELR] = md_ints_or_empty(&fs[MS_ELR]);
        vals[PF_LKELR] = md_ints_or_empty(&fs[MS_LKELR]);
    } else {
        /* Replayer._partition_change, in place: the old Partition object takes the new values (the reference makes
         * a new object; nothing outside the image holds one while the compiled replay runs, see metadata_fast) */
        PyObject *old = PyDict_GetItemWithError(parts, pid);
        if (!old) {
            rc = PyErr_Occurred() ? -1 : 0; /* "Unable to find partition": Python reports it */
            goto out;
        }
        if (!PyObject_TypeCheck(old, c->partition_type)) {
            rc = 0;
            goto out;
        }
        const mfield *rep = &fs[MS_REPLICAS], *dirs = &fs[MS_DIRECTORIES];
        int reps_given = rep->present && !rep->is_null;
        int dirs_given = dirs->present && !dirs->is_null;
        int64_t leader = fs[MS_LEADER].present ? fs[MS_LEADER].v : -2;
        int64_t lrs = fs[MS_LRS].present ? fs[MS_LRS].v : -1;
        Py_ssize_t nrep = reps_given ? rep->n : 0;
        if (reps_given && dirs_given && dirs->n > 0 && dirs->n != nrep) {
            rc = 0; /* InvalidReplicaDirectoriesException: Python reports it */
            goto out;
        }
        if (!reps_given && dirs_given) { /* the directories are defaulted for the old replicas */
            PyObject *r = md_get(c, PF_REPLICAS, old);
            if (!r) goto out;
            int ok = PyList_Check(r);
            nrep = ok ? PyList_GET_SIZE(r) : 0;
            Py_DECREF(r);
            if (!ok) {
                rc = 0;
                goto out;
            }
        }
        long long pe = md_get_ll(c, PF_PARTITION_EPOCH, old);
        long long le = leader == -2 ? 0 : md_get_ll(c, PF_LEADER_EPOCH, old);
        if (pe == LLONG_MAX || le == LLONG_MAX) { /* not an int, or no room for the bump: Python's ints */
            rc = PyErr_Occurred() ? -1 : 0;
            goto out;
        }
        if (reps_given) vals[PF_REPLICAS] = md_int_list(rep);
        if (dirs_given) {
            vals[PF_DIRECTORIES] = md_dirs_field(dirs, nrep, c->migrating);
        } else if (reps_given) {
            PyObject *od = md_get(c, PF_DIRECTORIES, old);
            vals[PF_DIRECTORIES] = od ? md_dirs_list(od, nrep, c->migrating) : NULL;
            Py_XDECREF(od);
        }
        int need[PF_N] = {0};
        need[PF_REPLICAS] = reps_given;
        need[PF_DIRECTORIES] = dirs_given || reps_given;
        static const int lists[][2] = {{PF_ISR, MS_ISR}, {PF_REMOVING, MS_REMOVING}, {PF_ADDING, MS_ADDING},
                                       {PF_ELR, MS_ELR}, {PF_LKELR, MS_LKELR}};
        for (int k = 0; k < 5; k++) {
            const mfield *f = &fs[lists[k][1]];
            if (f->present && !f->is_null) {
                need[lists[k][0]] = 1;
                vals[lists[k][0]] = md_int_list(f);
            }
        }
        if (leader != -2) {
            need[PF_LEADER] = need[PF_LEADER_EPOCH] = 1;
            vals[PF_LEADER] = PyLong_FromLongLong(leader);
            vals[PF_LEADER_EPOCH] = PyLong_FromLongLong(le + 1);
        }
        if (lrs != -1) {
            need[PF_LRS] = 1;
            vals[PF_LRS] = PyLong_FromLongLong(lrs);
        }
        need[PF_PARTITION_EPOCH] = 1;
        vals[PF_PARTITION_EPOCH] = PyLong_FromLongLong(pe + 1);
        for (int i = 0; i < PF_N; i++)
            if (need[i] && !vals[i]) goto out; /* an allocation failed: nothing is changed */
        for (int i = 0; i < PF_N; i++)
            if (need[i] && Py_TYPE(c->pdescr[i])->tp_descr_set(c->pdescr[i], old, vals[i]) < 0) goto out;
        rc = 1;
        goto out;
    }
    part = md_new_partition(c, vals); /* steals vals */
    for (int i = 0; i < PF_N; i++) vals[i] = NULL;
    if (!part) goto out;
    rc = PyDict_SetItem(parts, pid, part) == 0 ? 1 : -1;
out:
    for (int i = 0; i < PF_N; i++) Py_XDECREF(vals[i]);
    Py_XDECREF(part);
    Py_DECREF(pid);
    Py_DECREF(parts);
    return rc;
}

/* One plain record's frame (ops/metadata._simple_values): size, attributes 0, timestamp and offset deltas, a null
 * key, the value, zero headers. 0 = ok (vpos, vlen, rec_end set), -1 = not plain. */
static int md_frame(const uint8_t *b, Py_ssize_t pos, Py_ssize_t end, int64_t *tsd, int64_t *od, Py_ssize_t *vpos,
                    Py_ssize_t *vlen, Py_ssize_t *rec_end) {
    int64_t size, klen, vl;
    Py_ssize_t p = pos;
    if (md_zz(b, &p, end, 28, &size) < 0) return -1;
    if (size <= 0 || size > end - p) return -1;
    Py_ssize_t re = p + (Py_ssize_t)size;
    if (b[p] != 0) return -1;
    p++;
    if (md_zz(b, &p, re, 63, tsd) < 0 || md_zz(b, &p, re, 28, od) < 0) return -1;
    if (p >= re || b[p] != 1) return -1; /* key length -1 */
    p++;
    if (md_zz(b, &p, re, 28, &klen) < 0) return -1;
    vl = klen;
    if (vl < 0 || vl > re - p - 1 || p + vl + 1 != re || b[p + vl] != 0) return -1;
    *vpos = p;
    *vlen = (Py_ssize_t)vl;
    *rec_end = re;
    return 0;
}

/*
 * metadata_apply(buffer, pos, end, base_offset, base_ts, max_ts, log_append, count, skip, start, stop_offset,
 *                stop_time, ctx) -> (pos, applied, first_offset, last_offset, last_time) | None
 *
 * buffer[pos:end] holds the last `count` records of a CRC-checked, uncompressed, non-control v2 batch. None (nothing
 * applied) unless all `count` records have the plain frame and end exactly at `end` (else Python's
 * _simple_values declines the batch too). With `skip` the first record is passed over (Python applied it). Then it
 * applies records while each is a TopicRecord / PartitionRecord / PartitionChangeRecord it takes (see the head) with
 * start <= offset <= stop_offset and time <= stop_time, and returns where it stopped, how many it applied, and the
 * first / last offsets and the last time applied (-1 when none). ctx = (topics, names, Topic, Partition, MIGRATING,
 * programs, Partition's 11 member descriptors, Topic.partitions' descriptor); programs[api_key][version] is a bytes
 * program or None. TypeError for a context whose types are not slotted classes.
 */
static PyObject *metadata_apply(PyObject *self, PyObject *args) {
    Py_buffer view;
    Py_ssize_t pos, end, count;
    long long base_offset, base_ts, max_ts, start, stop_offset, stop_time;
    int log_append, skip;
    PyObject *ctx, *pdescrs;
    mctx c;
    if (!PyArg_ParseTuple(args, "y*nnLLLpnpLLLO!", &view, &pos, &end, &base_offset, &base_ts, &max_ts, &log_append,
                          &count, &skip, &start, &stop_offset, &stop_time, &PyTuple_Type, &ctx))
        return NULL;
    PyObject *result = NULL;
    PyObject *ptype;
    if (pos < 0 || end > view.len || pos > end || count < 0) {
        PyErr_SetString(PyExc_ValueError, "metadata_apply: need 0 <= pos <= end <= len(buffer), count >= 0");
        goto done;
    }
    if (!PyArg_ParseTuple(ctx, "O!O!OO!UO!O!O", &PyDict_Type, &c.topics, &PyDict_Type, &c.names, &c.topic_type,
                          &PyType_Type, &ptype, &c.migrating, &PyTuple_Type, &c.programs, &PyTuple_Type, &pdescrs,
                          &c.topic_partitions))
        goto done;
    c.partition_type = (PyTypeObject *)ptype;
    if (PyTuple_GET_SIZE(pdescrs) != PF_N || !Py_IS_TYPE(c.topic_partitions, &PyMemberDescr_Type)) {
        PyErr_SetString(PyExc_TypeError, "metadata_apply: Topic.partitions / Partition fields are not slots");
        goto done;
    }
    for (int i = 0; i < PF_N; i++) {
        c.pdescr[i] = PyTuple_GET_ITEM(pdescrs, i);
        if (!Py_IS_TYPE(c.pdescr[i], &PyMemberDescr_Type)) {
            PyErr_SetString(PyExc_TypeError, "metadata_apply: a Partition field is not a slot");
            goto done;
        }
    }
    const uint8_t *b = (const uint8_t *)view.buf;
    /* the frames first: the whole rest of the batch must be plain records ending at `end` */
    {
        Py_ssize_t p = pos;
        for (Py_ssize_t i = 0; i < count; i++) {
            int64_t tsd, od;
            Py_ssize_t vp, vl, re;
            if (md_frame(b, p, end, &tsd, &od, &vp, &vl, &re) < 0) {
                result = Py_None;
                Py_INCREF(result);
                goto done;
            }
            p = re;
        }
        if (p != end) {
            result = Py_None;
            Py_INCREF(result);
            goto done;
        }
    }
    c.empty = PyTuple_New(0);
    if (!c.empty) goto done;
    long long applied = 0, first = -1, last = -1, last_ts = -1;
    Py_ssize_t i = 0;
    mfield fs[MS_NSLOTS];
    int failed = 0;
    for (; i < count; i++) {
        int64_t tsd, od;
        Py_ssize_t vp, vl, re;
        md_frame(b, pos, end, &tsd, &od, &vp, &vl, &re);
        if (skip && i == 0) {
            pos = re;
            continue;
        }
        long long off, ts;
        if (__builtin_add_overflow(base_offset, od, &off)) break;
        if (log_append) {
            ts = max_ts;
        } else if (__builtin_add_overflow(base_ts, tsd, &ts)) {
            break;
        }
        if (off < start || off > stop_offset || ts > stop_time) break;
        /* the frame (metadata_fast.FastReader.read): version 1, one-byte apiKey and version */
        const uint8_t *v = b + vp;
        if (vl < 3 || v[0] != 1 || v[1] >= 0x80 || v[2] >= 0x80) break;
        if (v[1] >= PyTuple_GET_SIZE(c.programs)) break;
        PyObject *vers = PyTuple_GET_ITEM(c.programs, v[1]);
        if (!PyTuple_Check(vers) || v[2] >= PyTuple_GET_SIZE(vers)) break;
        PyObject *prog = PyTuple_GET_ITEM(vers, v[2]);
        if (!PyBytes_Check(prog)) break;
        const uint8_t *pg = (const uint8_t *)PyBytes_AS_STRING(prog);
        Py_ssize_t plen = PyBytes_GET_SIZE(prog);
        if (md_decode(b, vp + 3, vp + vl, pg, plen, fs) < 0) break;
        int r = md_apply(&c, pg[0], fs);
        if (r < 0) {
            failed = 1;
            break;
        }
        if (r == 0) break;
        applied++;
        if (first < 0) first = off;
        last = off;
        last_ts = ts;
        pos = re;
    }
    Py_DECREF(c.empty);
    if (!failed) result = Py_BuildValue("(nLLLL)", pos, applied, first, last, last_ts);
done:
    PyBuffer_Release(&view);
    return result;
}
