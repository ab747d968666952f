"""``recover`` and ``salvage`` over a log dir of many partitions end with one summary (partitions clean / would
change / refused, records at risk) instead of one block per partition; ``--verbose`` keeps the blocks, ``--format
json`` always has every partition (issue 29)."""

from __future__ import annotations

import json
from pathlib import Path

from test_recover import build, flip, run

N = 12
DAMAGED = ("t-3", "t-8")


def _log_dir(tmp_path: Path) -> Path:
    """``N`` partitions the broker's loader leaves as they are, then a flipped byte in the middle segment of two."""
    for i in range(N):
        _pdir, _pb, layout = build(tmp_path, name=f"t-{i}")
    logdir = tmp_path / "logs"
    code, out = run("recover", "--execute", "--backup-dir", str(tmp_path / "bk"), str(logdir))
    assert code == 0, out
    # --execute checkpoints the recovery point at the log end (as the broker's clean close does): without it the
    # damage below is in segments a broker's start recovers
    (logdir / "recovery-point-offset-checkpoint").unlink()
    base = sorted(layout)[1]
    for name in DAMAGED:
        flip(str(logdir / name), base, layout[base][2][1] + 30)
    return logdir


def _docs(*args: str) -> list[dict]:
    code, out = run(*args, "--format", "json")
    docs = json.loads(out)
    assert isinstance(docs, list) and len(docs) == N, out
    return docs


def test_recover_over_a_log_dir_ends_with_a_summary(tmp_path):
    logdir = _log_dir(tmp_path)
    code, out = run("recover", str(logdir))
    assert code == 1, out
    lines = out.splitlines()
    assert not any(line.startswith("Partition ") for line in lines), out  # no per-partition block
    assert lines[0] == f"Summary: {N} partitions in {logdir} (Kafka 4.4 loader):", out
    assert f"  clean: {N - len(DAMAGED)} (the broker would change nothing)" in lines, out
    assert f"  would change: {len(DAMAGED)}" in lines, out
    assert "  refused: 0 (the broker would not load them)" in lines, out
    docs = _docs("recover", str(logdir))
    lost = {Path(d["partition_dir"]).name: sum(r["records"] for r in [*(s["lost"] for s in d["recovered"] if s["lost"]),
                                                                       *d["deleted_segments"]]) for d in docs}
    assert all(lost[n] > 0 for n in DAMAGED) and not any(v for n, v in lost.items() if n not in DAMAGED)
    for name in DAMAGED:
        assert any(line.startswith(f"    {name}: {lost[name]} records lost, log end offset ") for line in lines), out
    assert f"  records at risk: {sum(lost.values())} (the broker's recovery deletes them at its next start)" in lines
    assert lines[-2].startswith("Dry run: nothing was written")
    assert lines[-1] == "Per-partition details: --verbose (or --format json)."


def test_recover_verbose_keeps_every_partition_block_before_the_summary(tmp_path):
    logdir = _log_dir(tmp_path)
    code, out = run("recover", "--verbose", str(logdir))
    assert code == 1, out
    lines = out.splitlines()
    heads = [i for i, line in enumerate(lines) if line.startswith("Partition ")]
    summary = lines.index(f"Summary: {N} partitions in {logdir} (Kafka 4.4 loader):")
    assert len(heads) == N and max(heads) < summary, out
    assert "Per-partition details" not in out
    # one partition alone: its block, no summary (as before)
    code, one = run("recover", str(logdir / DAMAGED[0]))
    assert code == 1 and one.startswith(f"Partition {logdir / DAMAGED[0]} ") and "Summary:" not in one, one


def test_recover_summary_after_execute(tmp_path):
    logdir = _log_dir(tmp_path)
    code, out = run("recover", "--execute", "--backup-dir", str(tmp_path / "bk2"), str(logdir))
    assert code == 0, out
    assert f"  changed: {len(DAMAGED)}" in out.splitlines(), out
    assert "Done. Removed and replaced files kept in " in out
    code, out = run("recover", str(logdir))
    assert code == 0 and f"  clean: {N} (the broker would change nothing)" in out.splitlines(), out


def test_salvage_over_a_log_dir_ends_with_a_summary(tmp_path):
    logdir = _log_dir(tmp_path)
    code, out = run("salvage", str(logdir))
    assert code == 1, out
    lines = out.splitlines()
    assert not any(line.startswith("Salvage of ") for line in lines), out
    assert lines[0] == f"Summary: {N} partitions in {logdir}:", out
    assert f"  clean: {N - len(DAMAGED)} (nothing to cut or rebuild)" in lines, out
    assert f"  would change: {len(DAMAGED)}" in lines, out
    docs = {Path(d["partition_dir"]).name: d for d in _docs("salvage", str(logdir))}
    for name in DAMAGED:
        d = docs[name]
        assert d["has_changes"] and d["broker_lost_records"] > 0
        assert (f"    {name}: {len(d['cuts'])} cut(s), {d['salvage_lost_bytes']} corrupt bytes; keeps "
                f"{d['kept_records']} records, {len(d['changes'])} file changes (the broker: loses "
                f"{d['broker_lost_records']})") in lines, out
    at_risk = sum(d["broker_lost_records"] for d in docs.values())
    cut = sum(d["salvage_lost_bytes"] for d in docs.values())
    assert f"  records at risk: {at_risk} (intact; the broker's own recovery deletes them, salvage keeps them)" in lines
    assert f"  corrupt bytes cut: {cut}" in lines, out
    code, verbose = run("salvage", "-v", str(logdir))
    assert code == 1 and sum(line.startswith("Salvage of ") for line in verbose.splitlines()) == N, verbose
