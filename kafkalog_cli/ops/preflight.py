"""``kafkalog preflight``: before a restart or a restore, will this set of log dirs come back right?

Why: after a restore from volume snapshots taken at different moments, an unclean election or a bad reset, the
question is what each broker and each consumer will do once the cluster is up, and by then the consumers have
already reset. This module composes the existing engines, reading only (it never re-implements their rules):

* ``broker/loader.plan_load`` (recover's model of ``LogLoader``): will the broker load each copy, what recovery cuts;
* ``ops/replicas.compare`` (compare-replicas): which copy would lead, what every follower truncates and loses;
* ``internal_topics/transactions.analyse``: last stable offsets and hanging transactions;
* ``ops/schemas`` (when ``_schemas`` is in the dirs): schema ids the data uses that the registry lacks;
* ``ops/inventory.take`` with the KRaft image (``--metadata``): stray and missing partitions, cluster ids;
* ``ops/preflight_groups.latest_commits``: each group's committed offset and leader epoch per partition.

Then, per group x partition, what the consumer does on resume, by Kafka's consumer and broker rules (apache/kafka
1eb7644):

1. OffsetFetch gives (offset C, leader epoch E); ``ConsumerUtils.refreshCommittedOffsets`` seeks there unvalidated
   (ConsumerUtils.java:203-207). With an epoch the position awaits validation (SubscriptionState.java:1012-1025):
   OffsetsForLeaderEpoch(E) is answered by the leader's ``endOffsetFor`` (UnifiedLog.scala:948); UNDEFINED ->
   reset by ``auto.offset.reset`` (none: LogTruncationException), end < C -> truncation detected: seek to that end,
   the first offset known to diverge (none: LogTruncationException) (SubscriptionState.java:490-531). Without an
   epoch nothing is validated: a truncation below C goes unseen (KAFKA-20507).
2. The fetch at position P: P < log start (Partition.scala:1545-1548) or P > log end (LocalLog.scala:359-362) is
   OFFSET_OUT_OF_RANGE -> reset by ``auto.offset.reset`` (none: OffsetOutOfRangeException to the application,
   FetchCollector.java:347-366); P between the high watermark and the log end returns nothing until the high
   watermark reaches P (LocalLog.scala:364-367): the consumer waits, then continues.
3. A reset seeks to ListOffsets EARLIEST = the log start, or LATEST = the high watermark (read_uncommitted) or the
   last stable offset (read_committed) (Partition.scala:1591-1594; OffsetFetcher.java:187-191).
4. read_committed fetches stop at the last stable offset: behind a hanging transaction the consumer hangs there.

The high watermark after the restart starts at the leader's ``replication-offset-checkpoint`` entry (0 when absent),
clamped to [log start, log end] (Partition.scala:486-494, UnifiedLog.scala:277-290), and rises to the log end once
the in-sync followers have fetched (Partition.scala:822, maybeIncrementLeaderHW): a count that depends on when the
consumer resets is given as a range [after the catch-up, before it]. The elected leader runs at a new epoch above
every epoch of the copies (the controller bumps it at each election), starting at its log end (Partition.makeLeader
-> maybeAssignEpochStartOffset), which is what the consumer's epoch validation is answered from.

Records re-read / skipped count the data records (control records are never returned to the application) of the
leader's log in the range, decoded where a boundary falls inside a batch. Nothing here prints.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

from kafkalog_cli.broker import loader as ld
from kafkalog_cli.broker.checkpoints import high_watermark
from kafkalog_cli.broker.leader_epoch_cache import assign, end_offset_for, truncate_from_end
from kafkalog_cli.errors import KafkalogError, UnreadableFileError
from kafkalog_cli.internal_topics.logdir import PartitionCopy, discover
from kafkalog_cli.ops import replicas as rp
from kafkalog_cli.ops.preflight_groups import OFFSETS_TOPIC, Commit, latest_commits

if TYPE_CHECKING:
    from kafkalog_cli.ops.metadata import Loaded

EARLIEST, LATEST, NONE = "earliest", "latest", "none"
READ_UNCOMMITTED, READ_COMMITTED = "read_uncommitted", "read_committed"

# consumer outcome cases
RESUME = "resume"
ABOVE_END = "above-end"
BELOW_START = "below-start"
TRUNCATION_DETECTED = "truncation-detected"
NO_EPOCH_TRUNCATION = "no-epoch-across-truncation"
STUCK_LSO = "stuck-lso"
UNKNOWN = "unknown"
CASES = (RESUME, ABOVE_END, BELOW_START, TRUNCATION_DETECTED, NO_EPOCH_TRUNCATION, STUCK_LSO, UNKNOWN)
# what it does
ACT_RESUME, ACT_REREAD, ACT_SKIP, ACT_HANG, ACT_FAIL, ACT_UNKNOWN = "resume", "re-read", "skip", "hang", "fail", "unknown"
ACTIONS = (ACT_RESUME, ACT_REREAD, ACT_SKIP, ACT_HANG, ACT_FAIL, ACT_UNKNOWN)

SKIP_TOPICS = ("__cluster_metadata",)  # the KRaft log: loaded by the raft layer, not LogLoader


@dataclass
class CopyCheck:
    """One copy (partition directory) as the broker's loader would take it."""

    path: str
    broker: str | None
    loads: bool
    fatal: list[str]
    recovery_cuts: int  # records of intact batches recovery removes (a corrupt batch's records cannot be counted)
    changes: int  # file changes the loader makes
    log_start_offset: int | None
    log_end_offset: int | None  # after the load
    epochs_after: list[tuple[int, int]] | None  # the leader-epoch cache after the load (LogLoader's)
    role: str = "only copy"  # leader | follower | only copy
    truncate_to: int | None = None  # a follower's truncation point against the leader
    truncation_loses: int = 0  # records that truncation removes and the leader does not hold
    recovery_cut_bytes: int = 0  # bytes recovery removes (cut tails and deleted segments, corrupt ones included)
    recovery_cut_offsets: tuple[int, int] | None = None  # (log end on disk, log end after recovery) when it moves
    notes: list[str] = field(default_factory=list)


