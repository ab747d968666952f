"""Harness shared by the repair commands' tests (test_compact.py, test_truncate.py): a broker holding the log dir's
``.lock``, and a repair SIGKILLed after a wall-clock delay (the timed counterpart of ``crash_driver``)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from crash_driver import hashes

from kafkalog_cli.ops.safety import BACKUP_ENV, SLOW_ENV, recover_interrupted


@contextmanager
def broker_lock_held(log_dir: str) -> Iterator[None]:
    """Another process holds ``<log_dir>/.lock`` as a running broker does (``fcntl.lockf``) while the block runs."""
    lock = os.path.join(log_dir, ".lock")
    open(lock, "a").close()
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl,sys,time; f=open(sys.argv[1],'a'); fcntl.lockf(f, fcntl.LOCK_EX);"
         " print('ok', flush=True); time.sleep(60)", lock], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ok"
        yield
    finally:
        holder.kill()
        holder.wait()


def refused_while_locked(tmp_path: str, pdir: str, args: list[str]) -> subprocess.CompletedProcess:
    """Run ``kafkalog ARGS`` while a broker holds the lock; asserts nothing in ``pdir`` changed."""
    with broker_lock_held(os.path.dirname(pdir)):
        before = hashes(pdir)
        proc = subprocess.run([sys.executable, "-m", "kafkalog_cli", *args], capture_output=True, text=True)
        assert hashes(pdir) == before
    return proc


def kill_after_delays(tmp_path: str, src: str, new: dict[str, str], args: Callable[[str, str], list[str]],
                      delays: list[float], wait: Callable[[str, float], None] = lambda _d, s: time.sleep(s)) -> set[str]:
    """Run ``kafkalog args(pdir, backup_dir)`` (slowed by ``KAFKALOG_TEST_SLOW_COMMIT``) on a fresh copy of ``src``
    per delay, SIGKILL it after ``wait(pdir, delay)``, recover; asserts the directory then holds exactly the old or
    the ``new`` files and, when new, that every file replaced or removed is in the backup. Returns the states seen."""
    old = hashes(src)
    journals = os.path.join(tmp_path, "journals")
    env = dict(os.environ, **{SLOW_ENV: "0.02", BACKUP_ENV: journals})
    seen = set()
    for i, delay in enumerate(delays):
        work = os.path.join(tmp_path, f"w{i}", "logs", "t-0")
        shutil.copytree(src, work)
        bk = os.path.join(tmp_path, f"bk{i}")
        proc = subprocess.Popen([sys.executable, "-m", "kafkalog_cli", *args(work, bk)], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait(work, delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        os.environ[BACKUP_ENV] = journals
        try:
            recover_interrupted(work)
        finally:
            del os.environ[BACKUP_ENV]
        state = hashes(work)
        assert state in (old, new), f"mixed state after kill at {delay}s"
        seen.add("old" if state == old else "new")
        if state == new:  # everything replaced or removed is in the backup
            names = {f for _, _, fs in os.walk(bk) for f in fs if not f.endswith(".json")}
            for n in set(old) - set(new) | {n for n in old if n in new and old[n] != new[n]}:
                assert n in names, f"{n} missing from the backup"
    return seen
