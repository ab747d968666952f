"""Issue 12: concurrent writers, a broker starting mid-repair (a real JVM), leftovers and write errors."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import time

import pytest
from crash_driver import run_forked
from index_partition_gen import make_partition
from partition_gen import mark_clean_shutdown, random_partition

from kafkalog_cli.errors import RepairRefused
from kafkalog_cli.ops import safety
from kafkalog_cli.ops.rebuild_index import rebuild_segment


def _hashes(d: str) -> dict[str, str]:
    return {n: hashlib.sha256(open(os.path.join(d, n), "rb").read()).hexdigest() for n in sorted(os.listdir(d))}


def _run(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kafkalog_cli", *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})


def _stale(root: str) -> str:
    """A partition whose indexes all differ from the ones rebuilt with --index-interval-bytes 300."""
    pdir = os.path.join(root, "logs", "t-0")
    for seed in range(100):
        shutil.rmtree(os.path.join(root, "logs"), ignore_errors=True)
        paths = make_partition(pdir, seed, segments=3, max_batches=30, interval=4096, gaps=False)
        if all(rebuild_segment(open(p, "rb").read(), int(os.path.basename(p)[:20]), 300).index
               != open(p[:-4] + ".index", "rb").read() for p in paths):
            return pdir
    raise AssertionError("no suitable seed")


def _nothing_to_rebuild(pdir: str) -> bool:
    """A dry run finds every index as rebuilt with --index-interval-bytes 300 (not its exit code: see the brief)."""
    import json

    r = _run("rebuild-index", "--index-interval-bytes", "300", "--rewrite-valid", "--format", "json", pdir)
    assert r.returncode != 2, r.stderr
    return json.loads(r.stdout)["differences"] == 0


def _slow_writer(pdir: str, delay: str, bk: str) -> subprocess.Popen:
    env = {**os.environ, safety.SLOW_ENV: delay, safety.BACKUP_ENV: bk}
    return subprocess.Popen([sys.executable, "-m", "kafkalog_cli", "rebuild-index", "--index-interval-bytes", "300",
                             "--execute", "--rewrite-valid", pdir], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def _wait_for_staging(pdir: str, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + 30
    while not any(n.endswith(".cleaned") for n in os.listdir(pdir)):
        assert proc.poll() is None and time.monotonic() < deadline, "the writer never staged anything"
        time.sleep(0.01)


# ------------------------------------------------------------------------------------------------ concurrency
def test_second_writer_on_the_same_partition_is_refused_without_lock_file(tmp_path):
    """No .lock in the log dir: a second writing command used to run alongside the first (both exit 0, records
    lost). Now it is refused (exit 2, naming the first one's pid) and changes nothing."""
    pdir = _stale(str(tmp_path))
    assert not os.path.exists(os.path.join(os.path.dirname(pdir), ".lock"))
    logs = {n: h for n, h in _hashes(pdir).items() if n.endswith(".log")}
    first = _slow_writer(pdir, "0.1", str(tmp_path / "bk1"))
    try:
        _wait_for_staging(pdir, first)
        bases = sorted(int(n[:20]) for n in os.listdir(pdir) if n.endswith(".log"))
        seconds = [_run("truncate-to-epoch", "--execute", "--to-offset", str(bases[1] + 1), pdir,
                        env={safety.BACKUP_ENV: str(tmp_path / "bk2")}),
                   _run("compact", "--execute", "--now-ms", "1800000000000", pdir,
                        env={safety.BACKUP_ENV: str(tmp_path / "bk2")})]
        running = first.poll() is None
    finally:
        first.wait()
    assert running, "the first writer finished before the second ones ran: the test proves nothing"
    for second in seconds:
        assert second.returncode == 2, second.stderr
        assert f"pid {first.pid}" in second.stderr and "another kafkalog command" in second.stderr, second.stderr
        assert "Traceback" not in second.stderr
    assert first.returncode == 0, first.stderr.read()
    assert not (tmp_path / "bk2").exists()
    # the first one's result is complete: a dry run finds nothing left to rebuild, and no record was cut
    assert _nothing_to_rebuild(pdir)
    assert {n: h for n, h in _hashes(pdir).items() if n.endswith(".log")} == logs


def test_recovery_never_rolls_back_a_live_writer(tmp_path):
    """recover_interrupted() while another process is committing must refuse, not undo that live change."""
    pdir = _stale(str(tmp_path))
    writer = _slow_writer(pdir, "0.1", str(tmp_path / "bk"))
    try:
        _wait_for_staging(pdir, writer)
        with pytest.raises(RepairRefused) as ei:
            safety.recover_interrupted(pdir)
        running = writer.poll() is None
    finally:
        writer.wait()
    assert running
    assert f"pid {writer.pid}" in ei.value.describe()
    assert writer.returncode == 0, writer.stderr.read()
    assert not [n for n in os.listdir(pdir) if n.endswith((".cleaned", ".swap", ".tmp"))]
    assert _nothing_to_rebuild(pdir)


JAVA_TRYLOCK = """
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;

// What Kafka's org.apache.kafka.server.util.FileLock does when LogManager.lockLogDirs locks a log directory
public class TryLock {
    public static void main(String[] args) throws Exception {
        try (FileChannel ch = FileChannel.open(Paths.get(args[0]), StandardOpenOption.CREATE,
                StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            FileLock lock = ch.tryLock();
            System.out.println(lock == null ? "held" : "free");
            if (lock != null) lock.release();
        }
    }
}
"""


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("javac") is None or shutil.which("java") is None, reason="needs a JDK")
def test_a_jvm_cannot_lock_the_log_dir_while_kafkalog_commits(tmp_path):
    """Kafka 3.8+ deletes .lock on a clean shutdown. kafkalog used to treat a missing .lock as unlocked and write
    without holding anything, so a broker starting mid-repair locked the dir and loaded half-written files. Now
    kafkalog creates .lock and holds it like Kafka's FileLock: a real JVM's tryLock() fails during the commit."""
    src = tmp_path / "java"
    src.mkdir()
    (src / "TryLock.java").write_text(JAVA_TRYLOCK)
    subprocess.run(["javac", str(src / "TryLock.java")], check=True, capture_output=True, timeout=120)
    pdir = _stale(str(tmp_path))
    lock = os.path.join(os.path.dirname(pdir), ".lock")
    assert not os.path.exists(lock)
    writer = _slow_writer(pdir, "0.3", str(tmp_path / "bk"))
    try:
        _wait_for_staging(pdir, writer)
        probe = subprocess.run(["java", "-cp", str(src), "TryLock", lock], capture_output=True, text=True, timeout=60)
        running = writer.poll() is None
    finally:
        writer.wait()
    assert running, "the commit ended before the JVM probed: the test proves nothing"
    assert probe.stdout.strip() == "held", probe.stdout + probe.stderr
    assert writer.returncode == 0, writer.stderr.read()
    assert not os.path.exists(lock), "kafkalog leaves the log dir as it found it"
    probe = subprocess.run(["java", "-cp", str(src), "TryLock", lock], capture_output=True, text=True, timeout=60)
    assert probe.stdout.strip() == "free"