@dataclass
class PartitionCheck:
    topic: str
    partition: int
    copies: list[CopyCheck]
    leader: str | None = None  # path of the copy that would lead
    leader_broker: str | None = None
    leader_chosen_by: str = ""
    log_start_offset: int | None = None
    log_end_offset: int | None = None
    high_watermark: int | None = None  # at the restart (checkpoint, clamped)
    high_watermark_source: str = ""
    leader_epochs: list[tuple[int, int]] = field(default_factory=list)  # the leader's cache after the election
    last_stable_offset: int | None = None
    hanging: list[dict[str, object]] = field(default_factory=list)
    divergences: list[dict[str, object]] = field(default_factory=list)  # follower histories that left the leader's
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    count: Callable[[int, int], int] | None = field(default=None, repr=False)

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"

    @property
    def stuck_at(self) -> int | None:
        """The last stable offset a hanging transaction holds (nobody will complete it)."""
        return _first(self.hanging, "hanging")

    @property
    def maybe_stuck_at(self) -> int | None:
        """An open transaction whose coordinator state is not in the dirs given: it may or may not be completed."""
        return _first(self.hanging, "coordinator-missing")

    def as_dict(self) -> dict[str, object]:
        d = asdict(self)
        d.pop("count")
        d["name"] = self.name
        d["leader_epochs"] = [list(e) for e in self.leader_epochs]
        return d


def _first(txns: list[dict[str, object]], classification: str) -> int | None:
    return min((int(h["first_offset"]) for h in txns if h["classification"] == classification),  # type: ignore[call-overload]
               default=None)


@dataclass
class ConsumerOutcome:
    group: str
    topic: str
    partition: int
    committed_offset: int
    leader_epoch: int | None
    case: str
    action: str
    position: int | None  # where the consumer reads from after the restart (None: unknown or it fails)
    records_reread: tuple[int, int] | None  # (min, max) records processed again
    records_skipped: tuple[int, int] | None  # (min, max) records of the log it never sees
    detail: str
    rule: str

    def as_dict(self) -> dict[str, object]:
        d = asdict(self)
        for k in ("records_reread", "records_skipped"):
            v = d.pop(k)
            d[k] = None if v is None else {"min": v[0], "max": v[1]}
        return d


