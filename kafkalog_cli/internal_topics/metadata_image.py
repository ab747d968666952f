"""The KRaft cluster image: ``__cluster_metadata`` records replayed under Kafka's rules, one method per record type.

Why a module of its own: ``kafkalog metadata`` (any point in time, diffs, a partition's history) and ``kafkalog
inventory`` (every log dir against the image) both need the image a broker builds from the metadata log; the
decoders (``cluster_metadata.read_frame``) only read one record. The rules are those of Kafka's ``MetadataDelta``
and its per-area deltas at 1eb7644 (``metadata/src/main/java/org/apache/kafka/image/``):

- ``MetadataDelta.replay`` (MetadataDelta.java:184-257) dispatches on the record type;
- topics: ``TopicsDelta.replay`` (TopicsDelta.java:71-114): a TopicRecord creates the topic with no partitions, a
  RemoveTopicRecord of an unknown id is an error ("Unable to delete topic with id ... no such topic found");
  ``TopicDelta.replay`` (TopicDelta.java): a PartitionRecord replaces the partition, a PartitionChangeRecord of an
  unknown partition is an error ("Unable to find partition");
- partitions: ``PartitionRegistration(PartitionRecord)`` and ``PartitionRegistration.merge(PartitionChangeRecord)``
  (metadata/.../metadata/PartitionRegistration.java:205-217, 241-281): a null field keeps the old value, leader
  -2 (NO_LEADER_CHANGE) keeps leader and leader epoch, any other leader bumps the leader epoch, every change bumps the
  partition epoch, leaderRecoveryState -1 keeps it, directories all MIGRATING (or absent) become MIGRATING per
  replica (``defaultToMigrating``), and directories whose count differs from the replicas' is an error
  (``checkDirectories``, InvalidReplicaDirectoriesException);
- configs: ``ConfigurationDelta.replay`` (a null value removes the key; a resource with no keys left is gone) and
  ``ConfigurationsDelta.replay(RemoveTopicRecord, name)`` (the topic's configs go with it);
- cluster: ``ClusterDelta.replay`` (ClusterDelta.java:85-149): RegisterBrokerRecord replaces the registration,
  UnregisterBrokerRecord removes it, Fence/Unfence/BrokerRegistrationChange need the registered broker with the same
  epoch ("Tried to fence broker N, but ..."), BrokerRegistrationChange's fenced 1/-1/0 = fence/unfence/none
  (BrokerRegistrationFencingChange.java:28-30), inControlledShutdown 1/0, logDirs replaced only when non-empty;
- features: ``FeaturesDelta.replay`` (metadata.version is its own field; another feature at level 0 is removed);
- producer ids: ``ProducerIdsDelta.replay`` (the next producer id); ACLs: ``AclsDelta.replay`` (by id; removing an
  unknown id is an error); delegation tokens and SCRAM credentials: by token id / (name, mechanism); quotas: by entity;
- metadata transactions: ``MetadataBatchLoader`` (image/loader/MetadataBatchLoader.java:219-260): the records
  between BeginTransactionRecord and EndTransactionRecord are applied together at the end; AbortTransactionRecord
  drops them; a point inside a transaction sees the image before it;
- KRaft control records (raft/.../internals/KRaftControlRecordStateMachine): KRaftVersion and Voters set the quorum's
  kraft.version and voters, LeaderChange the leader and its epoch.

Errors of a record are kept as ``ReplayProblem`` (offset, type, Kafka's message): a broker's loader would stop
there (``MetadataLoader`` logs a fault and skips the batch); this tool records it and goes on.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

MIGRATING = "AAAAAAAAAAAAAAAAAAAAAA"  # DirectoryId.MIGRATING = new Uuid(0L, 0L) (DirectoryId.java:33)
UNASSIGNED = "AAAAAAAAAAAAAAAAAAAAAQ"  # DirectoryId.UNASSIGNED = new Uuid(0L, 1L)
LOST = "AAAAAAAAAAAAAAAAAAAAAg"  # DirectoryId.LOST = new Uuid(0L, 2L)
NO_LEADER_CHANGE = -2  # PartitionRegistration / PartitionChangeRecord default
NO_LEADER = -1
METADATA_VERSION = "metadata.version"
KRAFT_VERSION = "kraft.version"
RESOURCE_TYPES = {2: "TOPIC", 4: "BROKER", 8: "BROKER_LOGGER", 16: "CLIENT_METRICS", 32: "GROUP"}  # ConfigResource.Type


@dataclass(slots=True)
class Partition:
    """PartitionRegistration (metadata/.../PartitionRegistration.java)."""

    replicas: list[int]
    directories: list[str]
    isr: list[int]
    removing_replicas: list[int]
    adding_replicas: list[int]
    leader: int
    leader_recovery_state: int
    leader_epoch: int
    partition_epoch: int
    elr: list[int]
    last_known_elr: list[int]

    def as_dict(self) -> dict[str, Any]:
        return {
            "replicas": self.replicas, "directories": self.directories, "isr": self.isr,
            "removing_replicas": self.removing_replicas, "adding_replicas": self.adding_replicas,
            "leader": self.leader, "leader_recovery_state": self.leader_recovery_state,
            "leader_epoch": self.leader_epoch, "partition_epoch": self.partition_epoch,
            "eligible_leader_replicas": self.elr, "last_known_elr": self.last_known_elr,
        }

    def directory_of(self, broker: int) -> str | None:
        """``PartitionRegistration.directory(brokerId)``: the directory assigned to a replica, None if not one."""
        for i, r in enumerate(self.replicas):
            if r == broker:
                return self.directories[i] if i < len(self.directories) else MIGRATING
        return None


@dataclass(slots=True)
class Topic:
    name: str
    topic_id: str
    partitions: dict[int, Partition] = field(default_factory=dict)


@dataclass(slots=True)
class Broker:
    """BrokerRegistration (metadata/.../BrokerRegistration.java) as its record holds it."""

    broker_id: int
    epoch: int
    incarnation_id: str
    fenced: bool
    in_controlled_shutdown: bool
    rack: str | None
    log_dirs: list[str]
    endpoints: list[dict[str, Any]]
    features: dict[str, list[int]]

    def as_dict(self) -> dict[str, Any]:
        return {
            "broker_id": self.broker_id, "epoch": self.epoch, "incarnation_id": self.incarnation_id,
            "fenced": self.fenced, "in_controlled_shutdown": self.in_controlled_shutdown, "rack": self.rack,
            "log_dirs": self.log_dirs, "endpoints": self.endpoints, "features": self.features,
        }


@dataclass(slots=True)
class ReplayProblem:
    offset: int
    record_type: str
    message: str

    def as_dict(self) -> dict[str, Any]:
        return {"offset": self.offset, "type": self.record_type, "message": self.message}


class ReplayError(Exception):
    """One record Kafka's delta refuses (its message); the image is left as it was before that record."""


