"""The metadata replay: Kafka's per-record rules, points in time, snapshots, damage, diff, history, the command."""

from __future__ import annotations

import json
import os
import sys

import pytest
from click.testing import CliRunner

sys.path.insert(0, os.path.dirname(__file__))
import metadata_gen as gen  # noqa: E402
from realdata_path import REALDATA  # noqa: E402

from kafkalog_cli.cli.main import cli  # noqa: E402
from kafkalog_cli.format import control  # noqa: E402
from kafkalog_cli.format.encoder import RecordSpec, encode_batch  # noqa: E402
from kafkalog_cli.internal_topics.metadata_image import MIGRATING, Replayer  # noqa: E402
from kafkalog_cli.ops import metadata as md  # noqa: E402

T1 = "AAAAAAAAAAAAAAAAAAAAEA"
T2 = "AAAAAAAAAAAAAAAAAAAAIA"
D1 = "AAAAAAAAAAAAAAAAAAAAMA"


def _topic(rep: Replayer, name: str = "a", tid: str = T1, off: int = 0) -> None:
    rep.apply("TOPIC_RECORD", {"name": name, "topicId": tid}, off, None)
    rep.apply("PARTITION_RECORD", {"partitionId": 0, "topicId": tid, "replicas": [1, 2, 3], "isr": [1, 2, 3],
                                   "removingReplicas": [], "addingReplicas": [], "leader": 1, "leaderEpoch": 4,
                                   "partitionEpoch": 9, "directories": []}, off + 1, None)


def test_partition_change_merge_rules():
    """PartitionRegistration.merge: null keeps, leader -2 keeps leader and its epoch, any change bumps the partition
    epoch, a new leader (even -1) bumps the leader epoch, directories default to MIGRATING per replica."""
    rep = Replayer()
    _topic(rep)
    p = rep.image.topics[T1].partitions[0]
    assert p.directories == [MIGRATING] * 3 and p.leader_recovery_state == 0
    rep.apply("PARTITION_CHANGE_RECORD", {"partitionId": 0, "topicId": T1, "isr": [1, 2], "leader": -2,
                                          "leaderRecoveryState": -1}, 2, None)
    p = rep.image.topics[T1].partitions[0]
    assert (p.isr, p.leader, p.leader_epoch, p.partition_epoch) == ([1, 2], 1, 4, 10)
    rep.apply("PARTITION_CHANGE_RECORD", {"partitionId": 0, "topicId": T1, "leader": -1,
                                          "eligibleLeaderReplicas": [2], "lastKnownElr": [1]}, 3, None)
    p = rep.image.topics[T1].partitions[0]
    assert (p.isr, p.leader, p.leader_epoch, p.partition_epoch, p.elr, p.last_known_elr) == ([1, 2], -1, 5, 11, [2], [1])
    rep.apply("PARTITION_CHANGE_RECORD", {"partitionId": 0, "topicId": T1, "replicas": [1, 2],
                                          "directories": [D1, D1]}, 4, None)
    p = rep.image.topics[T1].partitions[0]
    assert p.replicas == [1, 2] and p.directories == [D1, D1] and p.directory_of(2) == D1
    assert rep.problems == []


def test_refused_records_are_problems_and_change_nothing():
    rep = Replayer()
    _topic(rep)
    rep.apply("PARTITION_CHANGE_RECORD", {"partitionId": 7, "topicId": T1, "leader": 2}, 5, None)
    rep.apply("REMOVE_TOPIC_RECORD", {"topicId": T2}, 6, None)
    rep.apply("REGISTER_BROKER_RECORD", {"brokerId": 1, "brokerEpoch": 10, "incarnationId": T2, "fenced": True,
                                         "endPoints": [], "features": []}, 7, None)
    rep.apply("UNFENCE_BROKER_RECORD", {"id": 1, "epoch": 11}, 8, None)
    rep.apply("PARTITION_CHANGE_RECORD", {"partitionId": 0, "topicId": T1, "replicas": [1], "directories": [D1, D1]},
              9, None)
    assert [p.offset for p in rep.problems] == [5, 6, 8, 9]
    assert "Unable to find partition" in rep.problems[0].message
    assert "no such topic found" in rep.problems[1].message
    assert "did not match the current broker epoch, 10" in rep.problems[2].message
    assert rep.image.brokers[1].fenced and rep.image.topics[T1].partitions[0].replicas == [1, 2, 3]