@dataclass
class Report:
    log_dirs: list[str]
    auto_offset_reset: str
    isolation: str
    kafka_version: str
    partitions: list[PartitionCheck] = field(default_factory=list)
    consumers: list[ConsumerOutcome] = field(default_factory=list)
    schemas: dict[str, object] | None = None  # None: no _schemas in the dirs
    inventory: dict[str, object] | None = None  # None: no --metadata
    notes: list[str] = field(default_factory=list)
    #: checks that could not run (an engine refused its input): the set is then not known to come back right
    unchecked: list[str] = field(default_factory=list)

    @property
    def problem_partitions(self) -> list[PartitionCheck]:
        return [p for p in self.partitions if p.problems]

    @property
    def problem_consumers(self) -> list[ConsumerOutcome]:
        """Every position that does not simply resume: a reset, a truncation (even one the consumer detects: the
        records it processed past the divergence are gone), a hang, a failure, an unknown."""
        return [c for c in self.consumers if c.action != ACT_RESUME or c.case != RESUME]

    @property
    def schema_problems(self) -> int:
        return int(self.schemas.get("missing_ids", 0)) if self.schemas else 0  # type: ignore[call-overload]

    @property
    def inventory_problems(self) -> int:
        return int(self.inventory.get("problems", 0)) if self.inventory else 0  # type: ignore[call-overload]

    @property
    def comes_back_right(self) -> bool:
        return not (self.problem_partitions or self.problem_consumers or self.schema_problems
                    or self.inventory_problems or self.unchecked)

    def exit_code(self) -> int:
        return 0 if self.comes_back_right else 1

    def as_dict(self) -> dict[str, object]:
        return {
            "verdict": "comes back right" if self.comes_back_right else "problems found",
            "log_dirs": self.log_dirs, "auto_offset_reset": self.auto_offset_reset, "isolation": self.isolation,
            "kafka_version": self.kafka_version,
            "summary": summary(self),
            "partitions": [p.as_dict() for p in self.partitions],
            "consumers": [c.as_dict() for c in self.consumers],
            "schemas": self.schemas, "inventory": self.inventory, "unchecked": self.unchecked, "notes": self.notes,
        }


def summary(r: Report) -> dict[str, dict[str, int]]:
    """One line per class: counts the text prints and the JSON carries."""
    parts = {"total": len(r.partitions), "problems": len(r.problem_partitions),
             "not_loaded": sum(1 for p in r.partitions if any(not c.loads for c in p.copies)),
             "recovery_cuts": sum(1 for p in r.partitions
                                  if any(c.recovery_cuts or c.recovery_cut_bytes for c in p.copies)),
             "replicated": sum(1 for p in r.partitions if len(p.copies) > 1),
             "follower_losses": sum(1 for p in r.partitions if any(c.truncation_loses for c in p.copies)),
             "hanging_transactions": sum(1 for p in r.partitions if p.stuck_at is not None)}
    cons: dict[str, int] = {"total": len(r.consumers)}
    for a in ACTIONS:
        cons[a] = sum(1 for c in r.consumers if c.action == a)
    cases = {k: sum(1 for c in r.consumers if c.case == k) for k in CASES}
    cons["records_reread_max"] = sum(c.records_reread[1] for c in r.consumers if c.records_reread)
    cons["records_skipped_max"] = sum(c.records_skipped[1] for c in r.consumers if c.records_skipped)
    out = {"partitions": parts, "consumers": cons, "consumer_cases": cases}
    if r.schemas is not None:
        out["schemas"] = {"missing_ids": r.schema_problems}
    if r.inventory is not None:
        out["inventory"] = {"problems": r.inventory_problems}
    return out


