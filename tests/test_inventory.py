"""``kafkalog inventory``: one scenario log dir per class, with the broker behaviour cited in ops/inventory.py."""

from __future__ import annotations

import json
import os
import sys

from click.testing import CliRunner

sys.path.insert(0, os.path.dirname(__file__))
import metadata_gen as gen  # noqa: E402

from kafkalog_cli.cli.main import cli  # noqa: E402

CLUSTER = "MkU3OEVBNTcwNTJENDM2Qg"
TA, TB, TOLD, TGONE = "AAAAAAAAAAAAAAAAAAAAEA", "AAAAAAAAAAAAAAAAAAAAIA", "AAAAAAAAAAAAAAAAAAAAMA", "AAAAAAAAAAAAAAAAAAAAQA"
DIR1, DIR2, DIR9 = "AAAAAAAAAAAAAAAAAAABAA", "AAAAAAAAAAAAAAAAAAACAA", "AAAAAAAAAAAAAAAAAAAJAA"


def _part(tid, p, replicas, dirs, leader=None):
    return gen.msg("PartitionRecord", 1, {
        "partitionId": p, "topicId": tid, "replicas": replicas, "isr": replicas, "removingReplicas": [],
        "addingReplicas": [], "leader": replicas[0] if leader is None else leader, "leaderEpoch": 0,
        "partitionEpoch": 0, "directories": dirs})


def _metadata(root):
    """A controller's metadata.log.dir: topic a (id TA: a-0 on 1,2 in DIR1; a-1 on 2,3; a-2 on 1 only, in DIR2;
    a-3 on 1,2 in DIR1), topic b (id TB, recreated: the old id TOLD was removed), gone (TGONE) removed."""
    recs = [
        gen.msg("FeatureLevelRecord", 0, {"name": "metadata.version", "featureLevel": 19}),
        gen.msg("TopicRecord", 0, {"name": "a", "topicId": TA}),
        _part(TA, 0, [1, 2], [DIR1, DIR9]),
        _part(TA, 1, [2, 3], [DIR9, DIR9]),
        _part(TA, 2, [1], [DIR2]),
        _part(TA, 3, [1, 2], [DIR1, DIR9]),
        gen.msg("TopicRecord", 0, {"name": "b", "topicId": TOLD}),
        _part(TOLD, 0, [1], [DIR1]),
        gen.msg("RemoveTopicRecord", 0, {"topicId": TOLD}),
        gen.msg("TopicRecord", 0, {"name": "b", "topicId": TB}),
        _part(TB, 0, [1], [DIR1]),
        gen.msg("TopicRecord", 0, {"name": "gone", "topicId": TGONE}),
        _part(TGONE, 0, [1], [DIR1]),
        gen.msg("RemoveTopicRecord", 0, {"topicId": TGONE}),
    ]
    os.makedirs(root)
    _props(root, node=9, directory=None)
    gen.write_log(os.path.join(root, "__cluster_metadata-0"), gen.encode(recs))
    return root


def _props(log_dir, node=1, directory=DIR1, cluster=CLUSTER, version=1):
    os.makedirs(log_dir, exist_ok=True)
    lines = [f"version={version}", f"node.id={node}"]
    if cluster:
        lines.append(f"cluster.id={cluster}")
    if directory:
        lines.append(f"directory.id={directory}")
    with open(os.path.join(log_dir, "meta.properties"), "w") as f:
        f.write("#\n" + "\n".join(lines) + "\n")


def _pdir(log_dir, name, tid=None):
    d = os.path.join(log_dir, name)
    os.makedirs(d)
    open(os.path.join(d, f"{0:020d}.log"), "wb").close()
    if tid:
        with open(os.path.join(d, "partition.metadata"), "w") as f:
            f.write(f"version: 0\ntopic_id: {tid}\n")
    return d


def _run(*args):
    r = CliRunner().invoke(cli, ["inventory", *args, "--format", "json", "--all"])
    return r.exit_code, (json.loads(r.output) if r.output.startswith("{") else r.output)


def _classes(doc):
    return {(i["topic"], i["partition"]): i["class"] for i in doc["items"] if i["class"] != "meta-properties"}