def test_remove_topic_takes_its_configs_and_name_recreated_with_new_id():
    rep = Replayer()
    _topic(rep)
    rep.apply("CONFIG_RECORD", {"resourceType": 2, "resourceName": "a", "name": "retention.ms", "value": "1"}, 2, None)
    rep.apply("REMOVE_TOPIC_RECORD", {"topicId": T1}, 3, None)
    assert rep.image.configs == {} and rep.image.topics == {}
    _topic(rep, tid=T2, off=4)
    assert rep.image.topic_by_name("a").topic_id == T2


def test_metadata_transactions():
    """MetadataBatchLoader: records inside Begin..End are applied at the End; Abort drops them; a point inside an
    open transaction sees the image before it."""
    rep = Replayer()
    rep.apply("BEGIN_TRANSACTION_RECORD", {"name": "x"}, 0, None)
    _topic(rep, off=1)
    assert rep.image.topics == {} and rep.in_transaction
    rep.apply("END_TRANSACTION_RECORD", {}, 3, None)
    assert T1 in rep.image.topics
    rep.apply("BEGIN_TRANSACTION_RECORD", {"name": "y"}, 4, None)
    _topic(rep, "b", T2, off=5)
    rep.apply("ABORT_TRANSACTION_RECORD", {"reason": "z"}, 7, None)
    assert T2 not in rep.image.topics and not rep.in_transaction


def _log(tmp_path, seed=3, steps=200, per_batch=2):
    c = gen.Cluster(seed)
    for _ in range(steps):
        c.step()
    d = str(tmp_path / "__cluster_metadata-0")
    gen.write_log(d, gen.encode(c.records), per_batch=per_batch)
    return c, d


def _snapshot_file(d: str, end: int, records: list[dict], ts: int) -> str:
    """A ``.checkpoint`` as a controller writes it: header, the records, footer (our encoder)."""
    path = os.path.join(d, f"{end:020d}-{0:010d}.checkpoint")
    hdr = control.encode_kraft_control(control.SNAPSHOT_HEADER, {"version": 0, "lastContainedLogTimestamp": ts})
    ftr = control.encode_kraft_control(control.SNAPSHOT_FOOTER, {"version": 0})
    vals = gen.encode(records)
    with open(path, "wb") as f:
        f.write(encode_batch([RecordSpec(control.encode_control_key(control.SNAPSHOT_HEADER), hdr)], control=True,
                             base_offset=end, base_timestamp=ts))
        f.write(encode_batch([RecordSpec(None, v) for v in vals], base_offset=end, base_timestamp=ts))
        f.write(encode_batch([RecordSpec(control.encode_control_key(control.SNAPSHOT_FOOTER), ftr)], control=True,
                             base_offset=end + len(vals), base_timestamp=ts))
    return path


def test_replay_equals_the_model_and_points(tmp_path):
    c = gen.Cluster(11)
    cuts = []
    for i in range(300):
        c.step()
        if i in (50, 150):
            cuts.append((len(c.records), c.snapshot_records()))
    d = str(tmp_path / "__cluster_metadata-0")
    gen.write_log(d, gen.encode(c.records), per_batch=1)
    model = Replayer()
    for i, r in enumerate(c.snapshot_records()):
        t, data = md._decode_value(gen.encode([r])[0])
        model.apply(t, data, i, None)
    end = md.load(d)
    assert end.clean and md.diff(end.image, model.image, quorum=False) == []
    for n, recs in cuts:
        _snapshot_file(d, n, recs, 1_700_000_000_000 + n - 1)
    assert [ch for _s, ch in md.check_snapshots(d)] == [[], []]
    at = md.load(d, md.Point(offset=cuts[1][0] - 1))
    assert at.snapshot is not None and at.snapshot.end_offset == cuts[1][0] and at.records == 0
    before = md.load(d, md.Point(offset=cuts[1][0] - 2))  # one record short of the second snapshot: the first one
    assert before.snapshot is not None and before.snapshot.end_offset == cuts[0][0]
    assert before.image.offset == cuts[1][0] - 2
    by_time = md.load(d, md.Point(time_ms=1_700_000_000_000 + cuts[0][0] - 1))  # record times: time0 + offset
    assert by_time.snapshot.end_offset == cuts[0][0] and by_time.image.offset == cuts[0][0] - 1


