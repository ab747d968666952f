"""``kafkalog replay``: produce exported (or salvaged) records into a live cluster, exactly once, with an offset map.

Why: when data must come back (a topic deleted or recreated by mistake, a partition salvaged from a dead disk, a
``-delete`` directory), the records kafkalog can read have to reach a live topic again with their keys, values,
headers and timestamps, without duplicates even when the replay is interrupted, and consumers must be able to find
their place again. The client is a maintained Kafka client library (confluent-kafka, librdkafka), never a
hand-written protocol.

The pieces:

* ``plan``: one pass over the inputs (``ops/replay_source.py``): per source partition the records to produce, the
  ones left out (aborted, open, control, duplicates of an earlier copy), the destination partitions, the findings;
  and the consumer groups found in the source log dirs' ``__consumer_offsets``. The dry run prints it.
* ``execute``: an idempotent producer (``enable.idempotence=true``, so ``acks=all`` and at most 5 requests in
  flight per connection, with ``enable.gapless.guarantee=true``: an error that could leave a gap is fatal) produces
  the planned records; the delivery reports write the offset map and the checkpoint (``ReplayState``).
* resume: the checkpoint holds, per (source partition, destination partition), the last source offset whose
  delivery was ACKNOWLEDGED, and per destination partition the last destination offset. On a rerun records up to
  it are skipped. Records the broker appended whose acknowledgement the killed process never saw are found by
  reading the destination partitions from the checkpoint's offsets to their end: each carries the offset header
  (``<topic>-<partition>@<offset>``), so the checkpoint is advanced past them before anything is produced.

Why there are neither duplicates nor gaps: with idempotence the broker appends one producer's batches to a partition
in the order produced, each once, and refuses a batch whose sequence does not follow the last appended one
(OutOfOrderSequence), and librdkafka retries in order (max.in.flight <= 5, KIP-98 / librdkafka's idempotent
producer); so what reached a destination partition is a prefix of what was produced to it, and the records of one
source partition in it a prefix of that source partition's records bound there. Skipping exactly the acknowledged
prefix plus the records found in the destination's tail therefore re-produces nothing that arrived and leaves out
nothing that did not. With ``--no-offset-header`` the tail cannot be recognised: a kill may then duplicate the
records acknowledged after the last checkpoint write (written after every round of delivery reports).

Layering: ops (reads storage/format through ``replay_source``, the group offsets through
``internal_topics.transactions``). Nothing here prints; progress and librdkafka's log lines go to callbacks.
"""

from __future__ import annotations

import json
import os
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kafkalog_cli.errors import KafkalogError, UnreadableFileError
from kafkalog_cli.format.partitioners import java_default
from kafkalog_cli.ops import replay_offsets as ro
from kafkalog_cli.ops.replay_source import Item, Source, SourceBatch, SourceRecord
from kafkalog_cli.storage.verify_model import Problem

if TYPE_CHECKING:
    from kafkalog_cli.storage.lock import HeldLock

DEFAULT_OFFSET_HEADER = "kafkalog.source.offset"
CHECKPOINT = "checkpoint.json"
OFFSET_MAP = "offset-map.csv"
STATE_KIND = "kafkalog-replay-state"
STATE_VERSION = 1
#: producer settings the no-duplicates / no-gaps argument rests on: --producer-property may not change them
PINNED = {"enable.idempotence": "true", "enable.gapless.guarantee": "true", "acks": "all"}
#: how often the checkpoint is written while records are acknowledged: with the offset header a resume finds what a
#: kill left unrecorded in the destination's tail, so the interval only sets how much of it is read; without it, what
#: was acknowledged after the last write may be produced again
CHECKPOINT_EVERY_S = 1.0
CHECKPOINT_EVERY_S_NO_HEADER = 0.2
#: the checkpoint interval is at least this many times the last save's duration (a large checkpoint is written less
#: often: at most about 1/SAVE_BUDGET of the time goes to it)
SAVE_BUDGET = 10


class ReplayRefused(KafkalogError):
    """The replay cannot start or go on (exit 2): a wrong destination, a checkpoint of another replay, a client
    error. Nothing (more) is produced."""


# ------------------------------------------------------------------------------------------ murmur2
def murmur2_partition(key: bytes, partitions: int) -> int:
    """``Utils.toPositive(Utils.murmur2(key)) % numPartitions``: Java's producer (format/partitioners.py)."""
    p = java_default(key, partitions)
    assert p is not None
    return p


# ------------------------------------------------------------------------------------------ options, plan
@dataclass(frozen=True)
class ReplayOptions:
    bootstrap: str
    topic: str
    partitioner: str = "same"  # "same" | "murmur2"
    offset_header: str | None = DEFAULT_OFFSET_HEADER
    isolation: str = "read_committed"
    source_topics: tuple[str, ...] = ()
    rate: float | None = None  # records/s
    state_dir: str = ""
    partitions: int | None = None  # the destination's partition count, when given (the dry run then needs no cluster)
    producer_props: tuple[tuple[str, str], ...] = ()
    groups_from: tuple[str, ...] = ()
    timeout_s: float = 30.0  # metadata lookups
    below_log_start: bool = False  # also a partition directory's records below its log start offset
    stall_s: float = 120.0  # no delivery report for this long with records outstanding: stop (resumable)

    def identity(self, sources: list[Source], partitions: int) -> dict[str, Any]:
        """What a checkpoint must match to be resumed by this run (not the bootstrap: addresses change; the
        destination's partition count: records were bound to partitions by it)."""
        ident = {"inputs": [s.path for s in sources], "topic": self.topic, "partitions": partitions,
                 "partitioner": self.partitioner, "offset_header": self.offset_header, "isolation": self.isolation,
                 "source_topics": list(self.source_topics)}
        if self.below_log_start:  # only when given: the checkpoints of earlier replays stay resumable
            ident["below_log_start"] = True
        return ident


@dataclass
class PartitionPlan:
    """One source partition: what is produced and what is left out."""

    topic: str
    partition: int
    inputs: list[str] = field(default_factory=list)
    records: int = 0  # to produce
    first_offset: int | None = None
    last_offset: int | None = None
    aborted: int = 0
    open: int = 0  # transactional records with no marker in the source
    control: int = 0
    duplicates: int = 0  # offsets at or below one already read for this partition (another copy)
    below_log_start: int = 0  # a partition directory's records below its log start offset (never read by consumers)
    log_start: int | None = None
    destinations: dict[int, int] = field(default_factory=dict)  # destination partition -> records
    delivered: int = 0  # acknowledged (this run and earlier ones)

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"