def test_lock_file_is_created_and_held_during_the_commit(tmp_path, monkeypatch):
    """The same without a JVM: while committing, .lock exists and an exclusive POSIX lock on it fails."""
    import fcntl

    pdir = _stale(str(tmp_path))
    lock = os.path.join(os.path.dirname(pdir), ".lock")
    seen = []

    def probe() -> None:
        fd = os.open(lock, os.O_RDWR)
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            seen.append("free")
        except OSError:
            seen.append("held")
        # (closing fd would drop this process's own POSIX lock, so the probe runs in a child)

    def step() -> None:
        pid = os.fork()
        if pid == 0:  # pragma: no cover
            try:
                seen.clear()
                probe()
            finally:
                os._exit(0 if seen == ["held"] else 1)
        _, status = os.waitpid(pid, 0)
        seen.append(os.WEXITSTATUS(status))

    monkeypatch.setattr(safety.files, "count_step", step)
    from kafkalog_cli.ops import rebuild_index as rb

    rb.run([pdir], interval=300, execute=True, backup_dir=str(tmp_path / "bk"))
    assert seen and set(seen) == {0}
    assert not os.path.exists(lock)


# ------------------------------------------------------------------------------------------------ leftovers
def _kill_until(args: list[str], src_root: str, work_root: str, pdir_rel: str, predicate, env=None) -> str:
    """Kill the command at step 1, 2, ... on fresh copies until ``predicate(pdir)``; return that pdir."""
    for k in range(1, 200):
        shutil.rmtree(work_root, ignore_errors=True)
        shutil.copytree(src_root, work_root)
        pdir = os.path.join(work_root, pdir_rel)
        run_forked([a.replace(os.path.join(src_root, pdir_rel), pdir) for a in args],
                   {safety.KILL_ENV: str(k), **(env or {})})
        if predicate(pdir):
            return pdir
    raise AssertionError("no step reached that state")


