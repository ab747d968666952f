"""``kafkalog replay``'s text and JSON: the plan (what a dry run would produce), the result, the findings."""

from __future__ import annotations

from typing import Any

from kafkalog_cli.ops.replay import Plan, ReplayResult
from kafkalog_cli.storage.verify_model import Problem

SCHEMA_VERSION = 1

FINDING_HINT = {
    "bad-line": "the line is not replayed; fix or drop it and run again (the replay resumes where it stopped)",
    "bad-record": "the batch passed its CRC but a record does not decode: 'kafkalog dump --deep-iteration' shows it",
}
SEGMENT_HINT = ("the batch is not replayed: 'kafkalog verify-crc' maps the damage, 'kafkalog salvage' keeps the "
                "intact batches around it")


def _finding(p: Problem) -> str:
    where = f"{p.file} bytes [{p.position}, {p.end})"
    off = f" (batch at offset {p.offset})" if p.offset is not None and "offset" not in p.message else ""
    return f"  {where}: {p.kind}: {p.message}{off}; next: {FINDING_HINT.get(p.kind, SEGMENT_HINT)}"


def _range(first: int | None, last: int | None) -> str:
    return "-" if first is None else f"{first}..{last}"


def _dests(d: dict[int, int]) -> str:
    if not d:
        return "-"
    if len(d) <= 4:
        return ", ".join(f"{p} ({n})" for p, n in sorted(d.items()))
    return f"{len(d)} partitions"


def plan_lines(plan: Plan, *, dry_run: bool = True) -> list[str]:
    o = plan.options
    parts = plan.partitions
    dest = f"{plan.destination_partitions} partitions" if plan.destination_partitions else "partition count unknown"
    out = [f"replay into {o.topic!r} ({dest}) at {o.bootstrap}; partitioner {o.partitioner}; "
           f"offset header {o.offset_header or 'none'}; {o.isolation}"]
    out.append(f"{'source partition':<28} {'records':>9} {'offsets':>17} {'left out':>9}  destination partitions")
    for pp in parts.values():
        left = pp.aborted + pp.open + pp.control + pp.duplicates + pp.below_log_start
        out.append(f"{pp.name:<28} {pp.records:>9} {_range(pp.first_offset, pp.last_offset):>17} {left:>9}  "
                   f"{_dests(pp.destinations)}")
    total_left = plan.left_out
    out.append(f"total: {plan.records} records to produce from {len(parts)} source partitions; {total_left} left out")
    why = []
    for attr, text in (("aborted", "aborted"), ("open", "in transactions with no marker (open)"),
                       ("control", "control (markers)"), ("duplicates", "already read from an earlier copy"),
                       ("below_log_start", "below the log start offset (deleted by DeleteRecords or retention, still "
                                           "on disk; --below-log-start replays them)")):
        n = sum(getattr(pp, attr) for pp in parts.values())
        if n:
            why.append(f"{n} {text}")
    if why:
        out.append("  left out: " + "; ".join(why))
    if plan.findings:
        out.append(f"findings: {len(plan.findings)} (not replayed):")
        out += [_finding(p) for p in plan.findings]
    for note in plan.notes:
        out.append(f"note: {note}")
    if plan.groups:
        out.append(f"consumer groups in the source __consumer_offsets: {len(plan.groups)} (a reset CSV each after "
                   "--execute)")
        for g, per in sorted(plan.groups.items()):
            commits = ", ".join(f"{t}-{p}@{c}" for (t, p), c in sorted(per.items()))
            deleted = plan.deleted_commits.get(g)
            extra = f" (deleted by a tombstone, kept: {', '.join(f'{t}-{p}' for t, p in deleted)})" if deleted else ""
            out.append(f"  {g}: {commits}{extra}")
    if plan.resume is not None:
        st = plan.resume
        done = sum(st.counts.values())
        out.append(f"resume: {st.path} holds {done} acknowledged records"
                   + (" (the replay is complete)" if st.done else "; they are skipped"))
    if dry_run:
        out.append("dry run: nothing was produced; add --execute to produce")
    return out


