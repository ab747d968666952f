"""Companion files of a partition: producer snapshots, transaction indexes, checkpoint-format text files,
``partition.metadata`` and KRaft snapshot names. Spec §7.
"""

from __future__ import annotations

import base64
import os
import re
from dataclasses import dataclass

from kafkalog_cli.errors import CheckpointError, CorruptSnapshotError
from kafkalog_cli.format.crc import crc32c
from kafkalog_cli.format.layouts import INT32, PRODUCER_SNAPSHOT_ENTRY, PRODUCER_SNAPSHOT_HEADER, TXN_INDEX_ENTRY
from kafkalog_cli.storage.layout import base_offset_of  # noqa: F401  (one rule, in storage.layout; used as comp.base_offset_of)
from kafkalog_cli.storage.partition_name import java_parse_int as parse_java_int

# ------------------------------------------------------------------------------------------ producer snapshot
SNAPSHOT_ENTRY = PRODUCER_SNAPSHOT_ENTRY.struct  # 46 bytes
SNAPSHOT_HEADER = PRODUCER_SNAPSHOT_HEADER.struct  # version, crc, producer_entries (count): 10 bytes
_ENTRY_SIZE = PRODUCER_SNAPSHOT_ENTRY.size
_HEADER_SIZE = PRODUCER_SNAPSHOT_HEADER.size
_CRC_START = PRODUCER_SNAPSHOT_HEADER.offset("producer_entries")  # 6: the CRC-32C covers the count and the entries
SNAPSHOT_VERSION = 1


@dataclass
class ProducerEntry:
    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_offset: int
    offset_delta: int
    timestamp: int
    coordinator_epoch: int
    current_txn_first_offset: int


@dataclass
class ProducerSnapshot:
    version: int
    crc: int
    entries: list[ProducerEntry]


def parse_producer_snapshot(buf: bytes | memoryview, path: str = "", version_first: bool = False) -> ProducerSnapshot:
    """Parse and validate a ``.snapshot`` file (version int16 = 1, crc uint32 = CRC-32C of [6:], entries).

    ``version_first``: check the version before reading the rest, as the generated reader of Kafka 4.0+ does
    (ProducerStateManager.readSnapshot, ProducerStateManager.java:626-629); older readers parse the whole struct first.

    Raises CorruptSnapshotError with ``.kind`` set to ``version``, ``schema`` (with ``.field``/``.detail`` naming
    what ran out, the way Kafka's Struct reader words it) or ``crc``.
    """
    n = len(buf)

    def schema_error(field: str, detail: str) -> CorruptSnapshotError:
        err = CorruptSnapshotError(f"Error reading field '{field}': {detail}", file=path)
        err.kind = "schema"  # type: ignore[attr-defined]
        err.field = field  # type: ignore[attr-defined]
        err.detail = detail  # type: ignore[attr-defined]
        return err

    if version_first and n >= 2 and int.from_bytes(buf[0:2], "big", signed=True) != SNAPSHOT_VERSION:
        err = CorruptSnapshotError(f"Snapshot contained an unknown file version "
                                   f"{int.from_bytes(buf[0:2], 'big', signed=True)}", file=path)
        err.kind = "version"  # type: ignore[attr-defined]
        raise err
    for hf in PRODUCER_SNAPSHOT_HEADER.fields:  # name the header field that runs out (Kafka's field names)
        if n < hf.end:
            raise schema_error(hf.name, "java.nio.BufferUnderflowException")
    version, crc, count = SNAPSHOT_HEADER.unpack_from(buf, 0)
    if count < 0:
        err = schema_error("producer_entries", f"Array size {count} cannot be negative")
        err.generated = "non-nullable field producerEntries was serialized as null"  # type: ignore[attr-defined]
        raise err
    if count > n - _HEADER_SIZE:
        err = schema_error("producer_entries", f"Error reading array of size {count}, only {n - _HEADER_SIZE} bytes available")
        # the generated ProducerSnapshot reader's words for the same check (4.0+)
        err.generated = (f"Tried to allocate a collection of size {count}, but there are only "  # type: ignore[attr-defined]
                         f"{n - _HEADER_SIZE} bytes remaining.")
        raise err
    entries = []
    pos = _HEADER_SIZE
    for _ in range(count):
        if pos + _ENTRY_SIZE > n:
            for ef in PRODUCER_SNAPSHOT_ENTRY.fields:  # name the field that runs out
                if pos + ef.end > n:
                    raise schema_error("producer_entries", f"Error reading field '{ef.name}': java.nio.BufferUnderflowException")
        entries.append(ProducerEntry(*SNAPSHOT_ENTRY.unpack_from(buf, pos)))
        pos += _ENTRY_SIZE
    if version != SNAPSHOT_VERSION:
        err = CorruptSnapshotError(f"Snapshot contained an unknown file version {version}", file=path)
        err.kind = "version"  # type: ignore[attr-defined]
        raise err
    computed = crc32c(buf[_CRC_START:])
    if computed != crc:
        err = CorruptSnapshotError(f"Snapshot is corrupt (CRC is no longer valid). Stored crc: {crc}. Computed crc: {computed}", file=path)
        err.kind = "crc"  # type: ignore[attr-defined]
        raise err
    return ProducerSnapshot(version, crc, entries)


