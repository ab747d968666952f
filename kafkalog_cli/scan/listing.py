"""What the listing of a scan finds besides segments: directories it cannot list, and leftover files.

Why a module of its own: the driver lists the files once (``paths.expand``) and hands segment paths to the engines;
what is not a segment never reaches a worker. Before this, an unlistable partition directory (EACCES, EIO on a
failing disk) was silently skipped by ``os.walk`` and the scan said "no problems found"; and ``.swap`` / ``.cleaned``
/ ``.deleted`` files, which the broker resolves at start-up (issue 19), were not mentioned. Both become rows of the
``problems`` dataset, written by the driver next to the engines' part files, so either engine reports them alike:

* an unlistable directory: kind ``unreadable``, ``end`` 0 (unreadable as a whole: exit 2); the rest is scanned;
* a leftover: kind ``leftover`` with what the broker will do with it (``storage.layout.leftover_fate``, the rule
  verify-crc uses): a warning for a ``.swap`` (it replaces segments at start-up, so the data scanned is not what the
  broker will serve) or a name the loader cannot parse, a note (info) for a file the broker only deletes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kafkalog_cli.scan.paths import display_name, locate
from kafkalog_cli.storage import layout

if TYPE_CHECKING:
    import pyarrow as pa

PART_FILE = "part-listing.parquet"  # next to the engines' part files in DIR/problems/


@dataclass
class Listing:
    """Collected by ``paths.expand`` while it walks the arguments."""

    unlistable: list[tuple[str, str]] = field(default_factory=list)  # (directory, why)
    leftovers: list[tuple[str, list[str]]] = field(default_factory=list)  # (leftover path, names in its directory)

    def walk_error(self, exc: OSError) -> None:
        """``os.walk``'s onerror: a directory below an argument that cannot be listed."""
        what = os.strerror(exc.errno) if exc.errno else str(exc)
        self.unlistable.append((os.path.abspath(exc.filename or "?"), what))

    def saw(self, directory: str, files: list[str]) -> None:
        for name in files:
            if layout.is_leftover(name):
                self.leftovers.append((os.path.abspath(os.path.join(directory, name)), files))

    def rows(self) -> list[dict[str, Any]]:
        """The problem rows, in path order (duplicates from overlapping arguments removed)."""
        out: dict[tuple[str, str], dict[str, Any]] = {}
        for d, why in self.unlistable:
            loc = locate(os.path.join(d, "-")).as_dict()  # labels the directory as a partition directory
            loc["segment"] = ""
            out[(d, "unreadable")] = {**loc, "file": display_name(os.path.basename(d)), "position": 0, "end": 0,
                                      "kind": "unreadable", "severity": "error", "offset": None,
                                      "message": f"cannot list directory: {why}; its segments were not scanned "
                                                 "(check permissions, or copy the directory off the failing disk)"}
        for path, names in self.leftovers:
            name = os.path.basename(path)
            fate = layout.leftover_fate(name, names)
            severity = "warning" if name.endswith(layout.SWAP_SUFFIX) or "fails to load" in fate else "info"
            loc = locate(path).as_dict()
            out[(path, "leftover")] = {**loc, "file": loc["segment"], "position": 0, "end": 0, "kind": "leftover",
                                       "severity": severity, "offset": None,
                                       "message": f"leftover of an unfinished clean, split or delete: {fate}"}
        return [out[k] for k in sorted(out)]

    def table(self) -> pa.Table:
        from kafkalog_cli.scan.schema import to_table  # pyarrow: loaded when needed (the CLI lists files first)

        return to_table("problems", self.rows())  # broker_id from each row's log dir, as the engines' rows

    def write(self, out_dir: str) -> pa.Table:
        """Write the rows as their own part file of ``DIR/problems`` (after the engine, so Spark's overwrite of the
        dataset cannot remove it); returns them for the driver's summary."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        from kafkalog_cli.scan.fleet import partition_path
        from kafkalog_cli.scan.schema import WIRE

        table = self.table()
        if table.num_rows:  # broker_id=<id>/topic=<name>/, as the engines write their part files
            keys = pa.table({"b": table.column("broker_id"), "t": table.column("topic"),
                             "i": pa.array(range(table.num_rows), pa.int64())})
            for r in keys.group_by(["b", "t"], use_threads=False).aggregate([("i", "list")]).to_pylist():
                d = os.path.join(out_dir, "problems", partition_path(r["b"], r["t"]))
                os.makedirs(d, exist_ok=True)
                part = table.take(pa.array(r["i_list"], pa.int64()))
                pq.write_table(part.cast(WIRE["problems"]), os.path.join(d, PART_FILE), compression="snappy")
        return table
