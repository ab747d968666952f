"""``kafkalog preflight``'s report: text (80 columns) and JSON, from ``ops/preflight.Report``.

The text is the verdict first, then one summary line per class (partitions, followers, transactions, consumers,
schemas, inventory), then the problems, each wrapped to 80 columns; ``verbose`` lists every partition and every
group x partition, the clean ones too.
"""

from __future__ import annotations

import json
import textwrap
from typing import Any

from kafkalog_cli.render.jsondoc import versioned

WIDTH = 80


def _wrap(text: str, indent: str = "", sub: str = "    ") -> list[str]:
    return textwrap.wrap(text, width=WIDTH, initial_indent=indent, subsequent_indent=indent + sub,
                         break_long_words=True, break_on_hyphens=False) or [indent]


def _span(v: tuple[int, int] | None) -> str:
    if v is None:
        return "unknown"
    return str(v[0]) if v[0] == v[1] else f"{v[0]}..{v[1]}"


def consumer_line(c: Any) -> str:
    """One group x partition in a sentence: what it does, how many records, why."""
    epoch = "no epoch" if c.leader_epoch is None else f"epoch {c.leader_epoch}"
    head = f"{c.group} {c.topic}-{c.partition} committed {c.committed_offset} ({epoch}): {c.action.upper()}"
    counts = []
    if c.records_reread and c.records_reread[1]:
        counts.append(f"re-reads {_span(c.records_reread)} records")
    if c.records_skipped and c.records_skipped[1]:
        counts.append(f"skips {_span(c.records_skipped)} records")
    if c.position is not None:
        counts.append(f"reads from {c.position}")
    return head + (" (" + ", ".join(counts) + ")" if counts else "") + f" [{c.case}]: {c.detail}"


def text_lines(r: Any, verbose: bool = False) -> list[str]:
    from kafkalog_cli.ops.preflight import summary

    s = summary(r)
    out = _wrap(f"preflight: {'the set comes back right' if r.comes_back_right else 'PROBLEMS FOUND'} "
                f"({len(r.partitions)} partitions, {len(r.consumers)} group x partition positions; "
                f"auto.offset.reset={r.auto_offset_reset}, {r.isolation})")
    p = s["partitions"]
    out += _wrap(f"partitions: {p['total'] - p['not_loaded'] - p['recovery_cuts']} load as they are, "
                 f"{p['recovery_cuts']} cut by recovery, {p['not_loaded']} not loaded", "  ")
    out += _wrap(f"followers: {p['replicated']} partitions with several copies, {p['follower_losses']} where a "
                 "follower's truncation loses records", "  ")
    out += _wrap(f"transactions: {p['hanging_transactions']} partitions with a hanging transaction (stuck last "
                 "stable offset)", "  ")
    c = s["consumers"]
    out += _wrap(f"consumers: {c['resume']} resume, {c['re-read']} re-read (up to {c['records_reread_max']} "
                 f"records), {c['skip']} skip (up to {c['records_skipped_max']} records), {c['hang']} hang, "
                 f"{c['fail']} fail, {c['unknown']} unknown", "  ")
    cases = ", ".join(f"{n} {k}" for k, n in s["consumer_cases"].items() if n and k != "resume")
    if cases:
        out += _wrap(f"consumer positions: {cases}", "  ")
    if r.schemas is None:
        out += _wrap("schemas: not checked (no _schemas partition in the dirs)", "  ")
    else:
        out += _wrap(f"schemas: {r.schema_problems} schema ids in use that _schemas lacks or has deleted", "  ")
    if r.inventory is None:
        out += _wrap("inventory: not checked (give --metadata DIR)", "  ")
    else:
        out += _wrap(f"inventory: {r.inventory_problems} findings against the KRaft metadata", "  ")
    for u in r.unchecked:
        out += _wrap(f"NOT CHECKED: {u}", "  ")
    shown = r.partitions if verbose else r.problem_partitions
    if shown:
        out.append("")
        out.append("partitions:")
    for pc in shown:
        where = ("no copy loads" if pc.leader is None else
                 f"broker {pc.leader_broker} leads" if pc.leader_broker else f"{pc.leader} leads")
        out += _wrap(f"{pc.name}: {where}; log {pc.log_start_offset}..{pc.log_end_offset}, high watermark "
                     f"{pc.high_watermark}", "  ")
        for msg in pc.problems:
            out += _wrap("- " + msg, "    ", "  ")
        if verbose:
            for msg in pc.notes:
                out += _wrap("note: " + msg, "    ", "  ")
    cons = r.consumers if verbose else r.problem_consumers
    if cons:
        out.append("")
        out.append("consumers:")
    for co in cons:
        out += _wrap(consumer_line(co), "  ")
    if r.schemas and r.schemas.get("id_uses"):
        out.append("")
        out.append("schemas:")
        for u in r.schemas["id_uses"]:
            out += _wrap(f"schema id {u.get('schema_id')} ({u.get('state')}) used by {u.get('records')} records of "
                         f"{u.get('topic')}-{u.get('partition')} offsets {u.get('first_offset')}.."
                         f"{u.get('last_offset')}", "  ")
    if r.inventory and r.inventory.get("findings"):
        out.append("")
        out.append("inventory:")
        for it in r.inventory["findings"]:
            out += _wrap(f"broker {it.get('broker')}: {it.get('class')} {it.get('path')}: {it.get('detail')}; "
                         f"{it.get('broker_action')}", "  ")
    if verbose and r.notes:
        out.append("")
        for n in r.notes:
            out += _wrap("note: " + n)
    if not verbose and (r.problem_partitions or r.problem_consumers):
        out.append("")
        out += _wrap("--verbose lists every partition and group x partition; --format json has every value")
    return out


def json_text(r: Any) -> str:
    return json.dumps(versioned(r.as_dict()), indent=2)