def encode_producer_snapshot(entries: list[ProducerEntry]) -> bytes:
    packed = b"".join(
        SNAPSHOT_ENTRY.pack(
            e.producer_id, e.producer_epoch, e.last_sequence, e.last_offset, e.offset_delta, e.timestamp,
            e.coordinator_epoch, e.current_txn_first_offset,
        )
        for e in entries
    )
    crc = crc32c(INT32.pack(len(entries)) + packed)  # the CRC covers the count and the entries
    return SNAPSHOT_HEADER.pack(SNAPSHOT_VERSION, crc, len(entries)) + packed


# ------------------------------------------------------------------------------------------ transaction index
TXN_ENTRY = TXN_INDEX_ENTRY.struct  # 34 bytes
_TXN_SIZE = TXN_INDEX_ENTRY.size


@dataclass
class AbortedTxn:
    version: int
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int

    @property
    def kafka_version(self) -> int:
        """The version Kafka checks: the FIRST BYTE of the int16 field, as a signed byte (AbortedTxn.version() is
        ``buffer.get(VERSION_OFFSET)``, storage/src/main/java/org/apache/kafka/storage/internals/log/
        AbortedTxn.java:65-67; TransactionIndex.java:247-249 throws for a version > 0). 0x00XX passes."""
        v = (self.version >> 8) & 0xFF
        return v - 0x100 if v >= 0x80 else v


def parse_txn_index(buf: bytes | memoryview) -> list[AbortedTxn]:
    """Complete entries (TXN_INDEX_ENTRY, 34 bytes); a trailing partial entry is ignored (as Kafka's reader does)."""
    out = []
    for pos in range(0, len(buf) - len(buf) % _TXN_SIZE, _TXN_SIZE):
        out.append(AbortedTxn(*TXN_ENTRY.unpack_from(buf, pos)))
    return out


def encode_txn_index(entries: list[AbortedTxn]) -> bytes:
    return b"".join(TXN_ENTRY.pack(e.version, e.producer_id, e.first_offset, e.last_offset, e.last_stable_offset) for e in entries)


# ------------------------------------------------------------------------------------------ checkpoint files
@dataclass
class Checkpoint:
    version: int
    entries: list[list[str]]


_JAVA_WS = re.compile(r"[ \t\n\x0b\f\r]+")  # Java's \s


def java_lines(text: str) -> list[str]:
    """BufferedReader.readLine semantics: \n, \r or \r\n end a line; a final line break adds no empty line."""
    lines = re.split(r"\r\n|\r|\n", text)
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def java_split_ws(line: str) -> list[str]:
    """String.split("\\s+"): a leading separator gives an empty first token, trailing empty tokens are dropped."""
    parts = _JAVA_WS.split(line)
    while len(parts) > 1 and parts[-1] == "":
        parts.pop()
    return parts


def java_parse_int(text: str, bits: int = 32) -> int:
    """Integer.parseInt / Long.parseLong (``partition_name.java_parse_int``: an optional sign, decimal digits of any
    script as ``Character.digit``, no spaces, within range); ValueError where Java throws."""
    v = parse_java_int(text, bits)
    if v is None:
        raise ValueError(text)
    return v


