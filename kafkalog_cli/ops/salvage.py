"""``salvage``: the lossless alternative to the broker's recovery. Keep every intact batch, cut out only the corrupt
byte ranges verify-crc's resync map finds, and write a partition the broker's loader accepts without truncating.

Why: the loader truncates at the first bad batch and deletes every later segment (spec §8, errata E2), although the
batches after a damaged one are usually intact. Offset gaps are legal in Kafka (compacted topics have them), so a
partition made of the intact batches, with indexes, ``.txnindex``, producer snapshots and the leader-epoch
checkpoint rebuilt from them, loads cleanly.

What makes the result consistent (checked before anything is written; otherwise refused, nothing written):

* kept batches are magic v2, their offsets strictly increase across the partition and fit each segment's 32-bit
  relative range (the fields outside the CRC, errata E3);
* producer-state replay of the kept batches succeeds the way the broker's replay does (a non-transactional batch
  of a producer with an open transaction is fatal for the broker: InvalidTxnStateException);
* transactions and cut bytes (the evidence rule, docs/recover-and-salvage.md): a cut range whose batch framing and
  headers are readable shows whether it held a marker. A control batch of a producer whose transaction is open at
  the cut is a lost COMMIT/ABORT marker: without it the broker's replay runs that transaction into the producer's
  next one (its ``.txnindex`` entry, or its commit, would span both) or leaves it hanging, so salvage refuses unless
  ``allow_lost_marker``, and then names the transaction, what consumers will read and the exact
  ``kafka-transactions.sh`` abort command. Readable headers without such a marker: nothing of a transaction's
  outcome was lost, salvage proceeds (the broker's own recovery leaves the same open transaction after a crash).
  Unknown bytes (no readable framing) inside an open transaction's span may have held its marker: refused unless
  ``allow_unknown_in_transaction`` (then a warning names the transaction and its consumers' risk). A cut that
  loses no offset, or that nothing kept follows (a trailing cut, as the broker's own recovery cuts it), is at most
  a note.

Snapshots: one at every segment base but the first, and one at the log end offset, with the replayed state: the
set the broker's recovery itself leaves (``loader.py``), so a later recovery finds nothing to change.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from functools import partial
from typing import BinaryIO

from kafkalog_cli.broker import leader_epoch_cache as lec
from kafkalog_cli.broker import loader as ld
from kafkalog_cli.broker import producer_state_manager as pst
from kafkalog_cli.errors import RepairRefused, UnreadableFileError
from kafkalog_cli.format import layouts as L
from kafkalog_cli.format.batch import Batch
from kafkalog_cli.ops import rebuild_index as ri
from kafkalog_cli.ops import repair_plan
from kafkalog_cli.storage import companions as comp
from kafkalog_cli.storage import layout
from kafkalog_cli.storage.paths import partition_name, require_directory
from kafkalog_cli.storage.segment import MappedFile
from kafkalog_cli.storage.segment_check import map_segment

INT32_MAX = 2147483647
CONTROL_FLAG = 0x20  # RecordBatch attributes: control batch (bit 5)


@dataclass
class Cut:
    segment: int
    start: int
    end: int
    last_good_offset: int | None
    first_good_offset: int | None
    zero_tail: bool = False
    # what the cut bytes show (``_read_cut``): "headers" (framing and headers readable, listed in ``batches``) or
    # "unknown"; ``batches``: (base offset, last offset, producer id, control) of each readable header
    evidence: str = "unknown"
    batches: list[tuple[int, int, int, bool]] = field(default_factory=list)


@dataclass
class SalvagePlan:
    partition_dir: str
    cuts: list[Cut] = field(default_factory=list)
    changes: list[ld.FileChange] = field(default_factory=list)
    kept_batches: int = 0
    kept_records: int = 0
    log_end_offset: int = 0
    salvage_lost_bytes: int = 0
    salvage_lost_offsets: list[tuple[int, int]] = field(default_factory=list)  # offset gaps the cuts leave
    broker_lost_records: int = 0
    broker_lost_offsets: tuple[int, int] | None = None
    broker_log_end_offset: int = 0
    #: the corrupt batches the broker's own start does NOT repair (below the recovery point, or a clean start)
    broker_unrepaired: list[ld.Unrepaired] = field(default_factory=list)
    epochs_before: list[tuple[int, int]] = field(default_factory=list)
    epochs_after: list[tuple[int, int]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: the release whose loader the plan models (issue 28: echoed, it can come from $KAFKALOG_KAFKA_VERSION)
    kafka_version: str = ""

    @property
    def has_changes(self) -> bool:
        return bool(self.changes)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["changes"] = [c.to_dict() for c in self.changes]
        d["has_changes"] = self.has_changes
        return d


def _refuse(message: str, pdir: str, **kw: object) -> RepairRefused:
    return RepairRefused(message, file=kw.pop("file", pdir), **kw)  # type: ignore[arg-type]


def plan_salvage(partition_dir: str, *, kafka_version: str = ld.DEFAULT_VERSION, now_ms: int | None = None,
                 index_interval_bytes: int = ri.DEFAULT_INTERVAL,
                 segment_index_bytes: int = ri.DEFAULT_SEGMENT_INDEX_BYTES, allow_lost_marker: bool = False,
                 allow_unknown_in_transaction: bool = False) -> SalvagePlan:
    """Everything ``salvage`` would write (see the module docstring), in its steps: the broker's loss for
    comparison, the resync map, the replay, then the segment files, snapshots and leader-epoch checkpoint."""
    pdir = os.path.abspath(partition_dir)
    require_directory(pdir)
    names = sorted(os.listdir(pdir))
    left = [n for n in names if layout.loader_file_kind(n) in ("deleted", "cleaned", "swap")]
    if left:
        raise _refuse("leftovers of an interrupted clean, split or delete are in the partition directory: run "
                      "'kafkalog recover --execute' (or start the broker) to resolve them first", pdir,
                      expected="no .deleted/.cleaned/.swap files", found=", ".join(left[:5]))
    version = ld.KafkaVersion.parse(kafka_version)
    bases = layout.segment_bases(pdir)
    if not bases:
        raise UnreadableFileError("no segment (.log) files in the directory", file=pdir, expected="NNN.log files",
                                  found="none")
    plan = SalvagePlan(pdir, kafka_version=str(version))
    broker = _broker_loss(plan, kafka_version, now_ms, ld.TopicConfig(index_interval_bytes, segment_index_bytes))
    kept, infos, prev_last = _resync_map(plan, bases)
    err_cuts = _salvage_loss(plan, bases)
    aborted, snaps = _replay(plan, bases, infos, prev_last, err_cuts, version, broker.log_start_checkpoint,
                             allow_lost_marker, allow_unknown_in_transaction)
    seg_changes(plan, pdir, bases, kept, infos, aborted, index_interval_bytes, segment_index_bytes)
    _snapshot_files(plan, names, snaps)
    _epoch_checkpoint(plan, broker, [b for v in infos.values() for b in v])
    rewritten = {c.name for c in plan.changes}
    blocking = [f for f in broker.fatal if f.split(":", 1)[0] not in rewritten]
    if blocking:
        raise _refuse("the broker would not load this partition for a reason salvage does not repair: "
                      + "; ".join(blocking), pdir, expected="a state the loader handles", found=blocking[0][:80])
    if plan.has_changes and os.path.exists(os.path.join(os.path.dirname(os.path.realpath(pdir)), ld.CLEAN_SHUTDOWN)):
        plan.notes.append(f"{ld.CLEAN_SHUTDOWN} is present: the broker will load the rebuilt snapshots as they are")
    return plan


def _broker_loss(plan: SalvagePlan, kafka_version: str, now_ms: int | None,
                 config: ld.TopicConfig | None = None) -> ld.LoaderPlan:
    """What the broker's own recovery (``loader.plan_load``) would lose, for the comparison the plan shows."""
    broker = ld.plan_load(plan.partition_dir, kafka_version, now_ms=now_ms, config=config or ld.TopicConfig())
    plan.broker_lost_records = broker.lost_records
    plan.broker_log_end_offset = broker.log_end_offset
    plan.broker_unrepaired = list(broker.unrepaired)
    lost_firsts = [r.lost.first_offset for r in broker.recovered if r.lost and r.lost.first_offset is not None]
    lost_firsts += [r.next_offset for r in broker.recovered if r.outcome != "intact"]
    lost_lasts = [d.last_offset for d in broker.deleted_segments if d.last_offset is not None]
    lost_lasts += [r.lost.last_offset for r in broker.recovered if r.lost and r.lost.last_offset is not None]
    if lost_firsts or lost_lasts:
        plan.broker_lost_offsets = (min(lost_firsts or lost_lasts), max(lost_lasts or lost_firsts))
    return broker


