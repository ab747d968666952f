"""Text and JSON of the writing commands (compact, truncate-to-epoch, recover, salvage, rebuild-index, and the
``.txnindex`` rebuild inside it): the engine plans and executes (``ops/``), this only words.

Why separate: the commands in ``cli/`` only parse options, call the engine, hand its result here and choose the exit
code, so the words an operator reads during an incident live in one place per command, beside the others'. Each
function yields the lines of stdout in order (the command writes them); the JSON functions return the document.

``recover`` and ``salvage`` over more than one partition (a log dir) end with a summary: how many partitions are
clean, would change (or changed) and (recover) are refused, and the records at risk (salvage has no refused
partitions: a refusal stops its whole run before anything is written, exit 2). The per-partition blocks are printed
only with ``--verbose``; ``--format json`` always has every partition's details.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from kafkalog_cli.ops.recover import changes_data
from kafkalog_cli.render.jsondoc import versioned

if TYPE_CHECKING:
    from kafkalog_cli.broker.loader import LoaderPlan, Lost
    from kafkalog_cli.ops.compact import CompactPlan
    from kafkalog_cli.ops.rebuild_index import IndexPlan, RebuildResult
    from kafkalog_cli.ops.repair_plan import FileAction
    from kafkalog_cli.ops.salvage import SalvagePlan
    from kafkalog_cli.ops.truncate import TruncatePlan


def json_text(doc: dict | list) -> str:
    """A writing command's ``--format json`` document (one partition's object, or a list of them)."""
    return json.dumps(versioned(doc), indent=1)


def json_docs(docs: list[dict]) -> str:
    """recover's and salvage's ``--format json``: one partition's object, or the list of them for several."""
    return json_text(docs if len(docs) != 1 else docs[0])


def _blocks_then_summary(blocks: list[Iterator[str]], summary: Iterator[str], *, verbose: bool) -> Iterator[str]:
    """One partition: its block. Several (a log dir): the blocks only with ``verbose``, then the summary."""
    if len(blocks) == 1 or verbose:
        for block in blocks:
            yield from block
    if len(blocks) > 1:
        yield from summary


def recover_lines(results: list[tuple[LoaderPlan, list[str]]], *, execute: bool, verbose: bool) -> Iterator[str]:
    """recover's stdout: per partition (plan, backup dirs written)."""
    return _blocks_then_summary(
        [recover_text(plan, execute=execute, used=used) for plan, used in results],
        recover_summary([plan for plan, _used in results], execute=execute,
                        used=[b for _plan, used in results for b in used], verbose=verbose),
        verbose=verbose)


def salvage_lines(results: list[tuple[SalvagePlan, str | None]], *, execute: bool, verbose: bool) -> Iterator[str]:
    """salvage's stdout: per partition (plan, backup dir written or None)."""
    return _blocks_then_summary(
        [salvage_text(plan, execute=execute, written=written) for plan, written in results],
        salvage_summary([plan for plan, _written in results], execute=execute,
                        written=[w for _plan, w in results if w], verbose=verbose),
        verbose=verbose)


def recovered_lines(recovered: Iterable[str]) -> Iterator[str]:
    """The stderr lines of the interrupted changes a run finished or undid before planning (every writing command)."""
    for line in recovered:
        yield f"kafkalog: recovered an interrupted change: {line}"


# ------------------------------------------------------------------------------------------------ compact
def compact_doc(plan: CompactPlan, actions: list[FileAction], *, execute: bool, written: str | None) -> dict:
    doc = plan.to_dict()
    doc.update({"execute": execute, "written": written is not None, "backup_dir": written,
                "actions": [{"kind": a.kind, "path": a.path, "size": a.size, "detail": a.detail} for a in actions]})
    return doc


