"""The one kill-at-every-syscall driver of the crash tests (test_crash_steps.py, test_qa2_crash_more.py).

A writing command runs in a forked child (the real CLI code path, no interpreter start-up) with an audit hook
(``sys.addaudithook``) that sees every file-changing system call Python makes under the scenario's root (the log
dir, the backup dir and the journal pointers beside it): ``open`` for writing or creating, ``os.link`` (linkat),
``os.rename``/``os.replace`` (renameat), ``os.remove``/``os.unlink`` (unlinkat), ``os.mkdir``, ``os.rmdir``,
``os.truncate``, ``os.utime``, and ``renameat2(RENAME_EXCHANGE)`` (through ctypes: its ``dlsym``, made
right before each call). An uninterrupted run counts
them (N); a run with kill point k SIGKILLs the child right *before* its k-th such call, so k = 1..N plus the finished
run cover every state between two file-changing calls (the data written into an open file is not a separate state:
only staged ``.cleaned``/``.tmp`` files are written that way). This is independent of kafkalog's own step hook
(``safety.files.count_step``), which a missing ``count_step()`` call would silently skip.

For each kill point the directory left behind is loaded

* by the broker-loader model (``broker_loader``) and, with ``oracle`` (the ``kafka_real`` fixture), by **Kafka's
  own LogLoader** (``Load`` in the shared Batch JVM; Load copies the partition and its data-dir files into a fresh
  work dir, the input stays untouched): its log state (offsets, segments with their next offsets and aborted
  transactions, leader epochs, producers, first unstable offset) and the bytes of every ``.log`` and ``.txnindex``
  after loading must be exactly those of the old or of the new partition;
* sibling ``-delete`` directories (the exchange commit's discarded side) are what a broker's ``LogManager`` would
  also load (LogManager.loadLogs lists every sub-directory of the log dir; loadLog queues ``-delete`` ones for
  deletion after ``UnifiedLog`` has loaded them, LogManager.scala ``loadLog``/``addLogToBeDeleted``): the harness
  has no LogManager, so the ``-delete`` dir is checked two ways: none of its files (those LogLoader opens: the
  regular files directly in it) shares an inode with a live file of the partition, and Kafka's ``Load`` of it as
  its own partition dir shows what LogLoader would write there;
* then by kafkalog's recovery, after which the directory must hold exactly the old or exactly the new files.

``sample``: how many kill points to replay (a deterministic spread including the first and last; None: all of them,
the ``oracle_long`` campaign).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import signal
import sys
from collections.abc import Callable

import broker_loader

from kafkalog_cli.ops import safety

KILL_AT_CALL_ENV = "KAFKALOG_TEST_KILL_AT_CALL"  # test driver only: SIGKILL before the k-th file-changing call
CALL_LOG_ENV = "KAFKALOG_TEST_CALL_LOG"  # test driver only: write the list of file-changing calls here at exit
NOW_MS = 1_700_000_100_000  # Load's clock: near the writers' clocks, so no producer expires


def hashes(d: str) -> dict[str, str]:
    """SHA-256 of every file in ``d`` by name: "exactly the old or exactly the new files"."""
    return {n: hashlib.sha256(open(os.path.join(d, n), "rb").read()).hexdigest() for n in sorted(os.listdir(d))
            if os.path.isfile(os.path.join(d, n))}


_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


def _install_call_hook(root: str, kill_at: int, calls: list[str]) -> None:
    """In the child: count (and at ``kill_at`` die before) every file-changing call on a path under ``root``."""
    root = os.path.realpath(root) + os.sep
    busy = [False]

    def path_of(p: object, dir_fd: object = None) -> str | None:
        if isinstance(p, int) or p is None:
            return None  # an fd: the open that made it was counted
        s = os.fsdecode(p)  # type: ignore[arg-type]
        if not os.path.isabs(s):
            base = os.readlink(f"/proc/self/fd/{dir_fd}") if isinstance(dir_fd, int) else os.getcwd()
            s = os.path.join(base, s)
        return s

    def under(*paths: str | None) -> bool:
        return any(p is not None and (os.path.realpath(os.path.dirname(p)) + os.sep).startswith(root) for p in paths)

    def hook(event: str, args: tuple) -> None:
        if busy[0]:
            return
        busy[0] = True
        try:
            what = None
            if event == "open":
                path, mode, flags = args
                writing = (flags & _WRITE_FLAGS) if isinstance(flags, int) and flags >= 0 else \
                    any(c in (mode or "") for c in "wax+")
                if writing and under(path_of(path)):
                    what = f"open {path}"
            elif event in ("os.link", "os.rename"):
                src, dst, sfd, dfd = args[:4]
                if under(path_of(src, sfd), path_of(dst, dfd)):
                    what = f"{event} {src} {dst}"
            elif event in ("os.remove", "os.rmdir", "os.mkdir"):
                p, dfd = args[0], args[-1]
                if under(path_of(p, dfd)):
                    what = f"{event} {p}"
            elif event in ("os.truncate", "os.utime"):
                if under(path_of(args[0])):
                    what = f"{event} {args[0]}"
            elif event == "ctypes.dlsym" and len(args) > 1 and args[1] == "renameat2":
                # a foreign call raises no audit event; kafkalog looks renameat2 up right before each call
                # (safety.transaction._rename_exchange makes a new CDLL each time), so its lookup marks the call
                what = "renameat2"
            if what is not None:
                calls.append(what)
                if len(calls) == kill_at:
                    os.kill(os.getpid(), signal.SIGKILL)
        finally:
            busy[0] = False

    sys.addaudithook(hook)


def run_forked(args: list[str], env: dict[str, str], *, root: str | None = None, kill_at: int = 0,
               call_log: str | None = None) -> int:
    """Run ``kafkalog ARGS`` in a forked child; its wait status. With ``root``: the file-changing calls under it are
    counted (into ``call_log``, one per line) and the child is killed before the ``kill_at``-th (0: never)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 3
        calls: list[str] = []
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            sys.stdout = sys.stderr = open(os.devnull, "w")
            os.environ.update(env)
            safety.files.step_count = 0
            from kafkalog_cli.cli.main import cli

            if root is not None:
                _install_call_hook(root, kill_at, calls)
            cli.main(args, prog_name="kafkalog", standalone_mode=True)
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        finally:
            if call_log:
                with open(call_log, "w") as f:
                    f.write("".join(c + "\n" for c in calls))
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return status