# ------------------------------------------------------------------------------------------ partitions
def _load_copy(c: PartitionCopy, kafka_version: str) -> CopyCheck:
    try:
        plan = ld.plan_load(c.path, kafka_version)
    except KafkalogError as exc:
        return CopyCheck(c.path, c.broker, False, [exc.describe()], 0, 0, None, None, None)
    loads = not plan.fatal
    ch = CopyCheck(c.path, c.broker, loads, list(plan.fatal), plan.lost_records if loads else 0,
                   len(plan.changes), plan.log_start_offset if loads else None,
                   plan.log_end_offset if loads else None, list(plan.epochs_after) if loads else None)
    if loads:
        ch.recovery_cut_bytes = (sum(r.lost.bytes for r in plan.recovered if r.lost)
                                 + sum(d.bytes for d in plan.deleted_segments))
        if plan.log_end_before != plan.log_end_offset:
            ch.recovery_cut_offsets = (plan.log_end_before, plan.log_end_offset)
    return ch


def record_counter(replica: rp.Replica, log_end: int) -> Callable[[int, int], int]:
    """Data records of ``replica`` with offsets in [a, b) below ``log_end`` (control records excluded; a batch the
    range cuts is decoded, so compacted batches count what they hold)."""

    def count(a: int, b: int) -> int:
        b = min(b, log_end)
        n = 0
        if b <= a:
            return 0
        for x in replica.batches:
            if x.last < a or x.base >= b or not x.valid or x.is_control:
                continue
            if a <= x.base and x.last < b and x.magic >= 2:
                n += max(x.records, 0)
            elif x.magic < 2:
                n += 1 if a <= x.last < b else 0
            else:
                n += sum(1 for r in replica.records(x) if a <= r.offset < b)
        return n

    return count


def _check_partition(topic: str, part: int, copies: list[PartitionCopy], kafka_version: str,
                     image_leader: str | None, replicas_out: list[rp.Replica], image_epoch: int = -1) -> PartitionCheck:
    checks = [_load_copy(c, kafka_version) for c in copies]
    pc = PartitionCheck(topic, part, checks)
    for ch in checks:
        if not ch.loads:
            pc.problems.append(f"{ch.path}: the broker does not load it: " + "; ".join(ch.fatal))
        elif ch.recovery_cuts or ch.recovery_cut_bytes:
            moved = (f", the log end moves {ch.recovery_cut_offsets[0]} -> {ch.recovery_cut_offsets[1]}"
                     if ch.recovery_cut_offsets else "")
            pc.problems.append(f"{ch.path}: the broker's recovery removes {ch.recovery_cut_bytes} bytes "
                               f"({ch.recovery_cuts} records of intact batches{moved}; kafkalog recover shows them)")
    loadable = [c for c in copies if next(ch for ch in checks if ch.path == c.path).loads]
    if not loadable:
        return pc
    try:
        if len(loadable) > 1:
            cmp = rp.compare([c.path for c in loadable], None, image_leader)
            pc.notes += cmp.notes
            leader_rep = next(r for r in cmp.replicas if r.role == "leader")
            pc.leader_chosen_by = cmp.leader_chosen_by
            leader = leader_rep.replica
            seen = max(r.replica.latest_epoch for r in cmp.replicas)
            for rr in cmp.replicas:
                ch = next(x for x in checks if x.path == rr.replica.path)
                ch.role = rr.role
                if rr.role == "follower":
                    ch.truncate_to = rr.truncation_offset
                    ch.truncation_loses = rr.lost.count
                    ch.notes += rr.notes
                    if rr.truncation_offset is None:
                        pc.notes.append(f"{ch.path}: its truncation point is unknown offline ("
                                        + "; ".join(rr.notes) + ")")
                    elif rr.lost.count:
                        pc.problems.append(f"{ch.path} (broker {ch.broker}) truncates to {rr.truncation_offset} as a "
                                           f"follower and loses {rr.lost.count} records the leader does not hold")
                        pc.divergences.append({"path": ch.path, "broker": ch.broker,
                                               "offset": rr.truncation_offset, "records": rr.lost.count})
        else:
            leader = rp.load_replica(loadable[0].path)
            seen = leader.latest_epoch
            pc.leader_chosen_by = "the only copy"
    except KafkalogError as exc:
        pc.problems.append(f"replicas cannot be compared: {exc.describe()}")
        return pc
    replicas_out.append(leader)
    lch = next(x for x in checks if x.path == leader.path)
    lch.role = "leader" if len(loadable) > 1 else "only copy"
    pc.leader, pc.leader_broker = leader.path, lch.broker
    L, N = lch.log_start_offset or 0, lch.log_end_offset or 0
    pc.log_start_offset, pc.log_end_offset = L, N
    if N < leader.log_end_offset:
        pc.notes.append(f"the leader's copy ends at {leader.log_end_offset} on disk; after its recovery at {N}")
    hw, why = high_watermark(leader.path)
    if hw is None:
        pc.high_watermark_source = f"{why}: the broker starts the high watermark at 0, clamped to the log start"
        hw = 0
    else:
        pc.high_watermark_source = why
    pc.high_watermark = min(max(hw, L), N)
    # the leader's cache as its load leaves it (LogLoader: truncateFromEnd(log end), truncateFromStart(log start)),
    # then the epoch the election at the restart gives it, above every epoch seen, from its log end
    # (Partition.makeLeader -> maybeAssignEpochStartOffset; LeaderEpochFileCache.assign)
    cache = list(lch.epochs_after) if lch.epochs_after is not None else truncate_from_end(list(leader.epochs), N)
    top = max([e for e, _s in cache] + [seen, image_epoch])
    pc.leader_epochs = assign(cache, top + 1, N)
    pc.count = record_counter(leader, N)
    return pc


