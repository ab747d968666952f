"""Per-Kafka-version differences of DumpLogSegments' output, as one typed table (spec §2, errata-dump C/D).

It lives at the package root, not in ``render/``, because the engine (``ops/dump.py``: which codecs a release
knows, whether it dumps checkpoints, its index-sanity rule) reads it too, and the engine must not depend on the
renderers.

Each behaviour is a field of :class:`Profile`; :data:`TABLE` lists, per field, the releases where its value
changes as ``(first_version, value)`` pairs in ascending order. A new version's quirk is one new pair (plus a
golden file), never an if-chain in the renderer. ``tests/test_versions.py`` checks that every row's values have
the type its field declares, so the table and the dataclass cannot drift apart.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Literal

Version = tuple[int, int, int]

KNOWN_VERSIONS = [
    "2.0", "2.0.1", "2.1", "2.2", "2.3", "2.4", "2.4.1", "2.5", "2.6", "2.7", "2.8",
    "3.0", "3.1", "3.2", "3.3", "3.4", "3.5", "3.6", "3.7", "3.8", "3.9",
    "4.0", "4.1", "4.2", "4.3", "4.4",
]
# the one default of every command's --kafka-version (dump, seek, recover, salvage, ...); a host or fleet sets its own
# with KAFKALOG_KAFKA_VERSION. Precedence: the flag > the environment variable > the broker's files (where a command
# reads a version from them) > this default (docs/kafka-versions.md)
DEFAULT_VERSION = "4.4"
ENV_VAR = "KAFKALOG_KAFKA_VERSION"

BatchShape = Literal["g1", "modern"]
RecordStyle = Literal["g1", "keysize", "verbose", "compact"]
SnapshotTxnFirst = Literal["scala-option", "optional-long"]
SnapshotErrorWrap = Literal["struct", "wrapped"]
SummaryOrder = Literal["scala-hash", "insertion"]


@dataclass(frozen=True)
class Profile:
    """The resolved behaviours for one Kafka version (one value per field, chosen from :data:`TABLE`)."""

    version: Version
    # .log header line
    log_header: str
    # batch/record line shape: g1 = 2.0-2.1 (deep prints records only), modern = 2.2+
    batch_shape: BatchShape
    g1_is_control: bool
    record_style: RecordStyle
    codec_upper: bool
    # 2.0.x predates zstd: codec id 4 aborts with "Unknown compression type id: 4" (errata-dump C)
    zstd_known: bool
    delete_horizon: bool
    legacy_brace: bool
    java_payload_prefix: bool
    tombstone_key: bool
    # control type names for the generic " controlType: NAME(id)" suffix
    control_names: dict[int, str]
    # control types printed as " <Label> <json>" (LeaderChange takes a colon)
    control_json: dict[int, str]
    trailing_needs_no_max_bytes: bool
    dump_checkpoint: bool
    index_is_empty_line: bool
    index_compare_first_record: bool
    gap_header: str
    # producer snapshot line
    snapshot_txn_first: SnapshotTxnFirst
    snapshot_last_timestamp: bool
    snapshot_batch_always: bool
    snapshot_first_seq_wrap: bool
    snapshot_trailing_space: bool
    snapshot_error_wrap: SnapshotErrorWrap
    skip_record_metadata_option: bool
    max_bytes_option: bool
    # the internal-topic decoder options the release's DumpLogSegments does not have yet (kind -> the first release
    # that has it): its jopt-simple parser stops with "UnrecognizedOptionException: remote-log-metadata-decoder is
    # not a recognized option" before reading a file (checked with the 2.8.2, 3.0.2 and 3.6.2 tools), so kafkalog
    # refuses the option there (exit 2, nothing on stdout) instead of printing a decode that release never printed
    missing_decoders: dict[str, str]
    deprecated_decoder_notice: bool
    # the order of the files in the stderr summary: DumpLogSegments keeps them in Scala 2.13 mutable.HashMaps keyed
    # by absolute path (iteration order = hash order, format/javahash.scala213_order); 4.3's Java port as
    # kafkalog reproduces it keeps the order the files were dumped in
    summary_order: SummaryOrder

    @property
    def label(self) -> str:
        return ".".join(str(p) for p in self.version)

    @property
    def values(self) -> dict[str, object]:
        """Every behaviour by name (the fields other than ``version``), for reports and tests."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "version"}


