"""``kafkalog inventory``: every partition directory of a broker's log dirs classified against the KRaft image.

What a broker does with each directory at start-up is Kafka's (1eb7644) ``LogManager`` and ``ReplicaManager``:

- ``LogManager.loadLog`` (core/src/main/scala/kafka/log/LogManager.scala:356-383): a ``-delete`` directory is queued
  for deletion (``addLogToBeDeleted``, removed after ``file.delete.delay.ms``); a ``-stray`` directory is loaded as a
  stray log and kept, never served (:358-360); a live directory the image does not assign here
  (``isStray``) is renamed ``<topic>-<p>.<uuid>-stray`` and kept (:361-367); two live copies of one partition in two
  log dirs stop the broker ("Duplicate log directories for ... are found in both", :376-382);
- ``LogManager.isStrayKraftReplica`` (LogManager.scala:1613-1645, called from BrokerMetadataPublisher.scala:293):
  no topic id (no ``partition.metadata``) -> stray; the topic id not in the image (topic deleted, or recreated
  with a new id) -> stray; the broker not in the partition's replicas -> stray. Before KAFKA-16814 (Kafka
  < 3.9) and in ``findStrayReplicas`` / ``findAbandonedFutureLogs`` (LogManager.scala:1214, 1669-1672) a log without a
  topic id stops the broker instead: "does not have a topic ID, which is not allowed when running in KRaft mode";
- ``LogManager.recoverAbandonedFutureLogs`` (LogManager.scala:1194-1221): a ``-future`` log whose directory is the
  one the image assigns replaces the current log; otherwise it stays the target of an unfinished move;
- ``ReplicaManager.applyDelta`` (core/src/main/scala/kafka/server/ReplicaManager.scala:2895-2990): a partition
  the image assigns here and that has no directory is created empty and fetched from the leader
  (``getOrCreatePartition`` -> ``createLogIfNotExists``); ``maybeUpdateTopicAssignment`` (ReplicaManager.scala:
  3086-3097) reports the directory a log really is in to the controller when the image assigns another;
- ``MetaPropertiesEnsemble.verify`` (metadata/.../properties/MetaPropertiesEnsemble.java:472-528): every
  ``meta.properties`` of one node must agree on cluster.id ("Invalid cluster.id in") and node.id ("Stored node id
  ... doesn't match previous node id"), directory.ids must be unique and not reserved; a broker whose cluster.id
  is not the quorum's is refused at registration (InconsistentClusterIdException, ClusterControlManager.java:349-351).

Without KRaft metadata the log dirs are checked against each other only (duplicates, topic ids that disagree
between copies, missing ``partition.metadata``, leftovers).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from kafkalog_cli.errors import CheckpointError, KafkalogError, UnreadableFileError
from kafkalog_cli.internal_topics.metadata_image import LOST, MIGRATING, UNASSIGNED, Image
from kafkalog_cli.storage.companions import parse_partition_metadata
from kafkalog_cli.storage.meta_properties import META_PROPERTIES, read_meta_properties
from kafkalog_cli.storage.partition_name import parse_topic_partition_name

PARTITION_METADATA = "partition.metadata"
RESERVED_DIRECTORY_IDS = {MIGRATING, UNASSIGNED, LOST}

# class -> (what the broker does at start-up, next step); the finding's own text names the partition and values
EXPECTED = "expected"
MISSING = "missing"
STRAY_DELETED = "stray-deleted"
STRAY_UNASSIGNED = "stray-unassigned"
TOPIC_ID_MISMATCH = "topic-id-mismatch"
NO_PARTITION_METADATA = "missing-partition-metadata"
WRONG_DIRECTORY = "wrong-directory"
DUPLICATE = "duplicate"
LEFTOVER_DELETE = "leftover-delete"
LEFTOVER_STRAY = "leftover-stray"
LEFTOVER_FUTURE = "leftover-future"
UNREADABLE_METADATA = "unreadable-partition-metadata"
UNCHECKED = "present"  # no metadata to check against
META = "meta-properties"

BROKER_ACTION: dict[str, str] = {
    EXPECTED: "loads it and serves it",
    MISSING: "creates it empty and fetches it from the leader (ReplicaManager.applyDelta -> getOrCreatePartition)",
    STRAY_DELETED: "renames it <topic>-<p>.<uuid>-stray and keeps it, unserved (LogManager.loadLog, isStrayKraftReplica: "
                   "the topic id is not in the image)",
    STRAY_UNASSIGNED: "renames it -stray and keeps it, unserved (isStrayKraftReplica: this broker is not a replica)",
    TOPIC_ID_MISMATCH: "renames it -stray (its topic id is not in the image: the topic was recreated), then creates "
                       "the new topic's replica empty and fetches it",
    NO_PARTITION_METADATA: "Kafka >= 3.9 (KAFKA-16814): renames it -stray (isStrayKraftReplica: no topic id); older brokers and the "
                           "ZooKeeper-migration path stop: \"does not have a topic ID, which is not allowed when running "
                           "in KRaft mode\"",
    WRONG_DIRECTORY: "loads it where it is and reports that directory to the controller "
                     "(ReplicaManager.maybeUpdateTopicAssignment -> AssignReplicasToDirs)",
    DUPLICATE: "stops at start-up: \"Duplicate log directories for <tp> are found in both ...\" (LogManager.loadLog)",
    LEFTOVER_DELETE: "deletes it after file.delete.delay.ms (LogManager.addLogToBeDeleted)",
    LEFTOVER_STRAY: "loads it as a stray log and keeps it, never serves it (LogManager.loadLog :358)",
    LEFTOVER_FUTURE: "promotes it to the current log if the image assigns this directory (recoverAbandonedFutureLogs), "
                     "else keeps it as the target of an unfinished log-dir move",
    UNREADABLE_METADATA: "fails to load the partition (PartitionMetadataFile.read throws) and marks the log dir offline",
    UNCHECKED: "loads it (not checked: no KRaft metadata given)",
}

NEXT_STEP: dict[str, str] = {
    EXPECTED: "nothing",
    MISSING: "nothing if another replica is in sync; if this broker held the only copy, restore the directory from a "
             "backup before starting the broker",
    STRAY_DELETED: "if the data is not needed, let the broker rename it and delete the -stray directory later; to keep "
                   "it, copy the segments out first",
    STRAY_UNASSIGNED: "nothing (the partition lives on its assigned replicas); delete the -stray directory once they "
                      "are in sync",
    TOPIC_ID_MISMATCH: "the directory holds the old topic's data: copy it out if needed; never rewrite "
                       "partition.metadata to the new id (the old data would be served as the new topic's)",
    NO_PARTITION_METADATA: "if the topic is in the image with the same partition assigned here, write "
                           "partition.metadata back (shown below); else move the directory away",
    WRONG_DIRECTORY: "nothing: the broker corrects the assignment; or move the directory to the assigned log dir "
                     "while the broker is stopped",
    DUPLICATE: "keep the copy in the log dir the image assigns (or the newer one), move the other away",
    LEFTOVER_DELETE: "nothing (or delete it now while the broker is stopped)",
    LEFTOVER_STRAY: "delete it once the partition's live replicas are in sync and its data is not needed",
    LEFTOVER_FUTURE: "nothing; to abandon the move, delete it while the broker is stopped",
    UNREADABLE_METADATA: "write partition.metadata back with the topic id from the image (shown below)",
    UNCHECKED: "pass --metadata DIR (a controller's metadata.log.dir) to check it against the cluster's record",
}


@dataclass
class LogDir:
    path: str
    props: dict[str, str] | None
    error: str | None = None

    @property
    def node_id(self) -> int | None:
        v = (self.props or {}).get("node.id", (self.props or {}).get("broker.id"))
        try:
            return None if v is None else int(v.strip())
        except ValueError:
            return None

    @property
    def cluster_id(self) -> str | None:
        return (self.props or {}).get("cluster.id")

    @property
    def directory_id(self) -> str | None:
        return (self.props or {}).get("directory.id")

    def as_dict(self) -> dict[str, Any]:
        return {"path": self.path, "meta_properties": self.props, "error": self.error}


@dataclass
class Item:
    """One finding of the inventory: a partition directory (or an absent one, or a meta.properties)."""

    cls: str
    path: str
    topic: str | None = None
    partition: int | None = None
    detail: str = ""
    fix: str | None = None  # exact file content to write back, where there is one

    @property
    def ok(self) -> bool:
        return self.cls in (EXPECTED, UNCHECKED)

    @property
    def broker_action(self) -> str:
        return BROKER_ACTION.get(self.cls, "refuses to start (MetaPropertiesEnsemble.verify)")

    @property
    def next_step(self) -> str:
        return NEXT_STEP.get(self.cls, "")

    def as_dict(self) -> dict[str, Any]:
        return {"class": self.cls, "path": self.path, "topic": self.topic, "partition": self.partition,
                "detail": self.detail, "broker_action": self.broker_action, "next_step": self.next_step,
                "fix": self.fix}


@dataclass
class Inventory:
    log_dirs: list[LogDir]
    items: list[Item] = field(default_factory=list)
    metadata_source: str | None = None
    node_id: int | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def problems(self) -> list[Item]:
        return [i for i in self.items if not i.ok]

    def exit_code(self) -> int:
        return 1 if self.problems else 0

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for i in self.items:
            out[i.cls] = out.get(i.cls, 0) + 1
        return dict(sorted(out.items()))


def _partition_metadata(path: str) -> tuple[str | None, str | None]:
    """(topic id, error) of ``partition.metadata`` in a partition directory; (None, None) when it is absent."""
    f = os.path.join(path, PARTITION_METADATA)
    if not os.path.exists(f):
        return None, None
    try:
        with open(f, encoding="utf-8", errors="replace") as fh:
            text = fh.read(1 << 16)
        _v, tid = parse_partition_metadata(text, f)
    except CheckpointError as exc:
        return None, exc.describe()
    except OSError as exc:
        return None, f"{f}: {exc.strerror}"
    return tid, None


def _meta_checks(dirs: list[LogDir], quorum_cluster: str | None, items: list[Item]) -> None:
    """MetaPropertiesEnsemble.verify over one node's log dirs, and the cluster id against the quorum's."""
    first_cluster: tuple[str, str] | None = None
    first_node: tuple[int, str] | None = None
    seen_dirs: dict[str, str] = {}
    for d in dirs:
        path = os.path.join(d.path, META_PROPERTIES)
        if d.error:
            items.append(Item(META, path, detail=d.error))
            continue
        if d.props is None:
            items.append(Item(META, path, detail="no meta.properties: the broker refuses to start on an unformatted "
                                                 "log dir (\"No readable meta.properties files found\" when none is); "
                                                 "run kafka-storage.sh format with the cluster's id, or remove the "
                                                 "dir from log.dirs"))
            continue
        version = d.props.get("version", "0")
        if version == "1" and not d.cluster_id:
            items.append(Item(META, path, detail=f"cluster.id was not specified in the v1 file: {path}"))
        if d.cluster_id:
            if first_cluster is None:
                first_cluster = (d.cluster_id, path)
            elif d.cluster_id != first_cluster[0]:
                items.append(Item(META, path, detail=f"Invalid cluster.id in: {path}. Expected {first_cluster[0]}, but "
                                                     f"read {d.cluster_id} (first read in {first_cluster[1]})"))
            if quorum_cluster and d.cluster_id != quorum_cluster:
                items.append(Item(META, path, detail=f"cluster.id {d.cluster_id} is not the quorum's {quorum_cluster}: "
                                                     "the controller refuses the registration "
                                                     "(InconsistentClusterIdException); do not wipe the volumes: set "
                                                     "cluster.id back (kafka-storage.sh format was run with another id)"))
        if version == "1" and "node.id" not in d.props:
            items.append(Item(META, path, detail=f"node.id was not specified in {path}"))
        nid = d.node_id
        if nid is not None:
            if first_node is None:
                first_node = (nid, path)
            elif nid != first_node[0]:
                items.append(Item(META, path, detail=f"Stored node id {nid} doesn't match previous node id "
                                                     f"{first_node[0]} in {path}"))
        did = d.directory_id
        if did:
            if did in RESERVED_DIRECTORY_IDS:
                items.append(Item(META, path, detail=f"Invalid reserved directory ID {did} found in {d.path}"))
            elif did in seen_dirs:
                items.append(Item(META, path, detail=f"Duplicate directory ID {did} found. It was the ID of "
                                                     f"{seen_dirs[did]}, but also of {d.path} (a copied log dir: "
                                                     "give this one a new directory.id)"))
            else:
                seen_dirs[did] = d.path


def read_log_dirs(paths: list[str]) -> list[LogDir]:
    out = []
    for p in paths:
        if not os.path.isdir(p):
            raise UnreadableFileError("not a directory" if os.path.exists(p) else "no such file or directory", file=p,
                                      expected="a broker log dir (one of log.dirs)")
        try:
            props = read_meta_properties(p)
            out.append(LogDir(p, props))
        except KafkalogError as exc:
            out.append(LogDir(p, None, exc.describe()))
    return out


def take(paths: list[str], image: Image | None, *, metadata_source: str | None = None,
         node_id: int | None = None, quorum_cluster: str | None = None) -> Inventory:
    """Classify every partition directory of ``paths`` (the log dirs of ONE broker) against ``image``."""
    dirs = read_log_dirs(paths)
    inv = Inventory(dirs, metadata_source=metadata_source)
    _meta_checks(dirs, quorum_cluster, inv.items)
    if node_id is None:
        node_id = next((d.node_id for d in dirs if d.node_id is not None), None)
    inv.node_id = node_id
    if image is not None and node_id is None:
        inv.notes.append("no node.id in any meta.properties (and no --node-id): assignments cannot be checked")
    dir_ids = {d.directory_id: d.path for d in dirs if d.directory_id}
    live: dict[tuple[str, int], list[tuple[str, LogDir]]] = {}
    by_name_ids: dict[str, set[str]] = {}
    for d in dirs:
        for name in sorted(os.listdir(d.path)):
            full = os.path.join(d.path, name)
            if not os.path.isdir(full) or name.startswith("__cluster_metadata-"):
                continue
            tp = parse_topic_partition_name(name)
            if tp is None:
                continue
            if tp.suffix == "-delete":
                inv.items.append(Item(LEFTOVER_DELETE, full, tp.topic, tp.partition))
                continue
            if tp.suffix == "-stray":
                inv.items.append(Item(LEFTOVER_STRAY, full, tp.topic, tp.partition))
                continue
            tid, err = _partition_metadata(full)
            if tp.suffix == "-future":
                detail = ""
                if image is not None and node_id is not None and tid is not None:
                    ftopic = image.topics.get(tid, None)
                    fpart = ftopic.partitions.get(tp.partition) if ftopic else None
                    assigned = fpart.directory_of(node_id) if fpart else None
                    if assigned is not None and assigned == d.directory_id:
                        detail = "the image assigns this directory: the broker promotes it at start-up"
                inv.items.append(Item(LEFTOVER_FUTURE, full, tp.topic, tp.partition, detail))
                continue
            live.setdefault((tp.topic, tp.partition), []).append((full, d))
            if tid:
                by_name_ids.setdefault(tp.topic, set()).add(tid)
            inv.items.extend(_classify(full, d, tp.topic, tp.partition, tid, err, image, node_id, dir_ids))
    for (topic, part), copies in sorted(live.items()):
        if len(copies) > 1:
            inv.items.append(Item(DUPLICATE, copies[0][0], topic, part,
                                  "also in " + ", ".join(c[0] for c in copies[1:])))
    if image is None:
        for name, ids in sorted(by_name_ids.items()):
            if len(ids) > 1:
                inv.items.append(Item(TOPIC_ID_MISMATCH, name, name, None,
                                      f"directories of topic {name} hold different topic ids: {', '.join(sorted(ids))}"
                                      " (the topic was deleted and recreated while some were kept)"))
    elif node_id is not None:
        present = set(live)
        for t in sorted(image.topics.values(), key=lambda t: t.name):
            for pid, p in sorted(t.partitions.items()):
                if node_id in p.replicas and (t.name, pid) not in present:
                    where = p.directory_of(node_id)
                    into = dir_ids.get(where or "", None)
                    only = p.isr == [node_id] or (p.leader == node_id and len(p.isr) <= 1)
                    inv.items.append(Item(
                        MISSING, os.path.join(into or (paths[0] if paths else "."), f"{t.name}-{pid}"), t.name, pid,
                        f"assigned to broker {node_id} (replicas {p.replicas}, isr {p.isr}, leader {p.leader})"
                        + (f", directory {where}" if where not in (None, MIGRATING) else "")
                        + ("; THIS BROKER IS THE ONLY IN-SYNC REPLICA: the partition's data is lost unless restored"
                           if only else "")))
    inv.items.sort(key=lambda i: (i.ok, i.cls, i.topic or "", i.partition if i.partition is not None else -1, i.path))
    return inv


def _pm_text(topic_id: str) -> str:
    return f"version: 0\ntopic_id: {topic_id}\n"


def _classify(path: str, d: LogDir, topic: str, part: int, tid: str | None, err: str | None, image: Image | None,
              node_id: int | None, dir_ids: dict[str, str]) -> list[Item]:
    t = image.topic_by_name(topic) if image is not None else None
    if err is not None:
        return [Item(UNREADABLE_METADATA, path, topic, part, err,
                     None if t is None else _pm_text(t.topic_id))]
    if image is None:
        if tid is None:
            return [Item(NO_PARTITION_METADATA, path, topic, part, "no partition.metadata (no topic id)")]
        return [Item(UNCHECKED, path, topic, part, f"topic id {tid}")]
    if tid is None:
        fix = None
        detail = "no partition.metadata (no topic id)"
        if t is not None and part in t.partitions and (node_id is None or node_id in t.partitions[part].replicas):
            fix = _pm_text(t.topic_id)
            detail += f"; the image has {topic} with id {t.topic_id}, partition {part} assigned here"
        elif t is None:
            detail += f"; topic {topic} is not in the image (deleted)"
        return [Item(NO_PARTITION_METADATA, path, topic, part, detail, fix)]
    by_id = image.topics.get(tid)
    if by_id is None:
        if t is not None:
            return [Item(TOPIC_ID_MISMATCH, path, topic, part,
                         f"partition.metadata has topic id {tid}; the image's {topic} is {t.topic_id} (recreated)")]
        return [Item(STRAY_DELETED, path, topic, part, f"topic id {tid} is not in the image (the topic was deleted)")]
    p = by_id.partitions.get(part)
    if p is None:
        return [Item(STRAY_UNASSIGNED, path, topic, part,
                     f"{topic} has no partition {part} in the image ({len(by_id.partitions)} partitions)")]
    if node_id is not None and node_id not in p.replicas:
        return [Item(STRAY_UNASSIGNED, path, topic, part,
                     f"replicas {p.replicas} do not include broker {node_id}")]
    if node_id is not None:
        assigned = p.directory_of(node_id)
        if assigned not in (None, MIGRATING, UNASSIGNED) and d.directory_id and assigned != d.directory_id:
            where = dir_ids.get(assigned)
            return [Item(WRONG_DIRECTORY, path, topic, part,
                         f"the image assigns directory {assigned}"
                         + (f" ({where})" if where else " (not one of these log dirs' directory.id: offline or LOST)")
                         + f"; this log dir's directory.id is {d.directory_id}")]
    return [Item(EXPECTED, path, topic, part, f"topic id {tid}, leader {p.leader}, isr {p.isr}")]
