"""The click commands. This package's ``__init__`` stays light: the launcher (``kafkalog_cli/entry.py``) imports it
before the command tree, to print the one interrupt line."""

from __future__ import annotations

import sys


def say_interrupted() -> None:
    """The one line a Ctrl-C leaves on stderr (the launcher's and cli.main's handler); a closed stderr is ignored."""
    try:
        sys.stderr.write("\nkafkalog: interrupted\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
