"""Seeded damage to a partition Kafka wrote (tests only): the inputs of the recover / rebuild-index oracle tests.

``mutate(seed, pdir)`` damages the partition directory ``pdir`` (and its log dir's checkpoints and clean-shutdown
marker) the ways a crash or a bad disk leaves one: torn tails, flipped bytes, zeroed ranges, junk after the last
batch; deleted, garbage, preallocated and odd-length ``.index``/``.timeindex`` files and snapshots; deleted or
garbage ``.txnindex`` files (entries with a zero first byte, which Kafka's version check reads); leftovers of an
interrupted clean or split (``.cleaned``, ``.swap`` with or without its index swaps, ``.deleted``); the
``.kafka_cleanshutdown`` marker added or removed; the recovery-point checkpoint below, at or above the damage, or
missing. It returns what it did (one line per change), so a failing case names its damage with its seed.

The same seed always gives the same damage for the same files (``random.Random(seed)``). Nothing here knows what
Kafka does with the result: the tests ask Kafka (``kafka-real Load``) and compare.
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path

MARKER = ".kafka_cleanshutdown"
RP_FILE = "recovery-point-offset-checkpoint"

#: every kind of damage; a case draws one to three of them
KINDS = ("torn-tail", "flip", "zero-range", "zero-tail", "junk-tail", "index-delete", "index-garbage",
         "index-prealloc", "index-odd", "timeindex-delete", "timeindex-garbage", "timeindex-odd", "snapshot-delete",
         "snapshot-garbage", "snapshot-torn", "leftover-deleted", "leftover-cleaned", "leftover-swap",
         "leftover-swap-indexes", "txnindex-delete", "txnindex-garbage")

#: what a crash leaves (no disk damage): torn and zero tails of the active segment, preallocated indexes, the
#: leftovers of an interrupted clean or swap (the inputs of compact / truncate-to-epoch on crash-shutdown partitions)
CRASH_KINDS = ("torn-tail", "zero-tail", "index-prealloc", "leftover-deleted", "leftover-cleaned", "leftover-swap",
               "leftover-swap-indexes", "snapshot-delete")

#: damage that leaves the producer-state replay reading a segment through a garbage offset index (issue 26): an
#: index whose entries pass Kafka's sanity check (whole entries, last relative offset >= 0) but point anywhere (mid
#: batch, a later batch, past the end), plus an older snapshot only, so that the replay reads the segment
REPLAY_KINDS = ("index-sane-garbage", "index-sane-garbage", "index-sane-garbage", "snapshot-latest-delete",
                "snapshot-delete", "torn-tail", "junk-tail")


def _logs(pdir: Path) -> list[Path]:
    return sorted(pdir.glob("*.log"))


def _write_rp(pdir: Path, offset: int | None) -> None:
    """The log dir's recovery-point checkpoint with one entry for this partition (None: the file removed)."""
    path = pdir.parent / RP_FILE
    if offset is None:
        path.unlink(missing_ok=True)
        return
    topic, _, part = pdir.name.rpartition("-")
    path.write_text(f"0\n1\n{topic} {part} {offset}\n")


def _batch_starts(data: bytes) -> list[int]:
    """Byte positions of the entries of a .log by their length fields (stops at the first implausible one)."""
    out, pos = [], 0
    while pos + 12 <= len(data):
        size = int.from_bytes(data[pos + 8:pos + 12], "big", signed=True)
        if size < 14 or pos + 12 + size > len(data):
            break
        out.append(pos)
        pos += 12 + size
    return out


