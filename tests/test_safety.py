"""The safety framework: broker-lock refusal, safe paths, Transaction, and kill -9 at random moments of a commit."""

from __future__ import annotations

import hashlib
import os
import random
import shutil
import signal
import subprocess
import sys
import time

import pytest
from index_partition_gen import make_partition

from kafkalog_cli.errors import RepairRefused
from kafkalog_cli.ops import safety
from kafkalog_cli.ops.rebuild_index import rebuild_segment


def _hashes(d: str) -> dict[str, str]:
    return {n: hashlib.sha256(open(os.path.join(d, n), "rb").read()).hexdigest() for n in sorted(os.listdir(d))}


def _run(*args, env=None, **kw):
    return subprocess.run([sys.executable, "-m", "kafkalog_cli", *args], capture_output=True, text=True, timeout=60,
                          env={**os.environ, **(env or {})}, **kw)


HOLDER = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
if sys.argv[2] == "fcntl":
    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
else:
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
print("locked", flush=True)
time.sleep(60)
"""


@pytest.mark.parametrize("kind", ["fcntl", "flock"])
def test_locked_log_dir_is_refused(tmp_path, kind):
    pdir = tmp_path / "logs" / "t-0"
    paths = make_partition(str(pdir), 1, segments=1)
    os.unlink(paths[0][:-4] + ".index")
    lock = tmp_path / "logs" / ".lock"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(lock), kind], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        before = _hashes(str(pdir))
        with pytest.raises(RepairRefused) as ei:
            safety.ensure_unlocked(str(pdir))
        if kind == "fcntl":
            assert f"pid {holder.pid}" in ei.value.describe()
        r = _run("rebuild-index", "--execute", str(pdir), env={"KAFKALOG_BACKUP_DIR": str(tmp_path / "bk")})
        assert r.returncode == 2
        assert "locked by a running broker" in r.stderr and "Traceback" not in r.stderr
        assert len([ln for ln in r.stderr.splitlines() if ln.startswith("kafkalog: error")]) == 1
        assert _hashes(str(pdir)) == before and not (tmp_path / "bk").exists()
    finally:
        holder.kill()
        holder.wait()
    safety.ensure_unlocked(str(pdir))  # released with the process
    assert lock.stat().st_size == 0  # the probe never truncates or writes


def test_unlocked_lock_file_is_fine(tmp_path):
    (tmp_path / "logs" / "t-0").mkdir(parents=True)
    safety.ensure_unlocked(str(tmp_path / "logs" / "t-0"))  # no .lock at all
    (tmp_path / "logs" / ".lock").write_bytes(b"")
    safety.ensure_unlocked(str(tmp_path / "logs" / "t-0"))
    assert not (tmp_path / "logs" / "t-0" / ".lock").exists()


def test_safe_child(tmp_path):
    pdir = tmp_path / "logs" / "t-0"
    pdir.mkdir(parents=True)
    assert safety.safe_child(str(pdir), "00000000000000000000.index") == str(pdir / "00000000000000000000.index")
    for bad in ("", ".", "..", "../x", "a/b", "x\0"):
        with pytest.raises(RepairRefused):
            safety.safe_child(str(pdir), bad)
    (tmp_path / "outside").write_bytes(b"x")
    os.symlink(tmp_path / "outside", pdir / "evil.index")
    with pytest.raises(RepairRefused):
        safety.safe_child(str(pdir), "evil.index")


def test_backup_dir_outside_log_dir(tmp_path, monkeypatch):
    monkeypatch.delenv(safety.BACKUP_ENV, raising=False)
    pdir = tmp_path / "logs" / "t-0"
    pdir.mkdir(parents=True)
    b = safety.default_backup_dir(str(pdir))
    assert b.startswith(str(tmp_path / "kafkalog-backups" / "t-0-"))
    monkeypatch.setenv(safety.BACKUP_ENV, str(tmp_path / "elsewhere"))
    assert safety.default_backup_dir(str(pdir)).startswith(str(tmp_path / "elsewhere" / "t-0-"))
    with pytest.raises(RepairRefused):
        safety.Transaction(str(pdir), str(tmp_path / "logs" / "bk"))


def test_transaction_commit_abort_and_modes(tmp_path, monkeypatch):
    monkeypatch.setenv(safety.BACKUP_ENV, str(tmp_path / "bk"))
    pdir = tmp_path / "logs" / "t-0"
    pdir.mkdir(parents=True)
    (pdir / "00000000000000000000.log").write_bytes(b"L")
    (pdir / "00000000000000000000.index").write_bytes(b"old")
    os.chmod(pdir / "00000000000000000000.index", 0o640)
    (pdir / "00000000000000000007.snapshot").write_bytes(b"S")
    with safety.Transaction(str(pdir), None) as t:
        t.stage("00000000000000000000.index", b"new")
        t.stage("00000000000000000000.timeindex", lambda f: f.write(b"tt"))
        assert (pdir / "00000000000000000000.index.cleaned").exists()
    assert not (pdir / "00000000000000000000.index.cleaned").exists()  # left without commit: aborted
    assert (pdir / "00000000000000000000.index").read_bytes() == b"old"
    with safety.Transaction(str(pdir), None) as t:
        t.stage("00000000000000000000.index", b"new")
        t.delete("00000000000000000007.snapshot")
        t.commit()
    assert sorted(os.listdir(pdir)) == ["00000000000000000000.index", "00000000000000000000.log"]
    assert (pdir / "00000000000000000000.index").read_bytes() == b"new"
    assert oct(os.stat(pdir / "00000000000000000000.index").st_mode & 0o777) == "0o640"
    assert _hashes(t.backup_dir)["00000000000000000007.snapshot"] == hashlib.sha256(b"S").hexdigest()
    assert (open(os.path.join(t.backup_dir, "00000000000000000000.index"), "rb").read()) == b"old"
    assert safety.recover_interrupted(str(pdir)) == []


def test_a_writer_that_raises_leaves_no_staged_file(tmp_path, monkeypatch):
    """A writer refusing its own output mid-stage (compact's cross-check of a cleaned segment) left its half-written
    ``.index.cleaned`` behind: not yet registered as staged, the abort did not remove it, although the refusal said
    nothing was changed (scripts/explore_oracle.py compact seed 58)."""
    monkeypatch.setenv(safety.BACKUP_ENV, str(tmp_path / "bk"))
    pdir = tmp_path / "logs" / "t-0"
    pdir.mkdir(parents=True)
    (pdir / "00000000000000000000.log").write_bytes(b"L")

    def refuses(f):
        f.write(b"half")
        raise ValueError("refused")

    with pytest.raises(ValueError), safety.Transaction(str(pdir), None) as t:
        t.stage("00000000000000000000.log", b"new log")
        t.stage("00000000000000000000.index", refuses)
    assert sorted(os.listdir(pdir)) == ["00000000000000000000.log"]


def test_plain_names_are_staged_as_tmp_never_cleaned_or_swap(tmp_path, monkeypatch):
    """Kafka parses the prefix of every *.cleaned/*.swap as an offset: a checkpoint staged that way stops the broker."""
    monkeypatch.setenv(safety.BACKUP_ENV, str(tmp_path / "bk"))
    pdir = tmp_path / "logs" / "t-0"
    pdir.mkdir(parents=True)
    (pdir / "leader-epoch-checkpoint").write_bytes(b"old")
    (pdir / "00000000000000000000.index").write_bytes(b"oldi")
    seen: list[str] = []
    monkeypatch.setattr(safety.files, "count_step", lambda: seen.extend(os.listdir(pdir)))
    with safety.Transaction(str(pdir), None) as t:
        t.stage("leader-epoch-checkpoint", b"new")
        t.stage("00000000000000000000.index", b"newi")
        assert sorted(os.listdir(pdir))[1:] == ["00000000000000000000.index.cleaned", "leader-epoch-checkpoint",
                                                 "leader-epoch-checkpoint.tmp"]
        t.commit()
    assert (pdir / "leader-epoch-checkpoint").read_bytes() == b"new"
    assert not [n for n in seen if n.endswith((".cleaned", ".swap")) and not n[0].isdigit()]
    assert "leader-epoch-checkpoint.tmp" in seen
    # an interrupted commit before its point rolls the .tmp back; after it, rolls it forward
    for state, expect in (("backing-up", b"new"), ("committing", b"newer")):
        t = safety.Transaction(str(pdir), None)
        t.stage("leader-epoch-checkpoint", b"newer")
        t._set_state(state)
        safety.recover_interrupted(str(pdir))
        assert sorted(os.listdir(pdir)) == ["00000000000000000000.index", "leader-epoch-checkpoint"]
        assert (pdir / "leader-epoch-checkpoint").read_bytes() == expect


def test_recover_without_journal_follows_kafka_rules(tmp_path, monkeypatch):
    monkeypatch.setenv(safety.BACKUP_ENV, str(tmp_path / "bk"))
    pdir = tmp_path / "logs" / "t-0"
    pdir.mkdir(parents=True)
    (pdir / "00000000000000000000.index").write_bytes(b"old")
    (pdir / "00000000000000000000.index.swap").write_bytes(b"new")
    (pdir / "00000000000000000000.timeindex.cleaned").write_bytes(b"half")
    done = safety.recover_interrupted(str(pdir))
    assert len(done) == 2 and sorted(os.listdir(pdir)) == ["00000000000000000000.index"]
    (pdir / "00000000000000000000.index.swap").write_bytes(b"new")
    safety.recover_interrupted(str(pdir))
    assert (pdir / "00000000000000000000.index").read_bytes() == b"new"
    (pdir / "00000000000000000000.log.swap").write_bytes(b"x")
    with pytest.raises(RepairRefused):
        safety.recover_interrupted(str(pdir))


def _stale_partition(root: str) -> str:
    """Three segments whose six index files all differ from the rebuilt ones (built with another interval)."""
    pdir = os.path.join(root, "logs", "t-0")
    for seed in range(200):
        shutil.rmtree(os.path.join(root, "logs"), ignore_errors=True)
        paths = make_partition(pdir, seed, segments=3, max_batches=40, interval=4096, gaps=False)
        ok = True
        for p in paths:
            base = int(os.path.basename(p)[:20])
            rb = rebuild_segment(open(p, "rb").read(), base, 300)
            ok &= rb.index != open(p[:-4] + ".index", "rb").read()
            ok &= rb.timeindex != open(p[:-4] + ".timeindex", "rb").read()
        if ok:
            return pdir
    raise AssertionError("no suitable seed")


def test_kill_9_at_random_moments_leaves_old_or_new(tmp_path, monkeypatch):
    """Run the real command, kill -9 it at random moments of a slowed-down commit, recover, and check that the
    partition directory holds exactly the old or exactly the new files, and that the backup holds every old file
    whenever the new state was reached."""
    pristine = _stale_partition(str(tmp_path / "pristine"))
    old = _hashes(pristine)
    args = ["rebuild-index", "--index-interval-bytes", "300", "--execute", "--rewrite-valid"]  # stale but valid: rewritten only on request
    # the new state, from an uninterrupted run on a copy
    ref = str(tmp_path / "ref")
    shutil.copytree(os.path.dirname(pristine), os.path.join(ref, "logs"))
    t0 = time.monotonic()
    slow = {"KAFKALOG_TEST_SLOW_COMMIT": "0.03", "KAFKALOG_BACKUP_DIR": str(tmp_path / "refbk")}
    r = _run(*args, os.path.join(ref, "logs", "t-0"), env=slow)
    duration = time.monotonic() - t0
    assert r.returncode == 0, r.stderr
    new = _hashes(os.path.join(ref, "logs", "t-0"))
    assert new.keys() == old.keys() and all(new[n] != old[n] for n in new if not n.endswith(".log"))
    rng = random.Random(1234)
    outcomes = {"old": 0, "new": 0}
    for i in range(14):
        work = str(tmp_path / f"run{i}")
        shutil.copytree(os.path.dirname(pristine), os.path.join(work, "logs"))
        pdir = os.path.join(work, "logs", "t-0")
        bk = os.path.join(work, "bk")
        env = {**os.environ, "KAFKALOG_TEST_SLOW_COMMIT": "0.03", "KAFKALOG_BACKUP_DIR": bk}
        proc = subprocess.Popen([sys.executable, "-m", "kafkalog_cli", *args, pdir], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.1, duration))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        monkeypatch.setenv(safety.BACKUP_ENV, bk)
        safety.recover_interrupted(pdir)
        now = _hashes(pdir)
        assert now in (old, new), f"run {i}: mixed state {now}"
        state = "old" if now == old else "new"
        outcomes[state] += 1
        if state == "new":
            (bdir,) = [os.path.join(bk, d) for d in os.listdir(bk) if not d.startswith(".")]
            backed = _hashes(bdir)
            for name, h in old.items():
                if old[name] != new[name]:
                    assert backed.get(name) == h, f"run {i}: {name} missing from the backup"
        # and the command itself recovers/finishes cleanly afterwards
        r = _run(*args, pdir, env={"KAFKALOG_BACKUP_DIR": bk})
        assert r.returncode == 0, r.stderr
        assert _hashes(pdir) == new
    assert outcomes["old"] and outcomes["new"], outcomes


def test_lock_check_follows_symlinked_partition_path(tmp_path):
    """A symlinked partition path must be checked against the real log dir's .lock, not the link's parent."""
    pdir = tmp_path / "logs" / "t-0"
    make_partition(str(pdir), 1, segments=1)
    os.unlink(str(pdir / "00000000000000000000.index"))
    (tmp_path / "links").mkdir()
    link = tmp_path / "links" / "t-0"
    os.symlink(pdir, link)
    lock = tmp_path / "logs" / ".lock"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(lock), "fcntl"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        before = _hashes(str(pdir))
        r = _run("rebuild-index", "--execute", str(link), env={"KAFKALOG_BACKUP_DIR": str(tmp_path / "bk")})
        assert r.returncode == 2 and "locked by a running broker" in r.stderr, r.stderr
        assert _hashes(str(pdir)) == before
    finally:
        holder.kill()
        holder.wait()


LOCK_TRY = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
try:
    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    print("free")
except OSError:
    print("held")
"""


def test_lock_is_held_for_the_whole_execute(tmp_path):
    """A broker starting mid-write must find .lock taken (its tryLock fails), not load half-written files."""
    pdir = _stale_partition(str(tmp_path))
    lock = os.path.join(os.path.dirname(pdir), ".lock")
    open(lock, "w").close()
    env = {**os.environ, "KAFKALOG_TEST_SLOW_COMMIT": "0.2", "KAFKALOG_BACKUP_DIR": str(tmp_path / "bk")}
    proc = subprocess.Popen([sys.executable, "-m", "kafkalog_cli", "rebuild-index", "--index-interval-bytes", "300",
                             "--execute", "--rewrite-valid", pdir], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seen = set()
    try:
        while proc.poll() is None:
            if any(n.endswith(".cleaned") for n in os.listdir(pdir)):  # inside the write
                seen.add(subprocess.run([sys.executable, "-c", LOCK_TRY, lock], capture_output=True,
                                        text=True).stdout.strip())
            time.sleep(0.05)
    finally:
        proc.wait()
    assert proc.returncode == 0, proc.stderr.read()
    assert seen == {"held"}
    assert subprocess.run([sys.executable, "-c", LOCK_TRY, lock], capture_output=True, text=True).stdout.strip() == "free"


def test_plan_warns_when_log_dir_is_not_a_kafka_log_dir(tmp_path):
    pdir = tmp_path / "logs" / "t-0"
    make_partition(str(pdir), 1, segments=1)
    r = _run("rebuild-index", str(pdir))
    assert "neither .lock nor meta.properties" in r.stdout
    (tmp_path / "logs" / "meta.properties").write_text("version=1\n")
    r = _run("rebuild-index", str(pdir))
    assert "neither .lock nor meta.properties" not in r.stdout


def _crash_at_first_swap_rename(pdir: str, backup: str, new_index: bytes) -> None:
    """Child process: stage a replacement and a deletion, then die (os._exit) at the first .cleaned -> .swap."""
    import os as _os

    from kafkalog_cli.ops import safety as sf

    real_replace = _os.replace

    def dying_replace(src, dst, *a, **k):  # noqa: ANN001, ANN002, ANN003, ANN202
        if str(src).endswith(".cleaned"):
            _os._exit(9)
        return real_replace(src, dst, *a, **k)

    sf.transaction.os.replace = dying_replace
    _os.environ[sf.NO_EXCHANGE_ENV] = "1"  # the in-place commit (5.log is outside every new segment's range)
    with sf.Transaction(pdir, backup) as tx:
        tx.stage("00000000000000000000.index", new_index)
        tx.delete("00000000000000000005.log")
        tx.commit()


def test_no_roll_forward_onto_files_a_broker_put_back(tmp_path) -> None:  # noqa: ANN001
    """Killed before the commit point; a broker then starts and its loader deletes our .cleaned files (spec §8
    step 1). Our next recovery must not 'finish' the change: the files it would delete have no replacement."""
    import multiprocessing

    from kafkalog_cli.ops.safety import recover_interrupted

    logdir = tmp_path / "kafka-logs"
    pdir = logdir / "t-0"
    pdir.mkdir(parents=True)
    (pdir / "00000000000000000000.log").write_bytes(b"old log 0")
    (pdir / "00000000000000000000.index").write_bytes(b"old index")
    (pdir / "00000000000000000005.log").write_bytes(b"segment 5 must survive")
    before = {p.name: p.read_bytes() for p in pdir.iterdir()}
    ctx = multiprocessing.get_context("fork")
    child = ctx.Process(target=_crash_at_first_swap_rename, args=(str(pdir), str(tmp_path / "backup"), b"NEW INDEX"))
    child.start()
    child.join(30)
    assert child.exitcode == 9
    leftovers = [p for p in pdir.iterdir() if p.name.endswith(".cleaned")]
    assert leftovers, "the child should have died with .cleaned files staged"
    for p in leftovers:  # what Kafka's loader does with .cleaned files at start-up
        p.unlink()
    done = recover_interrupted(str(pdir))
    assert any("discarded by someone else" in line for line in done), done
    assert {p.name: p.read_bytes() for p in pdir.iterdir()} == before


def test_journal_of_another_format_is_refused_not_guessed(tmp_path, monkeypatch):
    """Recovery reads only the journal format kafkalog writes (version 2, every field present); a journal without
    ``digests`` (an older kafkalog's) used to roll forward unchecked. Now it is refused, named, nothing changed."""
    monkeypatch.setenv(safety.BACKUP_ENV, str(tmp_path / "bk"))
    pdir = tmp_path / "logs" / "t-0"
    pdir.mkdir(parents=True)
    (pdir / "00000000000000000000.log").write_bytes(b"L")
    (pdir / "00000000000000000000.index.cleaned").write_bytes(b"new")
    backup = tmp_path / "bk" / "t-0-old"
    journal = {"version": 1, "state": "committing", "partition_dir": str(pdir), "backup_dir": str(backup),
               "replace": ["00000000000000000000.index"], "create": [], "delete": []}
    safety.files.write_json_atomic(str(backup / safety.JOURNAL_NAME), journal, step=False)
    safety.journal.write_pointer(str(pdir), {"backup_dir": str(backup), "state": "committing"})
    before = _hashes(str(pdir))
    with pytest.raises(RepairRefused) as exc:
        safety.recover_interrupted(str(pdir))
    assert "journal" in exc.value.message and exc.value.file == str(backup / safety.JOURNAL_NAME)
    assert "digests" in (exc.value.found or "")
    assert _hashes(str(pdir)) == before
