"""The one kill-at-every-step driver of the crash tests (test_crash_steps.py, test_qa2_crash_more.py).

``KAFKALOG_TEST_KILL_AT_STEP=k`` makes a writing command SIGKILL itself right after its k-th file-changing step
(``safety._slow``); an uninterrupted run with ``KAFKALOG_TEST_STEP_LOG`` tells how many steps there are. For each k
the directory left behind is loaded by the broker-loader model (``broker_loader``) and then recovered by kafkalog;
``kill_at_every_step`` asserts what every scenario must hold and returns what it saw, for the scenario's own checks.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import sys
from collections.abc import Callable

import broker_loader

from kafkalog_cli.ops import safety


def hashes(d: str) -> dict[str, str]:
    """SHA-256 of every file in ``d`` by name: "exactly the old or exactly the new files"."""
    return {n: hashlib.sha256(open(os.path.join(d, n), "rb").read()).hexdigest() for n in sorted(os.listdir(d))}


def run_forked(args: list[str], env: dict[str, str]) -> int:
    """Run ``kafkalog ARGS`` in a forked child (the real CLI code path, no interpreter start-up); its wait status."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 3
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
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


def kill_at_every_step(tmp_path: str, src: str, args: list[str], *, min_steps: int,
                       other_broker_view: Callable[[object, object], str | None] | None = None) -> dict[str, set[str]]:
    """Run ``args`` (naming the partition dir ``src``, inside ``<root>/logs/``) once to count its steps, then once
    per step k killed after step k, each on a fresh copy. Asserts, for every k: the broker would load the old or the
    new partition (or what ``other_broker_view(view, old_view)`` names, else it returns None), never a fabricated
    index; kafkalog's recovery leaves exactly the old or the new files, which the broker loads as such, and no
    leftovers in the log dir. Returns ``{"broker": {...}, "kafkalog": {...}}`` of the states seen."""
    old = hashes(src)
    scratch = os.path.join(tmp_path, "scratch")
    old_view = broker_loader.load(src, scratch).view
    ref_root = os.path.join(tmp_path, "ref")
    shutil.copytree(os.path.dirname(src), os.path.join(ref_root, "logs"))
    ref = os.path.join(ref_root, "logs", "t-0")
    steps_log = os.path.join(tmp_path, "steps")
    status = run_forked([a.replace(src, ref) for a in args], {safety.STEP_LOG_ENV: steps_log})
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
    steps = len(open(steps_log).read().split())
    new = hashes(ref)
    assert new != old
    new_view = broker_loader.load(ref, scratch).view
    assert steps >= min_steps
    seen: dict[str, set[str]] = {"broker": set(), "kafkalog": set()}
    for k in range(1, steps + 1):
        root = os.path.join(tmp_path, f"k{k}")
        shutil.copytree(os.path.dirname(src), os.path.join(root, "logs"))
        pdir = os.path.join(root, "logs", "t-0")
        status = run_forked([a.replace(src, pdir) for a in args], {safety.KILL_ENV: str(k)})
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, f"step {k}: not killed ({status})"
        # a broker starting now
        loaded = broker_loader.load(pdir, scratch)
        assert not loaded.fabricated_indexes, f"step {k}: the broker would install a zero-filled index"
        if loaded.view == old_view:
            seen["broker"].add("old")
        elif loaded.view == new_view:
            seen["broker"].add("new")
        else:
            other = other_broker_view(loaded.view, old_view) if other_broker_view else None
            assert other, f"step {k}: the broker would load neither the old nor the new partition: {loaded.view}"
            seen["broker"].add(other)
        # kafkalog's recovery (the next run), whatever KAFKALOG_BACKUP_DIR says
        safety.recover_interrupted(pdir)
        now = hashes(pdir)
        assert now in (old, new), f"step {k}: kafkalog's recovery left a mixed state"
        seen["kafkalog"].add("old" if now == old else "new")
        assert broker_loader.load(pdir, scratch).view == (old_view if now == old else new_view)
        assert [n for n in os.listdir(os.path.dirname(pdir)) if n != ".lock"] == ["t-0"], f"step {k}: leftovers"
        shutil.rmtree(root)
    assert seen["kafkalog"] == {"old", "new"}, seen
    return seen
