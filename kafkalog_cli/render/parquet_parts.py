"""One Parquet file from row groups encoded in parallel: each row group is written by pyarrow as a small Parquet file
of its own in memory, on one of ``THREADS`` threads, and the parts are joined into the output in order: their column
chunks one after the other, then one footer whose row groups are the parts' own with their byte offsets moved to
where the chunks now sit (``thrift_compact``: the footer's encoding, Thrift's compact protocol).

Why (issue 31 item 4, bench/HISTORY.md "Issue 31: Parquet export"): pyarrow's writer encodes one column after the
other on the calling thread (about 0.3 us per row for the export's 26 columns), the walk that builds the rows costs
half as much, and ``dump --deep-iteration --print-data-log``, the yardstick, about 0.15 us per record: with one
writer thread the export could not reach half the dump's records/s however fast the walk. Two row groups encoded at
once use both cores.

The file is what ``pq.ParquetWriter`` writes for the same tables (the same schema, key-value metadata, row groups,
pages and statistics, byte for byte: only the footer is assembled here, and it comes out as ParquetWriter's own); the
tests compare the bytes with a file ``ParquetWriter`` writes from the same tables.
"""

from __future__ import annotations

from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from kafkalog_cli.render import thrift_compact as tc

MAGIC = b"PAR1"
THREADS = 2  # row groups encoded at once (the machine's cores; more only queue)
PENDING = 2  # row groups in flight at most (encoding, or encoded and not yet written): memory holds this many
# besides the one being built (3 measured no faster at 256 MiB, 50 MiB more RSS)

# Thrift field ids of parquet.thrift (parquet-format): the offsets that move with a column chunk
_FMD_NUM_ROWS, _FMD_ROW_GROUPS = 3, 4
_RG_COLUMNS, _RG_FILE_OFFSET, _RG_ORDINAL = 1, 5, 7
_CC_FILE_OFFSET, _CC_META, _CC_OFFSET_INDEX, _CC_COLUMN_INDEX = 2, 3, 4, 6
_CMD_OFFSETS = (9, 10, 11, 14)  # data_page_offset, index_page_offset, dictionary_page_offset, bloom_filter_offset


class ParallelParquetWriter:
    """``write_table`` hands a row group to the encoding threads and returns; ``close`` writes the rest and the
    footer. ``sink``: a binary file object written front to back (``ops/export_writer.DirectWriter``), only from the
    caller's thread. ``options``: ``pq.ParquetWriter``'s keyword arguments; ``metadata``: its key-value metadata."""

    def __init__(self, sink: Any, schema: pa.Schema, metadata: dict[str, str], **options: Any) -> None:
        self.sink = sink
        self.schema = schema
        self.metadata = metadata
        self.options = options
        self._pool = ThreadPoolExecutor(THREADS, thread_name_prefix="kafkalog-parquet")
        self._pending: deque[Future[pa.Buffer]] = deque()
        self._pos = 0  # bytes written to sink
        self._first: pa.Buffer | None = None  # the first part, until a second one comes (``_take``)
        self._footer: list[Any] | None = None  # the first part's FileMetaData (parsed); row groups gathered into it
        self._row_groups: list[Any] = []
        self._rows = 0

    def _encode(self, table: pa.Table | None) -> pa.Buffer:
        out = pa.BufferOutputStream()
        w = pq.ParquetWriter(out, self.schema, **self.options)
        w.add_key_value_metadata(self.metadata)
        if table is not None:
            w.write_table(table)
        w.close()
        return out.getvalue()

    def write_table(self, table: pa.Table) -> None:
        while len(self._pending) >= PENDING:
            self._take(self._pending.popleft().result())
        self._pending.append(self._pool.submit(self._encode, table))

    def _take(self, part: pa.Buffer) -> None:
        """A finished part, in order. The first is held until a second comes: a file of one row group (a small
        partition of a directory export) is that part as it is, its footer not parsed (1-2 ms in Python each)."""
        if self._first is None and self._footer is None:
            self._first = part
            return
        if self._first is not None:
            first, self._first = self._first, None
            self._join(first)
        self._join(part)

    def _join(self, part: pa.Buffer) -> None:
        """Append one part's column chunks to the file and its row groups (offsets moved) to the footer."""
        data = memoryview(part)
        n = len(data)
        flen = int.from_bytes(data[n - 8:n - 4], "little")
        if bytes(data[:4]) != MAGIC or bytes(data[n - 4:]) != MAGIC or flen + 12 > n:
            raise ValueError("pyarrow wrote an unexpected Parquet layout")
        footer = tc.read_struct(data[n - 8 - flen:n - 8])
        if self._pos == 0:
            self.sink.write(MAGIC)
            self._pos = len(MAGIC)
        shift = self._pos - len(MAGIC)
        body = data[len(MAGIC):n - 8 - flen]
        if len(body):
            self.sink.write(body)
            self._pos += len(body)
        if self._footer is None:
            self._footer = footer
        for rg in tc.get(footer, _FMD_ROW_GROUPS, default=(tc.STRUCT, []))[1]:
            _move(rg, shift)
            if tc.get(rg, _RG_ORDINAL) is not None:  # pyarrow writes none; a part's would say 0
                tc.set_value(rg, _RG_ORDINAL, tc.I16, len(self._row_groups))
            self._row_groups.append(rg)
        self._rows += tc.get(footer, _FMD_NUM_ROWS, default=0)

    def close(self) -> None:
        try:
            while self._pending:
                self._take(self._pending.popleft().result())
            if self._first is None and self._footer is None:  # no row group: pyarrow's own empty file
                self._first = self._encode(None)
            if self._first is not None:  # one part: the whole file
                self.sink.write(memoryview(self._first))
                self._first = None
                return
            assert self._footer is not None
            tc.set_value(self._footer, _FMD_NUM_ROWS, tc.I64, self._rows)
            tc.set_value(self._footer, _FMD_ROW_GROUPS, tc.LIST, (tc.STRUCT, self._row_groups))
            raw = tc.write_struct(self._footer)
            self.sink.write(raw + len(raw).to_bytes(4, "little") + MAGIC)
        finally:
            self.abort()

    def abort(self) -> None:
        """Stop the threads (what they were encoding is dropped)."""
        for f in self._pending:
            f.cancel()
        self._pending.clear()
        self._pool.shutdown(wait=True)


def _move(rg: list[Any], shift: int) -> None:
    """Add ``shift`` to every file offset of one row group (its own, and each column chunk's)."""
    if not shift:
        return
    tc.add(rg, _RG_FILE_OFFSET, shift)
    for cc in tc.get(rg, _RG_COLUMNS, default=(tc.STRUCT, []))[1]:
        tc.add(cc, _CC_FILE_OFFSET, shift)
        tc.add(cc, _CC_OFFSET_INDEX, shift)
        tc.add(cc, _CC_COLUMN_INDEX, shift)
        meta = tc.get(cc, _CC_META)
        if meta is not None:
            for fid in _CMD_OFFSETS:
                tc.add(meta, fid, shift)