def _ints(v: Any) -> list[int]:
    return list(v) if v else []


def _dirs(dirs: list[str] | None, n: int) -> list[str]:
    """``defaultToMigrating``: absent or all-MIGRATING directories become MIGRATING for every replica."""
    if not dirs or all(d == MIGRATING for d in dirs):
        return [MIGRATING] * n
    return list(dirs)


@dataclass
class Image:
    """The cluster image at one point of the metadata log (MetadataImage's parts that matter off line)."""

    topics: dict[str, Topic] = field(default_factory=dict)  # by topic id
    names: dict[str, str] = field(default_factory=dict)  # topic name -> topic id
    configs: dict[tuple[str, str], dict[str, str]] = field(default_factory=dict)
    brokers: dict[int, Broker] = field(default_factory=dict)
    controllers: dict[int, dict[str, Any]] = field(default_factory=dict)
    features: dict[str, int] = field(default_factory=dict)  # metadata.version included
    next_producer_id: int | None = None
    acls: dict[str, dict[str, Any]] = field(default_factory=dict)
    delegation_tokens: dict[str, dict[str, Any]] = field(default_factory=dict)
    scram: dict[tuple[str, int], dict[str, Any]] = field(default_factory=dict)
    quotas: dict[tuple[tuple[str, str | None], ...], dict[str, float]] = field(default_factory=dict)
    zk_migration_state: int | None = None
    voters: list[dict[str, Any]] | None = None  # the KRaft Voters control record (kraft.version 1)
    kraft_version: int | None = None
    leader: dict[str, int] | None = None  # the last LeaderChange: leaderId, epoch
    # provenance (not part of the cluster state): the offset of the last record applied, and its batch time
    offset: int = -1
    time_ms: int | None = None

    def topic_by_name(self, name: str) -> Topic | None:
        tid = self.names.get(name)
        return None if tid is None else self.topics.get(tid)

    def state(self) -> dict[str, Any]:
        """The cluster state as plain data, without provenance and without the quorum's own records (what a
        snapshot's metadata records hold): two images are the same cluster exactly when their states are equal."""
        return {
            "topics": {t.name: {"topic_id": t.topic_id,
                                "partitions": {p: v.as_dict() for p, v in sorted(t.partitions.items())}}
                       for t in sorted(self.topics.values(), key=lambda t: t.name)},
            "configs": {f"{RESOURCE_TYPES.get(int(k[0]), k[0])}:{k[1]}": dict(sorted(v.items()))
                        for k, v in sorted(self.configs.items())},
            "brokers": {b: v.as_dict() for b, v in sorted(self.brokers.items())},
            "controllers": dict(sorted(self.controllers.items())),
            "features": dict(sorted(self.features.items())),
            "next_producer_id": self.next_producer_id,
            "acls": dict(sorted(self.acls.items())),
            "delegation_tokens": dict(sorted(self.delegation_tokens.items())),
            "scram_credentials": {f"{n}:{m}": v for (n, m), v in sorted(self.scram.items())},
            "client_quotas": {",".join(f"{t}={n}" for t, n in k): dict(sorted(v.items()))
                             for k, v in sorted(self.quotas.items(), key=lambda kv: str(kv[0]))},
            "zk_migration_state": self.zk_migration_state,
        }

    def quorum(self) -> dict[str, Any]:
        return {"kraft_version": self.kraft_version, "voters": self.voters, "leader": self.leader}


