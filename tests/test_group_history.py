"""Issue 34 items 1 and 3: ``group-history``, a group's committed offsets through time.

The scenarios are real partitions: the coordinator records are serialised by Kafka's own generated classes and
``GroupCoordinatorRecordSerde`` (kafka-real ``Records``), written by ``UnifiedLog`` (``Write``), compacted by Kafka's
``LogCleaner`` (``Clean``); the expected history is derived by hand from the scenario (the coordinator's replay
rule: last record per key wins, a tombstone deletes, a transactional commit counts once its COMMIT marker is read:
GroupMetadataManager / OffsetMetadataManager.replay), never from the engine. The real ``__consumer_offsets``
partitions of ``../shared/realdata`` are checked against Kafka's own DumpLogSegments decoding of them."""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
from pathlib import Path

import oracle_internal as oi
import pytest
from click.testing import CliRunner
from kafka_real import launcher, write_partition
from realdata_path import realdata_root

from kafkalog_cli.cli.main import cli
from kafkalog_cli.internal_topics import connect_offsets as cx
from kafkalog_cli.internal_topics.locate import partition_for
from kafkalog_cli.ops import connect_history as ch
from kafkalog_cli.ops import group_history as gh

GROUP = "orders-app"
CP = partition_for(GROUP)
T0 = 1_700_000_000_000


def _m(cls: str, data: dict, version: int = 0) -> dict:
    return {"class": cls, "version": version, "json": data}


def _commit(group: str, topic: str, part: int, offset: int, ts: int, epoch: int = 0, meta: str = "",
            version: int = 3) -> dict:
    val: dict = {"offset": offset, "metadata": meta, "commitTimestamp": ts}
    if version >= 3:
        val["leaderEpoch"] = epoch
    if version == 1:
        val["expireTimestamp"] = -1
    return {"op": "coordinator", "serde": "group", "key": _m("OffsetCommitKey", {"group": group, "topic": topic,
                                                                             "partition": part}, 1),
            "value": _m("OffsetCommitValue", val, version)}


def _tombstone(group: str, topic: str, part: int) -> dict:
    return {"op": "coordinator", "serde": "group",
            "key": _m("OffsetCommitKey", {"group": group, "topic": topic, "partition": part}, 1), "value": None}


def _generation(group: str, gen: int, members: list[str], ts: int, assignment: str = "") -> dict:
    mems = [{"memberId": m, "groupInstanceId": None, "clientId": f"client-{m}", "clientHost": "/10.0.0.1",
             "rebalanceTimeout": 300000, "sessionTimeout": 45000, "subscription": "", "assignment": assignment}
            for m in members]
    return {"op": "coordinator", "serde": "group", "key": _m("GroupMetadataKey", {"group": group}, 2),
            "value": _m("GroupMetadataValue", {"protocolType": "consumer", "generation": gen,
                                               "protocol": "range" if members else None,
                                               "leader": members[0] if members else None,
                                               "currentStateTimestamp": ts, "members": mems}, 3)}


def _serialise(reqs: list[dict]) -> list[tuple[str, str | None]]:
    answers = oi._records(launcher(), reqs)
    return [(a["key"], a.get("value")) for a in answers]


def _rec(kv: tuple[str, str | None], ts: int) -> dict:
    k, v = kv
    return {"key": {"hex": k}, "value": None if v is None else {"hex": v}, "timestamp": ts}


