"""The text of ``kafkalog transactions`` (cli/internal_cmds.py prints it)."""

from __future__ import annotations

from typing import Any

from kafkalog_cli.timefmt import duration


def transactions_lines(report: Any, partitions: int) -> list[str]:
    """The text of ``kafkalog transactions`` over log dirs: the coordinator view, each partition with open
    transactions (ages as "3d 4h" with the milliseconds), their classification and the next step, the totals."""
    out: list[str] = []
    view = report.coordinator
    present = len(view.partitions_present)
    out.append(f"Coordinator: {present} of {partitions} __transaction_state partition(s) present, "
               f"{sum(1 for v in view.latest.values() if v is not None)} transactional id(s)")
    for p in report.partitions:
        if not p.open and p.last_stable_offset == p.high_watermark:
            continue
        who = f", broker {p.broker}" if p.broker is not None else ""
        hw = "" if p.high_watermark_known else " (unknown: log end used)"
        out.append(f"{p.topic}-{p.partition} ({p.path}{who}): log start {p.log_start_offset}, log end "
                   f"{p.log_end_offset}, high watermark {p.high_watermark}{hw}, last stable offset "
                   f"{p.last_stable_offset} (lags the log end by {p.lso_lag})")
        for t in p.open:
            tid = f" transactionalId: {t.transactional_id}" if t.transactional_id is not None else ""
            cut = " (data start removed by retention)" if t.data_start_removed else ""
            age = f" age: {duration(t.age_ms)} ({t.age_ms} ms)" if t.age_ms is not None else ""
            out.append(f"  producerId: {t.producer_id} producerEpoch: {t.producer_epoch} firstOffset: "
                       f"{t.first_offset}{cut} lastOffset: {t.last_offset} batches: {t.batches}{age}{tid}")
            out.append(f"    {t.classification}: {t.reason}")
            if t.complete_advice:
                out.append(f"    {t.complete_advice}")
            if t.abort_command:
                if t.abort_warning:
                    out.append(f"    WARNING: {t.abort_warning}")
                out.append(f"    {'last resort' if t.abort_warning else 'fix'}: {t.abort_command}")
            if t.blocked_consumers:
                names = ", ".join(f"{g['group']} (at {g['committed_offset']})" for g in t.blocked_consumers)
                out.append(f"    blocked read_committed consumer groups: {names}")
        for n in p.notes:
            out.append(f"  note: {n}")
    findings = report.findings
    if not findings:
        out.append(f"No open transactions in {len(report.partitions)} partition(s).")
        return out
    counts: dict[str, int] = {}
    for t in findings:
        counts[t.classification] = counts.get(t.classification, 0) + 1
    out.append(f"{len(findings)} open transaction(s): " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())))
    return out
