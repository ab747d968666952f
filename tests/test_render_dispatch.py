"""The renderers dispatch dump events through an explicit type -> handler table (issue 21), not by class name."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from kafkalog_cli.ops import dump as d
from kafkalog_cli.render import dls, jsonl
from kafkalog_cli.versions import profile_for

# the dataclasses of ops/dump.py that are not events (options, a part of an event, the end-of-run totals)
NOT_EVENTS = {d.DumpOptions, d.ControlInfo, d.DumpSummary}
EVENTS = {c for _n, c in inspect.getmembers(d, inspect.isclass)
          if dataclasses.is_dataclass(c) and c.__module__ == d.__name__ and c not in NOT_EVENTS}


@pytest.mark.parametrize("module, cls", [(dls, dls.DlsRenderer), (jsonl, jsonl.JsonRenderer)])
def test_every_event_and_every_handler_is_in_the_table(module: object, cls: type) -> None:
    table = module._HANDLERS  # type: ignore[attr-defined]
    assert set(table) == EVENTS
    methods = {f for n, f in inspect.getmembers(cls, inspect.isfunction) if n.startswith("on_")}
    assert set(table.values()) == methods  # no handler left out of the table, none listed twice


def test_a_class_that_only_shares_an_event_name_is_not_dispatched() -> None:
    """By-name dispatch sent any class called ``FileBegin`` to ``on_FileBegin``; the table goes by type."""

    @dataclasses.dataclass
    class FileBegin:  # same name and fields as d.FileBegin, another type
        arg: str
        path: str
        kind: str

    lines: list[str] = []
    r = dls.DlsRenderer(profile_for("3.6"), d.DumpOptions(), lines.append, lines.append)
    with pytest.raises(KeyError):
        r.handle(FileBegin("x.log", "x.log", "log"))
    j = jsonl.JsonRenderer(d.DumpOptions(), lines.append, lines.append)
    with pytest.raises(KeyError):
        j.handle(FileBegin("x.log", "x.log", "log"))
    assert lines == []


def test_dispatch_renders_a_real_event() -> None:
    lines: list[str] = []
    r = dls.DlsRenderer(profile_for("3.6"), d.DumpOptions(), lines.append, lines.append)
    r.handle(d.Ignored("notes.txt"))
    assert lines == ["Ignoring unknown file notes.txt"]
