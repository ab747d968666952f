"""The end-of-scan report as data, aggregated from the written datasets (so it is the same for both engines).

Why streaming group-bys: the report must cost memory in the number of partitions, never in the number of batches.
So the Parquet files are read one record batch of the needed columns at a time, each batch is aggregated with
``pyarrow`` group-bys (per partition: counts, sums, min/max, the distinct producers and leader epochs), and the
partial results are merged into one small entry per partition. Partitions whose segments hold no batch at all come
from the list of scanned segments, so an empty partition is listed too (with zeros), not just counted.
"""

from __future__ import annotations

import heapq
import os
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from kafkalog_cli.scan.columns import CODEC_LABELS, LOCATION, facts_of, lit
from kafkalog_cli.scan.lazy_compute import pc
from kafkalog_cli.scan.paths import locate
from kafkalog_cli.scan.schema import DATASETS

KEY = ["log_dir", "partition_dir"]
PROBLEMS_SHOWN = 20
BATCH_ROWS = 1 << 17
_PROBLEM_ORDER = ("log_dir", "partition_dir", "segment", "position", "kind")


def iter_dataset(out_dir: str, name: str, columns: list[str], dictionary: bool = False) -> Iterator[pa.Table]:
    """A dataset's ``columns`` as tables of at most BATCH_ROWS rows, cast to our schema (Spark's files differ only in
    nullability and list metadata), timestamps as int64 milliseconds; with ``dictionary`` the repeated strings stay
    dictionary-encoded (fine for group-by keys and to_pylist, not for sorting or min/max)."""
    dict_cols = _DICT if dictionary else set()
    path = os.path.join(out_dir, name)
    schema = pa.schema([_dict_field(DATASETS[name].field(c)) if c in dict_cols else DATASETS[name].field(c)
                        for c in columns])
    from kafkalog_cli.scan.fleet import dataset_files, fill_columns

    for f, values in dataset_files(path):  # broker_id=<id>/ directories, recursively
        # repeated strings (paths, names) stay dictionary-encoded: decoding them row by row is most of a read
        # (a column that is only in the directory name, as Spark's partitionBy writes it, cannot be asked for)
        in_file = set(pq.read_schema(f).names)
        pf = pq.ParquetFile(f, read_dictionary=[c for c in columns if c in dict_cols and c in in_file])
        present = [c for c in columns if c in pf.schema_arrow.names]
        missing = [DATASETS[name].field(c) for c in columns if c not in present]
        for rb in pf.iter_batches(batch_size=BATCH_ROWS, columns=present):
            t = fill_columns(pa.Table.from_batches([rb]), missing, values).select(columns)
            if t.schema != schema:
                t = pa.Table.from_arrays([_cast(t.column(i), f) for i, f in enumerate(schema)], schema=schema)
            for i, field in enumerate(t.schema):
                if pa.types.is_timestamp(field.type):
                    t = t.set_column(i, field.name, t.column(i).cast(pa.int64()))
            yield t


_DICT = {"log_dir", "topic", "partition_dir", "segment", "codec", "kind", "severity", "file"}


def _dict_field(f: pa.Field) -> pa.Field:
    return f.with_type(pa.dictionary(pa.int32(), pa.string())) if f.name in _DICT else f


def _cast(col: pa.ChunkedArray, field: pa.Field) -> pa.ChunkedArray:
    if pa.types.is_dictionary(col.type) and pa.types.is_dictionary(field.type):
        return col  # kept as dictionary<string>; group-bys and to_pylist treat it as the strings
    return col.cast(field.type)


def _groups(t: pa.Table, aggs: list[tuple[str, str]], extra: list[str] | None = None) -> list[dict[str, Any]]:
    if t.num_rows == 0:
        return []
    t = t.unify_dictionaries()  # chunks of several workers or files: Acero's group-by wants one dictionary per column
    return t.group_by(KEY + (extra or []), use_threads=False).aggregate(aggs).to_pylist()