@dataclass
class Plan:
    options: ReplayOptions
    sources: list[Source]
    partitions: dict[tuple[str, int], PartitionPlan]
    destination_partitions: int
    findings: list[Problem]
    notes: list[str]
    groups: dict[str, dict[tuple[str, int], int]]  # group -> source (topic, partition) -> committed offset
    deleted_commits: dict[str, list[tuple[str, int]]]
    resume: ReplayState | None = None

    @property
    def records(self) -> int:
        return sum(p.records for p in self.partitions.values())

    @property
    def left_out(self) -> int:
        return sum(p.aborted + p.open + p.control + p.duplicates + p.below_log_start for p in self.partitions.values())


def _wanted(rec: SourceRecord, isolation: str) -> str | None:
    """Why a record is left out ("control" / "aborted" / "open"), None when it is produced."""
    if rec.control:
        return "control"
    if isolation == "read_committed" and rec.txn in ("aborted", "open"):
        return rec.txn
    return None


def destination(rec: SourceRecord, partitioner: str, partitions: int) -> int:
    """The destination partition: the source partition's number, or murmur2 of the key (a null key keeps its
    source partition number, modulo the partition count)."""
    return destination_of(rec.key, rec.partition, partitioner, partitions)


def destination_of(key: bytes | None, partition: int, partitioner: str, partitions: int) -> int:
    """``destination`` of a record's key and source partition number."""
    if partitioner == "murmur2" and key is not None:
        return murmur2_partition(key, partitions)
    if partitioner == "murmur2":
        return max(partition, 0) % partitions
    return partition


def stream(sources: list[Source], opts: ReplayOptions, partitions: int) -> Iterator[tuple[SourceRecord, int]]:
    """The records to produce, in input order, with their destination partitions, decoded one by one in Python:
    the reference of ``chunks`` (the produce loop's) and of ``_count`` (the plan's), which tests compare with it."""
    last: dict[tuple[str, int], int] = {}
    wanted_topics = set(opts.source_topics)
    for src in sources:
        for rec in src.records():
            if wanted_topics and rec.topic not in wanted_topics:
                continue
            key = (rec.topic, rec.partition)
            prev = last.get(key)
            if prev is not None and rec.offset <= prev:
                continue
            last[key] = rec.offset
            if _wanted(rec, opts.isolation) is not None:
                continue
            yield rec, destination(rec, opts.partitioner, partitions) if partitions > 0 else rec.partition


def _selected(sources: list[Source], opts: ReplayOptions,
              plan: dict[tuple[str, int], PartitionPlan] | None = None) -> Iterator[tuple[SourceBatch, str | None]]:
    """The batches of the source topics to replay, in input order, each with why it is left out ("control" /
    "aborted" / "open", None: produced), as ``stream`` sees its records; with ``plan``, each source partition's
    entry exists and lists its inputs."""
    wanted_topics = set(opts.source_topics)
    for src in sources:
        for b in src.batches():
            if wanted_topics and b.topic not in wanted_topics:
                continue
            if plan is not None:
                pp = plan.get((b.topic, b.partition))
                if pp is None:
                    pp = plan[(b.topic, b.partition)] = PartitionPlan(b.topic, b.partition)
                if not pp.inputs or pp.inputs[-1] != src.path:
                    pp.inputs.append(src.path)
            why = "control" if b.control else (b.txn if opts.isolation == "read_committed"
                                               and b.txn in ("aborted", "open") else None)
            yield b, why


def _count(sources: list[Source], opts: ReplayOptions, partitions: int,
           parts: dict[tuple[str, int], PartitionPlan]) -> None:
    """The plan pass: ``stream``'s counts from each batch's header and the compiled count walk (no record decoded
    into Python objects where ``_accel.replay_count`` applies); keys are read only for ``--partitioner murmur2``."""
    last: dict[tuple[str, int], int] = {}
    by_key = opts.partitioner == "murmur2" and partitions > 0
    for b, why in _selected(sources, opts, parts):
        key = (b.topic, b.partition)
        pp = parts[key]
        after = last.get(key)
        if by_key and why is None:
            items = b.items(after, None)
            if items is None:
                continue
            got = b.count(after)  # the same records (decoded once: the walk is cached or compiled)
            if got is None:
                continue
            total = got[0]
            taken = len(items)
            if taken:
                last[key] = items[-1][0]
                pp.first_offset = items[0][0] if pp.first_offset is None else pp.first_offset
                pp.last_offset = items[-1][0]
                pp.records += taken
                for it in items:
                    dp = destination_of(it[2], b.partition, opts.partitioner, partitions)
                    pp.destinations[dp] = pp.destinations.get(dp, 0) + 1
            pp.duplicates += total - taken
            continue
        got = b.count(after)
        if got is None:
            continue
        total, taken, first, lst = got
        pp.duplicates += total - taken
        if not taken:
            continue
        last[key] = lst
        if why is not None:
            setattr(pp, why, getattr(pp, why) + taken)
            continue
        pp.records += taken
        if pp.first_offset is None:
            pp.first_offset = first
        pp.last_offset = lst
        dp = b.partition
        pp.destinations[dp] = pp.destinations.get(dp, 0) + taken


def chunks(sources: list[Source], opts: ReplayOptions,
           partitions: int) -> Iterator[tuple[tuple[str, int], int | list[int], list[Item]]]:
    """The records to produce (``stream``'s, in its order) a batch at a time: (source partition, destination
    partition (a list, one per record, with ``--partitioner murmur2``), produce() tuples with the offset header)."""
    last: dict[tuple[str, int], int] = {}
    header = opts.offset_header
    by_key = opts.partitioner == "murmur2" and partitions > 0
    for b, why in _selected(sources, opts):
        key = (b.topic, b.partition)
        after = last.get(key)
        if why is not None:
            got = b.count(after)
            if got is not None and got[1]:
                last[key] = got[3]
            continue
        items = b.items(after, header)
        if not items:
            continue
        last[key] = items[-1][0]
        if by_key:
            yield key, [destination_of(it[2], b.partition, opts.partitioner, partitions) for it in items], items
        else:
            yield key, b.partition, items


