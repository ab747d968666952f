"""Render ``kafkalog scan``'s summary: rich tables on a terminal, plain aligned text in a pipe, or one JSON document.

Why three forms: on-call engineers read it on a terminal, scripts grep it, and dashboards want JSON. All three
take the same dict from ``scan.summary.summarize``.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from kafkalog_cli.render.colour import PLAIN, Palette
from kafkalog_cli.render.jsondoc import versioned
from kafkalog_cli.timefmt import age, iso_utc

HEADERS = ("partition", "segments", "batches", "offsets", "time range (UTC)", "bytes by codec", "producers",
           "leader epochs", "problems")


def _ts(ms: int | None) -> str:
    if ms is None:
        return "-"
    try:
        return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
    except (OverflowError, OSError, ValueError):
        return str(ms)


def _bytes(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return str(n)


def _epochs(epochs: list[int]) -> str:
    if not epochs:
        return "-"
    if len(epochs) <= 4:
        return ",".join(map(str, epochs))
    return f"{epochs[0]}..{epochs[-1]} ({len(epochs)})"


def rows(summary: dict[str, Any]) -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = []
    multi_dir = len({p["log_dir"] for p in summary["partitions"]}) > 1
    for p in summary["partitions"]:
        name = p["partition_dir"]
        if multi_dir:
            name = f"{p['log_dir']}/{name}"
        offsets = "-" if p["first_offset"] is None else f"{p['first_offset']}..{p['last_offset']}"
        times = "-" if p["last_timestamp"] is None else f"{_ts(p['first_timestamp'])} .. {_ts(p['last_timestamp'])}"
        codecs = " ".join(f"{c}:{_bytes(n)}" for c, n in p["bytes_by_codec"].items()) or "-"
        problems = ", ".join(f"{k}:{n}" for k, n in p["problems_by_kind"].items()) or "0"
        out.append((name, str(p["segments"]), str(p["batches"]), offsets, times, codecs, str(p["producers"]),
                    _epochs(p["leader_epochs"]), problems))
    return out


def _problem_line(p: dict[str, Any]) -> tuple[str, ...]:
    where = f"{p['partition_dir']}/{p['file']}"
    span = f"{p['position']}..{p['end']}"
    return (where, span, p["kind"], p["severity"], p["message"])


def _footer(summary: dict[str, Any], out_dir: str | None, engine: str, seconds: float) -> list[str]:
    t = summary["totals"]
    pr = summary["problems"]
    lines = [f"{t['partitions']} partitions, {t['segments']} segments, {t['batches']} batches, {t['records']} records, "
             f"{_bytes(t['bytes'])} scanned by the {engine} engine in {seconds:.1f} s"]
    notes = pr["by_severity"].get("info", 0)
    problems = pr["total"] - notes
    if problems:
        kinds = ", ".join(f"{k}: {n}" for k, n in pr["by_kind"].items())
        lines.append(f"{problems} problems" + (f", {notes} notes" if notes else "") + f" ({kinds})")
    else:  # notes (info) are not problems: healthy data says so without listing them (issue 27)
        lines.append("no problems found" + (f" ({notes} notes in the problems dataset)" if notes else ""))
    if out_dir:
        lines.append(f"datasets written to {out_dir}/{{batches,problems{',records' if t.get('with_records') else ''}}}")
    return lines


def _iso_s(ms: int) -> str:
    return iso_utc(ms)[:19] + "Z"  # seconds are enough for a range; ISO-8601 without spaces (one field for awk)


def _wrap(tokens: list[str], indent: str, width: int | None) -> list[str]:
    """``tokens`` joined by two spaces, on lines of at most ``width`` columns (one line when ``width`` is None)."""
    if width is None:
        return [indent + "  ".join(tokens)] if tokens else []
    lines: list[str] = []
    cur = ""
    for t in tokens:
        if cur and len(indent) + len(cur) + 2 + len(t) > width:
            lines.append(indent + cur)
            cur = t
        else:
            cur = f"{cur}  {t}" if cur else t
    if cur:
        lines.append(indent + cur)
    return lines


def _broker_label(broker_id: int | None, log_dir: str) -> str:
    return f"broker {broker_id if broker_id is not None else '?'} {log_dir}"


def render_text(summary: dict[str, Any], out: Callable[[str], None], *, out_dir: str | None, engine: str,
                seconds: float, width: int | None = None, palette: Palette = PLAIN, now_ms: int | None = None) -> None:
    """The line layout (a terminal of any width, and pipes): a line per log dir naming its broker, then one line
    per partition (segments, batches, offsets, size, problem count) and its details on the lines under it (time
    range with the age of the last record, bytes by codec, producers, leader epochs, problems by kind), wrapped at
    ``width`` columns; in a pipe (``width`` None) nothing is wrapped, so each partition is two lines: the first
    grep-able by its name, the second indented by four spaces."""
    parts = summary["partitions"]
    cols = []
    for p in parts:
        offsets = "-" if p["first_offset"] is None else f"{p['first_offset']}..{p['last_offset']}"
        cols.append((p["partition_dir"], str(p["segments"]), str(p["batches"]), offsets, _bytes(p["bytes"]).replace(" ", "")))
    heads = ("partition", "segments", "batches", "offsets", "size")
    w = [max([len(h)] + [len(c[i]) for c in cols]) for i, h in enumerate(heads)]

    def line(c: tuple[str, ...]) -> str:
        return (f"  {c[0]:<{w[0]}} {c[1]:>{w[1]}} {c[2]:>{w[2]}} {c[3]:<{w[3]}} {c[4]:>{w[4]}}")

    if parts:
        out(line(heads) + "  problems")
    last_dir = None
    for p, c in zip(parts, cols):
        if p["log_dir"] != last_dir:
            last_dir = p["log_dir"]
            n = sum(1 for q in parts if q["log_dir"] == last_dir)
            out(palette.paint(f"{_broker_label(p.get('broker_id'), last_dir)} ({n} partition{'s' if n != 1 else ''})",
                              "bold"))
        verdict = palette.severity("ok", "ok") if not p["problems"] else palette.severity(str(p["problems"]), "error")
        out(f"{line(c)}  {verdict}")
        details = []
        if p["last_timestamp"] is not None:
            details.append(f"{_iso_s(p['first_timestamp'] if p['first_timestamp'] is not None else p['last_timestamp'])}"
                           f"..{_iso_s(p['last_timestamp'])} (last {age(p['last_timestamp'], now_ms)})")
        codecs = ",".join(f"{k}:{_bytes(n).replace(' ', '')}" for k, n in p["bytes_by_codec"].items())
        if codecs:
            details.append(f"codecs {codecs}")
        details.append(f"producers {p['producers']}")
        details.append(f"epochs {_epochs(p['leader_epochs'])}")
        if p["problems_by_kind"]:
            details.append(palette.severity("problems " + ",".join(f"{k}:{n}" for k, n in p["problems_by_kind"].items()),
                                            "error"))
        for d in _wrap(details, "    ", width):
            out(d)
    _problems_text(summary, out, width, palette)
    out("")
    for i, text in enumerate(_footer(summary, out_dir, engine, seconds)):
        if i == 1:
            text = palette.severity(text, "ok" if text.startswith("no problems") else "error")
        for ln in ([text] if width is None else textwrap.wrap(text, width=width, subsequent_indent="  ",
                                                               break_on_hyphens=False, break_long_words=False)):
            out(ln)


def _problems_text(summary: dict[str, Any], out: Callable[[str], None], width: int | None = None,
                   palette: Palette = PLAIN) -> None:
    pr = summary["problems"]
    if not pr["total"] - pr["by_severity"].get("info", 0):
        return  # only notes: not listed in the default view
    out("")
    shown = len(pr["first"])
    out(f"problems (first {shown} of {pr['total']}; all in the problems dataset):" if shown < pr["total"]
        else "problems:")
    last: tuple[Any, ...] | None = None
    for p in pr["first"]:
        broker = (p.get("broker_id"), p.get("log_dir", "?"))
        if last is None or broker != last[:2]:
            out(f"  {_broker_label(*broker)}")
        if last is None or (*broker, p["partition_dir"]) != last:
            out(f"    {p['partition_dir']}")
        last = (*broker, p["partition_dir"])
        sev = p["severity"]
        text = f"{p['file']} bytes {p['position']}..{p['end']} {p['kind']} ({sev}): {p['message']}"
        lines = [text] if width is None else textwrap.wrap(text, width=max(20, width - 6), subsequent_indent="  ",
                                                            break_on_hyphens=False)
        for i, ln in enumerate(lines):
            out("      " + (palette.severity(ln, sev) if i == 0 else ln))


WIDE = 160  # a terminal at least this wide gets the full table (rich); narrower ones the line layout


def render_screen(summary: dict[str, Any], out: Callable[[str], None], *, tty: bool, columns: int, palette: Palette,
                  out_dir: str | None, engine: str, seconds: float) -> None:
    """The text report for stdout: on a terminal of ``WIDE`` columns or more the full table, on a narrower one the
    line layout wrapped at its width, in a pipe the line layout unwrapped (colour only as ``palette`` says)."""
    if tty and columns >= WIDE:
        render_rich(summary, out_dir=out_dir, engine=engine, seconds=seconds, color=palette.enabled)
    else:
        render_text(summary, out, out_dir=out_dir, engine=engine, seconds=seconds,
                    width=columns if tty else None, palette=palette)


def render_rich(summary: dict[str, Any], *, out_dir: str | None, engine: str, seconds: float,
                color: bool = True) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(no_color=not color, highlight=False)
    table = Table(title="kafkalog scan", title_justify="left")
    for i, h in enumerate(HEADERS):
        table.add_column(h, justify="right" if i in (1, 2, 6) else "left",
                         overflow="fold")
    for r in rows(summary):
        style = "red" if r[-1] != "0" else None
        table.add_row(*r, style=style)
    console.print(table)
    pr = summary["problems"]
    if pr["total"] - pr["by_severity"].get("info", 0):
        pt = Table(title=f"problems (first {len(pr['first'])} of {pr['total']})", title_justify="left")
        for h in ("file", "bytes", "kind", "severity", "message"):
            pt.add_column(h, overflow="fold")
        for p in pr["first"]:
            pt.add_row(*_problem_line(p), style="red" if p["severity"] == "error" else "yellow")
        console.print(pt)
    for line in _footer(summary, out_dir, engine, seconds):
        console.print(line, highlight=False, markup=False)


def render_json(summary: dict[str, Any], out: Callable[[str], None], *, out_dir: str | None, engine: str,
                seconds: float, exit_code: int) -> None:
    doc = {"engine": engine, "out": out_dir, "seconds": round(seconds, 3), "exit_code": exit_code, **summary}
    out(json.dumps(versioned(doc), indent=2, default=str))
