"""``scan`` and ``report`` on an object store: inputs and ``--out`` as ``s3://`` URIs against a real SeaweedFS server
on 127.0.0.1 (tests/seaweed.py), endpoint and credentials from the AWS_* variables or ``--endpoint-url``. The rows
equal a local scan of the same bytes (only ``log_dir`` differs: it names the object prefix)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from scan_data import load_sorted, make_logdir
from seaweed import env_with, seaweed  # noqa: F401 (the fixture)

pytestmark = pytest.mark.slow
KAFKALOG = [sys.executable, "-m", "kafkalog_cli"]


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([*KAFKALOG, *args], capture_output=True, text=True, env=env, timeout=300)


def _upload(local: Path, target: str, env: dict[str, str]) -> None:
    code = ("import sys; from kafkalog_cli.scan import uri; uri.upload_tree(sys.argv[1], sys.argv[2])")
    subprocess.run([sys.executable, "-c", code, str(local), target], check=True, env=env)


def _download(src: str, local: Path, env: dict[str, str]) -> None:
    code = ("import sys; from kafkalog_cli.scan import uri\n"
            "for n in ('batches', 'problems', 'records'):\n"
            "    if uri.list_objects(sys.argv[1] + '/' + n): uri.download_tree(sys.argv[1] + '/' + n, sys.argv[2] + '/' + n)")
    subprocess.run([sys.executable, "-c", code, src, str(local)], check=True, env=env)


def _without_log_dir(rows: list[dict]) -> list[dict]:
    return sorted(({k: v for k, v in r.items() if k != "log_dir"} for r in rows),
                  key=lambda r: tuple((v is None, repr(v)) for v in r.values()))


@pytest.fixture()
def logdir(tmp_path: Path) -> Path:
    d = make_logdir(tmp_path / "host5")
    (d / "meta.properties").write_text("version=1\nnode.id=5\ncluster.id=x\n")
    return d


def test_s3_in_and_out_equal_a_local_scan(seaweed, logdir: Path, tmp_path: Path) -> None:  # noqa: F811
    env = env_with(seaweed)
    _upload(logdir, "s3://kafkalog/t1/host5/kafka-logs", env)
    local = _run(["scan", str(logdir), "--records", "--out", str(tmp_path / "local"), "--format", "json"], env)
    assert local.returncode == 1, local.stderr
    remote = _run(["scan", "s3://kafkalog/t1/host5/kafka-logs", "--records", "--out", "s3://kafkalog/t1/fleet/",
                   "--format", "json"], env)
    assert remote.returncode == 1, remote.stderr
    doc = json.loads(remote.stdout)
    assert doc["out"] == "s3://kafkalog/t1/fleet"
    assert {p["log_dir"] for p in doc["partitions"]} == {"s3://kafkalog/t1/host5/kafka-logs"}
    _download("s3://kafkalog/t1/fleet", tmp_path / "got", env)
    for name in ("batches", "problems", "records"):
        a, b = load_sorted(tmp_path / "local", name), load_sorted(tmp_path / "got", name)
        assert a and _without_log_dir(a) == _without_log_dir(b), name
        assert {r["broker_id"] for r in b} == {5}  # meta.properties read from the bucket
    assert not (Path.cwd() / "s3:").exists()
    # the fleet report from the bucket equals the scan's own report
    rep = _run(["report", "s3://kafkalog/t1/fleet", "--format", "json"], env)
    assert rep.returncode == 1, rep.stderr
    r = json.loads(rep.stdout)
    assert r["partitions"] == [p for p in doc["partitions"] if p["batches"]] or r["partitions"] == doc["partitions"]
    assert r["problems"] == doc["problems"]


def test_endpoint_flag_and_a_second_host_share_the_prefix(seaweed, logdir: Path, tmp_path: Path) -> None:  # noqa: F811
    """AWS_ENDPOINT_URL unset: --endpoint-url gives it (pyarrow itself would go to AWS). Two hosts, one prefix."""
    env = env_with(seaweed)
    endpoint = env.pop("AWS_ENDPOINT_URL")
    other = make_logdir(tmp_path / "host6")
    (other / "meta.properties").write_text("node.id=6\n")
    for d in (logdir, other):
        r = _run(["scan", str(d), "--out", "s3://kafkalog/t2/fleet", "--endpoint-url", endpoint], env)
        assert r.returncode == 1, r.stderr
    env["AWS_ENDPOINT_URL_S3"] = endpoint
    _download("s3://kafkalog/t2/fleet", tmp_path / "got", env)
    rows = load_sorted(tmp_path / "got", "batches")
    assert sorted({r["broker_id"] for r in rows}) == [5, 6]
    assert sorted({p.parent.parent.name for p in (tmp_path / "got" / "batches").rglob("*.parquet")}) == \
        ["broker_id=5", "broker_id=6"]
    assert {p.parent.name for p in (tmp_path / "got" / "batches").rglob("*.parquet")} == \
        {f"topic={t}" for t in {r["topic"] for r in rows}}


def test_spark_workers_read_objects(seaweed, logdir: Path, tmp_path: Path) -> None:  # noqa: F811
    pytest.importorskip("pyspark")
    if shutil.which("java") is None:
        pytest.skip("Java is not on PATH")
    env = env_with(seaweed)
    _upload(logdir, "s3://kafkalog/t3/host5/kafka-logs", env)
    local = _run(["scan", str(logdir), "--out", str(tmp_path / "local")], env)
    assert local.returncode == 1, local.stderr
    r = _run(["scan", "s3://kafkalog/t3/host5/kafka-logs", "--engine", "spark", "--master", "local[2]",
              "--out", str(tmp_path / "spark")], env)
    assert r.returncode == 1, r.stderr[-2000:]
    for name in ("batches", "problems"):
        assert _without_log_dir(load_sorted(tmp_path / "local", name)) == \
            _without_log_dir(load_sorted(tmp_path / "spark", name)), name
