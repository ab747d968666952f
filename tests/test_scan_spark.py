"""``kafkalog scan --engine spark``: the Spark engine writes the same rows as the local engine (local[2], one
session for the whole run). Skipped, with the reason, when pyspark or Java is missing."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pytest.importorskip("pyarrow")
pytest.importorskip("pyspark", reason="pyspark is not installed: pip install -e '.[test,spark]'")
if shutil.which("java") is None:
    pytest.skip("Java is not on PATH (the Spark engine needs a JVM)", allow_module_level=True)

from scan_data import load_sorted, make_logdir, realdata_dirs  # noqa: E402
from test_failing_disk import bad_disk  # noqa: E402, F401 - a fixture

from kafkalog_cli.scan import output  # noqa: E402
from kafkalog_cli.scan.local_engine import run_local  # noqa: E402
from kafkalog_cli.scan.paths import expand  # noqa: E402
from kafkalog_cli.scan.summary import summarize  # noqa: E402

pytestmark = pytest.mark.slow


@pytest.fixture(scope="session")
def spark():
    from kafkalog_cli.scan.spark_engine import get_session

    session = get_session("local[2]")
    yield session
    session.stop()


def _both(segments: list[str], tmp: Path, spark, records: bool) -> tuple[Path, Path]:
    from kafkalog_cli.scan.spark_engine import run_spark

    local, remote = tmp / "local", tmp / "spark"
    for d in (local, remote):
        output.prepare(str(d), records)
    run_local(segments, str(local), records=records, jobs=2)
    run_spark(segments, str(remote), records=records, spark=spark)
    return local, remote


def test_spark_equals_local_on_generated_logdir(tmp_path: Path, spark) -> None:
    segments, _ = expand([str(make_logdir(tmp_path))])
    local, remote = _both(segments, tmp_path, spark, records=True)
    for name in ("batches", "problems", "records"):
        a, b = load_sorted(local, name), load_sorted(remote, name)
        assert a, name
        assert a == b, name
    assert {p["kind"] for p in load_sorted(remote, "problems")} == {
        "bad-magic", "truncated", "sequence-gap", "crc-mismatch", "timestamp-order"}
    assert summarize(str(local)) == summarize(str(remote))


def test_spark_tasks_get_the_scan_settings_in_their_closure(tmp_path: Path, spark) -> None:
    """--broker-id travels to the Spark tasks in the pickled ScanSettings (no spark.executorEnv, no os.environ):
    every row of both engines carries it, and the driver's own settings are untouched."""
    from kafkalog_cli.scan.settings import ScanSettings, current
    from kafkalog_cli.scan.spark_engine import run_spark

    segments, _ = expand([str(make_logdir(tmp_path))])
    chosen = ScanSettings(broker_id=12)
    local, remote = tmp_path / "local", tmp_path / "spark"
    for d in (local, remote):
        output.prepare(str(d), False)
    run_local(segments, str(local), jobs=2, settings=chosen)
    run_spark(segments, str(remote), spark=spark, settings=chosen)
    for name in ("batches", "problems"):
        a, b = load_sorted(local, name), load_sorted(remote, name)
        assert a and {r["broker_id"] for r in a} == {12}, name
        assert a == b, name
    assert current() == ScanSettings()


@pytest.mark.realdata
def test_spark_equals_local_on_realdata(tmp_path: Path, spark) -> None:
    dirs = realdata_dirs()
    if not dirs:
        pytest.skip("../shared/realdata is absent")
    segments, _ = expand([str(d) for d in dirs])
    local, remote = _both(segments, tmp_path, spark, records=True)
    for name in ("batches", "problems", "records"):
        assert load_sorted(local, name) == load_sorted(remote, name), name
    assert load_sorted(local, "batches")


def test_spark_schema_matches_arrow_schema(spark) -> None:
    from kafkalog_cli.scan.schema import DATASETS
    from kafkalog_cli.scan.spark_engine import spark_schema

    for name, schema in DATASETS.items():
        st = spark_schema(name)
        assert [f.name for f in st.fields] == schema.names
        assert [f.nullable for f in st.fields] == [f.nullable for f in schema]