def parse_checkpoint(text: str, path: str = "", *, columns: int | None = None) -> Checkpoint:
    """Kafka's CheckpointFile reader, exactly: a version line (must be 0), a count line, then every following line
    is an entry (a blank line is a malformed entry); the count must match. Anything the broker would refuse raises
    CheckpointError with the broker's message (a malformed checkpoint takes the log directory offline, errata E7)."""

    def malformed(line: str, pos: int | None) -> CheckpointError:
        return CheckpointError(f"Malformed line in checkpoint file [{path}]: {line}", file=path, position=pos)

    lines = java_lines(text)
    if not lines:
        return Checkpoint(0, [])
    try:
        version = java_parse_int(lines[0])
    except ValueError:
        raise malformed(lines[0], 0) from None
    if version != 0:
        raise CheckpointError(f"Unrecognised version:{version}, file:{path}", file=path, position=0)
    if len(lines) < 2:
        return Checkpoint(version, [])
    try:
        count = java_parse_int(lines[1])
    except ValueError:
        raise malformed(lines[1], len(lines[0]) + 1) from None
    entries = []
    byte_pos = len(lines[0]) + 1 + len(lines[1]) + 1
    for line in lines[2:]:
        parts = java_split_ws(line)
        if columns is not None and len(parts) != columns:
            raise malformed(line, byte_pos)
        entries.append(parts)
        byte_pos += len(line) + 1
    if len(entries) != count:
        raise CheckpointError(
            f"Expected [{count}] entries in checkpoint file [{path}], but found only [{len(entries)}]",
            file=path,
            expected=str(count),
            found=str(len(entries)),
        )
    return Checkpoint(version, entries)


def checkpoint_entry(cp: Checkpoint, topic: str, partition: str) -> str | None:
    """The offset text of ``topic partition`` in a parsed broker checkpoint, None when it has no entry.

    The broker reads these files into a map in file order (OffsetCheckpointFile.read: ``result.put`` per entry,
    OffsetCheckpointFile.java:65-69), so when a partition is named twice the LAST entry wins. Every reader of a
    partition's checkpoint entry (recover/salvage, replicas, compact, explain) goes through this rule."""
    found: str | None = None
    want = parse_java_int(partition)
    for t, p, off in cp.entries:
        # the key is TopicPartition(topic, Integer.parseInt(partition)) (OffsetCheckpointFile.java:86-88): "00" and
        # "+0" name partition 0
        if t == topic and want is not None and parse_java_int(p) == want:
            found = off
    return found


def partition_checkpoint_offset(log_dir: str, topic: str, partition: str, filename: str) -> tuple[int | None, str]:
    """The ``topic partition`` entry of a log dir's broker checkpoint (``replication-offset-checkpoint``,
    ``log-start-offset-checkpoint``, ``cleaner-offset-checkpoint``), or ``(None, why)`` when the file is missing or
    unreadable, one the broker itself would refuse (malformed, not UTF-8), or has no numeric entry for it.

    The broker reads these files into a map, so the last entry for a partition wins. Any other exception is a bug
    and surfaces."""
    path = os.path.join(log_dir, filename)
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        return None, f"{path} does not exist"
    except OSError as exc:
        return None, f"{path} is unreadable ({exc.strerror or exc})"
    try:
        cp = parse_checkpoint(raw.decode("utf-8"), path, columns=3)
    except UnicodeDecodeError:
        return None, f"{path} is not UTF-8 text (the broker would refuse it)"
    except CheckpointError as exc:
        return None, f"{path} is malformed ({exc.describe()})"
    found = checkpoint_entry(cp, topic, partition)
    if found is None:
        return None, f"{path} has no entry for {topic}-{partition}"
    try:
        return int(found), ""
    except ValueError:
        return None, f"{path} has a non-numeric offset {found!r} for {topic}-{partition}"


def read_if_exists(path: str) -> bytes | None:
    """A small companion file's bytes, None when it does not exist."""
    if not os.path.isfile(path):
        return None
    with open(path, "rb") as f:
        return f.read()


def read_checkpoint_text(path: str) -> str:
    """A checkpoint-format file's text; bytes that are not UTF-8 are a CheckpointError (the broker's reader fails)."""
    with open(path, "rb") as f:
        try:
            raw = f.read(64 << 20)  # checkpoint files are small; a larger one is not a checkpoint
        except OSError as exc:  # a read error has no file name (`kafkalog: error: : Input/output error`): add it
            if exc.filename is not None:
                raise
            raise OSError(exc.errno, exc.strerror, path) from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CheckpointError("checkpoint file is not UTF-8 text", file=path, position=exc.start,
                              expected="UTF-8 text", found=f"byte {raw[exc.start]:#04x}") from None