def _damage_log(rng: random.Random, kind: str, log: Path) -> str:
    data = bytearray(log.read_bytes())
    if not data:
        log.write_bytes(b"\x00" * rng.choice([5, 61]))
        return f"{log.name}: empty segment given {log.stat().st_size} zero bytes"
    starts = _batch_starts(bytes(data)) or [0]
    if kind == "torn-tail":
        cut = rng.randint(max(0, len(data) - 80), len(data) - 1)
        log.write_bytes(bytes(data[:cut]))
        return f"{log.name}: torn at byte {cut} of {len(data)}"
    if kind == "flip":
        start = rng.choice(starts)
        pos = rng.randint(start, min(len(data) - 1, start + 90))
        data[pos] ^= 1 << rng.randrange(8)
        log.write_bytes(bytes(data))
        return f"{log.name}: bit flipped at byte {pos}"
    if kind == "zero-range":
        start = rng.choice(starts)
        n = rng.randint(1, 64)
        end = min(len(data), start + rng.randint(0, 40) + n)
        data[end - n:end] = b"\x00" * (end - max(0, end - n))
        log.write_bytes(bytes(data))
        return f"{log.name}: bytes {end - n}..{end} zeroed"
    if kind == "zero-tail":
        n = rng.choice([7, 64, 500, 4096])
        log.write_bytes(bytes(data) + b"\x00" * n)
        return f"{log.name}: {n} zero bytes appended"
    n = rng.randint(1, 40)
    junk = bytes(rng.randrange(256) for _ in range(n))
    log.write_bytes(bytes(data) + junk)
    return f"{log.name}: {n} bytes of junk appended"


def _damage_index(rng: random.Random, kind: str, pdir: Path, log: Path) -> str:
    ext = "index" if kind.startswith("index") else "timeindex"
    what = kind.split("-", 1)[1]
    path = pdir / f"{log.stem}.{ext}"
    if what == "delete":
        path.unlink(missing_ok=True)
        return f"{path.name}: deleted"
    data = path.read_bytes() if path.exists() else b""
    if what == "sane-garbage":
        return _sane_garbage_index(rng, path, log)
    if what == "garbage":
        n = rng.choice([8, 12, 24, 40, 96])
        path.write_bytes(bytes(rng.randrange(256) for _ in range(n)))
        return f"{path.name}: {n} bytes of garbage"
    if what == "prealloc":
        size = rng.choice([1024, 10 * 1024 * 1024])
        size -= size % (8 if ext == "index" else 12)
        path.write_bytes(data[:size] + b"\x00" * max(0, size - len(data)))
        return f"{path.name}: preallocated to {size} bytes"
    # odd length: a few bytes more or fewer than whole entries
    if data and rng.random() < 0.5:
        path.write_bytes(data[:-rng.randint(1, 3)])
    else:
        path.write_bytes(data + bytes(rng.randrange(256) for _ in range(rng.randint(1, 5))))
    return f"{path.name}: odd length {path.stat().st_size}"


def _sane_garbage_index(rng: random.Random, path: Path, log: Path) -> str:
    """An offset index that passes OffsetIndex.sanityCheck (length a multiple of 8, last entry's relative offset >= 0)
    with entries that point anywhere: a batch start, the middle of a batch, past the end of the file; offsets in
    order or not."""
    data = log.read_bytes()
    starts = _batch_starts(data) or [0]
    n = rng.randint(1, 5)
    entries = []
    for _ in range(n):
        rel = rng.randint(0, max(1, len(starts) * 3))
        pos = rng.choice([rng.choice(starts), rng.randint(0, max(1, len(data) + 200)),
                          rng.choice(starts) + rng.randint(1, 60), len(data) + rng.randint(0, 500)])
        entries.append((rel, pos))
    if rng.random() < 0.7:
        entries.sort()
    path.write_bytes(b"".join(r.to_bytes(4, "big") + p.to_bytes(4, "big") for r, p in entries))
    return f"{path.name}: {n} sane garbage entries {entries}"


def _damage_txnindex(rng: random.Random, kind: str, pdir: Path, log: Path) -> str:
    path = pdir / f"{log.stem}.txnindex"
    if kind == "txnindex-delete":
        path.unlink(missing_ok=True)
        return f"{path.name}: deleted"
    n = rng.choice([5, 34, 68])
    path.write_bytes(bytes([0]) + bytes(rng.randrange(256) for _ in range(n - 1)))  # version 0, garbage fields
    return f"{path.name}: {n} bytes of garbage"


def _damage_snapshot(rng: random.Random, kind: str, pdir: Path) -> str | None:
    snaps = sorted(pdir.glob("*.snapshot"))
    if not snaps:
        return None
    snap = snaps[-1] if kind == "snapshot-latest-delete" else rng.choice(snaps)
    if kind in ("snapshot-delete", "snapshot-latest-delete"):
        snap.unlink()
        return f"{snap.name}: deleted"
    data = snap.read_bytes()
    if kind == "snapshot-garbage":
        snap.write_bytes(bytes(rng.randrange(256) for _ in range(rng.choice([3, 10, 56]))))
        return f"{snap.name}: garbage"
    cut = rng.randint(0, max(0, len(data) - 1))
    snap.write_bytes(data[:cut])
    return f"{snap.name}: torn at byte {cut}"