def test_spark_worker_reports_exact_unreadable_range_like_local(tmp_path: Path, spark, bad_disk) -> None:  # noqa: F811
    """Real EIO (the FUSE file system of test_failing_disk.py) read by the Spark executors' worker path: the same
    exact page-rounded range and the same rows as the local engine."""
    from test_failing_disk import BAD, BAD_PAGES, SEG_NAME, _segment

    disk = bad_disk({f"t-0/{SEG_NAME}": _segment(), f"t-1/{SEG_NAME}": _segment()}, {f"t-0/{SEG_NAME}": [BAD]})
    segments, _ = expand([str(disk.mnt)])
    local, remote = _both(segments, tmp_path, spark, records=False)
    bad = [(p["partition_dir"], p["position"], p["end"]) for p in load_sorted(remote, "problems")
           if p["kind"] == "unreadable"]
    assert bad == [("t-0", *BAD_PAGES)]
    for name in ("batches", "problems"):
        assert load_sorted(local, name) == load_sorted(remote, name), name
    assert len(load_sorted(remote, "batches")) == 195


def test_fleet_report_spark_equals_local(tmp_path: Path, spark) -> None:
    """``kafkalog report DATASET... --engine spark``: Spark SQL aggregates the shared dataset of two brokers (and a
    second dataset) into the very report the local engine prints, text and JSON (only the engine's name and the
    seconds differ)."""
    import json

    from click.testing import CliRunner

    from kafkalog_cli.cli.main import cli

    out = tmp_path / "fleet"
    for broker in (1, 2):
        logdir = make_logdir(tmp_path / f"host{broker}")
        (logdir / "meta.properties").write_text(f"version=1\nnode.id={broker}\ncluster.id=abc\n")
        r = CliRunner().invoke(cli, ["scan", str(logdir), "--out", str(out if broker == 1 else tmp_path / "b2"),
                                     "-j", "1"])
        assert r.exit_code == 1, r.output
    runner = CliRunner()
    docs, texts = {}, {}
    for engine in ("local", "spark"):
        args = ["report", str(out), str(tmp_path / "b2"), "--engine", engine]
        r = runner.invoke(cli, [*args, "--format", "json"])
        assert r.exit_code == 1, r.output
        docs[engine] = json.loads(r.stdout)
        r = runner.invoke(cli, args)
        assert r.exit_code == 1, r.output
        texts[engine] = r.stdout.splitlines()
    assert docs["spark"]["engine"] == "spark"
    for doc in docs.values():
        del doc["engine"], doc["seconds"]
    assert docs["spark"] == docs["local"]
    assert docs["local"]["totals"]["partitions"] >= 4 and docs["local"]["problems"]["total"]
    assert {p["log_dir"] for p in docs["local"]["partitions"]} == {str(tmp_path / f"host{b}" / "kafka-logs")
                                                                  for b in (1, 2)}
    footer = [i for i, line in enumerate(texts["local"]) if "scanned by the" in line]
    assert len(footer) == 1
    same = [line for i, line in enumerate(texts["local"]) if i != footer[0]]
    assert [line for line in texts["spark"] if "scanned by the" not in line] == same
    assert "scanned by the spark engine" in "\n".join(texts["spark"])


def test_report_engine_options_are_checked() -> None:
    from click.testing import CliRunner

    from kafkalog_cli.cli.main import cli

    r = CliRunner().invoke(cli, ["report", "x", "--master", "local[1]"])
    assert r.exit_code == 2 and "--engine spark" in r.output
    r = CliRunner().invoke(cli, ["report", "--replicas", "x", "y", "--engine", "spark"])
    assert r.exit_code == 2 and "without --replicas" in r.output


def test_spark_reads_the_broker_topic_partitioning(tmp_path: Path, spark) -> None:
    """Spark's own partition discovery on the local engine's broker_id=/topic= layout: both columns, the topic
    unescaped (files keep the columns too: Spark takes them from the path), the same rows as kafkalog's reader."""
    import shutil as sh

    logdir = make_logdir(tmp_path)
    (logdir / "meta.properties").write_text("node.id=9\n")
    sh.copytree(logdir / "orders-0", logdir / "we:ird=t%p-0")
    segments, _ = expand([str(logdir)])
    out = tmp_path / "out"
    output.prepare(str(out), False)
    run_local(segments, str(out), jobs=1)
    got = {(r["broker_id"], r["topic"], r["count"])
           for r in spark.read.parquet(str(out / "batches")).groupBy("broker_id", "topic").count().collect()}
    rows = load_sorted(out, "batches")
    want = {(9, t, sum(1 for r in rows if r["topic"] == t)) for t in {r["topic"] for r in rows}}
    assert got == want and any(t == "we:ird=t%p" for _b, t, _n in got)
