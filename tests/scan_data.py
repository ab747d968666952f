"""A generated multi-partition log directory for the scan tests (both engines read the same one).

What it holds, and what the scan must find in it:
- ``orders-0``: 3 segments, one idempotent producer across them, codecs none/gzip/lz4/zstd/snappy, leader epochs 0..2,
  and one producer sequence gap in the third segment (``sequence-gap``);
- ``orders-1``: 2 segments, a batch whose payload byte was flipped (``crc-mismatch``; the batch after it must still
  be found) and a batch whose maxTimestamp goes back in time (``timestamp-order``);
- ``my-topic.v2-3``: a topic name with '-' and '.', legacy v0 and v1 messages, then a truncated batch at the tail;
- ``events-0``: a transaction (two transactional batches and a COMMIT control batch) and a garbage region
  (a size field below 14) in the middle with a good batch after it;
- ``orders-2.<uuid>-future``: a replica being moved (topic orders, partition 2).
"""

from __future__ import annotations

import struct
from pathlib import Path

from realdata_path import REALDATA

from kafkalog_cli.format import codecs
from kafkalog_cli.format.encoder import RecordSpec, encode_batch, encode_legacy_message

T0 = 1_700_000_000_000


def _recs(n: int, ts: int, tag: str) -> list[RecordSpec]:
    return [RecordSpec(key=f"{tag}-k{i}".encode(), value=(f"{tag}-value-{i}-" * 4).encode(),
                       headers=[("trace", b"x"), ("src", None)] if i % 2 else [], timestamp=ts + i)
            for i in range(n)]


def _segment(part: Path, base: int, batches: list[bytes]) -> None:
    (part / f"{base:020d}.log").write_bytes(b"".join(batches))