# ------------------------------------------------------------------------------------------ consumers
def _rules() -> dict[str, str]:
    return {
        "validation": "OffsetsForLeaderEpoch validation of the committed epoch (SubscriptionState.maybeCompleteValidation)",
        "range": "fetch out of range (Partition.readRecords / LocalLog.read), reset by auto.offset.reset "
                 "(FetchCollector.handleInitializeErrors)",
        "wait": "fetch above the high watermark returns nothing until it rises (LocalLog.read)",
        "lso": "read_committed fetches stop at the last stable offset (UnifiedLog.read, TXN_COMMITTED)",
        "none": "no partition copy",
    }


def consumer_outcome(c: Commit, p: PartitionCheck | None, policy: str, isolation: str) -> ConsumerOutcome:
    """What the consumer of ``c``'s group does on ``p`` (the restored partition) after the restart."""
    C, E = c.offset, c.leader_epoch
    rules = _rules()

    def out(case: str, action: str, pos: int | None, rr: tuple[int, int] | None, sk: tuple[int, int] | None,
            detail: str, rule: str) -> ConsumerOutcome:
        return ConsumerOutcome(c.group, c.topic, c.partition, C, E, case, action, pos, rr, sk, detail, rule)

    if p is None or p.count is None or p.log_end_offset is None or p.high_watermark is None:
        why = "no copy of the partition in the dirs given" if p is None else \
            "the broker does not load any copy of the partition (see above)"
        return out(UNKNOWN, ACT_UNKNOWN, None, None, None, f"unknown: {why}", rules["none"])
    L, N, H = p.log_start_offset or 0, p.log_end_offset, p.high_watermark
    count = p.count
    stuck = p.stuck_at if isolation == READ_COMMITTED else None
    latest_from = [stuck] if stuck is not None else sorted({H, N})  # ListOffsets LATEST: LSO or the HW (range)
    case, rule = RESUME, ""
    # D: the first offset where the leader's log differs from the history the consumer read (candidates; >= C: none)
    diverge = [C]
    pos: int | None = C
    texts: list[str] = []
    if E is not None:
        fe, fo = end_offset_for(p.leader_epochs, E, N)
        if fe < 0 or fo < 0:
            case, rule = TRUNCATION_DETECTED, rules["validation"]
            texts.append(f"the leader knows no end offset for the commit's epoch {E}: truncation detected")
            if policy == NONE:
                return out(case, ACT_FAIL, None, None, None, "; ".join(texts) + ": LogTruncationException (no "
                           "reset policy), the group stops until its offset is reset", rule)
            pos = None  # reset by the policy below
            diverge = [L, min(C, N)]  # where it diverged is unknown
        elif fo < C:
            case, rule = TRUNCATION_DETECTED, rules["validation"]
            texts.append(f"epoch {E} ends at {fo} on the leader, below the committed {C}: truncation detected")
            if policy == NONE:
                return out(case, ACT_FAIL, None, None, None, "; ".join(texts) + f": LogTruncationException "
                           f"(divergent offset {fo}), the group stops until its offset is reset", rule)
            pos, diverge = fo, [fo]
            texts.append(f"seeks to {fo}, the first offset known to diverge")
    else:
        below = [d for d in p.divergences if int(d["offset"]) < C]  # type: ignore[call-overload]
        if below:
            diverge = [C] + [int(d["offset"]) for d in below]  # type: ignore[call-overload]
            texts.append("the commit has no leader epoch, so a truncation below it goes unseen; "
                         + ", ".join(f"broker {d['broker']}'s history left the leader's at {d['offset']}" for d in below)
                         + ": if the group read that history, the leader's records from there are new to it (the log "
                         "cannot tell which history it read)")
            if L <= C <= N:
                case, rule = NO_EPOCH_TRUNCATION, "no leader epoch in the commit: no validation (KIP-320 needs it)"
    if pos is not None and (pos < L or pos > N):
        if case == RESUME:
            case = ABOVE_END if pos > N else BELOW_START
        rule = rule or rules["range"]
        where = f"above the log end {N}" if pos > N else f"below the log start {L}"
        texts.append(f"the fetch at {pos} is out of range ({where})")
        if C > N:
            texts.append(f"offsets {N}..{C - 1} it had processed are not in the restored log")
        if pos < L:
            texts.append(f"offsets {pos}..{L - 1} are no longer in the log (retention or DeleteRecords)")
        if policy == NONE:
            return out(case, ACT_FAIL, None, None, None, "; ".join(texts) + ": OffsetOutOfRangeException to the "
                       "application (no reset policy), the group stops until its offset is reset", rule)
        pos = None
    if pos is None:
        targets = [L] if policy == EARLIEST else latest_from
        texts.append(f"auto.offset.reset={policy} seeks to " + ("the log start" if policy == EARLIEST else
                     ("the last stable offset" if stuck is not None else "the high watermark"))
                     + " " + "..".join(str(t) for t in targets))
    else:
        targets = [pos]
        if pos > H:
            rule = rule or rules["wait"]
            texts.append(f"{pos} is above the high watermark {H}: it waits until the followers catch up")
    rr, sk = _counts(count, L, N, C, targets, diverge)
    action = ACT_SKIP if sk[1] else ACT_REREAD if rr[1] else ACT_RESUME
    maybe = p.maybe_stuck_at if isolation == READ_COMMITTED and stuck is None else None
    if maybe is not None:
        case, action, rule = UNKNOWN, ACT_UNKNOWN, rules["lso"]
        texts.append(f"unknown: an open transaction at {maybe} has no coordinator state in the dirs given; if its "
                     f"coordinator does not complete it, read_committed hangs at {maybe}")
    if stuck is not None:
        hang_reads = (count(max(targets), stuck), count(min(targets), stuck))
        case, action = STUCK_LSO, ACT_HANG
        rule = rules["lso"]
        texts.append(f"a hanging transaction holds the last stable offset at {stuck}: read_committed reads "
                     f"{_span(sorted(hang_reads))} records, then hangs")
    if not texts:
        texts.append("resumes at its committed offset")
    return out(case, action, targets[0] if len(targets) == 1 else None, rr, sk, "; ".join(texts), rule or "")