def _resync_map(plan: SalvagePlan, bases: list[int]) -> tuple[dict[int, list[tuple[int, int, int, int]]],
                                                                dict[int, list[pst.BatchInfo]], int | None]:
    """verify-crc's resync map of every segment: the intact batches to keep (per segment), their batch infos, the
    last kept offset; the corrupt ranges become the plan's cuts. Refused when a kept batch cannot be loaded where it
    is (offsets going backwards or outside the segment's 32-bit range, an unreadable control record, legacy magic)."""
    pdir = plan.partition_dir
    kept: dict[int, list[tuple[int, int, int, int]]] = {}
    infos: dict[int, list[pst.BatchInfo]] = {}
    prev_last: int | None = None
    for base in bases:
        path = os.path.join(pdir, layout.segment_name(base))
        rep, m = map_segment(path)
        if rep.unreadable:
            raise UnreadableFileError(rep.problems[0].message if rep.problems else "unreadable", file=path)
        if any(mg < 2 for mg in rep.magics):
            raise _refuse("legacy (v0/v1) messages found; salvage handles magic v2 segments only", pdir, file=path)
        for start, end, err in m.regions:
            last_good = max((e[3] for e in m.entries if e[0] < start), default=None)
            first_good = min((e[2] for e in m.entries if e[0] >= end), default=None)
            cut = Cut(base, start, end, last_good, first_good, not err)
            if err:
                cut.evidence, cut.batches = _read_cut(path, start, end, last_good, first_good)
            plan.cuts.append(cut)
        kept[base] = m.entries
        seg_infos = []
        with MappedFile(path) as mf:
            for pos, _size, b_base, b_last in m.entries:
                if prev_last is not None and b_base <= prev_last:
                    raise _refuse(f"kept batch at offset {b_base} does not follow offset {prev_last}: offsets would go "
                                  "backwards. Its CRC verifies, but the baseOffset field is outside the CRC: "
                                  "a damaged offset field, or a stale/misplaced batch. Decide which bytes to keep "
                                  "first (verify-crc lists it as offset-order)", pdir,
                                  file=path, position=pos, expected=f"offset > {prev_last}", found=str(b_base))
                if b_base < base or b_last - base > INT32_MAX:
                    raise _refuse("kept batch's offsets do not fit the segment (the broker would fail to load it)",
                                  pdir, file=path, position=pos, expected=f"offsets in [{base}, {base + INT32_MAX}]",
                                  found=f"{b_base}..{b_last}")
                prev_last = b_last
                info = pst.safe_batch_info(Batch(mf.buf, pos), mf.buf)
                if not isinstance(info, pst.BatchInfo):
                    raise _refuse(f"control batch at offset {b_base} has an unreadable record: {info.message}", pdir,
                                  file=path, position=pos)
                seg_infos.append(info)
        infos[base] = seg_infos
    return kept, infos, prev_last