def compact_text(plan: CompactPlan, actions: list[FileAction], *, execute: bool, written: str | None,
                 keep_backup: bool) -> Iterator[str]:
    yield (f"Compaction of {plan.partition_dir}: log {plan.log_start_offset}..{plan.log_end_offset - 1}, "
           f"cleaning offsets below {plan.first_uncleanable_offset} (now={plan.now_ms})")
    for s in plan.stats:
        yield (f"  segment {s.base}: records {s.records_before} -> {s.records_after}, batches {s.batches_before} -> "
               f"{s.batches_after}, bytes {s.bytes_before} -> {s.bytes_after} (removed: {s.superseded_removed} "
               f"superseded, {s.aborted_records_removed} aborted, {s.tombstones_removed} tombstones, "
               f"{s.keyless_removed} keyless, {s.markers_removed} markers; "
               f"{s.batches_rewritten} re-encoded, {s.batches_emptied} kept empty, {s.horizons_set} horizons set)")
    for base, bases in plan.splits:
        yield f"  split: segment {base} -> segments {', '.join(str(b) for b in bases)} (offset overflow)"
    if plan.offset_map:
        m = plan.offset_map
        yield (f"  offset map: {m['entries']} keys of {m['max_entries']} ({m['slots']} slots, {m['bytes']} bytes)"
               + (f", FULL: cleaned up to offset {m['cleaned_up_to'] - 1}" if m["full"] else ""))
    t = plan.totals()
    yield (f"  total: records {t['records_before']} -> {t['records_after']}, bytes {t['bytes_before']} -> "
           f"{t['bytes_after']} (removed: {t['superseded_removed']} superseded by a later value of their key, "
           f"{t['tombstones_removed']} tombstones, {t['aborted_records_removed']} aborted, {t['keyless_removed']} "
           "keyless)")
    if not actions:
        yield "  (no file changes: the cleanable range is already compact)"
    for a in actions:
        size = "" if a.kind == "delete" or a.size == 0 else f" ({a.size} bytes)"
        yield f"  {a.kind:<7} {os.path.basename(a.path)}{size}: {a.detail}"
    for n in plan.notes:
        yield f"  note: {n}"
    if written:
        yield f"Done. Old files kept in {written}" if keep_backup else "Done."
    elif not execute and actions:
        yield "Dry run: nothing was written; re-run with --execute to apply."


# ------------------------------------------------------------------------------------------------ truncate-to-epoch
def truncate_doc(plan: TruncatePlan, *, execute: bool, written: str | None) -> dict:
    doc = plan.to_dict()
    doc.update({"execute": execute, "written": written is not None, "backup_dir": written})
    return doc


def truncate_text(plan: TruncatePlan, *, epoch: int | None, execute: bool, written: str | None,
                  keep_backup: bool) -> Iterator[str]:
    what = f"epoch {epoch}" if epoch is not None else "--to-offset"
    yield (f"Truncation of {plan.partition_dir} ({what}): target offset {plan.target_offset}, log end offset "
           f"{plan.old_log_end_offset} -> {plan.new_log_end_offset}")
    for r in plan.lost:
        how = "segment removed" if r.whole_segment else "segment cut"
        yield (f"  lose offsets {r.first_offset}..{r.last_offset} in {r.segment}: {r.records} records, {r.batches} "
               f"batches, {r.bytes} bytes ({how})")
    if plan.checkpoint_after != plan.checkpoint_before:
        yield ("  leader-epoch-checkpoint: " + " ".join(f"{e}@{s}" for e, s in plan.checkpoint_before) + " -> "
               + (" ".join(f"{e}@{s}" for e, s in plan.checkpoint_after) or "(empty)"))
    for name in plan.snapshot_deletes:
        yield f"  delete  {name}: producer snapshot out of range after the cut (as the broker's truncateAndReload)"
    for w in plan.snapshot_writes:
        yield f"  write   {w.name}: producer snapshot ({w.producers} producers), as the broker writes at the cut"
    for n in plan.notes:
        yield f"  note: {n}"
    if not plan.has_changes:
        yield "  (no file changes)"
    elif written:
        yield f"Done. Removed and replaced files kept in {written}" if keep_backup else "Done."
    elif not execute:
        yield "Dry run: nothing was written; re-run with --execute to apply."


# ------------------------------------------------------------------------------------------------ rebuild-index
def index_plan_lines(plan: IndexPlan) -> Iterator[str]:
    """The file list of one partition's rebuild-index plan; a dry run prints exactly this."""
    yield f"Plan for {plan.partition_dir}:"
    if not plan.actions:
        yield "  (no file changes)"
    for a in plan.actions:
        text = f"  {a.kind:<7} {os.path.basename(a.path)}"
        if a.kind != "delete":
            text += f" ({a.size} bytes)"
        if a.source:
            text += f" from {os.path.basename(a.source)}"
        if a.detail:
            text += f": {a.detail}"
        yield text
    for n in plan.notes:
        yield f"  note: {n}"
    if plan.summary:
        yield "  summary: " + ", ".join(f"{k}={v}" for k, v in plan.summary.items())


