"""The ``kafkalog`` console script's entry point: ``cli.main.main``, with Ctrl-C covered from the first instant.

Why a module of its own: the console script imports the command tree (click, ~30 ms) before ``cli.main.main`` can
catch anything, so a Ctrl-C in that window printed a Python traceback. This module imports nothing heavy; an
interrupt during the import exits the way an interrupted command does (a one-line message, exit 130).
"""

from __future__ import annotations

import sys


def main() -> None:
    try:
        from kafkalog_cli.cli.main import main as run
    except KeyboardInterrupt:
        try:
            sys.stderr.write("\nkafkalog: interrupted\n")
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        sys.exit(130)
    run()