# The scenario, in log order: (kind, spec, record timestamp). Commit timestamps are the coordinator's clock.
def _scenario(assignment: str) -> list[tuple[str, dict, int]]:
    return [
        ("plain", _generation(GROUP, 1, ["m-1"], T0, assignment), T0),
        ("plain", _commit(GROUP, "orders", 0, 10, T0 + 1000), T0 + 1000),
        ("plain", _commit(GROUP, "orders", 1, 5, T0 + 1000), T0 + 1000),
        ("plain", _commit(GROUP, "orders", 0, 20, T0 + 2000, meta="m"), T0 + 2000),
        ("plain", _commit(GROUP, "orders", 1, 7, T0 + 2000, version=1), T0 + 2000),
        ("plain", _commit(GROUP, "orders", 0, 30, T0 + 3000, epoch=1), T0 + 3000),
        ("plain", _generation(GROUP, 2, [], T0 + 5000), T0 + 5000),
        ("plain", _commit(GROUP, "orders", 0, 0, T0 + 10_000, epoch=1), T0 + 10_000),  # the reset (group Empty)
        ("plain", _commit(GROUP, "orders", 1, 7, T0 + 10_000), T0 + 10_000),
        ("plain", _tombstone(GROUP, "orders", 1), T0 + 12_000),                          # deleted / expired
        ("plain", _generation(GROUP, 3, ["m-2"], T0 + 15_000), T0 + 15_000),
        ("plain", _commit(GROUP, "orders", 0, 15, T0 + 20_000, epoch=1), T0 + 20_000),
        ("txn-abort", _commit(GROUP, "orders", 0, 40, T0 + 21_000, epoch=1), T0 + 21_000),
        ("txn-commit", _commit(GROUP, "orders", 0, 45, T0 + 22_000, epoch=1), T0 + 22_000),
        ("plain", _commit("other-group", "payments", 0, 99, T0 + 23_000), T0 + 23_000),
    ]


@pytest.fixture(scope="module")
def records() -> list[tuple[str, tuple[str, str | None], int]]:
    asg = oi._records(launcher(), [{"op": "versioned", "message": _m(
        "ConsumerProtocolAssignment", {"assignedPartitions": [{"topic": "orders", "partitions": [0, 1]}],
                                       "userData": None}, 0)}])[0]["bytes"]
    scen = _scenario(base64.b64encode(bytes.fromhex(asg)).decode())
    kvs = _serialise([spec for _kind, spec, _ts in scen])
    return [(kind, kv, ts) for (kind, _spec, ts), kv in zip(scen, kvs)]


def _plan(records: list, *, segment_bytes: int | None = None, roll_end: bool = False) -> dict:
    ops: list[dict] = []
    for kind, kv, ts in records:
        if kind == "plain":
            ops.append({"op": "append", "records": [_rec(kv, ts)]})
        else:
            pid = 77 if kind == "txn-abort" else 78
            ops.append({"op": "append", "records": [_rec(kv, ts)], "producerId": pid, "producerEpoch": 0,
                        "transactional": True})
            ops.append({"op": "marker", "type": "ABORT" if kind == "txn-abort" else "COMMIT", "producerId": pid})
    if roll_end:
        ops.append({"op": "roll"})
    config = {"segment.bytes": str(segment_bytes)} if segment_bytes else {}
    return {"topic": "__consumer_offsets", "partition": CP, "config": config, "ops": ops, "shutdown": "clean",
            "startTimeMs": T0}


@pytest.fixture(scope="module")
def scenario_dir(kafka_real, records, tmp_path_factory) -> Path:  # noqa: ANN001
    """broker1/ holding __consumer_offsets-CP as Kafka wrote it (several segments)."""
    out = tmp_path_factory.mktemp("gh") / "broker1"
    write_partition(kafka_real, out, _plan(records, segment_bytes=600, roll_end=True))
    return out


def _timeline(p: gh.PartitionHistory) -> list[tuple]:
    out: list[tuple] = []
    for t in p.timeline:
        if isinstance(t, gh.Range):
            out.append(("range", t.first.offset, t.last.offset, t.commits))
        elif t.kind != "forward":
            out.append((t.kind, t.delta))
    return out


pytestmark = pytest.mark.oracle