def result_lines(res: ReplayResult) -> list[str]:
    out = plan_lines(res.plan, dry_run=False)
    st = res.state
    if res.recovered_from_tail:
        out.append(f"resume: {res.recovered_from_tail} records of an interrupted run were found in {res.plan.options.topic}"
                   " (acknowledged by the broker, not yet in the checkpoint): not produced again")
    if res.skipped_resume:
        out.append(f"resume: {res.skipped_resume} records already delivered were skipped")
    out.append(f"produced: {res.produced} records acknowledged in {res.seconds:.1f} s"
               + (f" ({res.produced / res.seconds:,.0f}/s)" if res.seconds > 0 and res.produced else ""))
    out.append(f"offset map: {st.map_path}")
    out.append(f"checkpoint: {st.path}")
    for g in sorted(res.resets.values(), key=lambda r: r.group):
        if g.file is None:
            out.append(f"reset {g.group}: no replayed record of its committed partitions: no file")
            continue
        pos = ", ".join(f"{p}@{o}" for p, o in sorted(g.offsets.items()))
        out.append(f"reset {g.group}: {g.file} ({pos})")
        out.append(f"  kafka-consumer-groups.sh --bootstrap-server {res.plan.options.bootstrap} --group {g.group} "
                   f"--reset-offsets --from-file {g.file} --execute")
        if g.past_end:
            out.append(f"  committed past the last replayed record of {', '.join(f'{t}-{p}' for t, p in g.past_end)}: "
                       "lands after it")
        if g.reread:
            out.append(f"  {g.reread} records it had consumed are read again (source partitions mixed by murmur2)")
    if res.reset_all:
        out.append(f"all groups: {res.reset_all} (for --all-groups or several --group)")
    if res.interrupted:
        out.append("interrupted: the checkpoint is saved; run the same command again to resume")
    if res.error:
        out.append(f"stopped: {res.error}; the checkpoint is saved; run the same command again to resume")
    return out


def _problem(p: Problem) -> dict[str, Any]:
    d = p.to_dict()
    d["next"] = FINDING_HINT.get(p.kind, SEGMENT_HINT)
    return d


def plan_doc(plan: Plan, *, dry_run: bool = True) -> dict[str, Any]:
    o = plan.options
    return {
        "schema_version": SCHEMA_VERSION, "dry_run": dry_run,
        "destination": {"bootstrap_server": o.bootstrap, "topic": o.topic, "partitions": plan.destination_partitions,
                        "partitioner": o.partitioner, "offset_header": o.offset_header, "isolation": o.isolation},
        "records": plan.records, "left_out": plan.left_out,
        "partitions": [{"topic": pp.topic, "partition": pp.partition, "inputs": pp.inputs, "records": pp.records,
                        "first_offset": pp.first_offset, "last_offset": pp.last_offset, "aborted": pp.aborted,
                        "open": pp.open, "control": pp.control, "duplicates": pp.duplicates,
                        "below_log_start": pp.below_log_start, "log_start": pp.log_start,
                        "destinations": {str(k): v for k, v in sorted(pp.destinations.items())}}
                       for pp in plan.partitions.values()],
        "findings": [_problem(p) for p in plan.findings],
        "notes": plan.notes,
        "groups": [{"group": g, "committed": [{"topic": t, "partition": p, "offset": c}
                                              for (t, p), c in sorted(per.items())],
                    "deleted": [{"topic": t, "partition": p} for t, p in plan.deleted_commits.get(g, [])]}
                   for g, per in sorted(plan.groups.items())],
        "resume": None if plan.resume is None else {"checkpoint": plan.resume.path, "done": plan.resume.done,
                                                     "acknowledged": sum(plan.resume.counts.values())},
    }


def result_doc(res: ReplayResult) -> dict[str, Any]:
    d = plan_doc(res.plan, dry_run=False)
    st = res.state
    d.update({
        "produced": res.produced, "skipped_resume": res.skipped_resume, "recovered_from_tail": res.recovered_from_tail,
        "seconds": round(res.seconds, 3), "interrupted": res.interrupted, "error": res.error, "complete": st.done,
        "offset_map": st.map_path, "checkpoint": st.path,
        "resets": [{"group": g.group, "file": g.file, "offsets": {str(k): v for k, v in sorted(g.offsets.items())},
                    "past_end": [{"topic": t, "partition": p} for t, p in g.past_end], "reread": g.reread,
                    "deleted": [{"topic": t, "partition": p} for t, p in g.deleted]}
                   for g in sorted(res.resets.values(), key=lambda r: r.group)],
        "reset_all_groups": res.reset_all,
    })
    return d
