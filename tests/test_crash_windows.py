"""The two windows of issue 27 "A broker that starts mid-repair", each hit directly (one kill each).

* truncate-to-epoch's exchange commit: before and after ``renameat2(RENAME_EXCHANGE)`` no regular file of the
  ``-delete`` directory (what LogManager makes Kafka's LogLoader open: the regular files directly in it) may share an
  inode with a live file of the partition. Before the fix the side was the ``-delete`` directory itself, full of
  hard links (the staged ``leader-epoch-checkpoint.tmp`` was the new ``leader-epoch-checkpoint``'s inode).
* compact --include-active with ``.kafka_cleanshutdown`` and the latest snapshot at a merged segment's base: while
  ``0.log.swap`` exists, Kafka's second loader pass deletes every non-swap file of that range; the kept snapshot must
  survive (staged as a ``.swap``), or Kafka's Load finds no snapshot and writes empty ones (0 producers).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from crash_driver import kafka_load, run_forked, shared_inodes
from kafka_real import write_partition
from partition_gen import random_partition

from kafkalog_cli.ops import safety


def _calls(tmp_path: Path, src_root: Path, args: list[str]) -> list[str]:
    import shutil

    ref = tmp_path / "ref"
    shutil.copytree(src_root, ref, symlinks=True)
    log = tmp_path / "calls"
    argv = [a.replace(str(src_root), str(ref)) for a in args]
    status = run_forked(argv, {}, root=str(ref), call_log=str(log))
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    return [c.replace(str(ref), "") for c in log.read_text().splitlines()]


def _killed(tmp_path: Path, src_root: Path, args: list[str], k: int, name: str) -> Path:
    import shutil

    root = tmp_path / name
    shutil.copytree(src_root, root, symlinks=True)
    status = run_forked([a.replace(str(src_root), str(root)) for a in args], {}, root=str(root), kill_at=k)
    assert os.WIFSIGNALED(status)
    return root


def test_exchange_side_shares_no_inode_with_the_live_partition(tmp_path):
    src_root = tmp_path / "src"
    pdir = src_root / "logs" / "t-0"
    random_partition(str(pdir), 6)
    # the truncation's own exchange (random_partition writes no clean-shutdown marker: the default would recover
    # first, another commit; the combined path is test_crash_steps' truncate-after-crash)
    args = ["truncate-to-epoch", "--execute", "--no-recover-first", "--to-offset", "50", str(pdir)]
    calls = _calls(tmp_path, src_root, args)
    exchange = next(i for i, c in enumerate(calls, 1) if c.startswith("renameat2"))
    side_links = [i for i, c in enumerate(calls, 1) if c.startswith("os.link") and "-delete" in c]
    after = [i for i, c in enumerate(calls, 1) if i > exchange and c.startswith("os.remove")]
    assert side_links and after
    # kill: with the side half built, right before the exchange, right after it (before the first removal)
    for k in (side_links[len(side_links) // 2], exchange, after[0]):
        root = _killed(tmp_path, src_root, args, k, f"k{k}")
        logdir = root / "logs"
        sides = [d for d in os.listdir(logdir) if d.endswith(safety.DELETE_DIR_SUFFIX)]
        assert sides, (k, calls[k - 1])
        for side in sides:
            shared = shared_inodes(str(logdir / side), str(logdir / "t-0"))
            assert not shared, (k, calls[k - 1], shared)
        safety.recover_interrupted(str(logdir / "t-0"))
        assert sorted(os.listdir(logdir)) == [".lock", "t-0"] or sorted(os.listdir(logdir)) == ["t-0"]


@pytest.mark.oracle
def test_kept_snapshot_survives_kafkas_load_while_the_swap_exists(tmp_path, kafka_real):
    from test_crash_kafka_load import _producers_plan

    src_root = tmp_path / "src"
    logs = src_root / "logs"
    src_root.mkdir()
    write_partition(kafka_real, logs, _producers_plan("clean"))
    pdir = logs / "t-0"
    os.unlink(pdir / f"{39:020d}.snapshot")  # the latest snapshot is 36's, a segment base the merge covers
    assert (logs / ".kafka_cleanshutdown").exists()
    old = kafka_load(kafka_real, str(pdir), str(tmp_path / "w0"))
    assert len(old["log"]["producers"]) == 3
    args = ["compact", "--execute", "--now-ms", "1800000000000", "--include-active", str(pdir)]
    calls = _calls(tmp_path, src_root, args)
    swap = max(i for i, c in enumerate(calls, 1) if c.startswith("os.rename") and c.endswith(".log.swap"))
    first_delete = next(i for i, c in enumerate(calls, 1) if i > swap and c.startswith("os.remove"))
    root = _killed(tmp_path, src_root, args, first_delete, "killed")
    got = kafka_load(kafka_real, str(root / "logs" / "t-0"), str(tmp_path / "w1"))
    assert not got.get("error"), got["error"]
    assert got["log"]["producers"] == old["log"]["producers"], got["log"]["producers"]
    assert got["log"]["latestSnapshotOffset"] is not None
