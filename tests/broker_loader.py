"""An independent model of what a broker does when it loads a partition directory, for crash tests.

Written from Kafka's sources (trunk 1eb7644), not from kafkalog's code, so that a kill at any step of a kafkalog
write can be replayed "as if a broker started right then":

* ``LogLoader.removeTempFilesAndCollectSwapFiles`` (LogLoader.java:260-313): delete ``*.deleted``; delete every
  ``.swap`` whose base offset is >= the smallest ``.cleaned`` base, then every ``.cleaned``. A ``.cleaned`` or
  ``.swap`` whose name does not start with a number makes ``offsetFromFile`` throw: the broker fails to start.
* ``LogLoader.load`` passes 1-3 (LogLoader.java:138-191): each valid *log* ``.swap`` is opened with its
  ``.index.swap`` (``LogSegment.open(..., SWAP_FILE_SUFFIX)``) to get ``readNextOffset``; when that index swap is
  missing, ``AbstractIndex`` creates it preallocated and zero-filled, and pass 3 installs it (recorded here in
  ``fabricated_indexes``). Non-swap files with an offset in [min swap base, max swap next offset) are deleted, then
  every ``.swap`` is renamed into place.
* ``loadSegmentFiles`` (LogLoader.java:356-390): index files without a ``.log`` are deleted; a segment whose
  offset index is missing or fails ``sanityCheck`` is recovered (indexes rebuilt: data unchanged).
* ``recoverLog`` (LogLoader.java:464-520): without ``.kafka_cleanshutdown`` every segment at or above the recovery
  point is validated; at the first invalid batch the segment is truncated and every later segment deleted.

The result is the data the broker would serve: (base offset, log bytes) per segment and the log end offset.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import struct
from dataclasses import dataclass, field

from kafka.record.default_records import DefaultRecordBatch

SUFFIXES = (".log", ".index", ".timeindex", ".txnindex")


class BrokerFails(Exception):
    """The broker would refuse to load this directory (e.g. NumberFormatException on a file name)."""


@dataclass
class Loaded:
    # (base offset, sha256 of the log bytes, of the .index, of the .timeindex; None: missing, the broker rebuilds it)
    segments: list[tuple] = field(default_factory=list)
    log_end_offset: int = 0
    fabricated_indexes: list[int] = field(default_factory=list)

    @property
    def view(self) -> tuple:
        return tuple(self.segments), self.log_end_offset


def _offset(name: str) -> int:
    """LogFileUtils.offsetFromFile: the text before the first '.' as a long (NumberFormatException otherwise)."""
    head = name.split(".", 1)[0]
    if not head.isdigit():
        raise ValueError(name)
    return int(head)


def _batches(data: bytes) -> list[tuple[int, int, int, int]]:
    """(position, base offset, next offset, size) of each valid v2 batch, stopping at the first invalid one."""
    out, pos = [], 0
    while pos + 61 <= len(data):
        base, length = struct.unpack_from(">qi", data, pos)
        if length < 49 or pos + 12 + length > len(data):
            break
        b = DefaultRecordBatch(data[pos:pos + 12 + length])
        if not b.validate_crc():
            break
        (delta,) = struct.unpack_from(">i", data, pos + 23)
        out.append((pos, base, base + delta + 1, 12 + length))
        pos += 12 + length
    return out


def _next_offset(data: bytes, base: int) -> int:
    bs = _batches(data)
    return bs[-1][2] if bs else base


def _sha(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except FileNotFoundError:
        return None


def _recovery_point(logdir: str, partition: str) -> int:
    path = os.path.join(logdir, "recovery-point-offset-checkpoint")
    if not os.path.exists(path):
        return 0
    topic, _, num = partition.rpartition("-")
    for line in open(path).read().splitlines()[2:]:
        parts = line.split()
        if len(parts) == 3 and parts[0] == topic and parts[1] == num:
            return int(parts[2])
    return 0


def load(pdir: str, scratch: str) -> Loaded:
    """Replay the broker's loader on a copy of ``pdir`` made in ``scratch`` (the loader changes files)."""
    logdir = os.path.dirname(os.path.abspath(pdir))
    d = os.path.join(scratch, os.path.basename(os.path.abspath(pdir)))
    shutil.rmtree(scratch, ignore_errors=True)
    shutil.copytree(pdir, d)
    names = sorted(os.listdir(d))
    # removeTempFilesAndCollectSwapFiles
    swaps, cleaned = [], []
    for n in names:
        if n.endswith(".deleted"):
            os.unlink(os.path.join(d, n))
        elif n.endswith(".cleaned"):
            try:
                cleaned.append(_offset(n))
            except ValueError:
                raise BrokerFails(f"NumberFormatException on {n}") from None
        elif n.endswith(".swap"):
            swaps.append(n)
    min_cleaned = min(cleaned) if cleaned else None
    valid = []
    for n in swaps:
        try:
            off = _offset(n)
        except ValueError:
            raise BrokerFails(f"NumberFormatException on {n}") from None
        if min_cleaned is not None and off >= min_cleaned:
            os.unlink(os.path.join(d, n))
        else:
            valid.append(n)
    for n in names:
        if n.endswith(".cleaned"):
            os.unlink(os.path.join(d, n))
    # pass 1: offset range of the log swaps
    lo, hi, fabricated = None, None, []
    for n in valid:
        stem = n[: -len(".swap")]
        if not stem.endswith(".log"):
            continue
        base = _offset(n)
        if not os.path.exists(os.path.join(d, stem[:-4] + ".index.swap")):
            fabricated.append(base)  # AbstractIndex creates it, pass 3 installs a zero-filled index
            open(os.path.join(d, stem[:-4] + ".index.swap"), "wb").write(b"\0" * 80)
        nxt = _next_offset(open(os.path.join(d, n), "rb").read(), base)
        lo = base if lo is None else min(lo, base)
        hi = nxt if hi is None else max(hi, nxt)
    # pass 2: delete what the swaps replace
    if lo is not None:
        for n in os.listdir(d):
            if n.endswith(".swap"):
                continue
            try:
                off = _offset(n)
            except ValueError:
                continue
            if lo <= off < hi:
                os.unlink(os.path.join(d, n))
    # pass 3: install the swaps
    for n in os.listdir(d):
        if n.endswith(".swap"):
            os.replace(os.path.join(d, n), os.path.join(d, n[: -len(".swap")]))
    # loadSegmentFiles
    segs = []
    for n in sorted(os.listdir(d)):
        if n.endswith(SUFFIXES[1:]) and not os.path.exists(os.path.join(d, n.split(".", 1)[0] + ".log")):
            os.unlink(os.path.join(d, n))
        elif n.endswith(".log"):
            segs.append((_offset(n), open(os.path.join(d, n), "rb").read()))
    idx = {}
    for base, _data in segs:
        stem = os.path.join(d, f"{base:020d}")
        idx[base] = tuple(_sha(stem + ext) for ext in (".index", ".timeindex"))
    # recoverLog
    clean = os.path.exists(os.path.join(logdir, ".kafka_cleanshutdown"))
    rp = _recovery_point(logdir, os.path.basename(d))
    if not clean:
        for i, (base, data) in enumerate(segs):
            if base < rp:
                continue
            bs = _batches(data)
            valid_bytes = bs[-1][0] + bs[-1][3] if bs else 0
            if valid_bytes < len(data):
                segs = segs[:i] + [(base, data[:valid_bytes])]
                break
    if not segs:
        segs = [(0, b"")]
    out = Loaded([(b, hashlib.sha256(data).hexdigest(), *idx.get(b, (None, None))) for b, data in segs],
                 _next_offset(segs[-1][1], segs[-1][0]),
                 [b for b in fabricated if any(b == s for s, _ in segs)])
    return out


def prefix_of(view: tuple, old: tuple) -> bool:
    """True when ``view`` is ``old`` minus some of its last segments (what a broker loads mid-truncation, in Kafka's
    own ``LocalLog.truncateTo`` as well: later segments are deleted before the cut segment is truncated)."""
    segs, _leo = view
    old_segs, _ = old
    return 0 < len(segs) < len(old_segs) and tuple(old_segs[: len(segs)]) == tuple(segs)
