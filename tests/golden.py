"""Run a golden case in-process and render its result as the text stored in fixtures/golden/."""

from __future__ import annotations

import os
from pathlib import Path

from click.testing import CliRunner

from kafkalog_cli.cli.main import cli

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"
GOLDEN = FIXTURES / "golden"


def run_case(args: list[str]) -> str:
    old = os.getcwd()
    os.chdir(FIXTURES)
    try:
        runner = CliRunner()
        result = runner.invoke(cli, args, catch_exceptions=False)
    finally:
        os.chdir(old)
    out = result.stdout
    err = result.stderr
    cwd = str(FIXTURES)
    text = "$ kafkalog " + " ".join(args) + "\n"
    text += f"--- exit: {result.exit_code}\n--- stdout\n{out}--- stderr\n{err}"
    return text.replace(cwd, "<FIXTURES>")