def _consumer_offsets_paths(sources: list[Source], groups_from: tuple[str, ...]) -> list[str]:
    """Where the groups' commits are read: ``--groups-from``, else the log dirs holding the partition-directory
    inputs when they have ``__consumer_offsets-N`` partitions."""
    if groups_from:
        return list(groups_from)
    out: list[str] = []
    seen: set[str] = set()  # each log dir listed once: per source, a log dir of 20,000 partitions was O(n^2)
    for s in sources:
        if s.kind not in ("partition-dir", "segment"):
            continue
        d = os.path.dirname(s.path if s.kind == "partition-dir" else os.path.dirname(s.path))
        if d in seen:
            continue
        seen.add(d)
        try:
            names = os.listdir(d)
        except OSError:
            continue
        if any(n.startswith("__consumer_offsets-") for n in names):
            out.append(d)
    return out


def load_groups(paths: list[str]) -> tuple[dict[str, dict[tuple[str, int], int]],
                                           dict[tuple[str, str, int], tuple[int, bool]], list[str]]:
    """group -> source (topic, partition) -> committed offset, from the ``__consumer_offsets`` partitions under
    ``paths``. The commits a tombstone deleted are kept (the group coordinator tombstones a deleted topic's
    offsets: they are the positions to restore); the second value says, per (group, topic, partition) that had a
    tombstone, the offset before it and whether a commit came after it (that one is used: after a deletion and a
    re-creation it is the new topic's, which the plan notes)."""
    if not paths:
        return {}, {}, []
    from kafkalog_cli.internal_topics.logdir import discover
    from kafkalog_cli.internal_topics.transactions import group_offsets

    copies, notes = discover(paths)
    copies = [c for c in copies if c.topic == "__consumer_offsets"]
    if not copies:
        return {}, {}, [f"{', '.join(paths)}: no __consumer_offsets partitions: no reset CSV"]
    deleted: dict[tuple[str, str, int], list] = {}
    by_tp, _kinds, warnings = group_offsets(copies, deleted=deleted)
    groups: dict[str, dict[tuple[str, int], int]] = {}
    for (t, p), per_group in by_tp.items():
        for g, off in per_group.items():
            groups.setdefault(g, {})[(t, p)] = off
    return groups, {k: (v[0], v[1]) for k, v in deleted.items()}, notes + warnings


def plan(sources: list[Source], opts: ReplayOptions, partitions: int) -> Plan:
    """Read every input once and count; ``partitions`` is the destination's partition count (0: unknown)."""
    parts: dict[tuple[str, int], PartitionPlan] = {}
    for s in sources:
        s.keep_below_log_start = opts.below_log_start
    _count(sources, opts, partitions, parts)
    for s in sources:
        if s.below_log_start and s.topic is not None and s.partition is not None:
            pp = parts.setdefault((s.topic, s.partition), PartitionPlan(s.topic, s.partition))
            pp.below_log_start += s.below_log_start
            pp.log_start = s.log_start
    findings = [p for s in sources for p in s.findings]
    notes: list[str] = []
    topics = sorted({t for t, _p in parts})
    if len(topics) > 1 and not opts.source_topics:
        raise ReplayRefused(f"the inputs hold {len(topics)} source topics ({', '.join(topics)}): replaying them into "
                            f"one topic {opts.topic!r} would mix them",
                            hint="choose them with --source-topic NAME (repeat it to merge several on purpose)")
    if opts.partitioner == "same" and partitions > 0:
        bad = sorted((p for p in parts.values() if p.records and not 0 <= p.partition < partitions),
                     key=lambda p: (p.topic, p.partition))
        if bad:
            p0 = bad[0]
            raise ReplayRefused(
                f"source partition {p0.name} has no partition {p0.partition} in {opts.topic!r} "
                f"({partitions} partitions)",
                hint=(f"create {opts.topic!r} with at least {max(p.partition for p in bad) + 1} partitions, or give "
                      "--partitioner murmur2 to spread the records by key") if p0.partition >= 0 else
                "the input names no partition (-1): give --partitioner murmur2")
    group_paths = _consumer_offsets_paths(sources, opts.groups_from)
    groups, deleted, gnotes = load_groups(group_paths)
    notes += gnotes
    if not group_paths:
        notes.append("no __consumer_offsets beside the inputs: no reset CSV (give the old log dir with --groups-from "
                     "to move the consumer groups too)")
    replayed = set(parts)
    groups = {g: {tp: c for tp, c in per.items() if tp in replayed} for g, per in groups.items()}
    groups = {g: per for g, per in groups.items() if per}
    gone: dict[str, list[tuple[str, int]]] = {}
    for (g, t, p), (before, recommitted) in sorted(deleted.items()):
        if (t, p) not in replayed or g not in groups:
            continue
        if not recommitted:
            gone.setdefault(g, []).append((t, p))
        elif (t, p) in groups[g]:
            notes.append(f"group {g!r} committed {t}-{p}@{groups[g][(t, p)]} after a tombstone of its commit "
                         f"{t}-{p}@{before}: the later one is used; if {t!r} was deleted and recreated, it is the new "
                         f"topic's position and {before} the old topic's")
    return Plan(opts, sources, dict(sorted(parts.items())), partitions, findings, notes, groups, gone)


