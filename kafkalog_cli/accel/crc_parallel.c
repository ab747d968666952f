/* kafkalog_cli/accel/crc_parallel.c: CRCs of predicted batches on two threads for the header walks; parallel_config().
 * Part of the one translation unit kafkalog_cli/_accel.c (included there, never compiled alone; see its head). */
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
            w->crc[i] = crc32c_of(w->b + w->pos[i] + V2_ATTRIBUTES_OFFSET, (size_t)w->len[i] - V2_CRC_SKIP);
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
    while ((w->count == 0 || total < target) && q < w->limit && w->n - q >= V2_HEADER_SIZE) {
        const uint8_t *p = w->b + q;
        int32_t length = be32(p + LOG_ENTRY_SIZE_OFFSET);
        if (p[ENTRY_PREFIX_MAGIC_OFFSET] != 2 || length < V2_MIN_BATCH_LENGTH || length > w->max_len || q + LOG_OVERHEAD + length > w->n)
            break;
        if (w->count == w->cap && (w->cap == CRCW_MAX_ENTRIES || crcw_grow(w) < 0)) break;
        if (cbytes == 0) w->chunk[w->nchunks++] = w->count;
        w->pos[w->count] = q;
        w->len[w->count] = length;
        w->count++;
        total += length, cbytes += length;
        if (cbytes >= chunk_bytes) cbytes = 0;
        q += LOG_OVERHEAD + (int64_t)length;
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
    return crc32c_of(w->b + pos + V2_ATTRIBUTES_OFFSET, (size_t)length - V2_CRC_SKIP);
}

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
