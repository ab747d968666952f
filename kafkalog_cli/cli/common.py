"""Helpers shared by the click commands: output streams, error lines, exit codes."""

from __future__ import annotations

import sys
from collections.abc import Callable

import click

EXIT_CLEAN, EXIT_PROBLEMS, EXIT_USAGE = 0, 1, 2


def line_writers() -> tuple[Callable[[str], None], Callable[[str], None]]:
    """(stdout, stderr) line writers; undecodable text is replaced, never a UnicodeEncodeError."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors="replace")  # type: ignore[union-attr]
        except (AttributeError, ValueError):
            pass
    out_write = sys.stdout.write
    err_write = sys.stderr.write

    def out(line: str) -> None:
        out_write(line + "\n")

    def err(line: str) -> None:
        sys.stdout.flush()
        err_write(line + "\n")

    return out, err


def fail(message: str, hint: str | None = None, code: int = EXIT_USAGE) -> None:
    """Print one error line (and a hint) on stderr and exit."""
    click.echo(f"kafkalog: error: {message}", err=True)
    if hint:
        click.echo(f"hint: {hint}", err=True)
    sys.exit(code)