def _salvage_loss(plan: SalvagePlan, bases: list[int]) -> list[Cut]:
    """The bytes and offset gaps the corrupt cuts lose (a zero-filled tail loses nothing); returns those cuts."""
    err_cuts = [c for c in plan.cuts if not c.zero_tail]
    plan.salvage_lost_bytes = sum(c.end - c.start for c in err_cuts)
    for c in err_cuts:
        lo = (c.last_good_offset + 1) if c.last_good_offset is not None else c.segment
        hi = (c.first_good_offset - 1) if c.first_good_offset is not None else None
        if hi is None:
            nxt = [b for b in bases if b > c.segment]
            hi = nxt[0] - 1 if nxt else None
        if hi is None or hi >= lo:
            plan.salvage_lost_offsets.append((lo, hi if hi is not None else -1))
    return err_cuts


def _replay(plan: SalvagePlan, bases: list[int], infos: dict[int, list[pst.BatchInfo]], prev_last: int | None,
            err_cuts: list[Cut], version: ld.KafkaVersion, log_start_checkpoint: int, allow_lost_marker: bool = False,
            allow_unknown_in_transaction: bool = False) -> tuple[list[tuple[int, int, int, int]], dict[int, bytes]]:
    """Producer-state replay of the kept batches as the broker's (refused where its replay would fail, or where the
    evidence rule of the module docstring says a transaction's outcome may be lost in a cut): the aborted
    transactions (``.txnindex`` entries) and the snapshots at every segment base but the first and at the log end
    offset (the ones the loader keeps)."""
    pdir = plan.partition_dir
    state = pst.ProducerState(bases[0])
    aborted: list[tuple[int, int, int, int]] = []
    snaps: dict[int, bytes] = {}
    # the cuts in log order between the kept batches: what was open at each, and what closed those later
    at_cut: list[tuple[Cut, dict[int, int], int | None]] = []  # (cut, {pid: txn first offset}, last kept offset)
    closed: dict[tuple[int, int], tuple[int, bool]] = {}  # (pid, first offset) -> (marker offset, aborted)
    last_kept: int | None = None
    for base in bases:
        if base != bases[0]:
            state.map_end_offset = base
            snaps[base] = state.snapshot_bytes(version.java_producer_map)
        cuts = sorted((c for c in err_cuts if c.segment == base), key=lambda c: c.start)
        for b in infos[base]:
            while cuts and cuts[0].start < b.position:
                at_cut.append((cuts.pop(0), {p: f for f, p in state.ongoing.items()}, last_kept))
            e = state.producers.get(b.producer_id)
            if (b.producer_id >= 0 and not b.control and not b.transactional and e is not None
                    and e.current_txn_first_offset >= 0):
                raise _refuse(f"producer {b.producer_id} writes a non-transactional batch at offset {b.base_offset} "
                              f"while its transaction from offset {e.current_txn_first_offset} is open (its marker is "
                              "missing): the broker's replay would fail (InvalidTxnStateException)", pdir,
                              position=b.position)
            done = state.apply(b)  # ProducerState.replay, one batch at a time
            if done is not None:
                if done.aborted:
                    aborted.append((done.producer_id, done.first_offset, done.last_offset,
                                    state.last_stable_offset(done)))
                closed[(done.producer_id, done.first_offset)] = (done.last_offset, done.aborted)
                state.complete(done)
            state.map_end_offset = b.last_offset + 1
            last_kept = b.last_offset
        at_cut += [(c, {p: f for f, p in state.ongoing.items()}, last_kept) for c in cuts]
    leo = max(prev_last + 1 if prev_last is not None else bases[-1], bases[-1])
    state.map_end_offset = leo
    snaps[leo] = state.snapshot_bytes(version.java_producer_map)
    plan.log_end_offset = leo
    _transaction_rules(plan, at_cut, closed, prev_last, allow_lost_marker, allow_unknown_in_transaction)
    plan.kept_batches = sum(len(v) for v in infos.values())
    plan.kept_records = sum(b.records for v in infos.values() for b in v)
    return aborted, {o: d for o, d in snaps.items() if o > log_start_checkpoint}  # the loader deletes the others