def _span(v: list[int] | tuple[int, int]) -> str:
    return str(v[0]) if v[0] == v[-1] else f"{v[0]}..{v[-1]}"


def _counts(count: Callable[[int, int], int], L: int, N: int, C: int, targets: list[int],
            diverge: list[int]) -> tuple[tuple[int, int], tuple[int, int]]:
    """(min, max) records re-read and skipped over the possible positions Q and divergence points D: the consumer
    processed the history below C; the leader's log holds the same records below D. Re-read: [Q, min(C, D, N));
    skipped: [max(L, min(C, D)), Q)."""
    rr, sk = [], []
    for q in targets:
        for d in diverge:
            seen_end = min(C, d, N)
            rr.append(count(max(q, L), seen_end) if q < seen_end else 0)
            first_new = max(L, min(C, d))
            sk.append(count(first_new, q) if q > first_new else 0)
    return (min(rr), max(rr)), (min(sk), max(sk))


# ------------------------------------------------------------------------------------------ the whole set
def _load_metadata(metadata_dir: str | None) -> tuple[Loaded | None, dict[str, tuple[int, int]]]:
    """The KRaft image of ``--metadata`` and (topic-partition) -> (leader id, leader epoch) from it."""
    if metadata_dir is None:
        return None, {}
    from kafkalog_cli.ops import metadata as mops

    loaded = mops.load(mops.metadata_dir(metadata_dir))
    leaders = {f"{t.name}-{pid}": (part.leader, part.leader_epoch)
               for t in loaded.image.topics.values() for pid, part in t.partitions.items()}
    return loaded, leaders