# ------------------------------------------------------------------------------------------ the state
def _tp_key(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"


@dataclass
class ReplayState:
    """The checkpoint (``<state dir>/checkpoint.json``, written atomically) and the offset map beside it."""

    dir: str
    identity: dict[str, Any]
    dest_start: dict[int, int] = field(default_factory=dict)  # destination partition -> its end when we began
    last_dest: dict[int, int] = field(default_factory=dict)  # destination partition -> last acknowledged offset
    delivered: dict[tuple[str, int, int], int] = field(default_factory=dict)  # (st, sp, dp) -> last acked source offset
    counts: dict[tuple[str, int], int] = field(default_factory=dict)  # (st, sp) -> acknowledged records
    map_bytes: int = 0
    done: bool = False
    resets: dict[str, Any] = field(default_factory=dict)

    @property
    def path(self) -> str:
        return os.path.join(self.dir, CHECKPOINT)

    @property
    def map_path(self) -> str:
        return os.path.join(self.dir, OFFSET_MAP)

    def to_json(self) -> dict[str, Any]:
        return {"kind": STATE_KIND, "schema_version": STATE_VERSION, "identity": self.identity,
                "done": self.done, "dest_start": {str(k): v for k, v in sorted(self.dest_start.items())},
                "last_dest": {str(k): v for k, v in sorted(self.last_dest.items())},
                "delivered": [{"topic": st, "partition": sp, "destination_partition": dp, "offset": so}
                              for (st, sp, dp), so in sorted(self.delivered.items())],
                "counts": [{"topic": st, "partition": sp, "records": n} for (st, sp), n in sorted(self.counts.items())],
                "offset_map_bytes": self.map_bytes, "resets": self.resets}

    def save(self) -> None:
        from kafkalog_cli.ops.safety.files import write_json_atomic

        write_json_atomic(self.path, self.to_json(), step=False)

    @classmethod
    def load(cls, state_dir: str) -> ReplayState | None:
        path = os.path.join(state_dir, CHECKPOINT)
        if not os.path.exists(path):
            return None
        try:
            with open(path, encoding="utf-8") as f:
                d = json.load(f)
            if d.get("kind") != STATE_KIND or d.get("schema_version") != STATE_VERSION:
                raise ValueError(f"kind {d.get('kind')!r}, version {d.get('schema_version')!r}")
            return cls(state_dir, d["identity"], {int(k): v for k, v in d["dest_start"].items()},
                       {int(k): v for k, v in d["last_dest"].items()},
                       {(e["topic"], e["partition"], e["destination_partition"]): e["offset"] for e in d["delivered"]},
                       {(e["topic"], e["partition"]): e["records"] for e in d["counts"]},
                       int(d["offset_map_bytes"]), bool(d["done"]), d.get("resets") or {})
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ReplayRefused(f"unreadable replay checkpoint: {exc}", file=path,
                                hint="it is not one kafkalog replay wrote: give another --state-dir") from None


def check_resume(state: ReplayState | None, identity: dict[str, Any]) -> None:
    if state is None or state.identity == identity:
        return
    diff = sorted(k for k in set(identity) | set(state.identity) if identity.get(k) != state.identity.get(k))
    raise ReplayRefused(
        f"the state dir holds the checkpoint of another replay (it differs in: {', '.join(diff)})", file=state.path,
        hint="give the same inputs and options to resume it, or another --state-dir for a new replay")


# ------------------------------------------------------------------------------------------ the client
def client_config(opts: ReplayOptions) -> dict[str, Any]:
    """The producer's settings: user properties first, then the pinned ones (refused when contradicted)."""
    conf: dict[str, Any] = {"bootstrap.servers": opts.bootstrap, "linger.ms": 20, "batch.size": 1 << 20,
                            "queue.buffering.max.messages": 100_000, "message.timeout.ms": 0,
                            "max.in.flight.requests.per.connection": 5}
    for k, v in opts.producer_props:
        if k in PINNED and str(v).lower() != PINNED[k]:
            raise ReplayRefused(f"--producer-property {k}={v}: replay needs {k}={PINNED[k]} (no duplicates, no gaps)")
        if k == "max.in.flight.requests.per.connection" and (not v.isdigit() or not 1 <= int(v) <= 5):
            raise ReplayRefused(f"--producer-property {k}={v}: the idempotent producer keeps order with 1..5")
        if k in ("transactional.id", "bootstrap.servers"):
            raise ReplayRefused(f"--producer-property {k}: not settable here"
                                + (" (use --bootstrap-server)" if k == "bootstrap.servers" else ""))
        conf[k] = v
    conf.update({"enable.idempotence": True, "enable.gapless.guarantee": True, "acks": "all"})
    return conf


def _import_client() -> Any:
    try:
        import confluent_kafka
    except ImportError:
        raise ReplayRefused("kafkalog replay needs the confluent-kafka client library",
                            hint="in your kafkalog source checkout: pip install '.[replay]' (kafkalog is not on PyPI)") from None
    return confluent_kafka


def _logger(log: Callable[[str], None] | None) -> Any:
    import logging

    lg = logging.getLogger("kafkalog.replay.librdkafka")
    lg.propagate = False
    lg.handlers[:] = []
    seen: set[str] = set()

    class _H(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            msg = record.getMessage()
            if "CONFWARN" in msg and "gapless" in msg:
                return  # librdkafka calls the setting experimental: it is the one we want
            if log is not None and msg not in seen:
                seen.add(msg)
                log(f"librdkafka: {msg}")

    lg.addHandler(_H())
    lg.setLevel(logging.WARNING)
    return lg


def partition_count(opts: ReplayOptions, log: Callable[[str], None] | None = None) -> int:
    """The destination topic's partition count from the cluster (refused when the topic does not exist)."""
    ck = _import_client()
    from confluent_kafka.admin import AdminClient

    conf = {k: v for k, v in client_config(opts).items() if k in ("bootstrap.servers",) or k.startswith(
        ("security.", "sasl.", "ssl.", "client."))}
    admin = AdminClient({**conf, "logger": _logger(log)})
    try:
        md = admin.list_topics(opts.topic, timeout=opts.timeout_s)
    except ck.KafkaException as exc:
        raise ReplayRefused(f"cannot read the metadata of {opts.topic!r} from {opts.bootstrap}: {exc}",
                            hint="check --bootstrap-server (and the security settings, --producer-property)") from None
    t = md.topics.get(opts.topic)
    if t is None or t.error is not None or not t.partitions:
        why = t.error.str() if t is not None and t.error is not None else "no such topic"
        raise ReplayRefused(f"destination topic {opts.topic!r} at {opts.bootstrap}: {why}",
                            hint=f"create it first (kafka-topics.sh --bootstrap-server {opts.bootstrap} --create "
                                 f"--topic {opts.topic} --partitions N), then run again")
    return len(t.partitions)


def parse_offset_header(value: bytes | None) -> tuple[str, int, int] | None:
    """``<topic>-<partition>@<offset>`` -> (topic, partition, offset), None for anything else."""
    if value is None:
        return None
    try:
        text = value.decode("ascii")
        tp, _, off = text.rpartition("@")
        topic, _, part = tp.rpartition("-")
        if not topic:
            return None
        return topic, int(part), int(off)
    except (UnicodeDecodeError, ValueError):
        return None


def offset_header_value(topic: str, partition: int, offset: int) -> bytes:
    return f"{topic}-{partition}@{offset}".encode()


# ------------------------------------------------------------------------------------------ execution
@dataclass
class ReplayResult:
    plan: Plan
    state: ReplayState
    produced: int = 0  # acknowledged in this run
    skipped_resume: int = 0  # acknowledged by an earlier run (checkpoint) or found in the destination's tail
    recovered_from_tail: int = 0
    interrupted: bool = False
    error: str | None = None
    resets: dict[str, ro.GroupReset] = field(default_factory=dict)
    reset_all: str | None = None
    seconds: float = 0.0


#: a produced chunk waiting for its delivery reports (``_Run.fifos``): its key (source topic, partition,
#: destination partition), its source offsets (the first one when they are consecutive, else a list), how many, the
#: offset-map line prefix, the source (topic, partition), the destination offsets reported so far, how many of them
#: are in the offset map / checkpoint already
K3, OFFSETS, COUNT, PREFIX, K2, DOS, WRITTEN = range(7)


def map_lines(prefix: bytes, offs: int | list[int], middle: bytes, dos: list[int], start: int, stop: int) -> bytes:
    """The offset map's lines of records ``start..stop-1`` of a produced chunk (the reference of
    ``_accel.replay_map_lines``): source offset ``offs + i`` (consecutive) or ``offs[i]``, destination ``dos[i]``."""
    sos = range(offs + start, offs + stop) if isinstance(offs, int) else offs[start:stop]
    return b"".join(b"%s%d%s%d\n" % (prefix, so, middle, do) for so, do in zip(sos, dos[start:stop]))


def _pending(k3: tuple[str, int, int], items: list[Item], prefix: bytes, k2: tuple[str, int]) -> list[Any]:
    first, n = items[0][0], len(items)
    offs: int | list[int] = first if items[-1][0] - first == n - 1 else [it[0] for it in items]
    return [k3, offs, n, prefix, k2, [], 0]


class _Run:
    """One execution: the producer, the delivery reports, the checkpoint writes.

    No closure per record: one delivery callback (``on_delivery``, made once) serves every record, and does little:
    it appends the destination offset to the chunk the report is for. It learns which chunk and record from the
    order of the reports: per destination partition the produced chunks wait in a queue (``fifos``; ``_pending``
    entries), and the idempotent producer reports a partition's successes in the order the records were produced
    (it appends them in that order, each once, and with the gapless guarantee none after a failed one). A report of
    a purged record (a stop: never sent, so after every record in flight on its partition) takes nothing from the
    queue; any other failure stops the replay and the partition's later reports are not recorded (the resume's tail
    scan finds them). The offset map lines, the checkpoint's offsets and counts are made from the chunks at each
    checkpoint (``flush``), not per report."""

    def __init__(self, plan: Plan, state: ReplayState, log: Callable[[str], None] | None) -> None:
        self.plan, self.state, self.opts = plan, state, plan.options
        self.log = log
        self.error: str | None = None
        self.stopping = False
        self.sent = 0  # produce() calls that took a record
        self.failed = 0  # reports with an error (purged or not)
        self.acked = 0  # successes in the offset map (written, or in the chunks of ``done`` / the queues' heads)
        self.last_ack = time.monotonic()
        self.seen = 0  # successes at the last drain
        self.last_save = 0.0
        self.map_file = open(state.map_path, "ab")  # noqa: SIM115 (closed in close)
        self.every = CHECKPOINT_EVERY_S if self.opts.offset_header else CHECKPOINT_EVERY_S_NO_HEADER
        self.base_every = self.every
        self.dest_field = ro.csv_field(self.opts.topic)
        self.prefix: dict[tuple[str, int], bytes] = {}  # offset-map line prefix per source partition
        self.middle: dict[int, bytes] = {}  # ... and its middle per destination partition
        from kafkalog_cli.storage import accel

        mod = accel.module()
        self.lines_fast = getattr(mod, "replay_map_lines", None) if mod is not None else None
        self.fifos: dict[int, deque[list[Any]]] = {}
        self.frozen: set[int] = set()  # destination partitions whose reports are no longer recorded (a failure)
        self.done: list[list[Any]] = []  # chunks every record of which was reported, not yet flushed
        self.done_counted = 0  # ``done[:done_counted]`` hold ``done_sum`` unflushed reports
        self.done_sum = 0
        self.on_delivery = self._callback()

    def reported(self) -> int:
        """Successes reported so far (flushed or not); amortised O(partitions)."""
        done = self.done
        for i in range(self.done_counted, len(done)):
            self.done_sum += done[i][COUNT] - done[i][WRITTEN]
        self.done_counted = len(done)
        n = self.acked + self.done_sum
        for q in self.fifos.values():
            if q:
                n += len(q[0][DOS]) - q[0][WRITTEN]
        return n

    @property
    def outstanding(self) -> int:
        return self.sent - self.reported() - self.failed

    def line_prefix(self, st: str, sp: int) -> bytes:
        prefix = self.prefix.get((st, sp))
        if prefix is None:
            prefix = self.prefix[(st, sp)] = f"{ro.csv_field(st)},{sp},".encode()
        return prefix

    def queue(self, dp: int) -> deque[list[Any]]:
        q = self.fifos.get(dp)
        if q is None:
            q = self.fifos[dp] = deque()
        return q

    def _callback(self) -> Callable[[Any, Any], None]:
        fifos, frozen, done = self.fifos, self.frozen, self.done
        failed = self._failed

        def on_delivery(err: Any, msg: Any) -> None:
            if err is not None:
                failed(err, msg)
                return
            dp = msg.partition()
            if frozen and dp in frozen:
                return
            try:
                q = fifos[dp]
                head = q[0]
            except (KeyError, IndexError):  # a report for no produced record: never trust the order again
                failed(None, msg)
                return
            dos = head[DOS]
            dos.append(msg.offset())
            if len(dos) == head[COUNT]:
                done.append(q.popleft())

        return on_delivery

    def _failed(self, err: Any, msg: Any) -> None:
        self.failed += 1
        if err is not None:
            from confluent_kafka import KafkaError

            if err.code() in (KafkaError._PURGE_QUEUE, KafkaError._PURGE_INFLIGHT):
                return  # stopped before it was sent: not delivered, produced again on resume
        dp = msg.partition()
        self.frozen.add(dp)
        if self.error is None:
            self.error = (f"delivery to {self.opts.topic}-{dp} failed: {err.str()}" if err is not None else
                          f"a delivery report for {self.opts.topic}-{dp} matches no record produced")
        self.stopping = True

    def drain(self) -> None:
        """After a poll: the stall timer restarts when successes were reported since the last call."""
        n = self.reported()
        if n != self.seen:
            self.seen = n
            self.last_ack = time.monotonic()

    def _unflushed(self) -> list[list[Any]]:
        """The chunks with reports not in the offset map yet: the complete ones, then the queues' heads (only a
        head can be partly reported: a partition's reports come in order)."""
        return self.done + [q[0] for q in self.fifos.values() if q and q[0][DOS]]

    def flush(self) -> None:
        """The reported successes into the offset map (buffered) and the checkpoint's state."""
        state = self.state
        delivered, last_dest, counts = state.delivered, state.last_dest, state.counts
        mod = self.lines_fast
        out: list[bytes] = []
        for head in self._unflushed():
            dos, w = head[DOS], head[WRITTEN]
            n = len(dos)
            if n == w:
                continue
            k3, offs = head[K3], head[OFFSETS]
            dp = k3[2]
            middle = self.middle.get(dp)
            if middle is None:
                middle = self.middle[dp] = f",{self.dest_field},{dp},".encode()
            dense = isinstance(offs, int)
            if mod is not None:
                out.append(mod(head[PREFIX], offs if dense else 0, None if dense else offs, middle, dos, w, n))
            else:
                out.append(map_lines(head[PREFIX], offs, middle, dos, w, n))
            delivered[k3] = offs + n - 1 if dense else offs[n - 1]
            if dos[n - 1] > last_dest.get(dp, -1):
                last_dest[dp] = dos[n - 1]
            counts[head[K2]] = counts.get(head[K2], 0) + n - w
            head[WRITTEN] = n
            self.acked += n - w
        self.done.clear()
        self.done_counted = self.done_sum = 0
        if out:
            self.map_file.writelines(out)

    def checkpoint(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self.last_save < self.every:
            return
        before = self.acked
        self.flush()
        if not force and self.acked == before:
            return
        self.map_file.flush()
        os.fsync(self.map_file.fileno())
        self.state.map_bytes = self.map_file.tell()
        self.state.save()
        # the checkpoint is rewritten whole: with many source partitions (20,000 partitions: 5 MB of JSON, 0.5 s)
        # saving it every second made the replay O(partitions x duration); the interval now grows so that at most
        # about a tenth of the time goes to it (bench/export_scale_bench.py)
        done = time.monotonic()
        self.every = max(self.base_every, SAVE_BUDGET * (done - now))
        self.last_save = done

    def close(self) -> None:
        self.map_file.close()


def _truncate_map(state: ReplayState) -> None:
    """Cut the offset map to what the checkpoint covers (a killed run may have written a part of a line, or lines
    the checkpoint does not know; the destination's tail adds them back)."""
    path = state.map_path
    if not os.path.exists(path):
        state.map_bytes = 0
        return
    size = os.path.getsize(path)
    if size > state.map_bytes:
        with open(path, "r+b") as f:
            f.truncate(state.map_bytes)
            f.flush()
            os.fsync(f.fileno())


def _watermarks(consumer: Any, topic: str, partitions: list[int], timeout: float) -> dict[int, tuple[int, int]]:
    from confluent_kafka import TopicPartition

    return {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=timeout, cached=False)
            for p in partitions}


def _stable_ends(consumer: Any, topic: str, partitions: list[int], timeout: float) -> dict[int, tuple[int, int]]:
    """Watermarks read until they stop moving (a request the killed run had sent may still be appended, and the
    high watermark follows the replicas): at most ~10 s."""
    marks = _watermarks(consumer, topic, partitions, timeout)
    for _ in range(20):
        time.sleep(0.5)
        again = _watermarks(consumer, topic, partitions, timeout)
        if again == marks:
            break
        marks = again
    return marks


def recover_tail(state: ReplayState, opts: ReplayOptions, sources: set[tuple[str, int]],
                 log: Callable[[str], None] | None = None) -> int:
    """Read each destination partition from the checkpoint's last acknowledged offset to its end, and take every
    record carrying this replay's offset header for a source partition of ours as acknowledged (checkpoint and offset
    map). Returns how many were found."""
    ck = _import_client()
    from confluent_kafka import Consumer, TopicPartition

    conf = {k: v for k, v in client_config(opts).items() if k == "bootstrap.servers" or k.startswith(
        ("security.", "sasl.", "ssl.", "client."))}
    c = Consumer({**conf, "group.id": f"kafkalog-replay-scan-{os.getpid()}", "enable.auto.commit": False,
                  "isolation.level": "read_uncommitted", "auto.offset.reset": "earliest",
                  "enable.partition.eof": True, "logger": _logger(log)})
    found = 0
    lines: list[str] = []
    try:
        parts = sorted(state.dest_start)
        ends = _stable_ends(c, opts.topic, parts, opts.timeout_s)
        todo = {}
        for p in parts:
            low, high = ends[p]
            start = max(state.last_dest.get(p, -1) + 1, state.dest_start[p], low)
            if start < high:
                todo[p] = (start, high)
        if not todo:
            return 0
        c.assign([TopicPartition(opts.topic, p, s) for p, (s, _h) in todo.items()])
        header = opts.offset_header
        deadline = time.monotonic() + max(60.0, opts.timeout_s)
        while todo and time.monotonic() < deadline:
            m: Any = c.poll(1.0)
            if m is None:
                continue
            if m.error() is not None:
                if m.error().code() == ck.KafkaError._PARTITION_EOF:
                    todo.pop(m.partition(), None)
                    continue
                raise ReplayRefused(f"reading {opts.topic}-{m.partition()} to resume: {m.error().str()}")
            p, off = m.partition(), m.offset()
            if p in todo and off >= todo[p][1] - 1:
                todo.pop(p, None)
            if off > state.last_dest.get(p, -1):
                state.last_dest[p] = off
            src = None
            for name, value in m.headers() or ():
                if name == header:
                    src = parse_offset_header(value)
            if src is None or (src[0], src[1]) not in sources:
                continue
            key = (src[0], src[1], p)
            if src[2] <= state.delivered.get(key, -1):
                continue
            state.delivered[key] = src[2]
            state.counts[(src[0], src[1])] = state.counts.get((src[0], src[1]), 0) + 1
            lines.append(ro.map_line(src[0], src[1], src[2], opts.topic, p, off))
            found += 1
        if todo:
            raise ReplayRefused(f"could not read the end of {opts.topic} partitions {sorted(todo)} to resume",
                                hint="the cluster must be reachable to resume without duplicates; run again")
    finally:
        c.close()
    if lines:
        with open(state.map_path, "a", encoding="utf-8", newline="") as f:
            f.writelines(lines)
            f.flush()
            os.fsync(f.fileno())
            state.map_bytes = f.tell()
    return found


def _begin(opts: ReplayOptions, identity: dict[str, Any], partitions: int,
           log: Callable[[str], None] | None) -> ReplayState:
    """A new replay's state: the destination partitions' ends now (where the tail scan of a resume starts)."""
    from confluent_kafka import Consumer

    conf = {k: v for k, v in client_config(opts).items() if k == "bootstrap.servers" or k.startswith(
        ("security.", "sasl.", "ssl.", "client."))}
    c = Consumer({**conf, "group.id": f"kafkalog-replay-scan-{os.getpid()}", "logger": _logger(log)})
    try:
        marks = _watermarks(c, opts.topic, list(range(partitions)), opts.timeout_s)
    except Exception as exc:  # noqa: BLE001 (KafkaException and the client's own)
        raise ReplayRefused(f"cannot read the end offsets of {opts.topic!r}: {exc}") from None
    finally:
        c.close()
    os.makedirs(opts.state_dir, exist_ok=True)
    state = ReplayState(opts.state_dir, identity, {p: high for p, (_low, high) in marks.items()})
    with open(state.map_path, "w", encoding="utf-8", newline="") as f:  # the header is always in the checkpoint
        f.write(ro.MAP_HEADER)
        f.flush()
        os.fsync(f.fileno())
        state.map_bytes = f.tell()
    state.save()
    return state


def execute(p: Plan, *, progress: Callable[[int], None] | None = None,
            log: Callable[[str], None] | None = None) -> ReplayResult:
    """Produce the plan's records (resuming from the state dir's checkpoint) and write the offset map, the
    checkpoint and the groups' reset CSVs. Ctrl-C stops it cleanly (``interrupted``); an error of the input or the
    client stops it the same way (in-flight reports awaited, checkpoint saved) before it is raised or returned."""
    from kafkalog_cli.storage.lock import lock_directory

    _import_client()
    os.makedirs(p.options.state_dir, exist_ok=True)
    held, st = lock_directory(p.options.state_dir)
    if held is None:
        raise ReplayRefused("another kafkalog replay is running with this state dir"
                            + (f" (pid {st.pid})" if st.pid else ""), file=p.options.state_dir,
                            hint="wait for it to finish, or stop it (Ctrl-C or kill: the same command then resumes "
                                 "where it stopped); another --state-dir would start a new replay and produce every "
                                 "record again")
    try:
        others = _lock_sources(p, log)
        try:
            return _execute(p, progress, log)
        finally:
            if others is not None:
                others.release()
    finally:
        held.release()


DESTINATION_LOCK = "kafkalog-replay-sources.lock"


def destination_lock_path() -> str:
    """The lock file every replay on this host shares (``$KAFKALOG_LOCK_DIR``, else the temporary directory)."""
    import tempfile

    return os.path.join(os.environ.get("KAFKALOG_LOCK_DIR") or tempfile.gettempdir(), DESTINATION_LOCK)


def source_lock_keys(cluster: str, topic: str, sources: Iterable[tuple[str, int]]) -> list[int]:
    """One byte offset per (destination cluster, topic, source topic-partition): two replays on this host that
    would produce the same source partition into the same topic lock the same byte."""
    import hashlib

    return [int.from_bytes(hashlib.sha256(f"{cluster}\n{topic}\n{st}\n{sp}".encode()).digest()[:7], "big")
            for st, sp in sources]


def _cluster_identity(opts: ReplayOptions) -> str:
    """The destination cluster's id (the same cluster whatever broker --bootstrap-server names), else the sorted
    bootstrap list."""
    boot = ",".join(sorted(s.strip().lower() for s in opts.bootstrap.split(",") if s.strip()))
    try:
        from confluent_kafka.admin import AdminClient

        conf = {k: v for k, v in client_config(opts).items() if k in ("bootstrap.servers",) or k.startswith(
            ("security.", "sasl.", "ssl.", "client."))}
        md = AdminClient({**conf, "logger": _logger(None)}).list_topics(opts.topic, timeout=opts.timeout_s)
        cid = md.cluster_id
    except Exception:  # noqa: BLE001 - the id is a better key, not a requirement: the produce loop reports errors
        cid = None
    return f"cluster {cid}" if cid else f"bootstrap {boot}"


def _lock_sources(p: Plan, log: Callable[[str], None] | None) -> HeldLock | None:
    """Refuse a second replay on this host that produces any of the same source partitions into the same topic
    with another state dir (the state dir's own lock cannot see it; both would produce every record): a POSIX lock
    of one byte per (cluster, topic, source partition) in a file every replay shares. Disjoint replays (other
    source partitions, another topic) go on side by side. Where the file cannot be locked, a warning."""
    from kafkalog_cli.storage.lock import lock_ranges

    opts = p.options
    cluster = _cluster_identity(opts)
    path = destination_lock_path()
    try:
        held, st = lock_ranges(path, source_lock_keys(cluster, opts.topic, p.partitions))
    except OSError as exc:
        if log is not None:
            log(f"kafkalog: warning: {path}: cannot lock ({exc.strerror or exc}): another replay of the same "
                f"records into {opts.topic!r} with another state dir would not be detected; run only one")
        return None
    if held is None:
        who = f" (pid {st.pid})" if st.pid else ""
        raise ReplayRefused(f"another kafkalog replay{who} is producing some of the same source partitions into "
                            f"{opts.topic!r} ({cluster}) with another state dir", file=opts.state_dir,
                            expected="one replay per source partition and destination topic",
                            found=f"a running replay{who}, locked in {path}",
                            hint="wait for it to finish; two replays of the same records, each with its own state "
                                 "dir, would both produce every record (a state dir recognises only its own "
                                 "deliveries)")
    return held


def _execute(p: Plan, progress: Callable[[int], None] | None, log: Callable[[str], None] | None) -> ReplayResult:
    ck = _import_client()
    opts = p.options
    t0 = time.monotonic()
    identity = opts.identity(p.sources, p.destination_partitions)
    state = ReplayState.load(opts.state_dir)
    check_resume(state, identity)
    sources = set(p.partitions)
    recovered = 0
    if state is None:
        state = _begin(opts, identity, p.destination_partitions, log)
    elif not state.done:
        _truncate_map(state)
        if opts.offset_header:
            recovered = recover_tail(state, opts, sources, log)
        state.save()
    result = ReplayResult(p, state, recovered_from_tail=recovered)
    if state.done:
        result.skipped_resume = sum(state.counts.values())
        _finish(result)
        return result
    producer = ck.Producer({**client_config(opts), "logger": _logger(log)})
    run = _Run(p, state, log)
    previous = _catch_sigint(run, result)
    try:
        try:
            _produce_all(p, run, producer, result, progress)
        except KeyboardInterrupt:  # a second Ctrl-C
            result.interrupted = True
        finally:  # whatever ended the loop: what was acknowledged is saved
            if run.stopping or result.interrupted or run.outstanding > 0:
                _stop(producer, run)
            run.checkpoint(force=True)
    finally:
        _restore_sigint(previous)
        run.close()
    result.produced = run.acked
    result.error = run.error
    if not result.interrupted and run.error is None:
        state.done = True
        _finish(result)
    result.seconds = time.monotonic() - t0
    return result


def _produce_all(p: Plan, run: _Run, producer: Any, result: ReplayResult,
                 progress: Callable[[int], None] | None) -> None:
    """The produce loop: every planned record not yet delivered, then the wait for the last delivery reports.
    One produce() call per record with the tuple the record walk made (headers already a list of tuples), one
    callback for all; delivery reports are served once per chunk (a batch of the source) or per 100 records."""
    opts, state = p.options, run.state
    rate = opts.rate
    produce = producer.produce
    poll = producer.poll
    topic = opts.topic
    cb = run.on_delivery
    delivered = state.delivered
    rate_t0 = time.monotonic()
    since_poll = 0
    for k2, dps, items in chunks(p.sources, opts, p.destination_partitions):
        if run.stopping:
            return
        if isinstance(dps, int):
            k3 = (*k2, dps)
            done = delivered.get(k3)
            if done is not None and items[0][0] <= done:  # resumed: what the checkpoint has is skipped
                n0 = len(items)
                items = [it for it in items if it[0] > done]
                result.skipped_resume += n0 - len(items)
                if not items:
                    continue
            run.queue(dps).append(_pending(k3, items, run.line_prefix(*k2), k2))
            if rate:
                for it in items:
                    if not _produce_one(run, producer, opts, it, dps, rate, rate_t0):
                        return
            else:
                # positional: (topic, value, key, partition, callback, on_delivery, timestamp, headers), the
                # keyword list of confluent-kafka's Producer.produce (src/confluent_kafka/src/Producer.c); keywords
                # would build a dict per call. tests/test_replay*.py check key, value, partition, timestamp, headers
                sent = 0
                try:
                    for it in items:
                        try:
                            produce(topic, it[3], it[2], dps, cb, None, it[1], it[4])
                        except BufferError:  # the client's queue is full: serve delivery reports, then again
                            run.sent += sent
                            sent = 0
                            if not _produce_one(run, producer, opts, it, dps, None, rate_t0):
                                return
                            continue
                        sent += 1
                finally:
                    run.sent += sent
        else:  # --partitioner murmur2: a destination per record
            prefix = run.line_prefix(*k2)
            for it, dp in zip(items, dps):
                k3 = (*k2, dp)
                if it[0] <= delivered.get(k3, -1):
                    result.skipped_resume += 1
                    continue
                run.queue(dp).append(_pending(k3, [it], prefix, k2))
                if not _produce_one(run, producer, opts, it, dp, rate, rate_t0):
                    return
        since_poll += len(items)
        if since_poll >= 100:
            since_poll = 0
            poll(0)
            run.drain()
            run.checkpoint()
            if progress is not None:
                progress(run.reported())
    while run.outstanding > 0 and not run.stopping:
        poll(0.1)
        run.drain()
        run.checkpoint()
        _check_stall(run, opts)
        if progress is not None:
            progress(run.reported())


def _produce_one(run: _Run, producer: Any, opts: ReplayOptions, it: Item, dp: int, rate: float | None,
                 rate_t0: float) -> bool:
    """One record, waiting for ``--rate`` and for room in the client's queue; False when the replay stops."""
    if rate:
        due = rate_t0 + run.sent / rate
        while True:  # poll() returns as soon as it has served a delivery report: wait again until the record is due
            wait = due - time.monotonic()
            if wait <= 0:
                break
            producer.poll(wait)
            run.drain()
            run.checkpoint()
            if run.stopping:
                return False
    while True:
        try:
            producer.produce(opts.topic, it[3], it[2], dp, on_delivery=run.on_delivery, timestamp=it[1],
                             headers=it[4])
            run.sent += 1
            return True
        except BufferError:  # the client's queue is full: serve delivery reports
            producer.poll(0.05)
            run.drain()
            _check_stall(run, opts)
            if run.stopping:
                return False


def _catch_sigint(run: _Run, result: ReplayResult) -> Any:
    """Ctrl-C while producing stops the loop at the next record (a KeyboardInterrupt raised inside the client's
    poll is lost by it: the C extension returns NULL without an exception); a second Ctrl-C interrupts at once."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return None

    def handler(signum: int, frame: Any) -> None:
        if result.interrupted:
            raise KeyboardInterrupt
        result.interrupted = True
        run.stopping = True

    return signal.signal(signal.SIGINT, handler)


def _restore_sigint(previous: Any) -> None:
    import signal

    if previous is not None:
        signal.signal(signal.SIGINT, previous)


def _check_stall(run: _Run, opts: ReplayOptions) -> None:
    if run.outstanding > 0 and time.monotonic() - run.last_ack > opts.stall_s and run.error is None:
        run.error = (f"no delivery report for {opts.stall_s:.0f} s with {run.outstanding} records outstanding: is "
                     f"{opts.bootstrap} reachable?")
        run.stopping = True


def _stop(producer: Any, run: _Run) -> None:
    """Drop what was not sent yet, wait briefly for the reports of what is in flight (the tail scan of the next run
    finds the rest)."""
    try:
        producer.purge(in_queue=True, in_flight=False, blocking=True)
    except Exception:  # noqa: BLE001 (a fatal client error: nothing more to purge)
        pass
    deadline = time.monotonic() + 5.0
    while run.outstanding > 0 and time.monotonic() < deadline:
        try:
            producer.poll(0.1)
        except KeyboardInterrupt:
            break


def _finish(result: ReplayResult) -> None:
    """The reset CSVs, from the complete offset map; the final checkpoint records them."""
    p, state = result.plan, result.state
    groups = p.groups
    if groups and os.path.exists(state.map_path):
        result.resets = ro.compute_resets(state.map_path, groups)
        for g, tps in p.deleted_commits.items():
            if g in result.resets:
                result.resets[g].deleted = tps
        result.reset_all = ro.write_resets(result.resets, p.options.topic, state.dir)
        state.resets = {g.group: {"file": g.file, "offsets": {str(k): v for k, v in sorted(g.offsets.items())}}
                        for g in result.resets.values()}
    state.save()


def open_sources(args: list[str]) -> tuple[list[Source], list[str]]:
    """EXPORT arguments -> sources (``replay_source.resolve``); none found is refused."""
    from kafkalog_cli.ops.replay_source import resolve

    sources, notes = resolve(args)
    if not sources:
        raise UnreadableFileError("no records to replay: no NDJSON, Parquet or partition directory in the input",
                                  file=args[0] if len(args) == 1 else None,
                                  hint="give kafkalog export's output, or partition directories (topic-N, -delete)")
    return sources, notes
