"""Decoders for Kafka's internal topics (DumpLogSegments' ``--offsets-decoder`` and friends).

``make_parser(kind, profile)`` returns a ``RecordParser`` printing exactly what the profile's Kafka version prints;
``decode_json(kind, record)`` returns the full structured decode for ``--format json`` whatever the version.
Decoder modules are imported lazily so that plain dumps never load the schema tables.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kafkalog_cli.versions import Profile

KINDS: dict[str, str] = {
    "offsets": "kafkalog_cli.internal_topics.consumer_offsets",
    "transaction-log": "kafkalog_cli.internal_topics.transaction_log",
    "cluster-metadata": "kafkalog_cli.internal_topics.cluster_metadata",
    "remote-log-metadata": "kafkalog_cli.internal_topics.remote_log_metadata",
    "share-group-state": "kafkalog_cli.internal_topics.share_group_state",
}


def _module(kind: str):
    try:
        return importlib.import_module(KINDS[kind])
    except KeyError:
        raise ValueError(f"unknown internal-topic decoder {kind!r}: use one of {', '.join(KINDS)}") from None


def make_parser(kind: str, profile: Profile):
    """A RecordParser for ``kind`` reproducing ``profile.version``'s DumpLogSegments output."""
    return _module(kind).make(tuple(profile.version))


def decode_json(kind: str, record: Any) -> dict[str, Any]:
    """Structured decode of one record (never raises for bad bytes: errors are reported in the dict)."""
    return _module(kind).decode_json(record)
