"""A SIGKILL after *every* file-changing step of every writing command, replayed by both recoverers.

``crash_driver`` SIGKILLs the command right before its k-th file-changing system call (open for writing, linkat,
renameat, renameat2, unlinkat, mkdir, rmdir, ...; an audit hook in the forked child); an uninterrupted run counts
them. A sample of kill points by default, every one under ``-m oracle_long``; Kafka's real LogLoader replays them in
test_crash_kafka_load.py. For each k the partition directory left behind is loaded

* by an independent model of the broker's loader (``broker_loader``, from Kafka's LogLoader), which must serve the
  old or the new data (for ``truncate-to-epoch`` also: the old log minus some of its last segments, the states
  Kafka's own ``LocalLog.truncateTo`` passes through), never a fabricated index, never fail to start;
* by kafkalog's recovery, after which the directory must hold exactly the old or exactly the new files.

The commands run in a forked child (no interpreter start-up per kill), the real CLI code path.
"""

from __future__ import annotations

import os

import broker_loader
import pytest
from crash_driver import kill_at_every_step
from index_partition_gen import make_partition
from partition_gen import PartitionBuilder, mark_clean_shutdown, random_partition

from kafkalog_cli.ops import safety

NOW = 1_800_000_000_000


def _scenario(kind: str, root: str) -> tuple[str, list[str]]:
    pdir = os.path.join(root, "logs", "t-0")
    if kind in CRASH_INPUTS:
        # left by a crash (random_partition writes no .kafka_cleanshutdown): the command applies the broker's
        # start-up recovery first (its own transaction, ops/load_first.py), then the repair
        random_partition(pdir, 9 if kind.startswith("compact") else 6)
        return pdir, CRASH_INPUTS[kind][0] + [pdir]
    if kind == "rebuild-index":
        make_partition(pdir, 7, segments=3, max_batches=30, interval=4096, gaps=False)
        return pdir, ["rebuild-index", "--index-interval-bytes", "300", "--execute", "--rewrite-valid", pdir]
    if kind == "compact":
        random_partition(pdir, 9)
        mark_clean_shutdown(pdir)  # stopped cleanly: the compaction's own commit only
        return pdir, ["compact", "--execute", "--now-ms", str(NOW), pdir]
    if kind == "compact-uncovered":
        # group [0, 2] keeps only offset 0 (k4=z and k2=x are superseded in a later group): the new 0.log.swap's
        # offset range [0, 1) does not cover 2.log, which the broker's loader would then keep beside it
        pb = PartitionBuilder(pdir)
        pb.batch([(b"k1", b"a")])
        pb.batch([(b"k4", b"z")])
        pb.roll()
        pb.batch([(b"k2", b"x")])
        pb.roll()
        pb.batch([(b"k3", b"c" * 200)])
        pb.roll()
        pb.batch([(b"k2", b"y"), (b"k4", b"w")])
        pb.roll()
        pb.batch([(b"tail", b"t")])
        pb.write()
        mark_clean_shutdown(pdir)
        return pdir, ["compact", "--execute", "--now-ms", str(NOW), "--segment-bytes", "220", pdir]
    random_partition(pdir, 6)
    mark_clean_shutdown(pdir)  # stopped cleanly: the truncation's own commit only
    return pdir, ["truncate-to-epoch", "--execute", "--to-offset", "50", pdir]


#: crash-shutdown inputs of the two commands that recover first: (command, the recovery it applies first)
CRASH_INPUTS = {
    "compact-after-crash": (["compact", "--execute", "--now-ms", str(NOW)], ["recover", "--execute", "--now-ms", str(NOW)]),
    "truncate-after-crash": (["truncate-to-epoch", "--execute", "--now-ms", str(NOW), "--to-offset", "50"],
                             ["recover", "--execute", "--now-ms", str(NOW)]),
}
KINDS = ["rebuild-index", "compact", "compact-uncovered", "truncate-to-epoch", "truncate-in-place", *CRASH_INPUTS]
SAMPLE = 30  # kill points per scenario by default (crash_driver._sample); all of them under -m oracle_long


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_kill_at_every_step_loads_old_or_new(tmp_path, kind, monkeypatch):
    _kill_test(tmp_path, kind, monkeypatch, SAMPLE)


@pytest.mark.oracle_long
@pytest.mark.parametrize("kind", KINDS)
def test_kill_at_every_syscall_loads_old_or_new(tmp_path, kind, monkeypatch):
    _kill_test(tmp_path, kind, monkeypatch, None)


def _kill_test(tmp_path, kind, monkeypatch, sample):
    """``truncate-in-place``: without RENAME_EXCHANGE (KAFKALOG_NO_EXCHANGE) truncation falls back to deleting the
    later segments, highest first, before the cut segment becomes visible: a broker starting then loads the old log
    minus some of its last segments (as mid-way through Kafka's own LocalLog.truncateTo), never the cut segment
    with later segments."""
    if kind == "truncate-in-place":
        monkeypatch.setenv(safety.NO_EXCHANGE_ENV, "1")
    src, args = _scenario(kind, str(tmp_path / "src"))

    def minus_last_segments(view: object, old_view: object) -> str | None:
        ok = kind == "truncate-in-place" and broker_loader.prefix_of(view, old_view)
        return "old minus its last segments" if ok else None

    middle = CRASH_INPUTS[kind][1] + [src] if kind in CRASH_INPUTS else None
    seen = kill_at_every_step(str(tmp_path), src, args, min_steps=8, other_broker_view=minus_last_segments,
                              sample=sample, middle=middle)
    assert {"old", "new"} <= seen["broker"], seen
    if kind == "truncate-in-place" and sample is None:
        assert "old minus its last segments" in seen["broker"], seen
