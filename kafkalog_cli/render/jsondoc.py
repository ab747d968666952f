"""The one JSON convention of every ``--format json``: snake_case keys and a ``schema_version`` in every document.

Why one module: a script reading ``verify-crc`` and ``dump`` JSON should not have to know two key styles, and must be
able to tell which layout it reads. ``SCHEMA_VERSION`` is raised when a key is renamed or removed or changes meaning
(adding a key does not raise it). Version 1: the first versioned layout, where dump's and locate's former camelCase
keys became snake_case. Field names inside decoded internal-topic data (``key``, ``value``, ``data`` of the
``--*-decoder`` JSON) are Kafka's own schema field names, kept as Kafka spells them.
"""

from __future__ import annotations

from typing import Any

SCHEMA_VERSION = 1


def versioned(doc: Any) -> Any:
    """``doc`` with ``schema_version`` first (a list: in each object of it, as each is one partition's document)."""
    if isinstance(doc, list):
        return [versioned(d) for d in doc]
    if isinstance(doc, dict):
        return {"schema_version": SCHEMA_VERSION, **doc}
    return doc
