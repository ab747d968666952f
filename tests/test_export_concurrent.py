"""A second ``kafkalog export`` to the same ``--out``, and a second ``replay --execute`` with the same state dir,
while the first one runs: refused (exit 2, naming what is locked, the first one's pid and what to do), and the
first one's output is complete and exactly that of an undisturbed run.

The first run is a real subprocess of the command (``python -m kafkalog_cli``). It is paused deterministically, not
by timing: a ``sitecustomize`` put on its PYTHONPATH by the test installs an audit hook (``sys.addaudithook``) that
sends the process SIGSTOP at a chosen call: the first ``open`` of a path under the staging path (``start``: the
run has planned and begun writing) or the ``os.rename`` of the staging path to ``--out`` (``commit``: everything is
written, nothing is in place yet). The test waits until the kernel reports the process stopped (``/proc/PID/stat``
state T), runs the second command to its end, then sends SIGCONT. Nothing of kafkalog's code knows about the hook.

Before the fix (checked with these tests on the unfixed code), the second export removed the first one's staging
path, taking it for a killed run's partial export, wrote its own and exited 0; resumed, the first one failed with an
internal error (exit 2, "please report it") at either pause point, or (a single NDJSON or Parquet file paused at
``start``) exited 0 too after silently replacing the second one's output. Had the second run been the one to
pause, the first one's commit would have renamed the second one's half-written staging file into place. The
second replay used to be refused already (the state dir's flock); its test fails with that lock taken out.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from partition_gen import random_partition

from kafkalog_cli.ops.export import LOCK_SUFFIX, STAGING_SUFFIX
from kafkalog_cli.storage.lock import lock_file

ROOT = Path(__file__).resolve().parent.parent

STOP_EVENT_ENV = "KAFKALOG_TESTHOOK_STOP_EVENT"  # read by the test's sitecustomize only
STOP_PATH_ENV = "KAFKALOG_TESTHOOK_STOP_PATH"

SITECUSTOMIZE = f'''
import os, signal, sys

_event = os.environ.get("{STOP_EVENT_ENV}")
_path = os.environ.get("{STOP_PATH_ENV}")
_done = []


def _hook(event, args):
    if _done or event != _event or not args or not isinstance(args[0], str):
        return
    if event == "open" and not args[0].startswith(_path):
        return
    if event == "os.rename" and args[0] != _path:
        return
    _done.append(1)
    os.kill(os.getpid(), signal.SIGSTOP)


if _event and _path:
    sys.addaudithook(_hook)
'''


@pytest.fixture()
def hook_dir(tmp_path: Path) -> Path:
    d = tmp_path / "hook"
    d.mkdir()
    (d / "sitecustomize.py").write_text(SITECUSTOMIZE)
    return d


def _env(hook: Path | None = None, event: str | None = None, path: str | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in (STOP_EVENT_ENV, STOP_PATH_ENV)}
    parts = ([str(hook)] if hook else []) + [str(ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
    env["PYTHONPATH"] = os.pathsep.join(parts)
    if event and path:
        env[STOP_EVENT_ENV], env[STOP_PATH_ENV] = event, path
    return env


def _cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "kafkalog_cli", *args]


def _wait_stopped(proc: subprocess.Popen, timeout: float = 120) -> None:
    """Until the kernel says the process is stopped (it stopped itself in the audit hook)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            out, err = proc.communicate()
            raise AssertionError(f"the first run ended (exit {proc.returncode}) before its pause point: {err}")
        try:
            stat = Path(f"/proc/{proc.pid}/stat").read_text()
        except FileNotFoundError:
            stat = ""
        if stat.rsplit(")", 1)[-1].split()[:1] == ["T"]:
            return
        time.sleep(0.01)
    proc.kill()
    raise AssertionError("the first run never reached its pause point")


