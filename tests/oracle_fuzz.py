"""A second, differently shaped generator of kafka-real ``Write`` plans and damage (tests only; issue 26).

``tests/oracle_plans.py`` draws one flat random program of leader appends; ``tests/oracle_mutations.py`` damages
the files the ways a crash leaves them, mostly near the active segment's tail. This module draws cases of another
shape, so that the differential tests see inputs the first generator never makes:

- ``fuzz_plan(seed)`` picks one or more *shapes* and builds the plan from them:
  ``tiny-segments`` (``segment.bytes`` near one batch: a roll at nearly every append), ``huge-batches`` (hundreds to
  thousands of records in one batch), ``follower`` (``appendAsFollower`` with jumping base offsets: offset gaps, and
  leader-epoch jumps), ``delete-records`` (DeleteRecords moves the log start, segments deleted), ``truncate``
  (a follower's ``truncateTo`` then more appends), ``txn-interleave`` (several transactional and idempotent
  producers interleaved, transactions spanning rolls, leader-epoch bumps inside a transaction, producer-epoch bumps
  between transactions), ``legacy-first`` (v0/v1 messages appended as a follower before the v2 ones: a
  ``message.format.version`` upgrade), ``index-full`` (a tiny ``segment.index.bytes``: the index fills and the
  segment rolls), ``timestamps`` (explicit timestamps: equal, decreasing, far jumps), ``log-append-time``; every
  codec; ``index.interval.bytes`` anywhere from 1 to the default.
- ``fuzz_damage(seed, pdir)`` damages the result at *random byte offsets of any file*: bit flips, truncation, zero
  fill, extension with zeros (preallocation) or junk, of the ``.log``, ``.index``, ``.timeindex``, ``.txnindex`` and
  snapshot files of any segment; snapshots removed, garbled or stale (an older snapshot's bytes under the newest
  name); the recovery-point and log-start-offset checkpoints above or below the log end or missing; ``.cleaned`` /
  ``.swap`` / ``.deleted`` leftovers; the clean-shutdown marker present or not.

Everything is seeded (``random.Random``): a failing case is reproduced by its seed alone. Nothing here knows what
Kafka or kafkalog does with the result; the tests ask both and compare (tests/test_oracle_fuzz.py).
"""

from __future__ import annotations

import random
from pathlib import Path

from oracle_mutations import RP_FILE, _leftover, toggle_marker

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
SHAPES = ("tiny-segments", "huge-batches", "follower", "delete-records", "truncate", "txn-interleave",
          "legacy-first", "index-full", "timestamps", "log-append-time")
LSO_FILE = "log-start-offset-checkpoint"
T0 = 1_700_000_000_000


def _value(rng: random.Random, i: int, small: bool) -> object:
    r = rng.random()
    if r < 0.1:
        return None
    if r < 0.2:
        return ""
    if r < 0.35:
        return {"hex": bytes(rng.randrange(256) for _ in range(rng.randint(1, 8 if small else 40))).hex()}
    return f"v{i}" + "z" * rng.choice([0, 2, 10] if small else [0, 10, 100, 700])