def rebuild_index_doc(res: RebuildResult, *, execute: bool) -> dict:
    return {
        "execute": execute,
        "segments": [s.to_dict() for s in res.segments],
        "plans": [p.to_dict() for p in res.plans],
        "backup_dirs": res.backup_dirs,
        "recovered": res.recovered,
        "differences": res.differences,
        "problems": res.problems,
    }


def rebuild_index_text(res: RebuildResult, *, execute: bool) -> Iterator[str]:
    for s in res.segments:
        tag = " (active segment)" if s.active else ""
        yield (f"{s.log_path}{tag}: {s.batches} batches, {s.valid_bytes} of {s.log_size} bytes valid, "
               f"rebuilt {s.index_entries} offset / {s.time_entries} time entries")
        yield f"  .index: {s.index.text()}"
        yield f"  .timeindex: {s.timeindex.text()}"
        if s.problem is not None:
            yield (f"  problem: {s.problem.describe()}; the broker's recovery would truncate the log here "
                   "(segment not rewritten)")
        if s.written:
            yield f"  written: {', '.join(s.written)}"
    if not execute:
        for plan in res.plans:
            yield from index_plan_lines(plan)
    for b in res.backup_dirs:
        yield f"Old files kept in {b}"
    if not execute and res.differences:
        yield "Dry run: nothing was written; re-run with --execute to write the rebuilt indexes."


# ------------------------------------------------------------------------------------------------ recover
def _lost_text(lost: Lost) -> str:
    rng = "offsets unknown" if lost.first_offset is None else f"offsets {lost.first_offset}..{lost.last_offset}"
    extra = f", {lost.corrupt_bytes} bytes unreadable" if lost.corrupt_bytes else ""
    return f"{rng}: {lost.batches} intact batches, {lost.records} records, {lost.bytes} bytes{extra}"


def recover_doc(plan: LoaderPlan, *, execute: bool, used: list[str]) -> dict:
    doc = plan.to_dict()
    doc.update(execute=execute, backup_dirs=used)
    return doc


def recover_text(plan: LoaderPlan, *, execute: bool, used: list[str]) -> Iterator[str]:
    """One partition's block: what the broker's loader does at its next start (and, executed, what was done)."""
    yield f"Partition {plan.partition_dir} (Kafka {plan.kafka_version} loader):"
    yield (f"  shutdown: {'clean (.kafka_cleanshutdown present)' if plan.clean_shutdown else 'unclean'}; recovery "
           f"point {plan.recovery_point} ({plan.recovery_point_source}); log start checkpoint "
           f"{plan.log_start_checkpoint}")
    for r in plan.recovered:
        head = f"  recover segment {r.base}: {r.reason}: "
        if r.outcome == "intact":
            yield head + f"intact ({r.valid_bytes} bytes, next offset {r.next_offset})"
        else:
            yield (head + f"{r.outcome.upper()} at byte {r.stop_position} of {r.size}, offset {r.truncate_offset} "
                   f"({r.stop})")
            if r.lost:
                yield f"    lose {_lost_text(r.lost)}"
    for d in plan.deleted_segments:
        yield f"  DELETE segment {d.segment}: {_lost_text(d)}"
    for c in plan.changes:
        src = f" from {c.source}" if c.source else ""
        size = f" ({c.size} bytes)" if c.kind in ("write", "truncate") else ""
        yield f"  {c.kind:<12} {c.name}{src}{size}: {c.detail}"
    if plan.epochs_after != plan.epochs_before:
        yield ("  leader-epoch-checkpoint: " + (" ".join(f"{e}@{s}" for e, s in plan.epochs_before) or "(empty)")
               + " -> " + (" ".join(f"{e}@{s}" for e, s in plan.epochs_after) or "(empty)"))
    if plan.recovery_point_rewrite is not None and plan.recovery_point_rewrite_why == "below":
        yield (f"  recovery-point-offset-checkpoint: {plan.recovery_point} ({plan.recovery_point_source}) -> "
               f"{plan.recovery_point_rewrite} (the log end: --execute leaves every segment recovered and synced, "
               "and writes it as the broker's clean close does, so that the next start does not recover them again)")
    elif plan.recovery_point_rewrite is not None:
        yield (f"  recovery-point-offset-checkpoint: {plan.recovery_point} -> {plan.recovery_point_rewrite} (above "
               "the new log end: the broker clips it and writes it at its next checkpoint; --execute writes it)")
    yield (f"  result: log start offset {plan.log_start_offset}, log end offset {plan.log_end_before} -> "
           f"{plan.log_end_offset}, {plan.lost_records} records lost, recovery point {plan.new_recovery_point}")
    for u in plan.unrepaired:
        yield (f"  NOT REPAIRED: {u.problem}; "
               + u.advice(plan.partition_dir, plan.recovery_point, plan.clean_shutdown))
    for f in plan.fatal:
        yield f"  FATAL: {f}"
    for n in plan.notes:
        yield f"  note: {n}"
    if not plan.changes and not plan.fatal:
        yield "  (the broker would change nothing)"
    elif used:
        yield f"  Done. Removed and replaced files kept in {', '.join(used)}"
    elif not execute and plan.changes:
        yield "  Dry run: nothing was written; re-run with --execute to do this now, or try 'kafkalog salvage'."