def parse_leader_epoch_checkpoint(text: str, path: str = "") -> list[tuple[int, int]]:
    """(epoch, start offset) entries; epoch an int32, start offset an int64, both non-negative."""
    cp = parse_checkpoint(text, path, columns=2)
    out = []
    for parts in cp.entries:
        try:
            epoch, start = java_parse_int(parts[0], 32), java_parse_int(parts[1], 64)
        except ValueError:
            raise CheckpointError(f"Malformed line in checkpoint file [{path}]: {' '.join(parts)}", file=path) from None
        if epoch < 0 or start < 0:
            raise CheckpointError(f"Malformed line in checkpoint file [{path}]: {' '.join(parts)}", file=path)
        out.append((epoch, start))
    return out


def encode_leader_epoch_checkpoint(entries: list[tuple[int, int]]) -> str:
    return "0\n" + f"{len(entries)}\n" + "".join(f"{e} {s}\n" for e, s in entries)


def parse_partition_metadata(text: str, path: str = "") -> tuple[int, str]:
    lines = text.split("\n")
    if len(lines) < 2:
        raise CheckpointError(f"partition.metadata must have 2 lines, found {len(lines)}", file=path)
    first = lines[0].split()
    second = lines[1].split()
    if len(first) != 2 or first[0] != "version:":
        raise CheckpointError(f"Malformed version line in partition.metadata: {lines[0]}", file=path, position=0)
    try:
        version = int(first[1])
    except ValueError:
        raise CheckpointError(f"Malformed version line in partition.metadata: {lines[0]}", file=path, position=0) from None
    if version < 0:
        raise CheckpointError(f"Invalid version {version} in partition.metadata", file=path, position=0)
    if len(second) != 2 or second[0] != "topic_id:":
        raise CheckpointError(f"Malformed topic_id line in partition.metadata: {lines[1]}", file=path, position=len(lines[0]) + 1)
    pos = len(lines[0]) + 1 + lines[1].index(second[1])
    try:
        raw = uuid_from_string(second[1])
    except ValueError as exc:
        raise CheckpointError(f"Invalid topic id in partition.metadata: {exc}", file=path, position=pos,
                              expected="22 characters of URL-safe base64 encoding 16 bytes", found=second[1],
                              hint="the broker cannot load this partition (Uuid.fromString fails); the topic id is "
                                   "in the cluster metadata ('kafka-topics.sh --describe'): write it back, or move "
                                   "the file away so the broker writes it again") from None
    if raw == bytes(16):
        raise CheckpointError("partition.metadata holds the all-zero topic id", file=path, position=pos)
    return version, second[1]


def uuid_from_string(text: str) -> bytes:
    """The 16 bytes of a topic id, by Kafka's ``Uuid.fromString`` (clients/.../common/Uuid.java): at most 24
    characters, ``Base64.getUrlDecoder()`` (URL-safe alphabet, padding optional but correct when present), exactly
    16 bytes decoded. Raises ValueError with the reason, as Java's IllegalArgumentException does."""
    if len(text) > 24:
        raise ValueError(f"input string with prefix {text[:24]!r} is too long to be decoded as a base64 UUID")
    body = text.rstrip("=")
    pad = len(text) - len(body)
    bad = next((c for c in body if not (c.isascii() and (c.isalnum() or c in "-_"))), None)
    if bad is not None:
        raise ValueError(f"illegal base64 character {bad!r}")
    if len(body) % 4 == 1 or (pad and (pad > 2 or (len(body) + pad) % 4 != 0)):
        raise ValueError(f"{text!r} is not a complete base64 encoding")
    raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
    if len(raw) != 16:
        raise ValueError(f"input string {text!r} decoded as {len(raw)} bytes, which is not equal to the expected "
                         "16 bytes of a base64-encoded UUID")
    return raw


# ------------------------------------------------------------------------------------------ names
SEGMENT_NAME = re.compile(r"^(\d{20})\.(log|index|timeindex|txnindex|snapshot)$")
KRAFT_SNAPSHOT_NAME = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")


def kraft_snapshot_name(name: str) -> tuple[int, int] | None:
    """(endOffset, epoch) parsed the way Snapshots.parse does (chars 0-19 and 21-30), or None."""
    if name == "bootstrap.checkpoint" or not name.endswith(".checkpoint") or len(name) < 31:
        return None
    try:
        return java_parse_int(name[0:20], 64), java_parse_int(name[21:31], 32)
    except ValueError:
        return None