def test_checkpoint_tmp_left_by_a_crash_before_the_journal_is_removed(tmp_path):
    src = tmp_path / "src"
    random_partition(str(src / "logs" / "t-0"), 6)
    # a cleanly stopped broker's partition (no recovery first): the kills land in the truncation's own commit
    mark_clean_shutdown(str(src / "logs" / "t-0"))
    args = ["truncate-to-epoch", "--execute", "--to-offset", "50", str(src / "logs" / "t-0")]

    def before_journal(pdir: str) -> bool:
        root = os.path.dirname(os.path.dirname(pdir))
        journals = [f for _, _, fs in os.walk(os.path.join(root, "kafkalog-backups")) for f in fs if f == "journal.json"]
        return os.path.exists(os.path.join(pdir, "leader-epoch-checkpoint.tmp")) and not journals

    pdir = _kill_until(args, str(src), str(tmp_path / "w"), os.path.join("logs", "t-0"), before_journal)
    old = _hashes(str(src / "logs" / "t-0"))
    r = _run("rebuild-index", "--execute", "--rewrite-valid", pdir)  # the next writing run, whatever command it is
    assert r.returncode in (0, 1), r.stderr
    assert "leader-epoch-checkpoint.tmp" in r.stderr
    names = os.listdir(pdir)
    assert not [n for n in names if n.endswith((".tmp", ".cleaned", ".swap"))], names
    now = _hashes(pdir)
    assert {n: h for n, h in now.items() if n.endswith((".log", "checkpoint"))} == {
        n: h for n, h in old.items() if n.endswith((".log", "checkpoint"))}


def test_journal_is_found_whatever_the_backup_env_says(tmp_path):
    """Killed after the commit point with KAFKALOG_BACKUP_DIR=A; the next run has B (or none): it must still find
    the journal and roll forward with it (it used to look for the pointer under B and install .swap files with no
    backup, or refuse)."""
    src = tmp_path / "src"
    pdir0 = _stale(str(src))
    args = ["rebuild-index", "--index-interval-bytes", "300", "--execute", "--rewrite-valid", pdir0]

    def committed(pdir: str) -> bool:
        names = os.listdir(pdir)
        return any(n.endswith(".swap") for n in names) and not any(n.endswith(".cleaned") for n in names)

    pdir = _kill_until(args, str(src), str(tmp_path / "w"), os.path.join("logs", "t-0"), committed,
                       env={safety.BACKUP_ENV: str(tmp_path / "A")})
    r = _run("rebuild-index", "--index-interval-bytes", "300", "--execute", "--rewrite-valid", pdir,
             env={safety.BACKUP_ENV: str(tmp_path / "B")})
    assert r.returncode == 0, r.stderr
    assert "finished the interrupted change" in r.stderr and str(tmp_path / "A") in r.stderr, r.stderr
    assert "no journal found" not in r.stderr
    assert not [n for n in os.listdir(pdir) if n.endswith(".swap")]


