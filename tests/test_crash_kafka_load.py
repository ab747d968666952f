"""Kill at every file-changing syscall of every writing command, each state replayed by Kafka's REAL LogLoader
(issue 26 item 3, issue 27 "A broker that starts mid-repair").

The driver is ``crash_driver.kill_at_every_step`` with ``oracle=kafka_real``: before each file-changing call
(open for writing, linkat, renameat, renameat2, unlinkat, mkdir, rmdir, truncate, utime) the command is SIGKILLed;
the state left behind must load, under Kafka's own ``Load``, as exactly the old or the new partition (log state,
producers, epochs, ``.log``/``.txnindex`` bytes), a ``-delete`` side must share no inode with a live file, and
kafkalog's recovery must restore exactly the old or the new files.

CI cost: by default a deterministic sample of kill points per scenario (``SAMPLE``); every kill point under
``pytest -m oracle_long``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from crash_driver import corrupt_third_batch, kill_at_every_step
from kafka_real import write_partition
from partition_gen import random_partition

SAMPLE = 16
NOW = 1_800_000_000_000


def _producers_plan(shutdown: str) -> dict:
    """Two idempotent producers and a transactional one over three leader epochs and four segments (Kafka's Write)."""
    ops: list[dict] = []
    for epoch, n in ((0, 0), (2, 1), (4, 2)):
        ops += [
            {"op": "append", "count": 3, "keyFormat": "k%d", "keyModulo": 4, "producerId": 1000, "leaderEpoch": epoch},
            {"op": "append", "count": 2, "keyFormat": "j%d", "keyModulo": 3, "producerId": 2000, "leaderEpoch": epoch},
            {"op": "append", "count": 2, "keyFormat": "t%d", "producerId": 3000, "transactional": True,
             "leaderEpoch": epoch},
            {"op": "marker", "type": "ABORT" if n == 1 else "COMMIT", "producerId": 3000, "leaderEpoch": epoch},
            {"op": "append", "count": 4, "keyFormat": "p%d", "keyModulo": 5, "leaderEpoch": epoch},
            {"op": "roll"},
        ]
    ops.append({"op": "append", "count": 3, "keyFormat": "k%d", "keyModulo": 4, "producerId": 1000, "leaderEpoch": 4})
    return {"topic": "t", "partition": 0, "config": {"cleanup.policy": "compact"}, "ops": ops, "shutdown": shutdown}


def _scenario(kind: str, root: str, kafka_real) -> tuple[str, list[str]]:
    logs = os.path.join(root, "logs")
    pdir = os.path.join(logs, "t-0")
    if kind in CRASH_INPUTS:
        # written by Kafka and left by a crash (no .kafka_cleanshutdown, the active segment's indexes preallocated,
        # no snapshot at the log end): the command first applies the broker's start-up recovery (its own
        # transaction, ops/load_first.py), then its repair; the state between the two is the third one
        os.makedirs(root, exist_ok=True)
        write_partition(kafka_real, Path(logs), _producers_plan("crash"))
        return pdir, CRASH_INPUTS[kind][0] + [pdir]
    if kind in ("truncate-to-epoch", "truncate-to-offset", "compact-include-active", "compact",
                "compact-include-active-no-leo-snapshot"):
        os.makedirs(root, exist_ok=True)
        write_partition(kafka_real, Path(logs), _producers_plan("clean"))
        if kind == "compact-include-active-no-leo-snapshot":
            # the latest snapshot at a segment base that the merge covers (none at the log end), the clean-shutdown
            # marker present: kept by compact, deleted by Kafka's second loader pass unless staged as a .swap
            os.unlink(os.path.join(pdir, f"{39:020d}.snapshot"))
            kind = "compact-include-active"
        if kind == "truncate-to-epoch":
            return pdir, ["truncate-to-epoch", "--execute", pdir, "2"]
        if kind == "truncate-to-offset":
            return pdir, ["truncate-to-epoch", "--execute", "--to-offset", "20", pdir]
        extra = ["--include-active"] if kind == "compact-include-active" else []
        return pdir, ["compact", "--execute", "--now-ms", str(NOW), *extra, pdir]
    if kind == "recover-split":
        # the last batch of the middle segment overflows its 32-bit relative range: recover --execute splits the
        # segment as Kafka's loader does (LocalLog.splitOverflowedSegment)
        os.makedirs(root, exist_ok=True)
        plan = dict(_SPLIT_PLAN, topic="t", partition=0)
        write_partition(kafka_real, Path(logs), plan)
        log = os.path.join(pdir, sorted(n for n in os.listdir(pdir) if n.endswith(".log"))[1])
        with open(log, "r+b") as f:
            pos = 0
            for _ in range(2):
                f.seek(pos + 8)
                pos += 12 + int.from_bytes(f.read(4), "big")
            f.seek(pos + 3)
            byte = f.read(1)[0]
            f.seek(pos + 3)
            f.write(bytes([byte ^ 1]))
        return pdir, ["recover", "--execute", "--config", "index.interval.bytes=1", pdir]
    random_partition(pdir, 11)
    names = sorted(n for n in os.listdir(pdir) if n.endswith(".log"))
    if kind == "salvage":
        corrupt_third_batch(os.path.join(pdir, names[1]))
        return pdir, ["salvage", "--execute", "--allow-lost-marker", "--allow-unknown-in-transaction", pdir]
    if kind == "recover":
        with open(os.path.join(pdir, names[-1]), "ab") as f:
            f.write(b"\x00\x00\x00\x00\x00\x00\x00\x63\x00\x00\x01\x00garbage")
        os.unlink(os.path.join(pdir, names[-2].replace(".log", ".index")))
        return pdir, ["recover", "--execute", pdir]
    assert kind == "rebuild-index"
    os.unlink(os.path.join(pdir, names[1].replace(".log", ".index")))
    return pdir, ["rebuild-index", "--index-interval-bytes", "300", "--execute", "--rewrite-valid", pdir]


#: crash-shutdown inputs of the two commands that recover first: (command, the recovery it applies first)
CRASH_INPUTS = {
    "truncate-after-crash": (["truncate-to-epoch", "--execute", "--to-offset", "20"], ["recover", "--execute"]),
    "compact-after-crash": (["compact", "--execute", "--now-ms", str(NOW)], ["recover", "--execute", "--now-ms", str(NOW)]),
}
SCENARIOS = ["truncate-to-epoch", "truncate-to-offset", "compact", "compact-include-active",
             "compact-include-active-no-leo-snapshot", "salvage", "recover", "recover-split", "rebuild-index",
             *CRASH_INPUTS]
_SPLIT_PLAN = {
    "config": {"index.interval.bytes": "1"}, "shutdown": "crash-no-checkpoint",
    "ops": [{"op": "append", "count": 2, "keyFormat": "k%d", "producerId": 42, "batches": 2}, {"op": "roll"},
            {"op": "append", "count": 3, "keyFormat": "k%d", "producerId": 42, "batches": 3}, {"op": "roll"},
            {"op": "append", "count": 2, "keyFormat": "k%d", "batches": 2}],
}


def _run(tmp_path, kind, kafka_real, sample):
    src, args = _scenario(kind, str(tmp_path / "src"), kafka_real)
    middle = CRASH_INPUTS[kind][1] + [src] if kind in CRASH_INPUTS else None
    seen = kill_at_every_step(str(tmp_path), src, args, min_steps=4, oracle=kafka_real, sample=sample, middle=middle)
    assert seen["kafka"] == {"old = new"} or {"old", "new"} <= seen["kafka"], seen


@pytest.mark.oracle
@pytest.mark.slow
@pytest.mark.parametrize("kind", SCENARIOS)
def test_kill_points_load_as_old_or_new_under_kafkas_loader(tmp_path, kind, kafka_real):
    _run(tmp_path, kind, kafka_real, SAMPLE)


@pytest.mark.oracle_long
@pytest.mark.parametrize("kind", SCENARIOS)
def test_every_kill_point_loads_as_old_or_new_under_kafkas_loader(tmp_path, kind, kafka_real):
    _run(tmp_path, kind, kafka_real, None)