def abort_command(partition_dir: str, first_offset: int) -> str:
    """The ``kafka-transactions.sh`` command that ends a hanging transaction of this partition (KIP-664)."""
    tp = partition_name(partition_dir)  # a -future/-stray copy's topic and partition too (LocalLog.scala:637-671)
    topic, part = (tp.topic, str(tp.partition)) if tp is not None else ("?", "?")
    return (f"kafka-transactions.sh --bootstrap-server BROKER:9092 abort --topic {topic} "
            f"--partition {part} --start-offset {first_offset}")


def _transaction_rules(plan: SalvagePlan, at_cut: list[tuple[Cut, dict[int, int], int | None]],
                       closed: dict[tuple[int, int], tuple[int, bool]], final_kept: int | None,
                       allow_lost_marker: bool, allow_unknown_in_transaction: bool) -> None:
    """The evidence rule of the module docstring, cut by cut (refusals raise; the rest become notes/warnings)."""
    pdir = plan.partition_dir
    for c, open_at, last_kept in at_cut:
        where = f"bytes {c.start}..{c.end} of segment {c.segment}"
        trailing = last_kept == final_kept  # nothing kept follows it: the log's tail, as the broker cuts it
        lo = last_kept + 1 if last_kept is not None else c.segment
        no_offset_lost = c.first_good_offset is not None and c.first_good_offset == lo
        if not open_at or no_offset_lost:
            continue

        def outcome(pid: int, first: int) -> str:
            end = closed.get((pid, first))
            if end is None:
                return (f"it stays open: it hangs (the last stable offset stops at {first}, read_committed consumers "
                        f"stall there) until it is ended: {abort_command(pdir, first)}")
            kind = "ABORT" if end[1] else "COMMIT"
            return (f"the broker's replay runs it into the producer's next transaction, which ends with {kind} at "
                    f"offset {end[0]}: read_committed consumers read offsets {first}..{end[0]} of producer {pid} as "
                    f"{'aborted' if end[1] else 'committed'}")

        if trailing:
            for pid, first in sorted(open_at.items(), key=lambda t: t[1]):
                if (pid, first) in closed:
                    continue
                torn = [bo for bo, _lo, p, ctl in c.batches if ctl and p == pid] if c.evidence == "headers" else []
                held = f"; the tail held a control batch of that producer at offset {torn[0]}" if torn else ""
                plan.notes.append(
                    f"producer {pid}'s transaction from offset {first} is open at the log end (the cut at {where} is "
                    f"the log's tail, as the broker's own recovery cuts it after a crash{held}): the transaction "
                    f"coordinator completes it; if it hangs, end it with: {abort_command(pdir, first)}")
            continue
        if c.evidence == "headers":
            lost = [(bo, pid) for bo, _lo, pid, ctl in c.batches if ctl and pid in open_at]
            for bo, pid in lost:
                first = open_at[pid]
                text = (f"producer {pid}'s transaction from offset {first} lost its COMMIT/ABORT marker: the cut at "
                        f"{where} holds a control batch of that producer at offset {bo} (header readable, CRC "
                        "failed); which marker it was cannot be known. Without it " + outcome(pid, first))
                if not allow_lost_marker:
                    raise _refuse(text + ". Refused: re-run with --allow-lost-marker to salvage anyway, or cut the "
                                  f"partition before offset {first} (truncate-to-epoch --to-offset {first})", pdir,
                                  file=os.path.join(pdir, layout.segment_name(c.segment)), position=c.start,
                                  expected="no lost marker of an open transaction",
                                  found=f"control batch of producer {pid} at offset {bo} in the cut")
                plan.notes.append("WARNING: " + text)
            stray = [(bo, pid) for bo, _lo, pid, ctl in c.batches if ctl and pid not in open_at]
            if not stray:
                continue
            # a control batch of a producer with no open transaction here: a stray marker, or a marker whose
            # producer id field is the damaged part (the CRC failed): the open transactions are as at risk as
            # with unreadable bytes
            what = "a damaged control batch"
            why = (f"it is at offset {stray[0][0]}, of producer {stray[0][1]}, which has no open transaction: if its "
                   "producer id is what was damaged, it was this transaction's COMMIT/ABORT marker")
            open_at = {p: f for p, f in open_at.items() if p not in {q for _b, q in lost}}
        else:
            what, why = "unreadable bytes", "they may have held its COMMIT/ABORT marker"
        for pid, first in sorted(open_at.items(), key=lambda t: t[1]):
            text = (f"producer {pid}'s transaction from offset {first} spans {what} ({where}, offsets "
                    f"{lo}..{c.first_good_offset - 1 if c.first_good_offset is not None else '?'} lost): {why}; if "
                    "so, " + outcome(pid, first) + ", which its read_committed consumers would then get wrong")
            if not allow_unknown_in_transaction:
                raise _refuse(text + ". Refused: re-run with --allow-unknown-in-transaction to salvage anyway, or "
                              f"cut the partition before offset {first} (truncate-to-epoch --to-offset {first})", pdir,
                              file=os.path.join(pdir, layout.segment_name(c.segment)), position=c.start,
                              expected="every transaction decided or still open before any unreadable cut",
                              found=f"open transaction {pid}@{first}")
            plan.notes.append("WARNING: " + text)