# ------------------------------------------------------------------------------------------------ write errors
@pytest.fixture
def small_tmpfs(tmp_path):
    """A 1 MiB tmpfs as the log dir (a real ENOSPC); skipped when mounting is not allowed."""
    mnt = tmp_path / "logs"
    mnt.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)], capture_output=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {r.stderr.decode().strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def test_enospc_while_staging_removes_the_staged_file_and_names_it(tmp_path, small_tmpfs):
    pdir = small_tmpfs / "t-0"
    paths = make_partition(str(pdir), 3, segments=1, max_batches=30, interval=100000, gaps=False)
    os.unlink(paths[0][:-4] + ".index")  # to be rebuilt: a file of its own to write
    os.unlink(paths[0][:-4] + ".timeindex")
    fd = os.open(small_tmpfs / "filler", os.O_WRONLY | os.O_CREAT)  # fill the file system up
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError:
        pass
    finally:
        os.close(fd)
    before = _hashes(str(pdir))
    r = _run("rebuild-index", "--index-interval-bytes", "100", "--execute", "--rewrite-valid", str(pdir),
             env={safety.BACKUP_ENV: str(tmp_path / "bk")})
    assert r.returncode == 2, r.stderr
    err = [ln for ln in r.stderr.splitlines() if ln.startswith("kafkalog: error")]
    assert len(err) == 1 and "00000000000000000000.index.cleaned" in err[0], r.stderr
    assert "No space left on device" in err[0] and "error: :" not in err[0]
    assert _hashes(str(pdir)) == before  # the half-written .cleaned is gone, nothing else changed
    assert not os.path.exists(small_tmpfs / ".lock")
    os.unlink(small_tmpfs / "filler")
    r = _run("rebuild-index", "--index-interval-bytes", "100", "--execute", "--rewrite-valid", str(pdir),
             env={safety.BACKUP_ENV: str(tmp_path / "bk")})
    assert r.returncode == 0 and "recovered" not in r.stderr, r.stderr


@pytest.fixture
def shrinking_disk(tmp_path):
    """An ext4 file system on a loop device whose backing file is then cut short: blocks allocated afterwards lie
    past the end of the device, so writing them back fails with a real EIO (at fsync). Skipped without root,
    losetup or mkfs.ext4."""
    if os.geteuid() != 0 or not all(shutil.which(t) for t in ("losetup", "mkfs.ext4", "dumpe2fs")):
        pytest.skip("needs root, losetup, mkfs.ext4 and dumpe2fs")
    img, mnt = tmp_path / "disk.img", tmp_path / "logs"
    mnt.mkdir()
    with open(img, "wb") as f:
        f.truncate(32 << 20)
    if subprocess.run(["mkfs.ext4", "-q", "-F", "-O", "^has_journal", str(img)], capture_output=True).returncode:
        pytest.skip("mkfs.ext4 failed")
    r = subprocess.run(["losetup", "-f", "--show", str(img)], capture_output=True, text=True)
    if r.returncode:
        pytest.skip(f"no loop device: {r.stderr.strip()}")
    loop = r.stdout.strip()
    try:
        if subprocess.run(["mount", loop, str(mnt)], capture_output=True).returncode:
            pytest.skip("cannot mount the loop device")

        def cut() -> None:
            # a fresh ext4 allocates from the start of group 0: cut the device where group 0's free blocks begin,
            # so every block allocated from now on lies past its end (what is already written stays readable)
            os.sync()
            info = subprocess.run(["dumpe2fs", str(img)], capture_output=True, text=True).stdout
            bs = int(re.search(r"^Block size:\s+(\d+)", info, re.M).group(1))
            first_free = int(re.search(r"Group 0:.*?Free blocks: (\d+)", info, re.S).group(1))
            with open(img, "r+b") as f:
                f.truncate(first_free * bs)
            subprocess.run(["losetup", "-c", loop], check=True)

        yield mnt, cut
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)
        subprocess.run(["losetup", "-d", loop], capture_output=True)


def test_eio_while_staging_removes_the_staged_file_and_names_it(tmp_path, shrinking_disk):
    mnt, cut = shrinking_disk
    pdir = mnt / "t-0"
    make_partition(str(pdir), 3, segments=1, max_batches=30, interval=100000, gaps=False)  # indexes to replace
    os.sync()
    before = _hashes(str(pdir))
    cut()
    r = _run("rebuild-index", "--index-interval-bytes", "100", "--execute", "--rewrite-valid", str(pdir),
             env={safety.BACKUP_ENV: str(tmp_path / "bk")})
    assert r.returncode == 2, r.stderr
    err = [ln for ln in r.stderr.splitlines() if ln.startswith("kafkalog: error")]
    assert len(err) == 1 and ".index.cleaned" in err[0] and "Input/output error" in err[0], r.stderr
    assert "error: :" not in err[0]
    assert _hashes(str(pdir)) == before


def test_failure_after_the_exchange_finishes_forward_and_keeps_the_backup(tmp_path, monkeypatch):
    """An error after the directories were exchanged (the commit point) must finish the change, never "roll back"
    (which would delete the backup of a change that is in place)."""
    from kafkalog_cli.errors import WriteFailedError
    from kafkalog_cli.ops import truncate

    ref = str(tmp_path / "ref" / "logs" / "t-0")
    random_partition(ref, 6)
    work = str(tmp_path / "work" / "logs" / "t-0")
    shutil.copytree(ref, work)
    truncate.run(ref, None, 50, execute=True, backup_dir=str(tmp_path / "refbk"))
    new = _hashes(ref)
    real_remove = safety.transaction.remove_side
    calls = []

    def failing_remove(side: str) -> None:
        calls.append(side)
        if len(calls) == 1:
            raise OSError(5, "Input/output error", side)
        real_remove(side)

    monkeypatch.setattr(safety.transaction, "remove_side", failing_remove)
    with pytest.raises(WriteFailedError):
        truncate.run(work, None, 50, execute=True, backup_dir=str(tmp_path / "bk"))
    assert _hashes(work) == new
    assert os.listdir(os.path.dirname(work)) == ["t-0"]
    (bdir,) = os.listdir(tmp_path / "bk")
    assert any(n.endswith(".log") for n in os.listdir(tmp_path / "bk" / bdir))  # the later segments' backups