# ------------------------------------------------------------------------------------------------ Kafka's Load
def kafka_load(oracle, pdir: str, work: str) -> dict:
    """Kafka's LogLoader on (a copy of) ``pdir``; the JSON of ``Load``."""
    shutil.rmtree(work, ignore_errors=True)
    return oracle.json("Load", "--in", pdir, "--work", work, "--now-ms", str(NOW_MS), "--segment-details")


def kafka_view(res: dict) -> object:
    """What a loaded log serves, from Load's JSON: the log state and the bytes of every .log / .txnindex."""
    if res.get("error"):
        return ("error", res["error"].get("class"), res["error"].get("message"))
    log = res["log"]
    segs = [(s["baseOffset"], s["sizeBytes"], s.get("nextOffset"), s.get("abortedTxns")) for s in log["segments"]]
    producers = sorted((p["producerId"], p["producerEpoch"], p["lastSeq"], p["lastDataOffset"],
                        p["currentTxnFirstOffset"], p["coordinatorEpoch"]) for p in log["producers"])
    files = sorted((f["name"], f["sha256"]) for f in res["filesAfter"] if f["name"].endswith((".log", ".txnindex")))
    return json.dumps({"start": log["logStartOffset"], "end": log["logEndOffset"], "segments": segs,
                       "epochs": log["leaderEpochs"], "producers": producers, "fuo": log["firstUnstableOffset"],
                       "files": files}, sort_keys=True)


def shared_inodes(side: str, live: str) -> list[str]:
    """Regular files directly in ``side`` (what Kafka's LogLoader of that dir opens) sharing an inode with a file of
    ``live``."""
    inodes = {(st.st_dev, st.st_ino): n for n in os.listdir(live)
              if os.path.isfile(p := os.path.join(live, n)) and (st := os.stat(p))}
    out = []
    for n in sorted(os.listdir(side)):
        p = os.path.join(side, n)
        if os.path.isfile(p) and not os.path.islink(p):
            st = os.stat(p)
            if (st.st_dev, st.st_ino) in inodes:
                out.append(f"{n} = live {inodes[(st.st_dev, st.st_ino)]}")
    return out


def _entries(logdir: str) -> list[str]:
    # recover --execute's recovery-point checkpoint entry is written after the commit (its ``after`` hook), not by
    # the transaction: a kill before it leaves the old entry (or none), with which the broker recovers more, not less,
    # and maybe its .tmp, as a kill during the broker's own CheckpointFile.write leaves one
    return sorted(n for n in os.listdir(logdir) if n != ".lock" and not n.startswith("recovery-point-offset-checkpoint"))


