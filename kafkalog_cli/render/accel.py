"""The optional compiled fast path of ``dump`` for v2 batches (``kafkalog_cli/_accel.c``).

``make_formatter`` returns a callable that formats one v2 batch's DumpLogSegments batch line (2.2+ form) and, for a
deep dump, its record lines (compact 3.0+ form) in one C call, or None where the accelerator does not apply (not
built, or disabled with ``KAFKALOG_NO_ACCEL=1``). The renderer decides whether its version and options match what
the C code prints (``DlsRenderer.fast_formatter``). The callable returns None for any batch it cannot format exactly
(control batches in a deep dump, malformed records, keys that are not strictly valid UTF-8, ...); the caller then
takes the pure-Python reference path, which also produces the exact error text.

``make_run`` returns a callable that does the same for a whole run of clean batches in one C call
(``_accel.dump_run``); ``Dumper`` hands the batch it stops at to the per-batch path.

``decoders`` (both): a record parser's ``fast_decoders()`` (``internal_topics/schema_decode.SchemaRegistryParser``):
the C text formatter calls them for each key and value and writes what they return (accel/json_value.c), so a
``--value-decoder schema-registry`` dump stays in C; None prints the bytes as UTF-8 text.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from kafkalog_cli.errors import KafkalogError
from kafkalog_cli.format.batch import TIMESTAMP_TYPE_NAMES, Batch
from kafkalog_cli.format.codecs import CODEC_NAMES
from kafkalog_cli.format.layouts import V2_HEADER_SIZE

try:  # pragma: no cover - depends on the build
    from kafkalog_cli import _accel
except ImportError:  # pragma: no cover
    _accel = None  # type: ignore[assignment]  # the stub (_accel.pyi) types the built module

FastFormatter = Callable[..., "tuple[str | bytes, int, list[tuple[int, int]]] | None"]

_LABELS = {k: v.encode() for k, v in TIMESTAMP_TYPE_NAMES.items()}


def available() -> bool:
    return _accel is not None and not os.environ.get("KAFKALOG_NO_ACCEL")


def make_formatter(*, records: bool, print_data: bool, codec_upper: bool, print_horizon: bool,
                   as_bytes: bool = False, decoders: tuple | None = None) -> FastFormatter | None:
    """A batch formatter; ``records`` says whether it may format record lines (the compact 3.0+ form). With
    ``as_bytes`` the text comes back as UTF-8 bytes, for a writer that sends them to stdout as they are."""
    if not available():
        return None
    dump_batch = _accel.dump_batch
    codec_names = {k: (v.upper() if codec_upper else v).encode() for k, v in CODEC_NAMES.items()}

    def format_batch(batch: Batch, buf, valid: bool, deep: bool, last: int, java_gaps: bool, limit: int):  # noqa: ANN001
        if deep:
            span = records_span(batch, buf, limit) if records else None
            if span is None:
                return None
            data, start, end = span
        else:
            data, start, end = b"", 0, 0
        return dump_batch(
            data, start, end, header_tuple(batch, valid), _LABELS[batch.timestamp_type], codec_names[batch.codec], print_horizon, deep,
            print_data, last, java_gaps, as_bytes, decoders,
        )

    return format_batch


def records_span(batch: Batch, buf, limit: int):  # noqa: ANN001, ANN201
    """(data, start, end) of a v2 batch's records for the compiled record formatters (the mapped segment, or the
    decompressed payload), or None where Python formats the batch: a control batch, a negative count, a short
    header, a payload that does not decompress."""
    if batch.is_control or batch.records_count < 0 or batch.size < V2_HEADER_SIZE or batch.streams_payload:
        return None  # a payload decoded as a stream is never held whole: Python formats it record by record
    try:
        data, start = batch.payload(buf, limit)
    except KafkalogError:
        return None
    return data, start, (batch.position + batch.size if data is buf else len(data))


def header_tuple(batch: Batch, valid: bool) -> tuple[int, int, int, int, int, int, int, int, int, int, int, int, int,
                                                       int, bool]:
    """The header argument of ``_accel.dump_batch`` / ``json_records`` (the order of the stub)."""
    return (
        batch.position, batch.size, batch.base_offset, batch.last_offset_delta, batch.records_count,
        batch.base_sequence, batch.producer_id, batch.producer_epoch, batch.partition_leader_epoch,
        batch.attributes, batch.base_timestamp, batch.max_timestamp, batch.magic, batch.crc, valid,
    )


# Text per call of a run (about one write(2)): large enough that the per-call Python is negligible, small enough to
# keep memory flat and an interrupt prompt.
RUN_MAX_OUT = 1 << 20

# (text, next_pos, batches, records, last, gaps, full)
FastRun = Callable[..., "tuple[bytes | bytearray, int, int, int, int, list[tuple[int, int]], bool]"]


def make_run(*, json: bool, print_data: bool, codec_upper: bool = False, print_horizon: bool = False,
             file_json: Callable[[], bytes] | None = None, decoders: tuple | None = None) -> FastRun | None:
    """The formatter of whole runs of clean v2 batches (``_accel.dump_run``), or None where the accelerator is off.

    The callable takes ``(buf, pos, end, deep, max_codec, last, java_gaps, limit)`` (``limit``: the decompressed
    size cap) and returns ``(text, next_pos, batches, records, last, gaps, full)``: the UTF-8 text of the batches
    from ``pos`` on that the per-batch path would format the same way (empty, and ``batches`` 0, when the batch at
    ``pos`` is not one of them; ``full``: it stopped at ``RUN_MAX_OUT`` bytes, call again at ``next_pos``). ``json``
    selects the JSON objects of ``JsonRenderer`` (then ``file_json`` gives the current file's JSON string) instead
    of DumpLogSegments' lines. Why: the per-batch Python around ``make_formatter``'s callable was ~15-20 % of a
    dump of small records (bench/HISTORY.md, issue 20)."""
    if not available() or not hasattr(_accel, "dump_run"):
        return None
    from kafkalog_cli.format import codecs

    dump_run = _accel.dump_run
    decompress = codecs.decompress
    streams = codecs.streams
    labels = (_LABELS[0], _LABELS[1])
    names = [(CODEC_NAMES[k].upper() if codec_upper else CODEC_NAMES[k]).encode() for k in range(5)]
    codec_names = (names[0], names[1], names[2], names[3], names[4])
    mode = 1 if json else 0
    decompressors: dict[int, Callable[[int, object, int, int], object]] = {}

    def decompressor(limit: int) -> Callable[[int, object, int, int], object]:
        """What Batch.payload does for a compressed batch (the same codecs, the same size cap)."""
        def dec(codec: int, buf, start: int, end: int):  # noqa: ANN001, ANN202
            if streams(codec, end - start):  # declined (the run stops): Python streams this batch's records
                raise KafkalogError("payload decoded as a stream")
            return decompress(codec, buf[start:end], limit, magic=2)

        return decompressors.setdefault(limit, dec)

    def run(buf, pos: int, end: int, deep: bool, max_codec: int, last: int, java_gaps: bool,  # noqa: ANN001, ANN202
            limit: int = codecs.DEFAULT_LIMIT):
        fj = file_json() if file_json is not None else b""
        dec = decompressors.get(limit) or decompressor(limit)
        return dump_run(buf, pos, end, mode, deep, print_data, print_horizon, max_codec, labels, codec_names, fj, last,
                        java_gaps, RUN_MAX_OUT, dec, KafkalogError, decoders)

    return run