def _read_cut(path: str, start: int, end: int, last_good: int | None,
              first_good: int | None) -> tuple[str, list[tuple[int, int, int, bool]]]:
    """What the bytes of a cut range show: ("headers", [(base, last, producer id, control), ...]) when the v2 batch
    framing walks from ``start`` exactly to ``end`` (or into the end of the file: a torn last batch) through headers
    whose offsets lie in the cut's offset gap; else ("unknown", [])."""
    with open(path, "rb") as f:
        f.seek(start)
        data = f.read(end - start)
        size = os.fstat(f.fileno()).st_size
    out: list[tuple[int, int, int, bool]] = []
    pos, low = 0, (last_good + 1 if last_good is not None else None)
    while pos < len(data):
        if pos + L.V2_HEADER_SIZE > len(data):
            return "unknown", []
        h = L.BATCH_V2.read(data, pos)
        base, length, magic, attrs = h.base_offset, h.batch_length, h.magic, h.attributes
        delta, pid = h.last_offset_delta, h.producer_id
        last = base + delta
        if (magic != 2 or length < L.V2_MIN_BATCH_LENGTH or delta < 0 or (low is not None and base < low)
                or (first_good is not None and last >= first_good) or (out and base <= out[-1][1])):
            return "unknown", []
        out.append((base, last, pid, bool(attrs & CONTROL_FLAG)))
        nxt = pos + L.LOG_OVERHEAD + length
        if nxt > len(data) and start + nxt > size and end == size:
            break  # a torn last batch: its header is all there is
        if nxt > len(data):
            return "unknown", []
        pos = nxt
    return "headers", out


