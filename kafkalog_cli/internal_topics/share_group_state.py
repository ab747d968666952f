"""``--share-group-state-decoder`` (Kafka 4.0+): ShareSnapshot (type 0) / ShareUpdate (type 1) as JSON."""

from __future__ import annotations

from typing import Any

from kafkalog_cli.internal_topics import coordinator as co
from kafkalog_cli.internal_topics import schemas_txn_share as st

KEYS = {0: st.ShareSnapshotKey, 1: st.ShareUpdateKey}
VALUES = {0: st.ShareSnapshotValue, 1: st.ShareUpdateValue}


class ShareStateParser(co.JsonCoordinatorParser):
    decoder_name = "share group state topic"

    def __init__(self, version: tuple[int, int, int]) -> None:
        super().__init__(KEYS, VALUES, version)


def make(version: tuple[int, int, int]) -> ShareStateParser:
    return ShareStateParser(version)


def decode_json(record) -> dict[str, Any]:  # noqa: ANN001
    return co.structured_or_error(record, KEYS, VALUES)
