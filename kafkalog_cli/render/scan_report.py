"""Render ``kafkalog scan``'s summary: rich tables on a terminal, plain aligned text in a pipe, or one JSON document.

Why three forms: on-call engineers read it on a terminal, scripts grep it, and dashboards want JSON. All three
take the same dict from ``scan.summary.summarize``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from kafkalog_cli.render.jsondoc import versioned

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


def render_text(summary: dict[str, Any], out: Callable[[str], None], *, out_dir: str | None, engine: str,
                seconds: float) -> None:
    table = [HEADERS, *rows(summary)]
    widths = [max(len(r[i]) for r in table) for i in range(len(HEADERS))]
    for r in table:
        out("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    _problems_text(summary, out)
    out("")
    for line in _footer(summary, out_dir, engine, seconds):
        out(line)


def _problems_text(summary: dict[str, Any], out: Callable[[str], None]) -> None:
    pr = summary["problems"]
    if not pr["total"] - pr["by_severity"].get("info", 0):
        return  # only notes: not listed in the default view
    out("")
    shown = len(pr["first"])
    out(f"problems (first {shown} of {pr['total']}; all in the problems dataset):" if shown < pr["total"]
        else "problems:")
    for p in pr["first"]:
        where, span, kind, sev, msg = _problem_line(p)
        out(f"  {where} bytes {span} {kind} ({sev}): {msg}")


def render_rich(summary: dict[str, Any], *, out_dir: str | None, engine: str, seconds: float) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
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
