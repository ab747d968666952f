"""What ``kafkalog scan`` says about its input before it scans (data; render/scan_inputs.py words it): files given
by name that are not segments, stray ``.log`` names the broker never reads, empty partition directories, and the
arguments that matched no segment, each with the cause actually found."""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass, field

from kafkalog_cli.storage import layout
from kafkalog_cli.storage.paths import empty_partition, unmatched_reason


@dataclass
class Stray:
    path: str
    fate: str  # what the broker does with the name (layout.stray_logs)


@dataclass
class Unmatched:
    arg: str
    detail: str | None  # the resolver's own words for an "unreadable" directory (storage/paths.unmatched_reason)
    cause: str  # "missing", "unreadable" (cannot be listed), "no-match" (a glob), "no-segments" (a directory), "remote" (an object-store URI)


@dataclass
class InputCheck:
    refused: tuple[str, str] | None = None  # (path, file kind): a file that is not a segment (exit 2)
    strays: list[Stray] = field(default_factory=list)
    empty: list[str] = field(default_factory=list)  # empty partition directories: empty logs (a note)
    unmatched: list[Unmatched] = field(default_factory=list)


def check_named_files(paths: list[str]) -> InputCheck:
    """The files given by name: the first that is not a segment refuses the scan; stray ``.log`` names are listed."""
    chk = InputCheck()
    for a in paths:
        if "://" in a or not os.path.isfile(a):
            continue
        name = os.path.basename(a)
        if not name.endswith(".log") and layout.classify(name) != "log":
            chk.refused = (a, layout.classify(name))
            return chk
        chk.strays += [Stray(a, st.fate) for st in layout.stray_logs([name])]
    return chk


def cause(arg: str, detail: str | None) -> str:
    """Why an argument gave no segment (``detail``: ``unmatched_reason``'s words for it, read once by the caller)."""
    if "://" in arg:
        return "remote"
    if glob.has_magic(arg) and not os.path.exists(arg):
        return "no-match"
    if not os.path.lexists(arg):
        return "missing"
    if detail is not None:  # a directory that cannot be listed (storage/paths.py)
        return "unreadable"
    return "no-segments"


def sort_unmatched(chk: InputCheck, unmatched: list[str]) -> InputCheck:
    """Split the arguments that gave no segment into empty partitions (notes) and the rest, with their causes."""
    for a in unmatched:
        if empty_partition(a):
            chk.empty.append(a)
        else:
            detail = unmatched_reason(a) if "://" not in a else None
            chk.unmatched.append(Unmatched(a, detail, cause(a, detail)))
    return chk