def test_damaged_batch_is_a_located_finding(tmp_path):
    _c, d = _log(tmp_path)
    seg = os.path.join(d, f"{0:020d}.log")
    data = bytearray(open(seg, "rb").read())
    data[len(data) // 2] ^= 0xFF
    open(seg, "wb").write(bytes(data))
    loaded = md.load(d)
    assert loaded.findings and loaded.findings[0].file == seg and loaded.findings[0].position is not None
    r = CliRunner().invoke(cli, ["metadata", d])
    assert r.exit_code == 1 and "problem:" in r.output and "CRC mismatch" in r.output


def test_gap_after_snapshot_is_reported(tmp_path):
    c, d = _log(tmp_path, steps=80)
    n = len(c.records)
    _snapshot_file(d, 10, c.snapshot_records(), 1)  # content does not matter here
    os.rename(os.path.join(d, f"{0:020d}.log"), os.path.join(tmp_path, "old.log"))
    gen.write_log(d, gen.encode(c.records)[20:], start=20)
    loaded = md.load(d)
    assert any("no records 10..19" in f.message for f in loaded.findings), loaded.findings
    assert loaded.log_end == n


def test_cli_summary_json_diff_history(tmp_path):
    c, d = _log(tmp_path, seed=5, steps=250)
    runner = CliRunner()
    with open(os.path.join(d, "quorum-state"), "w") as f:
        f.write('{"clusterId":"","leaderId":2,"leaderEpoch":25,"votedId":-1,"appliedOffset":0,'
                '"currentVoters":[{"voterId":2}],"data_version":0}')
    r = runner.invoke(cli, ["metadata", str(tmp_path)])
    assert r.exit_code == 0, r.output
    assert "quorum-state file (now, not at the point): leader 2 epoch 25, voters 2" in r.output
    assert "metadata.version: 3.7-IV4 (level 19)" in r.output and "brokers: 3 registered" in r.output
    doc = json.loads(runner.invoke(cli, ["metadata", d, "--format", "json"]).output)
    assert set(doc["image"]["topics"]) == set(c.topics)
    name = sorted(c.topics)[0]
    r = runner.invoke(cli, ["metadata", d, "--partitions", "--topic", name])
    assert f"topic {name} id {c.topics[name]['id']}" in r.output
    r = runner.invoke(cli, ["metadata", d, "--diff", "10", str(len(c.records) - 1)])
    assert r.exit_code == 0 and "topic " in r.output
    h = json.loads(runner.invoke(cli, ["metadata", d, "--history", f"{name}-0", "--format", "json"]).output)
    last = [e for e in h["events"] if e["topic_id"] == c.topics[name]["id"]][-1]
    assert last["state"]["leader_epoch"] == c.topics[name]["parts"][0]["leaderEpoch"]
    assert last["state"]["isr"] == c.topics[name]["parts"][0]["isr"]
    r = runner.invoke(cli, ["metadata", str(tmp_path / "nothing")])
    assert r.exit_code == 2 and "no such file" in r.output


def test_realdata_snapshots_equal_the_replayed_log():
    """Real brokers' __cluster_metadata: each .checkpoint Kafka wrote equals the log replayed up to it."""
    dirs = sorted(p for p in REALDATA.glob("**/__cluster_metadata-0") if p.is_dir())
    if not dirs:
        pytest.skip("no real __cluster_metadata partitions")
    checked = 0
    for d in dirs:
        for snap, changes in md.check_snapshots(str(d)):
            if changes is None:
                continue
            assert changes == [], (snap.path, [c.as_dict() for c in changes][:3])
            checked += 1
        assert md.load(str(d)).problems == [], d
    assert checked >= 5


def test_json_documents_are_snake_case_and_versioned(tmp_path):
    """The one JSON convention (render/jsondoc.py): snake_case keys of ours, schema_version in every document;
    names from the cluster (topics, configs, features) and Kafka's record fields inside ACLs/endpoints are data."""
    import re

    from kafkalog_cli.render.jsondoc import SCHEMA_VERSION

    c, d = _log(tmp_path, seed=8, steps=120)
    name = sorted(c.topics)[0]
    runner = CliRunner()
    camel = re.compile(r"[a-z][A-Z]")
    for args in (["metadata", d], ["metadata", d, "--diff", "5", "60"], ["metadata", d, "--history", name],
                 ["metadata", d, "--check-snapshots"], ["inventory", str(tmp_path), "--metadata", d]):
        r = runner.invoke(cli, [*args, "--format", "json"])
        assert r.exit_code in (0, 1), (args, r.output)
        doc = json.loads(r.output)
        assert doc["schema_version"] == SCHEMA_VERSION, args
        keys: list[str] = []

        def walk(v, data=False, keys=keys):
            if isinstance(v, dict):
                for k, x in v.items():
                    if not data:
                        keys.append(k)
                    # maps keyed by cluster names, and Kafka's own record fields, are data
                    walk(x, data or k in ("topics", "configs", "features", "brokers", "acls", "partitions",
                                          "endpoints", "end_points", "controllers", "before", "after", "counts",
                                          "meta_properties", "delegation_tokens", "client_quotas"), keys)
            elif isinstance(v, list):
                for x in v:
                    walk(x, data, keys)
        walk(doc)
        assert not [k for k in keys if camel.search(k)], (args, [k for k in keys if camel.search(k)])


def test_diff_and_history_across_a_recreated_topic(tmp_path):
    """A topic deleted and recreated under its name: --diff says recreated (old id -> new id); --history follows the
    name across both ids, with the removal in between."""
    recs = [gen.msg("TopicRecord", 0, {"name": "orders", "topicId": T1}),
            gen.msg("PartitionRecord", 1, {"partitionId": 0, "topicId": T1, "replicas": [1, 2], "isr": [1, 2],
                                           "removingReplicas": [], "addingReplicas": [], "leader": 1,
                                           "leaderEpoch": 0, "partitionEpoch": 0, "directories": []}),
            gen.msg("PartitionChangeRecord", 1, {"partitionId": 0, "topicId": T1, "leader": 2}),
            gen.msg("RemoveTopicRecord", 0, {"topicId": T1}),
            gen.msg("TopicRecord", 0, {"name": "orders", "topicId": T2}),
            gen.msg("PartitionRecord", 1, {"partitionId": 0, "topicId": T2, "replicas": [3], "isr": [3],
                                           "removingReplicas": [], "addingReplicas": [], "leader": 3,
                                           "leaderEpoch": 0, "partitionEpoch": 0, "directories": []})]
    d = str(tmp_path / "__cluster_metadata-0")
    gen.write_log(d, gen.encode(recs))
    _la, _lb, changes = md.diff_points(d, md.Point(offset=2), md.Point(offset=5))
    assert [(c.area, c.name, c.kind, c.before, c.after) for c in changes] == [("topic", "orders", "recreated", T1, T2)]
    _loaded, events, topic, part = md.history(d, "orders-0")
    assert (topic, part) == ("orders", 0)
    assert [(e.offset, e.topic_id, None if e.state is None else e.state["leader"]) for e in events] == [
        (1, T1, 1), (2, T1, 2), (3, T1, None), (5, T2, 3)]
    assert events[1].changed == ["leader", "leader_epoch", "partition_epoch"]