class Replayer:
    """Applies decoded records (type name, data) to an ``Image`` under Kafka's rules; keeps problems and, for
    ``--history``, calls ``on_partition(offset, time, topic, partition_id, Partition | None)`` after each change."""

    def __init__(self, image: Image | None = None) -> None:
        self.image = image if image is not None else Image()
        self.problems: list[ReplayProblem] = []
        self.on_partition: Any = None
        self._txn: list[tuple[str, dict[str, Any], int, int | None]] | None = None  # records of an open transaction
        self._txn_start: int | None = None

    @property
    def in_transaction(self) -> bool:
        return self._txn is not None

    # ------------------------------------------------------------------------------------------- entry points
    def apply(self, rtype: str, data: dict[str, Any], offset: int, time_ms: int | None) -> None:
        """One metadata record at ``offset`` (its batch's time)."""
        if rtype in _TXN_TYPES:
            self._transaction(rtype, offset)
        elif self._txn is not None:
            self._txn.append((rtype, data, offset, time_ms))
        else:
            self._apply_one(rtype, data, offset, time_ms)
        self.image.offset = offset
        if time_ms is not None:
            self.image.time_ms = time_ms

    def _transaction(self, rtype: str, offset: int) -> None:
        if rtype == "BEGIN_TRANSACTION_RECORD":
            if self._txn is not None:
                self._problem(offset, rtype, "BeginTransactionRecord inside a transaction (MetadataBatchLoader: "
                              "\"Received a BeginTransactionRecord ... while in a transaction\")")
                return
            self._txn, self._txn_start = [], offset
        elif rtype == "END_TRANSACTION_RECORD":
            if self._txn is None:
                self._problem(offset, rtype, "EndTransactionRecord outside a transaction")
                return
            pending, self._txn = self._txn, None
            for r in pending:
                self._apply_one(*r)
        else:
            if self._txn is None:
                self._problem(offset, rtype, "AbortTransactionRecord outside a transaction")
                return
            self._txn = None

    def apply_control(self, name: str, data: dict[str, Any], offset: int, time_ms: int | None) -> None:
        """A KRaft control record (KRaftVersion, KRaftVoters, LeaderChange; headers and footers change nothing)."""
        im = self.image
        if name == "KRaftVersion":
            im.kraft_version = int(data.get("kRaftVersion", 0))
        elif name == "KRaftVoters":
            im.voters = [{"voter_id": v.get("voterId"), "voter_directory_id": v.get("voterDirectoryId"),
                          "endpoints": v.get("endpoints", [])} for v in data.get("voters", [])]
        elif name == "LeaderChange":
            im.leader = {"leader_id": int(data.get("leaderId", -1))}
        im.offset = max(im.offset, offset)
        if time_ms is not None:
            im.time_ms = time_ms

    def _problem(self, offset: int, rtype: str, message: str) -> None:
        self.problems.append(ReplayProblem(offset, rtype, message))

    def _apply_one(self, rtype: str, data: dict[str, Any], offset: int, time_ms: int | None) -> None:
        handler = _HANDLERS.get(rtype)
        if handler is None:
            return  # NoOp and the records that change nothing shown here
        try:
            handler(self, data, offset, time_ms)
        except ReplayError as exc:
            self._problem(offset, rtype, str(exc))

    def _emit(self, offset: int, time_ms: int | None, topic: Topic, pid: int, part: Partition | None) -> None:
        if self.on_partition is not None:
            self.on_partition(offset, time_ms, topic, pid, part)

    # ------------------------------------------------------------------------------------------- topics
    def _topic(self, d: dict[str, Any], offset: int, t: int | None) -> None:
        im = self.image
        tid, name = d["topicId"], d["name"]
        im.topics[tid] = Topic(name, tid)
        im.names[name] = tid

    def _partition(self, d: dict[str, Any], offset: int, t: int | None) -> None:
        topic = self.image.topics.get(d["topicId"])
        if topic is None:
            # TopicsDelta.getOrCreateTopicDelta -> image.getTopic(id) is null -> NullPointerException in TopicDelta
            raise ReplayError(f"PartitionRecord for unknown topic id {d['topicId']}")
        replicas = _ints(d.get("replicas"))
        dirs = d.get("directories") or []
        if dirs and len(dirs) != len(replicas):
            raise ReplayError(f"InvalidReplicaDirectoriesException: {len(dirs)} directories for {len(replicas)} replicas")
        pid = int(d["partitionId"])
        part = Partition(replicas, _dirs(dirs, len(replicas)), _ints(d.get("isr")), _ints(d.get("removingReplicas")),
                         _ints(d.get("addingReplicas")), int(d["leader"]), int(d.get("leaderRecoveryState") or 0),
                         int(d["leaderEpoch"]), int(d["partitionEpoch"]), _ints(d.get("eligibleLeaderReplicas")),
                         _ints(d.get("lastKnownElr")))
        topic.partitions[pid] = part
        self._emit(offset, t, topic, pid, part)

    def _partition_change(self, d: dict[str, Any], offset: int, t: int | None) -> None:
        g = d.get  # one bound lookup: a long replay is mostly these records
        tid, pid = d["topicId"], int(d["partitionId"])
        topic = self.image.topics.get(tid)
        old = topic.partitions.get(pid) if topic is not None else None
        if topic is None or old is None:
            raise ReplayError(f"Unable to find partition {tid}:{pid}")
        reps = g("replicas")
        replicas = old.replicas if reps is None else list(reps)
        dirs = g("directories")
        if reps is not None and dirs and len(dirs) != len(replicas):
            raise ReplayError(f"InvalidReplicaDirectoriesException: {len(dirs)} directories for {len(replicas)} replicas")
        leader = int(g("leader", NO_LEADER_CHANGE))
        lrs = int(g("leaderRecoveryState", -1))
        if dirs is None and replicas is old.replicas:
            new_dirs = old.directories  # already defaulted for these replicas
        else:
            new_dirs = _dirs(old.directories if dirs is None else list(dirs), len(replicas))
        isr, removing, adding = g("isr"), g("removingReplicas"), g("addingReplicas")
        elr, lkelr = g("eligibleLeaderReplicas"), g("lastKnownElr")
        new = Partition(
            replicas,
            new_dirs,
            old.isr if isr is None else list(isr),
            old.removing_replicas if removing is None else list(removing),
            old.adding_replicas if adding is None else list(adding),
            old.leader if leader == NO_LEADER_CHANGE else leader,
            old.leader_recovery_state if lrs == -1 else lrs,
            old.leader_epoch if leader == NO_LEADER_CHANGE else old.leader_epoch + 1,
            old.partition_epoch + 1,
            old.elr if elr is None else list(elr),
            old.last_known_elr if lkelr is None else list(lkelr),
        )
        topic.partitions[pid] = new
        self._emit(offset, t, topic, pid, new)

    def _remove_topic(self, d: dict[str, Any], offset: int, t: int | None) -> None:
        im = self.image
        topic = im.topics.pop(d["topicId"], None)
        if topic is None:
            raise ReplayError(f"Unable to delete topic with id {d['topicId']}: no such topic found.")
        if im.names.get(topic.name) == topic.topic_id:
            del im.names[topic.name]
        im.configs.pop(("2", topic.name), None)  # ConfigurationsDelta.replay(RemoveTopicRecord, topicName)
        for pid in sorted(topic.partitions):
            self._emit(offset, t, topic, pid, None)

    # ------------------------------------------------------------------------------------------- configs, features
    def _config(self, d: dict[str, Any], offset: int, t: int | None) -> None:
        key = (str(d["resourceType"]), d["resourceName"])
        res = self.image.configs.setdefault(key, {})
        if d.get("value") is None:
            res.pop(d["name"], None)
            if not res:
                del self.image.configs[key]
        else:
            res[d["name"]] = d["value"]

    def _feature(self, d: dict[str, Any], offset: int, t: int | None) -> None:
        name, level = d["name"], int(d["featureLevel"])
        if name != METADATA_VERSION and level == 0:
            self.image.features.pop(name, None)
        else:
            self.image.features[name] = level

    def _producer_ids(self, d: dict[str, Any], offset: int, t: int | None) -> None:
        self.image.next_producer_id = int(d["nextProducerId"])

    def _zk_migration(self, d: dict[str, Any], offset: int, t: int | None) -> None:
        self.image.zk_migration_state = int(d["zkMigrationState"])

    # ------------------------------------------------------------------------------------------- cluster
    def _register_broker(self, d: dict[str, Any], offset: int, t: int | None) -> None:
        b = int(d["brokerId"])
        self.image.brokers[b] = Broker(
            b, int(d["brokerEpoch"]), d.get("incarnationId", ""), bool(d.get("fenced", True)),
            bool(d.get("inControlledShutdown", False)), d.get("rack"), list(d.get("logDirs") or []),
            sorted((dict(e) for e in d.get("endPoints") or []), key=lambda e: str(e.get("name"))),  # a map by name
            {f["name"]: [int(f["minSupportedVersion"]), int(f["maxSupportedVersion"])] for f in d.get("features") or []},
        )

    def _unregister_broker(self, d: dict[str, Any], offset: int, t: int | None) -> None:
        self.image.brokers.pop(int(d["brokerId"]), None)

    def _registered(self, broker_id: int, epoch: int, action: str) -> Broker:
        b = self.image.brokers.get(broker_id)
        if b is None:
            raise ReplayError(f"Tried to {action} broker {broker_id}, but that broker was not registered.")
        if b.epoch != epoch:
            raise ReplayError(f"Tried to {action} broker {broker_id}, but the given epoch, {epoch}, did not match "
                              f"the current broker epoch, {b.epoch}")
        return b

    def _fence(self, d: dict[str, Any], offset: int, t: int | None) -> None:
        self._registered(int(d["id"]), int(d["epoch"]), "fence").fenced = True

    def _unfence(self, d: dict[str, Any], offset: int, t: int | None) -> None:
        self._registered(int(d["id"]), int(d["epoch"]), "unfence").fenced = False

    def _registration_change(self, d: dict[str, Any], offset: int, t: int | None) -> None:
        b = self._registered(int(d["brokerId"]), int(d["brokerEpoch"]), "change")
        fenced, ics = int(d.get("fenced", 0)), int(d.get("inControlledShutdown", 0))
        if fenced not in (-1, 0, 1):
            raise ReplayError(f"Unable to replay BrokerRegistrationChangeRecord: unknown value for fenced field: {fenced}")
        if ics not in (0, 1):
            raise ReplayError("Unable to replay BrokerRegistrationChangeRecord: unknown value for inControlledShutdown "
                              f"field: {ics}")
        if fenced:
            b.fenced = fenced == 1
        if ics:
            b.in_controlled_shutdown = True
        if d.get("logDirs"):
            b.log_dirs = list(d["logDirs"])

    def _register_controller(self, d: dict[str, Any], offset: int, t: int | None) -> None:
        c = int(d["controllerId"])
        self.image.controllers[c] = {"incarnation_id": d.get("incarnationId"), "end_points": d.get("endPoints") or []}

    # ------------------------------------------------------------------------------------------- security, quotas
    def _acl(self, d: dict[str, Any], offset: int, t: int | None) -> None:
        self.image.acls[d["id"]] = {k: d[k] for k in ("resourceType", "resourceName", "patternType", "principal",
                                                      "host", "operation", "permissionType")}

    def _remove_acl(self, d: dict[str, Any], offset: int, t: int | None) -> None:
        if self.image.acls.pop(d["id"], None) is None:
            raise ReplayError(f"Failed to find existing ACL with ID {d['id']} in either image or changes")

    def _token(self, d: dict[str, Any], offset: int, t: int | None) -> None:
        self.image.delegation_tokens[d["tokenId"]] = {k: d[k] for k in ("owner", "requester", "renewers",
                                                                      "issueTimestamp", "maxTimestamp",
                                                                      "expirationTimestamp")}

    def _remove_token(self, d: dict[str, Any], offset: int, t: int | None) -> None:
        self.image.delegation_tokens.pop(d["tokenId"], None)

    def _scram(self, d: dict[str, Any], offset: int, t: int | None) -> None:
        self.image.scram[(d["name"], int(d["mechanism"]))] = {"iterations": int(d["iterations"])}

    def _remove_scram(self, d: dict[str, Any], offset: int, t: int | None) -> None:
        self.image.scram.pop((d["name"], int(d["mechanism"])), None)

    def _quota(self, d: dict[str, Any], offset: int, t: int | None) -> None:
        key = tuple(sorted((e["entityType"], e.get("entityName")) for e in d.get("entity") or []))
        q = self.image.quotas.setdefault(key, {})
        if d.get("remove"):
            q.pop(d["key"], None)
            if not q:
                del self.image.quotas[key]
        else:
            q[d["key"]] = float(d["value"])


