"""``kafkalog replay``'s outputs about offsets: the offset map, and the consumer groups' reset CSVs.

Why a module of its own: the offset map (source topic, partition, offset -> destination topic, partition, offset,
one CSV line per replayed record, from the producer's delivery reports) is what lets anyone translate a position
in the old partitions into the new topic; the reset CSVs are that translation done for every consumer group found
in the source log dirs' ``__consumer_offsets``, in the file format ``kafka-consumer-groups.sh --reset-offsets
--from-file`` reads. Nothing here prints or talks to a cluster.

The reset rule: a group that committed offset C on source partition (t, p) has consumed every record of (t, p) below
C. In the destination it must land on the first replayed record with a source offset >= C. Per destination
partition the CSV line is the lowest destination offset of a replayed record that group has not consumed yet, or,
when it consumed every one, the offset after the last of them. With the same partition numbers (the default) each
destination partition holds one source partition, so this is exactly "the first replayed record with source offset
>= C"; with ``--partitioner murmur2`` several source partitions mix in one destination partition and the lowest
unconsumed offset means some records the group had consumed are read again (counted as ``reread``), never one
skipped. A committed offset past the last replayed record (the group had read everything, or committed past the
log end) lands after the last replayed record; one on an aborted, control or corrupt record lands on the next
replayed one. Source partitions the group never committed on do not position it (its ``auto.offset.reset``
decides there), and a destination partition holding none of its committed partitions gets no line.

``kafka-consumer-groups.sh`` reads the file in ConsumerGroupCommand.parseResetPlan (tools/src/main/java/org/apache/
kafka/tools/consumer/group/ConsumerGroupCommand.java:951-991, apache/kafka 1eb7644): with one ``--group`` the lines
are ``topic,partition,offset`` (CsvUtils.CsvRecordNoGroup), otherwise ``group,topic,partition,offset``
(CsvRecordWithGroup); no header line, split on ``\\n``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

MAP_HEADER = "source_topic,source_partition,source_offset,topic,partition,offset\n"
_SAFE = re.compile(r"[A-Za-z0-9._-]*\Z")  # every legal Kafka topic name


def csv_field(s: str) -> str:
    """A topic name as a CSV field (quoted only if it is not a legal Kafka topic name)."""
    return s if _SAFE.match(s) else '"' + s.replace('"', '""') + '"'


def map_line(st: str, sp: int, so: int, dt: str, dp: int, do: int) -> str:
    return f"{csv_field(st)},{sp},{so},{csv_field(dt)},{dp},{do}\n"


def read_map(path: str) -> Iterator[tuple[str, int, int, str, int, int]]:
    """The offset map's rows (header skipped)."""
    import csv

    with open(path, encoding="utf-8", newline="") as f:
        rows = csv.reader(f)
        for i, row in enumerate(rows):
            if i == 0 and row and row[0] == "source_topic":
                continue
            st, sp, so, dt, dp, do = row
            yield st, int(sp), int(so), dt, int(dp), int(do)


@dataclass
class GroupReset:
    """One group's position in the destination: partition -> offset, and what the rule had to decide."""

    group: str
    committed: dict[tuple[str, int], int]  # source (topic, partition) -> committed offset
    deleted: list[tuple[str, int]] = field(default_factory=list)  # commits a later tombstone deleted (kept here)
    offsets: dict[int, int] = field(default_factory=dict)  # destination partition -> offset
    past_end: list[tuple[str, int]] = field(default_factory=list)  # committed past the last replayed record
    reread: int = 0  # murmur2: records the group had consumed that it reads again
    file: str | None = None


def compute_resets(map_path: str, groups: dict[str, dict[tuple[str, int], int]]) -> dict[str, GroupReset]:
    """Each group's destination offsets from the offset map (one streaming pass)."""
    out = {g: GroupReset(g, dict(c)) for g, c in groups.items()}
    by_source: dict[tuple[str, int], list[tuple[GroupReset, int]]] = {}
    for g in out.values():
        for src, c in g.committed.items():
            by_source.setdefault(src, []).append((g, c))
    first_unconsumed: dict[tuple[str, int], int] = {}  # (group, dest partition) -> lowest unconsumed dest offset
    last_consumed: dict[tuple[str, int], int] = {}
    seen_unconsumed: set[tuple[str, tuple[str, int]]] = set()  # (group, source partition): a record at or past C
    for st, sp, so, _dt, dp, do in read_map(map_path):
        for g, c in by_source.get((st, sp), ()):
            slot = (g.group, dp)
            if so >= c:
                seen_unconsumed.add((g.group, (st, sp)))
                if slot not in first_unconsumed or do < first_unconsumed[slot]:
                    first_unconsumed[slot] = do
            elif do > last_consumed.get(slot, -1):
                last_consumed[slot] = do
    for (group, dp), do in first_unconsumed.items():
        out[group].offsets[dp] = do
    for (group, dp), do in last_consumed.items():
        out[group].offsets.setdefault(dp, do + 1)
    if any(do < last_consumed.get(slot, -1) for slot, do in first_unconsumed.items()):
        # source partitions mixed in one destination partition (murmur2): count the records read again
        for st, sp, so, _dt, dp, do in read_map(map_path):
            for g, c in by_source.get((st, sp), ()):
                if so < c and do > g.offsets.get(dp, do):
                    g.reread += 1
    for g in out.values():
        g.past_end = sorted(src for src in g.committed if (g.group, src) not in seen_unconsumed)
    return out


def _group_file_name(group: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", group) or "_"
    return f"reset-{safe}.csv"


def write_resets(resets: dict[str, GroupReset], topic: str, out_dir: str) -> str | None:
    """One ``reset-<group>.csv`` (``topic,partition,offset``: for ``--group G --from-file``) per group with a
    position, and ``reset-all-groups.csv`` (``group,topic,partition,offset``: for several ``--group`` or
    ``--all-groups``). Written via a temporary name and a rename. Returns the all-groups file (None: no group)."""
    from kafkalog_cli.ops.safety.files import fsync_dir

    os.makedirs(out_dir, exist_ok=True)
    every: list[str] = []
    used: set[str] = set()
    for g in sorted(resets.values(), key=lambda r: r.group):
        if not g.offsets:
            continue
        name = _group_file_name(g.group)
        n = 1
        while name in used:  # two group ids that sanitise alike
            n += 1
            name = _group_file_name(f"{g.group}.{n}")
        used.add(name)
        lines = [f"{csv_field(topic)},{dp},{off}\n" for dp, off in sorted(g.offsets.items())]
        every += [f"{csv_field(g.group)},{line}" for line in lines]
        g.file = os.path.join(out_dir, name)
        _write(g.file, "".join(lines))
    if not every:
        return None
    path = os.path.join(out_dir, "reset-all-groups.csv")
    _write(path, "".join(every))
    fsync_dir(out_dir)
    return path


def _write(path: str, text: str) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8", newline="") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
