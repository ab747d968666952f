"""Many broker hosts, one dataset: broker_id on every row, broker_id=<id>/ directories, unique part files,
concurrent scans into one --out that never clobber each other, re-runs that replace only their own files, and
``kafkalog report DATASET...`` equal to the scan's own report."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from scan_data import load_sorted, make_logdir

KAFKALOG = [sys.executable, "-m", "kafkalog_cli"]


def _broker(root: Path, broker: int) -> Path:
    """A generated log dir with a KRaft meta.properties naming ``broker``."""
    logdir = make_logdir(root / f"host{broker}")
    (logdir / "meta.properties").write_text(f"#\nversion=1\nnode.id={broker}\ncluster.id=abc\n")
    return logdir


def _scan(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*KAFKALOG, "scan", *args], capture_output=True, text=True, timeout=120)


def test_broker_id_from_meta_properties_and_override(tmp_path: Path) -> None:
    logdir = _broker(tmp_path, 7)
    r = _scan(str(logdir), "--records", "--out", str(tmp_path / "out"), "--format", "json")
    assert r.returncode == 1, r.stderr
    for name in ("batches", "problems", "records"):
        rows = load_sorted(tmp_path / "out", name)
        assert rows and {row["broker_id"] for row in rows} == {7}, name
        assert {row["log_dir"] for row in rows} == {str(logdir)}
        files = list((tmp_path / "out" / name).rglob("*.parquet"))
        assert {f.parent.parent.name for f in files} == {"broker_id=7"}
        assert sorted(f.parent.name for f in files) == sorted(f"topic={t}" for t in {row["topic"] for row in rows})
    r = _scan(str(logdir), "--broker-id", "12", "--out", str(tmp_path / "o2"))
    assert {row["broker_id"] for row in load_sorted(tmp_path / "o2", "batches")} == {12}


def test_bad_meta_properties_is_a_located_error(tmp_path: Path) -> None:
    logdir = _broker(tmp_path, 1)
    (logdir / "meta.properties").write_text("node.id=abc\n")
    r = _scan(str(logdir), "--out", str(tmp_path / "out"))
    assert r.returncode == 2
    assert "meta.properties" in r.stderr and "node.id is not an integer" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.slow  # several CLI processes: 6-8 s on 2 shared cores
def test_concurrent_scans_into_one_out_never_clobber(tmp_path: Path) -> None:
    """Four hosts scan into one --out at the same time (the first layout kept the last writer's rows only)."""
    dirs = [_broker(tmp_path, b) for b in (1, 2, 3, 4)]
    out = tmp_path / "fleet"
    procs = [subprocess.Popen([*KAFKALOG, "scan", str(d), "--records", "--out", str(out), "-j", "1"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) for d in dirs]
    for p in procs:
        _out, err = p.communicate(timeout=180)
        assert p.returncode == 1, err  # the generated log dir has problems on purpose
    single = tmp_path / "single"
    assert _scan(str(dirs[0]), "--records", "--out", str(single)).returncode == 1
    for name in ("batches", "problems", "records"):
        one = load_sorted(single, name)
        rows = load_sorted(out, name)
        assert len(rows) == 4 * len(one), name
        assert sorted({r["broker_id"] for r in rows}) == [1, 2, 3, 4]
        names = [f.name for f in (out / name).rglob("*.parquet")]
        per_host = len(list((single / name).rglob("*.parquet")))  # one per topic= directory
        assert per_host >= 3 and len(names) == len(set(names)) == 4 * per_host
    assert not list(out.glob(".incoming-*"))  # staging directories are gone


@pytest.mark.slow  # several CLI processes: 6-8 s on 2 shared cores
def test_rerun_replaces_only_its_own_files(tmp_path: Path) -> None:
    a, b = _broker(tmp_path, 1), _broker(tmp_path, 2)
    out = tmp_path / "fleet"
    for d in (a, b, a):  # host 1 scans twice
        assert _scan(str(d), "--out", str(out)).returncode == 1
    rows = load_sorted(out, "batches")
    per = {k: sum(1 for r in rows if r["broker_id"] == k) for k in (1, 2)}
    assert per[1] == per[2] > 0  # the re-run replaced host 1's rows, host 2's stayed
    files = list((out / "batches").rglob("*.parquet"))
    topics = {r["topic"] for r in rows}
    assert len(files) == 2 * len(topics) and len({f.name for f in files if "broker_id=1" in str(f)}) == len(topics)


@pytest.mark.slow  # several CLI processes: 6-8 s on 2 shared cores
def test_report_of_datasets_equals_the_scan_report(tmp_path: Path) -> None:
    a, b = _broker(tmp_path, 1), _broker(tmp_path, 2)
    # drop the partition whose segments hold no batch at all: a dataset cannot know about empty segments
    for d in (a, b):
        shutil.rmtree(d / "empty-0", ignore_errors=True)
    out = tmp_path / "fleet"
    for d in (a, b):
        assert _scan(str(d), "--out", str(out)).returncode == 1
    both = _scan(str(a), str(b), "--out", str(tmp_path / "both"), "--format", "json")
    rep = subprocess.run([*KAFKALOG, "report", str(out), "--format", "json"], capture_output=True, text=True)
    assert rep.returncode == 1, rep.stderr
    scan_doc, rep_doc = json.loads(both.stdout), json.loads(rep.stdout)
    assert scan_doc.keys() == rep_doc.keys()
    for key in ("partitions", "problems"):
        assert rep_doc[key] == scan_doc[key], key
    assert {k: v for k, v in rep_doc["totals"].items() if k != "with_records"} == \
        {k: v for k, v in scan_doc["totals"].items() if k != "with_records"}
    text = subprocess.run([*KAFKALOG, "report", str(out)], capture_output=True, text=True)
    assert text.returncode == 1 and "partitions" in text.stdout


def test_part_files_read_with_hive_partitioning(tmp_path: Path) -> None:
    """The dataset reads with a Hive-partitioning reader too (pyarrow.dataset), broker_id from the directory."""
    import pyarrow.dataset as ds

    out = tmp_path / "fleet"
    for b in (1, 2):
        assert _scan(str(_broker(tmp_path, b)), "--out", str(out)).returncode == 1
    t = ds.dataset(str(out / "batches"), format="parquet", partitioning=None).to_table()
    assert sorted(set(t["broker_id"].to_pylist())) == [1, 2]
    assert pq.read_table(str(out / "batches"), partitioning=None).num_rows == t.num_rows


@pytest.mark.parametrize("form", ["file://{}", "{}"])
def test_out_file_uri(tmp_path: Path, form: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--out file:///x`` writes to /x (it used to write the data, make ./file:/x and fail)."""
    monkeypatch.chdir(tmp_path)
    logdir = _broker(tmp_path, 3)
    target = tmp_path / "uri-out"
    r = _scan(f"file://{logdir}", "--out", form.format(target), "--format", "json")
    assert r.returncode == 1, r.stderr
    assert load_sorted(target, "batches")
    assert not (tmp_path / "file:").exists()


def _weird_logdir(tmp_path: Path, broker: int) -> Path:
    """A broker's log dir plus a partition directory whose topic holds characters Hive escapes (not a Kafka topic
    name, but kafkalog scans any <name>-<n> directory)."""
    logdir = _broker(tmp_path, broker)
    shutil.copytree(logdir / "orders-0", logdir / "we:ird=t%p-0")
    return logdir


def test_hive_partitioning_by_broker_and_topic(tmp_path: Path) -> None:
    """broker_id=<id>/topic=<name>/ directories (topic values escaped as Hive and Spark escape them), read back with
    the partition columns by pyarrow.dataset's hive partitioning, DuckDB and kafkalog's own reader."""
    import pyarrow.dataset as ds

    from kafkalog_cli.scan.fleet import escape_path_value

    out = tmp_path / "fleet"
    assert _scan(str(_weird_logdir(tmp_path, 1)), "--out", str(out)).returncode == 1
    assert _scan(str(_broker(tmp_path, 2)), "--out", str(out)).returncode == 1
    ours = load_sorted(out, "batches")
    pairs = {(r["broker_id"], r["topic"]) for r in ours}
    assert (1, "we:ird=t%p") in pairs and (2, "my-topic.v2") in pairs
    dirs = {(f.parent.parent.name, f.parent.name) for f in (out / "batches").rglob("*.parquet")}
    assert dirs == {(f"broker_id={b}", f"topic={escape_path_value(t)}") for b, t in pairs}
    assert ("broker_id=1", "topic=we%3Aird%3Dt%25p") in dirs and ("broker_id=2", "topic=my-topic.v2") in dirs
    # the directory alone gives the columns: drop them from one engine's view and read them from the path
    t = ds.dataset(str(out / "batches"), format="parquet", partitioning="hive").to_table()
    assert t.num_rows == len(ours)
    assert set(zip(t["broker_id"].to_pylist(), t["topic"].to_pylist())) == pairs
    duckdb = pytest.importorskip("duckdb")
    got = duckdb.sql(f"select distinct broker_id, topic from read_parquet('{out}/batches/**/*.parquet', "
                     "hive_partitioning=true)").fetchall()
    assert set(got) == pairs


def test_reader_takes_escaped_topic_from_the_directory(tmp_path: Path) -> None:
    """A file without the partition columns (as Spark's partitionBy writes it): kafkalog's readers take broker_id and
    the unescaped topic from the directory names."""
    out = tmp_path / "fleet"
    assert _scan(str(_weird_logdir(tmp_path, 4)), "--out", str(out)).returncode == 1
    want = load_sorted(out, "batches")
    for f in (out / "batches").rglob("*.parquet"):
        t = pq.read_table(f, partitioning=None)
        pq.write_table(t.drop_columns(["broker_id", "topic"]), f)
    assert load_sorted(out, "batches") == want
    from kafkalog_cli.scan.summary import summarize

    assert {p["topic"] for p in summarize(str(out))["partitions"]} >= {"we:ird=t%p", "orders"}


def test_partitioned_writer_bounds_open_files(tmp_path: Path) -> None:
    """More (broker, topic) pairs than open files: the oldest part file is closed and the pair continues in a new
    one; every row is kept, in its own directory."""
    import pyarrow as pa

    from kafkalog_cli.scan.fleet import PartitionedWriter
    from kafkalog_cli.scan.output import read_dataset
    from kafkalog_cli.scan.schema import DATASETS

    schema = DATASETS["problems"]

    def rows(topic: str, n: int) -> pa.Table:
        base = {"log_dir": "/l", "broker_id": 1, "topic": topic, "partition": 0, "partition_dir": f"{topic}-0",
                "segment": "00000000000000000000.log", "file": "f", "position": 0, "end": 1, "kind": "k",
                "severity": "error", "message": "m", "offset": None}
        return pa.Table.from_pylist([{**base, "position": i} for i in range(n)], schema=schema)

    w = PartitionedWriter(str(tmp_path), "problems", max_open=2)
    for topic in ("a", "b", "c", "a", "b.x", "c"):
        w.write(rows(topic, 3))
    w.write(pa.concat_tables([rows("a", 2), rows("d", 2), rows("a", 1)]))  # several pairs in one table
    w.close()
    assert w.rows == 23
    files = sorted(str(f.relative_to(tmp_path / "problems")) for f in (tmp_path / "problems").rglob("*.parquet"))
    assert files == ["broker_id=1/topic=a/part-00000.parquet", "broker_id=1/topic=a/part-00001.parquet",
                     "broker_id=1/topic=a/part-00002.parquet", "broker_id=1/topic=b.x/part-00000.parquet",
                     "broker_id=1/topic=b/part-00000.parquet", "broker_id=1/topic=c/part-00000.parquet",
                     "broker_id=1/topic=c/part-00001.parquet", "broker_id=1/topic=d/part-00000.parquet"]
    got = read_dataset(str(tmp_path), "problems").to_pylist()
    assert sorted((r["topic"], r["position"]) for r in got) == sorted(
        [(t, i) for t in ("a", "b", "c", "a", "b.x", "c") for i in range(3)] + [("a", 0), ("a", 1), ("d", 0),
                                                                           ("d", 1), ("a", 0)])


def test_summary_of_chunks_with_differing_dictionaries() -> None:
    """The local engine feeds the report tables whose string columns are chunked dictionaries with a different
    dictionary per chunk (chunks of several workers); the group-by of several partitions failed with
    ArrowNotImplementedError "Unifying differing dictionaries" (a scan of ../shared/realdata with -j 2)."""
    import pyarrow as pa

    from kafkalog_cli.scan.summary import BATCH_COLUMNS, Summary

    def chunk(topics: list[str]) -> pa.Table:
        n = len(topics)
        d = pa.dictionary(pa.int32(), pa.string())
        cols = {"log_dir": pa.array(["/l"] * n).cast(d), "topic": pa.array(topics).cast(d),
                "partition": pa.array([0] * n, pa.int32()), "partition_dir": pa.array([f"{t}-0" for t in topics]).cast(d),
                "size": pa.array([100] * n, pa.int64()), "base_offset": pa.array(range(n), pa.int64()),
                "last_offset": pa.array(range(n), pa.int64()), "count": pa.array([1] * n, pa.int32()),
                "codec": pa.array(["none"] * n).cast(d), "first_timestamp": pa.array([5] * n, pa.int64()),
                "max_timestamp": pa.array([6] * n, pa.int64()), "producer_id": pa.array([-1] * n, pa.int64()),
                "partition_leader_epoch": pa.array([0] * n, pa.int32()), "crc_ok": pa.array([True] * n)}
        return pa.table({c: cols[c] for c in BATCH_COLUMNS})

    acc = Summary()
    acc.add_batches(pa.concat_tables([chunk(["a", "b"]), chunk(["c", "a"])]))
    parts = {p["topic"]: p for p in acc.result()["partitions"]}
    assert {t: p["batches"] for t, p in parts.items()} == {"a": 2, "b": 1, "c": 1}
    assert parts["a"]["bytes_by_codec"] == {"none": 200}
