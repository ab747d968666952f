"""``--share-group-state-decoder`` (Kafka 4.0+): ShareSnapshot (type 0) / ShareUpdate (type 1) as JSON.

The value layouts are the released ones: 4.0's (``schemas_share_40``: uint16 snapshot epoch) and 4.1's
(``schemas_txn_share``: int32 snapshot epoch, PR #20016; ``createTimestamp``/``writeTimestamp``, PR #19432), both at
value version 0 (KAFKA-18437: the pre-release writer of 1eb7644 put ShareUpdateValue at version 1, which no release
reads). ``--format json`` decodes with the newest layout.
"""

from __future__ import annotations

from typing import Any

from kafkalog_cli.internal_topics import coordinator as co
from kafkalog_cli.internal_topics import schemas_share_40 as s40
from kafkalog_cli.internal_topics import schemas_txn_share as st
from kafkalog_cli.internal_topics.releases import release_for

KEYS = {0: st.ShareSnapshotKey, 1: st.ShareUpdateKey}
VALUES = {0: st.ShareSnapshotValue, 1: st.ShareUpdateValue}
VALUES_40 = {0: s40.ShareSnapshotValue, 1: s40.ShareUpdateValue}


class ShareStateParser(co.JsonCoordinatorParser):
    decoder_name = "share group state topic"

    def __init__(self, version: tuple[int, int, int]) -> None:
        values = VALUES_40 if release_for(version).share_layout == "4.0" else VALUES
        super().__init__(KEYS, values, version)


def make(version: tuple[int, int, int]) -> ShareStateParser:
    return ShareStateParser(version)


def decode_json(record) -> dict[str, Any]:  # noqa: ANN001
    """The newest layout; a value only 4.0's layout reads (uint16 snapshot epoch, no timestamps) is decoded with
    that one and says so (``"layout": "4.0"``): ``--format json`` serves any release's partition."""
    return co.structured_any_layout(record, KEYS, VALUES, VALUES_40, "4.0")