def tree(p: Path) -> dict[str, str]:
    """Every file under ``p`` (relative path -> SHA-256); a file: its own hash; missing: empty."""
    if p.is_file():
        return {".": hashlib.sha256(p.read_bytes()).hexdigest()}
    if not p.exists():
        return {}
    return {str(f.relative_to(p)): hashlib.sha256(f.read_bytes()).hexdigest() for f in sorted(p.rglob("*"))
            if f.is_file()}


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A log dir with two partitions of several segments (codecs, transactions, leader epochs)."""
    logs = tmp_path_factory.mktemp("concurrent") / "logs"
    random_partition(str(logs / "orders-0"), 31, batches=40)
    random_partition(str(logs / "orders-1"), 32, batches=40)
    return logs


FORMATS = [("ndjson", "o.ndjson"), ("ndjson", "per-partition"), ("parquet", "o.parquet"), ("kafka", "restored")]


@pytest.mark.parametrize("at", ["start", "commit"])
@pytest.mark.parametrize("fmt, name", FORMATS, ids=[f"{f}-{n}" for f, n in FORMATS])
def test_second_export_to_the_same_out_is_refused(tmp_path: Path, hook_dir: Path, source: Path, fmt: str, name: str,
                                                  at: str) -> None:
    if fmt == "parquet":
        pytest.importorskip("pyarrow")
    ref = tmp_path / "ref" / name
    r = subprocess.run(_cmd("export", str(source), "--format", fmt, "--out", str(ref)), cwd=ROOT, env=_env(),
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    complete = tree(ref)
    assert complete

    out = tmp_path / "run" / name
    staging = str(out) + STAGING_SUFFIX
    event, path = ("open", staging) if at == "start" else ("os.rename", staging)
    argv = _cmd("export", str(source), "--format", fmt, "--out", str(out))
    first = subprocess.Popen(argv, cwd=ROOT, env=_env(hook_dir, event, path), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        _wait_stopped(first)
        before = tree(Path(staging))
        second = subprocess.run(argv, cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=300)
        during = tree(Path(staging))
        out_during = out.exists()
    finally:
        first.send_signal(signal.SIGCONT)
        _fout, ferr = first.communicate(timeout=300)
    assert second.returncode == 2, (second.returncode, second.stderr)
    assert "kafkalog: error:" in second.stderr and "another kafkalog export" in second.stderr, second.stderr
    assert f"pid {first.pid}" in second.stderr, second.stderr  # by whom
    assert str(out) + LOCK_SUFFIX in second.stderr, second.stderr  # what is locked
    assert "hint: wait for it" in second.stderr and "another --out" in second.stderr, second.stderr  # what to do
    assert "Traceback" not in second.stderr
    assert during == before and not out_during, "the refused run touched the first one's files"
    assert first.returncode == 0, ferr
    assert tree(out) == complete, "the first run's output is not the complete output of an undisturbed run"
    assert sorted(os.listdir(out.parent)) == [name], "staging or lock files left behind"


def test_second_export_after_the_first_is_refused_as_existing(tmp_path: Path, source: Path) -> None:
    """Once the first run is done its output is in place: the next one is refused as "exists" (nothing overwritten)."""
    out = tmp_path / "o.ndjson"
    argv = _cmd("export", str(source), "--out", str(out))
    assert subprocess.run(argv, cwd=ROOT, env=_env(), capture_output=True, timeout=300).returncode == 0
    data = out.read_bytes()
    r = subprocess.run(argv, cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and "the output exists already" in r.stderr, r.stderr
    assert out.read_bytes() == data and sorted(os.listdir(tmp_path)) == ["o.ndjson"]


def test_a_killed_runs_lock_file_is_taken_over(tmp_path: Path, source: Path) -> None:
    """A lock file nobody holds (a killed run's: the kernel dropped its flock) does not block the next run, which
    removes it when done."""
    out = tmp_path / "restored"
    (tmp_path / ("restored" + LOCK_SUFFIX)).write_text("999999\n")
    r = subprocess.run(_cmd("export", str(source), "--format", "kafka", "--out", str(out)), cwd=ROOT, env=_env(),
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert sorted(os.listdir(tmp_path)) == ["restored"]


def test_lock_file_semantics(tmp_path: Path) -> None:
    """flock is per open file description: a second lock_file in this very process conflicts too, names this pid,
    and once released (the file unlinked under the lock) the path is free again."""
    p = str(tmp_path / "x.kafkalog-lock")
    held, state = lock_file(p)
    assert held is not None and not state.locked
    assert open(p).read() == f"{os.getpid()}\n"
    again, state = lock_file(p)
    assert again is None and state.locked and state.pid == os.getpid()
    held.release()
    assert not os.path.exists(p)
    held.release()  # idempotent
    third, state = lock_file(p)
    assert third is not None
    os.unlink(p)  # replaced under the holder: a newcomer locks the new file, the old holder's release spares it
    fourth, _ = lock_file(p)
    assert fourth is not None
    third.release()
    assert os.path.exists(p)
    fourth.release()
    assert not os.path.exists(p)


# ------------------------------------------------------------------------------------------------------ replay
@pytest.fixture(scope="module")
def mock():  # noqa: ANN201
    pytest.importorskip("confluent_kafka")
    from replay_world import MockCluster

    return MockCluster(3)


def test_second_replay_with_the_same_state_dir_is_refused(tmp_path: Path, hook_dir: Path, mock) -> None:  # noqa: ANN001
    """The first replay stops itself right after taking the state dir's lock (its first open of the offset map);
    a second ``--execute`` of the same command is refused with the first one's pid and produces nothing; resumed,
    the first one produces every record exactly once."""
    from replay_world import Part
    from test_replay import check_consumed

    topic = "rc-concurrent"
    assert mock.create_topic(topic) == 4
    parts = {}
    for sp in (0, 1):
        p = Part(str(tmp_path / "logs" / f"orders-{sp}"))
        for b in range(20):
            p.batch([(b"k%d-%d" % (b, i), b"value %d %d" % (b, i)) for i in range(10)])
            if b % 7 == 3:
                p.batch([(b"tx", b"aborted")], pid=50 + sp, txn=True)
                p.marker(50 + sp, abort=True)
        p.write()
        parts[sp] = p
    st = tmp_path / "state"
    argv = _cmd("replay", *(p.path for p in parts.values()), "--bootstrap-server", mock.bootstrap, "--topic", topic,
                "--state-dir", str(st), "--execute", "--format", "json")
    first = subprocess.Popen(argv, cwd=ROOT, env=_env(hook_dir, "open", str(st / "offset-map.csv")),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_stopped(first)
        ck = (st / "checkpoint.json").read_bytes() if (st / "checkpoint.json").exists() else None
        second = subprocess.run(argv, cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=300)
        ck_during = (st / "checkpoint.json").read_bytes() if (st / "checkpoint.json").exists() else None
        consumed_during = mock.consume(topic)
    finally:
        first.send_signal(signal.SIGCONT)
        fout, ferr = first.communicate(timeout=300)
    assert second.returncode == 2, (second.returncode, second.stderr)
    assert "another kafkalog replay is running with this state dir" in second.stderr, second.stderr
    assert f"pid {first.pid}" in second.stderr and str(st) in second.stderr, second.stderr
    assert "hint: wait for it" in second.stderr and "produce every record again" in second.stderr, second.stderr
    assert ck_during == ck and consumed_during == [], "the refused replay wrote or produced something"
    assert first.returncode == 0, ferr
    doc = json.loads(fout)
    total = sum(len(p.committed_view()) for p in parts.values())
    assert doc["produced"] == total
    check_consumed(mock.consume(topic), {sp: p.committed_view() for sp, p in parts.items()}, topic, {0: 0, 1: 1})
    with open(doc["offset_map"], newline="") as f:
        rows = list(csv.reader(f))[1:]
    assert len(rows) == total and len({(r[1], r[2]) for r in rows}) == total
