"""The contract between Python and the compiled accelerator ``kafkalog_cli._accel`` (``_accel.c`` + ``accel/*``).

One entry per function of the C method table (tests/test_layouts.py checks both list the same names). The rule for
every function: the pure-Python code is the reference; a function either returns exactly what Python would compute
or declines (returns None, stops early with a reason, or answers False) so that Python redoes that part and words
the problem. Buffers are anything with the buffer protocol (bytes, mmap, memoryview); the GIL is released during the
walks. Packed records are little-endian (``struct`` formats in ``kafkalog_cli/storage/accel.py``); every on-disk
offset the C code uses comes from ``accel/layouts.h``, generated from ``kafkalog_cli/format/layouts.py``.
"""

from collections.abc import Callable
from typing import Any

from typing_extensions import Buffer

# dump_batch / dump_run's decoders: (key, value, encode, default, known_len), a side None or (fn, known dict or None)
Decoders = tuple[Any, Any, Callable[[Any], str], Callable[[Any], Any], int]

# ------------------------------------------------------------------------------------------------ CRC-32C (crc.c)
def crc32c(data: Buffer, value: int = 0, /) -> int:
    """CRC-32C of ``data``, continuing ``value`` (same contract as the ``crc32c`` package). Hardware or table code,
    chosen at import; GIL released. Never declines."""

def crc32c_portable(data: Buffer, value: int = 0, /) -> int:
    """The slicing-by-8 table CRC-32C whatever the CPU (tests compare it with ``crc32c``). Never declines."""

def crc_implementation() -> str:
    """Which CRC-32C code ``crc32c`` uses: ``"sse4.2-3way"`` or ``"slicing-by-8"``."""

def parallel_config(threads: int = -1, min_bytes: int = -1, window: int = -1, /) -> tuple[int, int, int, int]:
    """Get/set how the CRC walks spread long runs over threads (crc_parallel.c). Returns the settings as they were
    before the call: (threads, min_bytes, window, windows), ``windows`` counting windows that ran on more than one
    thread since import. Negative leaves a setting alone. Raises ValueError unless 1 <= threads <= 8 and window >= 1.
    """

# ------------------------------------------------------------------------------------------------ header walks (walk.c)
def scan_v2(buffer: Buffer, start: int, end: int, /) -> tuple[bytes, int, str]:
    """The walk of ``storage.segment.walk`` over ``buffer[start:end]`` with the CRC of every v2 batch.

    Returns (records, stop, reason): one packed ``SCAN_FORMAT`` record per v2 batch, the position where it stopped
    and why: ``"end"`` (Python's walk ends there too), ``"bad-size"`` (size field < 14: Python raises there),
    ``"magic"`` (not magic 2: Python parses it), ``"small"`` (a v2 entry shorter than its 61-byte header).
    Declines by stopping: Python continues from ``stop``. ValueError unless 0 <= start <= end <= len(buffer).
    """

def verify_run(buffer: Buffer, pos: int, stop_at: int, max_size: int, seg_base: int, has_prev: bool, prev_last: int,
               prev_epoch: int, ts_limit: int, want_entries: bool,
               /) -> tuple[int, int, int, int, int, int, int, int, bytes | None]:
    """verify-crc's fast path: from ``pos``, the run of v2 batches on which ``storage.segment_check._Walker.on_v2`` would report
    nothing (CRC, sizes, codec, offsets, leader epoch, timestamps up to ``ts_limit``).

    Returns (pos, batches, records, first_base, prev_last, first_epoch, prev_epoch, saw_epoch, entries): where it
    stopped, the counters to apply, and with ``want_entries`` one packed ``RUN_FORMAT`` record per batch for the
    index observers (else None). Declines by stopping before the first batch with anything to report, at
    ``stop_at`` or on int64 overflow; Python handles that batch with the reference code.
    """

