"""Second pass of a scan: checks that need a batch's neighbours across a whole partition.

Why a separate pass: segments are scanned independently (in any order, on any executor), but producer sequences,
timestamp order and offsets across segment boundaries run through the whole partition. Both engines group the
batch rows of one partition directory and call ``partition_problems`` on them, so they report identical rows.
Only batches whose CRC verified take part: a corrupt header says nothing trustworthy about its neighbours.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pyarrow as pa

from kafkalog_cli.format.text import increment_sequence
from kafkalog_cli.scan.columns import facts_of, lit
from kafkalog_cli.scan.lazy_compute import pc
from kafkalog_cli.scan.paths import SEGMENT_RE
from kafkalog_cli.scan.schema import to_rows

INT32_MAX = 2147483647

LOCATION = ("log_dir", "topic", "partition", "partition_dir")
# the batches columns partition_problems reads
COLUMNS = [*LOCATION, "segment", "position", "size", "base_offset", "last_offset", "max_timestamp", "producer_id",
           "producer_epoch", "base_sequence", "last_sequence", "control", "crc_ok"]


def partition_key(row: dict[str, Any]) -> tuple[str, str]:
    """Rows of the same partition directory share this key (two dirs of one partition, e.g. ``-future``, do not)."""
    return row["log_dir"], row["partition_dir"]


def _order(row: dict[str, Any]) -> tuple[int, str, int]:
    seg = row["segment"]
    return (int(seg[:20]) if SEGMENT_RE.match(seg) else -1), seg, row["position"]


def _problem(row: dict[str, Any], kind: str, severity: str, message: str) -> dict[str, Any]:
    return {
        **{k: row[k] for k in LOCATION},
        "segment": row["segment"],
        "file": row["segment"],
        "position": row["position"],
        "end": row["position"] + row["size"],
        "kind": kind,
        "severity": severity,
        "message": message,
        "offset": row["base_offset"],
    }


def partition_problems(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Problems across the batch rows of ONE partition directory (any order in, deterministic order out):

    - ``segment-order`` (error): a segment's base offset (file name) is not above the previous segment's last offset;
    - ``sequence-gap`` (warning): per producer id and epoch, a batch whose baseSequence is not the previous batch's
      lastSequence + 1 (with Kafka's wrap at 2^31-1); the first batch of a producer seen here is not checked;
    - ``timestamp-order`` (warning): a batch whose maxTimestamp is below the previous batch's (null timestamps,
      i.e. v0 messages and empty batches, are skipped).

    Rows are dicts with the ``COLUMNS`` keys; timestamps as int milliseconds (or None).
    """
    good = sorted((r for r in rows if r["crc_ok"]), key=_order)
    return PartitionPass().feed_rows(good)


_RANK = {"segment-order": 0, "timestamp-order": 1, "sequence-gap": 2}


