"""scan's input check (issue 29): an unreadable or missing top-level path gets ``kafkalog: error:`` + ``hint:``
naming the cause actually found, never click's usage block; empty partitions and stray names are notes."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def scan(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kafkalog_cli", "scan", *args], capture_output=True, text=True)


@pytest.mark.parametrize("make, cause, hint", [
    (lambda t: t / "nope", "no such file or directory", "check the path"),
    (lambda t: t / "broker*", "the pattern matched no file", "check the pattern"),
    (lambda t: (t / "plain").mkdir() or t / "plain", "no segment file (<20 digits>.log) in it or below it",
     "is it a Kafka log directory?"),
])
def test_each_unmatched_path_names_its_cause(tmp_path: Path, make, cause: str, hint: str) -> None:  # noqa: ANN001
    arg = str(make(tmp_path))
    r = scan(arg, "--out", str(tmp_path / "out"))
    assert r.returncode == 2
    assert "Usage:" not in r.stderr
    lines = r.stderr.splitlines()
    i = lines.index(f"kafkalog: error: {arg}: {cause}")
    assert lines[i + 1].startswith(f"hint: {hint}")


def test_a_non_segment_file_is_refused_in_words(tmp_path: Path) -> None:
    f = tmp_path / "notes"
    f.write_text("x")
    r = scan(str(f), "--out", str(tmp_path / "out"))
    assert r.returncode == 2
    assert r.stderr.splitlines()[0] == (f"kafkalog: error: {f}: not a segment file (scan reads .log segments; "
                                        "this is a name without a dot)")


def test_empty_partition_and_stray_name_are_notes(tmp_path: Path) -> None:
    (tmp_path / "orders-0").mkdir()
    seg = tmp_path / "payments-0"
    shutil.copytree(ROOT / "fixtures" / "sample-logdir" / "payments-0", seg)
    stray = seg / "0.log"
    shutil.copy(seg / "00000000000000000000.log", stray)
    r = scan(str(tmp_path / "orders-0"), str(stray), "--out", str(tmp_path / "out"))
    assert f"kafkalog: note: {tmp_path / 'orders-0'}: no segment in this partition directory" in r.stderr
    assert f"kafkalog: note: {stray}: not a segment name" in r.stderr
    assert r.returncode == 1  # the stray .log is scanned and is a verdict
