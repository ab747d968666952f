"""What the internal-topic decoders print differently per Kafka release, as one typed table.

The schemas (``schemas_*.py``, generated from Kafka's JSON by ``scripts/gen_schema_tables.py``) say what a record
*is* at each record version; this table says how each *release* of DumpLogSegments' decoders prints it: text or
JSON, which error texts, which collection syntax. The decoders look these up instead of comparing versions inline,
so a release's change is one row here (plus a golden case), as for the dump output in ``kafkalog_cli/versions.py``.
``tests/test_versions.py`` checks that every row has its field's type.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from kafkalog_cli.versions import Version, resolve


@dataclass(frozen=True)
class DecoderRelease:
    """The decoders' behaviours at one Kafka release (one value per field, chosen from :data:`TABLE`)."""

    # --offsets-decoder: 2.0-3.7 GroupMetadataManager.formatRecordKeyAndValue text, 3.8+ the JSON coordinator parser
    offsets_json: bool
    # record types the 3.8+ serde knows: 0-8, then every type up to 4.4's (share groups 9-15, regular expressions 16,
    # streams groups 17-24) from 4.0: an operator never sees "Unknown record type" where a 4.x tool decodes it
    offsets_last_record_type: int
    # share-group layouts that changed in value version 0 after 4.0: "4.0" (__share_group_state: uint16 snapshot epoch,
    # no timestamps, schemas_share_40; __consumer_offsets type 15 without InitializingTopics, schemas_group_40) or
    # "4.1" (int32 snapshot epoch of PR #20016, create/write timestamps of PR #19432; InitializingTopics, 25002b6)
    share_layout: str
    # before 2.4.1: "offset::g:t:p" keys, tombstones print nothing, Scala JSON for group metadata
    offsets_old_text: bool
    offsets_unknown_key_error: str
    # an unknown key version prints "unknown::version=<v>" (3.5+) instead of aborting
    unknown_key_text: bool
    # --transaction-log-decoder: text until 3.9, the JSON coordinator parser from 4.0
    txn_json: bool
    txn_old_text: bool
    txn_unknown_key_error: str
    txn_unknown_value_error: str
    # partitions as "[t-0,t-1]" (2.5+) or Scala 2.12's "Set(t-0, t-1)"
    txn_partitions_list: bool
    # __cluster_metadata frame version: 0 in the 2.8 KRaft preview, 1 from 3.0
    metadata_frame_version: int
    # the 3.8+ JSON parsers' abort text for a null key names the decoder until 3.9, "the specified decoder" from 4.0
    missing_key_generic: bool
    # the newest OffsetCommitValue / GroupMetadataValue version the release reads (v4, flexible, KIP-915, 3.5);
    # a newer one aborts the text decoder with "Unknown offset message version: 4" (GroupMetadataManager.scala:1171
    # at 3.0.2; checked against the 2.8.2 and 3.0.2 tools)
    offsets_value_max_version: int
    # __cluster_metadata: whose record schemas the release's MetadataRecordSerde reads with: "newest" (kafkalog's
    # schemas_metadata), "3.0" / "3.6" (schemas_metadata_30 / _36, generated at tags 3.0.2 / 3.6.2). Those releases'
    # generated readers check no version: any version is read with the release's fields, a type it does not know is
    # "Unknown metadata id", bytes that do not fit "Failed to deserialize record with type K" (checked against the
    # 3.0.2 and 3.6.2 tools). 3.1-3.5 take 3.6.2's schemas, which may know a type or version added after them
    metadata_schemas: str
    # the text decoder's GroupMetadata.loadGroup -> add: a second member with the same groupInstanceId throws
    # IllegalStateException (GroupMetadata.scala:238-243 at 3.0.2 and 3.6.2; 2.8.2's add has no such check)
    offsets_static_member_check: bool
    # the newest TransactionLogValue version the text decoder reads: v1 (flexible, KIP-915, 3.5, as the offsets
    # values); 2.8.2's and 3.0.2's TransactionLogValue.json say "validVersions": "0", 3.6.2's "0-1", and 3.0.2's tool
    # aborts on a v1 value with "Unknown version 1 from the transaction log message value" (TransactionLog.scala:144)
    txn_value_max_version: int


# behaviour -> [(first version, value), ...]; the keys are exactly DecoderRelease's fields
TABLE: dict[str, list[tuple[Version, object]]] = {
    "offsets_json": [((0, 0, 0), False), ((3, 8, 0), True)],
    "offsets_last_record_type": [((0, 0, 0), 8), ((4, 0, 0), 24)],
    "share_layout": [((0, 0, 0), "4.0"), ((4, 1, 0), "4.1")],
    "offsets_old_text": [((0, 0, 0), True), ((2, 4, 1), False)],
    "offsets_unknown_key_error": [((0, 0, 0), "Unknown offset schema version {v}"),
                                  ((2, 4, 0), "Unknown message key schema version {v}"),
                                  ((2, 8, 0), "Unknown group metadata message version: {v}")],
    "unknown_key_text": [((0, 0, 0), False), ((3, 5, 0), True)],
    "txn_json": [((0, 0, 0), False), ((4, 0, 0), True)],
    "txn_old_text": [((0, 0, 0), True), ((2, 4, 1), False)],
    "txn_unknown_key_error": [((0, 0, 0), "Unknown transaction log message key schema version {v}"),
                              ((2, 8, 0), "Unknown version {v} from the transaction log message")],
    "txn_unknown_value_error": [((0, 0, 0), "Unknown transaction log message value schema version {v}"),
                                ((2, 8, 0), "Unknown version {v} from the transaction log message value")],
    "txn_partitions_list": [((0, 0, 0), False), ((2, 5, 0), True)],
    "metadata_frame_version": [((0, 0, 0), 0), ((3, 0, 0), 1)],
    "missing_key_generic": [((0, 0, 0), False), ((4, 0, 0), True)],
    "offsets_value_max_version": [((0, 0, 0), 3), ((3, 5, 0), 4)],
    "offsets_static_member_check": [((0, 0, 0), False), ((3, 0, 0), True)],
    "txn_value_max_version": [((0, 0, 0), 0), ((3, 5, 0), 1)],
    "metadata_schemas": [((0, 0, 0), "newest"), ((3, 0, 0), "3.0"), ((3, 1, 0), "3.6"), ((3, 7, 0), "newest")],
}


def release_for(version: Sequence[int]) -> DecoderRelease:
    """The decoders' behaviours at ``version`` (a (major, minor, patch) tuple, as ``make(version)`` receives)."""
    major, minor, patch = version
    return _release_for((major, minor, patch))


@lru_cache(maxsize=64)
def _release_for(version: Version) -> DecoderRelease:
    return DecoderRelease(**resolve(TABLE, version))  # type: ignore[arg-type]  # types checked by tests/test_versions.py
