"""Generated KRaft metadata logs for the replay tests and the bench: a random cluster history as metadata records
(Kafka's message JSON: the form kafka-real's Records program reads and, field for field, what
``cluster_metadata.encode_frame`` takes), with a model of the cluster state written independently of the replay code
as the records a controller puts in a snapshot (``SnapshotGenerator`` order: features, brokers, topics with their
partitions, configs, producer ids, ACLs).

``Cluster.step()`` appends one change (topic create/delete/recreate, leader and ISR changes with ELR and
directories, broker fence/unfence/re-register, configs, producer ids, ACLs, a metadata transaction committed or
aborted) and updates the model; ``snapshot_records()`` is the model as records.
"""

from __future__ import annotations

import base64
import random
from typing import Any


def uuid(rng: random.Random) -> str:
    raw = bytes(rng.randrange(256) for _ in range(16))
    raw = b"\x00\x00\x00\x00\x00\x00\x00\x01" + raw[8:] if raw[:8] == bytes(8) else raw  # never a reserved id
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def msg(cls: str, version: int, data: dict[str, Any]) -> dict[str, Any]:
    return {"class": cls, "version": version, "json": data}


class Cluster:
    def __init__(self, seed: int, brokers: int = 3, *, dirs: bool = True) -> None:
        self.rng = random.Random(seed)
        self.records: list[dict[str, Any]] = []
        self.brokers: dict[int, dict[str, Any]] = {}
        self.topics: dict[str, dict[str, Any]] = {}  # name -> {"id", "parts": {pid: PartitionRecord json}}
        self.configs: dict[tuple[int, str], dict[str, str]] = {}
        self.features = {"metadata.version": 19}
        self.next_pid: int | None = None
        self.acls: dict[str, dict[str, Any]] = {}
        self.dirs = dirs
        self.n_brokers = brokers
        self._topic_seq = 0
        self.emit(msg("FeatureLevelRecord", 0, {"name": "metadata.version", "featureLevel": 19}))
        for b in range(1, brokers + 1):
            self._register(b)
            self._unfence(b)

    # -------------------------------------------------------------------------------------------- emitting
    def emit(self, m: dict[str, Any]) -> None:
        self.records.append(m)

    def _register(self, b: int) -> None:
        epoch = self.brokers[b]["epoch"] + 7 if b in self.brokers else 10 + b
        log_dirs = [uuid(self.rng), uuid(self.rng)] if self.dirs else []
        reg = {"brokerId": b, "isMigratingZkBroker": False, "incarnationId": uuid(self.rng), "brokerEpoch": epoch,
               "endPoints": [{"name": "PLAINTEXT", "host": f"b{b}", "port": 9092, "securityProtocol": 0}],
               "features": [{"name": "metadata.version", "minSupportedVersion": 1, "maxSupportedVersion": 19}],
               "rack": None, "fenced": True, "inControlledShutdown": False, "logDirs": log_dirs}
        self.brokers[b] = dict(reg, epoch=epoch)
        self.emit(msg("RegisterBrokerRecord", 3, reg))

    def _unfence(self, b: int) -> None:
        self.brokers[b]["fenced"] = False
        self.emit(msg("UnfenceBrokerRecord", 0, {"id": b, "epoch": self.brokers[b]["epoch"]}))

    def _fence(self, b: int) -> None:
        self.brokers[b]["fenced"] = True
        self.emit(msg("FenceBrokerRecord", 0, {"id": b, "epoch": self.brokers[b]["epoch"]}))

    def _dir_of(self, b: int) -> str:
        return self.rng.choice(self.brokers[b]["logDirs"]) if self.dirs else "AAAAAAAAAAAAAAAAAAAAAA"

    def create_topic(self, name: str | None = None, parts: int | None = None) -> str:
        rng = self.rng
        if name is None:
            self._topic_seq += 1
            name = f"topic-{self._topic_seq}"
        tid = uuid(rng)
        self.topics[name] = {"id": tid, "parts": {}}
        self.emit(msg("TopicRecord", 0, {"name": name, "topicId": tid}))
        for p in range(parts if parts is not None else rng.randint(1, 4)):
            replicas = rng.sample(sorted(self.brokers), min(len(self.brokers), rng.randint(1, 3)))
            rec = {"partitionId": p, "topicId": tid, "replicas": replicas, "isr": list(replicas),
                   "removingReplicas": [], "addingReplicas": [], "leader": replicas[0], "leaderRecoveryState": 0,
                   "leaderEpoch": 0, "partitionEpoch": 0, "directories": [self._dir_of(b) for b in replicas],
                   "eligibleLeaderReplicas": [], "lastKnownElr": []}
            self.topics[name]["parts"][p] = dict(rec)
            self.emit(msg("PartitionRecord", 2, rec))
        if rng.random() < 0.5:
            self._config(name, "retention.ms", str(rng.randint(1, 10**9)))
        return name

    def _config(self, name: str, key: str, value: str | None) -> None:
        res = self.configs.setdefault((2, name), {})
        if value is None:
            res.pop(key, None)
            if not res:
                del self.configs[(2, name)]
        else:
            res[key] = value
        self.emit(msg("ConfigRecord", 0, {"resourceType": 2, "resourceName": name, "name": key, "value": value}))

    def delete_topic(self, name: str) -> None:
        t = self.topics.pop(name)
        self.configs.pop((2, name), None)
        self.emit(msg("RemoveTopicRecord", 0, {"topicId": t["id"]}))

    def change_partition(self) -> None:
        rng = self.rng
        name = rng.choice(sorted(self.topics))
        t = self.topics[name]
        pid = rng.choice(sorted(t["parts"]))
        p = t["parts"][pid]
        change: dict[str, Any] = {"partitionId": pid, "topicId": t["id"]}
        what = rng.random()
        if what < 0.4:  # ISR shrink/expand
            isr = sorted(rng.sample(p["replicas"], rng.randint(1, len(p["replicas"]))))
            change["isr"] = isr
            p["isr"] = isr
        if what > 0.3:  # a leader election
            leader = rng.choice(p["isr"] + [-1])
            change["leader"] = leader
            p["leader"] = leader
            p["leaderEpoch"] += 1
        if rng.random() < 0.2:  # ELR (KIP-966)
            elr = [b for b in p["replicas"] if b not in p["isr"]][:1]
            change["eligibleLeaderReplicas"] = elr
            change["lastKnownElr"] = [p["leader"]] if p["leader"] >= 0 else []
            p["eligibleLeaderReplicas"], p["lastKnownElr"] = elr, change["lastKnownElr"]
        if self.dirs and rng.random() < 0.2:  # a replica moved between log dirs (AssignReplicasToDirs)
            dirs = [self._dir_of(b) for b in p["replicas"]]
            change["directories"] = dirs
            p["directories"] = dirs
        p["partitionEpoch"] += 1
        self.emit(msg("PartitionChangeRecord", 2, change))

    def step(self) -> None:
        rng = self.rng
        r = rng.random()
        if not self.topics or r < 0.08:
            self.create_topic()
        elif r < 0.12 and len(self.topics) > 1:
            self.delete_topic(rng.choice(sorted(self.topics)))
        elif r < 0.14:  # delete and recreate under the same name: a new topic id
            name = rng.choice(sorted(self.topics))
            self.delete_topic(name)
            self.create_topic(name)
        elif r < 0.20:
            b = rng.choice(sorted(self.brokers))
            (self._unfence if self.brokers[b]["fenced"] else self._fence)(b)
        elif r < 0.22:
            b = rng.choice(sorted(self.brokers))
            self._register(b)  # a restart: new epoch and incarnation, fenced until unfenced
        elif r < 0.26:
            name = rng.choice(sorted(self.topics))
            self._config(name, rng.choice(["retention.ms", "cleanup.policy"]),
                         rng.choice([None, "compact", str(rng.randint(1, 99))]))
        elif r < 0.28:
            self.next_pid = (self.next_pid or 0) + 1000
            self.emit(msg("ProducerIdsRecord", 0, {"brokerId": 1, "brokerEpoch": self.brokers[1]["epoch"],
                                                   "nextProducerId": self.next_pid}))
        elif r < 0.30:
            aid = uuid(rng)
            acl = {"id": aid, "resourceType": 2, "resourceName": "t", "patternType": 3, "principal": "User:a",
                   "host": "*", "operation": 3, "permissionType": 3}
            self.acls[aid] = acl
            self.emit(msg("AccessControlEntryRecord", 0, acl))
        elif r < 0.32 and self.acls:
            aid = rng.choice(sorted(self.acls))
            del self.acls[aid]
            self.emit(msg("RemoveAccessControlEntryRecord", 0, {"id": aid}))
        elif r < 0.34:
            self.emit(msg("NoOpRecord", 0, {}))
        elif r < 0.37:  # a metadata transaction, aborted: the model does not change
            saved = (repr(self.topics), repr(self.configs))
            topics, configs = eval(saved[0]), eval(saved[1])  # noqa: S307 (our own repr of plain data)
            self.emit(msg("BeginTransactionRecord", 0, {"name": "tx"}))
            self.create_topic()
            self.emit(msg("AbortTransactionRecord", 0, {"reason": "test"}))
            self.topics, self.configs = topics, configs
        elif r < 0.40:
            self.emit(msg("BeginTransactionRecord", 0, {"name": "tx"}))
            self.create_topic(parts=2)
            self.emit(msg("EndTransactionRecord", 0, {}))
        else:
            self.change_partition()

    # -------------------------------------------------------------------------------------------- the model
    def snapshot_records(self) -> list[dict[str, Any]]:
        out = [msg("FeatureLevelRecord", 0, {"name": k, "featureLevel": v}) for k, v in sorted(self.features.items())]
        for _b, reg in sorted(self.brokers.items()):
            r = {k: v for k, v in reg.items() if k != "epoch"}
            out.append(msg("RegisterBrokerRecord", 3, r))
        for name, t in sorted(self.topics.items()):
            out.append(msg("TopicRecord", 0, {"name": name, "topicId": t["id"]}))
            for _p, rec in sorted(t["parts"].items()):
                out.append(msg("PartitionRecord", 2, dict(rec)))
        for (rt, rn), kv in sorted(self.configs.items()):
            for k, v in sorted(kv.items()):
                out.append(msg("ConfigRecord", 0, {"resourceType": rt, "resourceName": rn, "name": k, "value": v}))
        if self.next_pid is not None:
            out.append(msg("ProducerIdsRecord", 0, {"brokerId": 1, "brokerEpoch": self.brokers[1]["epoch"],
                                                    "nextProducerId": self.next_pid}))
        for _aid, acl in sorted(self.acls.items()):
            out.append(msg("AccessControlEntryRecord", 0, acl))
        return out


def encode(records: list[dict[str, Any]]) -> list[bytes]:
    """The records' values through kafkalog's own encoder (the tests without the oracle, and the bench)."""
    from kafkalog_cli.internal_topics.cluster_metadata import BY_KEY, encode_frame

    by_name = {m.name: m for m in BY_KEY.values()}
    return [encode_frame(by_name[r["class"]], r["json"], r["version"]) for r in records]


def write_log(directory: str, values: list[bytes], *, per_batch: int = 1, start: int = 0, time0: int = 1_700_000_000_000,
              name: str | None = None) -> str:
    """A ``.log`` segment of the values (``per_batch`` records per batch), base offset ``start``."""
    import os

    from kafkalog_cli.format.encoder import RecordSpec, encode_batch

    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, name or f"{start:020d}.log")
    with open(path, "wb") as f:
        for i in range(0, len(values), per_batch):
            chunk = values[i:i + per_batch]
            ts = time0 + start + i
            f.write(encode_batch([RecordSpec(None, v, timestamp=ts + j) for j, v in enumerate(chunk)],
                                 base_offset=start + i, base_timestamp=ts, partition_leader_epoch=0))
    return path