# behaviour -> [(first version, value), ...]; the keys are exactly Profile's fields other than ``version``
TABLE: dict[str, list[tuple[Version, object]]] = {
    "log_header": [((0, 0, 0), "Starting offset: {base}"), ((3, 3, 0), "Log starting offset: {base}")],
    "batch_shape": [((0, 0, 0), "g1"), ((2, 2, 0), "modern")],
    "g1_is_control": [((0, 0, 0), False), ((2, 0, 1), True)],
    "record_style": [((0, 0, 0), "g1"), ((2, 2, 0), "keysize"), ((2, 8, 0), "verbose"), ((3, 0, 0), "compact")],
    "codec_upper": [((0, 0, 0), True), ((3, 0, 0), False)],
    "zstd_known": [((0, 0, 0), False), ((2, 1, 0), True)],
    "delete_horizon": [((0, 0, 0), False), ((3, 2, 0), True)],
    "legacy_brace": [((0, 0, 0), False), ((3, 0, 0), True), ((4, 3, 0), False)],
    "java_payload_prefix": [((0, 0, 0), False), ((4, 3, 0), True)],
    "tombstone_key": [((0, 0, 0), False), ((2, 4, 0), True)],
    "control_names": [
        ((0, 0, 0), {0: "ABORT", 1: "COMMIT"}),
        ((2, 7, 0), {0: "ABORT", 1: "COMMIT", 2: "QUORUM_REASSIGNMENT", 3: "LEADER_CHANGE"}),
        ((3, 0, 0), {0: "ABORT", 1: "COMMIT", 2: "LEADER_CHANGE", 3: "SNAPSHOT_HEADER", 4: "SNAPSHOT_FOOTER"}),
        ((3, 8, 0), {0: "ABORT", 1: "COMMIT", 2: "LEADER_CHANGE", 3: "SNAPSHOT_HEADER", 4: "SNAPSHOT_FOOTER", 5: "KRAFT_VERSION", 6: "KRAFT_VOTERS"}),
    ],
    "control_json": [
        ((0, 0, 0), {}),
        ((3, 3, 0), {3: "SnapshotHeader ", 4: "SnapshotFooter "}),
        ((3, 8, 0), {3: "SnapshotHeader ", 4: "SnapshotFooter ", 5: "KRaftVersion ", 6: "KRaftVoters "}),
        ((4, 1, 0), {2: "LeaderChange: ", 3: "SnapshotHeader ", 4: "SnapshotFooter ", 5: "KRaftVersion ", 6: "KRaftVoters "}),
    ],
    "trailing_needs_no_max_bytes": [((0, 0, 0), False), ((3, 3, 0), True)],
    "dump_checkpoint": [((0, 0, 0), False), ((3, 3, 0), True)],
    "index_is_empty_line": [((0, 0, 0), False), ((2, 8, 0), True)],
    "index_compare_first_record": [((0, 0, 0), True), ((2, 3, 0), False)],
    "gap_header": [((0, 0, 0), "Non-consecutive offsets in :{path}"), ((2, 3, 0), "Non-consecutive offsets in {path}")],
    "snapshot_txn_first": [((0, 0, 0), "scala-option"), ((3, 5, 0), "optional-long")],
    "snapshot_last_timestamp": [((0, 0, 0), False), ((3, 1, 0), True)],
    "snapshot_batch_always": [((0, 0, 0), True), ((2, 4, 1), False)],
    "snapshot_first_seq_wrap": [((0, 0, 0), False), ((2, 2, 0), True)],
    "snapshot_trailing_space": [((0, 0, 0), True), ((4, 3, 0), False)],
    "snapshot_error_wrap": [((0, 0, 0), "struct"), ((4, 0, 0), "wrapped")],
    "skip_record_metadata_option": [((0, 0, 0), False), ((2, 8, 0), True)],
    "max_bytes_option": [((0, 0, 0), False), ((3, 3, 0), True)],
    # --remote-log-metadata-decoder: KIP-1057, 3.9.0 (kafka-real/versions' 3.9.0-rc3 tool has it, 3.6.2's does not);
    # --share-group-state-decoder: 4.0 (1eb7644 has it, 3.9.0-rc3 does not)
    "missing_decoders": [((0, 0, 0), {"remote-log-metadata": "3.9", "share-group-state": "4.0"}),
                         ((3, 9, 0), {"share-group-state": "4.0"}), ((4, 0, 0), {})],
    "deprecated_decoder_notice": [((0, 0, 0), False), ((3, 8, 0), True), ((4, 0, 0), False)],
    "summary_order": [((0, 0, 0), "scala-hash"), ((4, 3, 0), "insertion")],
}


def default_version(environ: Mapping[str, str] | None = None) -> tuple[str, str]:
    """The version a command assumes without ``--kafka-version``, and where it came from (``"KAFKALOG_KAFKA_VERSION"``
    or ``"default"``). An empty variable counts as unset."""
    env = os.environ if environ is None else environ
    value = (env.get(ENV_VAR) or "").strip()
    if value:
        return value, ENV_VAR
    return DEFAULT_VERSION, "default"


def parse_version(text: str) -> Version:
    parts = text.strip().split("-", 1)[0].split(".")  # "3.9.0-rc3", "7.6.0-ccs" -> 3.9.0, 7.6.0
    try:
        nums = [int(p) for p in parts]
    except ValueError:
        raise ValueError(f"not a Kafka version: {text!r} (expected e.g. 3.6 or 2.4.1)") from None
    if not 1 <= len(nums) <= 3 or nums[0] < 2:
        raise ValueError(f"unsupported Kafka version {text!r}: kafkalog reproduces {KNOWN_VERSIONS[0]} to "
                         f"{KNOWN_VERSIONS[-1]}")
    while len(nums) < 3:
        nums.append(0)
    return nums[0], nums[1], nums[2]


def newer_than_known(text: str) -> str | None:
    """A warning when ``text`` is a release after the newest one kafkalog knows: its output follows the newest."""
    newest = parse_version(KNOWN_VERSIONS[-1])
    if parse_version(text)[:2] > newest[:2]:
        return (f"Kafka {text.strip()} is newer than the newest release kafkalog knows ({KNOWN_VERSIONS[-1]}): the "
                f"output is {KNOWN_VERSIONS[-1]}'s and may differ from that release's")
    return None


def resolve(table: dict[str, list[tuple[Version, object]]], v: Version) -> dict[str, object]:
    """Each behaviour's value at release ``v``: the value of the last row whose first version is <= ``v``."""
    values: dict[str, object] = {}
    for name, rows in table.items():
        chosen = rows[0][1]
        for since, val in rows:
            if v >= since:
                chosen = val
        values[name] = chosen
    return values


def profile_for(text: str = DEFAULT_VERSION) -> Profile:
    v = parse_version(text)
    return Profile(v, **resolve(TABLE, v))  # type: ignore[arg-type]  # value types checked by tests/test_versions.py
