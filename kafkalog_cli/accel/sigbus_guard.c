/* kafkalog_cli/accel/sigbus_guard.c: the SIGBUS guard of read-only maps (guard_register/guard_faults/guard_release) and first_nonzero.
 * Part of the one translation unit kafkalog_cli/_accel.c (included there, never compiled alone; see its head). */


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
