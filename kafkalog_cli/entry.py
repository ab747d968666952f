"""The ``kafkalog`` console script's entry point: ``cli.main.main``, with Ctrl-C covered from the first instant.

Why a module of its own: the console script imports the command tree (click, ~30 ms) before ``cli.main.main`` can
catch anything, so a Ctrl-C in that window printed a Python traceback. This module imports nothing heavy; an
interrupt during the import exits the way an interrupted command does (a one-line message, exit 130).
"""

from __future__ import annotations

import sys

from kafkalog_cli.cli import say_interrupted  # the command package's __init__: no click, nothing heavy


def main() -> None:
    try:
        from kafkalog_cli.cli.main import main as run
    except KeyboardInterrupt:
        say_interrupted()
        sys.exit(130)
    run()