def _leftover(rng: random.Random, kind: str, pdir: Path, logs: list[Path]) -> str:
    log = rng.choice(logs)
    stem = log.stem
    if kind == "leftover-deleted":
        ext = rng.choice(["log", "index", "timeindex", "snapshot"])
        src = pdir / f"{stem}.{ext}"
        dst = pdir / f"{stem}.{ext}.deleted"
        if src.exists():
            shutil.copyfile(src, dst)
        else:
            dst.write_bytes(b"")
        return f"{dst.name}: leftover"
    if kind == "leftover-cleaned":
        dst = pdir / f"{stem}.log.cleaned"
        shutil.copyfile(log, dst)
        return f"{dst.name}: leftover (copy of {log.name})"
    # an interrupted clean/split: the .swap holds a copy of the segment (the cleaner's output of a clean segment)
    dst = pdir / f"{stem}.log.swap"
    shutil.copyfile(log, dst)
    done = [f"{dst.name}: leftover (copy of {log.name})"]
    if kind == "leftover-swap-indexes":
        for ext in ("index", "timeindex"):
            src = pdir / f"{stem}.{ext}"
            if src.exists() and rng.random() < 0.8:
                shutil.copyfile(src, pdir / f"{stem}.{ext}.swap")
                done.append(f"{stem}.{ext}.swap")
    if rng.random() < 0.5:  # the cleaner had already renamed the old segment away
        for ext in ("log", "index", "timeindex", "txnindex"):
            p = pdir / f"{stem}.{ext}"
            if p.exists():
                p.rename(pdir / f"{stem}.{ext}.deleted")
        done.append(f"{log.name} and its indexes renamed to .deleted")
    return "; ".join(done)


LOG_KINDS = ("torn-tail", "flip", "zero-range", "zero-tail", "junk-tail")


def _apply(rng: random.Random, kind: str, pdir: Path, log: Path, logs: list[Path]) -> list[str]:
    """One damage of ``kind`` to ``log`` (or the partition); the lines saying what it did."""
    if kind in LOG_KINDS:
        return [_damage_log(rng, kind, log)]
    if kind.startswith(("index-", "timeindex-")):
        return [_damage_index(rng, kind, pdir, log)]
    if kind.startswith("txnindex-"):
        return [_damage_txnindex(rng, kind, pdir, log)]
    if kind.startswith("snapshot-"):
        line = _damage_snapshot(rng, kind, pdir)
        return [line] if line else []
    return [_leftover(rng, kind, pdir, logs)]


def toggle_marker(rng: random.Random, pdir: Path, remove_below: float, add_below: float) -> list[str]:
    """One draw: the log dir's clean-shutdown marker removed (draw < ``remove_below``, if present), added (draw <
    ``add_below``, if absent) or left; the line saying what was done."""
    marker = pdir.parent / MARKER
    r = rng.random()
    if r < remove_below and marker.exists():
        marker.unlink()
        return [f"{MARKER} removed"]
    if r < add_below and not marker.exists():
        marker.write_bytes(b"")
        return [f"{MARKER} added"]
    return []


def mutate(seed: int, pdir: Path, kinds: tuple[str, ...] = KINDS) -> list[str]:
    """Damage ``pdir`` (see the module docstring); returns one line per change."""
    rng = random.Random(seed * 7919 + 17)
    logs = _logs(pdir)
    done: list[str] = []
    damaged: Path | None = None
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        kind = rng.choice(kinds)
        logs = _logs(pdir)
        if not logs:
            break
        # the active segment most often: that is where a crash leaves its damage
        log = logs[-1] if rng.random() < 0.6 else rng.choice(logs)
        if kind in LOG_KINDS:
            damaged = log if damaged is None or log.name < damaged.name else damaged
        done += _apply(rng, kind, pdir, log, logs)
    # the clean-shutdown marker: as written, removed (a crash) or added (damage after a clean shutdown)
    done += toggle_marker(rng, pdir, 0.25, 0.45)
    # the recovery point: as written, or below / at / above the damage, or missing
    r = rng.random()
    if r < 0.5:
        logs = _logs(pdir)
        bases = [int(p.stem) for p in logs] or [0]
        at = int(damaged.stem) if damaged is not None and damaged.exists() else rng.choice(bases)
        choice = rng.choice(["zero", "below", "at", "above", "far", "missing"])
        rp = {"zero": 0, "below": max(0, at - 1), "at": at, "above": at + rng.randint(1, 5),
              "far": max(bases) + 1000, "missing": None}[choice]
        _write_rp(pdir, rp)
        done.append(f"recovery point {choice} the damage: {rp}")
    return done