def _inventory(copies: list[PartitionCopy], paths: list[str], loaded: Loaded) -> dict[str, object]:
    """``inventory`` (ops/inventory.take) of each broker's log dirs against the image; the problems only."""
    from kafkalog_cli.internal_topics.logdir import broker_id
    from kafkalog_cli.ops import inventory as inv
    from kafkalog_cli.storage.meta_properties import read_meta_properties

    by_broker: dict[str, list[str]] = {}
    dirs = {c.log_dir for c in copies} | {p for p in paths if os.path.isfile(os.path.join(p, "meta.properties"))}
    for d in sorted(dirs):
        by_broker.setdefault(broker_id(d) or "unknown", []).append(d)
    quorum = (read_meta_properties(os.path.dirname(os.path.abspath(loaded.directory))) or {}).get("cluster.id")
    items: list[dict[str, object]] = []
    for broker, ds in sorted(by_broker.items()):
        rep = inv.take(ds, loaded.image, metadata_source=loaded.directory, quorum_cluster=quorum)
        items += [dict(i.as_dict(), broker=broker) for i in rep.problems]
    return {"problems": len(items), "findings": items, "metadata": loaded.directory}


def _schemas(paths: list[str]) -> dict[str, object] | None:
    from kafkalog_cli.ops import schemas as so

    try:
        reg = so.load_registry(paths)
    except so.NoRegistryError:
        return None
    rep = so.audit(paths, reg)
    uses = [u.as_dict() for u in rep.id_uses]
    return {"missing_ids": len(uses), "id_uses": uses, "notes": rep.notes}


def _empty_partitions(copies: list[PartitionCopy], paths: list[str]) -> list[PartitionCopy]:
    """The live partition directories without a segment in the log dirs of ``copies`` (and the PATHs that are log
    dirs): empty logs, which the broker opens by creating their first segment at the log start (LogLoader), so a
    group's commit on one has an answer (discovery lists only directories holding segments)."""
    from kafkalog_cli.internal_topics.logdir import broker_id, split_name
    from kafkalog_cli.storage.paths import holds_segments, live_children

    have = {c.path for c in copies}
    dirs = {c.log_dir for c in copies} | {os.path.abspath(p) for p in paths
                                          if os.path.isdir(p) and not holds_segments(p)}
    out = []
    for d in sorted(dirs):
        try:
            children = live_children(d)
        except KafkalogError:
            continue
        for sub in children:
            if sub not in have and not holds_segments(sub):
                topic, part = split_name(os.path.basename(sub))
                out.append(PartitionCopy(topic, part, sub, d, broker_id(d)))
    return out


