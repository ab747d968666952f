"""The one per-segment scan both engines run: a segment path in, Arrow tables of rows out, window by window.

Why it is shaped like this: the local process pool and Spark executors must produce identical rows, and memory must
not grow with the segment. So the input is a path string (each worker opens the file itself) and the output is a
stream of ``(dataset, pyarrow.Table)`` chunks, one ``batches`` chunk per ``pread`` window of a few MiB (see
``window.py``), ``records`` chunks as they fill, and the segment's ``problems`` at the end. Batch rows are built as
columns (``columns.py``: the compiled walk, or the pure-Python reference), never as one object per batch.

Problems come from the verify-crc engine (``verify_pass.py``: CRC, sizes, resync past corrupt regions, index
checks); its corrupt regions tell the walk where to jump, so batches after a bad region still appear. Every region
verify calls ``crc-mismatch`` starts with a sound header whose checksum fails: it gets a row with ``crc_ok=false``.
The checks that need neighbouring segments live in ``partition.py``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from kafkalog_cli.errors import UNREADABLE, KafkalogError, ReadFinding
from kafkalog_cli.format.codecs import decompress
from kafkalog_cli.format.legacy import LegacyEntry
from kafkalog_cli.scan import columns as C
from kafkalog_cli.scan import verify_pass
from kafkalog_cli.scan.paths import file_size, locate
from kafkalog_cli.scan.records import RecordBuffers
from kafkalog_cli.scan.schema import DATASETS, RECORDS, WIRE
from kafkalog_cli.scan.window import WINDOW, open_segment, read_window
from kafkalog_cli.storage import accel
from kafkalog_cli.storage.safe_read import shrink_finding, unreadable_findings, vanished_finding
from kafkalog_cli.storage.segment import read_entry

MAX_BATCH_SIZE = verify_pass.MAX_BATCH_SIZE
RECORDS_CHUNK = 1 << 16  # records rows per chunk
RECORDS_BYTES = 256 << 20  # or this much of key and header bytes (a binary column's offsets are int32)
Window = bytes | bytearray | memoryview  # a window's bytes (read_window hands out views of a reused buffer)
OVERLAP_ABOVE = verify_pass.OVERLAP_ABOVE  # from this size on, walked beside the verify pass (tests lower it here)


def _accel_walk() -> Any:
    mod = accel.module()
    return getattr(mod, "scan_table", None) if mod is not None else None


def scan_segment_chunks(path: str, *, records: bool = False, window: int = WINDOW,
                        use_accel: bool | None = None) -> Iterator[tuple[str, pa.Table]]:
    """Chunks of rows for one segment, in file order. Never raises for corrupt or unreadable input: those become
    problem rows. ``use_accel=False`` forces the pure-Python walk (None: the extension when available)."""
    yield from _SegmentScan(path, records, window, _accel_walk() if use_accel is not False else None).run()


def scan_segment(path: str, *, records: bool = False, use_accel: bool | None = None) -> dict[str, list[dict[str, Any]]]:
    """All rows of one segment as dicts (for tests and small inputs): ``{"batches": [...], "problems": [...],
    "records": [...]}``."""
    out: dict[str, list[dict[str, Any]]] = {"batches": [], "problems": [], "records": []}
    for name, table in scan_segment_chunks(path, records=records, use_accel=use_accel):
        out[name].extend(table.to_pylist())
    return out


def scan_segment_rows(path: str, *, records: bool = False) -> tuple[dict[str, Any], list[tuple], list[dict[str, Any]],
                                                                    dict[str, list[Any]]]:
    """One small segment as Python values, for gathering many small segments into one table (``work.SmallRows``):
    (location, batch rows as ``columns.RAW`` tuples, problem rows, record columns). The pure-Python walk, which
    the compiled one equals; for a few batches, building Arrow arrays per segment would cost more than the walk."""
    s = _SegmentScan(path, records, WINDOW, None, collect=True)
    for _ in s.run():
        pass
    return s.loc, s.rows, [{**s.loc, **p} for p in s.problems], s.rec


class _SegmentScan:
    """State of one segment walk (a class to keep the loop's locals together)."""

    def __init__(self, path: str, records: bool, window: int, walk: Any, collect: bool = False) -> None:
        self.collect = collect  # keep Python rows instead of yielding tables (small segments, see work.SmallRows)
        self.path = path
        self.loc = locate(path).as_dict()
        self.records = records
        self.window = max(window, 64)
        self.walk = walk
        self.problems: list[dict[str, Any]] = []
        self.rows: list[tuple] = []  # Python-built batch rows not yet in a table
        self.pieces: list[pa.Table] = []
        self.rec: dict[str, list[Any]] = {f.name: [] for f in RECORDS if f.name not in self.loc}
        # with the compiled walk, records go to column buffers (records.py) instead of the lists of ``rec``
        self.recbuf = RecordBuffers() if walk is not None and records else None
        mod = accel.module() if self.recbuf is not None else None
        self.rec_run = getattr(mod, "scan_records_run", None)
        self.rec_one = getattr(mod, "scan_records", None)
        if self.rec_run is None or self.rec_one is None:
            self.recbuf = None
        self.seen: set[tuple[str, int, int]] = set()  # read findings already reported (by verify's pass or by us)
        self.seen_verify: set[tuple[str, int, int]] = set()
        self.shrunk = False
        self.checked = -1  # the size verify's pass checked every CRC of (verify_pass.verify), or -1
        self.crc_all = True  # compute every CRC in the walk (False: verify's pass did, for this very file size)
        self.n_open = -1  # the file size at the walk's open
        self.scratch = bytearray(0)  # the window buffer (_scratch)

    def problem(self, position: int, end: int, kind: str, message: str, offset: int | None = None) -> None:
        self.problems.append(verify_pass.problem(self.path, position, end, kind, message, offset=offset))

    # ------------------------------------------------------------------------------------------------ main loop
    def run(self) -> Iterator[tuple[str, pa.Table]]:
        background = None
        if not self.collect and file_size(self.path) >= OVERLAP_ABOVE:
            background = verify_pass.background(self.path)  # the walk starts now, beside the pass
            try:
                fd, n = open_segment(self.path)
            except OSError:  # the file's troubles are the pass's to word: the sequence below, once it has finished
                pass
            else:
                try:
                    yield from self._walk(fd, n, background=background)
                finally:
                    os.close(fd)
                yield from self._tail()
                return
        regions = self._take_pass(background.result() if background is not None else verify_pass.verify(self.path))
        if regions is not None:
            try:
                fd, n = open_segment(self.path)
            except FileNotFoundError:  # deleted between verify's open and ours: a note, as verify gives it
                self.finding(vanished_finding(self.path))
            except OSError as exc:
                self.problem(0, 0, "unreadable", f"cannot open: {os.strerror(exc.errno) if exc.errno else exc}")
            else:
                try:
                    yield from self._walk(fd, n, regions)
                finally:
                    os.close(fd)
        yield from self._tail()

    def _take(self, found: list[dict[str, Any]]) -> None:
        """The pass's problem rows (first, as when the pass ran before the walk); the read findings among them are
        not reported again by the walk."""
        self.problems[:0] = found
        self.seen = {(p["kind"], p["position"], p["end"]) for p in found if p["kind"] == UNREADABLE}
        self.seen_verify = set(self.seen)

    def _take_pass(self, result: verify_pass.Result) -> dict[int, tuple[int, str]] | None:
        """Take the finished pass into the walk (problems, checked size, CRC rule); its regions, or None when the
        pass could not read the file at all (then no rows, or none past what was walked beside it)."""
        found, regions, unreadable, self.checked = result
        self._take(found)
        self.crc_all = self.crc_all or self.n_open != self.checked
        if unreadable or any(p["kind"] == "vanished" and p["end"] == 0 for p in found):
            return None
        return regions

    def _tail(self) -> Iterator[tuple[str, pa.Table]]:
        if self.collect:
            return
        if self._rec_rows():
            yield "records", self._records_table()
        yield "problems", self._problems_table()

    def finding(self, f: ReadFinding) -> None:
        """What the disk did to one of our windows (``storage.safe_read``), as a problem row unless verify's pass
        reported the same range already; adjacent unreadable ranges of consecutive windows are one row; notes
        (``vanished``, ``truncated-during-read``) are info rows."""
        self.crc_all = True  # the disk or the file changed what verify's pass saw: trust no checksum of its
        key = (f.kind, f.start, f.end)
        if key in self.seen or any(k == f.kind and a <= f.start and f.end <= b for k, a, b in self.seen_verify):
            return
        last = self.problems[-1] if self.problems else None
        if (f.kind == UNREADABLE and last is not None and last["kind"] == UNREADABLE and last["end"] == f.start
                and (UNREADABLE, last["position"], last["end"]) not in self.seen_verify):
            last["end"] = f.end
            merged = unreadable_findings(f.file, [(last["position"], f.end)], "I/O error reading with pread")
            last["message"] = merged[0].message
            self.seen.add((f.kind, last["position"], f.end))
            return
        self.seen.add(key)
        self.problems.append(verify_pass.problem(f.file, f.start, f.end, f.kind, f.message,
                                                 verify_pass.INFO if f.is_note else "error"))

    def _scratch(self, length: int) -> bytearray:
        """The window buffer, reused from window to window (``read_window``'s ``into``)."""
        if len(self.scratch) < length:
            self.scratch = bytearray(max(length, self.window))
        return self.scratch

    def _read(self, fd: int, pos: int, length: int, n: int, reuse: bool = False) -> Window:
        w, findings = read_window(fd, self.path, pos, length, n, self._scratch(length) if reuse else None)
        for f in findings:
            self.finding(f)
        if len(w) < length and not self.shrunk:
            self.shrunk = True
            self.finding(shrink_finding(self.path, pos + len(w), n))
        return w

    def _walk(self, fd: int, n: int, regions: dict[int, tuple[int, str]] | None = None, *,
              background: verify_pass.Background | None = None) -> Iterator[tuple[str, pa.Table]]:
        """Rows of the segment's windows, stepping around the pass's corrupt regions. With ``background`` (the pass
        still running, ``regions`` None) the walk goes ahead of the finished pass as long as the pass vouches for
        each window (``Background.clean_until``); from the first window it does not, the walk takes the finished
        pass (its problems, regions and checked size) and goes on by its rules, so the rows are the same either
        way."""
        live = background is not None
        w: Window
        self.n_open = n
        self.crc_all = not live and n != self.checked  # while live, every CRC so far is one the pass verified
        starts = sorted(regions) if regions is not None else []
        ri = 0
        pos = 0
        want = self.window
        while pos < n:
            if live:
                assert background is not None
                stop = min(n, pos + max(want, self.window))
                if background.clean_until(stop):
                    w, findings = read_window(fd, self.path, pos, stop - pos, n, self._scratch(stop - pos))
                    if not findings and len(w) == stop - pos:
                        rel, why = self._window_rows(w, pos)
                        if why == "end" and rel > 0:
                            pos += rel
                            yield from self._chunk()
                            continue
                        # bytes that are no entry, or an entry larger than the window: the finished pass's rules
                        # decide from here; rows of the window so far stay (the pass vouched for them)
                        pos += rel
                        if rel:
                            yield from self._chunk()
                # a region ahead, a problem dropped, the pass done, or the disk or the file changed under the walk
                # (its findings are worded by the finished pass's rules, which read this window again)
                live = False
                regions = self._take_pass(background.result())
                if regions is None:
                    break
                starts = sorted(regions)
                continue
            while ri < len(starts) and starts[ri] < pos:
                ri += 1
            if ri < len(starts) and starts[ri] == pos:
                end, kind = regions[pos]  # type: ignore[index]  # starts is non-empty only with regions
                if kind == "crc-mismatch":
                    self._crc_row(fd, pos, n)
                pos = max(end, pos + 1)
                continue
            stop = starts[ri] if ri < len(starts) else n
            length = min(stop - pos, max(want, self.window))
            want = self.window
            w = self._read(fd, pos, length, n, reuse=True)
            if len(w) < length:  # the file shrank under us: walk what is there, then stop
                n = stop = pos + len(w)
            rel, why = self._window_rows(w, pos)
            if why != "end":  # bytes that are no entry outside any region: only when verify dropped problems
                yield from self._chunk()
                pos = stop
                continue
            if rel == 0:  # the entry at pos is larger than the window, or cut short by the region/file end
                if len(w) < length or stop - pos <= 17:
                    pos = stop
                    continue
                need = C._PREFIX.unpack_from(w, 0)[1] + 12
                if pos + need > stop or need <= len(w):
                    pos = stop
                    continue
                want = need
                continue
            pos += rel
            yield from self._chunk()
        if live:  # the whole file walked while the pass vouched for it: its problems still come with the segment
            assert background is not None
            self._take_pass(background.result())
        yield from self._chunk()

    def _window_rows(self, w: Window, base: int) -> tuple[int, str]:
        """Batch rows of one window; returns where the walk stopped (relative to the window) and why: "end" (the
        next entry is not wholly in the window) or the reason it met bytes that are not an entry."""
        rel = 0
        while True:
            if self.walk is not None:
                start = rel
                data, count, cap, stop, why, facts = self.walk(w, rel, len(w), base, self.crc_all or self.shrunk)
                rel = stop
                if count:
                    self._flush_batches()
                    piece = C.accel_table(self.loc, data, count, cap, facts)
                    self.pieces.append(piece)
                    if self.records and self.recbuf is not None:
                        self._records_run(w, base, start, rel, piece.column("crc_ok").chunk(0).buffers()[1])
                    elif self.records:
                        self._records_of(w, base, piece["position"].to_pylist(), piece["crc_ok"].to_pylist())
            else:
                rows, rel, why = C.py_walk(w, rel, len(w), base, self.crc_all or self.shrunk)
                self.rows.extend(rows)
                if self.records and rows:
                    self._records_of(w, base, [r[0] for r in rows], [r[-1] for r in rows])
            if why == "magic":  # a v0/v1 message: the Python reader, one entry, then the walk goes on
                step = self._legacy(w, rel, base)
                if not step:
                    return rel, "unparsed"
                rel += step
            elif why == "overflow":  # last offset beyond int64: no row (verify reports it)
                rel += C._PREFIX.unpack_from(w, rel)[1] + 12
            else:
                return rel, why

    def _legacy(self, w: Window, rel: int, base: int) -> int:
        """Row (and records) of the v0/v1 entry at ``w[rel:]``; its size, or 0 when it cannot be parsed."""
        try:
            e = LegacyEntry(w, rel)
        except KafkalogError:
            return 0
        if rel + e.size > len(w):
            return 0
        ok = e.is_valid(w)  # type: ignore[arg-type]  # a bytearray window reads as bytes
        self.rows.append(C.legacy_row(e, base + rel, ok))
        if self.records and ok:
            self._records_of(w, base, [base + rel], [True])
        return e.size

    def _crc_row(self, fd: int, pos: int, n: int) -> None:
        """The row of a batch whose header is sound and whose checksum fails (verify's ``crc-mismatch`` region)."""
        head = self._read(fd, pos, min(n - pos, C.V2_HEADER), n)
        if len(head) < 17:
            return
        magic = head[16]
        if magic == 2 and len(head) >= C.V2_HEADER:
            row = C.v2_header_row(head, pos, False)
            if row is not None:
                self.rows.append(row)
        elif magic in (0, 1):
            try:
                self.rows.append(C.legacy_row(LegacyEntry(head, 0), pos, False))
            except KafkalogError:
                pass

    # ------------------------------------------------------------------------------------------------ records
    def _records_run(self, w: Window, base: int, start: int, stop: int, ok_bits: pa.Buffer) -> None:
        """Records of the batches one ``scan_table`` call walked in ``w[start:stop]``: runs of uncompressed batches
        in C, each other batch through ``_records_one``, in walk order."""
        assert self.recbuf is not None
        rec_run = self.rec_run
        assert rec_run is not None  # recbuf is set only with the compiled record walk
        outs = self.recbuf.outs
        pos, k = start, 0
        while pos < stop:
            pos, k = rec_run(w, pos, stop, base, ok_bits, k, outs)
            if pos >= stop:
                break
            self._records_one(w, base, pos)
            step = C._PREFIX.unpack_from(w, pos)[1] + 12
            if step < C.V2_HEADER:  # never for an entry scan_table walked; no endless loop whatever the bytes
                break
            pos += step
            k += 1

    def _records_one(self, w: Window, base: int, rel: int) -> None:
        """Records of the v2 batch at ``w[rel:]`` (crc_ok) that ``scan_records_run`` left: a compressed one is
        decompressed here (``format.codecs``, as ``Batch.payload`` does) and walked in C; whatever the C walk
        declines, or fails to decompress, goes through the Python walk, which words the problem."""
        assert self.recbuf is not None
        rec_one = self.rec_one
        assert rec_one is not None  # recbuf is set only with the compiled record walk
        base_offset, length, _e, _m, _crc, attrs, _lod, base_ts, max_ts, _p, _pe, _s, count = C._V2.unpack_from(w, rel)
        codec = attrs & 7
        if 0 < codec <= 4 and count > 0:
            try:
                data = decompress(codec, memoryview(w)[rel + C.V2_HEADER : rel + length + 12], MAX_BATCH_SIZE,
                                  magic=2)
                if rec_one(data, 0, len(data), self.recbuf.outs, base + rel, base_offset, base_ts, max_ts,
                           bool(attrs & 8), count):
                    return
            except KafkalogError:
                pass  # the Python walk below meets the same error and words it
        self._records_of(w, base, [base + rel], [True])

    def _records_of(self, w: Window, base: int, positions: list[int], oks: list[bool]) -> None:
        """The Python record walk (the reference): into ``rec``'s lists, or into ``recbuf`` with the compiled walk."""
        rec = self.rec
        buf = self.recbuf
        for p, ok in zip(positions, oks):
            if not ok:
                continue
            rel = p - base
            entry: Any = None
            try:
                entry = read_entry(w, rel, w[rel + 16] if w[rel + 16] < 128 else w[rel + 16] - 256, file=self.path)  # type: ignore[arg-type]  # as above
                for r in entry.iter_records(w, MAX_BATCH_SIZE):
                    if buf is not None:
                        buf.add(p, r)
                        continue
                    rec["batch_position"].append(p)
                    rec["offset"].append(r.offset)
                    rec["timestamp"].append(None if r.timestamp == -1 else r.timestamp)
                    rec["key_size"].append(r.key_size)
                    rec["value_size"].append(r.value_size)
                    rec["key"].append(None if r.key is None else bytes(r.key))
                    rec["header_keys"].append([bytes(k).decode("utf-8", "replace") for k, _v in r.headers])
            except KafkalogError as exc:
                if entry is None:
                    self.problem(p, p, "bad-records", f"entry at byte {p}: {exc.message}")
                else:
                    self.problem(p, p + entry.size, "bad-records", f"batch baseOffset {entry.base_offset}: "
                                 f"{exc.message}", offset=entry.base_offset)
            except (IndexError, ValueError) as exc:
                self.problem(p, p, "bad-records", f"batch at byte {p} does not decode: {exc}")

    # ------------------------------------------------------------------------------------------------ tables
    def _flush_batches(self) -> None:
        if self.rows:
            self.pieces.append(C.batch_table(self.loc, C.rows_to_raw(self.rows)))
            self.rows = []

    def _chunk(self) -> Iterator[tuple[str, pa.Table]]:
        if self.collect:
            return
        self._flush_batches()
        if self.pieces:
            table = self.pieces[0] if len(self.pieces) == 1 else C.strip_facts(pa.concat_tables(self.pieces))
            self.pieces = []
            yield "batches", table
        if self._rec_rows() >= RECORDS_CHUNK or (self.recbuf is not None and self.recbuf.nbytes >= RECORDS_BYTES):
            yield "records", self._records_table()

    def _rec_rows(self) -> int:
        return self.recbuf.rows if self.recbuf is not None else len(self.rec["offset"])

    def _records_table(self) -> pa.Table:
        if self.recbuf is not None:
            return self.recbuf.table(self.loc)
        n = len(self.rec["offset"])
        cols = C.location_columns(self.loc, n)
        for f in RECORDS:
            if f.name not in cols:
                vals = self.rec[f.name]
                cols[f.name] = pa.array(vals, type=f.type) if len(vals) == n else pa.nulls(n, f.type)  # decoded: later
        self.rec = {k: [] for k in self.rec}
        return pa.Table.from_arrays([cols[f.name] for f in WIRE["records"]], schema=WIRE["records"])

    def _problems_table(self) -> pa.Table:
        schema = DATASETS["problems"]
        rows = [{**self.loc, **p} for p in self.problems]
        return pa.Table.from_arrays([pa.array([r[f.name] for r in rows], type=f.type) for f in schema], schema=schema)
