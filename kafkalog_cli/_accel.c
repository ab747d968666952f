/*
 * kafkalog_cli._accel: the optional compiled fast path of kafkalog (dump, verify-crc, rebuild-index, scan).
 *
 * It is an accelerator only: the pure-Python code is the reference, and every function here either returns exactly
 * what the Python path would compute or declines (returns None / stops with a reason) so that Python re-does the
 * work and words the problem. Tests run the golden fixtures with the accelerator on and off (tests/test_accel*.py,
 * KAFKALOG_NO_ACCEL=1) and require identical output. The Python-facing contract (arguments, return shapes, when each
 * function declines) is kafkalog_cli/_accel.pyi, a typed stub of every function in the method table below
 * (tests/test_layouts.py checks that both list the same names); the C comment above each function gives the details.
 * Byte offsets and sizes of the on-disk layouts come from accel/layouts.h, generated from kafkalog_cli/format/layouts.py
 * by scripts/gen_layouts_h.py (never edit the numbers by hand); layout_constants() reports them at run time.
 *
 * Layout: one translation unit split by concern into kafkalog_cli/accel/. The parts are #included below, in
 * dependency order, rather than compiled separately, so that every helper stays `static inline` (no exported
 * symbols besides PyInit__accel, the same code the compiler saw when this was one file).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "accel/layouts.h"
#include "accel/buffers.h"
#include "accel/record.h"
#include "accel/json_value.c"
#include "accel/format_text.c"
#include "accel/crc.c"
#include "accel/bytes.h"
#include "accel/crc_parallel.c"
#include "accel/walk.c"
#include "accel/index_build.c"
#include "accel/sigbus_guard.c"
#include "accel/scan_columns.c"
#include "accel/check_records.c"
#include "accel/scan_records.c"
#include "accel/format_json.c"
#include "accel/dump_run.c"
#include "accel/export_records.c"
#include "accel/export_columns.c"
#include "accel/replay_records.c"
#include "accel/metadata_replay.c"

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
    {"scan_table", scan_table, METH_VARARGS, "scan_v2's walk into the batches' Arrow buffers and the window's facts."},
    {"scan_records", scan_records, METH_VARARGS, "scan --records: one batch's records into column buffers, or False."},
    {"scan_records_run", scan_records_run, METH_VARARGS, "scan --records: the uncompressed batches of a window."},
    {"check_records", check_records, METH_VARARGS, "verify-crc --deep: True if a v2 batch's records are certainly clean."},
    {"json_records", json_records, METH_VARARGS, "dump --format json: a v2 batch's record objects, or None to fall back."},
    {"layout_constants", layout_constants, METH_NOARGS, "The layout offsets and sizes this build was compiled with (layouts.h)."},
    {"json_text", json_text, METH_VARARGS, "The JSON text dump's decoders write for a decoded value, or None where it declines."},
    {"dump_run", dump_run, METH_VARARGS, "dump (text or JSON) of a run of clean v2 batches; stops at what it cannot take."},
    {"export_ndjson", export_ndjson, METH_VARARGS, "export --format ndjson: one v2 batch's record lines, or None to fall back."},
    {"export_ndjson_run", export_ndjson_run, METH_VARARGS, "export --format ndjson: the lines of a run of plain v2 batches."},
    {"export_columns", export_columns, METH_VARARGS, "export --format parquet: one v2 batch's record columns, or -1 to fall back."},
    {"export_columns_run", export_columns_run, METH_VARARGS, "export --format parquet: the columns of a run of plain v2 batches."},
    {"export_codes", export_codes, METH_VARARGS, "export --format parquet: per-row dictionary indices from per-batch codes."},
    {"export_valid", export_valid, METH_VARARGS, "export --format parquet: the validity bitmap of int32/int64 values (-1: null)."},
    {"replay_items", replay_items, METH_VARARGS, "replay: one v2 batch's records as produce() tuples, or None to fall back."},
    {"replay_count", replay_count, METH_VARARGS, "replay's plan: (taken, first, last) of one v2 batch's records, or None."},
    {"replay_map_lines", replay_map_lines, METH_VARARGS, "replay: a produced chunk's offset-map lines."},
    {"metadata_apply", metadata_apply, METH_VARARGS, "metadata replay: apply a plain batch's Topic/Partition/PartitionChange records to the image."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_accel", "kafkalog's compiled dump fast path", -1, methods};

PyMODINIT_FUNC PyInit__accel(void) {
    crc_init(); /* tables and the CPU dispatch, once */
    par_init();
#ifdef KAFKALOG_GUARD
    long pg = sysconf(_SC_PAGESIZE);
    if (pg > 0) g_pagesz = (uintptr_t)pg;
#endif
    return PyModule_Create(&module);
}