def test_history_of_a_reset_a_deletion_and_transactions(scenario_dir: Path) -> None:
    h = gh.history([str(scenario_dir)], GROUP)
    assert h.partitions_read == [CP] and list(h.groups) == [GROUP]
    g = h.groups[GROUP]
    assert g.kind == "classic" and g.protocol_type == "consumer"
    p0, p1 = g.partitions[("orders", 0)], g.partitions[("orders", 1)]
    # orders-0: 10, 20, 30; reset to 0 while the group was Empty; 0, 15 and the committed transaction's 45 (the
    # aborted one's 40 never counts)
    assert _timeline(p0) == [("range", 10, 30, 3), ("reset", -30), ("range", 0, 45, 3)]
    reset = next(t for t in p0.timeline if isinstance(t, gh.Change) and t.kind == "reset")
    assert "Empty" in reset.text and reset.before is not None and reset.before.offset == 30
    assert reset.at is not None and reset.at.partition == CP and reset.at.file.endswith(".log")
    assert p0.current is not None and (p0.current.offset, p0.current.leader_epoch, p0.current.transactional) == (
        45, 1, True)
    assert p0.unknown_before == 0 and p0.resets == 1
    # orders-1: 5, 7 (value v1: no leader epoch), 7 again; then the tombstone
    assert _timeline(p1) == [("range", 5, 7, 3), ("deleted", None)]
    assert p1.current is None and p1.deleted is not None and p1.deleted.time_ms == T0 + 12_000
    gens = [e.data.get("generation") for e in g.events if e.kind == "generation"]
    assert gens == [1, 2, 3]
    assert g.events[0].data["assignment"] == {"orders-0": "m-1", "orders-1": "m-1"}
    assert h.problems() == 2  # one reset, one deletion


def test_positions_at_and_the_reset_csv(scenario_dir: Path, tmp_path: Path) -> None:
    def at(ms: int) -> dict:
        return {(p.topic, p.partition): (p.state, None if p.commit is None else p.commit.offset)
                for p in gh.positions_at(gh.history([str(scenario_dir)], GROUP, ms))}

    assert at(T0 + 500) == {("orders", 0): ("none", None), ("orders", 1): ("none", None)}
    assert at(T0 + 2500) == {("orders", 0): ("committed", 20), ("orders", 1): ("committed", 7)}
    assert at(T0 + 11_000) == {("orders", 0): ("committed", 0), ("orders", 1): ("committed", 7)}
    assert at(T0 + 12_000) == {("orders", 0): ("committed", 0), ("orders", 1): ("deleted", None)}
    assert at(T0 + 21_500) == {("orders", 0): ("committed", 15), ("orders", 1): ("deleted", None)}  # 40 aborted
    csv = tmp_path / "reset.csv"
    r = CliRunner().invoke(cli, ["group-history", GROUP, str(scenario_dir), "--at", str(T0 + 2500),
                                 "--emit-reset", str(csv)])
    assert r.exit_code == 1, r.output  # the history holds a reset and a deletion
    # ConsumerGroupCommand.parseResetPlan: one group -> topic,partition,offset lines, no header
    assert csv.read_text() == "orders,0,20\norders,1,7\n"
    assert "positions at 2023-11-14T22:13:22.500Z:" in r.stdout
    r = CliRunner().invoke(cli, ["group-history", "--all-groups", str(scenario_dir), "--at", str(T0 + 30_000),
                                 "--emit-reset", str(csv)])
    assert csv.read_text() == "orders-app,orders,0,45\nother-group,payments,0,99\n"


def test_json_document(scenario_dir: Path) -> None:
    r = CliRunner().invoke(cli, ["group-history", GROUP, str(scenario_dir), "--format", "json"])
    assert r.exit_code == 1
    doc = json.loads(r.stdout)
    assert doc["schema_version"] == 1 and doc["group"] == GROUP
    (g,) = doc["groups"]
    parts = {(p["topic"], p["partition"]): p for p in g["partitions"]}
    assert parts[("orders", 0)]["current"]["offset"] == 45 and parts[("orders", 1)]["deleted"] is not None
    assert [t["kind"] for t in parts[("orders", 0)]["timeline"] if t["kind"] != "forward"] == ["range", "reset", "range"]