_HANDLERS: dict[str, Any] = {
    "TOPIC_RECORD": Replayer._topic,
    "PARTITION_RECORD": Replayer._partition,
    "PARTITION_CHANGE_RECORD": Replayer._partition_change,
    "REMOVE_TOPIC_RECORD": Replayer._remove_topic,
    "CONFIG_RECORD": Replayer._config,
    "FEATURE_LEVEL_RECORD": Replayer._feature,
    "PRODUCER_IDS_RECORD": Replayer._producer_ids,
    "ZK_MIGRATION_STATE_RECORD": Replayer._zk_migration,
    "REGISTER_BROKER_RECORD": Replayer._register_broker,
    "UNREGISTER_BROKER_RECORD": Replayer._unregister_broker,
    "FENCE_BROKER_RECORD": Replayer._fence,
    "UNFENCE_BROKER_RECORD": Replayer._unfence,
    "BROKER_REGISTRATION_CHANGE_RECORD": Replayer._registration_change,
    "REGISTER_CONTROLLER_RECORD": Replayer._register_controller,
    "ACCESS_CONTROL_ENTRY_RECORD": Replayer._acl,
    "REMOVE_ACCESS_CONTROL_ENTRY_RECORD": Replayer._remove_acl,
    "DELEGATION_TOKEN_RECORD": Replayer._token,
    "REMOVE_DELEGATION_TOKEN_RECORD": Replayer._remove_token,
    "USER_SCRAM_CREDENTIAL_RECORD": Replayer._scram,
    "REMOVE_USER_SCRAM_CREDENTIAL_RECORD": Replayer._remove_scram,
    "CLIENT_QUOTA_RECORD": Replayer._quota,
}


_TXN_TYPES = frozenset({"BEGIN_TRANSACTION_RECORD", "END_TRANSACTION_RECORD", "ABORT_TRANSACTION_RECORD"})


def clone(image: Image) -> Image:
    """A deep copy (a point kept while the replay goes on, e.g. for ``--diff``)."""
    return copy.deepcopy(image)
