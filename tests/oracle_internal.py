"""Internal-topic partitions written by Kafka's own code (tests only; issue 26): the inputs of the decoder oracle.

``messages(kind, seed)`` draws a seeded list of record specs for ``__consumer_offsets`` (offset commits v0-v4 and
group metadata v0-v4 with consumer-protocol subscriptions and assignments, tombstones), ``__transaction_state``
(transaction metadata v0/v1 in every state, tombstones) or ``__cluster_metadata`` (topics, partitions v0-v2, brokers
v0-v3, features, producer ids, configs, fencing, no-ops and transactions: record types and versions that older
releases do not know included, and a value that is not a metadata record at all). ``serialise`` turns the specs into
bytes with kafka-real's ``Records`` program (Kafka's generated message classes and serdes, one JVM for all of them),
and ``plan`` wraps them into a ``Write`` plan whose keys and values are ``{"hex": ...}``.
"""

from __future__ import annotations

import base64
import json
import os
import random
import subprocess
from pathlib import Path

TOPICS = {"offsets": "__consumer_offsets", "transaction-log": "__transaction_state", "cluster-metadata": "__cluster_metadata"}
FLAGS = {"offsets": "--offsets-decoder", "transaction-log": "--transaction-log-decoder",
         "cluster-metadata": "--cluster-metadata-decoder"}


def _uuid(rng: random.Random) -> str:
    return base64.urlsafe_b64encode(bytes(rng.randrange(256) for _ in range(16))).decode().rstrip("=")


def _msg(cls: str, version: int, data: dict) -> dict:
    return {"class": cls, "version": version, "json": data}


def _subscription(rng: random.Random) -> dict:
    v = rng.choice([0, 1, 3])
    data: dict = {"topics": [f"t{i}" for i in range(rng.randint(1, 3))]}
    data["userData"] = rng.choice([None, base64.b64encode(b"ud").decode()])
    if v >= 1:
        data["ownedPartitions"] = [{"topic": "t0", "partitions": [0, 1]}]
    if v >= 3:
        data["rackId"] = rng.choice([None, "r1"])
        data["generationId"] = rng.choice([-1, 4])
    return {"op": "versioned", "message": _msg("ConsumerProtocolSubscription", v, data)}


def _assignment(rng: random.Random) -> dict:
    v = rng.choice([0, 1, 3])
    return {"op": "versioned",
            "message": _msg("ConsumerProtocolAssignment", v, {"assignedPartitions": [{"topic": "t0", "partitions": [0]}],
                                                         "userData": rng.choice([None, "AAE="])})}


def _offsets(rng: random.Random, i: int) -> list[dict]:
    """Record specs (``key``/``value`` Records requests, or ``subs`` for group members) for __consumer_offsets."""
    if rng.random() < 0.55:
        v = rng.randint(0, 4)
        val: dict = {"offset": rng.randint(0, 10**6), "metadata": rng.choice(["", "m", "meta-ключ"]),
                     "commitTimestamp": 1_700_000_000_000 + i}
        if v >= 3:
            val["leaderEpoch"] = rng.choice([-1, 3])
        if v == 1:
            val["expireTimestamp"] = rng.choice([-1, 1_800_000_000_000])
        key = _msg("OffsetCommitKey", rng.choice([0, 1]), {"group": f"g{i % 3}", "topic": "orders", "partition": i % 4})
        value = None if rng.random() < 0.15 else _msg("OffsetCommitValue", v, val)
        return [{"op": "coordinator", "serde": "group", "key": key, "value": value}]
    v = rng.randint(0, 4)
    consumer = rng.random() < 0.7
    members = []
    for m in range(rng.randint(0, 2)):
        mem: dict = {"memberId": f"member-{m}", "clientId": "c", "clientHost": "/10.0.0.1", "sessionTimeout": 45000,
                     "subscription": "", "assignment": ""}
        if v >= 1:
            mem["rebalanceTimeout"] = 300000
        if v >= 3:
            mem["groupInstanceId"] = rng.choice([None, "inst"])
        members.append(mem)
    val = {"protocolType": "consumer" if consumer else "connect", "generation": rng.randint(0, 9),
           "protocol": rng.choice([None, "range"]), "leader": rng.choice([None, "member-0"]), "members": members}
    if v >= 2:
        val["currentStateTimestamp"] = 1_700_000_000_000
    key = _msg("GroupMetadataKey", 2, {"group": f"g{i % 3}"})
    value = None if rng.random() < 0.15 else _msg("GroupMetadataValue", v, val)
    subs = [[_subscription(rng), _assignment(rng)] for _ in members] if consumer else []
    return [{"op": "coordinator", "serde": "group", "key": key, "value": value, "_members": subs}]