def _where(pdirs: list[str]) -> str:
    """The log dir(s) of a run's partitions, for a summary's head line."""
    dirs = sorted({os.path.dirname(p) for p in pdirs})
    return dirs[0] if len(dirs) == 1 else f"{len(dirs)} log dirs"


def _warnings(notes: Iterable[str]) -> Iterator[str]:
    """The log-dir warnings of a run, once each (every partition of a log dir carries the same one)."""
    seen: list[str] = []
    for n in notes:
        if n.startswith("WARNING") and n not in seen:
            seen.append(n)
    for n in seen:
        yield f"  note: {n}"


def recover_summary(plans: list[LoaderPlan], *, execute: bool, used: list[str],
                    verbose: bool) -> Iterator[str]:
    """The end of a ``recover`` run over several partitions: partitions clean / would change / refused, the records
    at risk (what the broker's recovery deletes at its next start), and what to do next."""
    refused = [p for p in plans if p.fatal]
    change = [p for p in plans if not p.fatal and changes_data(p)]
    pending = [p for p in plans if not p.fatal and not changes_data(p) and p.changes]
    clean = len(plans) - len(refused) - len(change)
    unrepaired = [p for p in plans if p.unrepaired]
    at_risk = sum(p.lost_records for p in change)
    kafka = plans[0].kafka_version
    yield (f"Summary: {len(plans)} partitions in {_where([p.partition_dir for p in plans])} (Kafka {kafka} loader"
           f"{', executed' if execute else ''}):")
    yield (f"  clean: {clean} (the broker would change no data; {len(pending)} only remove files already scheduled "
           "for deletion, .deleted)" if pending else f"  clean: {clean} (the broker would change nothing)")
    yield f"  {'changed' if execute else 'would change'}: {len(change)}"
    for p in change:
        yield (f"    {os.path.basename(p.partition_dir)}: {p.lost_records} records lost, log end offset "
               f"{p.log_end_before} -> {p.log_end_offset}, {len(p.changes)} file changes")
    yield f"  refused: {len(refused)} (the broker would not load them)"
    for p in refused:
        yield f"    {os.path.basename(p.partition_dir)}: FATAL: {'; '.join(p.fatal)}"
    if unrepaired:
        yield f"  not repaired by the broker's start: {len(unrepaired)}"
        for p in unrepaired:
            for u in p.unrepaired:
                yield f"    {os.path.basename(p.partition_dir)}: NOT REPAIRED: {u.problem}"
    yield (f"  records at risk: {at_risk}" + (" (removed; the backups keep them)" if execute else
                                              " (the broker's recovery deletes them at its next start)"))
    yield from _warnings(n for p in plans for n in p.notes)
    if used:
        yield f"Done. Removed and replaced files kept in {', '.join(used)}"
    elif not execute and (change or pending):
        yield "Dry run: nothing was written; re-run with --execute to do this now, or try 'kafkalog salvage'."
    if not verbose:
        yield "Per-partition details: --verbose (or --format json)."


# ------------------------------------------------------------------------------------------------ salvage
def salvage_doc(plan: SalvagePlan, *, execute: bool, written: str | None) -> dict:
    doc = plan.to_dict()
    doc.update(execute=execute, backup_dir=written)
    return doc