def _cleaned(kafka_real, part: Path, work: Path) -> Path:  # noqa: ANN001
    res = kafka_real.json("Clean", "--in", str(part), "--work", str(work), "--now-ms", str(T0 + 60_000),
                          "--config", "min.compaction.lag.ms=0", "--config", "min.cleanable.dirty.ratio=0.01",
                          "--config", "segment.bytes=600", "--config", "delete.retention.ms=86400000")
    assert not res.get("error"), res
    assert any(p.get("stats") for p in res["passes"]), res["passes"]
    return Path(res["partitionDir"])


def test_compacted_prefix_is_unknown_and_other_copies_fill_it(kafka_real, scenario_dir: Path,  # noqa: ANN001
                                                               tmp_path: Path) -> None:
    part = scenario_dir / f"__consumer_offsets-{CP}"
    cleaned = _cleaned(kafka_real, part, tmp_path / "broker2")
    # the cleaner leaves the replaced segments as .deleted files (asynchronous delete): they still hold every record
    assert any(n.endswith(".log.deleted") for n in os.listdir(cleaned))
    full = gh.history([str(cleaned.parent)], GROUP)
    assert _timeline(full.groups[GROUP].partitions[("orders", 0)]) == [
        ("range", 10, 30, 3), ("reset", -30), ("range", 0, 45, 3)]
    # without the leftovers: what a broker keeps after the delete
    only = tmp_path / "broker3" / cleaned.name
    only.mkdir(parents=True)
    for n in os.listdir(cleaned):
        if not n.endswith(".deleted"):
            shutil.copy(cleaned / n, only / n)
    h = gh.history([str(only.parent)], GROUP, T0 + 2500)
    p0 = h.groups[GROUP].partitions[("orders", 0)]
    # the cleaner keeps the last commit per key (45, the committed transaction's) and drops the rest: the history
    # before it is unknown, and so is the position at T0+2500
    assert p0.unknown_before > 0 and p0.current is not None and p0.current.offset == 45
    assert _timeline(p0) == [("unknown", None), ("range", 45, 45, 1)]
    (pos0,) = [p for p in gh.positions_at(h) if p.partition == 0]
    assert pos0.state == "unknown" and "compacted before" in pos0.text
    # the uncleaned replica and the cleaned one together: the whole history again, each surviving record in 2 copies
    both = gh.history([str(scenario_dir), str(only.parent)], GROUP)
    b0 = both.groups[GROUP].partitions[("orders", 0)]
    assert _timeline(b0) == [("range", 10, 30, 3), ("reset", -30), ("range", 0, 45, 3)]
    assert b0.current is not None and b0.current.at.copies == 2 and not both.conflicts


def test_divergent_copies_are_a_conflict(kafka_real, records, tmp_path: Path) -> None:  # noqa: ANN001
    a = write_partition(kafka_real, tmp_path / "a", _plan(records[:6]))
    changed = list(records[:5]) + [("plain", _serialise([_commit(GROUP, "orders", 0, 31, T0 + 3000)])[0], T0 + 3000)]
    write_partition(kafka_real, tmp_path / "b", _plan(changed))
    h = gh.history([str(a.parent), str(tmp_path / "b")], GROUP)
    assert len(h.conflicts) == 1 and h.conflicts[0].at is not None and h.conflicts[0].at.offset == 5
    assert h.groups[GROUP].partitions[("orders", 0)].current.offset == 30  # type: ignore[union-attr]
    # the other order: the first copy's record (31) is the history, the other is only named: no made-up reset
    h2 = gh.history([str(tmp_path / "b"), str(a.parent)], GROUP)
    p0 = h2.groups[GROUP].partitions[("orders", 0)]
    assert p0.current is not None and p0.current.offset == 31 and p0.resets == 0 and len(h2.conflicts) == 1


