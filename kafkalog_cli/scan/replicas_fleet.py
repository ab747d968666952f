"""``kafkalog report --replicas``: the replica comparison of ``compare-replicas`` over ``scan`` datasets of many
brokers, one ``divergence`` row per topic-partition present on two or more brokers.

Why it is built this way:

* The answer must be the one ``compare-replicas`` gives on the same directories, so the rows are turned back into
  ``ops.replicas.Replica`` objects (batches from the ``batches`` dataset, records from the ``records`` dataset) and
  the same alignment, compaction check and truncation simulation run on them; pyarrow does the grouping (which
  topic-partitions sit on which brokers) and the per-replica slicing.
* The broker of a replica: ``--broker-ids`` (a dataset directory or a ``log_dir`` value = id) when given, else the
  ``broker_id`` column of its rows (meta.properties or scan's --broker-id), else its ``log_dir`` path.
* What the datasets cannot carry, said plainly: no stored CRC, so two batches are "equal" when every header column
  (size, count, timestamps, producer fields, leader epoch, codec, flags) is equal; record values are compared by size
  only; leader epochs are rebuilt from the batches as log recovery does (no ``leader-epoch-checkpoint`` is scanned).
  The ``records`` dataset is required: without keys no compaction can be told from a missing range.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

import pyarrow as pa
import pyarrow.compute as pc

from kafkalog_cli.broker.leader_epoch_cache import first_of_each_higher_epoch
from kafkalog_cli.errors import UnreadableFileError
from kafkalog_cli.format.batch import ATTR_CONTROL, ATTR_TRANSACTIONAL, Record
from kafkalog_cli.ops.replicas import BatchRef, Comparison, Corruption, Replica, _compare_loaded

DIVERGENCE = pa.schema([
    pa.field("topic", pa.string(), nullable=False),
    pa.field("partition", pa.int32()),
    pa.field("brokers", pa.list_(pa.string()), nullable=False),
    pa.field("leader", pa.string(), nullable=False),
    pa.field("agree_up_to", pa.int64(), nullable=False),
    pa.field("first_divergent_offset", pa.int64()),
    pa.field("divergence_kind", pa.string()),
    pa.field("detail", pa.string()),
    pa.field("truncation_offsets", pa.list_(pa.int64())),  # per broker, in ``brokers`` order (null: unknown)
    pa.field("lost_records", pa.list_(pa.int64()), nullable=False),  # per broker, in ``brokers`` order
])

_CODEC_IDS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


@dataclass
class DatasetReplica(Replica):
    """A replica rebuilt from scan rows; records come from the ``records`` dataset (values by size only)."""

    rows: dict[tuple[str, int], list[Record]] = field(default_factory=dict, repr=False)

    def records(self, b: BatchRef) -> list[Record]:
        return self.rows.get((b.seg, b.position), []) if b.valid else []

    def close(self) -> None:
        return None


def _header(r: dict) -> bytes:
    """Stand-in for the header bytes: every batches column that the header determines (no CRC in the schema)."""
    keys = ("base_offset", "size", "partition_leader_epoch", "magic", "count", "codec", "timestamp_type",
            "first_timestamp", "max_timestamp", "producer_id", "producer_epoch", "base_sequence", "last_offset",
            "transactional", "control")
    return repr(tuple(r[k] for k in keys)).encode()


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def _ms(v: datetime | int | None) -> int:
    """A scan dataset's timestamp(ms, UTC) cell as Kafka's int64 milliseconds (null = NO_TIMESTAMP -1): the engine
    compares and reports timestamps as integers, as read from the files."""
    if v is None:
        return -1
    if isinstance(v, datetime):
        return (v.replace(tzinfo=v.tzinfo or timezone.utc) - _EPOCH) // timedelta(milliseconds=1)
    return int(v)


def _attributes(r: dict) -> int:
    attrs = _CODEC_IDS.get(r["codec"], 0)
    if r["timestamp_type"] == "LogAppendTime":
        attrs |= 0x08
    if r["transactional"]:
        attrs |= ATTR_TRANSACTIONAL
    if r["control"]:
        attrs |= ATTR_CONTROL
    return attrs


def _replica(name: str, log_dir: str, pdir: str, batch_rows: list[dict], record_rows: list[dict]) -> DatasetReplica:
    batches: list[BatchRef] = []
    corrupt: list[Corruption] = []
    leo = 0
    by_seg: dict[str, list[dict]] = {}
    for r in batch_rows:
        by_seg.setdefault(r["segment"], []).append(r)
    segs = sorted(by_seg, key=lambda s: int(s[:20]) if s[:20].isdigit() else -1)
    for seg in segs:
        seg_last = None
        for r in sorted(by_seg[seg], key=lambda r: r["position"]):
            ref = BatchRef(seg, r["position"], r["size"], r["base_offset"], r["last_offset"], r["partition_leader_epoch"],
                           r["magic"], r["producer_id"], r["producer_epoch"], r["base_sequence"], r["count"],
                           _attributes(r), _ms(r["first_timestamp"]), _ms(r["max_timestamp"]), r["crc_ok"], _header(r))
            batches.append(ref)
            if not r["crc_ok"]:
                corrupt.append(Corruption(os.path.join(log_dir, pdir, seg), r["position"], r["base_offset"],
                                          f"batch {r['base_offset']}..{r['last_offset']}: CRC mismatch (scan)"))
            seg_last = r["last_offset"] if seg_last is None else max(seg_last, r["last_offset"])
        base = int(seg[:20]) if seg[:20].isdigit() else 0
        leo = max(leo, base) if seg_last is None else max(leo, seg_last + 1)
    # as LogSegment.recover assigns them: no checkpoint file is in the datasets
    cache = first_of_each_higher_epoch((b.epoch, b.base) for b in batches if b.valid and b.magic >= 2)
    recs: dict[tuple[str, int], list[Record]] = {}
    for r in record_rows:
        value = None if r["value_size"] < 0 else b"<%d bytes>" % r["value_size"]
        recs.setdefault((r["segment"], r["batch_position"]), []).append(
            Record(offset=r["offset"], timestamp=_ms(r["timestamp"]), key=r["key"], value=value,
                   headers=[(k.encode(), None) for k in r["header_keys"]]))
    for rs in recs.values():  # a dataset has no row order (a batch's records may sit in two part files): offsets
        rs.sort(key=lambda rec: rec.offset)
    batches.sort(key=lambda b: b.base)
    start = int(segs[0][:20]) if segs and segs[0][:20].isdigit() else 0
    return DatasetReplica(os.path.join(log_dir, pdir), name, name, start, leo, cache, "batches", batches, corrupt,
                          rows=recs)


def _rows(table: pa.Table) -> list[dict]:
    cols = {n: table.column(n).to_pylist() for n in table.column_names}
    return [dict(zip(cols, vals)) for vals in zip(*cols.values())]


def divergence(datasets: list[str], broker_ids: dict[str, str] | None = None) -> tuple[pa.Table, list[Comparison]]:
    """The divergence dataset for every topic-partition present on 2+ brokers in the given scan datasets."""
    from kafkalog_cli.scan.output import read_dataset

    broker_ids = {os.path.abspath(k) if os.path.isabs(k) or os.path.exists(k) else k: v
                  for k, v in (broker_ids or {}).items()}
    batch_tables: list[pa.Table] = []
    record_tables: list[pa.Table] = []
    for ds in datasets:
        if not os.path.isdir(os.path.join(ds, "batches")):
            raise UnreadableFileError("not a scan dataset directory (no batches/ inside)", file=ds,
                                      expected="the --out directory of kafkalog scan", found="no batches/")
        if not os.path.isdir(os.path.join(ds, "records")):
            raise UnreadableFileError("the scan dataset has no records/ (scan it with --records)", file=ds,
                                      expected="batches/ and records/", found="batches/ only")
        owner = broker_ids.get(os.path.abspath(ds))
        for name, out in (("batches", batch_tables), ("records", record_tables)):
            t = read_dataset(ds, name)
            if owner is not None:
                broker = pa.array([owner] * len(t), pa.string())
            else:  # --broker-ids for the log dir, else the broker_id the rows carry, else the log dir's path
                ids = t["broker_id"].to_pylist() if "broker_id" in t.column_names else [None] * len(t)
                mapped = [broker_ids.get(v) or (str(b) if b is not None else v)
                          for v, b in zip(t["log_dir"].to_pylist(), ids)]
                broker = pa.array(mapped, pa.string())
            out.append(t.append_column("broker", broker))
    batches = pa.concat_tables(batch_tables)
    records = pa.concat_tables(record_tables)
    # which (topic, partition) sit on 2+ brokers: one grouping over the replica keys
    keys = batches.group_by(["topic", "partition", "broker", "log_dir", "partition_dir"]).aggregate([])
    per_tp = keys.group_by(["topic", "partition"]).aggregate([("broker", "count_distinct")])
    shared = [r for r in _rows(per_tp) if r["broker_count_distinct"] >= 2]
    out_rows, comparisons = [], []
    for tp in sorted(shared, key=lambda r: (r["topic"], -1 if r["partition"] is None else r["partition"])):
        part_filter = pc.equal(keys["topic"], tp["topic"])
        part_filter = pc.and_(part_filter, pc.equal(keys["partition"], tp["partition"])) if tp["partition"] is not None \
            else pc.and_(part_filter, pc.is_null(keys["partition"]))
        reps: list[Replica] = []
        for k in sorted(_rows(keys.filter(part_filter)), key=lambda r: r["broker"]):
            def sel(t: pa.Table, k: dict = k) -> list[dict]:
                m = pc.and_(pc.and_(pc.equal(t["broker"], k["broker"]), pc.equal(t["log_dir"], k["log_dir"])),
                            pc.equal(t["partition_dir"], k["partition_dir"]))
                return _rows(t.filter(m))
            reps.append(_replica(k["broker"], k["log_dir"], k["partition_dir"], sel(batches), sel(records)))
        names = [r.name for r in reps]
        if len(set(names)) < len(names):
            raise UnreadableFileError(f"topic {tp['topic']} partition {tp['partition']}: two replicas map to one broker",
                                      expected="one partition directory per broker", found=", ".join(names))
        cmp = _compare_loaded(reps, None)
        comparisons.append(cmp)
        out_rows.append({
            "topic": tp["topic"], "partition": tp["partition"], "brokers": names, "leader": cmp.leader,
            "agree_up_to": cmp.agree_up_to, "first_divergent_offset": cmp.first_divergent_offset,
            "divergence_kind": cmp.divergence_kind, "detail": cmp.detail,
            "truncation_offsets": [r.truncation_offset for r in cmp.replicas],
            "lost_records": [r.lost.count for r in cmp.replicas],
        })
    table = pa.Table.from_pylist(out_rows, schema=DIVERGENCE)
    return table, comparisons