def salvage_text(plan: SalvagePlan, *, execute: bool, written: str | None) -> Iterator[str]:
    """One partition's block: the cuts, the files rewritten, what salvage and the broker's own recovery lose."""
    yield f"Salvage of {plan.partition_dir}:"
    for cut in plan.cuts:
        what = "zero-filled tail" if cut.zero_tail else "corrupt range"
        before = ("no intact batch before it in the segment" if cut.last_good_offset is None
                  else f"last good offset {cut.last_good_offset}")
        after = ("no intact batch after it in the segment" if cut.first_good_offset is None
                 else f"next good offset {cut.first_good_offset}")
        yield f"  cut {what} bytes {cut.start}..{cut.end} of segment {cut.segment} ({before}, {after})"
    for c in plan.changes:
        size = f" ({c.size} bytes)" if c.kind == "write" else ""
        yield f"  {c.kind:<7} {os.path.basename(c.name)}{size}: {c.detail}"
    for n in plan.notes:
        yield f"  note: {n}"
    gaps = ", ".join(f"{lo}..{hi if hi >= 0 else '?'}" for lo, hi in plan.salvage_lost_offsets) or "none"
    yield (f"  salvage keeps {plan.kept_batches} batches / {plan.kept_records} records, log end offset "
           f"{plan.log_end_offset}; loses {plan.salvage_lost_bytes} corrupt bytes (offsets {gaps})")
    broker = ("nothing" if plan.broker_lost_offsets is None else
              f"{plan.broker_lost_records} intact records, offsets {plan.broker_lost_offsets[0]}.."
              f"{plan.broker_lost_offsets[1]}")
    yield f"  the broker's own recovery would lose: {broker} (log end offset {plan.broker_log_end_offset})"
    for u in plan.broker_unrepaired:
        # the same story as recover's NOT REPAIRED line and verify-crc's next: (issue 27): "loses nothing" is
        # not "repairs it"
        yield (f"  but the broker will NOT repair the corrupt batch at byte {u.position} of segment {u.segment} "
               f"(offset {u.offset}): it keeps it, and fetches from offset {u.offset} and followers fail; "
               "salvage --execute removes it")
    if not plan.changes:
        yield "  (nothing to change)"
    elif written:
        yield f"  Done. Replaced files kept in {written}"
    elif not execute:
        yield "  Dry run: nothing was written; re-run with --execute to apply."


def salvage_summary(plans: list[SalvagePlan], *, execute: bool, written: list[str],
                    verbose: bool) -> Iterator[str]:
    """The end of a ``salvage`` run over several partitions: partitions clean / would change, the records at risk
    (the intact records the broker's own recovery would delete and salvage keeps), the corrupt bytes cut."""
    change = [p for p in plans if p.has_changes]
    unrepaired = [p for p in plans if p.broker_unrepaired]
    at_risk = sum(p.broker_lost_records for p in plans)
    cut = sum(p.salvage_lost_bytes for p in change)
    yield (f"Summary: {len(plans)} partitions in {_where([p.partition_dir for p in plans])}"
           f"{' (executed)' if execute else ''}:")
    yield f"  clean: {len(plans) - len(change)} (nothing to cut or rebuild)"
    yield f"  {'changed' if execute else 'would change'}: {len(change)}"
    for p in change:
        yield (f"    {os.path.basename(p.partition_dir)}: {len(p.cuts)} cut(s), {p.salvage_lost_bytes} corrupt bytes; "
               f"keeps {p.kept_records} records, {len(p.changes)} file changes (the broker: loses "
               f"{p.broker_lost_records})")
    if unrepaired:
        yield (f"  corrupt batches the broker's start would NOT repair: {sum(len(p.broker_unrepaired) for p in unrepaired)}"
               f" in {len(unrepaired)} partitions (salvage removes them)")
    yield f"  records at risk: {at_risk} (intact; the broker's own recovery deletes them, salvage keeps them)"
    yield f"  corrupt bytes cut: {cut}"
    yield from _warnings(n for p in plans for n in p.notes)
    if written:
        yield f"Done. Replaced files kept in {', '.join(written)}"
    elif not execute and change:
        yield "Dry run: nothing was written; re-run with --execute to apply."
    if not verbose:
        yield "Per-partition details: --verbose (or --format json)."
