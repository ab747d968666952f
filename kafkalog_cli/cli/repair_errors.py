"""How the repair commands (rebuild-index, compact, truncate-to-epoch, recover, salvage) turn the engine's typed
errors into one located line and exit 2.

Why one place: the four command modules carried the same ladder of ``except`` clauses, differing only in the hint
each prints when the error carries none. Each command now names its hints; the ladder (first matching class wins, in
the order given) and the message forms are here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from kafkalog_cli.cli.common import fail
from kafkalog_cli.errors import KafkalogError

T = TypeVar("T")

OS_HINT = "check permissions and free space; an interrupted write is finished or undone by the next --execute run"
WRITE_FAILED_HINT = ("free space or fix the device, then run again; an interrupted write is finished or undone by the "
                     "next --execute run")


def engine_call(fn: Callable[[], T], hints: list[tuple[type[Exception], str]], *, os_file: str = "") -> T:
    """``fn()``; an exception of a class in ``hints`` (the first match, in order) exits 2 with its located text and
    its own hint, else the one given. An ``OSError`` not listed is reported as ``<file>: <reason>`` (``os_file``
    when it names no file) with ``OS_HINT``. Anything else is a bug and surfaces."""
    try:
        return fn()
    except Exception as exc:
        for cls, hint in hints:
            if isinstance(exc, cls):
                if isinstance(exc, KafkalogError):
                    fail(exc.describe(), exc.hint or hint)
                elif isinstance(exc, OSError):
                    fail(f"{exc.filename or os_file}: {exc.strerror or exc}", hint)
                else:
                    fail(str(exc), hint)
        if isinstance(exc, OSError) and not isinstance(exc, KafkalogError):
            fail(f"{exc.filename or os_file}: {exc.strerror or exc}", OS_HINT)
        raise