def _txn(rng: random.Random, i: int) -> list[dict]:
    key = {"op": "versioned", "message": _msg("TransactionLogKey", 0, {"transactionalId": f"tx-{i % 4}"})}
    if rng.random() < 0.15:
        return [{"_key": key, "_value": None}]
    v = rng.choice([0, 1])
    parts = rng.choice([None, [], [{"topic": "orders", "partitionIds": [0, 2]}, {"topic": "x", "partitionIds": [1]}]])
    val: dict = {"producerId": rng.randint(0, 5000), "producerEpoch": rng.randint(0, 5),
                 "transactionTimeoutMs": 60000, "transactionStatus": rng.randint(0, 7),
                 "transactionPartitions": parts, "transactionLastUpdateTimestampMs": 1_700_000_000_000 + i,
                 "transactionStartTimestampMs": rng.choice([-1, 1_700_000_000_000])}
    if v >= 1 and rng.random() < 0.5:
        val.update(previousProducerId=7, nextProducerId=8, clientTransactionVersion=2)
    return [{"_key": key, "_value": {"op": "versioned", "message": _msg("TransactionLogValue", v, val)}}]


def _metadata(rng: random.Random, i: int) -> list[dict]:
    tid = _uuid(rng)
    pv, bv = rng.randint(0, 2), rng.randint(0, 3)
    part: dict = {"partitionId": i % 3, "topicId": tid, "replicas": [1, 2], "isr": [1], "removingReplicas": [],
                  "addingReplicas": [], "leader": 1, "leaderEpoch": 0, "partitionEpoch": 0}
    if pv >= 1:
        part["directories"] = [_uuid(rng), _uuid(rng)]
    broker: dict = {"brokerId": i, "incarnationId": _uuid(rng), "brokerEpoch": 10 + i,
                    "endPoints": [{"name": "PLAINTEXT", "host": "h", "port": 9092, "securityProtocol": 0}],
                    "features": [{"name": "metadata.version", "minSupportedVersion": 1, "maxSupportedVersion": 7}],
                    "rack": rng.choice([None, "r"]), "fenced": True}
    if bv >= 1:
        broker["inControlledShutdown"] = False
    if bv >= 2:
        broker["isMigratingZkBroker"] = False
    if bv >= 3:
        broker["logDirs"] = [_uuid(rng)]
    choices = [
        _msg("TopicRecord", 0, {"name": f"topic-{i}", "topicId": tid}),
        _msg("PartitionRecord", pv, part),
        _msg("RegisterBrokerRecord", bv, broker),
        _msg("FeatureLevelRecord", 0, {"name": "metadata.version", "featureLevel": 7}),
        _msg("ProducerIdsRecord", 0, {"brokerId": 1, "brokerEpoch": 5, "nextProducerId": 1000 * i}),
        _msg("ConfigRecord", 0, {"resourceType": 2, "resourceName": "orders", "name": "retention.ms",
                                 "value": rng.choice([None, "1000"])}),
        _msg("FenceBrokerRecord", 0, {"id": 1, "epoch": 3}),
        _msg("UnfenceBrokerRecord", 0, {"id": 1, "epoch": 3}),
        _msg("NoOpRecord", 0, {}),
        _msg("BeginTransactionRecord", 0, {"name": "t"}),
        _msg("PartitionChangeRecord", rng.randint(0, 1), {"partitionId": 0, "topicId": tid, "isr": [1, 2], "leader": 2}),
    ]
    if rng.random() < 0.05:
        return [{"_raw": bytes(rng.randrange(256) for _ in range(rng.randint(0, 6))).hex()}]
    return [{"op": "metadata", "record": rng.choice(choices)}]


