"""The compiled metadata replay (``_accel.metadata_apply``, ``internal_topics/metadata_fast.CompiledReplay``) gives the
image the pure-Python replay gives (``KAFKALOG_NO_ACCEL=1``), record for record: over the bench's generated log at a
reduced size, generated cluster histories (deletes, recreations, ELR, directories, metadata transactions), points
and snapshots inside batches, crafted records it must leave to Python, mutated records, and every real KRaft
``__cluster_metadata-0`` in the fixtures and ``../shared/realdata``."""

from __future__ import annotations

import os
import random
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "bench"))
import metadata_bench  # noqa: E402
import metadata_gen as gen  # noqa: E402
from realdata_path import REALDATA  # noqa: E402
from test_metadata_replay import _snapshot_file  # noqa: E402

from kafkalog_cli.format.batch import LOG_APPEND_TIME  # noqa: E402
from kafkalog_cli.format.encoder import RecordSpec, encode_batch  # noqa: E402
from kafkalog_cli.internal_topics import metadata_fast  # noqa: E402
from kafkalog_cli.internal_topics import schemas_metadata as sm  # noqa: E402
from kafkalog_cli.internal_topics.cluster_metadata import encode_frame  # noqa: E402
from kafkalog_cli.internal_topics.metadata_image import Replayer  # noqa: E402
from kafkalog_cli.ops import metadata as md  # noqa: E402

needs_accel = pytest.mark.skipif(not metadata_fast.accel_enabled(), reason="accelerator not built (or turned off)")

ROOT = Path(__file__).resolve().parent.parent
T1 = "AAAAAAAAAAEAAAAAAAAAAQ"
T2 = "AAAAAAAAAAEAAAAAAAAAAg"
D1 = "AAAAAAAAAAIAAAAAAAAAAQ"


def _facts(loaded: md.Loaded) -> dict[str, Any]:
    im = loaded.image
    return {"state": im.state(), "quorum": im.quorum(), "offset": im.offset, "time": im.time_ms,
            "records": loaded.records, "snapshot_records": loaded.snapshot_records, "log_end": loaded.log_end,
            "findings": [f.as_dict() for f in loaded.findings], "problems": [p.as_dict() for p in loaded.problems],
            "notes": loaded.notes, "open": loaded.open_transaction,
            # the partitions' dict order is part of the image (state() sorts it)
            "order": [(t.topic_id, list(t.partitions)) for t in im.topics.values()], "names": list(im.names)}


def _both(monkeypatch: pytest.MonkeyPatch, d: str, point: md.Point = md.END, **kw: Any) -> dict[str, Any]:
    monkeypatch.delenv("KAFKALOG_NO_ACCEL", raising=False)
    fast = _facts(md.load(d, point, **kw))
    monkeypatch.setenv("KAFKALOG_NO_ACCEL", "1")
    ref = _facts(md.load(d, point, **kw))
    monkeypatch.delenv("KAFKALOG_NO_ACCEL")
    assert fast == ref, (d, point)
    return fast


def _applied(d: str) -> tuple[int, int]:
    """(records the compiled path applied, records left to Python) over the log of ``d``."""
    rep = Replayer()
    fast = metadata_fast.compiled_replay(rep, list(md.BY_KEY.values()), md.enum_name)
    assert fast is not None
    applied = python = 0
    for _base, path in md.log_segments(d):
        for item in md.read_items(path, [], 0, md.END, fast):
            if isinstance(item, md.Applied):
                applied += item.records
            else:
                md._apply(rep, item)
                python += 1
    return applied, python


@needs_accel
def test_bench_log_both_ways_and_on_the_compiled_path(tmp_path, monkeypatch):
    d = str(tmp_path / "__cluster_metadata-0")
    metadata_bench.generate(d, 30_000, 3_000)
    got = _both(monkeypatch, d)
    assert got["records"] == 30_000 and not got["problems"] and not got["findings"]
    applied, python = _applied(d)
    assert python == 7 and applied == 30_000 - 7  # all but the FeatureLevelRecord and the broker registrations
    for off in (5, 99, 100, 3_456, 29_999):  # points inside and at the edges of 100-record batches
        assert _both(monkeypatch, d, md.Point(offset=off))["offset"] == off
    _both(monkeypatch, d, md.Point(time_ms=1_700_000_000_000 + 12_345))