def test_data_log_explains_or_not_a_forward_move(kafka_real, records, tmp_path: Path) -> None:  # noqa: ANN001
    ld = tmp_path / "broker"
    write_partition(kafka_real, ld, _plan(records[:6]))
    # orders-0 with LogAppendTime: 40 records, one per second from T0 (the harness clock steps 1000 ms per record)
    data = write_partition(kafka_real, tmp_path / "data", {
        "topic": "orders", "partition": 0, "config": {"message.timestamp.type": "LogAppendTime"},
        "startTimeMs": T0, "timeStepMs": 1000, "ops": [{"op": "append", "count": 1, "batches": 40}],
        "shutdown": "clean"})
    shutil.copytree(data, ld / "orders-0")
    h = gh.history([str(ld)], GROUP)
    p0 = h.groups[GROUP].partitions[("orders", 0)]
    moves = {(t.before.offset if t.before else None, t.after.offset if t.after else None): t
             for t in p0.timeline if isinstance(t, gh.Change) and t.kind in ("forward", "unexplained")}
    # 10 -> 20 committed at T0+2000: record 19 was appended at about T0+19000, after the commit: not consumption
    assert moves[(10, 20)].kind == "unexplained" and "appended at" in moves[(10, 20)].text
    assert p0.unexplained == 2 and h.data_logs[("orders", 0)].timestamp_type == "LogAppendTime"
    # a data log of 15 records: the moves to 20 and 30 are beyond its end; one finding, the move that crossed it
    short = write_partition(kafka_real, tmp_path / "short", {
        "topic": "orders", "partition": 0, "config": {"message.timestamp.type": "LogAppendTime"},
        "startTimeMs": T0 - 100_000, "timeStepMs": 1, "ops": [{"op": "append", "count": 1, "batches": 15}],
        "shutdown": "clean"})
    ld2 = tmp_path / "broker2"
    shutil.copytree(ld / f"__consumer_offsets-{CP}", ld2 / f"__consumer_offsets-{CP}")
    shutil.copytree(short, ld2 / "orders-0")
    s0 = gh.history([str(ld2)], GROUP).groups[GROUP].partitions[("orders", 0)]
    beyond = [t for t in s0.timeline if isinstance(t, gh.Change) and "beyond the data log's end (15" in t.text]
    assert [(t.kind, t.after.offset if t.after else None) for t in beyond] == [("unexplained", 20), ("forward", 30)]
    assert s0.unexplained == 1
    no_data = gh.history([str(ld / f"__consumer_offsets-{CP}")], GROUP)
    q0 = no_data.groups[GROUP].partitions[("orders", 0)]
    assert q0.unexplained == 0 and all("unknowable offline" in t.text for t in q0.timeline
                                       if isinstance(t, gh.Change) and t.kind == "forward")


def test_group_not_here_names_its_partition(scenario_dir: Path) -> None:
    other = "a-group-stored-elsewhere"
    assert partition_for(other) != CP
    r = CliRunner().invoke(cli, ["group-history", other, str(scenario_dir)])
    assert r.exit_code == 2 and f"__consumer_offsets-{partition_for(other)}" in r.stderr
    r = CliRunner().invoke(cli, ["group-history", GROUP, str(scenario_dir / "nope")])
    assert r.exit_code == 2 and "no such file or directory" in r.stderr and "Traceback" not in r.output


# ------------------------------------------------------------------------------------------------ Connect
def _connect_plan(rows: list[tuple[list, dict | None, int]]) -> dict:
    return {"topic": "connect-offsets", "partition": 0, "config": {}, "startTimeMs": T0, "shutdown": "clean",
            "ops": [{"op": "append", "records": [{"key": json.dumps(k, separators=(",", ":")),
                                                  "value": None if v is None else json.dumps(v), "timestamp": ts}]}
                    for k, v, ts in rows]}