def _snapshot_files(plan: SalvagePlan, names: list[str], snaps: dict[int, bytes]) -> None:
    """Producer snapshot files: those outside the rebuilt set deleted, the rebuilt ones written where they differ."""
    for n in names:
        if layout.loader_file_kind(n) == "snapshot":
            off = layout.loader_offset(n)
            if off not in snaps:
                plan.changes.append(ld.FileChange("delete", n, "producer snapshot not in the rebuilt set"))
    for off, data in sorted(snaps.items()):
        name = f"{off:020d}.snapshot"
        path = os.path.join(plan.partition_dir, name)
        if os.path.isfile(path):
            with open(path, "rb") as f:
                if f.read() == data:
                    continue
        plan.changes.append(ld.FileChange("write", name, f"producer snapshot ({(len(data) - 10) // 46} producers)",
                                          len(data), data=data))


def _epoch_checkpoint(plan: SalvagePlan, broker: ld.LoaderPlan, batches: list[pst.BatchInfo]) -> None:
    """The leader-epoch checkpoint: kept when it describes the kept batches (errata E7: its history stays), else
    regenerated from them (the first batch of each higher epoch), in both cases cut to the log's range."""
    plan.epochs_before = list(broker.epochs_before)
    kept_file = lec.truncate_from_start(lec.truncate_from_end(plan.epochs_before, plan.log_end_offset),
                                        broker.log_start_checkpoint)
    if _epochs_consistent(kept_file, batches):
        cache = kept_file  # the checkpoint already describes the kept batches: keep its history (E7)
    else:
        cache = lec.first_of_each_higher_epoch((b.leader_epoch, b.base_offset) for b in batches)
        cache = lec.truncate_from_start(cache, broker.log_start_checkpoint)
    plan.epochs_after = cache
    if cache != plan.epochs_before:
        text = comp.encode_leader_epoch_checkpoint(cache).encode()
        plan.changes.append(ld.FileChange("write", ld.EPOCH_CHECKPOINT, "regenerated from the kept batches (first "
                                          "batch of each higher epoch)", len(text), data=text))
        dropped = [e for e in plan.epochs_before if e not in cache]
        if dropped:
            plan.notes.append("leader-epoch entries dropped: " + ", ".join(f"{e}@{s}" for e, s in dropped)
                              + " (not consistent with the kept batches or at/after the log end)")