def _entry(parts: dict[tuple[str, str], dict[str, Any]], log_dir: str, partition_dir: str) -> dict[str, Any]:
    key = (log_dir, partition_dir)
    e = parts.get(key)
    if e is None:
        e = parts[key] = {"log_dir": log_dir, "partition_dir": partition_dir, "topic": None, "partition": None,
                          "segments": 0, "batches": 0, "records": 0, "bytes": 0, "first_offset": None,
                          "last_offset": None, "first_timestamp": None, "last_timestamp": None, "bytes_by_codec": {},
                          "producers": set(), "leader_epochs": set(), "problems": 0, "problems_by_kind": {},
                          "_segments": set()}
    return e


def _lo(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else min(a, b)


def _hi(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else max(a, b)


def summarize(out_dir: str, segments: list[str] | None = None) -> dict[str, Any]:
    """{"partitions": [...], "problems": {...}, "totals": {...}} for ``out_dir``, read back from the written
    datasets. ``segments``: the scanned segment paths (their partitions are listed even without rows; segment
    counts come from them)."""
    return summarize_many([out_dir], segments)


def summarize_many(out_dirs: list[str], segments: list[str] | None = None) -> dict[str, Any]:
    """``summarize`` over several datasets (``kafkalog report DATASET...``: a fleet's shared dataset, or one per
    host). Without ``segments``, a partition's segments are those with at least one batch row."""
    acc = Summary(segments)
    for out_dir in out_dirs:
        if segments is None:
            for s in iter_dataset(out_dir, "batches", ["log_dir", "partition_dir", "segment"], dictionary=True):
                for r in _groups(s, [("segment", "count")], ["segment"]):
                    _entry(acc.parts, r["log_dir"], r["partition_dir"])["_segments"].add(r["segment"])
        for b in iter_dataset(out_dir, "batches", [*BATCH_COLUMNS, "broker_id"], dictionary=True):
            acc.add_batches(b)
        for pr in iter_dataset(out_dir, "problems", DATASETS["problems"].names):
            acc.add_problems(pr)
    return acc.result()


BATCH_COLUMNS = ["log_dir", "topic", "partition", "partition_dir", "size", "base_offset", "last_offset", "count",
                 "codec", "first_timestamp", "max_timestamp", "producer_id", "partition_leader_epoch", "crc_ok"]


class Summary:
    """The report's aggregates, fed chunk by chunk: from the files (``summarize``), or by the local engine from the
    very chunks it writes (``add`` with the tables as built, so the datasets are not read a second time)."""

    def __init__(self, segments: list[str] | None = None) -> None:
        self.parts: dict[tuple[str, str], dict[str, Any]] = {}
        self.listed: dict[tuple[str, str], int] = {}
        for p in segments or []:
            loc = locate(p)
            e = _entry(self.parts, loc.log_dir, loc.partition_dir)
            e["topic"], e["partition"] = loc.topic, loc.partition
            self.listed[(loc.log_dir, loc.partition_dir)] = self.listed.get((loc.log_dir, loc.partition_dir), 0) + 1
        self.batches = 0
        self.by_kind: dict[str, int] = {}
        self.severities: dict[str, int] = {}
        self.shown: list[tuple[tuple, int, dict[str, Any]]] = []
        self.problems = self.unreadable = self.unreadable_ranges = self.seq = 0
        self.brokers: dict[str, int | None] = {}  # log_dir -> broker_id, as the rows carry it (the report names it)

    def _note_brokers(self, t: pa.Table) -> None:
        if "broker_id" not in t.column_names or t.num_rows == 0:
            return
        one = single_key(t, ["log_dir", "broker_id"])
        pairs = [one] if one is not None else (
            t.select(["log_dir", "broker_id"]).unify_dictionaries().group_by(["log_dir", "broker_id"], use_threads=False)
            .aggregate([]).to_pylist())
        for r in pairs:
            if r["broker_id"] is not None or r["log_dir"] not in self.brokers:
                self.brokers[r["log_dir"]] = r["broker_id"]

    def add(self, name: str, table: pa.Table) -> None:
        """A chunk as the engine built it (any column order, timestamps as timestamps, strings as dictionaries)."""
        if name == "batches":
            self._note_brokers(table)
            facts = facts_of(table)
            if facts is not None and table.num_rows and self._add_facts(table, facts):
                return
            cols = []
            for c in BATCH_COLUMNS:
                col = table.column(c)
                cols.append(col.cast(pa.int64()) if pa.types.is_timestamp(col.type) else col)
            self.add_batches(pa.table(dict(zip(BATCH_COLUMNS, cols))))
        elif name == "problems":
            self.add_problems(table.select(DATASETS["problems"].names))

    def _add_facts(self, table: pa.Table, f: dict[str, Any]) -> bool:
        """A chunk of one partition from the compiled walk's aggregates (``columns.facts_of``), no pass over its
        rows; False (nothing merged) when the chunk's key is not single or a distinct set overflowed."""
        one = single_key(table, KEY + ["topic", "partition"])
        if one is None or f["pids"] is None or f["epochs"] is None:
            return False
        self.batches += table.num_rows
        _merge(self.parts, one, f["size_sum"], f["count_sum"], table.num_rows, f["good_base_min"], f["good_last_max"],
               f["first_ts_min"], f["max_ts_max"], f["pids"], f["epochs"])
        codecs = _entry(self.parts, one["log_dir"], one["partition_dir"])["bytes_by_codec"]
        for cid, size in enumerate(f["codec_bytes"]):
            if size:
                name = CODEC_LABELS[cid]
                codecs[name] = codecs.get(name, 0) + size
        return True

    def add_batches(self, b: pa.Table) -> None:
        self._note_brokers(b)
        self.batches += b.num_rows
        if b.num_rows:
            _batches_chunk(self.parts, b)

    def add_problems(self, pr: pa.Table) -> None:
        if not pr.num_rows:
            return
        self._note_brokers(pr)
        parts = self.parts
        self.problems += pr.num_rows
        # ``unreadable`` with a byte range: pages the disk could not deliver (the rest was scanned; exit 1); with
        # ``end == 0``: the file as a whole (cannot open, the worker died on it; exit 2)
        bad = pc.equal(pr.column("kind"), lit("unreadable", pa.string()))
        whole = pc.and_(bad, pc.equal(pr.column("end"), lit(0, pa.int64())))
        self.unreadable += int(pc.sum(whole).as_py() or 0)
        self.unreadable_ranges += int(pc.sum(bad).as_py() or 0) - int(pc.sum(whole).as_py() or 0)
        for r in pc.value_counts(pr.column("severity")).to_pylist():
            self.severities[r["values"]] = self.severities.get(r["values"], 0) + r["counts"]
        for r in _groups(pr, [("position", "count")], ["kind"]):
            e = _entry(parts, r["log_dir"], r["partition_dir"])
            e["problems_by_kind"][r["kind"]] = e["problems_by_kind"].get(r["kind"], 0) + r["position_count"]
            e["problems"] += r["position_count"]
            self.by_kind[r["kind"]] = self.by_kind.get(r["kind"], 0) + r["position_count"]
        for r in _groups(pr, [("position", "count")], ["topic", "partition"]):
            e = _entry(parts, r["log_dir"], r["partition_dir"])
            e["topic"] = e["topic"] or r["topic"]
            e["partition"] = e["partition"] if e["partition"] is not None else r["partition"]
        top = pr.sort_by([(c, "ascending") for c in _PROBLEM_ORDER]).slice(0, PROBLEMS_SHOWN).to_pylist()
        for r in top:
            self.seq += 1
            self.shown.append((tuple(r[c] for c in _PROBLEM_ORDER), self.seq, r))
        self.shown = heapq.nsmallest(PROBLEMS_SHOWN, self.shown, key=lambda x: (x[0], x[1]))

    def result(self) -> dict[str, Any]:
        out = []
        for key, e0 in self.parts.items():
            e = dict(e0)
            e["segments"] = self.listed[key] if key in self.listed else len(e["_segments"])
            del e["_segments"]
            e["producers"] = len(e["producers"])
            e["leader_epochs"] = sorted(e["leader_epochs"])
            e["bytes_by_codec"] = dict(sorted(e["bytes_by_codec"].items()))
            e["problems_by_kind"] = dict(sorted(e["problems_by_kind"].items()))
            e["broker_id"] = self.brokers.get(e["log_dir"])
            out.append(e)
        partitions = sorted(out, key=lambda e: (e["log_dir"], e["topic"] or "",
                                                -1 if e["partition"] is None else e["partition"], e["partition_dir"]))
        first = [r for _k, _s, r in self.shown]  # with log_dir and broker_id: a fleet finding names its broker
        return {
            "partitions": partitions,
            "problems": {
                "total": self.problems,
                "by_kind": dict(sorted(self.by_kind.items())),
                "by_severity": dict(sorted(self.severities.items())),
                "first": first,
            },
            "totals": {
                "partitions": len(partitions),
                "segments": sum(e["segments"] for e in partitions),
                "batches": self.batches,
                "records": sum(e["records"] for e in partitions),
                "bytes": sum(e["bytes"] for e in partitions),
                "unreadable": self.unreadable,  # files unreadable as a whole (exit 2)
                "unreadable_ranges": self.unreadable_ranges,  # byte ranges that could not be read (exit 1)
            },
        }


def single_key(t: pa.Table, keys: list[str]) -> dict[str, Any] | None:
    """The key values when every row of ``t`` has the same ones (cheap to tell for the one-entry dictionaries the
    scan builds), else None."""
    if t.num_rows and all(k in LOCATION for k in keys) and facts_of(t) is not None:
        # a window of the compiled walk (columns.accel_table): one segment's location on every row
        return {k: t.column(k)[0].as_py() for k in keys}
    out: dict[str, Any] = {}
    for k in keys:
        col = t.column(k)
        if col.null_count == len(col) and len(col):
            out[k] = None
            continue
        if col.null_count:
            return None
        if not pa.types.is_dictionary(col.type):
            if not pa.types.is_integer(col.type) or not len(col):
                return None
            first = col[0]  # one value throughout: equal to the column of that value repeated (no compute kernel,
            if not col.equals(pa.chunked_array([pa.repeat(first, len(col))])):  # see lazy_compute.py)
                return None
            out[k] = first.as_py()
            continue
        values = set()
        for chunk in col.chunks:
            if not len(chunk):
                continue
            if len(chunk.dictionary) == 1:
                values.add(chunk.dictionary[0].as_py())
                continue
            mm = pc.min_max(chunk.indices).as_py()
            if mm["min"] != mm["max"]:
                return None
            values.add(chunk.dictionary[mm["min"]].as_py())
        if len(values) != 1:
            return None
        out[k] = values.pop()
    return out


def _masked(b: pa.Table, name: str, mask: pa.ChunkedArray) -> pa.ChunkedArray:
    return pc.if_else(mask, b.column(name), lit(None, b.column(name).type))


def _batches_chunk(parts: dict[tuple[str, str], dict[str, Any]], b: pa.Table) -> None:
    """Merge one chunk of batch rows into the per-partition entries."""
    keys = KEY + ["topic", "partition"]  # topic and partition are functions of the directory: keys, no aggregate
    one = single_key(b, keys)
    if one is not None:
        _one_partition(parts, one, b)
        return
    # several partitions: one group-by over columns masked to null where a row must not count (a failing CRC, no
    # timestamp, no producer), since min/max/distinct skip nulls
    good = b.column("crc_ok")
    zero = lit(0, pa.int64())
    timed = pc.and_(good, pc.greater_equal(b.column("max_timestamp"), zero)).fill_null(False)
    t = pa.table({
        "log_dir": b.column("log_dir"), "partition_dir": b.column("partition_dir"), "topic": b.column("topic"),
        "partition": b.column("partition"), "size": b.column("size"), "count": b.column("count"),
        "good_base": _masked(b, "base_offset", good), "good_last": _masked(b, "last_offset", good),
        "first_ts": _masked(b, "first_timestamp",
                            pc.and_(timed, pc.greater_equal(b.column("first_timestamp"), zero)).fill_null(False)),
        "last_ts": _masked(b, "max_timestamp", timed),
        "pid": _masked(b, "producer_id", pc.and_(good, pc.greater_equal(b.column("producer_id"), zero))),
        "epoch": _masked(b, "partition_leader_epoch",
                         pc.and_(good, pc.greater_equal(b.column("partition_leader_epoch"), lit(0, pa.int32())))),
    })
    aggs = [("size", "sum"), ("count", "sum"), ("size", "count"),
            ("good_base", "min"), ("good_last", "max"), ("first_ts", "min"), ("last_ts", "max"),
            ("pid", "distinct", pc.CountOptions(mode="only_valid")),
            ("epoch", "distinct", pc.CountOptions(mode="only_valid"))]
    for r in t.unify_dictionaries().group_by(keys, use_threads=False).aggregate(aggs).to_pylist():
        _merge(parts, r, r["size_sum"], r["count_sum"], r["size_count"], r["good_base_min"], r["good_last_max"],
               r["first_ts_min"], r["last_ts_max"], r["pid_distinct"], r["epoch_distinct"])
    for r in _groups(b.select(["log_dir", "partition_dir", "codec", "size"]), [("size", "sum")], ["codec"]):
        codecs = _entry(parts, r["log_dir"], r["partition_dir"])["bytes_by_codec"]
        codecs[r["codec"]] = codecs.get(r["codec"], 0) + r["size_sum"]


def _merge(parts: dict[tuple[str, str], dict[str, Any]], key: dict[str, Any], size: int, count: int, batches: int,
           first_offset: int | None, last_offset: int | None, first_ts: int | None, last_ts: int | None,
           pids: list[Any], epochs: list[Any]) -> None:
    e = _entry(parts, key["log_dir"], key["partition_dir"])
    e["topic"] = e["topic"] or key["topic"]
    e["partition"] = e["partition"] if e["partition"] is not None else key["partition"]
    e["bytes"] += size
    e["records"] += count
    e["batches"] += batches
    e["first_offset"] = _lo(e["first_offset"], first_offset)
    e["last_offset"] = _hi(e["last_offset"], last_offset)
    e["first_timestamp"] = _lo(e["first_timestamp"], first_ts)
    e["last_timestamp"] = _hi(e["last_timestamp"], last_ts)
    e["producers"].update(v for v in pids if v is not None)
    e["leader_epochs"].update(v for v in epochs if v is not None)


def _nonneg(t: pa.Table, name: str) -> pa.Table:
    """Rows of ``t`` whose ``name`` is not null and >= 0 (``t`` itself when all are: the common case, no copy)."""
    col = t.column(name)
    mm = pc.min_max(col).as_py()
    if col.null_count == 0 and (mm["min"] is None or mm["min"] >= 0):
        return t
    return t.filter(pc.greater_equal(col, lit(0, col.type)).fill_null(False))


def _one_partition(parts: dict[tuple[str, str], dict[str, Any]], key: dict[str, Any], b: pa.Table) -> None:
    """The aggregates of a chunk of one partition with plain reductions (no hash group-by, no masks)."""
    ok = b.column("crc_ok")
    good = b if pc.all(ok).as_py() else b.filter(ok)
    timed = _nonneg(good, "max_timestamp")
    first = _nonneg(timed, "first_timestamp")
    pids = [v for v in pc.unique(good.column("producer_id")).to_pylist() if v is not None and v >= 0]
    epochs = [v for v in pc.unique(good.column("partition_leader_epoch")).to_pylist() if v is not None and v >= 0]
    _merge(parts, key, pc.sum(b.column("size")).as_py() or 0, pc.sum(b.column("count")).as_py() or 0, b.num_rows,
           pc.min(good.column("base_offset")).as_py(), pc.max(good.column("last_offset")).as_py(),
           pc.min(first.column("first_timestamp")).as_py(), pc.max(timed.column("max_timestamp")).as_py(), pids, epochs)
    codecs = _entry(parts, key["log_dir"], key["partition_dir"])["bytes_by_codec"]
    col = b.column("codec")
    single = single_key(b, ["codec"]) if pa.types.is_dictionary(col.type) else None
    if single is not None:
        codecs[single["codec"]] = codecs.get(single["codec"], 0) + (pc.sum(b.column("size")).as_py() or 0)
        return
    for r in b.select(["codec", "size"]).unify_dictionaries().group_by(["codec"], use_threads=False).aggregate([("size", "sum")]).to_pylist():
        codecs[r["codec"]] = codecs.get(r["codec"], 0) + r["size_sum"]