# ------------------------------------------------------------------------------------------------ rebuild-index (index_build.c)
def rebuild_index(buffer: Buffer, base_offset: int, interval: int, segment_index_bytes: int,
                  /) -> tuple[int, int, int | None, bytes, bytes, int, int, int, int] | None:
    """The recovery-rule index build of ``ops.rebuild_index.rebuild_segment_py`` over a whole ``.log``.

    Returns (valid_bytes, batches, last_offset, index, timeindex, stop_code, stop_pos, a, b); stop_code 0 means
    recovery would not stop, 1..12 name the problem (table in index_build.c, texts in ``_from_accel``). Returns None
    (Python runs the reference) for a legacy entry or an int64 overflow.
    """

# ------------------------------------------------------------------------------------------------ SIGBUS guard (sigbus_guard.c)
def guard_register(buffer: Buffer, /) -> int:
    """Register a read-only, page-aligned map with the SIGBUS guard: a fault on it then maps a zero page instead of
    killing the process. Returns the slot, or -1 when every slot is taken (the caller reads the file instead).
    ValueError when the buffer does not start on a page. Only where the platform has the guard (Linux)."""

def guard_faults(slot: int, /) -> tuple[list[int], tuple[int, int] | None]:
    """Page offsets (from the map's start, sorted) that faulted and were replaced by zeros since the last call, and
    the (lo, hi) byte range of faults not recorded one by one (None when none overflowed). ValueError for a slot
    that is not registered."""

def guard_release(slot: int, /) -> None:
    """Unregister a map before it is closed (its fault records are dropped). ValueError for a slot out of range."""

def first_nonzero(buffer: Buffer, start: int, end: int, /) -> int:
    """Position of the first non-zero byte in ``buffer[start:end]`` (clamped to the buffer), or ``end``; memory
    speed, GIL released (verify-crc's zero-run skips). Never declines."""

# ------------------------------------------------------------------------------------------------ scan (scan_columns.c, scan_records.c)
def scan_table(buffer: Buffer, start: int, end: int, base: int, crc: bool, /
               ) -> tuple[bytes, int, int, int, str, tuple[object, ...]]:
    """``scan_v2``'s walk, written straight into the final Arrow buffers of ``kafkalog scan``'s batches dataset
    (column order: ``scan.columns.SCAN_TABLE``; ``cap`` slots per column, positions + ``base``), plus the window's
    aggregates for the report and the partition pass. ``crc`` False: the caller vouches that every batch in the
    range has a sound checksum (verify-crc's pass checked them), so crc_ok is set without recomputing it.

    Returns (data, n, cap, stop, reason, facts); reasons as ``scan_v2`` plus ``"overflow"`` (base offset +
    lastOffsetDelta does not fit an int64). Declines by stopping; Python continues from ``stop``. The layout of
    ``facts`` is written above scan_table in accel/scan_columns.c (None where a fact has no row or overflowed).
    """

def scan_records(buffer: Buffer, start: int, end: int, outs: tuple[bytearray, ...], position: int,
                 base_offset: int, base_timestamp: int, max_timestamp: int, log_append: bool, count: int, /) -> bool:
    """``scan --records``: the ``count`` records of one v2 batch in ``buffer[start:end]`` (an uncompressed batch's
    bytes after its header, or a decompressed payload) appended to ``outs`` (the ten bytearrays of
    ``scan.records.RecordBuffers``). False: nothing was appended because the Python walk might report something
    (a malformed varint, sizes or counts that do not add up, a header key that is not strict UTF-8): ask Python."""

def scan_records_run(window: Buffer, start: int, stop: int, base: int, ok_bitmap: Buffer, first_bit: int,
                     outs: tuple[bytearray, ...], /) -> tuple[int, int]:
    """``scan --records``: the records of the v2 batches ``window[start:stop]`` that one ``scan_table`` call walked
    (entry k is bit ``first_bit + k`` of its crc_ok bitmap; failed and empty batches have none), appended to
    ``outs``. Returns (pos, index) of the first batch it leaves to Python (compressed, or declined), or pos == stop
    when done. Raises ValueError on arguments out of range."""

# ------------------------------------------------------------------------------------------------ verify-crc --deep (check_records.c)
def check_records(buffer: Buffer, start: int, end: int, count: int, base_offset: int, last_offset: int, /) -> bool:
    """True when the ``count`` records of ``buffer[start:end]`` (an uncompressed batch's records or a decompressed
    payload) are certainly clean: every varint and length adds up and the offsets increase within
    [base_offset, last_offset]. False declines: Python walks the records and words the problem."""