def _epochs_consistent(cache: list[tuple[int, int]], batches: list[pst.BatchInfo]) -> bool:
    """Every kept batch with a leader epoch lies in that epoch's range of the cache, and the cache is strictly
    increasing (what the broker's recovery checks: it only adds epochs above the latest, errata E7)."""
    if any(cache[i][0] >= cache[i + 1][0] or cache[i][1] >= cache[i + 1][1] for i in range(len(cache) - 1)):
        return False
    i = -1
    for b in batches:
        if b.leader_epoch < 0:
            continue
        while i + 1 < len(cache) and cache[i + 1][1] <= b.base_offset:
            i += 1
        if i < 0 or cache[i][0] != b.leader_epoch:
            return False
    return True


def _writer(src: str, entries: list[tuple[int, int, int, int]]) -> Callable[[BinaryIO], None]:
    def write(f: BinaryIO) -> None:
        with open(src, "rb") as fin:
            for pos, size, _b, _l in entries:
                fin.seek(pos)
                data = fin.read(size)
                if len(data) != size:
                    raise UnreadableFileError("segment changed while being salvaged", file=src, position=pos)
                f.write(data)
    return write


def seg_changes(plan: SalvagePlan, pdir: str, bases: list[int], kept: dict, infos: dict, aborted: list,
                interval: int, sib: int) -> None:
    """Per segment: the new ``.log`` (kept entries only), its indexes and ``.txnindex`` where they differ."""
    for i, base in enumerate(bases):
        stem = f"{base:020d}"
        path = os.path.join(pdir, stem + ".log")
        entries = kept[base]
        size = os.path.getsize(path)
        new_size = sum(e[1] for e in entries)
        contiguous, at = True, 0
        for pos, sz, _b, _l in entries:
            contiguous = contiguous and pos == at
            at = pos + sz
        log_changed = new_size != size or not contiguous
        if log_changed:
            ch = ld.FileChange("write", stem + ".log", f"{len(entries)} intact batches kept, "
                               f"{size - new_size} bytes cut", new_size)
            ch.data = None
            ch.source = stem + ".log"
            plan.changes.append(ch)
            with open(path, "rb") as f:
                buf = b"".join((f.seek(p), f.read(s))[1] for p, s, _b, _l in entries)
        else:
            with open(path, "rb") as f:
                buf = f.read()
        rb = ri.rebuild_segment(buf, base, interval, file=path, segment_index_bytes=sib)
        if rb.problem is not None:
            raise _refuse(f"the salvaged segment would not load: {rb.problem.message}", pdir, file=path)
        for ext, data in (("index", rb.index), ("timeindex", rb.timeindex)):
            ipath = os.path.join(pdir, f"{stem}.{ext}")
            existing = comp.read_if_exists(ipath)
            # A staged N.log always takes its indexes along: while N.log.swap exists the broker's loader opens
            # N.index.swap / N.timeindex.swap with it (LogLoader.java:145-155); a missing one is created
            # zero-filled (AbstractIndex.java:90-103) and installed in place of the real index by pass 3.
            if log_changed or ri.compare(ext, ipath, base, existing, data).status not in ("match", "match-trimmed"):
                plan.changes.append(ld.FileChange("write", f"{stem}.{ext}", "rebuilt", len(data), data=data))
        end = bases[i + 1] if i + 1 < len(bases) else None
        txn = comp.encode_txn_index([comp.AbortedTxn(0, *a) for a in aborted
                                     if a[2] >= base and (end is None or a[2] < end)])
        xpath = os.path.join(pdir, stem + ".txnindex")
        existing = comp.read_if_exists(xpath)
        if (existing or b"") != txn and (existing is not None or txn):
            plan.changes.append(ld.FileChange("write", stem + ".txnindex", "rebuilt from the kept markers", len(txn),
                                              data=txn))


