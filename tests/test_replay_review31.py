"""Regressions found by the black-box review of issue 31 (replay):

- two replays of the same source partition into the same topic, each with its own ``--state-dir``, running at the
  same time on one host: both produced every record (the state dir's lock cannot see the other one). The second
  is now refused (exit 2, the first one's pid, before it produces anything); a replay of *other* source partitions
  into the same topic still runs side by side; the first one finishes with every record exactly once;
- a lone segment given by name (``orders-2/00000000000000000000.log``) whose transactions' markers are in the later
  segments of its directory: replay took them for open (no marker) and left them out, where export (and a consumer
  of the whole partition) has them committed or aborted. Its markers are now read from the later segments too
  (their findings are not the segment's);
- records below a live partition directory's log start offset (its log dir's ``log-start-offset-checkpoint``:
  DeleteRecords, retention) were replayed: no consumer of the source reads them. Left out now (``below_log_start``
  in the plan), ``--below-log-start`` replays them; a ``-delete`` copy is replayed whole;
- ``--rate N`` was exceeded (about 2x) while delivery reports arrived: the wait was one poll(), which returns as
  soon as it has served a report."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("confluent_kafka")

from replay_world import MockCluster, Part  # noqa: E402
from test_replay import _wait_for_map_lines, check_consumed  # noqa: E402


@pytest.fixture(scope="module")
def mock() -> MockCluster:
    return MockCluster(3)


def _replay(args: list[str], env: dict[str, str], **kw):  # noqa: ANN003, ANN202
    return subprocess.Popen([sys.executable, "-m", "kafkalog_cli", "replay", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, **kw)


def test_a_second_replay_of_the_same_sources_with_another_state_dir_is_refused(mock: MockCluster,
                                                                               tmp_path: Path) -> None:
    topic = "rv31-concurrent"
    assert mock.create_topic(topic) == 4
    parts = {}
    for sp in (0, 1):
        p = Part(str(tmp_path / "logs" / f"orders-{sp}"))
        for b in range(30):
            p.batch([(b"k%d-%d" % (b, i), b"value %d %d" % (b, i)) for i in range(10)])
        p.write()
        parts[sp] = p
    env = {**os.environ, "KAFKALOG_LOCK_DIR": str(tmp_path)}
    common = ["--bootstrap-server", mock.bootstrap, "--topic", topic, "--execute", "--format", "json"]
    st1 = tmp_path / "state-1"
    first = _replay([parts[0].path, parts[1].path, *common, "--state-dir", str(st1), "--rate", "300"], env)
    try:
        _wait_for_map_lines(st1 / "offset-map.csv", 20, first)
        # the same partition orders-1 (with orders-9 beside it: one shared source partition is enough)
        second = subprocess.run([sys.executable, "-m", "kafkalog_cli", "replay", parts[1].path, *common,
                                 "--state-dir", str(tmp_path / "state-2")], capture_output=True, text=True, env=env,
                                timeout=300)
        assert second.returncode == 2, (second.returncode, second.stderr)
        assert "another kafkalog replay" in second.stderr and f"pid {first.pid}" in second.stderr, second.stderr
        assert "with another state dir" in second.stderr and "Traceback" not in second.stderr, second.stderr
        assert not (tmp_path / "state-2" / "offset-map.csv").exists()
    finally:
        if first.poll() is None:
            first.send_signal(signal.SIGINT)
        first.communicate(timeout=300)
    assert first.returncode in (0, 130)
    # resumed, the first one completes: every record once
    r = subprocess.run([sys.executable, "-m", "kafkalog_cli", "replay", parts[0].path, parts[1].path, *common,
                        "--state-dir", str(st1)], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    check_consumed(mock.consume(topic), {sp: p.committed_view() for sp, p in parts.items()}, topic, {0: 0, 1: 1})
    with open(doc["offset_map"], newline="") as f:
        rows = list(csv.reader(f))[1:]
    assert len(rows) == 600


def test_replays_of_other_source_partitions_run_side_by_side(mock: MockCluster, tmp_path: Path) -> None:
    topic = "rv31-disjoint"
    assert mock.create_topic(topic) == 4
    parts = {}
    for sp in (0, 1):
        p = Part(str(tmp_path / "logs" / f"orders-{sp}"))
        for b in range(20):
            p.batch([(b"k%d-%d" % (b, i), b"v") for i in range(10)])
        p.write()
        parts[sp] = p
    env = {**os.environ, "KAFKALOG_LOCK_DIR": str(tmp_path)}
    common = ["--bootstrap-server", mock.bootstrap, "--topic", topic, "--execute", "--format", "json"]
    first = _replay([parts[0].path, *common, "--state-dir", str(tmp_path / "s0"), "--rate", "200"], env)
    try:
        _wait_for_map_lines(tmp_path / "s0" / "offset-map.csv", 10, first)
        other = subprocess.run([sys.executable, "-m", "kafkalog_cli", "replay", parts[1].path, *common,
                                "--state-dir", str(tmp_path / "s1")], capture_output=True, text=True, env=env,
                               timeout=300)
        assert other.returncode == 0, other.stderr
    finally:
        out, err = first.communicate(timeout=300)
    assert first.returncode == 0, err
    check_consumed(mock.consume(topic), {sp: p.committed_view() for sp, p in parts.items()}, topic, {0: 0, 1: 1})


def test_a_lone_segment_takes_the_markers_of_the_later_segments(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from kafkalog_cli.cli.main import cli

    p = Part(str(tmp_path / "orders-2"))
    p.batch([(b"a", b"1")])
    p.batch([(b"c", b"committed")], pid=5, txn=True)
    p.batch([(b"x", b"aborted")], pid=6, txn=True)
    p.roll()
    p.batch([(b"c2", b"committed")], pid=5, txn=True)
    p.marker(5, abort=False)
    p.corrupt_next()
    p.batch([(b"bad", b"crc")])  # a finding of the later segment: not the lone segment's
    p.marker(6, abort=True)
    p.write()
    seg = os.path.join(p.path, "00000000000000000000.log")
    r = CliRunner().invoke(cli, ["replay", seg, "--bootstrap-server", "nowhere:9092", "--topic", "t", "--partitions",
                                 "4", "--format", "json", "--state-dir", str(tmp_path / "st")])
    assert r.exit_code == 1, r.output  # a dry run with records to produce
    doc = json.loads(r.stdout)
    (pp,) = doc["partitions"]
    assert (pp["records"], pp["aborted"], pp["open"]) == (2, 1, 0), pp
    assert doc["findings"] == []
    # the same as export says of that segment
    r = CliRunner().invoke(cli, ["export", seg, "--out", str(tmp_path / "e.ndjson")])
    assert r.exit_code == 0, r.output
    assert [json.loads(line)["key"] for line in (tmp_path / "e.ndjson").read_text().splitlines()] == ["a", "c"]


def test_lock_ranges_semantics(tmp_path: Path) -> None:
    """One byte per key; another process holding one of them refuses the whole set and is named; the set taken so
    far is given back; disjoint sets coexist."""
    from kafkalog_cli.storage.lock import lock_ranges

    path = str(tmp_path / "x.lock")
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys\n"
        f"sys.path.insert(0, {str(Path(__file__).resolve().parent.parent)!r})\n"
        "from kafkalog_cli.storage.lock import lock_ranges\n"
        f"held, st = lock_ranges({path!r}, [5, 1 << 55])\n"
        "print('held' if held else 'no', flush=True)\nsys.stdin.read()\n")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        held, st = lock_ranges(path, [7, 1 << 55])
        assert held is None and st.locked and st.pid == holder.pid
        held, st = lock_ranges(path, [6, 8])
        assert held is not None and not st.locked
        held.release()
    finally:
        holder.kill()
        holder.wait()
    held, st = lock_ranges(path, [5, 7, 1 << 55])
    assert held is not None
    held.release()


@pytest.mark.parametrize("accel", ["1", "0"], ids=["compiled", "python"])
def test_records_below_the_log_start_offset_are_not_replayed(mock: MockCluster, tmp_path: Path, accel: str) -> None:
    """A live partition directory whose log dir's log-start-offset-checkpoint says 13 (DeleteRecords inside the
    second batch): offsets 0..12 are on disk but no consumer of the source reads them; replay leaves them out
    (counted, ``below_log_start``); ``--below-log-start`` replays them; a ``-delete`` copy (another log's name in
    the checkpoint) is replayed whole."""
    import shutil

    topic = f"rv31-lso-{accel}"
    assert mock.create_topic(topic) == 4
    logdir = tmp_path / "logs"
    p = Part(str(logdir / "orders-1"))
    for b in range(4):
        p.batch([(b"k%d-%d" % (b, i), b"v") for i in range(10)])
    p.write()
    (logdir / "log-start-offset-checkpoint").write_text("0\n1\norders 1 13\n")
    env = {**os.environ, "KAFKALOG_LOCK_DIR": str(tmp_path)}
    if accel == "0":
        env["KAFKALOG_NO_ACCEL"] = "1"

    def plan(*extra: str, src: str = p.path) -> dict:
        r = subprocess.run([sys.executable, "-m", "kafkalog_cli", "replay", src, "--bootstrap-server", "x:1",
                            "--topic", topic, "--partitions", "4", "--format", "json", "--state-dir",
                            str(tmp_path / "dry"), *extra], capture_output=True, text=True, env=env, timeout=300)
        assert r.returncode == 1, r.stderr
        return json.loads(r.stdout)["partitions"][0]

    pp = plan()
    assert (pp["records"], pp["first_offset"], pp["below_log_start"], pp["log_start"]) == (27, 13, 13, 13), pp
    assert plan("--below-log-start")["records"] == 40
    gone = logdir / "orders-1.0123456789abcdef0123456789abcdef-delete"
    shutil.copytree(p.path, gone)
    assert plan(src=str(gone))["records"] == 40
    r = subprocess.run([sys.executable, "-m", "kafkalog_cli", "replay", p.path, "--bootstrap-server", mock.bootstrap,
                        "--topic", topic, "--execute", "--format", "json", "--state-dir", str(tmp_path / "st")],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    check_consumed(mock.consume(topic), {1: [rec for rec in p.records if rec.offset >= 13]}, topic, {1: 1})


@pytest.mark.parametrize("partitioner", ["same", "murmur2"])
def test_the_rate_limit_holds_while_delivery_reports_arrive(mock: MockCluster, tmp_path: Path,
                                                            partitioner: str) -> None:
    """--rate N: record n is not produced before n/N seconds. The wait was one poll(), which returns as soon as it
    has served a delivery report: with reports arriving, 40 records at --rate 20 took 0.9 s instead of >= 1.95 s."""
    import time

    topic = f"rv31-rate-{partitioner}"
    assert mock.create_topic(topic) == 4
    p = Part(str(tmp_path / "logs" / "orders-0"))
    for b in range(40):
        p.batch([(b"k%d" % b, b"v")])
    p.write()
    env = {**os.environ, "KAFKALOG_LOCK_DIR": str(tmp_path)}
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "kafkalog_cli", "replay", p.path, "--bootstrap-server", mock.bootstrap,
                        "--topic", topic, "--execute", "--format", "json", "--rate", "20", "--partitioner",
                        partitioner, "--state-dir", str(tmp_path / "st")], capture_output=True, text=True, env=env,
                       timeout=300)
    took = time.monotonic() - t0
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["produced"] == 40
    assert doc["seconds"] >= 39 / 20 - 0.05 and took >= 39 / 20, (doc["seconds"], took)
