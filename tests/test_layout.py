"""One file-layout rule (``storage.layout``, Kafka's LogFileUtils and LogLoader) and every command using it.

The cases are the ones that once got four different answers: a ``0.log`` file, an empty partition directory, and
the leftovers of an unfinished clean/split/delete.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from shipping_helpers import make_partition

from kafkalog_cli.cli.main import cli
from kafkalog_cli.internal_topics.transactions import segment_files
from kafkalog_cli.scan import paths as scan_paths
from kafkalog_cli.storage import layout

SEG = "0" * 20 + ".log"


def test_names_follow_log_file_utils() -> None:
    assert layout.segment_name(5, "timeindex") == "00000000000000000005.timeindex"
    assert layout.offset_from_name("00000000000000000042.log.swap") == 42
    assert layout.offset_from_name("+7.log") == 7  # Long.parseLong accepts a sign
    for bad in ("abc.log", "leader-epoch-checkpoint", "9223372036854775808.log", " 1.log"):
        with pytest.raises(ValueError):
            layout.offset_from_name(bad)
    assert layout.is_segment_name(SEG)
    for name in ("0.log", SEG + ".swap", "0" * 19 + "\u0661.log", "0" * 21 + ".log", "0" * 20 + ".index"):
        assert not layout.is_segment_name(name), name
        assert not layout.SEGMENT_RE.match(name), name


def test_leftover_fates_follow_the_loader() -> None:
    names = ["00000000000000000010.log.cleaned", "00000000000000000000.log.swap", "00000000000000000020.log.swap",
             "00000000000000000000.index.swap", "00000000000000000003.log.deleted", "x.log.swap",
             "00000000000000000004-0000000001.checkpoint.deleted"]
    assert all(layout.is_leftover(n) for n in names)
    fate = {n: layout.leftover_fate(n, names) for n in names}
    assert "deletes it" in fate["00000000000000000010.log.cleaned"]
    assert "installs it" in fate["00000000000000000000.log.swap"]  # below the smallest .cleaned: a valid swap
    assert "unfinished split" in fate["00000000000000000020.log.swap"]  # at/above it: deleted (KAFKA-6264)
    assert "renames it to 00000000000000000000.index" in fate["00000000000000000000.index.swap"]
    assert "deletes it" in fate["00000000000000000003.log.deleted"]
    assert "fails to load" in fate["x.log.swap"]
    assert "KRaft" in fate["00000000000000000004-0000000001.checkpoint.deleted"]


def test_stray_logs() -> None:
    (zero, word) = layout.stray_logs(["0.log", SEG, "abc.log", "x.index"])
    assert zero.name == "0.log" and f"opens {SEG}" in zero.fate
    assert word.name == "abc.log" and "fails to load" in word.fate


@pytest.fixture
def zero_log(tmp_path: Path) -> Path:
    """A partition directory whose only data file is ``0.log`` (a copy of a valid segment)."""
    src = make_partition(tmp_path / "src")
    part = tmp_path / "logs" / "orders-0"
    part.mkdir(parents=True)
    shutil.copy(src / SEG, part / "0.log")
    return part


def invoke(*args: str) -> tuple[int, str]:
    r = CliRunner().invoke(cli, list(args))
    assert "Traceback" not in r.output
    return r.exit_code, r.output


def test_every_command_agrees_on_a_0_log(zero_log: Path) -> None:
    """The broker never reads ``0.log`` (it opens 00000000000000000000.log): no command treats it as a segment."""
    code, out = invoke("verify-crc", str(zero_log))
    assert code == 1 and "stray-log" in out and f"rename it to {SEG}" in out and "0 batches verified" in out
    assert invoke("seek-offset", str(zero_log), "0")[0] == 1  # an empty log: offset not found
    assert scan_paths.expand([str(zero_log)]) == ([], [str(zero_log)])
    assert segment_files(str(zero_log)) == []
    for cmd in ("rebuild-index", "compact", "truncate-to-epoch"):
        argv = [cmd, str(zero_log)] + (["0"] if cmd == "truncate-to-epoch" else [])
        code, out = invoke(*argv)
        # compact and truncate-to-epoch apply the broker's start-up first, whose loader refuses the name itself
        assert code == 2 and ("no segment in this partition directory" in out or (
            cmd != "rebuild-index" and "the broker cannot load this partition" in out and "0.log: not a segment name"
            in out)), (cmd, out)
    # named explicitly, the file is still verified (and its name reported)
    code, out = invoke("verify-crc", str(zero_log / "0.log"))
    assert "stray-log" in out and "5 batches verified" in out


def test_empty_partition_is_an_empty_log(tmp_path: Path) -> None:
    part = tmp_path / "logs" / "orders-0"
    part.mkdir(parents=True)
    code, out = invoke("verify-crc", str(part))
    assert code == 0 and "no segment in this partition directory: an empty log" in out
    code, out = invoke("seek-offset", str(part), "0")
    assert code == 1 and "an empty log" in out
    other = tmp_path / "not-a-partition"
    other.mkdir()
    code, out = invoke("seek-offset", str(other), "0")
    assert code == 2 and "does not look like a partition directory" in out


def test_verify_crc_reports_leftovers_with_the_broker_fate(tmp_path: Path) -> None:
    part = make_partition(tmp_path / "logs")
    shutil.copy(part / SEG, part / (SEG + ".swap"))
    (part / "00000000000000000000.index.deleted").write_bytes(b"")
    code, out = invoke("verify-crc", str(part))
    assert code == 1, out  # a .swap replaces segments at start-up: a warning
    assert "warning leftover: leftover of an unfinished clean, split or delete: the broker installs it" in out
    assert "info leftover" in out and "deletes it at start-up" in out