def make_logdir(root: Path) -> Path:
    logdir = root / "kafka-logs"
    codec_cycle = [codecs.NONE, codecs.GZIP, codecs.LZ4, codecs.ZSTD, codecs.SNAPPY]

    # orders-0: 3 segments x 4 batches of 5 records, producer 4242 epoch 0, sequences contiguous except one gap
    p = logdir / "orders-0"
    p.mkdir(parents=True)
    offset, seq, i = 0, 0, 0
    for seg in range(3):
        base = offset
        batches = []
        for _ in range(4):
            if seg == 2 and len(batches) == 2:
                seq += 7  # the gap
            batches.append(encode_batch(_recs(5, T0 + offset * 10, "o0"), base_offset=offset,
                                        codec=codec_cycle[i % 5], producer_id=4242, producer_epoch=0,
                                        base_sequence=seq, partition_leader_epoch=seg))
            offset += 5
            seq += 5
            i += 1
        _segment(p, base, batches)

    # orders-1: 2 segments; a corrupt batch; a timestamp going backwards
    p = logdir / "orders-1"
    p.mkdir()
    seg0 = [encode_batch(_recs(3, T0 + k * 100, "o1"), base_offset=k * 3, codec=codecs.LZ4) for k in range(4)]
    bad = bytearray(seg0[1])
    bad[-3] ^= 0xFF
    seg0[1] = bytes(bad)
    _segment(p, 0, seg0)
    seg1 = [encode_batch(_recs(3, T0 + 1000, "o1"), base_offset=12),
            encode_batch(_recs(3, T0 - 5000, "o1"), base_offset=15),  # back in time
            encode_batch(_recs(3, T0 + 2000, "o1"), base_offset=18)]
    _segment(p, 12, seg1)

    # my-topic.v2-3: legacy messages then a truncated v2 batch
    p = logdir / "my-topic.v2-3"
    p.mkdir()
    entries = [encode_legacy_message(offset=0, key=b"a", value=b"v0 message", magic=0),
               encode_legacy_message(offset=1, key=None, value=b"v1 message", magic=1, timestamp=T0),
               encode_legacy_message(offset=2, key=b"c", value=None, magic=1, timestamp=T0 + 1)]
    tail = encode_batch(_recs(4, T0 + 10, "t"), base_offset=3)
    _segment(p, 0, entries + [tail[: len(tail) // 2]])

    # events-0: a committed transaction, then garbage, then a good batch
    p = logdir / "events-0"
    p.mkdir()
    txn = [encode_batch(_recs(2, T0, "e"), base_offset=0, producer_id=7, producer_epoch=3, base_sequence=0,
                        transactional=True),
           encode_batch(_recs(2, T0 + 5, "e"), base_offset=2, producer_id=7, producer_epoch=3, base_sequence=2,
                        transactional=True),
           encode_batch([RecordSpec(key=struct.pack(">hh", 0, 1), value=struct.pack(">hi", 0, 0), timestamp=T0 + 9)],
                        base_offset=4, producer_id=7, producer_epoch=3, transactional=True, control=True)]
    garbage = struct.pack(">qi", 5, 3) + b"\xee" * 40
    after = encode_batch(_recs(2, T0 + 20, "e"), base_offset=5, codec=codecs.ZSTD)
    _segment(p, 0, txn + [garbage, after])

    # orders-2.<uuid>-future
    p = logdir / ("orders-2." + "ab" * 16 + "-future")
    p.mkdir()
    _segment(p, 0, [encode_batch(_recs(2, T0, "f"), base_offset=0, partition_leader_epoch=5)])
    return logdir


def realdata_dirs(limit: int = 4) -> list[Path]:
    """A few partition directories of the real data (``realdata_path``: $KAFKALOG_REALDATA, default
    ../shared/realdata; empty when absent), small ones first, distinct repos."""
    root = REALDATA
    if not root.is_dir():
        return []
    seen, out = set(), []
    for log in sorted(root.rglob("*.log"), key=lambda p: (p.stat().st_size, str(p))):
        repo = log.relative_to(root).parts[0].split("@")[0]
        if repo in seen or not log.name[:20].isdigit() or log.stat().st_size == 0:
            continue
        seen.add(repo)
        out.append(log.parent)
        if len(out) >= limit:
            break
    return out


def ms(value: object) -> int | None:
    """A timestamp column value (datetime, UTC) as epoch milliseconds, None stays None."""
    if value is None:
        return None
    from datetime import datetime, timezone

    assert isinstance(value, datetime)
    delta = value - datetime(1970, 1, 1, tzinfo=timezone.utc)
    return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000


def load_sorted(out_dir: str | Path, name: str) -> list[dict]:
    """A dataset's rows as dicts (our schema), sorted by every column, for engine-to-engine comparison."""
    from kafkalog_cli.scan.output import read_dataset

    rows = read_dataset(str(out_dir), name).to_pylist()
    return sorted(rows, key=lambda r: tuple((v is None, repr(v)) for v in r.values()))


def _flip(batch: bytes, at: int = -3) -> bytes:
    b = bytearray(batch)
    b[at] ^= 0xFF
    return bytes(b)


def make_corrupt_fleet(root: Path) -> tuple[Path, int]:
    """A log directory whose segments have CRC failures in every position a walk can get wrong: (logdir, number of
    batches whose CRC fails). Kept small: a few KB in all.

    - ``crc-0``: a flipped batch first, in the middle, two in a row, and last;
    - ``crc-1``: a flipped batch followed by garbage (its region does not end where its size says);
    - ``crc-2``: a v1 message with a flipped byte between good ones, then a flipped v2 batch;
    - ``crc-3``: a flipped batch, a zero-filled gap, a flipped batch, a good one: verify-crc reports ONE region from
      the first flipped batch to the good one (nothing valid lies between), so that counts as one batch here;
    - ``empty-0``: two empty segments (the partition must still be listed);
    - ``big-0``: batches larger than a small test window, one of them flipped.
    """
    logdir = root / "fleet"
    bad = 0

    def good(k: int, n: int = 3, size: int = 1) -> bytes:
        return encode_batch(_recs(n, T0 + k * 10, "c" * size), base_offset=k * 10)

    p = logdir / "crc-0"
    p.mkdir(parents=True)
    seg = [good(k) for k in range(8)]
    for k in (0, 3, 4, 7):
        seg[k] = _flip(seg[k])
        bad += 1
    _segment(p, 0, seg)

    p = logdir / "crc-1"
    p.mkdir()
    _segment(p, 0, [good(0), _flip(good(1)), b"\x13" * 50, good(2)])
    bad += 1

    p = logdir / "crc-2"
    p.mkdir()
    legacy = [encode_legacy_message(offset=k, key=b"k", value=b"legacy value", magic=1, timestamp=T0 + k)
              for k in range(3)]
    legacy[1] = _flip(legacy[1])
    _segment(p, 0, legacy + [_flip(encode_batch(_recs(2, T0, "x"), base_offset=3)),
                             encode_batch(_recs(2, T0, "y"), base_offset=5)])
    bad += 2

    p = logdir / "crc-3"
    p.mkdir()
    _segment(p, 0, [_flip(good(0)), bytes(64), _flip(good(1)), good(2)])
    bad += 1

    p = logdir / "empty-0"
    p.mkdir()
    _segment(p, 0, [])
    _segment(p, 100, [])

    p = logdir / "big-0"
    p.mkdir()
    big = [encode_batch(_recs(20, T0 + k, "big" * 30), base_offset=k * 20) for k in range(5)]
    big[2] = _flip(big[2], 100)
    _segment(p, 0, big)
    bad += 1
    return logdir, bad
