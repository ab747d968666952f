"""Labels and times that cannot be misread (issue 29): blocked consumer groups of a coordinator-missing
transaction, transaction ages in text, the problems dataset's offset."""

from __future__ import annotations

import os
from pathlib import Path

from click.testing import CliRunner
from test_transactions_logdir import NOW, _open_in, _run
from txn_scenarios import checkpoint, offset_commit, txn_record, txn_state_partition, write_records

from kafkalog_cli.cli.main import cli


def test_coordinator_missing_lists_blocked_consumer_groups(tmp_path: Path) -> None:
    ld = str(tmp_path / "data")
    first = _open_in(os.path.join(ld, "orders-0"), 4242)
    txn_state_partition(ld, [txn_record("someone-else", 1, 0, "Empty", {})], txn_id="someone-else")
    checkpoint(ld, "replication-offset-checkpoint", {"orders-0": 6})
    write_records(os.path.join(ld, "__consumer_offsets-0"), [
        offset_commit("stuck", "orders", 0, first), offset_commit("behind", "orders", 0, 1)])
    code, out = _run(ld)
    t = out["open"][0]
    assert code == 1 and t["classification"] == "coordinator-missing"
    assert [g["group"] for g in t["blocked_consumers"]] == ["stuck"]
    r = CliRunner().invoke(cli, ["transactions", ld, "--now-ms", str(NOW)])
    assert "coordinator-missing: " in r.output
    assert f"blocked read_committed consumer groups: stuck (at {first})" in r.output


def test_transaction_age_reads_as_a_duration(tmp_path: Path) -> None:
    ld = str(tmp_path / "data")
    _open_in(os.path.join(ld, "orders-0"), 1001)
    txn_state_partition(ld, [txn_record("tx-done", 1001, 0, "CompleteAbort", {})], partition=0)
    code, out = _run(ld, "--partitions", "1")
    age = out["open"][0]["age_ms"]  # JSON keeps the raw milliseconds
    assert isinstance(age, int) and age > 0
    r = CliRunner().invoke(cli, ["transactions", ld, "--partitions", "1", "--now-ms", str(NOW)])
    from kafkalog_cli.timefmt import duration

    assert f" age: {duration(age)} ({age} ms)" in r.output


def test_duration_and_age_words() -> None:
    from kafkalog_cli.timefmt import age, duration, when

    assert duration(850) == "850ms"
    assert duration(4 * 60_000 + 2000) == "4m 2s"
    assert duration((3 * 24 + 4) * 3_600_000 + 59_000) == "3d 4h"
    assert duration(3 * 3_600_000) == "3h"
    assert age(1_000, now_ms=1_000 + 3 * 86_400_000) == "3d ago"
    assert age(10_000, now_ms=1_000) == "in 9s"
    assert when(1_718_445_600_000, now_ms=1_718_445_600_000 + 3_600_000) == "2024-06-15T10:00:00.000Z (1h ago)"


def test_compare_replicas_never_mixes_broker_ids_and_epochs(tmp_path: Path) -> None:
    """'leader epoch 0 on 1, 1 on 3' read as epochs and offsets; each number now says what it is."""
    from test_replicas import kafka_10751

    a, b, c = kafka_10751(str(tmp_path), new_leader_writes=True)
    r = CliRunner().invoke(cli, ["compare-replicas", a, b, c])
    assert r.exit_code == 1
    assert "leader epoch 0 on broker 1, leader epoch 1 on broker 3" in r.output
    assert "leader epochs 0 from offset 0, 1 from offset 2" in r.output
    assert " on 1, " not in r.output and "@" not in r.output.replace(str(tmp_path), "")


def test_problems_dataset_offset_of_a_crc_mismatch(tmp_path: Path) -> None:
    """The crc-mismatch row of the problems dataset carries its batch's base offset (it was null)."""
    import shutil
    import subprocess
    import sys

    from kafkalog_cli.scan.summary import iter_dataset

    root = Path(__file__).resolve().parent.parent
    shutil.copytree(root / "fixtures" / "corrupt" / "bad-0", tmp_path / "logs" / "bad-0")
    out = tmp_path / "scan"
    r = subprocess.run([sys.executable, "-m", "kafkalog_cli", "scan", str(tmp_path / "logs"), "--out", str(out)],
                       capture_output=True, text=True)
    assert r.returncode == 1, r.stderr
    rows = [row for t in iter_dataset(str(out), "problems", ["kind", "offset", "message"]) for row in t.to_pylist()]
    crc = [row for row in rows if row["kind"] == "crc-mismatch"]
    assert crc and all(row["offset"] is not None for row in crc)
    # the base offset the message names ("batch baseOffset N")
    assert all(f"baseOffset {row['offset']}:" in row["message"] for row in crc)


def test_report_replicas_uses_the_broker_id_of_the_dataset(tmp_path: Path) -> None:
    """Without --broker-ids the replicas are the brokers the rows name (meta.properties), not log dir paths."""
    import json

    from test_replicas import replica, values

    from kafkalog_cli.scan import output
    from kafkalog_cli.scan.local_engine import run_local
    from kafkalog_cli.scan.paths import expand

    root = str(tmp_path)
    for b, n in ((1, 10), (2, 6)):
        replica(root, b, values(n), part="orders-1")
    datasets = []
    for b in (1, 2):
        out = os.path.join(root, f"scan{b}")
        segments, _missing = expand([os.path.join(root, f"broker{b}")])
        output.prepare(out, True)
        run_local(segments, out, records=True, jobs=1)
        datasets.append(out)
    res = CliRunner().invoke(cli, ["report", "--replicas", *datasets, "--out", str(tmp_path / "div"), "--format", "json"])
    row = json.loads(res.output)["divergence"][0]
    assert row["brokers"] == ["1", "2"] and row["leader"] == "1"


def test_compare_replicas_lost_records_time_range_with_age(tmp_path: Path) -> None:
    from test_replicas import kafka_10751

    from kafkalog_cli.timefmt import iso_utc

    a, b, c = kafka_10751(str(tmp_path), new_leader_writes=True)
    r = CliRunner().invoke(cli, ["compare-replicas", "--format", "json", a, b, c])
    import json

    lost = next(x["lost_records"] for x in json.loads(r.output)["replicas"] if x["lost_records"]["count"])
    text = CliRunner().invoke(cli, ["compare-replicas", a, b, c]).output
    assert f"{iso_utc(lost['first_timestamp'])} .. {iso_utc(lost['last_timestamp'])} (" in text
    assert " ago)" in text
