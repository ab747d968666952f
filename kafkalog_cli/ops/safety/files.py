"""The durable-file primitives every part of the safety framework uses: names, fsync, atomic JSON, the step hook.

Why a module of its own: the lock, the journal, the transaction and the recovery all write files the same way
(fsync'd, renamed into place) and every file-changing step of theirs calls ``count_step()``, the one hook the crash tests
drive (``KAFKALOG_TEST_KILL_AT_STEP``). The staging names are here because the transaction writes them and the
recovery finds them:

* only files whose names start with a 20-digit offset are staged as ``<final>.cleaned`` (Kafka's suffix for output
  being built): Kafka's loader parses the text before the first '.' of *every* ``*.cleaned``/``*.swap`` file as a
  number (``LogFileUtils.offsetFromFile``), so a ``leader-epoch-checkpoint.cleaned`` would make the broker fail to
  start (NumberFormatException, errata E15);
* other files (checkpoints, ``partition.metadata``) are staged as ``<name>.tmp``, the suffix Kafka's own checkpoint
  writer uses and its loader ignores.
"""

from __future__ import annotations

import json
import os
import re
import signal
import time
import zlib

from kafkalog_cli.errors import RepairRefused, WriteFailedError

BUILD_SUFFIX = ".cleaned"
PLAIN_SUFFIX = ".tmp"  # staging suffix of files whose names carry no offset (Kafka's checkpoint-write suffix)
_OFFSET_NAME = re.compile(r"[0-9]{20}\.")
SLOW_ENV = "KAFKALOG_TEST_SLOW_COMMIT"  # test-only: seconds to sleep between commit steps
KILL_ENV = "KAFKALOG_TEST_KILL_AT_STEP"  # test-only: SIGKILL after the k-th file-changing step
STEP_LOG_ENV = "KAFKALOG_TEST_STEP_LOG"  # test-only: append a line per file-changing step to this file
# checkpoint files Kafka writes as ``<name>.tmp`` and renames (CheckpointFile): a left-over ``.tmp`` is never read
CHECKPOINT_NAMES = ("leader-epoch-checkpoint", "partition.metadata")


def safe_child(partition_dir: str, name: str) -> str:
    """Path of ``name`` inside ``partition_dir``; refuses separators, '.', '..', NUL and symlinks leading outside."""
    if not name or name in (".", "..") or "/" in name or "\0" in name or (os.sep != "/" and os.sep in name):
        raise RepairRefused(
            "unsafe file name for a partition directory", file=partition_dir, expected="a plain file name", found=repr(name)
        )
    path = os.path.join(partition_dir, name)
    if os.path.islink(path):
        real_dir = os.path.realpath(partition_dir)
        target = os.path.realpath(path)
        if os.path.dirname(target) != real_dir:
            raise RepairRefused(
                "refusing to write through a symlink that leads outside the partition directory",
                file=path,
                expected=f"a file inside {real_dir}",
                found=f"symlink to {target}",
            )
    return path


def unlink_quiet(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


step_count = 0  # file-changing steps of this process so far (``count_step``)


def count_step() -> None:
    """Called after every file-changing step of a write (create, write+fsync, link, rename, unlink).

    Test hooks only: ``KAFKALOG_TEST_SLOW_COMMIT`` sleeps that many seconds; ``KAFKALOG_TEST_KILL_AT_STEP=k``
    SIGKILLs this process right after the k-th step (deterministic crash tests: k = 1..N covers every step), and
    ``KAFKALOG_TEST_STEP_LOG`` appends one line per step to that file (how a test learns N).
    """
    global step_count
    step_count += 1
    log = os.environ.get(STEP_LOG_ENV)
    if log:
        with open(log, "a", encoding="utf-8") as f:
            f.write(f"{step_count}\n")
    kill_at = os.environ.get(KILL_ENV)
    if kill_at and int(kill_at) == step_count:
        os.kill(os.getpid(), signal.SIGKILL)
    delay = os.environ.get(SLOW_ENV)
    if delay:
        time.sleep(float(delay))


def write_json_atomic(path: str, data: dict, *, step: bool = True) -> None:
    """Write ``path`` via ``<path>.tmp`` + rename, durably; ``step``: a commit step (see ``count_step``), not recovery."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1)
        f.flush()
        os.fsync(f.fileno())
    if step:
        count_step()
    os.replace(tmp, path)
    fsync_dir(os.path.dirname(path))
    if step:
        count_step()


def read_json(path: str) -> dict | None:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        return data if isinstance(data, dict) else None
    except (OSError, ValueError):
        return None


def offset_named(name: str) -> bool:
    """True when Kafka's loader can parse ``name``'s prefix as an offset, so ``.cleaned``/``.swap`` are safe for it."""
    return _OFFSET_NAME.match(name) is not None


def staging_name(name: str) -> str:
    """The name a staged replacement of ``name`` is built under (see the module docstring)."""
    return name + (BUILD_SUFFIX if offset_named(name) else PLAIN_SUFFIX)


def name_key(name: str) -> tuple[int, str]:
    try:
        return int(name.split(".", 1)[0]), name
    except ValueError:
        return -1, name


def digest(path: str) -> tuple[int, int]:
    """(size, CRC-32) of a file, read in 1 MiB chunks: enough to tell our file from the one it replaced."""
    size = 0
    crc = 0
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            size += len(chunk)
            crc = zlib.crc32(chunk, crc)
    return size, crc


def write_failed(exc: OSError, what: str, path: str | None = None) -> WriteFailedError:
    name = path or exc.filename or ""
    return WriteFailedError(f"{what}: {exc.strerror or exc}", file=str(name) if name else None,
                            expected="a writable file system with free space", found=exc.strerror or str(exc))