class PartitionPass:
    """``partition_problems`` as a stream: feed the batch chunks of one partition in (segment, position) order and
    get each chunk's problems; the state carried between chunks is one row per producer and a few scalars, so a
    partition of any size passes in bounded memory.

    Small chunks go through the row-by-row reference (``feed_rows``); chunks of ``vector_from`` rows or more are
    checked with ``pyarrow.compute`` on whole columns (``_feed_vector``), which gives the same problems (tests
    compare the two); only rows with a problem become Python objects.
    """

    def __init__(self, vector_from: int = 256) -> None:
        self.vector_from = vector_from
        self.prev_seg: str | None = None
        self.prev_last: int | None = None
        self.prev_ts: dict[str, Any] | None = None  # max_timestamp, base_offset, segment of the last timed batch
        self.producers: dict[tuple[int, int], tuple[int, int]] = {}  # (pid, epoch) -> (last_sequence, base_offset)

    def feed(self, table: pa.Table) -> list[dict[str, Any]]:
        """Problems of one chunk of ``batches`` rows (one segment, in position order)."""
        facts = facts_of(table)
        if facts is not None and self._feed_facts(facts):
            return []
        table = table.select(COLUMNS)
        if table.num_rows < self.vector_from:
            ts = table.column("max_timestamp").cast(pa.int64())
            table = table.set_column(table.schema.get_field_index("max_timestamp"), "max_timestamp", ts)
            return self.feed_rows([r for r in to_rows(table) if r["crc_ok"]])
        return self._feed_vector(table)

    def _feed_facts(self, f: dict[str, Any]) -> bool:
        """The chunk's checks from the compiled walk's facts (``columns.facts_of``) when they show that the chunk has
        no problem: then the state moves on as the row walk would move it and True is returned. Anything that may
        be a problem returns False before touching the state, and the chunk goes through ``_feed_vector``, which
        words it."""
        if f["good_last_max"] is None:  # no good row: nothing to check, nothing changes
            return True
        seg = f["segment"]
        new_seg = seg != self.prev_seg
        if new_seg and self.prev_last is not None and SEGMENT_RE.match(seg) and int(seg[:20]) <= self.prev_last:
            return False
        timed = f["timed"]
        if timed is not None and (not timed[0] or (self.prev_ts is not None
                                                   and timed[1][0] < self.prev_ts["max_timestamp"])):
            return False
        seqs = f["sequences"]
        if seqs is None:
            return False
        for pid, epoch, chained, first_seq, _last, _base in seqs:
            before = self.producers.get((pid, epoch))
            if not chained or (before is not None and first_seq != increment_sequence(before[0], 1)):
                return False
        if new_seg:
            self.prev_seg = seg
        top = f["good_last_max"]
        self.prev_last = top if self.prev_last is None else max(self.prev_last, top)
        if timed is not None:
            self.prev_ts = {"max_timestamp": timed[2][0], "base_offset": timed[2][1], "segment": seg}
        for pid, epoch, _chained, _first, last_seq, base in seqs:
            self.producers[(pid, epoch)] = (last_seq, base)
        return True

    # ------------------------------------------------------------------------------------------ row reference
    def feed_rows(self, good: list[dict[str, Any]]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for r in good:
            seg = r["segment"]
            if seg != self.prev_seg:
                self._segment_order(r, out)
                self.prev_seg = seg
            self.prev_last = r["last_offset"] if self.prev_last is None else max(self.prev_last, r["last_offset"])
            ts = r["max_timestamp"]
            if ts is not None and ts >= 0:
                if self.prev_ts is not None and ts < self.prev_ts["max_timestamp"]:
                    out.append(self._ts_problem(r))
                self.prev_ts = {"max_timestamp": ts, "base_offset": r["base_offset"], "segment": seg}
            if r["producer_id"] >= 0 and r["base_sequence"] >= 0 and not r["control"]:
                key = (r["producer_id"], r["producer_epoch"])
                before = self.producers.get(key)
                if before is not None:
                    self._sequence(r, key, before, out)
                self.producers[key] = (r["last_sequence"], r["base_offset"])
        return out

    def _segment_order(self, r: dict[str, Any], out: list[dict[str, Any]]) -> None:
        seg = r["segment"]
        if self.prev_last is not None and SEGMENT_RE.match(seg) and int(seg[:20]) <= self.prev_last:
            out.append(_problem(r, "segment-order", "error",
                                f"segment base offset {int(seg[:20])} is not above the previous segment's last "
                                f"offset {self.prev_last} ({self.prev_seg})"))

    def _ts_problem(self, r: dict[str, Any]) -> dict[str, Any]:
        p = self.prev_ts
        assert p is not None
        # info: the broker accepts any CreateTime order (Kafka Streams forwards event time), verify-crc has no
        # finding for it, and one partition gets one verdict from scan, verify-crc and recover (issue 27)
        return _problem(r, "timestamp-order", "info",
                        f"batch baseOffset {r['base_offset']}: maxTimestamp {r['max_timestamp']} is below "
                        f"the previous batch's {p['max_timestamp']} (baseOffset {p['base_offset']}, {p['segment']})")

    @staticmethod
    def _sequence(r: dict[str, Any], key: tuple[int, int], before: tuple[int, int], out: list[dict[str, Any]]) -> None:
        expected = increment_sequence(before[0], 1)
        if r["base_sequence"] != expected:
            what = "gap" if r["base_sequence"] > expected else "duplicate or out-of-order sequence"
            # info: the cleaner and DeleteRecords remove batches (compacted changelogs, purged repartition
            # topics); the broker loads such a log, verify-crc has no finding for it (issue 27)
            out.append(_problem(r, "sequence-gap", "info",
                                f"producer {key[0]} epoch {key[1]}: baseSequence {r['base_sequence']}, expected "
                                f"{expected} after baseOffset {before[1]} (lastSequence {before[0]}): {what}"))

    # ------------------------------------------------------------------------------------------ columns
    def _feed_vector(self, table: pa.Table) -> list[dict[str, Any]]:
        ok = table.column("crc_ok")
        t = table if pc.all(ok).as_py() else table.filter(ok)
        if t.num_rows == 0:
            return []
        t = t.set_column(t.schema.get_field_index("max_timestamp"), "max_timestamp",
                         t.column("max_timestamp").cast(pa.int64()))
        out: list[dict[str, Any]] = []

        def row(i: int) -> dict[str, Any]:
            return t.slice(i, 1).to_pylist()[0]

        first = row(0)
        if first["segment"] != self.prev_seg:  # a chunk is one segment: only its first row can start one
            self._segment_order(first, out)
            self.prev_seg = first["segment"]
        top = pc.max(t.column("last_offset")).as_py()
        self.prev_last = top if self.prev_last is None else max(self.prev_last, top)

        # timestamp-order: each timed batch against the previous timed batch
        ts = t.column("max_timestamp")
        timed = pc.and_(pc.is_valid(ts), pc.greater_equal(ts, lit(0, pa.int64()))).fill_null(False)
        idx = pc.indices_nonzero(timed)
        if len(idx):
            vals = pc.take(ts, idx)
            if self.prev_ts is not None:
                prev = pa.concat_arrays([pa.array([self.prev_ts["max_timestamp"]], pa.int64()),
                                         vals.combine_chunks().slice(0, len(vals) - 1)])
                cur, offset = vals.combine_chunks(), 0
            else:
                prev, cur, offset = vals.combine_chunks().slice(0, len(vals) - 1), vals.combine_chunks().slice(1), 1
            for k in pc.indices_nonzero(pc.less(cur, prev)).to_pylist():
                j = k + offset
                i = idx[j].as_py()
                if j > 0:
                    p = row(idx[j - 1].as_py())
                    self.prev_ts = {"max_timestamp": p["max_timestamp"], "base_offset": p["base_offset"],
                                    "segment": p["segment"]}
                out.append(self._ts_problem(row(i)))
            last = row(idx[len(idx) - 1].as_py())
            self.prev_ts = {"max_timestamp": last["max_timestamp"], "base_offset": last["base_offset"],
                            "segment": last["segment"]}

        # sequence-gap: per (producer, epoch), each batch against the previous one of the same key
        seq_rows = None if pc.max(t.column("producer_id")).as_py() < 0 else pc.and_(
            pc.and_(pc.greater_equal(t.column("producer_id"), lit(0, pa.int64())),
                    pc.greater_equal(t.column("base_sequence"), lit(0, pa.int32()))), pc.invert(t.column("control")))
        sidx = pc.indices_nonzero(seq_rows) if seq_rows is not None else []
        if len(sidx):
            s = pa.table({"i": sidx, "pid": pc.take(t.column("producer_id"), sidx),
                          "epoch": pc.take(t.column("producer_epoch"), sidx),
                          "seq": pc.take(t.column("base_sequence"), sidx).cast(pa.int64()),
                          "last": pc.take(t.column("last_sequence"), sidx).cast(pa.int64()),
                          "base": pc.take(t.column("base_offset"), sidx)})
            s = s.sort_by([("pid", "ascending"), ("epoch", "ascending"), ("i", "ascending")]).combine_chunks()
            pid, epoch = s.column("pid").chunk(0), s.column("epoch").chunk(0)
            m = s.num_rows
            same = pc.and_(pc.equal(pid.slice(1), pid.slice(0, m - 1)), pc.equal(epoch.slice(1), epoch.slice(0, m - 1)))
            prev_last = s.column("last").chunk(0).slice(0, m - 1)
            i64 = pa.int64()
            expected = pc.if_else(pc.equal(prev_last, lit(INT32_MAX, i64)), lit(0, i64), pc.add(prev_last, lit(1, i64)))
            bad = pc.and_(same, pc.not_equal(s.column("seq").chunk(0).slice(1), expected))
            starts = [0] + [k + 1 for k in pc.indices_nonzero(pc.invert(same)).to_pylist()]
            cols = {c: s.column(c).chunk(0) for c in ("i", "pid", "epoch", "last", "base")}
            for k in pc.indices_nonzero(bad).to_pylist():
                j = k + 1
                key = (cols["pid"][j].as_py(), cols["epoch"][j].as_py())
                self._sequence(row(cols["i"][j].as_py()), key, (cols["last"][k].as_py(), cols["base"][k].as_py()), out)
            for g, j in enumerate(starts):  # a key's first row here: against the state carried from earlier chunks
                key = (cols["pid"][j].as_py(), cols["epoch"][j].as_py())
                before = self.producers.get(key)
                if before is not None:
                    self._sequence(row(cols["i"][j].as_py()), key, before, out)
                end = (starts[g + 1] if g + 1 < len(starts) else m) - 1
                self.producers[key] = (cols["last"][end].as_py(), cols["base"][end].as_py())
        out.sort(key=lambda p: (p["position"], _RANK[p["kind"]]))
        return out
