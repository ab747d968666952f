"""Seeded damage to a partition written by Kafka (tests only; issue 26): what a crash or a bad disk leaves behind.

``damage(part, seed)`` copies nothing: it mutates the files of ``part`` (a copy the caller made) and returns a short
description and the files whose dump is worth comparing. The kinds:

- ``truncate-log``: the ``.log`` cut at a random byte (a torn tail, or inside a batch header);
- ``flip-log``: one byte of the ``.log`` flipped (CRC, length, magic, attributes, record bytes: wherever it lands);
- ``codec``: an invalid compression codec id (5-7) in one entry's attributes (v2 batch or a legacy v0/v1 entry);
- ``garbage-index`` / ``garbage-timeindex``: random bytes over an index, or a length that is not a multiple of the
  entry size, or zeros (a preallocated, unflushed index);
- ``missing-index``: the ``.index`` beside a ``.timeindex`` deleted;
- ``garbage-snapshot`` / ``garbage-txnindex``: random or truncated bytes.
"""

from __future__ import annotations

import random
from pathlib import Path

KINDS = ("truncate-log", "flip-log", "codec", "garbage-index", "garbage-timeindex", "missing-index",
         "garbage-snapshot", "garbage-txnindex")


def _entries(data: bytes) -> list[tuple[int, int, int]]:
    """(position, size, magic) of each complete entry (length field + 12)."""
    out = []
    pos = 0
    while pos + 17 <= len(data):
        size = int.from_bytes(data[pos + 8:pos + 12], "big") + 12
        if size < 14 or pos + size > len(data):
            break
        out.append((pos, size, data[pos + 16]))
        pos += size
    return out


def damage(part: Path, seed: int, kind: str | None = None) -> tuple[str, list[Path]]:
    rng = random.Random(seed)
    kind = kind or rng.choice(KINDS)
    logs = sorted(part.glob("*.log"))
    log = rng.choice(logs)
    stem = log.name[: -len(".log")]
    sib = {s: part / (stem + s) for s in (".index", ".timeindex", ".txnindex")}
    data = bytearray(log.read_bytes())
    if kind == "truncate-log" and data:
        cut = rng.randrange(len(data))
        log.write_bytes(bytes(data[:cut]))
        return f"{kind} {log.name} at {cut}", [log, sib[".index"], sib[".timeindex"]]
    if kind == "flip-log" and data:
        at = rng.randrange(len(data))
        data[at] ^= 1 << rng.randrange(8)
        log.write_bytes(bytes(data))
        return f"{kind} {log.name} byte {at}", [log, sib[".index"], sib[".timeindex"]]
    if kind == "codec":
        ents = _entries(bytes(data))
        if ents:
            pos, _size, magic = rng.choice(ents)
            at = pos + (22 if magic >= 2 else 17)  # v2: low byte of the int16 attributes; v0/v1: the attributes byte
            data[at] = (data[at] & ~0x07) | rng.choice([5, 6, 7])
            log.write_bytes(bytes(data))
            return f"{kind} {log.name} entry at {pos} (magic {magic})", [log]
    if kind in ("garbage-index", "garbage-timeindex"):
        f = sib[".index" if kind == "garbage-index" else ".timeindex"]
        if f.exists():
            how = rng.choice(["random", "odd", "zeros", "overwrite"])
            unit = 8 if kind == "garbage-index" else 12
            size = f.stat().st_size
            if how == "random":
                f.write_bytes(bytes(rng.randrange(256) for _ in range(unit * rng.randint(1, 6))))
            elif how == "odd":
                f.write_bytes(f.read_bytes() + bytes(rng.randrange(256) for _ in range(rng.randint(1, unit - 1))))
            elif how == "zeros":
                f.write_bytes(b"\0" * (unit * rng.randint(1, 8)))
            else:
                b = bytearray(f.read_bytes() or b"\0" * unit)
                b[rng.randrange(len(b))] = rng.randrange(256)
                f.write_bytes(bytes(b))
            return f"{kind} {f.name} {how} (was {size} bytes)", [f]
    if kind == "missing-index" and sib[".timeindex"].exists() and sib[".index"].exists():
        sib[".index"].unlink()
        return f"{kind} {sib['.index'].name}", [sib[".timeindex"]]
    if kind == "garbage-snapshot":
        snaps = sorted(part.glob("*.snapshot"))
        if snaps:
            s = rng.choice(snaps)
            b = bytearray(s.read_bytes())
            if b and rng.random() < 0.5:
                s.write_bytes(bytes(b[: rng.randrange(len(b))]))
            elif b:
                b[rng.randrange(len(b))] ^= 0xFF
                s.write_bytes(bytes(b))
            return f"{kind} {s.name}", [s]
    if kind == "garbage-txnindex" and sib[".txnindex"].exists():
        t = sib[".txnindex"]
        b = bytearray(t.read_bytes())
        if b:
            b[rng.randrange(len(b))] = rng.randrange(256)
        else:
            b = bytearray(rng.randrange(256) for _ in range(rng.randint(1, 40)))
        t.write_bytes(bytes(b))
        return f"{kind} {t.name}", [t]
    # the chosen damage does not apply to this partition: flip a byte of the log instead
    return damage(part, seed, "flip-log") if kind != "flip-log" else ("none", [])


def legacy(plan: dict, magic: int) -> dict:
    """``plan`` on a topic of message format v0/v1 (``message.format.version`` 0.9.0 / 0.10.2): no headers, no
    producer ids, no transactions (markers dropped), every append built at ``magic``."""
    p = dict(plan, config=dict(plan["config"], **{"message.format.version": "0.9.0" if magic == 0 else "0.10.2"}))
    p["config"].pop("message.timestamp.type", None) if magic == 0 else None
    ops = []
    for op in plan["ops"]:
        if op["op"] == "marker":
            continue
        if op["op"] == "append":
            op = {k: v for k, v in op.items() if k not in ("producerId", "producerEpoch", "transactional")}
            op["magic"] = magic
            if op.get("codec") == "zstd":  # zstd needs v2
                op["codec"] = "lz4"
            if "records" in op:
                op["records"] = [{k: v for k, v in r.items() if k != "headers"} for r in op["records"]]
        ops.append(op)
    p["ops"] = ops
    return p
