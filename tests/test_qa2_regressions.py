"""Regressions found by the qa2 black-box run (structure-aware fuzzing and repair scenarios).

Each test runs the real command as a subprocess, so the real stdout stream (errors="replace") is in play."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ORDERS = HERE.parent / "fixtures" / "partition" / "orders-0"


def kafkalog(*args: str | bytes) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kafkalog_cli", *args], capture_output=True, timeout=60)


def test_dump_json_deep_non_utf8_directory_name(tmp_path: Path) -> None:
    """The compiled JSON record formatter encoded the file name strictly: a partition directory whose name is not
    UTF-8 (surrogate escapes) ended in `internal error: UnicodeEncodeError`. It must print like the text path."""
    pdir = os.path.join(os.fsencode(tmp_path), b"t-\xff")
    shutil.copytree(ORDERS, os.fsdecode(pdir))
    seg = os.path.join(pdir, b"00000000000000000000.log")
    res = kafkalog("dump", "--format", "json", "--deep-iteration", "--print-data-log", seg)
    assert b"internal error" not in res.stderr, res.stderr
    assert res.returncode == 0, res.stderr
    assert b'"type":"record"' in res.stdout
    assert b'"type":"summary"' in res.stdout