def test_connect_source_offsets_and_the_kip875_patch(kafka_real, tmp_path: Path) -> None:  # noqa: ANN001
    a, b = {"filename": "/data/a.txt"}, {"filename": "/data/b.txt"}
    rows = [(["spool", a], {"position": 100}, T0 + 1000), (["spool", b], {"position": 5}, T0 + 1000),
            (["spool", a], {"position": 100}, T0 + 2000), (["spool", a], {"position": 250}, T0 + 3000),
            (["spool", a], {"position": 120}, T0 + 4000),                 # backwards
            (["other", a], {"position": 1}, T0 + 4000), (["spool", b], None, T0 + 5000),  # b reset (KIP-875)
            (["spool", a], {"position": 300}, T0 + 6000), (["not", "a", "key"], {"x": 1}, T0 + 6000)]
    write_partition(kafka_real, tmp_path / "w", _connect_plan(rows))
    h = ch.connect_history([str(tmp_path / "w")], "spool", T0 + 3500)
    parts = h.connectors["spool"]
    pa, pb = parts[cx.partition_id(a)], parts[cx.partition_id(b)]
    assert [(c.kind, c.offset, c.records) for c in pa.changes] == [
        ("offset", {"position": 100}, 2), ("offset", {"position": 250}, 1), ("backward", {"position": 120}, 1),
        ("offset", {"position": 300}, 1)]
    assert [c.kind for c in pb.changes] == ["offset", "tombstone"] and h.ignored == 1
    assert ch.patch_body(h, "spool") == {"offsets": [{"partition": a, "offset": {"position": 250}},
                                                     {"partition": b, "offset": {"position": 5}}]}
    patch = tmp_path / "patch.json"
    r = CliRunner().invoke(cli, ["group-history", "--connect", "spool", str(tmp_path / "w"), "--at", str(T0 + 500),
                                 "--emit-connect-patch", str(patch)])
    assert r.exit_code == 1, r.output
    # before the first offsets: null resets each partition (ConnectorOffset with a null offset)
    assert json.loads(patch.read_text()) == {"offsets": [{"partition": a, "offset": None},
                                                         {"partition": b, "offset": None}]}


# ------------------------------------------------------------------------------------------------ real data
_LINE = re.compile(r"^\| offset: (\d+) .* key: (\{.*?\}) payload: (.*)$")


def _real_offsets_partitions(limit: int = 10) -> list[Path]:
    root = realdata_root()
    if not root.is_dir():
        pytest.skip(f"no real data at {root}")
    found = sorted((p.stat().st_size, str(p.parent)) for p in Path(root).glob("**/__consumer_offsets-*/0*.log")
                   if p.stat().st_size > 2000)
    return [Path(d) for _s, d in found[-limit:]]


def test_real_partitions_agree_with_kafkas_decoding(kafka_real) -> None:  # noqa: ANN001
    """Per key, the commits in log order as Kafka's DumpLogSegments --offsets-decoder decodes them: the engine's
    commit count, resets (a commit below the previous one), current offset and deletion agree."""
    checked = 0
    for d in _real_offsets_partitions():
        files = sorted(str(f) for f in d.glob("*.log"))
        out = kafka_real.batch("Dump", "--files", ",".join(files), "--offsets-decoder")
        assert out.rc == 0
        kafka: dict[tuple[str, str, int], list[int | None]] = {}
        for line in out.stdout.decode().splitlines():
            m = _LINE.match(line)
            if not m:
                continue
            key = json.loads(m.group(2))
            if key.get("type") not in ("0", "1"):
                continue
            k = (key["data"]["group"], key["data"]["topic"], key["data"]["partition"])
            payload = m.group(3)
            kafka.setdefault(k, []).append(None if payload == "<DELETE>" else json.loads(payload)["data"]["offset"])
        h = gh.history([str(d)])
        ours = {(g, t, p): ph for g, grp in h.groups.items() for (t, p), ph in grp.partitions.items()}
        assert set(ours) == set(kafka), d
        for k, seq in kafka.items():
            ph = ours[k]
            commits = [o for o in seq if o is not None]
            assert ph.commits == len(commits), (d, k)
            resets = 0
            prev: int | None = None
            for o in seq:  # a commit below the previous commit counts, across a tombstone too
                if o is not None:
                    resets += prev is not None and o < prev
                    prev = o
            assert ph.resets == resets, (d, k)
            assert (None if ph.current is None else ph.current.offset) == seq[-1], (d, k)
            assert (ph.deleted is not None) == (seq[-1] is None), (d, k)
        checked += 1
    assert checked


