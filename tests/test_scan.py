"""``kafkalog scan`` with the embedded (local) engine: rows, partition checks, CLI, report, no pyspark import."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pyarrow")

from scan_data import T0, load_sorted, make_logdir, ms, realdata_dirs  # noqa: E402

from kafkalog_cli.scan import output  # noqa: E402
from kafkalog_cli.scan.extract import scan_segment  # noqa: E402
from kafkalog_cli.scan.local_engine import run_local  # noqa: E402
from kafkalog_cli.scan.partition import partition_problems  # noqa: E402
from kafkalog_cli.scan.paths import expand, parse_partition_dir  # noqa: E402
from kafkalog_cli.scan.summary import summarize  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def logdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_logdir(tmp_path_factory.mktemp("scan"))


@pytest.fixture(scope="module")
def local_out(logdir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("out-local")
    segments, missing = expand([str(logdir)])
    assert not missing
    output.prepare(str(out), True)
    run_local(segments, str(out), records=True, jobs=2)
    return out


def kinds(rows: list[dict]) -> list[tuple[str, str, str]]:
    return sorted((r["partition_dir"], r["segment"], r["kind"]) for r in rows)


def test_partition_dir_names() -> None:
    assert parse_partition_dir("orders-0") == ("orders", 0)
    assert parse_partition_dir("my-topic.v2-13") == ("my-topic.v2", 13)
    assert parse_partition_dir("orders-2." + "ab" * 16 + "-future") == ("orders", 2)
    assert parse_partition_dir("orders-2." + "0f" * 16 + "-delete") == ("orders", 2)
    assert parse_partition_dir("data") == ("data", None)


def test_expand_dirs_globs_and_missing(logdir: Path) -> None:
    segs, missing = expand([str(logdir / "orders-*"), str(logdir / "events-0"), str(logdir / "nope-*")])
    names = [Path(s).parent.name + "/" + Path(s).name for s in segs]
    assert names[:3] == ["events-0/00000000000000000000.log", "orders-0/00000000000000000000.log",
                         "orders-0/00000000000000000020.log"]
    assert len(segs) == 7  # events 1 + orders-0 3 + orders-1 2 + orders-2 future 1
    assert missing == [str(logdir / "nope-*")]


def test_scan_segment_rows(logdir: Path) -> None:
    rows = scan_segment(str(logdir / "orders-1" / "00000000000000000000.log"), records=True)
    assert [b["crc_ok"] for b in rows["batches"]] == [True, False, True, True]  # the batch after the bad one is found
    assert [b["base_offset"] for b in rows["batches"]] == [0, 3, 6, 9]
    assert [p["kind"] for p in rows["problems"]] == ["crc-mismatch"]
    assert rows["problems"][0]["position"] == rows["batches"][1]["position"]
    assert len(rows["records"]) == 9  # no records from the corrupt batch
    b = rows["batches"][0]
    assert (b["topic"], b["partition"], b["codec"], b["count"], b["magic"]) == ("orders", 1, "lz4", 3, 2)
    assert (ms(b["first_timestamp"]), ms(b["max_timestamp"])) == (T0, T0 + 2)

    legacy = scan_segment(str(logdir / "my-topic.v2-3" / "00000000000000000000.log"))
    assert [(b["magic"], b["timestamp_type"], ms(b["first_timestamp"])) for b in legacy["batches"]] == [
        (0, "NoTimestampType", None), (1, "CreateTime", T0), (1, "CreateTime", T0 + 1)]  # -1 is null, not 1969
    assert [p["kind"] for p in legacy["problems"]] == ["truncated"]
    assert legacy["batches"][0]["topic"] == "my-topic.v2" and legacy["batches"][0]["partition"] == 3

    events = scan_segment(str(logdir / "events-0" / "00000000000000000000.log"), records=True)
    assert [(b["base_offset"], b["transactional"], b["control"]) for b in events["batches"]] == [
        (0, True, False), (2, True, False), (4, True, True), (5, False, False)]
    assert len(events["problems"]) == 1 and events["problems"][0]["severity"] == "error"
    assert events["records"][0]["header_keys"] == [] and events["records"][1]["header_keys"] == ["trace", "src"]


def _int_ts(rows: list[dict]) -> list[dict]:
    return [{**r, "max_timestamp": ms(r["max_timestamp"])} for r in rows]


def test_partition_pass_finds_gap_and_time_order(logdir: Path) -> None:
    rows = []
    for seg in sorted((logdir / "orders-0").glob("*.log"), reverse=True):  # order in must not matter
        rows += _int_ts(scan_segment(str(seg))["batches"])
    problems = partition_problems(rows)
    assert [(p["kind"], p["segment"], p["offset"]) for p in problems] == [
        ("sequence-gap", "00000000000000000040.log", 50)]
    assert "baseSequence 57, expected 50" in problems[0]["message"]

    rows = []
    for seg in (logdir / "orders-1").glob("*.log"):
        rows += _int_ts(scan_segment(str(seg))["batches"])
    assert [(p["kind"], p["offset"]) for p in partition_problems(rows)] == [("timestamp-order", 15)]


def test_partition_pass_wrap_and_segment_order() -> None:
    base = {"log_dir": "/l", "topic": "t", "partition": 0, "partition_dir": "t-0", "size": 100, "max_timestamp": 1,
            "producer_id": 1, "producer_epoch": 0, "control": False, "crc_ok": True}
    rows = [
        {**base, "segment": "00000000000000000000.log", "position": 0, "base_offset": 0, "last_offset": 9,
         "base_sequence": 2147483640, "last_sequence": 2147483647},
        {**base, "segment": "00000000000000000005.log", "position": 0, "base_offset": 10, "last_offset": 10,
         "base_sequence": 0, "last_sequence": 0},  # wraps correctly; but the file name says 5 <= 9
    ]
    assert [p["kind"] for p in partition_problems(rows)] == ["segment-order"]


def test_local_datasets(local_out: Path) -> None:
    batches = load_sorted(local_out, "batches")
    problems = load_sorted(local_out, "problems")
    records = load_sorted(local_out, "records")
    assert len(batches) == 12 + 7 + 3 + 4 + 1
    assert sum(1 for b in batches if not b["crc_ok"]) == 1
    assert kinds(problems) == [
        ("events-0", "00000000000000000000.log", "bad-magic"),
        ("my-topic.v2-3", "00000000000000000000.log", "truncated"),
        ("orders-0", "00000000000000000040.log", "sequence-gap"),
        ("orders-1", "00000000000000000000.log", "crc-mismatch"),
        ("orders-1", "00000000000000000012.log", "timestamp-order"),
    ]
    assert len(records) == 60 + 18 + 3 + 7 + 2
    summary = summarize(str(local_out))
    parts = {p["partition_dir"]: p for p in summary["partitions"]}
    o0 = parts["orders-0"]
    assert (o0["first_offset"], o0["last_offset"], o0["segments"], o0["producers"]) == (0, 59, 3, 1)
    assert o0["leader_epochs"] == [0, 1, 2] and set(o0["bytes_by_codec"]) == {"none", "gzip", "lz4", "zstd", "snappy"}
    assert parts["orders-1"]["problems_by_kind"] == {"crc-mismatch": 1, "timestamp-order": 1}
    assert summary["problems"]["total"] == 5


def test_jobs_do_not_change_rows(logdir: Path, local_out: Path, tmp_path: Path) -> None:
    segments, _ = expand([str(logdir)])
    run_local(segments, str(tmp_path), records=True, jobs=1)
    for name in ("batches", "problems", "records"):
        assert load_sorted(tmp_path, name) == load_sorted(local_out, name)


def test_one_partition_split_by_segment(logdir: Path, tmp_path: Path) -> None:
    """Fewer partitions than jobs: tasks are segments and the parent runs the partition pass; same rows."""
    segments, _ = expand([str(logdir / "orders-0"), str(logdir / "orders-1")])
    run_local(segments, str(tmp_path / "whole"), records=True, jobs=1)
    run_local(segments, str(tmp_path / "split"), records=True, jobs=3)
    for name in ("batches", "problems", "records"):
        assert load_sorted(tmp_path / "split", name) == load_sorted(tmp_path / "whole", name)
    assert {p["kind"] for p in load_sorted(tmp_path / "split", "problems")} == {
        "crc-mismatch", "sequence-gap", "timestamp-order"}


def _cli(*args: str, check_no_spark: bool = True) -> subprocess.CompletedProcess:
    code = ("import sys\nfrom kafkalog_cli.cli.main import main\nsys.argv = ['kafkalog'] + sys.argv[1:]\n"
            "try:\n    main()\nexcept SystemExit as e:\n    rc = e.code\n"
            + ("assert 'pyspark' not in sys.modules, 'pyspark was imported'\n" if check_no_spark else "")
            + "sys.exit(rc)\n")
    return subprocess.run([sys.executable, "-c", code, "scan", *args], capture_output=True, text=True, cwd=REPO,
                          timeout=120)


def test_cli_local_json_and_no_pyspark(logdir: Path, tmp_path: Path) -> None:
    res = _cli(str(logdir / "orders-*"), str(logdir / "events-0"), "--out", str(tmp_path / "o"), "--format", "json",
               "--jobs", "2")
    assert res.returncode == 1, res.stderr
    doc = json.loads(res.stdout)
    assert doc["engine"] == "local" and doc["exit_code"] == 1
    assert doc["problems"]["by_kind"] == {"bad-magic": 1, "crc-mismatch": 1, "sequence-gap": 1, "timestamp-order": 1}
    assert doc["totals"]["segments"] == 7
    assert (tmp_path / "o" / "batches").is_dir() and not (tmp_path / "o" / "records").exists()


def test_cli_sample_logdir_text(tmp_path: Path) -> None:
    res = _cli("fixtures/sample-logdir", "--out", str(tmp_path))
    assert res.returncode == 0, res.stderr
    assert "payments-0" in res.stdout and "no problems found" in res.stdout
    assert res.stdout.splitlines()[0].split()[:3] == ["partition", "segments", "batches"]


def test_cli_usage_errors(tmp_path: Path) -> None:
    res = _cli(str(tmp_path / "nothing-here"))
    assert res.returncode == 2 and "nothing-here: no such file or directory" in res.stderr  # storage/paths.missing
    (tmp_path / "empty").mkdir()
    res = _cli(str(tmp_path / "empty"))
    assert res.returncode == 2 and "no segment files" in res.stderr
    (tmp_path / "batches").mkdir()
    (tmp_path / "batches" / "precious.txt").write_text("x")
    res = _cli("fixtures/sample-logdir", "--out", str(tmp_path))
    assert res.returncode == 2 and "does not look like a kafkalog scan dataset" in res.stderr
    assert (tmp_path / "batches" / "precious.txt").exists()


def test_spark_engine_missing_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    import kafkalog_cli.scan.spark_engine as se
    from kafkalog_cli.cli.scan import scan

    monkeypatch.setattr(se.shutil, "which", lambda name: None)
    monkeypatch.delenv("JAVA_HOME", raising=False)
    res = CliRunner().invoke(scan, ["fixtures/sample-logdir", "--engine", "spark"])
    assert res.exit_code == 2
    assert "needs Java" in res.output and "pip install '.[spark]'" in res.output and "kafkalog[" not in res.output
    monkeypatch.setattr(se.importlib.util, "find_spec", lambda name: None)
    res = CliRunner().invoke(scan, ["fixtures/sample-logdir", "--engine", "spark"])
    assert res.exit_code == 2 and "needs pyspark" in res.output


@pytest.mark.realdata
def test_realdata_subset_matches_verify(tmp_path: Path) -> None:
    dirs = realdata_dirs()
    if not dirs:
        pytest.skip("../shared/realdata is absent")
    from kafkalog_cli.ops.verify import verify_segment

    segments, _ = expand([str(d) for d in dirs])
    run_local(segments, str(tmp_path), jobs=2)
    batches = load_sorted(tmp_path, "batches")
    assert batches
    for seg in segments:
        rep = verify_segment(seg)
        mine = [b for b in batches if b["partition_dir"] == Path(seg).parent.name and b["segment"] == Path(seg).name
                and b["log_dir"] == str(Path(seg).parent.parent) and b["crc_ok"]]
        assert len(mine) == rep.batches, seg