def mutate_replay(seed: int, pdir: Path) -> list[str]:
    """``mutate`` with REPLAY_KINDS, always with one sane garbage offset index and, most often, the latest snapshot
    deleted (so that the producer-state replay starts in a segment, through that index)."""
    rng = random.Random(seed * 104729 + 3)
    logs = _logs(pdir)
    done: list[str] = []
    if logs:
        log = rng.choice(logs)
        done.append(_sane_garbage_index(rng, pdir / f"{log.stem}.index", log))
    if rng.random() < 0.8:
        line = _damage_snapshot(rng, "snapshot-latest-delete", pdir)
        if line:
            done.append(line)
    return done + mutate(seed, pdir, REPLAY_KINDS)


def mutate_crash(seed: int, pdir: Path) -> list[str]:
    """What a crash leaves, and only that (the inputs of compact / truncate-to-epoch on crash-shutdown partitions):
    no ``.kafka_cleanshutdown``; one or two of CRASH_KINDS, tails torn or zero-filled on the active segment only
    (where the broker was appending); the recovery-point checkpoint as written, at 0 or at the active segment."""
    rng = random.Random(seed * 31337 + 11)
    done: list[str] = []
    for _ in range(rng.choice([1, 1, 2])):
        logs = _logs(pdir)
        if not logs:
            break
        kind = rng.choice(CRASH_KINDS)
        done += _apply(rng, kind, pdir, logs[-1] if kind in LOG_KINDS else rng.choice(logs), logs)
    marker = pdir.parent / MARKER
    if marker.exists():
        marker.unlink()
        done.append(f"{MARKER} removed")
    r = rng.random()
    if r < 0.4:
        logs = _logs(pdir)
        rp = 0 if r < 0.2 or not logs else int(logs[-1].stem)
        _write_rp(pdir, rp)
        done.append(f"recovery point {rp}")
    return done


#: what an interrupted clean, swap or deletion leaves behind a clean shutdown, and a lost offset index: Kafka's
#: loader finishes those (and recovers that segment) with the marker present too
LEFTOVER_KINDS = ("leftover-deleted", "leftover-cleaned", "leftover-swap", "leftover-swap-indexes", "index-delete")


def mutate_leftovers(seed: int, pdir: Path) -> list[str]:
    """One or two of LEFTOVER_KINDS on a partition that keeps its clean-shutdown marker (the inputs of compact /
    truncate-to-epoch after a clean shutdown with leftovers, ops/load_first.needs_load_after_clean_shutdown)."""
    rng = random.Random(seed * 7727 + 5)
    done: list[str] = []
    for _ in range(rng.choice([1, 1, 2])):
        logs = _logs(pdir)
        if not logs:
            break
        done += _apply(rng, rng.choice(LEFTOVER_KINDS), pdir, rng.choice(logs), logs)
    return done


def copy_data_dir(src_pdir: Path, dst_root: Path) -> Path:
    """Copy ``src_pdir`` and the log-dir files a broker reads beside it into ``dst_root``; returns the new partition
    directory (what a test then damages or repairs without touching the original)."""
    dst_root.mkdir(parents=True, exist_ok=True)
    shutil.copytree(src_pdir, dst_root / src_pdir.name)
    for name in (RP_FILE, "log-start-offset-checkpoint", "cleaner-offset-checkpoint", MARKER):
        p = src_pdir.parent / name
        if p.exists():
            shutil.copyfile(p, dst_root / name)
    return dst_root / src_pdir.name