def test_the_sample_fixture_decodes_as_kafka_decodes_it(kafka_real) -> None:  # noqa: ANN001
    """fixtures/groups is written by kafkalog's encoder (scripts/make_group_fixture.py): Kafka's own DumpLogSegments
    --offsets-decoder prints its records exactly as kafkalog does, so the sample is what a broker would have."""
    import dump_oracle as do

    root = Path(__file__).resolve().parent.parent / "fixtures" / "groups"
    (f,) = sorted(root.glob("__consumer_offsets-*/*.log"))
    assert do.compare(kafka_real, ["--files", str(f), "--offsets-decoder"]) is None
    h = gh.history([str(root)], GROUP)
    p0 = h.groups[GROUP].partitions[("orders", 0)]
    assert _timeline(p0) == [("range", 2, 10, 5), ("reset", -10), ("range", 0, 4, 2)]


def _member(group: str, member: str, client: str | None) -> dict:
    key = _m("ConsumerGroupMemberMetadataKey", {"groupId": group, "memberId": member}, 5)
    value = None if client is None else _m("ConsumerGroupMemberMetadataValue", {
        "instanceId": None, "rackId": None, "clientId": client, "clientHost": "/10.0.0.9",
        "subscribedTopicNames": ["orders"], "subscribedTopicRegex": None, "rebalanceTimeoutMs": 30000,
        "serverAssignor": "uniform"})
    return {"op": "coordinator", "serde": "group", "key": key, "value": value}


def _epoch(group: str, epoch: int) -> dict:
    return {"op": "coordinator", "serde": "group", "key": _m("ConsumerGroupMetadataKey", {"groupId": group}, 3),
            "value": _m("ConsumerGroupMetadataValue", {"epoch": epoch})}


def test_new_protocol_group_epochs_and_members(kafka_real, tmp_path: Path) -> None:  # noqa: ANN001
    """A KIP-848 consumer group: group epochs (ConsumerGroupMetadata, type 3), members joining and leaving
    (ConsumerGroupMemberMetadata, type 5, a tombstone when a member leaves), and its offset commits."""
    g = "cg-new"
    specs = [_member(g, "m-1", "c1"), _epoch(g, 1), _commit(g, "orders", 0, 50, T0 + 1000),
             _member(g, "m-2", "c2"), _epoch(g, 2), _member(g, "m-1", None), _epoch(g, 3),
             _commit(g, "orders", 0, 20, T0 + 5000)]
    kvs = _serialise(specs)
    plan = {"topic": "__consumer_offsets", "partition": partition_for(g), "config": {}, "startTimeMs": T0,
            "shutdown": "clean", "ops": [{"op": "append", "records": [_rec(kv, T0 + i)]} for i, kv in enumerate(kvs)]}
    write_partition(kafka_real, tmp_path / "b", plan)
    h = gh.history([str(tmp_path / "b")], g)
    grp = h.groups[g]
    assert grp.kind == "consumer"
    assert [(e.kind, e.data.get("epoch", e.data.get("member_id"))) for e in grp.events] == [
        ("member-joined", "m-1"), ("group-epoch", 1), ("member-joined", "m-2"), ("group-epoch", 2),
        ("member-left", "m-1"), ("group-epoch", 3)]
    (reset,) = [t for t in grp.partitions[("orders", 0)].timeline if isinstance(t, gh.Change) and t.kind == "reset"]
    assert reset.delta == -30 and "consumer group, epoch 3, 1 member(s)" in reset.text
