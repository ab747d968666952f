"""Second pass of a scan: checks that need a batch's neighbours across a whole partition.

Why a separate pass: segments are scanned independently (in any order, on any executor), but producer sequences,
timestamp order and offsets across segment boundaries run through the whole partition. Both engines group the
batch rows of one partition directory and call ``partition_problems`` on them, so they report identical rows.
Only batches whose CRC verified take part: a corrupt header says nothing trustworthy about its neighbours.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kafkalog_cli.format.text import increment_sequence
from kafkalog_cli.scan.paths import SEGMENT_RE

LOCATION = ("log_dir", "topic", "partition", "partition_dir")
# the batches columns partition_problems reads
COLUMNS = [*LOCATION, "segment", "position", "size", "base_offset", "last_offset", "max_timestamp", "producer_id",
           "producer_epoch", "base_sequence", "last_sequence", "control", "crc_ok"]


def partition_key(row: dict[str, Any]) -> tuple[str, str]:
    """Rows of the same partition directory share this key (two dirs of one partition, e.g. ``-future``, do not)."""
    return row["log_dir"], row["partition_dir"]


def _order(row: dict[str, Any]) -> tuple[int, str, int]:
    seg = row["segment"]
    return (int(seg[:20]) if SEGMENT_RE.match(seg) else -1), seg, row["position"]


def _problem(row: dict[str, Any], kind: str, severity: str, message: str) -> dict[str, Any]:
    return {
        **{k: row[k] for k in LOCATION},
        "segment": row["segment"],
        "file": row["segment"],
        "position": row["position"],
        "end": row["position"] + row["size"],
        "kind": kind,
        "severity": severity,
        "message": message,
        "offset": row["base_offset"],
    }


def partition_problems(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Problems across the batch rows of ONE partition directory (any order in, deterministic order out):

    - ``segment-order`` (error): a segment's base offset (file name) is not above the previous segment's last offset;
    - ``sequence-gap`` (warning): per producer id and epoch, a batch whose baseSequence is not the previous batch's
      lastSequence + 1 (with Kafka's wrap at 2^31-1); the first batch of a producer seen here is not checked;
    - ``timestamp-order`` (warning): a batch whose maxTimestamp is below the previous batch's (timestamps < 0,
      i.e. v0 messages and empty batches, are skipped).
    """
    good = sorted((r for r in rows if r["crc_ok"]), key=_order)
    out: list[dict[str, Any]] = []
    prev_seg: str | None = None
    prev_last: int | None = None
    prev_ts: dict[str, Any] | None = None
    producers: dict[tuple[int, int], dict[str, Any]] = {}
    for r in good:
        seg = r["segment"]
        if seg != prev_seg:
            if prev_last is not None and SEGMENT_RE.match(seg) and int(seg[:20]) <= prev_last:
                out.append(_problem(r, "segment-order", "error",
                                    f"segment base offset {int(seg[:20])} is not above the previous segment's last "
                                    f"offset {prev_last} ({prev_seg})"))
            prev_seg = seg
        prev_last = r["last_offset"] if prev_last is None else max(prev_last, r["last_offset"])

        if r["max_timestamp"] >= 0:
            if prev_ts is not None and r["max_timestamp"] < prev_ts["max_timestamp"]:
                out.append(_problem(r, "timestamp-order", "warning",
                                    f"batch baseOffset {r['base_offset']}: maxTimestamp {r['max_timestamp']} is below "
                                    f"the previous batch's {prev_ts['max_timestamp']} (baseOffset "
                                    f"{prev_ts['base_offset']}, {prev_ts['segment']})"))
            prev_ts = r

        if r["producer_id"] >= 0 and r["base_sequence"] >= 0 and not r["control"]:
            key = (r["producer_id"], r["producer_epoch"])
            before = producers.get(key)
            if before is not None:
                expected = increment_sequence(before["last_sequence"], 1)
                if r["base_sequence"] != expected:
                    what = "gap" if r["base_sequence"] > expected else "duplicate or out-of-order sequence"
                    out.append(_problem(r, "sequence-gap", "warning",
                                        f"producer {key[0]} epoch {key[1]}: baseSequence {r['base_sequence']}, expected "
                                        f"{expected} after baseOffset {before['base_offset']} (lastSequence "
                                        f"{before['last_sequence']}): {what}"))
            producers[key] = r
    return out
