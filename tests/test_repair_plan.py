"""The one plan -> transaction path (ops/repair_plan.py): a dry run lists exactly the steps --execute performs, and
``execute_steps`` performs any plan, including recover's two phases split by a rename."""

from __future__ import annotations

import os

from crash_driver import hashes
from partition_gen import random_partition

from kafkalog_cli.ops import compact as cp
from kafkalog_cli.ops import repair_plan as rp
from kafkalog_cli.ops import safety
from kafkalog_cli.ops import truncate as tr

NOW = 1_800_000_000_000


def _changed(before: dict[str, str], after: dict[str, str]) -> set[str]:
    return {n for n in set(before) | set(after) if before.get(n) != after.get(n)}


def test_compact_dry_run_lists_exactly_the_files_execute_changes(tmp_path):
    pdir = str(tmp_path / "logs" / "t-0")
    random_partition(pdir, 9)
    opts = cp.CompactOptions(now_ms=NOW, segment_bytes=4000)
    plan, _rec, _w = cp.run(pdir, opts)
    listed = {os.path.basename(a.path) for a in cp.plan_actions(plan)}
    assert listed
    before = hashes(pdir)
    _plan, _rec, written = cp.run(pdir, opts, execute=True, backup_dir=str(tmp_path / "bk"))
    assert written is not None
    changed = _changed(before, hashes(pdir))
    # every listed file is written or deleted; an index rewritten byte-identical is listed but unchanged
    assert changed <= listed and {n for n in listed if n.endswith((".log", ".snapshot"))} <= changed


def test_truncation_steps_are_what_execute_changes(tmp_path):
    pdir = str(tmp_path / "logs" / "t-0")
    random_partition(pdir, 6)
    plan, _rec, _w = tr.run(pdir, None, 50)
    steps = tr.truncation_steps(plan)
    early = [s.name for s in steps if s.op == "delete-early"]
    assert early and all(s.op in rp.OPS for s in steps)
    before = hashes(pdir)
    tr.run(pdir, None, 50, execute=True, backup_dir=str(tmp_path / "bk"))
    after = hashes(pdir)
    assert all(n not in after for n in early)
    assert _changed(before, after) <= {s.name for s in steps}


def test_execute_steps_rename_commits_the_transaction_before_it(tmp_path):
    """Two transactions, each with its own backup dir, around a rename performed directly (recover's leftovers,
    the loader's .swap install, then the recovery itself)."""
    pdir = tmp_path / "logs" / "t-0"
    pdir.mkdir(parents=True)
    (pdir / "00000000000000000000.log").write_bytes(b"L")
    (pdir / "00000000000000000000.index").write_bytes(b"old index")
    (pdir / "00000000000000000000.index.swap").write_bytes(b"swapped index")
    (pdir / "00000000000000000005.snapshot").write_bytes(b"S")
    steps = [
        rp.delete("00000000000000000005.snapshot"),
        rp.delete("00000000000000000000.index"),
        rp.Step("rename", "00000000000000000000.index", source="00000000000000000000.index.swap"),
        rp.write("00000000000000000000.timeindex", b"T" * 12),
    ]
    used = rp.execute_steps(str(pdir), steps, str(tmp_path / "bk"))
    assert len(used) == 2 and used[0] != used[1]
    assert sorted(os.listdir(pdir)) == ["00000000000000000000.index", "00000000000000000000.log",
                                        "00000000000000000000.timeindex"]
    assert (pdir / "00000000000000000000.index").read_bytes() == b"swapped index"
    assert sorted(n for n in os.listdir(used[0]) if n != safety.JOURNAL_NAME) == [
        "00000000000000000000.index", "00000000000000000005.snapshot"]
    assert (tmp_path / "bk").is_dir() and not safety.recover_interrupted(str(pdir))


def test_execute_steps_with_no_step_writes_nothing(tmp_path):
    pdir = tmp_path / "logs" / "t-0"
    pdir.mkdir(parents=True)
    assert rp.execute_steps(str(pdir), [], str(tmp_path / "bk")) == []
    assert not (tmp_path / "bk").exists()


def test_every_writing_command_executes_through_the_one_driver(tmp_path, monkeypatch):
    """compact, truncate-to-epoch, recover, salvage and rebuild-index --execute: each partition goes through
    ``repair_plan.drive`` (lock -> recover interrupted -> plan -> execute), the one driver, with execute on."""
    from kafkalog_cli.ops import rebuild_index as rb
    from kafkalog_cli.ops import recover as rc
    from kafkalog_cli.ops import salvage as sv

    calls: list[tuple[str, bool]] = []
    real = rp.drive

    def recording(partition_dir, plan_fn, **kw):  # noqa: ANN001, ANN003, ANN202
        calls.append((os.path.basename(partition_dir), kw["execute"]))
        return real(partition_dir, plan_fn, **kw)

    monkeypatch.setattr(rp, "drive", recording)
    runs = {
        "compact": lambda p, b: cp.run(p, cp.CompactOptions(now_ms=NOW, segment_bytes=4000), execute=True,
                                       backup_dir=b),
        "truncate": lambda p, b: tr.run(p, None, 50, execute=True, backup_dir=b),
        "recover": lambda p, b: rc.run([p], execute=True, backup_dir=b),
        "salvage": lambda p, b: sv.run([p], execute=True, backup_dir=b),
        "rebuild-index": lambda p, b: rb.run([p], execute=True, backup_dir=b),
    }
    for i, (name, fn) in enumerate(runs.items()):
        pdir = str(tmp_path / name / "logs" / f"t-{i}")
        random_partition(pdir, 6)
        calls.clear()
        fn(pdir, str(tmp_path / f"bk-{name}"))
        assert calls == [(f"t-{i}", True)], name


def test_only_the_driver_locks_recovers_and_opens_transactions():
    """The lock -> recover -> execute sequence is written once: no module of kafkalog_cli but ops/repair_plan.py
    takes the repair lock, recovers interrupted work, opens a Transaction or performs steps (recover's own variant
    of the recovery is passed to the driver, it does not lock)."""
    import re
    from pathlib import Path

    import kafkalog_cli

    root = Path(kafkalog_cli.__file__).parent
    calls = re.compile(r"\b(locked_log_dir|Transaction|execute_steps)\(")
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith("ops/safety/") or rel == "ops/repair_plan.py":
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            code = line.split("#", 1)[0]
            if calls.search(code) and not code.lstrip().startswith(("def ", "class ", '"', "'")):
                found.append(f"{rel}:{n}: {line.strip()}")
    assert not found, "\n".join(found)
