"""A SIGKILL after *every* file-changing step of every writing command, replayed by both recoverers.

``KAFKALOG_TEST_KILL_AT_STEP=k`` makes the command SIGKILL itself right after its k-th file-changing step
(``safety._slow``); an uninterrupted run with ``KAFKALOG_TEST_STEP_LOG`` tells how many steps there are. For each k
the partition directory left behind is loaded

* by an independent model of the broker's loader (``broker_loader``, from Kafka's LogLoader), which must serve the
  old or the new data (for ``truncate-to-epoch`` also: the old log minus some of its last segments, the states
  Kafka's own ``LocalLog.truncateTo`` passes through), never a fabricated index, never fail to start;
* by kafkalog's recovery, after which the directory must hold exactly the old or exactly the new files.

The commands run in a forked child (no interpreter start-up per kill), the real CLI code path.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal

import broker_loader
import pytest
from index_partition_gen import make_partition
from partition_gen import PartitionBuilder, random_partition

from kafkalog_cli.ops import safety

NOW = 1_800_000_000_000


def _hashes(d: str) -> dict[str, str]:
    return {n: hashlib.sha256(open(os.path.join(d, n), "rb").read()).hexdigest() for n in sorted(os.listdir(d))}


def run_forked(args: list[str], env: dict[str, str]) -> int:
    """Run ``kafkalog ARGS`` in a forked child; its wait status."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 3
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            import sys

            sys.stdout = sys.stderr = open(os.devnull, "w")
            os.environ.update(env)
            safety._steps = 0
            from kafkalog_cli.cli.main import cli

            cli.main(args, prog_name="kafkalog", standalone_mode=True)
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return status


def _scenario(kind: str, root: str) -> tuple[str, list[str]]:
    pdir = os.path.join(root, "logs", "t-0")
    if kind == "rebuild-index":
        make_partition(pdir, 7, segments=3, max_batches=30, interval=4096, gaps=False)
        return pdir, ["rebuild-index", "--index-interval-bytes", "300", "--execute", "--rewrite-valid", pdir]
    if kind == "compact":
        random_partition(pdir, 9)
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
        return pdir, ["compact", "--execute", "--now-ms", str(NOW), "--segment-bytes", "220", pdir]
    random_partition(pdir, 6)
    return pdir, ["truncate-to-epoch", "--execute", "--to-offset", "50", pdir]


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["rebuild-index", "compact", "compact-uncovered", "truncate-to-epoch",
                                  "truncate-in-place"])
def test_kill_at_every_step_loads_old_or_new(tmp_path, kind, monkeypatch):
    """``truncate-in-place``: without RENAME_EXCHANGE (KAFKALOG_NO_EXCHANGE) truncation falls back to deleting the
    later segments, highest first, before the cut segment becomes visible: a broker starting then loads the old log
    minus some of its last segments (as mid-way through Kafka's own LocalLog.truncateTo), never the cut segment
    with later segments."""
    if kind == "truncate-in-place":
        monkeypatch.setenv(safety.NO_EXCHANGE_ENV, "1")
    src, args = _scenario(kind, str(tmp_path / "src"))
    old = _hashes(src)
    old_view = broker_loader.load(src, str(tmp_path / "scratch")).view
    ref_root = str(tmp_path / "ref")
    shutil.copytree(os.path.dirname(src), os.path.join(ref_root, "logs"))
    ref = os.path.join(ref_root, "logs", "t-0")
    steps_log = str(tmp_path / "steps")
    status = run_forked([a.replace(src, ref) for a in args], {safety.STEP_LOG_ENV: steps_log})
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
    steps = len(open(steps_log).read().split())
    new = _hashes(ref)
    assert new != old
    new_view = broker_loader.load(ref, str(tmp_path / "scratch")).view
    assert steps >= 8
    seen = {"broker": set(), "kafkalog": set()}
    for k in range(1, steps + 1):
        root = str(tmp_path / f"k{k}")
        shutil.copytree(os.path.dirname(src), os.path.join(root, "logs"))
        pdir = os.path.join(root, "logs", "t-0")
        status = run_forked([a.replace(src, pdir) for a in args], {safety.KILL_ENV: str(k)})
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, f"step {k}: not killed ({status})"
        # a broker starting now
        loaded = broker_loader.load(pdir, str(tmp_path / "scratch"))
        assert not loaded.fabricated_indexes, f"step {k}: the broker would install a zero-filled index"
        if loaded.view == old_view:
            seen["broker"].add("old")
        elif loaded.view == new_view:
            seen["broker"].add("new")
        else:
            assert kind == "truncate-in-place" and broker_loader.prefix_of(loaded.view, old_view), (
                f"step {k}: the broker would load neither the old nor the new partition: {loaded.view}")
            seen["broker"].add("old minus its last segments")
        # kafkalog's recovery (the next run), whatever KAFKALOG_BACKUP_DIR says
        safety.recover_interrupted(pdir)
        now = _hashes(pdir)
        assert now in (old, new), f"step {k}: kafkalog's recovery left a mixed state"
        seen["kafkalog"].add("old" if now == old else "new")
        assert broker_loader.load(pdir, str(tmp_path / "scratch")).view == (old_view if now == old else new_view)
        assert [n for n in os.listdir(os.path.dirname(pdir)) if n != ".lock"] == ["t-0"], f"step {k}: leftovers"
        shutil.rmtree(root)
    assert seen["kafkalog"] == {"old", "new"}, seen
    assert {"old", "new"} <= seen["broker"], seen
    if kind == "truncate-in-place":
        assert "old minus its last segments" in seen["broker"], seen