GEN = {"offsets": _offsets, "transaction-log": _txn, "cluster-metadata": _metadata}


def messages(kind: str, seed: int, n: int | None = None) -> list[dict]:
    rng = random.Random(f"{kind}-{seed}")
    out: list[dict] = []
    for i in range(n if n is not None else rng.randint(3, 14)):
        out.extend(GEN[kind](rng, i))
    return out


def _records(launcher: Path, reqs: list[dict]) -> list[dict]:
    if not reqs:
        return []
    env = dict(os.environ, LC_ALL="C.UTF-8")
    p = subprocess.run([str(launcher), "Records"], input="\n".join(json.dumps(r) for r in reqs) + "\n",
                       capture_output=True, text=True, timeout=300, env=env, check=True)
    answers = [json.loads(line) for line in p.stdout.splitlines() if line.strip()]
    errs = [a["error"] for a in answers if "error" in a]
    assert not errs and len(answers) == len(reqs), (errs, len(answers), len(reqs))
    return answers


def serialise(launcher: Path, specs: list[dict]) -> list[tuple[str | None, str | None]]:
    """(key hex, value hex) per spec, through kafka-real's Records program (Kafka's serdes): one run for the
    consumer-protocol member bytes, one for the records."""
    member_reqs = [r for s in specs for pair in s.get("_members") or [] for r in pair]
    member_bytes = iter(a["bytes"] for a in _records(launcher, member_reqs))
    reqs: list[dict] = []
    slots: list[tuple] = []
    for s in specs:
        if "_raw" in s:
            slots.append(("raw", s["_raw"]))
        elif "_key" in s:
            slots.append(("kv", len(reqs), None if s["_value"] is None else len(reqs) + 1))
            reqs.append(s["_key"])
            if s["_value"] is not None:
                reqs.append(s["_value"])
        else:
            req = json.loads(json.dumps({k: v for k, v in s.items() if k != "_members"}))
            for m in range(len(s.get("_members") or [])):
                sub, asg = bytes.fromhex(next(member_bytes)), bytes.fromhex(next(member_bytes))
                if req.get("value") is not None:
                    mem = req["value"]["json"]["members"][m]
                    mem["subscription"] = base64.b64encode(sub).decode()
                    mem["assignment"] = base64.b64encode(asg).decode()
            slots.append(("one", len(reqs)))
            reqs.append(req)
    answers = _records(launcher, reqs)
    out: list[tuple[str | None, str | None]] = []
    for slot in slots:
        if slot[0] == "raw":
            out.append((None, slot[1]))
        elif slot[0] == "kv":
            out.append((answers[slot[1]]["bytes"], None if slot[2] is None else answers[slot[2]]["bytes"]))
        else:
            a = answers[slot[1]]
            out.append((a.get("key"), a.get("value")))
    return out


def plan(kind: str, specs: list[tuple[str | None, str | None]], seed: int) -> dict:
    rng = random.Random(seed)
    ops: list[dict] = []
    i = 0
    while i < len(specs):
        n = rng.randint(1, 4)
        recs = [{"key": None if k is None else {"hex": k}, "value": None if v is None else {"hex": v}}
                for k, v in specs[i:i + n]]
        ops.append({"op": "append", "records": recs, "codec": rng.choice(["none", "none", "gzip", "lz4", "zstd"])})
        i += n
    return {"topic": TOPICS[kind], "partition": 0, "config": {"segment.bytes": str(rng.choice([2000, 1 << 20]))},
            "ops": ops, "shutdown": "clean"}