# ------------------------------------------------------------------------------------------------ dump (format_text.c, format_json.c)
def dump_batch(buffer: Buffer, start: int, end: int,
               header: tuple[int, int, int, int, int, int, int, int, int, int, int, int, int, int, bool],
               label: bytes, codec_name: bytes, print_horizon: bool, deep: bool, print_data: bool, last: int,
               java_gaps: bool, as_bytes: bool = False, decoders: Decoders | None = None, /
               ) -> tuple[str | bytes, int, list[int]] | None:
    """``dump``'s text for one v2 batch: its batch line (DumpLogSegments 2.2+ form) and, with ``deep``, its record
    lines. ``header`` = (position, size, base_offset, last_offset_delta, count, base_sequence, producer_id,
    producer_epoch, partition_leader_epoch, attributes, base_timestamp, max_timestamp, magic, crc, valid).

    Returns (text, last, gaps): str, or UTF-8 bytes with ``as_bytes``; the last offset printed and the offset gaps
    found. Returns None (Python formats the batch) when the records are not plain well-formed records it reproduces
    byte for byte (a malformed varint, too many headers, an offset overflow, a range past the buffer).

    ``decoders`` (accel/json_value.c; ``SchemaRegistryParser.fast_decoders``): (key, value, encode, default,
    known_len); a side None prints its bytes as UTF-8 text, else (fn, known): ``fn(bytes)`` / ``fn(bytes, headers)``
    (a record with headers) returns the text to print or ``(value,)``, written as ``encode(value)`` would (json with
    ``default``); ``known`` maps a first-``known_len``-bytes prefix to ``f(bytes, known_len) -> value``, called
    directly for a record without headers. An Exception from a callable returns None (Python formats the batch).
    """

def json_records(buffer: Buffer, start: int, end: int,
                 header: tuple[int, int, int, int, int, int, int, int, int, int, int, int, int, int, bool],
                 file_json: bytes, ts_name: bytes, codec_name: bytes, print_data: bool, last: int, java_gaps: bool, /
                 ) -> tuple[bytes, int, list[int]] | None:
    """``dump --format json``'s batch object and record objects of one valid v2 batch, one line each. ``header`` is
    dump_batch's; ``file_json`` is json.dumps(file) as UTF-8, ``ts_name`` / ``codec_name`` the plain names.
    Returns (lines, last, gaps), or None (Python renders the batch) on an invalid batch and for anything it does not
    reproduce exactly (malformed records, invalid UTF-8 where text is printed, too many headers)."""

def dump_run(buffer: Buffer, pos: int, end: int, mode: int, deep: bool, print_data: bool, print_horizon: bool,
             max_codec: int, labels: tuple[bytes, bytes], codec_names: tuple[bytes, bytes, bytes, bytes, bytes],
             file_json: bytes, last: int, java_gaps: bool, max_out: int,
             decompress: Callable[[int, Any, int, int], Any], decline: type[BaseException],
             decoders: Decoders | None = None, /) -> tuple[bytearray, int, int, int, int, list[int], bool]:
    """``dump``'s text (``mode`` 0) or JSON (``mode`` 1) of a run of clean v2 batches from ``pos``, formatted as
    dump_batch / json_records would, into one bytearray of about ``max_out`` bytes (pooled: reused only once Python
    dropped it). Returns (text, next_pos, batches, records, last, gaps, full). It stops before the first batch it
    does not take (short, not magic 2, bad length or CRC, codec id above ``max_codec``, a control batch or records it
    would decline in a deep dump, or ``decompress`` raising ``decline``: Python then handles that batch with its
    exact text or error), at ``end``, or with ``full`` True once the text reaches ``max_out`` (call again at
    next_pos). Any other exception from ``decompress`` propagates. ``decoders``: dump_batch's (text, ``mode`` 0,
    only); a batch whose callable raises an Exception stops the run (Python formats it)."""

