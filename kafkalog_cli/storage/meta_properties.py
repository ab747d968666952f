"""``meta.properties`` of a log directory: which broker (node) wrote it.

Why a module of its own: the replica comparison names each replica by its broker id, and the fleet report joins
datasets by it; both read the same file the broker writes at start-up (``MetaProperties``: ``broker.id`` in ZooKeeper
mode, ``node.id`` in KRaft mode, in Java ``Properties`` text format). Nothing here writes or prints.
"""

from __future__ import annotations

import os

from kafkalog_cli.errors import UnreadableFileError, unreadable

META_PROPERTIES = "meta.properties"


def parse_properties(text: str) -> dict[str, str]:
    """The subset of ``java.util.Properties.load`` these files use: ``key=value``, ``key: value`` or ``key value``
    lines, ``#``/``!`` comments, blank lines, and a trailing backslash continuing a line."""
    out: dict[str, str] = {}
    logical: list[str] = []
    pending = ""
    for raw in text.splitlines():
        line = pending + raw.lstrip() if pending else raw.strip()
        if not pending and (not line or line[0] in "#!"):
            continue
        if line.endswith("\\") and not line.endswith("\\\\"):
            pending = line[:-1]
            continue
        pending = ""
        logical.append(line.strip())
    if pending:
        logical.append(pending.strip())
    for line in logical:
        cut = len(line)
        for i, ch in enumerate(line):
            if ch in "=: \t" and (i == 0 or line[i - 1] != "\\"):
                cut = i
                break
        key = line[:cut]
        rest = line[cut:].lstrip(" \t")
        if rest[:1] in ("=", ":"):
            rest = rest[1:].lstrip(" \t")
        out[key] = rest
    return out


def read_meta_properties(log_dir: str) -> dict[str, str] | None:
    """The properties of ``<log_dir>/meta.properties``, None when the file does not exist."""
    path = os.path.join(log_dir, META_PROPERTIES)
    if not os.path.exists(path):
        return None
    try:
        with open(path, "rb") as f:
            raw = f.read(1 << 20)
    except OSError as exc:
        raise unreadable(exc, path) from None
    # Properties.load reads ISO-8859-1; ids are ASCII digits either way
    return parse_properties(raw.decode("latin-1"))


def broker_id_of(log_dir: str) -> int | None:
    """``node.id`` (KRaft) or ``broker.id`` (ZooKeeper) from the log directory's meta.properties; None when the file
    is absent or names neither. A value that is not an integer is a typed error, located in the file."""
    props = read_meta_properties(log_dir)
    if props is None:
        return None
    for key in ("node.id", "broker.id"):
        if key in props:
            try:
                return int(props[key].strip())
            except ValueError:
                raise UnreadableFileError(f"{key} is not an integer", file=os.path.join(log_dir, META_PROPERTIES),
                                          expected="an integer broker id", found=props[key][:40]) from None
    return None