def _records(rng: random.Random, n: int, small: bool, legacy: bool, ts_mode: str | None, clock: list[int]) -> list[dict]:
    out = []
    for i in range(n):
        rec: dict = {"key": rng.choice([None, f"k{rng.randrange(20)}", "", {"hex": "00ff"}]),
                     "value": _value(rng, i, small)}
        if not legacy and rng.random() < 0.25:
            rec["headers"] = [[f"h{j}", rng.choice([None, "", "x", {"hex": "ff"}])] for j in range(rng.randint(1, 2))]
        if ts_mode == "equal":
            rec["timestamp"] = clock[0]
        elif ts_mode == "decreasing":
            clock[0] -= rng.choice([1, 5, 1000])
            rec["timestamp"] = clock[0]
        elif ts_mode == "jumps":
            clock[0] += rng.choice([0, 1, 3_600_000 // 2, -86_400_000])
            rec["timestamp"] = clock[0]
        out.append(rec)
    return out


def fuzz_plan(seed: int) -> dict:
    """One Write plan of one to three shapes (see the module docstring)."""
    rng = random.Random(seed * 2654435761 % (1 << 32))
    shapes = set(rng.sample(SHAPES, rng.choice([1, 2, 2, 3])))
    config: dict[str, str] = {}
    tiny = "tiny-segments" in shapes
    huge = "huge-batches" in shapes and not tiny
    if tiny:
        config["segment.bytes"] = str(rng.randint(120, 420))
    elif rng.random() < 0.4:
        config["segment.bytes"] = str(rng.choice([1500, 3000, 8000, 65536]))
    ii = rng.choice([1, 1, rng.randint(2, 64), rng.randint(65, 1024), rng.randint(1025, 4096), None])
    if ii is not None:
        config["index.interval.bytes"] = str(ii)
    if "index-full" in shapes:
        config["segment.index.bytes"] = str(rng.choice([12, 16, 24, 36, 48, 96]))
    if "log-append-time" in shapes:
        config["message.timestamp.type"] = "LogAppendTime"
    small = tiny or int(config.get("segment.bytes", 1 << 30)) <= 3000
    ops: list[dict] = []
    epoch = rng.choice([0, 0, 3])
    clock = [T0]
    pstate: dict[int, int] = {}  # producer id -> producer epoch
    open_txn: set[int] = set()
    coord: dict[int, int] = {}  # producer id -> the coordinator epoch of its last marker
    if "legacy-first" in shapes:
        # v0 then v1 messages as a follower (offsets kept): the segments a broker wrote before an upgrade to v2
        for magic in sorted({rng.choice([0, 1]), 1}):
            for _ in range(rng.randint(1, 3)):
                ops.append({"op": "append", "asFollower": True, "magic": magic, "leaderEpoch": -1,
                            "codec": rng.choice(("none", "gzip", "snappy", "lz4")),
                            "records": _records(rng, rng.randint(1, 3 if small else 6), small, True, None, clock),
                            "batches": rng.choice([1, 2])})
                clock[0] += 1
            if rng.random() < 0.5:
                ops.append({"op": "roll"})
    n_ops = rng.randint(4, 18)
    ts_mode = rng.choice(["equal", "decreasing", "jumps"]) if "timestamps" in shapes else None
    follower = "follower" in shapes
    for _ in range(n_ops):
        r = rng.random()
        if r < 0.07:
            ops.append({"op": "roll"})
            continue
        if r < 0.11:
            ops.append({"op": "flush"})
            continue
        if r < 0.15:
            ops.append({"op": "advanceTime", "ms": rng.choice([1, 500, 3_600_000])})
            continue
        if r < 0.20:
            epoch += rng.choice([1, 1, 4])  # also inside an open transaction
            continue
        if r < 0.28 and open_txn:
            pid = rng.choice(sorted(open_txn))
            coord[pid] = max(coord.get(pid, 0), rng.choice([0, 1, 7]))  # a coordinator epoch never goes down
            ops.append({"op": "marker", "type": rng.choice(["COMMIT", "ABORT"]), "producerId": pid,
                        "producerEpoch": pstate[pid], "coordinatorEpoch": coord[pid], "leaderEpoch": epoch})
            open_txn.discard(pid)
            if rng.random() < 0.3:
                pstate[pid] += 1  # the producer's next transaction runs at a bumped epoch
            continue
        if r < 0.32 and "delete-records" in shapes:
            ops.append({"op": "deleteRecords", "offsetFromEnd": rng.randint(0, 12)})
            continue
        if r < 0.35 and "truncate" in shapes and not open_txn:
            ops.append({"op": "truncateTo", "offsetFromEnd": rng.randint(1, 6)})
            continue
        op: dict = {"op": "append", "codec": rng.choice(CODECS), "leaderEpoch": epoch}
        kind = rng.random()
        txn = "txn-interleave" in shapes
        if kind < (0.45 if txn else 0.12):
            if open_txn and rng.random() < 0.5:
                pid = rng.choice(sorted(open_txn))
            else:
                pid = rng.choice([p for p in range(500, 505) if p not in open_txn] or [600 + len(pstate)])
                pstate.setdefault(pid, rng.choice([0, 0, 2]))
                open_txn.add(pid)
            op.update(producerId=pid, producerEpoch=pstate[pid], transactional=True)
        elif kind < (0.7 if txn else 0.35):
            pid = rng.choice([p for p in range(700, 704) if p not in open_txn])
            pstate.setdefault(pid, 0)
            op.update(producerId=pid, producerEpoch=pstate[pid])
        if follower and "producerId" not in op and rng.random() < 0.6:
            # a follower's copy of the leader's batches: base offset jumps ahead (a gap), epoch carried by the batch
            op.update(asFollower=True, baseOffsetGap=rng.choice([0, 1, 3, 50, 1000]))
        if huge:
            op["count"] = rng.choice([200, 800, 3000])
            op["keyFormat"] = rng.choice(["k%d", "key-%08d"])
            op["valueFormat"] = rng.choice(["", "v%d", "value-%d-" + "p" * 30])
            op["batches"] = 1
        elif rng.random() < 0.6 or ts_mode:
            op["records"] = _records(rng, rng.randint(1, 2 if tiny else 5), small, False, ts_mode, clock)
            op["batches"] = rng.choice([1, 1, 2, 3])
        else:
            op["count"] = rng.randint(1, 3 if tiny else 25)
            op["keyFormat"] = "k%d"
            op["batches"] = rng.choice([1, 2])
        if tiny:
            op["valueFormat"] = "v"
        ops.append(op)
    if rng.random() < 0.6:
        for pid in sorted(open_txn):
            ops.append({"op": "marker", "type": rng.choice(["COMMIT", "ABORT"]), "producerId": pid,
                        "producerEpoch": pstate[pid], "coordinatorEpoch": coord.get(pid, 0), "leaderEpoch": epoch})
    if not any(o["op"] == "append" for o in ops):
        ops.append({"op": "append", "count": 2, "leaderEpoch": epoch})
    return {"topic": "t", "partition": 0, "config": config, "startTimeMs": T0,
            "timeStepMs": rng.choice([0, 1, 1, 3, 1000]), "ops": ops,
            "shutdown": rng.choice(["clean", "clean", "crash", "crash-no-checkpoint"]),
            "_shapes": sorted(shapes)}


def kafka_plan(p: dict) -> dict:
    """The plan as Write takes it (without the generator's own keys)."""
    return {k: v for k, v in p.items() if not k.startswith("_")}


# ------------------------------------------------------------------------------------------------ damage
def _files(pdir: Path, *suffixes: str) -> list[Path]:
    return sorted(p for p in pdir.iterdir() if p.is_file() and p.name.endswith(suffixes))


def _byte_damage(rng: random.Random, f: Path) -> str:
    data = bytearray(f.read_bytes())
    how = rng.choice(["flip", "flip", "truncate", "zero-fill", "extend-zeros", "extend-junk"])
    if not data and how in ("flip", "truncate", "zero-fill"):
        how = "extend-zeros"
    if how == "flip":
        at = rng.randrange(len(data))
        data[at] ^= 1 << rng.randrange(8)
        f.write_bytes(bytes(data))
        return f"{f.name}: bit flipped at byte {at}"
    if how == "truncate":
        at = rng.randrange(len(data))
        f.write_bytes(bytes(data[:at]))
        return f"{f.name}: truncated to {at} of {len(data)} bytes"
    if how == "zero-fill":
        a = rng.randrange(len(data))
        b = min(len(data), a + rng.choice([1, 4, 12, 61, 300, len(data)]))
        data[a:b] = bytes(b - a)
        f.write_bytes(bytes(data))
        return f"{f.name}: bytes {a}..{b} zeroed"
    n = rng.choice([1, 3, 8, 12, 100, 4096])
    extra = bytes(n) if how == "extend-zeros" else bytes(rng.randrange(256) for _ in range(n))
    f.write_bytes(bytes(data) + extra)
    return f"{f.name}: {n} {'zero' if how == 'extend-zeros' else 'junk'} bytes appended"


def _snapshot_damage(rng: random.Random, pdir: Path) -> str | None:
    snaps = _files(pdir, ".snapshot")
    if not snaps:
        return None
    how = rng.choice(["remove", "remove-all", "garble", "stale", "stale"])
    if how == "stale" and len(snaps) >= 2:
        old = rng.choice(snaps[:-1])
        snaps[-1].write_bytes(old.read_bytes())
        return f"{snaps[-1].name}: stale (the bytes of {old.name})"
    if how == "remove-all":
        for s in snaps:
            s.unlink()
        return "every snapshot removed"
    s = rng.choice(snaps)
    if how in ("remove", "stale"):
        s.unlink()
        return f"{s.name}: removed"
    return _byte_damage(rng, s)


def _write_checkpoint(path: Path, pdir: Path, offset: int | None) -> None:
    if offset is None:
        path.unlink(missing_ok=True)
        return
    topic, _, part = pdir.name.rpartition("-")
    path.write_text(f"0\n1\n{topic} {part} {offset}\n")


def _log_end_guess(pdir: Path) -> int:
    logs = _files(pdir, ".log")
    return int(logs[-1].name[:20]) + 10 if logs else 0


def fuzz_damage(seed: int, pdir: Path, *, max_changes: int = 3) -> list[str]:
    """Damage ``pdir`` (see the module docstring); one line per change. 1 in 6 cases stays undamaged (the shapes
    alone, after a clean or crash shutdown)."""
    rng = random.Random(seed * 40503 + 5)
    done: list[str] = []
    n = rng.choice([0, 1, 1, 2, 2, max_changes])
    for _ in range(n):
        r = rng.random()
        if r < 0.4:
            cands = _files(pdir, ".log")
        elif r < 0.6:
            cands = _files(pdir, ".index", ".timeindex")
        elif r < 0.7:
            cands = _files(pdir, ".txnindex") or _files(pdir, ".index")
        elif r < 0.85:
            line = _snapshot_damage(rng, pdir)
            if line:
                done.append(line)
            continue
        else:
            logs = _files(pdir, ".log")
            if logs:
                done.append(_leftover(rng, rng.choice(["leftover-deleted", "leftover-cleaned", "leftover-swap",
                                                       "leftover-swap-indexes"]), pdir, logs))
            continue
        if cands:
            # the active segment half of the time, else any
            f = cands[-1] if rng.random() < 0.5 else rng.choice(cands)
            done.append(_byte_damage(rng, f))
    done += toggle_marker(rng, pdir, 0.3, 0.5)
    if rng.random() < 0.35:
        end = _log_end_guess(pdir)
        rp = rng.choice([0, max(0, end - rng.randint(1, 30)), end + rng.randint(1, 2000), None])
        _write_checkpoint(pdir.parent / RP_FILE, pdir, rp)
        done.append(f"recovery point {rp}")
    if rng.random() < 0.15:
        logs = _files(pdir, ".log")
        first = int(logs[0].name[:20]) if logs else 0
        lso = rng.choice([0, first, first + rng.randint(1, 5), None])
        _write_checkpoint(pdir.parent / LSO_FILE, pdir, lso)
        done.append(f"log start offset checkpoint {lso}")
    line = _epoch_damage(random.Random(seed * 7 + 123), pdir)  # its own stream: the draws above stay as they were
    if line:
        done.append(line)
    return done


def _epoch_damage(rng: random.Random, pdir: Path) -> str | None:
    """The ``leader-epoch-checkpoint`` (1 case in 8): deleted, emptied, an entry dropped, a stale entry above the log
    end added, or a byte flipped (which may make it unreadable)."""
    f = pdir / "leader-epoch-checkpoint"
    if rng.random() >= 0.125 or not f.exists():
        return None
    lines = f.read_text(errors="replace").splitlines()
    how = rng.choice(["delete", "empty", "drop", "stale", "flip"])
    if how == "delete":
        f.unlink()
    elif how == "empty":
        f.write_text("0\n0\n")
    elif how == "drop" and len(lines) > 3:
        body = lines[2:]
        body.pop(rng.randrange(len(body)))
        f.write_text("\n".join(["0", str(len(body)), *body]) + "\n")
    elif how == "stale" and len(lines) >= 2:
        body = lines[2:]
        last_epoch = int(body[-1].split()[0]) if body else 0
        body.append(f"{last_epoch + rng.randint(1, 3)} {_log_end_guess(pdir) + rng.randint(0, 5000)}")
        f.write_text("\n".join(["0", str(len(body)), *body]) + "\n")
    else:
        return _byte_damage(rng, f)
    return f"leader-epoch-checkpoint: {how}"

