"""The Kafka release a log directory's own files name (issue 28: flag > $KAFKALOG_KAFKA_VERSION > files > default).

Of the files a broker keeps, only the KRaft metadata log names a release: its ``FeatureLevelRecord`` for
``metadata.version`` (in ``__cluster_metadata-0`` segments and KRaft snapshots) holds the feature level the cluster
runs, and each level belongs to one release (server-common ``MetadataVersion.java`` at 1eb7644: levels 1-25 are
3.0-IV1 .. 4.0-IV3). A cluster runs at most its software's level, so the release it names is a lower bound on the
brokers' software: the answer says where it came from. Levels after 25 (4.1 and later) were not established from
Kafka's sources here and name no release (the default, the newest known, stands). ``meta.properties``' version (0
ZooKeeper, 1 KRaft) and the producer snapshot version (1 since 0.11) name none.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from kafkalog_cli.errors import KafkalogError
from kafkalog_cli.storage.segment import MappedFile, entries

METADATA_DIR = "__cluster_metadata-0"
FEATURE = b"metadata.version"
# MetadataVersion feature levels, named as Kafka names them (`kafkalog metadata` prints them; server-common/src/main/java/org/apache/kafka/server/common/MetadataVersion.java).
# 1-25: apache/kafka at 1eb7644, lines 147-227 (the newest apache/kafka copy stored here). 26-31: the same file in
# the newest stored copy of Kafka's trunk, the fork traceyyoshima/kafka at 12f864b2 (IBP_4_1_IV0(26) ..
# IBP_4_4_IV0(31), LATEST_PRODUCTION = IBP_4_3_IV0). 32-33: IBP_4_4_IV1 / IBP_4_4_IV2, which later Kafka code uses
# (AclControlManagerTest's CIDR ACLs at IBP_4_4_IV1; controller unregistration at IBP_4_4_IV2, level 33); levels
# are consecutive and never reused ("MVs are not reused", MetadataVersion.java). A newer level is "unknown".
METADATA_VERSIONS: dict[int, str] = {
    1: "3.0-IV1", 2: "3.1-IV0", 3: "3.2-IV0", 4: "3.3-IV0", 5: "3.3-IV1", 6: "3.3-IV2", 7: "3.3-IV3", 8: "3.4-IV0",
    9: "3.5-IV0", 10: "3.5-IV1", 11: "3.5-IV2", 12: "3.6-IV0", 13: "3.6-IV1", 14: "3.6-IV2", 15: "3.7-IV0",
    16: "3.7-IV1", 17: "3.7-IV2", 18: "3.7-IV3", 19: "3.7-IV4", 20: "3.8-IV0", 21: "3.9-IV0", 22: "4.0-IV0",
    23: "4.0-IV1", 24: "4.0-IV2", 25: "4.0-IV3", 26: "4.1-IV0", 27: "4.1-IV1", 28: "4.2-IV0", 29: "4.2-IV1",
    30: "4.3-IV0", 31: "4.4-IV0", 32: "4.4-IV1", 33: "4.4-IV2",
}
# the release that introduced each level: the name's prefix ("4.2-IV1" -> 4.2); recover and salvage assume it
RELEASE_OF_LEVEL: dict[int, str] = {level: name.split("-")[0] for level, name in METADATA_VERSIONS.items()}


@dataclass(frozen=True)
class VersionHint:
    release: str | None  # None: a level no release is known for
    level: int
    source: str  # the file the level was read from

    def describe(self) -> str:
        return f"metadata.version feature level {self.level} in {self.source}"


def _metadata_dirs(paths: list[str]) -> list[str]:
    """``__cluster_metadata-0`` in each path given, or beside it (a partition directory's log dir)."""
    out: list[str] = []
    for p in paths:
        p = os.path.abspath(p)
        for base in (p, os.path.dirname(p)):
            d = p if os.path.basename(p) == METADATA_DIR else os.path.join(base, METADATA_DIR)
            if os.path.isdir(d) and d not in out:
                out.append(d)
    return out


def _levels(path: str) -> list[int]:
    """Every metadata.version level in one segment or snapshot file, in file order (unreadable bytes end it)."""
    from kafkalog_cli.internal_topics import cluster_metadata as cm

    levels: list[int] = []
    try:
        with MappedFile(path) as mf:
            for batch in entries(mf.buf, file=path):
                if batch.is_legacy or batch.is_control:
                    continue
                # an uncompressed batch without the feature's name holds no such record: skip it undecoded (the
                # metadata log is mostly NoOpRecords, one batch each)
                if batch.codec == 0 and FEATURE not in bytes(mf.buf[batch.position:batch.position + batch.size]):
                    continue
                for rec in batch.iter_records(mf.buf):
                    # frame version 1, apiKey 12 (FeatureLevelRecord): both one-byte uvarints; skip the rest unread
                    if rec.value is None or bytes(rec.value[:2]) != b"\x01\x0c":
                        continue
                    try:
                        msg, _ver, values = cm.read_frame(None if rec.value is None else bytes(rec.value))
                    except cm.MetadataParseError:
                        continue
                    if msg.name == "FeatureLevelRecord" and values.get("name") == "metadata.version":
                        levels.append(values["featureLevel"])
    except (KafkalogError, OSError):
        pass
    return levels


def metadata_version_hint(paths: list[str]) -> VersionHint | None:
    """The newest metadata.version the metadata log beside ``paths`` holds (its last snapshot, then its segments in
    offset order: the last record wins, as the controller replays them), or None where there is none."""
    found: VersionHint | None = None
    for d in _metadata_dirs(paths):
        names = sorted(os.listdir(d))
        files = [n for n in names if n.endswith(".checkpoint")][-1:] + [n for n in names if n.endswith(".log")]
        for name in files:
            path = os.path.join(d, name)
            for level in _levels(path):
                found = VersionHint(RELEASE_OF_LEVEL.get(level), level, path)
    return found