def salvage_steps(plan: SalvagePlan) -> list[repair_plan.Step]:
    """The plan as file steps (``repair_plan``): each rewritten ``.log`` is streamed from its intact batches (the
    resync map, read again now under the lock), every other file is written from the plan's bytes; the mtimes of
    the segment files are kept (time-based retention reads them)."""
    pdir = plan.partition_dir
    kept = {}
    for base in layout.segment_bases(pdir):
        _rep, m = map_segment(os.path.join(pdir, layout.segment_name(base)))
        kept[layout.segment_name(base)] = m.entries
    steps = []
    for c in plan.changes:
        if c.kind == "delete":
            steps.append(repair_plan.delete(c.name))
        elif c.name.endswith(".log"):
            steps.append(repair_plan.write(c.name, _writer(os.path.join(pdir, c.name), kept[c.name]), keep_mtime=True))
        else:
            steps.append(repair_plan.write(c.name, c.data or b"", keep_mtime=c.name.endswith((".index", ".timeindex"))))
    return steps


def run(paths: list[str], *, kafka_version: str = ld.DEFAULT_VERSION, execute: bool = False,
        backup_dir: str | None = None, keep_backup: bool = True,
        now_ms: int | None = None, allow_lost_marker: bool = False,
        allow_unknown_in_transaction: bool = False,
        config: ld.TopicConfig | None = None) -> list[tuple[SalvagePlan, list[str], str | None]]:
    """Per partition: (plan, interrupted work finished first, backup dir). ``config``: the topic's
    index.interval.bytes and segment.index.bytes, which the rebuilt indexes follow as the broker's recovery does
    (Kafka's defaults when None; with others, an unclean start's recovery rewrote the active segment's indexes)."""
    from kafkalog_cli.storage.paths import partition_dirs

    cfg = config or ld.TopicConfig()

    out: list[tuple[SalvagePlan, list[str], str | None]] = []
    explicit = {os.path.abspath(p) for p in paths}
    pdirs = partition_dirs(paths)
    allow = {"allow_lost_marker": allow_lost_marker, "allow_unknown_in_transaction": allow_unknown_in_transaction}
    if execute and len(pdirs) > 1:
        # refuse before writing anything: a refusal in the 3rd partition of a log dir must not leave the first two
        # already rewritten ("exit 2, nothing written"); the plans are recomputed under the lock below
        for pdir in pdirs:
            if pdir in explicit or layout.segment_bases(pdir):
                plan_salvage(pdir, kafka_version=kafka_version, now_ms=now_ms, **allow,
                             index_interval_bytes=cfg.index_interval_bytes, segment_index_bytes=cfg.segment_index_bytes)
    for pdir in pdirs:
        if pdir not in explicit and not layout.segment_bases(pdir):
            # one partition of a log dir without any segment (nothing to salvage there) must not stop the others;
            # named on its own it is still refused (exit 2) like every repair command does
            out.append((SalvagePlan(pdir, notes=["no segment (.log) file: nothing to salvage (the broker creates an "
                                                 "empty segment at load, see 'kafkalog recover')"]), [], None))
            continue
        o = repair_plan.drive(pdir, partial(plan_repair, pdir, kafka_version=kafka_version, now_ms=now_ms, **allow,
                                            index_interval_bytes=cfg.index_interval_bytes,
                                            segment_index_bytes=cfg.segment_index_bytes),
                              execute=execute, backup_dir=backup_dir, keep_backup=keep_backup)
        out.append((o.report, o.recovered, o.backup_dir))
    return out


def plan_repair(pdir: str, *, kafka_version: str = ld.DEFAULT_VERSION, now_ms: int | None = None,
                allow_lost_marker: bool = False, allow_unknown_in_transaction: bool = False,
                index_interval_bytes: int = ri.DEFAULT_INTERVAL,
                segment_index_bytes: int = ri.DEFAULT_SEGMENT_INDEX_BYTES) -> repair_plan.RepairPlan[SalvagePlan]:
    """The repair plan: salvage's findings (``plan_salvage``) and their steps (``salvage_steps``)."""
    report = plan_salvage(pdir, kafka_version=kafka_version, now_ms=now_ms, allow_lost_marker=allow_lost_marker,
                          allow_unknown_in_transaction=allow_unknown_in_transaction,
                          index_interval_bytes=index_interval_bytes, segment_index_bytes=segment_index_bytes)
    return repair_plan.RepairPlan(pdir, report, lambda: salvage_steps(report))
