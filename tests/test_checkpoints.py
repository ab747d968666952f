"""broker/checkpoints.py: the one place that picks a partition's entry out of the log dir's offset checkpoints
(recovery point, log start, high watermark, cleaner offset) for the loader, the repairs and the explanations."""

from __future__ import annotations

import os
from pathlib import Path

from kafkalog_cli.broker import checkpoints as ck
from kafkalog_cli.broker import loader
from kafkalog_cli.internal_topics import logdir
from kafkalog_cli.ops import compact, replicas


def _checkpoint(path: Path, *entries: str) -> None:
    path.write_text("0\n" + f"{len(entries)}\n" + "".join(e + "\n" for e in entries))


def test_high_watermark_last_entry_wins_and_is_read_in_the_real_log_dir(tmp_path: Path) -> None:
    real = tmp_path / "logs"
    (real / "orders-3").mkdir(parents=True)
    _checkpoint(real / ck.HIGH_WATERMARK_FILE, "orders 3 10", "other 3 99", "orders 3 42")
    links = tmp_path / "links"
    links.mkdir()
    os.symlink(real / "orders-3", links / "orders-3")
    assert ck.high_watermark(str(real / "orders-3")) == (42, "")
    assert ck.high_watermark(str(links / "orders-3")) == (42, "")  # the symlink's dir holds no checkpoint
    hw, why = ck.high_watermark(str(real / "missing-0"))
    assert hw is None and "no entry for missing-0" in why


def test_unknown_high_watermark_says_why(tmp_path: Path) -> None:
    (tmp_path / "t-0").mkdir()
    hw, why = ck.high_watermark(str(tmp_path / "t-0"))
    assert hw is None and "does not exist" in why
    (tmp_path / ck.HIGH_WATERMARK_FILE).write_text("0\n2\nt 0 5\n")
    hw, why = ck.high_watermark(str(tmp_path / "t-0"))
    assert hw is None and "malformed" in why


def test_the_loader_reader_parses_java_longs(tmp_path: Path) -> None:
    _checkpoint(tmp_path / ck.RECOVERY_POINT_FILE, "t 0 1_000", "t 1 7")
    assert ck.read_offset_checkpoint(str(tmp_path), ck.RECOVERY_POINT_FILE, ("t", 1)) == (7, f"{ck.RECOVERY_POINT_FILE}: 7")
    off, why = ck.read_offset_checkpoint(str(tmp_path), ck.RECOVERY_POINT_FILE, ("t", 0))
    assert off is None and "malformed offset" in why  # Long.parseLong refuses what Python's int() takes


def test_one_reader_each() -> None:
    assert loader.read_offset_checkpoint is ck.read_offset_checkpoint
    assert compact.high_watermark is ck.high_watermark and replicas.high_watermark is ck.high_watermark
    assert logdir.partition_offset is ck.partition_offset
