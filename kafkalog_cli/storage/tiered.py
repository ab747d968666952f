"""Kafka tiered-storage (KIP-405) layouts: remote segments are not named ``<20 digits>.log``.

Two layouts are recognised, from the reference implementations' sources:

* Kafka's reference RemoteStorageManager, ``LocalTieredStorage`` (apache/kafka 1eb7644,
  storage/src/test/java/org/apache/kafka/server/log/remote/storage/):
  ``<storage dir>/kafka-tiered-storage/<topic>-<partition>-<topicId>/<20-digit offset>-<segmentId>.<suffix>``.
  The directory is ``tp.topic() + "-" + tp.partition() + "-" + uuid`` (RemoteTopicPartitionDirectory.java:160,
  parsed with ``(<topic chars>+)-(\\d+)-(<uuid chars>)``, :66); the file is ``startOffset + "-" + uuid + suffix``
  with the offset from ``LogFileUtils.filenamePrefixFromOffset`` (RemoteLogSegmentFileset.java:104-105, parsed with
  ``(\\d+-)([a-zA-Z0-9_-]{22})(\\.[a-z_]+)``, :77); suffixes ``.log .index .timeindex .txnindex
  .leader_epoch_checkpoint .snapshot`` (:84-90). Uuids are Kafka's ``Uuid.toString()``: 22 URL-safe base64 chars.
  The ``.log`` file is the segment's bytes, unchanged.
* Aiven's tiered-storage plugin (Aiven-Open/tiered-storage-for-apache-kafka 8fb1581,
  core/src/main/java/io/aiven/kafka/tieredstorage/ObjectKeyFactory.java ``mainPath``/``key``):
  ``<prefix><topic>-<topicId>/<partition>/<20-digit offset>-<segmentId>.<log|indexes|rsm-manifest>``.
  The ``.log`` object is the segment split into chunks, each optionally zstd-compressed and/or AES-encrypted; the
  JSON ``.rsm-manifest`` says which (``compression``, ``encryption``; SegmentManifestV1.java:39-42). Only a
  segment uploaded with neither is the original bytes; the others are reported (``remote-encoded``), never parsed.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
from dataclasses import dataclass

UUID = r"[A-Za-z0-9_-]{22}"
REMOTE_FILE_RE = re.compile(rf"^(?P<offset>[0-9]{{20}})-(?P<segment_id>{UUID})(?P<suffix>\.[a-z_-]+)$")
KAFKA_TP_DIR_RE = re.compile(rf"^(?P<topic>[a-zA-Z0-9._-]+)-(?P<partition>[0-9]+)-(?P<topic_id>{UUID})$")
AIVEN_TOPIC_DIR_RE = re.compile(rf"^(?P<topic>[a-zA-Z0-9._-]+)-(?P<topic_id>{UUID})$")
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


@dataclass(frozen=True)
class RemoteSegment:
    layout: str  # "kafka-local-tiered" or "aiven"
    root: str  # what plays the log dir's part: the directory above the topic(-partition) directory
    partition_dir: str  # "<topic>-<p>-<topicId>" (Kafka) or "<topic>-<topicId>/<p>" (Aiven)
    topic: str
    partition: int
    topic_id: str
    base_offset: int
    segment_id: str
    suffix: str


def _split(path: str) -> tuple[str, str, str]:
    """(parent of parent, parent name, name) with '/' or os.sep, URIs included."""
    mod = posixpath if "://" in path else os.path
    parent = mod.dirname(path)
    return mod.dirname(parent), mod.basename(parent), mod.basename(path)


def classify(path: str) -> RemoteSegment | None:
    """The remote-segment labels of ``path``, or None when it is not a file of a known tiered layout."""
    mod = posixpath if "://" in path else os.path
    name = mod.basename(path)
    m = REMOTE_FILE_RE.match(name)
    if m is None:
        return None
    grand, parent, _ = _split(path)
    off, sid, suffix = int(m["offset"]), m["segment_id"], m["suffix"]
    k = KAFKA_TP_DIR_RE.match(parent)
    if k is not None and int(k["partition"]) <= 0x7FFFFFFF:  # a Java int, as Kafka parses it
        return RemoteSegment("kafka-local-tiered", grand, parent, k["topic"], int(k["partition"]), k["topic_id"],
                             off, sid, suffix)
    if parent.isascii() and parent.isdigit() and int(parent) <= 0x7FFFFFFF:  # a Java int, as Kafka parses it
        a = AIVEN_TOPIC_DIR_RE.match(mod.basename(grand))
        if a is not None:
            return RemoteSegment("aiven", mod.dirname(grand), f"{mod.basename(grand)}/{parent}", a["topic"],
                                 int(parent), a["topic_id"], off, sid, suffix)
    return None


def is_remote_segment(path: str) -> bool:
    r = classify(path)
    return r is not None and r.suffix == ".log"


def encoding_problem(path: str, local: str | None = None) -> str | None:
    """Why the bytes of a remote ``.log`` cannot be read as a segment, or None: Aiven's manifest says compressed
    or encrypted chunks (or, without a manifest, the object starts with a zstd frame). ``path`` names the object
    (its layout); ``local``: where its bytes and manifest are (a staged copy), default ``path``."""
    r = classify(path)
    if r is None or r.layout != "aiven" or r.suffix != ".log":
        return None
    path = local or path
    manifest = path[: -len(".log")] + ".rsm-manifest"
    try:
        with open(manifest, "rb") as f:
            doc = json.loads(f.read(16 << 20))
    except (OSError, ValueError):
        doc = None
    if isinstance(doc, dict):
        compressed, encrypted = bool(doc.get("compression")), doc.get("encryption") is not None
        if compressed or encrypted:
            what = " and ".join(w for w, on in (("zstd-compressed", compressed), ("encrypted", encrypted)) if on)
            return (f"Aiven tiered-storage object of {what} chunks (rsm-manifest: compression={compressed}, "
                    f"encryption={'yes' if encrypted else 'no'}); not parsed as a segment: read it through the "
                    "broker (a consumer from that offset) or the plugin with its key")
        return None
    try:
        with open(path, "rb") as f:
            head = f.read(4)
    except OSError:
        return None
    if head == ZSTD_MAGIC:
        return ("Aiven tiered-storage object that starts with a zstd frame (compressed chunks) and has no "
                ".rsm-manifest beside it; not parsed as a segment")
    return None