def _kind(call: str, root: str) -> str:
    """A call's class for sampling: the operation and what it touches (the partition, a -delete side, the log
    dir, kafkalog's backup/journal) and the file's suffix."""
    op, _, rest = call.partition(" ")
    path = rest.split(" ")[-1].replace(root, "")
    where = "side" if safety.DELETE_DIR_SUFFIX in path else "backup" if "kafkalog-backups" in path else \
        "partition" if "/t-0/" in path else "logdir"
    return f"{op} {where} {os.path.splitext(path)[1]}"


def _sample(calls: list[str], sample: int | None, seed: str, root: str) -> list[int]:
    """Kill points to replay: all (None), else up to ``sample``: the first and last, every point where the kind of
    call changes on the partition, a side or the log dir (where a new file state begins: the windows a broker
    could see), then a deterministic random fill."""
    n = len(calls)
    if sample is None or n <= sample:
        return list(range(1, n + 1))
    rnd = random.Random(seed)
    kinds = [_kind(c, root) for c in calls]
    edges = [k for k in range(2, n) if kinds[k - 1] != kinds[k - 2] and " backup " not in kinds[k - 1] + " "]
    picked = {1, n}
    rnd.shuffle(edges)
    picked |= set(edges[: max(0, sample - 2)])
    rest = [k for k in range(2, n) if k not in picked]
    picked |= set(rnd.sample(rest, max(0, min(len(rest), sample - len(picked)))))
    return sorted(picked)