def json_text(value: Any, encode: Callable[[Any], str], default: Callable[[Any], Any], /) -> bytes | None:
    """The JSON text the dump's decoders write for ``value`` (accel/json_value.c): ``encode(value)``'s (json with
    ``default``, ``ensure_ascii=False``, compact separators) as UTF-8, or None where it declines (a str with lone
    surrogates, a dict key that is not a str, a subclass of a builtin, deep nesting). For the tests."""

# ------------------------------------------------------------------------------------------------ export (export_records.c)
def export_ndjson(buffer: Buffer, start: int, end: int, count: int, base_offset: int, base_timestamp: int,
                  max_timestamp: int, log_append: bool, base_sequence: int,
                  pieces: tuple[bytes, bytes, bytes, bytes, bytes], lo_offset: int, start_ms: int, end_ms: int,
                  limit: int, /) -> tuple[bytes, int] | None:
    """``export --format ndjson``: the lines of the selected records (offset >= lo_offset, start_ms <= timestamp <=
    end_ms, at most ``limit``, -1: no limit) of one v2 batch's records ``buffer[start:end]``, byte for byte what
    ``render.export_ndjson.python_lines`` writes; ``pieces`` are the batch-constant parts of a line. Returns (lines,
    records), or None (Python formats the batch) on a record it might word differently: malformed, more than 64
    headers, offset or timestamp overflow."""

def export_ndjson_run(buffer: Buffer, pos: int, end: int, max_out: int, next_offset: int, max_batch_size: int,
                      pieces: tuple[bytes, bytes, bytes, bytes], file_json: bytes, /
                      ) -> tuple[bytearray, int, int, int, int, int, int, int]:
    """``export --format ndjson``: the lines of a run of consecutive plain v2 batches (uncompressed, not transactional,
    not control, CRC valid, base offset >= ``next_offset``) from ``pos`` in one call, each as ``export_ndjson``
    formats it; stops before the first batch it does not take or once the text reaches ``max_out``. Returns (text,
    used bytes of it, next position, batches with records, records, first base offset or -1, last offset of the last
    taken batch or -1, last offset walked or INT64_MIN)."""

def export_columns(buffer: Buffer, start: int, end: int, count: int, base_offset: int, base_timestamp: int,
                   max_timestamp: int, log_append: bool, base_sequence: int, lo_offset: int, start_ms: int,
                   end_ms: int, limit: int, outs: tuple[bytearray, ...], /) -> int:
    """``export --format parquet``: the selected records' columns appended to the 15 bytearrays of
    ``render.export_parquet.ColumnBuffers``. Returns the records appended, or -1 (nothing appended: Python decodes
    the batch) where ``export_ndjson`` declines and on a header key that is not strict UTF-8 or column bytes past
    int32 offsets."""

def export_columns_run(buffer: Buffer, pos: int, end: int, next_offset: int, max_batch_size: int,
                       outs: tuple[bytearray, ...], batch_outs: tuple[bytearray, ...], codes_create: Buffer,
                       codes_append: Buffer, batch_no: int, rows: int, nbytes: int, max_rows: int, max_bytes: int,
                       /) -> tuple[int, int, int, int, int, int, int]:
    """``export --format parquet``: the columns of a run of consecutive plain v2 batches (``export_ndjson_run``'s
    rules) from ``pos``: records into ``outs`` (``export_columns``' 15 bytearrays), batch fields into the 7
    ``batch_outs`` (row batch numbers from ``batch_no``, position, leader epoch, producer id, producer epoch, base
    offset, the batch's i32 dictionary codes: ``codes_create`` or ``codes_append``); stops before a batch it does not
    take, or once the row group reaches ``max_rows`` rows or ``max_bytes`` batch bytes (``rows``, ``nbytes``: so
    far). Returns (next position, batches with records, records, first base offset or -1, last offset of the last
    taken batch or -1, last offset walked or INT64_MIN, batch bytes walked)."""

def export_codes(codes: Buffer, k: int, batch_no: Buffer, /) -> list[tuple[bytes, bytes, int]]:
    """``export --format parquet``: for each of the ``k`` i32 codes per batch entry in ``codes`` (-1: null), the
    per-row dictionary indices (``batch_no``: each row's i32 batch entry), an Arrow validity bitmap (code >= 0) and
    the null count."""

