"""``scan --engine spark`` on a real cluster: the site's settings win (fast, no JVM), and slow tests that run the
scan on ``local-cluster[2,1,1024]`` and on a standalone master with two workers started on 127.0.0.1, a broken
executor environment as one error line."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kafkalog_cli.scan import spark_conf

KAFKALOG = [sys.executable, "-m", "kafkalog_cli"]


# ------------------------------------------------------------------------------------------------ fast: settings
def test_site_parallelism_and_jvm_options_are_never_overridden(tmp_path: Path) -> None:
    conf_dir = tmp_path / "conf"
    conf_dir.mkdir()
    (conf_dir / "spark-defaults.conf").write_text(
        "# site\nspark.default.parallelism   64\nspark.executor.extraJavaOptions -XX:+UseG1GC\n"
        "spark.driver.extraJavaOptions\t-Dsite=1\nspark.master spark://head:7077\n")
    site = spark_conf.read_defaults(spark_conf.site_defaults_path({"SPARK_CONF_DIR": str(conf_dir)}))
    assert site["spark.default.parallelism"] == "64"
    master, conf, env = spark_conf.resolve(None, {}, site, jobs=4, env={})
    assert master == "spark://head:7077"
    # nothing the site set is in what kafkalog adds: spark-submit's own values stay; the driver's JVM options are
    # the site's, whole, followed by kafkalog's quiet log4j (issue 27: one error line whatever the site sets)
    assert not set(conf) & {"spark.default.parallelism", "spark.executor.extraJavaOptions"}
    site_opts, _, quiet = conf["spark.driver.extraJavaOptions"].partition(" ")
    assert site_opts == "-Dsite=1" and quiet.startswith("-Dlog4j2.configurationFile=file:")
    assert conf["spark.sql.parquet.outputTimestampType"] == "TIMESTAMP_MILLIS"
    assert env == {}  # a cluster's executors use the site's Python, not this machine's interpreter path


def test_user_conf_wins_over_everything() -> None:
    user = spark_conf.parse_conf_args(["spark.sql.shuffle.partitions=200", "spark.sql.session.timeZone=UTC",
                                       "spark.pyspark.python=./env/bin/python", "spark.ui.enabled=true"])
    master, conf, env = spark_conf.resolve("yarn", user, {"spark.sql.shuffle.partitions": "8"}, None, env={})
    assert master == "yarn"
    assert conf["spark.sql.shuffle.partitions"] == "200"
    assert conf["spark.ui.enabled"] == "true"
    assert env == {"PYSPARK_PYTHON": "./env/bin/python"}  # PySpark reads only the variable


def test_local_master_defaults() -> None:
    master, conf, env = spark_conf.resolve(None, {}, {}, jobs=3, env={})
    assert master == "local[3]"
    assert "spark.default.parallelism" not in conf  # Spark's default is the core count already
    assert env == {"PYSPARK_PYTHON": sys.executable}
    _m, _c, env = spark_conf.resolve("local-cluster[2,1,1024]", {}, {}, None, env={"PYSPARK_PYTHON": "/opt/py"})
    assert env == {}


def test_bad_conf_argument_is_a_usage_error(tmp_path: Path) -> None:
    r = subprocess.run([*KAFKALOG, "scan", str(tmp_path), "--engine", "spark", "--conf", "novalue"],
                       capture_output=True, text=True)
    assert r.returncode == 2
    assert "--conf 'novalue' is not key=value" in r.stderr
    r = subprocess.run([*KAFKALOG, "scan", str(tmp_path), "--conf", "a=b"], capture_output=True, text=True)
    assert r.returncode == 2 and "apply to --engine spark only" in r.stderr


def test_executor_env_messages() -> None:
    assert "cannot start Python '/x/bin/python'" in spark_conf.executor_env_problem(
        'java.io.IOException: Cannot run program "/x/bin/python": error=2, No such file or directory')
    assert "no kafkalog_cli module" in spark_conf.executor_env_problem(
        "ModuleNotFoundError: No module named 'kafkalog_cli'")
    assert spark_conf.executor_env_problem("java.lang.OutOfMemoryError: Java heap space") is None


# ------------------------------------------------------------------------------------------------ slow: real Spark
def _needs_spark() -> None:
    pytest.importorskip("pyspark", reason="pyspark is not installed: pip install -e '.[test,spark]'")
    if shutil.which("java") is None:
        pytest.skip("Java is not on PATH (the Spark engine needs a JVM)")


def _rows(out: Path, name: str) -> list[dict]:
    from scan_data import load_sorted

    return load_sorted(out, name)


def _local_reference(logdir: Path, tmp: Path) -> Path:
    ref = tmp / "ref"
    r = subprocess.run([*KAFKALOG, "scan", str(logdir), "--records", "--out", str(ref), "--format", "json"],
                       capture_output=True, text=True)
    assert r.returncode in (0, 1), r.stderr
    return ref


def _scan_cluster(logdir: Path, out: Path, master: str, *extra: str) -> dict:
    r = subprocess.run([*KAFKALOG, "scan", str(logdir), "--engine", "spark", "--master", master, "--records",
                        "--out", str(out), "--format", "json", *extra], capture_output=True, text=True, timeout=240)
    assert r.returncode in (0, 1), r.stderr[-3000:]
    return json.loads(r.stdout)


@pytest.mark.slow
def test_local_cluster_two_executors_same_rows_as_local(tmp_path: Path) -> None:
    _needs_spark()
    from scan_data import make_logdir

    logdir = make_logdir(tmp_path)
    ref = _local_reference(logdir, tmp_path)
    _scan_cluster(logdir, tmp_path / "lc", "local-cluster[2,1,1024]")
    for name in ("batches", "problems", "records"):
        assert _rows(tmp_path / "lc", name) == _rows(ref, name), name


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_port(port: int, seconds: float) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return True
        time.sleep(0.5)
    return False


@pytest.mark.slow
def test_standalone_master_and_two_workers(tmp_path: Path) -> None:
    """A standalone cluster on 127.0.0.1 (master + 2 workers, each its own JVM), started and stopped here; the
    scan's input and output are on a path every executor sees (this machine's file system)."""
    _needs_spark()
    import pyspark
    from scan_data import make_logdir

    spark_class = os.path.join(os.path.dirname(pyspark.__file__), "bin", "spark-class")
    if not os.path.exists(spark_class):
        pytest.skip("this pyspark has no bin/spark-class to start a standalone cluster with")
    logdir = make_logdir(tmp_path)
    ref = _local_reference(logdir, tmp_path)
    port = _free_port()
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_LOG_DIR": str(tmp_path / "logs"),
           "SPARK_WORKER_DIR": str(tmp_path / "work"), "PYSPARK_PYTHON": sys.executable}
    procs = [subprocess.Popen([spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                               "--port", str(port), "--webui-port", str(_free_port())],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        assert _wait_port(port, 90), "the standalone master did not start"
        for _ in range(2):
            procs.append(subprocess.Popen(
                [spark_class, "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1", "--cores", "1",
                 "--memory", "1g", "--webui-port", str(_free_port()), f"spark://127.0.0.1:{port}"],
                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        report = _scan_cluster(logdir, tmp_path / "sa", f"spark://127.0.0.1:{port}",
                               "--conf", f"spark.pyspark.python={sys.executable}",
                               "--conf", "spark.executor.memory=512m", "--conf", "spark.cores.max=2")
        assert report["totals"]["batches"] > 0
        for name in ("batches", "problems", "records"):
            assert _rows(tmp_path / "sa", name) == _rows(ref, name), name
        # both workers ran executors
        executors = [p for p in (tmp_path / "work").glob("app-*/*") if p.is_dir()]
        assert len(executors) >= 2, executors
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()


@pytest.mark.slow
def test_missing_executor_environment_is_one_line(tmp_path: Path) -> None:
    _needs_spark()
    from scan_data import make_logdir

    logdir = make_logdir(tmp_path)
    r = subprocess.run([*KAFKALOG, "scan", str(logdir), "--engine", "spark", "--master", "local[1]", "--out",
                        str(tmp_path / "o"), "--conf", "spark.pyspark.python=/nonexistent/env/bin/python"],
                       capture_output=True, text=True, timeout=240)
    assert r.returncode == 2
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("kafkalog: error:")]
    assert errors == [errors[0]] and "cannot start Python '/nonexistent/env/bin/python'" in errors[0]
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr
    assert len(r.stderr.splitlines()) <= 6, r.stderr  # a few JVM start-up lines at most, no stack trace


@pytest.mark.slow
def test_missing_executor_environment_is_one_line_with_site_driver_options(tmp_path: Path) -> None:
    """A site spark-defaults.conf that sets spark.driver.extraJavaOptions (and its own log4j) used to bring back
    ~200 lines of Spark logs and Java stacks: the quiet log4j was added only when nobody set that key."""
    _needs_spark()
    from scan_data import make_logdir

    conf_dir = tmp_path / "conf"
    conf_dir.mkdir()
    (conf_dir / "log4j2.properties").write_text("rootLogger.level = info\nrootLogger.appenderRef.c.ref = c\n"
                                                "appender.c.type = Console\nappender.c.name = c\n"
                                                "appender.c.target = SYSTEM_ERR\n")
    (conf_dir / "spark-defaults.conf").write_text(
        f"spark.driver.extraJavaOptions -Dsite=1 -Dlog4j2.configurationFile=file:{conf_dir}/log4j2.properties\n")
    logdir = make_logdir(tmp_path)
    r = subprocess.run([*KAFKALOG, "scan", str(logdir), "--engine", "spark", "--master", "local[1]", "--out",
                        str(tmp_path / "o"), "--conf", "spark.pyspark.python=/nonexistent/env/bin/python"],
                       capture_output=True, text=True, timeout=240, env={**os.environ, "SPARK_CONF_DIR": str(conf_dir)})
    assert r.returncode == 2
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("kafkalog: error:")]
    assert errors == [errors[0]] and "cannot start Python '/nonexistent/env/bin/python'" in errors[0]
    assert len(r.stderr.splitlines()) <= 6, r.stderr


@pytest.mark.slow
def test_executor_env_archive_is_relocatable(tmp_path: Path) -> None:
    """scripts/build_executor_env.sh packs kafkalog from a wheel with its own interpreter: unpacked anywhere, with
    an empty environment, its bin/python imports kafkalog (from the archive, not this checkout) and scans."""
    from scan_data import make_logdir

    archive = tmp_path / "env.tar.gz"
    r = subprocess.run(["bash", str(Path(__file__).parent.parent / "scripts" / "build_executor_env.sh"),
                        "--python", sys.executable, "-o", str(archive)], capture_output=True, text=True, timeout=600)
    if r.returncode != 0 and "No matching distribution" in r.stderr:
        pytest.skip("no package index reachable to install pyarrow into the archive")
    assert r.returncode == 0, r.stderr[-2000:]
    assert "spark.archives=" in r.stdout
    node = tmp_path / "node" / "work" / "kafkalog_env"
    node.mkdir(parents=True)
    subprocess.run(["tar", "xzf", str(archive), "-C", str(node)], check=True)
    logdir = make_logdir(tmp_path)
    py = str(node / "bin" / "python")
    # cwd outside the checkout: `python -c` puts the working directory first on sys.path
    where = subprocess.run(["env", "-i", py, "-c", "import kafkalog_cli; print(kafkalog_cli.__file__)"],
                           capture_output=True, text=True, check=True, cwd=tmp_path).stdout.strip()
    assert where.startswith(str(node))
    s = subprocess.run(["env", "-i", py, "-m", "kafkalog_cli", "scan", str(logdir), "--format", "json"],
                       capture_output=True, text=True, cwd=tmp_path)
    assert s.returncode == 1 and json.loads(s.stdout)["totals"]["batches"] > 0, s.stderr