@needs_accel
@pytest.mark.parametrize("seed,per_batch", [(1, 1), (2, 3), (3, 17), (4, 64), (5, 500)])
def test_generated_histories_both_ways(tmp_path, monkeypatch, seed, per_batch):
    c = gen.Cluster(seed)
    for _ in range(400):
        c.step()
    d = str(tmp_path / "__cluster_metadata-0")
    values = gen.encode(c.records)
    gen.write_log(d, values, per_batch=per_batch)
    _both(monkeypatch, d)
    rng = random.Random(seed)
    for off in sorted(rng.sample(range(len(values)), 6)):
        _both(monkeypatch, d, md.Point(offset=off))
        _both(monkeypatch, d, md.Point(time_ms=1_700_000_000_000 + off))
    # a snapshot whose end falls inside a batch: the log's replay starts mid-batch
    model = gen.Cluster(seed)
    while len(model.records) < len(values) // 2:
        model.step()
    cut = len(model.records)
    _snapshot_file(d, cut, model.snapshot_records(), 1_700_000_000_000 + cut - 1)
    assert _both(monkeypatch, d)["snapshot_records"] > 0
    _both(monkeypatch, d, md.Point(offset=cut + 3))


def _topic(name: str, tid: str) -> bytes:
    return encode_frame(sm.TopicRecord, {"name": name, "topicId": tid}, 0)


def _part(tid: str, pid: int, replicas: list[int], version: int = 2, **kw: Any) -> bytes:
    data: dict[str, Any] = {"partitionId": pid, "topicId": tid, "replicas": replicas, "isr": replicas,
                            "removingReplicas": [], "addingReplicas": [], "leader": replicas[0],
                            "leaderRecoveryState": 0, "leaderEpoch": 0, "partitionEpoch": 0, "directories": [],
                            "eligibleLeaderReplicas": None, "lastKnownElr": None}
    data.update(kw)
    return encode_frame(sm.PartitionRecord, data, version)


def _change(tid: str, pid: int, version: int = 2, **kw: Any) -> bytes:
    return encode_frame(sm.PartitionChangeRecord, {"partitionId": pid, "topicId": tid, **kw}, version)


def _write(d: str, batches: list[list[bytes]], *, log_append: bool = False) -> None:
    os.makedirs(d, exist_ok=True)
    off, ts = 0, 1_700_000_000_000
    with open(os.path.join(d, "00000000000000000000.log"), "wb") as f:
        for vals in batches:
            data = encode_batch([RecordSpec(None, v, timestamp=ts + off + j) for j, v in enumerate(vals)],
                                base_offset=off, base_timestamp=ts + off, partition_leader_epoch=1,
                                timestamp_type=LOG_APPEND_TIME if log_append else 0)
            f.write(data)
            off += len(vals)


@needs_accel
def test_records_it_leaves_to_python_give_the_same_image_and_problems(tmp_path, monkeypatch):
    unknown_tag = bytearray(_change(T1, 0, leader=2))
    # PartitionChangeRecord v2 with one tagged field (leader, tag 1): append a second tag the schema does not have
    assert unknown_tag[-7] == 1 and unknown_tag[-6] == 1  # one tagged field: tag 1
    raw = bytes(unknown_tag[:-7]) + bytes([2, 1, 4]) + bytes(unknown_tag[-4:]) + bytes([99, 1, 0])
    d = str(tmp_path / "__cluster_metadata-0")
    _write(d, [
        [_topic("a", T1), _part(T1, 0, [1, 2, 3]), _part(T1, 1, [1, 2], version=0),
         _part(T2, 0, [1])],  # PartitionRecord of an unknown topic: a problem
        [_change(T1, 0, isr=[1, 2]), _change(T1, 7, leader=1),  # unknown partition: a problem
         _change(T1, 0, replicas=[1, 2], directories=[D1]),  # directories that do not match: a problem
         _change(T1, 0, replicas=[2, 3, 4], directories=[D1, D1, D1], leader=3),
         _change(T1, 0, replicas=[4, 5]),  # old directories, new replica count: list(old) (not all MIGRATING)
         _change(T1, 1, version=0, leader=-2, isr=[2]), raw,
         _change(T1, 1, leaderRecoveryState=1, eligibleLeaderReplicas=[1], lastKnownElr=[2], directories=[]),
         _change(T1, 1, removingReplicas=[2], addingReplicas=[3], leader=-1)],
        [_topic("a", T2), _part(T2, 0, [1, 2], directories=["AAAAAAAAAAAAAAAAAAAAAA"] * 2),
         encode_frame(sm.RemoveTopicRecord, {"topicId": T1}, 0), _change(T1, 0, isr=[1])],
        [_topic("ü" * 40, T1), _part(T1, 0, list(range(1, 70)), leaderEpoch=1 << 30)],  # multi-byte varints
        [_change(T1, 0, leader=5), _change(T1, 0, leader=-2, isr=[1, 2])],
    ])
    got = _both(monkeypatch, d)
    kinds = [p["message"].split(":")[0].split(" ")[0] for p in got["problems"]]
    assert len(got["problems"]) == 4, kinds
    part = got["state"]["topics"]["ü" * 40]["partitions"][0]
    assert part["leader_epoch"] == (1 << 30) + 1 and part["partition_epoch"] == 2
    a1 = _facts(md.load(d, md.Point(offset=12)))["state"]["topics"]["a"]["partitions"]
    assert a1[0]["directories"] == [D1, D1, D1] and a1[1]["leader_recovery_state"] == 1
    for off in range(0, 20):
        _both(monkeypatch, d, md.Point(offset=off))


