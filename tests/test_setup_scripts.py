"""scripts/demo.sh and scripts/test.sh set-up (issue 29): a second run does not reinstall when nothing changed."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

FAKE_PYTHON = """#!/bin/sh
echo "$@" >> "$(dirname "$0")/../calls"
case "$1" in -c) exit 1 ;; esac
exit 0
"""


def _tree(tmp: Path) -> Path:
    (tmp / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "venv.sh", tmp / "scripts" / "venv.sh")
    (tmp / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (tmp / "setup.py").write_text("")
    (tmp / "kafkalog_cli" / "accel").mkdir(parents=True)
    (tmp / "kafkalog_cli" / "_accel.c").write_text("int x;\n")
    bin_dir = tmp / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "python").write_text(FAKE_PYTHON)
    os.chmod(bin_dir / "python", 0o755)
    return tmp


def _ensure(tree: Path, spec: str) -> list[str]:
    subprocess.run(["bash", "-c", f"set -euo pipefail; . scripts/venv.sh; ensure_venv '{spec}'"], cwd=tree, check=True)
    calls = tree / ".venv" / "calls"
    return [c for c in calls.read_text().splitlines() if "pip install" in c] if calls.exists() else []


def test_second_run_does_not_reinstall(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    assert len(_ensure(tree, ".")) == 2  # pip upgrade + the install
    assert len(_ensure(tree, ".")) == 2  # nothing changed: no pip at all
    assert len(_ensure(tree, ".[test,spark]")) == 4  # other extras: installed
    (tree / "kafkalog_cli" / "_accel.c").write_text("int y;\n")  # the C source changed: rebuilt
    assert len(_ensure(tree, ".")) == 6
    assert len(_ensure(tree, ".")) == 6


def test_both_scripts_use_it_and_test_sh_shows_skip_reasons() -> None:
    for name in ("demo.sh", "test.sh"):
        text = (ROOT / "scripts" / name).read_text()
        assert ". scripts/venv.sh" in text and "ensure_venv" in text and "pip install" not in text
    pytest_line = [ln for ln in (ROOT / "scripts" / "test.sh").read_text().splitlines() if "-m pytest" in ln]
    assert pytest_line and " -rs " in pytest_line[0]
