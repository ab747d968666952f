"""One plan -> transaction path for every repair (rebuild-index, compact, truncate-to-epoch, recover, salvage).

Why: each repair used to drive ``safety.Transaction`` by hand, five times over, and then the lock -> recover ->
plan -> execute sequence four times over, so the order rules (a segment's ``.log.swap`` before its indexes, the
early deletes of a truncation, the two-phase leftover handling of recover) and the locking lived in several places
and a dry run listed files from code other than the code that wrote them. Now every writing command has one plan
type, ``RepairPlan``: the partition, the command's findings (its ``report``: ``CompactPlan``, ``TruncatePlan``,
``LoaderPlan``, ``SalvagePlan``, rebuild-index's ``IndexPlan``; what the dry run prints) and a function giving its
``Step`` values, each naming the one file it writes, deletes or renames. ``drive`` is the one driver and
``execute_steps`` the only code that performs steps. Where a command prints file actions (compact, rebuild-index)
they are ``actions(steps)``: the dry run lists exactly the steps ``--execute`` performs.

The life of a repair (``drive``):

1. dry run: ``plan_fn()`` computes the plan; nothing is locked or written;
2. ``--execute``: under ``safety.locked_log_dir`` (kafkalog's flock plus the broker's ``.lock``), interrupted work
   of an earlier run is finished or undone first (``safety.recover_interrupted``), the plan is recomputed (so dry
   run and execute cannot disagree), a command's ``check`` may refuse it, and when it has changes its steps go to
   ``execute_steps``;
3. ``execute_steps`` opens a ``safety.Transaction`` at the first file step and hands it every ``write`` / ``delete`` /
   ``delete-early`` / ``remove-log-dir-file`` step in order: ``stage`` writes ``<name>.cleaned`` (``<name>.tmp``
   for names without an offset) and fsyncs it; deletes are recorded. The transaction then commits: journal,
   backups, ``.cleaned -> .swap`` renames, deletes, ``.swap -> final`` (``.log`` first), or the directory exchange
   of a truncation (``safety/transaction.py``'s docstring has the full order and why each step is safe for the
   broker's loader);
4. a ``rename`` step (recover's installing of the broker's own ``.swap`` files, LogLoader's third pass) commits the
   transaction so far first and is then performed directly; a later file step opens a new transaction. So one
   plan can be the two phases Kafka's loader runs (delete leftovers, then install swaps, then recover).

A step's ``data`` is bytes or a writer called with the open staging file, called in step order: a writer may
depend on what earlier steps staged (compact builds a segment's indexes from its staged ``.log``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import BinaryIO, Generic, Protocol, TypeVar

from kafkalog_cli.errors import UnreadableFileError
from kafkalog_cli.ops import safety

Writer = Callable[[BinaryIO], None]
OPS = ("write", "delete", "delete-early", "remove-log-dir-file", "rename")


@dataclass
class Step:
    """One file operation of a repair.

    ``op``: ``write`` (stage ``data`` as ``name``), ``delete`` (after the new files are visible, the file lies in a
    new segment's offset range), ``delete-early`` (before any new file is visible: files no new segment covers),
    ``remove-log-dir-file`` (``name`` in the log dir, e.g. ``.kafka_cleanshutdown``), ``rename`` (``source`` ->
    ``name``, outside any transaction). ``mtime``: of the staged file (the broker's time-based retention reads a
    segment's mtime); ``keep_mtime``: the mtime of the file replaced, read when it is staged (after earlier renames).
    ``shown``/``size``/``detail``: how a dry run lists it (``shown`` is ``create``/``replace``/``delete``)."""

    op: str
    name: str
    data: bytes | Writer | None = None
    mtime: float | None = None
    shown: str = ""
    size: int = 0
    detail: str = ""
    source: str | None = None
    keep_mtime: bool = False  # write: the staged file takes the mtime ``name`` has when staged (if it exists)

    def __post_init__(self) -> None:
        if self.op not in OPS:
            raise ValueError(f"unknown step operation {self.op!r}")


def write(name: str, data: bytes | Writer, *, mtime: float | None = None, keep_mtime: bool = False,
          shown: str = "create", size: int = 0, detail: str = "") -> Step:
    """A step that stages ``data`` as ``name``."""
    return Step("write", name, data, mtime, shown, size, detail, keep_mtime=keep_mtime)


def delete(name: str, *, early: bool = False, detail: str = "") -> Step:
    """A step that deletes ``name`` (``early``: before any new file becomes visible, see ``Transaction.delete``)."""
    return Step("delete-early" if early else "delete", name, shown="delete", detail=detail)


@dataclass
class FileAction:
    """One line of a dry run's file list: what a step does to which file."""

    kind: str  # "create" | "replace" | "delete" | "rename"
    path: str
    size: int = 0
    detail: str = ""
    source: str | None = None


def actions(partition_dir: str, steps: Iterable[Step]) -> list[FileAction]:
    """What a dry run lists: one ``FileAction`` per file step, in the order ``execute_steps`` performs them."""
    return [FileAction(s.shown, os.path.join(partition_dir, s.name), s.size, s.detail)
            for s in steps if s.op != "remove-log-dir-file"]


def execute_steps(partition_dir: str, steps: Iterable[Step], backup_dir: str | None, *,
                  keep_backup: bool = True) -> list[str]:
    """Perform ``steps`` in order (see the module docstring); returns the backup directory of each transaction.

    ``backup_dir`` is the ``--backup-dir`` option (None: the default root): every transaction backs up into a fresh
    ``<partition>-<UTC time>`` directory of its own (``safety.backup_subdir``), never into an earlier one's."""
    used: list[str] = []
    tx: safety.Transaction | None = None
    try:
        for step in steps:
            if step.op == "rename":
                if tx is not None:
                    used.append(_commit(tx))
                    tx = None
                src = safety.safe_child(partition_dir, step.source or "")
                if os.path.exists(src):
                    os.replace(src, safety.safe_child(partition_dir, step.name))
                continue
            if tx is None:
                tx = safety.Transaction(partition_dir, safety.backup_subdir(backup_dir, partition_dir),
                                        keep_backup=keep_backup)
            if step.op == "write":
                mtime = step.mtime
                if step.keep_mtime:
                    final = os.path.join(partition_dir, step.name)
                    mtime = os.stat(final).st_mtime if os.path.exists(final) else None
                tx.stage(step.name, step.data if step.data is not None else b"", mtime=mtime)
            elif step.op == "remove-log-dir-file":
                tx.remove_log_dir_file(step.name)
            else:
                tx.delete(step.name, early=step.op == "delete-early")
        if tx is not None:
            used.append(_commit(tx))
            tx = None
    finally:
        if tx is not None:
            tx.abort()
    return used


def _commit(tx: safety.Transaction) -> str:
    tx.commit()
    return tx.backup_dir


def copy_prefix(src: str, length: int, start: int = 0) -> Writer:
    """A writer copying the first ``length`` bytes of ``src``: a segment cut at a batch boundary (truncation,
    recovery's ``LogSegment.truncateTo``); from byte ``start``: a piece of a split segment."""
    def write_prefix(f: BinaryIO) -> None:
        with open(src, "rb") as fin:
            fin.seek(start)
            left = length
            while left:
                chunk = fin.read(min(left, 1 << 20))
                if not chunk:
                    raise UnreadableFileError("segment shrank while being truncated", file=src)
                f.write(chunk)
                left -= len(chunk)
    return write_prefix


class Report(Protocol):
    """What the driver needs of a command's findings (``CompactPlan``, ``TruncatePlan``, ``LoaderPlan``,
    ``SalvagePlan``, rebuild-index's ``IndexPlan``): the notes it prints, whether ``--execute`` would change
    anything."""

    notes: list[str]

    @property
    def has_changes(self) -> bool: ...


R = TypeVar("R", bound=Report)


@dataclass
class RepairPlan(Generic[R]):
    """The one plan type of every writing command: a partition, the command's findings (``report``: what the dry run
    prints and ``--format json`` shows) and the steps ``--execute`` performs.

    ``steps`` is a function, called only under the lock when the plan is executed (a dry run never builds the
    steps' writers nor reads what they read)."""

    partition_dir: str
    report: R
    steps: Callable[[], Iterable[Step]]

    @property
    def notes(self) -> list[str]:
        return self.report.notes

    @property
    def has_changes(self) -> bool:
        return self.report.has_changes


@dataclass
class Outcome(Generic[R]):
    """What ``drive`` returns for one partition."""

    plan: RepairPlan[R]
    recovered: list[str] = field(default_factory=list)  # one line per interrupted change finished or undone first
    backup_dirs: list[str] = field(default_factory=list)  # one per transaction committed

    @property
    def report(self) -> R:
        return self.plan.report

    @property
    def backup_dir(self) -> str | None:
        """The backup directory of the last transaction (None: nothing written)."""
        return self.backup_dirs[-1] if self.backup_dirs else None


def drive(partition_dir: str, plan_fn: Callable[[], RepairPlan[R]], *, execute: bool, backup_dir: str | None,
          keep_backup: bool = True, recover: Callable[[str], list[str]] | None = None,
          check: Callable[[R], None] | None = None, after: Callable[[R], None] | None = None) -> Outcome[R]:
    """The one repair driver (module docstring): lock -> recover interrupted work -> plan -> execute -> journal.

    A dry run (``execute`` false) only plans: nothing is locked or written. With ``execute``: under
    ``safety.locked_log_dir``, ``recover`` (``safety.recover_interrupted``; recover's own variant leaves a broker's
    ``.log.swap`` to its loader model) finishes or undoes an earlier run's change, the plan is computed again (so the
    dry run and the execution cannot disagree), ``check`` may refuse it (raise ``RepairRefused``), its steps go to
    ``execute_steps`` when it has changes (the transactions write the journal), and ``after`` runs last, still under
    the lock. The log dir's own warnings (``safety.log_dir_warnings``) are added to the plan's notes in both modes."""
    if not execute:
        plan = plan_fn()
        plan.notes.extend(safety.log_dir_warnings(partition_dir))
        return Outcome(plan)
    with safety.locked_log_dir(partition_dir):
        recovered = (recover or safety.recover_interrupted)(partition_dir)
        plan = plan_fn()
        plan.notes.extend(safety.log_dir_warnings(partition_dir))
        if check is not None:
            check(plan.report)
        used = execute_steps(partition_dir, plan.steps(), backup_dir, keep_backup=keep_backup) \
            if plan.has_changes else []
        if after is not None:
            after(plan.report)
    return Outcome(plan, recovered, used)