def kill_at_every_step(tmp_path: str, src: str, args: list[str], *, min_steps: int,
                       other_broker_view: Callable[[object, object], str | None] | None = None,
                       oracle=None, sample: int | None = None,
                       middle: list[str] | None = None) -> dict[str, set[str]]:
    """Run ``args`` (naming the partition dir ``src``, inside ``<root>/logs/``) once to count its file-changing calls,
    then once per kill point k, killed before call k, each on a fresh copy. Asserts, for every k: the broker would
    load the old or the new partition (or what ``other_broker_view(view, old_view)`` names, else it returns None),
    never a fabricated index; with ``oracle`` the same of Kafka's own Load, and no ``-delete`` side sharing an inode
    with a live file; kafkalog's recovery leaves exactly the old or the new files, which the broker loads as such,
    and no leftovers in the log dir. Returns ``{"broker": {...}, "kafkalog": {...}, "kafka": {...}}``.

    ``middle``: the command is two changes, each its own transaction (compact / truncate-to-epoch on a partition
    left by a crash: the broker's start-up recovery first, ``ops/load_first.py``, then the repair): ``middle`` is
    the command that makes the state between them (``recover --execute ...`` naming ``src``), a third state every
    kill point may also leave ("mid": after kafkalog's recovery, exactly its files; to a loader, its log, which is
    the old partition's as the broker's own start-up recovers it)."""
    old = hashes(src)
    scratch = os.path.join(tmp_path, "scratch")
    work = os.path.join(tmp_path, "kafka-work")
    old_view = broker_loader.load(src, scratch).view
    kafka_old = kafka_view(kafka_load(oracle, src, work)) if oracle else None
    ref_root = os.path.join(tmp_path, "ref")
    shutil.copytree(os.path.dirname(src), os.path.join(ref_root, "logs"))
    ref = os.path.join(ref_root, "logs", "t-0")
    calls_log = os.path.join(tmp_path, "calls")
    status = run_forked([a.replace(src, ref) for a in args], {}, root=ref_root, call_log=calls_log)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
    calls = open(calls_log).read().splitlines()
    new = hashes(ref)
    assert new != old
    entries = {"old": _entries(os.path.dirname(src)), "new": _entries(os.path.dirname(ref))}
    new_view = broker_loader.load(ref, scratch).view
    kafka_new = kafka_view(kafka_load(oracle, ref, work)) if oracle else None
    mids: dict[str, object] = {}
    if middle is not None:
        mid_root = os.path.join(tmp_path, "mid")
        shutil.copytree(os.path.dirname(src), os.path.join(mid_root, "logs"))
        mid = os.path.join(mid_root, "logs", "t-0")
        status = run_forked([a.replace(src, mid) for a in middle], {})
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
        mids = {"hashes": hashes(mid), "entries": _entries(os.path.dirname(mid)),
                "view": broker_loader.load(mid, scratch).view,
                "kafka": kafka_view(kafka_load(oracle, mid, work)) if oracle else None}
        assert mids["hashes"] not in (old, new), "the middle state must be a third one"
    assert len(calls) >= min_steps
    kinds = {c.split(" ", 1)[0] for c in calls}
    assert {"open", "os.rename"} <= kinds, kinds
    seen: dict[str, set[str]] = {"broker": set(), "kafkalog": set(), "kafka": set()}
    for k in _sample(calls, sample, " ".join(args[:2]), ref_root):
        root = os.path.join(tmp_path, f"k{k}")
        shutil.copytree(os.path.dirname(src), os.path.join(root, "logs"))
        pdir = os.path.join(root, "logs", "t-0")
        status = run_forked([a.replace(src, pdir) for a in args], {}, root=root, kill_at=k)
        at = f"kill before call {k}/{len(calls)} ({calls[k - 1].replace(ref_root, '')})"
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, f"{at}: not killed ({status})"
        # a broker starting now: the model
        loaded = broker_loader.load(pdir, scratch)
        assert not loaded.fabricated_indexes, f"{at}: the broker would install a zero-filled index"
        if loaded.view == old_view:
            seen["broker"].add("old")
        elif loaded.view == new_view:
            seen["broker"].add("new")
        elif mids and loaded.view == mids["view"]:
            seen["broker"].add("mid")
        else:
            other = other_broker_view(loaded.view, old_view) if other_broker_view else None
            assert other, f"{at}: the broker would load neither the old nor the new partition: {loaded.view}"
            seen["broker"].add(other)
        if oracle is not None:
            # ... and Kafka's own LogLoader
            got = kafka_view(kafka_load(oracle, pdir, work))
            if got == kafka_old == kafka_new:
                seen["kafka"].add("old = new")  # e.g. recover: Kafka's Load of the old state is the new state
            elif got == kafka_old:
                seen["kafka"].add("old")
            elif got == kafka_new:
                seen["kafka"].add("new")
            elif mids and got == mids["kafka"]:
                seen["kafka"].add("mid")
            else:
                other = other_broker_view(loaded.view, old_view) if other_broker_view else None
                assert other, f"{at}: Kafka's Load is neither the old nor the new partition:\n{got}\nold {kafka_old}" \
                              f"\nnew {kafka_new}"
                seen["kafka"].add(other)
            logdir = os.path.dirname(pdir)
            for side in sorted(n for n in os.listdir(logdir) if n.endswith(safety.DELETE_DIR_SUFFIX)):
                sdir = os.path.join(logdir, side)
                shared = shared_inodes(sdir, pdir)
                assert not shared, f"{at}: the -delete side LogManager would load shares inodes with live files: " \
                                   f"{shared}"
                res = kafka_load(oracle, sdir, work)  # what LogLoader writes there (on a copy)
                assert not res.get("error"), f"{at}: Kafka's Load of {side}: {res['error']}"
        # kafkalog's recovery (the next run), whatever KAFKALOG_BACKUP_DIR says
        safety.recover_interrupted(pdir)
        now = hashes(pdir)
        states = {"old": (old, old_view, entries["old"]), "new": (new, new_view, entries["new"])}
        if mids:
            states["mid"] = (mids["hashes"], mids["view"], mids["entries"])
        state = next((name for name, st in states.items() if st[0] == now), None)
        assert state is not None, f"{at}: kafkalog's recovery left a mixed state"
        seen["kafkalog"].add(state)
        assert broker_loader.load(pdir, scratch).view == states[state][1]
        assert _entries(os.path.dirname(pdir)) == states[state][2], f"{at}: leftovers"
        shutil.rmtree(root)
    assert {"old", "new"} <= seen["kafkalog"] <= {"old", "mid", "new"}, seen
    return seen


def corrupt_third_batch(log_path: str) -> None:
    """Flip one byte inside the third batch of a segment: a CRC failure in the middle of the log (the salvage
    scenarios of the kill tests)."""
    import struct

    with open(log_path, "rb") as f:
        data = bytearray(f.read())
    pos = 0
    for _ in range(2):
        pos += 12 + struct.unpack_from(">i", data, pos + 8)[0]
    data[pos + 70] ^= 0xFF
    with open(log_path, "wb") as f:
        f.write(bytes(data))