def test_every_class_against_the_image(tmp_path):
    meta = _metadata(str(tmp_path / "meta"))
    d1, d2 = str(tmp_path / "d1"), str(tmp_path / "d2")
    _props(d1, directory=DIR1)
    _props(d2, directory=DIR2)
    _pdir(d1, "a-0", TA)                      # expected (DIR1 assigned)
    _pdir(d1, "a-1", TA)                      # not a replica here -> stray-unassigned
    _pdir(d1, "a-2", TA)                      # assigned DIR2, lives in DIR1 -> wrong-directory
    _pdir(d1, "b-0", TOLD)                    # recreated topic -> topic-id-mismatch
    _pdir(d1, "gone-0", TGONE)                # deleted topic -> stray-deleted
    _pdir(d2, "a-3")                          # no partition.metadata
    _pdir(d1, "a-9", TA)                      # a partition the topic does not have -> stray-unassigned
    _pdir(d1, "a-0.0123456789abcdef0123456789abcdef-delete", TA)
    _pdir(d2, "b-0.0123456789abcdef0123456789abcdef-stray", TOLD)
    _pdir(d2, "a-0.0123456789abcdef0123456789abcdef-future", TA)
    rc, doc = _run(d1, d2, "--metadata", meta)
    assert rc == 1, doc
    cls = _classes(doc)
    assert cls[("a", 0)] in ("expected", "leftover-delete", "leftover-future")
    got = {}
    for i in doc["items"]:
        got.setdefault((i["topic"], i["partition"]), set()).add(i["class"])
    assert "expected" in got[("a", 0)] and {"leftover-delete", "leftover-future"} <= got[("a", 0)]
    assert got[("a", 1)] == {"stray-unassigned"}
    assert got[("a", 2)] == {"wrong-directory"}
    assert got[("b", 0)] == {"topic-id-mismatch", "leftover-stray"}
    assert got[("gone", 0)] == {"stray-deleted"}
    assert got[("a", 3)] == {"missing-partition-metadata"}
    assert got[("a", 9)] == {"stray-unassigned"}
    fix = next(i for i in doc["items"] if i["class"] == "missing-partition-metadata")
    assert fix["fix"] == f"version: 0\ntopic_id: {TA}\n" and "-stray" in fix["broker_action"]
    assert all(i["broker_action"] and i["next_step"] for i in doc["items"])
    # b-0 of the new topic TB is assigned to broker 1 and absent (its old copy is stray): missing
    os.rename(os.path.join(d1, "b-0"), str(tmp_path / "away"))
    rc, doc = _run(d1, d2, "--metadata", meta)
    m = [i for i in doc["items"] if i["class"] == "missing"]
    assert [(i["topic"], i["partition"]) for i in m] == [("b", 0)]
    assert "ONLY IN-SYNC REPLICA" in m[0]["detail"] and m[0]["path"].startswith(d1)


def test_duplicate_copies_stop_the_broker(tmp_path):
    meta = _metadata(str(tmp_path / "meta"))
    d1, d2 = str(tmp_path / "d1"), str(tmp_path / "d2")
    _props(d1, directory=DIR1)
    _props(d2, directory=DIR2)
    _pdir(d1, "a-0", TA)
    _pdir(d2, "a-0", TA)
    rc, doc = _run(d1, d2, "--metadata", meta)
    dup = [i for i in doc["items"] if i["class"] == "duplicate"]
    assert rc == 1 and len(dup) == 1 and "Duplicate log directories" in dup[0]["broker_action"]


def test_meta_properties_checks(tmp_path):
    meta = _metadata(str(tmp_path / "meta"))
    d1, d2, d3 = str(tmp_path / "d1"), str(tmp_path / "d2"), str(tmp_path / "d3")
    _props(d1, directory=DIR1, cluster="OtherClusterIdAAAAAAAA")
    _props(d2, node=2, directory=DIR1)
    _props(d3, directory=None, cluster=None)
    rc, doc = _run(d1, d2, d3, "--metadata", meta)
    texts = [i["detail"] for i in doc["items"] if i["class"] == "meta-properties"]
    assert rc == 1
    assert any("Invalid cluster.id in" in t for t in texts)
    assert any("is not the quorum's" in t and "do not wipe" in t for t in texts)
    assert any("Stored node id 2 doesn't match previous node id 1" in t for t in texts)
    assert any("Duplicate directory ID" in t for t in texts)
    assert any("cluster.id was not specified in the v1 file" in t for t in texts)


def test_clean_broker_exits_0_and_without_metadata_checks_dirs_against_each_other(tmp_path):
    meta = _metadata(str(tmp_path / "meta"))
    d1 = str(tmp_path / "d1")
    _props(d1, directory=DIR1)
    _pdir(d1, "a-0", TA)
    _pdir(d1, "a-3", TA)
    _pdir(d1, "b-0", TB)
    d2 = str(tmp_path / "d2")
    _props(d2, directory=DIR2)
    _pdir(d2, "a-2", TA)
    rc, doc = _run(d1, d2, "--metadata", meta)
    assert rc == 0 and set(_classes(doc).values()) == {"expected"}, doc
    # no metadata: two copies of topic x with different ids, one without partition.metadata
    d3, d4 = str(tmp_path / "d3"), str(tmp_path / "d4")
    _props(d3, directory=DIR1)
    _props(d4, directory=DIR2)
    _pdir(d3, "x-0", TA)
    _pdir(d4, "x-1", TB)
    _pdir(d4, "y-0")
    rc, doc = _run(d3, d4)
    cls = [i["class"] for i in doc["items"]]
    assert rc == 1 and "topic-id-mismatch" in cls and "missing-partition-metadata" in cls and "present" in cls
    r = CliRunner().invoke(cli, ["inventory", str(tmp_path / "nope")])
    assert r.exit_code == 2


def test_text_report_names_broker_action_and_next_step(tmp_path):
    meta = _metadata(str(tmp_path / "meta"))
    d1 = str(tmp_path / "d1")
    _props(d1, directory=DIR1)
    _pdir(d1, "gone-0", TGONE)
    r = CliRunner().invoke(cli, ["inventory", d1, "--metadata", meta])
    assert r.exit_code == 1
    assert "problem: stray-deleted" in r.output and "broker at start-up: renames it" in r.output
    assert "next:" in r.output
