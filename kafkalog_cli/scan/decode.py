"""``scan --records --decode``: the schema-registry decode of every record, as columns of the ``records`` dataset.

Why a second read: the records rows are built by the compiled walk without the values (``scan/records.py``), so the
decode reads the rows' segment again in Python (``internal_topics/schema_registry.walk_records``) and decodes the
key and value of each row's offset with the registry rebuilt from the ``_schemas`` copies the settings name
(``ScanSettings.decode_schemas``: the CLI finds them, every worker and Spark task replays them once per process).
The same function runs on both engines (called from ``scan/work.py``), so their rows agree by construction.

Columns (``schema.DECODED_FIELDS``): ``key_schema_id``, ``key_subject``, ``key_json`` (a key that does not decode
stays null: keys are often plain strings), ``value_schema_id``, ``value_subject``, ``value_json`` and
``value_decode_error`` (the reason, e.g. ``bad-magic: ...``) for a value that does not decode.
"""

from __future__ import annotations

import os
from typing import Any

import pyarrow as pa

from kafkalog_cli.scan.schema import DECODED_FIELDS, WIRE
from kafkalog_cli.scan.settings import current

_cache: dict[tuple[tuple[int, str], ...], Any] = {}


def decoder() -> Any:
    """This process's ``Decoder`` for the applied settings, or None without ``--decode``."""
    copies = current().decode_schemas
    if not copies:
        return None
    dec = _cache.get(copies)
    if dec is None:
        from kafkalog_cli.internal_topics.schema_decode import Decoder
        from kafkalog_cli.internal_topics.schema_registry import replay

        dec = _cache[copies] = Decoder(replay(list(copies)))
    return dec


def _segment_values(path: str, offsets: set[int]) -> dict[int, Any]:
    from kafkalog_cli.internal_topics.schema_registry import walk_records

    out = {}
    for _f, r in walk_records([path], []):
        if r.offset in offsets:
            out[r.offset] = r
    return out


def attach(table: pa.Table) -> pa.Table:
    """``table`` (a ``records`` chunk) with the decoded columns filled; unchanged without ``--decode``."""
    dec = decoder()
    if dec is None or table.num_rows == 0:
        return table
    log_dirs = table.column("log_dir").to_pylist()
    pdirs = table.column("partition_dir").to_pylist()
    segs = table.column("segment").to_pylist()
    offsets = table.column("offset").to_pylist()
    wanted: dict[str, set[int]] = {}
    paths = []
    for ld, pd, sg, off in zip(log_dirs, pdirs, segs, offsets):
        p = os.path.join(ld, pd, sg)
        paths.append(p)
        wanted.setdefault(p, set()).add(off)
    recs = {p: _segment_values(p, offs) if "://" not in p and os.path.exists(p) else {} for p, offs in wanted.items()}
    cols: dict[str, list[Any]] = {f.name: [] for f in DECODED_FIELDS}
    for p, off in zip(paths, offsets):
        r = recs[p].get(off)
        k = v = None
        if r is not None and r.key is not None:
            k = dec.decode(r.key, r.headers, is_key=True)
        if r is not None and r.value is not None:
            v = dec.decode(r.value, r.headers)
        kd = k if k is not None and k.ok else None
        cols["key_schema_id"].append(kd.schema_id if kd is not None else None)
        cols["key_subject"].append(kd.subject if kd is not None else None)
        cols["key_json"].append(kd.text() if kd is not None else None)
        cols["value_schema_id"].append(v.schema_id if v is not None and v.source is not None else None)
        cols["value_subject"].append(v.subject if v is not None else None)
        cols["value_json"].append(v.text() if v is not None and v.ok else None)
        cols["value_decode_error"].append(f"{v.kind}: {v.reason}" if v is not None and not v.ok else None)
    schema = WIRE["records"]
    for name, vals in cols.items():
        i = schema.get_field_index(name)
        f = schema.field(i)
        table = table.set_column(i, f, pa.array(vals, type=pa.string() if pa.types.is_dictionary(f.type) else f.type)
                                 .cast(f.type))
    return table