def export_valid(buffer: Buffer, width: int, /) -> tuple[bytes, int]:
    """``export --format parquet``: the Arrow validity bitmap (value != -1) of native int32 (``width`` 4) or int64
    (8) values, and the null count."""

# ------------------------------------------------------------------------------------------------ replay (replay_records.c)
def replay_items(buffer: Buffer, start: int, end: int, count: int, base_offset: int, base_timestamp: int,
                 max_timestamp: int, log_append: bool, after: int, header_name: str | None, prefix: Buffer,
                 /) -> list[tuple[int, int, bytes | None, bytes | None, list[tuple[str, bytes | None]] | None]] | None:
    """``replay``: the records of one v2 batch (``buffer[start:end]``, ``count`` records) whose offset is above the
    running maximum (``after``, then each record taken; ``-2**63``: none yet) as the tuples the produce loop passes
    to confluent-kafka: (offset, timestamp (0 when not > 0), key, value, headers (name str decoded with "replace",
    value; the offset header ``(header_name, prefix + str(offset))`` last; None when empty)). Returns None (Python
    decodes the batch, ``ops.replay_source.python_items``) on a record the decoder rejects or an int64 overflow
    (``replay_count``: of an offset only)."""

def replay_count(buffer: Buffer, start: int, end: int, count: int, base_offset: int, after: int,
                 /) -> tuple[int, int, int] | None:
    """``replay``'s plan: (taken, first, last) of the records ``replay_items`` would return (first/last -1 when
    none), no object per record; None where ``replay_items`` declines. GIL released."""

def replay_map_lines(prefix: Buffer, first: int, offsets: list[int] | None, middle: Buffer, dos: list[int],
                     start: int, stop: int, /) -> bytes:
    """``replay``'s offset map: the lines ``prefix + source offset + middle + destination offset + "\\n"`` of
    records ``start..stop-1`` of a produced chunk (source offsets ``first + i``, or ``offsets[i]``; destination
    offsets ``dos[i]``); the reference is ``ops.replay._Run`` 's f-string. Never declines: TypeError /
    OverflowError / ValueError for arguments out of their range."""

# ------------------------------------------------------------------------------------------------ metadata replay (metadata_replay.c)
def metadata_apply(buffer: Buffer, pos: int, end: int, base_offset: int, base_ts: int, max_ts: int, log_append: bool,
                   count: int, skip: bool, start: int, stop_offset: int, stop_time: int, ctx: tuple[Any, ...], /
                   ) -> tuple[int, int, int, int, int] | None:
    """``kafkalog metadata``'s replay of the hot records of one CRC-checked, uncompressed, non-control v2 batch whose
    last ``count`` records are ``buffer[pos:end]`` (``skip``: pass over the first, Python applied it). It applies
    TopicRecord / PartitionRecord / PartitionChangeRecord values (frame version 1) to the image as
    ``metadata_image.Replayer`` does, decoding them by the programs of ``metadata_fast.compile_program``; ``ctx`` is
    ``metadata_fast.CompiledReplay``'s (image dicts, Topic, Partition, MIGRATING, programs, slot descriptors).
    Returns (pos, applied, first_offset, last_offset, last_time) where it stopped (-1s when none applied), or None
    when the records are not all plain frames ending at ``end`` (``ops.metadata._simple_values`` declines those
    too). It declines by stopping before the first record it does not take: another record type or version, an
    unknown tag, anything the fast reader declines, a record Kafka's delta refuses (unknown topic or partition,
    directories that do not match the replicas), an offset below ``start``, above ``stop_offset`` or a time above
    ``stop_time``; Python applies that record. TypeError for a ``ctx`` whose classes are not slotted."""

# ------------------------------------------------------------------------------------------------ layouts (layouts.h)
def layout_constants() -> dict[str, int]:
    """The byte offsets and sizes this build was compiled with (``accel/layouts.h``), by their ``#define`` names;
    equal to ``format.layouts.c_constants()`` unless the build is stale (tests/test_layouts.py)."""
