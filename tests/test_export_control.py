"""``export`` of control batches that hold several control records (a KRaft snapshot's SnapshotHeader + KRaftVersion +
KRaftVoters batch, RecordsSnapshotWriter.java): each record is labelled by its own control type, in NDJSON and in
Parquet, as Kafka's DumpLogSegments prints each record (kafka-real's Records program writes the snapshot with Kafka's
own writer; Dump prints it)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

sys.path.insert(0, os.path.dirname(__file__))

from kafkalog_cli.cli.main import cli  # noqa: E402
from kafkalog_cli.format import control  # noqa: E402
from kafkalog_cli.format.encoder import RecordSpec, encode_batch  # noqa: E402

# DumpLogSegments' word for each control record type -> export's control type name
DUMP_WORDS = {"SnapshotHeader": "SNAPSHOT_HEADER", "SnapshotFooter": "SNAPSHOT_FOOTER", "KRaftVersion": "KRAFT_VERSION",
              "KRaftVoters": "KRAFT_VOTERS", "LeaderChange": "LEADER_CHANGE"}


def _export(src: Path, out: Path, fmt: str) -> dict[int, str]:
    """offset -> control type of every control record export writes."""
    r = CliRunner().invoke(cli, ["export", str(src), "--topic", "__cluster_metadata", "--partition", "0",
                                 "--isolation", "read_uncommitted", "--keep-control", "--format", fmt,
                                 "--out", str(out)], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    if fmt == "ndjson":
        rows = [json.loads(line) for line in out.read_text().splitlines()]
        return {o["offset"]: o["control"]["type"] for o in rows if o["control"]}
    import pyarrow.parquet as pq

    t = pq.read_table(out)
    return {o: c for o, c in zip(t.column("offset").to_pylist(), t.column("control_type").to_pylist()) if c}


def _mixed_segment(path: Path) -> Path:
    """One control batch of four records of different types (our encoder, the spec's control record layout), then
    a one-record LEADER_CHANGE batch."""
    voters = {"voters": [{"voterId": 1, "voterDirectoryId": "AAAAAAAAAAAAAAAAAAAAAQ",
                          "endpoints": [{"name": "CONTROLLER", "host": "localhost", "port": 9093}],
                          "kRaftVersionFeature": {"minSupportedVersion": 0, "maxSupportedVersion": 1}}]}
    recs = [
        RecordSpec(control.encode_control_key(control.SNAPSHOT_HEADER),
                   control.encode_kraft_control(control.SNAPSHOT_HEADER, {"lastContainedLogTimestamp": 5})),
        RecordSpec(control.encode_control_key(control.KRAFT_VERSION),
                   control.encode_kraft_control(control.KRAFT_VERSION, {"kRaftVersion": 1})),
        RecordSpec(control.encode_control_key(control.KRAFT_VOTERS),
                   control.encode_kraft_control(control.KRAFT_VOTERS, voters)),
        RecordSpec(control.encode_control_key(control.LEADER_CHANGE),
                   control.encode_kraft_control(control.LEADER_CHANGE, {"leaderId": 1, "voters": [], "grantingVoters": []})),
    ]
    lc = [RecordSpec(control.encode_control_key(control.LEADER_CHANGE),
                     control.encode_kraft_control(control.LEADER_CHANGE, {"leaderId": 2, "voters": [],
                                                                           "grantingVoters": []}))]
    path.mkdir(parents=True)
    seg = path / "00000000000000000000.log"
    seg.write_bytes(encode_batch(recs, base_offset=0, control=True, partition_leader_epoch=3)
                    + encode_batch(lc, base_offset=4, control=True, partition_leader_epoch=3))
    return seg


@pytest.mark.parametrize("fmt", ["ndjson", "parquet"])
@pytest.mark.parametrize("accel", [True, False])
def test_each_control_record_gets_its_own_type(tmp_path, monkeypatch, fmt, accel):
    if not accel:
        monkeypatch.setenv("KAFKALOG_NO_ACCEL", "1")
    seg = _mixed_segment(tmp_path / "__cluster_metadata-0")
    got = _export(seg, tmp_path / f"o.{fmt}", fmt)
    assert got == {0: "SNAPSHOT_HEADER", 1: "KRAFT_VERSION", 2: "KRAFT_VOTERS", 3: "LEADER_CHANGE",
                   4: "LEADER_CHANGE"}


@pytest.mark.oracle
@pytest.mark.parametrize("fmt", ["ndjson", "parquet"])
def test_kraft_snapshot_control_types_as_kafka_dumps_them(kafka_real, tmp_path, fmt):
    """A snapshot written by Kafka's RecordsSnapshotWriter (kraftVersion 1 with voters: SnapshotHeader, KRaftVersion
    and KRaftVoters in one control batch, SnapshotFooter in another): export's type per offset = the type
    DumpLogSegments prints for that offset."""
    d = tmp_path / "__cluster_metadata-0"
    d.mkdir()
    voters = {"version": 0, "voters": [{"voterId": 1, "voterDirectoryId": "AAAAAAAAAAAAAAAAAAAAAQ",
                                        "endpoints": [{"name": "CONTROLLER", "host": "localhost", "port": 9093}],
                                        "kRaftVersionFeature": {"minSupportedVersion": 0, "maxSupportedVersion": 1}}]}
    req = {"op": "snapshot", "dir": str(d), "offset": 10, "epoch": 2, "timeMs": 1700000000000,
           "lastContainedLogTimestamp": 1700000000000, "maxBatchSize": 1024, "kraftVersion": 1, "voters": voters,
           "records": []}
    p = subprocess.run([str(kafka_real.path), "Records"], input=json.dumps(req) + "\n", capture_output=True, text=True,
                       timeout=600, env=dict(os.environ, LC_ALL="C.UTF-8"), check=True)
    snap = Path(json.loads(p.stdout.splitlines()[0])["path"])
    dump = kafka_real.batch("Dump", "--files", str(snap), "--deep-iteration")
    assert dump.rc == 0, dump.stderr
    kafka = {}
    for line in dump.stdout.decode().splitlines():
        m = re.match(r"\| offset: (\d+) .* headerKeys: \[\] (\w+) ", line)
        if m:
            kafka[int(m.group(1))] = DUMP_WORDS[m.group(2)]
    assert len(set(kafka.values())) == 4, dump.stdout.decode()  # header, version, voters, footer
    assert _export(snap, tmp_path / f"o.{fmt}", fmt) == kafka
