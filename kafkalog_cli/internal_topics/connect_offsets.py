"""Kafka Connect's source offsets topic (``offset.storage.topic``, e.g. ``connect-offsets``): key and value decoding.

A source task's offsets are written by ``OffsetStorageWriter`` (connect/runtime/.../storage/OffsetStorageWriter.java:
179-181 at 1eb7644) with the worker's internal converter, a ``JsonConverter`` without schemas: the key is the JSON
array ``[connectorName, {source partition}]``, the value the JSON object of the source offset; a null value is a
tombstone (the partition's offset removed: KIP-875 ``DELETE``/``PATCH`` with a null offset). The key rule is
``OffsetUtils.processPartitionKey`` (OffsetUtils.java:73-120): a list of exactly two elements, a string and a map
(a null map is skipped without a warning); anything else is ignored by the worker, and here too. A key or value
written with ``schemas.enable=true`` (an ``{"schema":..., "payload":...}`` envelope) is read through its payload.
"""

from __future__ import annotations

import json
from typing import Any

#: topics read by default: the names Connect's examples and images use (connect-offsets, docker-connect-offsets ...)
DEFAULT_MARKER = "connect-offsets"


def is_offsets_topic(topic: str, name: str | None = None) -> bool:
    return topic == name if name is not None else DEFAULT_MARKER in topic


def _json(raw: bytes) -> Any:
    v = json.loads(raw.decode("utf-8"))
    if isinstance(v, dict) and set(v) == {"schema", "payload"}:
        return v["payload"]
    return v


def decode_key(raw: bytes | None) -> tuple[str, dict[str, Any]] | None:
    """(connector, source partition) of a key, None where the worker ignores it."""
    if raw is None:
        return None
    try:
        k = _json(raw)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(k, list) or len(k) != 2 or not isinstance(k[0], str) or not isinstance(k[1], dict):
        return None
    return k[0], k[1]


def decode_value(raw: bytes | None) -> tuple[bool, dict[str, Any] | None]:
    """(readable, offset map or None for a tombstone / JSON null)."""
    if raw is None:
        return True, None
    try:
        v = _json(raw)
    except (ValueError, UnicodeDecodeError):
        return False, None
    if v is None or isinstance(v, dict):
        return True, v
    return False, None


def partition_id(partition: dict[str, Any]) -> str:
    """One text per source partition: Connect compares partitions as maps (order does not matter)."""
    return json.dumps(partition, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