def run(paths: list[str], *, auto_offset_reset: str = LATEST, isolation: str = READ_UNCOMMITTED,
        kafka_version: str = ld.DEFAULT_VERSION, metadata_dir: str | None = None,
        groups: list[str] | None = None, txn_partitions: int = 50) -> Report:
    """The preflight of the log dirs (or partition dirs) ``paths``: one report, one verdict."""
    from kafkalog_cli.internal_topics import transactions as tx

    copies, notes = discover(paths)
    if not copies:
        raise UnreadableFileError("no partition directory found", file=" ".join(paths),
                                  expected="broker log dirs (log.dirs entries) or partition directories",
                                  found="none")
    report = Report(list(paths), auto_offset_reset, isolation, kafka_version, notes=list(notes))
    copies = copies + _empty_partitions(copies, paths)
    loaded, image_leaders = _load_metadata(metadata_dir)
    by_tp: dict[tuple[str, int], list[PartitionCopy]] = {}
    for c in copies:
        if c.partition < 0 or c.topic in SKIP_TOPICS:
            continue
        by_tp.setdefault((c.topic, c.partition), []).append(c)
    leaders: list[rp.Replica] = []
    try:
        for (topic, part), cs in sorted(by_tp.items()):
            il = image_leaders.get(f"{topic}-{part}")
            # the controller keeps the image's leader when that broker comes back (a restart elects no other)
            named = str(il[0]) if il is not None and any(c.broker == str(il[0]) for c in cs) else None
            report.partitions.append(_check_partition(topic, part, cs, kafka_version, named, leaders,
                                                      il[1] if il is not None else -1))
        try:
            txn = tx.analyse(list(paths), txn_partitions=txn_partitions)
        except KafkalogError as exc:
            report.unchecked.append(f"transactions: {exc.describe()}")
            txn = None
        report.notes += txn.warnings if txn is not None else []
        by_path = {r.path: r for r in txn.partitions} if txn is not None else {}
        for p in report.partitions:
            tr = by_path.get(p.leader or "")
            if tr is None:
                continue
            p.last_stable_offset = tr.last_stable_offset
            for t in tr.open:
                if t.classification in ("hanging", "coordinator-missing"):
                    p.hanging.append({"producer_id": t.producer_id, "first_offset": t.first_offset,
                                      "classification": t.classification, "reason": t.reason,
                                      "abort_command": t.abort_command})
            if p.stuck_at is not None:
                p.problems.append(f"hanging transaction at offset {p.stuck_at}: read_committed consumers stop there "
                                  "(kafkalog transactions shows the abort command)")
            if p.maybe_stuck_at is not None:
                p.notes.append(f"open transaction at offset {p.maybe_stuck_at}: its coordinator's "
                               "__transaction_state partition is not in the dirs given (unknown whether it completes)")
        # the coordinator loads __consumer_offsets from the copy that leads, as the broker's load leaves it
        offsets = [c for c in copies if c.topic != OFFSETS_TOPIC or any(
            p.leader == c.path for p in report.partitions if (p.topic, p.partition) == (c.topic, c.partition))]
        ends = {p.leader: p.log_end_offset for p in report.partitions
                if p.topic == OFFSETS_TOPIC and p.leader is not None and p.log_end_offset is not None}
        commits, warnings = latest_commits(offsets, ends)
        report.notes += warnings
        parts = {(p.topic, p.partition): p for p in report.partitions}
        for cm in commits:
            if groups and cm.group not in groups:
                continue
            report.consumers.append(consumer_outcome(cm, parts.get((cm.topic, cm.partition)), auto_offset_reset,
                                                     isolation))
    finally:
        for r in leaders:
            r.close()
    try:
        report.schemas = _schemas(list(paths))
    except KafkalogError as exc:
        report.unchecked.append(f"schemas: {exc.describe()}")
    if loaded is not None:
        try:
            report.inventory = _inventory(copies, list(paths), loaded)
        except KafkalogError as exc:
            report.unchecked.append(f"inventory: {exc.describe()}")
    return report
