"""Findings of the black-box review of the session-3 integration (issues 14, 20, 21): each test states what a user
should see; each was marked ``xfail(strict=True)`` until the code was fixed, and runs as a plain test since."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from kafkalog_cli.cli.main import cli


def test_verify_crc_does_not_call_a_file_it_did_not_verify_ok(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("this is not a Kafka segment\n")
    res = CliRunner().invoke(cli, ["verify-crc", str(notes)])
    # A user who typed the wrong file must not be told "OK": the file is named in a finding and the exit code is
    # not 0 (2: input the command cannot use, as for a missing path).
    assert res.exit_code == 2, (res.exit_code, res.output)
    assert str(notes) in res.output  # click >= 8.2: stdout and stderr interleaved


def test_update_goldens_refuses_an_unknown_case_name() -> None:
    root = Path(__file__).resolve().parents[1]
    golden = root / "fixtures" / "golden"
    before = {p.name: p.stat().st_mtime_ns for p in golden.iterdir()}
    res = subprocess.run([sys.executable, str(root / "scripts" / "update_goldens.py"), "no-such-case"],
                         capture_output=True, text=True, timeout=60)
    assert {p.name: p.stat().st_mtime_ns for p in golden.iterdir()} == before  # an unknown name writes nothing
    assert res.returncode != 0, res.stdout
    assert "no-such-case" in res.stdout + res.stderr


RAW_HEADER_OFFSET_C = re.compile(r"\bpos \+ (?:17|21|22|23|57|61)\b")
RAW_HEADER_OFFSET_PY = re.compile(r"\bpos \+ (?:17|21|22|23|57|61)\b|\(17 if [^)]* else 22\)")


def test_no_raw_batch_header_offsets_outside_the_layouts() -> None:
    pkg = Path(__file__).resolve().parents[1] / "kafkalog_cli"
    found: list[str] = []
    for path in sorted((pkg / "accel").glob("*.c")):
        code = re.sub(r"/\*.*?\*/", "", path.read_text(), flags=re.S)
        found += [f"{path.name}: {m.group(0)}" for m in RAW_HEADER_OFFSET_C.finditer(code)]
    for sub in ("format", "storage", "broker", "ops", "scan", "render"):
        for path in sorted((pkg / sub).glob("*.py")):
            if path.name == "layouts.py":
                continue
            for line in path.read_text().splitlines():
                code = line.split("#", 1)[0]
                found += [f"{sub}/{path.name}: {m.group(0)}" for m in RAW_HEADER_OFFSET_PY.finditer(code)]
    assert not found, found


def test_verify_crc_of_a_directory_with_nothing_to_check_is_not_ok(tmp_path: Path) -> None:
    """An empty (or wrong) directory is not "OK: 0 files": exit 2 and the directory named, as `scan` does."""
    (tmp_path / "README").write_text("not Kafka\n")
    res = CliRunner().invoke(cli, ["verify-crc", str(tmp_path)])
    assert res.exit_code == 2, (res.exit_code, res.output)
    assert str(tmp_path) in res.output and "no file verify-crc checks" in res.output


def test_ctrl_c_while_the_command_is_still_importing_is_exit_130_without_a_traceback() -> None:
    """The console script's entry (kafkalog_cli.entry) covers the import of the command tree: a Ctrl-C there is a
    one-line message and exit 130, like a Ctrl-C inside a command (it was a KeyboardInterrupt traceback)."""
    code = ("import builtins, sys\n"
            "real = builtins.__import__\n"
            "def fake(name, *a, **k):\n"
            "    if name == 'kafkalog_cli.cli.main':\n"
            "        raise KeyboardInterrupt\n"
            "    return real(name, *a, **k)\n"
            "builtins.__import__ = fake\n"
            "from kafkalog_cli.entry import main\n"
            "main()\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert res.returncode == 130, res.stderr
    assert res.stderr.strip() == "kafkalog: interrupted"
    assert "Traceback" not in res.stderr