@needs_accel
def test_log_append_time_and_transactions(tmp_path, monkeypatch):
    begin = encode_frame(sm.BeginTransactionRecord, {"name": "t"}, 0)
    end = encode_frame(sm.EndTransactionRecord, {}, 0)
    abort = encode_frame(sm.AbortTransactionRecord, {"reason": None}, 0)
    d = str(tmp_path / "__cluster_metadata-0")
    _write(d, [[_topic("a", T1), _part(T1, 0, [1, 2]), begin, _change(T1, 0, leader=2), _part(T1, 1, [2])],
               [_change(T1, 1, isr=[2]), end, _change(T1, 0, isr=[2]), begin, _change(T1, 0, leader=1), abort,
                _change(T1, 1, leader=-1)],
               [begin, _change(T1, 0, leader=1)]], log_append=True)
    got = _both(monkeypatch, d)
    assert got["open"] is not None and got["state"]["topics"]["a"]["partitions"][0]["leader"] == 2
    for off in range(0, 15):
        _both(monkeypatch, d, md.Point(offset=off))


@needs_accel
def test_mutated_records_both_ways(tmp_path, monkeypatch):
    """Bytes flipped inside the values (the batch CRC recomputed): whatever the records then say, the compiled path
    takes exactly what Python would make of them or leaves them to Python."""
    c = gen.Cluster(9)
    for _ in range(120):
        c.step()
    values = gen.encode(c.records)
    rng = random.Random(9)
    for trial in range(12):
        vals = list(values)
        for _ in range(25):
            i = rng.randrange(len(vals))
            v = bytearray(vals[i])
            j = rng.randrange(1, len(v))
            v[j] = rng.choice([0, 1, 0x7F, 0x80, 0xFF, v[j] ^ (1 << rng.randrange(8))])
            vals[i] = bytes(v)
        d = str(tmp_path / f"t{trial}" / "__cluster_metadata-0")
        gen.write_log(d, vals, per_batch=rng.choice([1, 5, 40]))
        _both(monkeypatch, d)


def _kraft_dirs() -> list[Path]:
    out = sorted((ROOT / "fixtures").glob("**/__cluster_metadata-0"))
    return out + sorted(REALDATA.glob("**/__cluster_metadata-0"))


@needs_accel
@pytest.mark.realdata
def test_real_kraft_partitions_both_ways(monkeypatch):
    dirs = _kraft_dirs()
    if len(dirs) < 2:
        pytest.skip("no real KRaft metadata partitions")
    for d in dirs:
        got = _both(monkeypatch, str(d))
        _both(monkeypatch, str(d), use_snapshots=False)
        end = got["log_end"] or 0
        for off in sorted({0, end // 3, end // 2, max(end - 2, 0)}):
            _both(monkeypatch, str(d), md.Point(offset=off))
        for snap in md.snapshots(str(d)):
            monkeypatch.delenv("KAFKALOG_NO_ACCEL", raising=False)
            fast, n_fast = md.load_snapshot(snap)
            monkeypatch.setenv("KAFKALOG_NO_ACCEL", "1")
            ref, n_ref = md.load_snapshot(snap)
            monkeypatch.delenv("KAFKALOG_NO_ACCEL")
            assert (fast.state(), fast.quorum(), fast.offset, n_fast) == (ref.state(), ref.quorum(), ref.offset, n_ref)


def test_without_the_extension_the_python_replay_runs(tmp_path):
    """Where the extension is not built (its import fails), the replay is the Python one and gives the image."""
    import json
    import subprocess

    c = gen.Cluster(21)
    for _ in range(200):
        c.step()
    d = str(tmp_path / "__cluster_metadata-0")
    gen.write_log(d, gen.encode(c.records), per_batch=7)
    code = ("import json, sys; sys.modules['kafkalog_cli._accel'] = None\n"
            "from kafkalog_cli.internal_topics import metadata_fast as mf\n"
            "from kafkalog_cli.ops import metadata as md\n"
            f"l = md.load({d!r}); print(json.dumps([mf.accel_enabled(), l.records, l.image.state()]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT,
                         env={k: v for k, v in os.environ.items() if k != "KAFKALOG_NO_ACCEL"}).stdout
    enabled, records, state = json.loads(out)
    want = md.load(d)
    assert enabled is False and records == want.records
    assert state == json.loads(json.dumps(want.image.state()))
