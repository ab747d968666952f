"""The Spark session settings of ``kafkalog scan --engine spark``: what the site configured wins.

Why this module: the first Spark engine forced ``spark.default.parallelism`` to the driver's CPU count and replaced
the executors' and driver's JVM options, so a cluster whose ``spark-defaults.conf`` said 64 ran 4 tasks. Here the
settings come in three layers, the later winning:

1. kafkalog's conveniences (quiet log4j, no UI, a fast JIT for short jobs, a few shuffle partitions), applied only
   for keys that neither the site (``spark-defaults.conf`` in ``SPARK_CONF_DIR`` or ``SPARK_HOME/conf``) nor the
   user (``--conf``) set;
2. the site's ``spark-defaults.conf`` (spark-submit reads it anyway; it is read here only to know which keys not to
   touch);
3. the user's ``--conf key=value``.

Two keys are part of the dataset format rather than tuning and are set unless ``--conf`` says otherwise:
``spark.sql.parquet.outputTimestampType=TIMESTAMP_MILLIS`` (the schema's ``timestamp(ms, UTC)``) and
``spark.sql.session.timeZone=UTC``. ``spark.default.parallelism`` is never set: Spark's own default (all cores of a
local master, the executors' cores on a cluster) is what a scan wants.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Mapping

from kafkalog_cli.errors import KafkalogError


class ExecutorEnvironmentError(KafkalogError):
    """The Spark executors cannot run the scan's Python code (no interpreter there, or no kafkalog in it)."""

# kafkalog's conveniences: only for keys nobody else set
CONVENIENCES = {
    "spark.app.name": "kafkalog-scan",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "4",
    "spark.executor.extraJavaOptions": "-XX:TieredStopAtLevel=1",
}
# part of the output format: the site's value is overridden, a --conf value is not
FORMAT = {
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MILLIS",
    "spark.sql.session.timeZone": "UTC",
}


def parse_conf_args(items: tuple[str, ...] | list[str]) -> dict[str, str]:
    """``--conf key=value`` arguments as a dict. Raises ValueError naming the first malformed one."""
    out: dict[str, str] = {}
    for item in items:
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise ValueError(f"--conf {item!r} is not key=value (e.g. --conf spark.executor.memory=4g)")
        out[key.strip()] = value
    return out


def site_defaults_path(env: Mapping[str, str] | None = None) -> str | None:
    """The ``spark-defaults.conf`` spark-submit would read: ``$SPARK_CONF_DIR`` else ``$SPARK_HOME/conf``, else the
    pip-installed pyspark's ``conf`` directory. None when there is none."""
    env = os.environ if env is None else env
    candidates = []
    if env.get("SPARK_CONF_DIR"):
        candidates.append(env["SPARK_CONF_DIR"])
    elif env.get("SPARK_HOME"):
        candidates.append(os.path.join(env["SPARK_HOME"], "conf"))
    else:
        try:
            import importlib.util

            spec = importlib.util.find_spec("pyspark")
        except (ImportError, ValueError):
            spec = None
        if spec is not None and spec.origin:
            candidates.append(os.path.join(os.path.dirname(spec.origin), "conf"))
    for d in candidates:
        path = os.path.join(d, "spark-defaults.conf")
        if os.path.isfile(path):
            return path
    return None


def read_defaults(path: str | None) -> dict[str, str]:
    """Keys and values of a ``spark-defaults.conf`` (whitespace-separated ``key value`` lines, ``#`` comments)."""
    out: dict[str, str] = {}
    if path is None:
        return out
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            parts = line.split(None, 1)
            out[parts[0]] = parts[1].strip() if len(parts) > 1 else ""
    return out


def resolve(master: str | None, user: dict[str, str], site: dict[str, str], jobs: int | None,
            env: dict[str, str] | None = None) -> tuple[str, dict[str, str], dict[str, str]]:
    """(master, the settings kafkalog adds to the builder, environment variables to set before the JVM starts).
    Only keys the site and the user did not set are added, except the FORMAT keys (over the site) and the user's
    own ``--conf`` (always, verbatim)."""
    env = dict(os.environ) if env is None else env
    chosen = master or user.get("spark.master") or site.get("spark.master") or env.get("MASTER")
    if not chosen:
        chosen = f"local[{jobs or '*'}]"
    taken = set(site) | set(user)
    conf: dict[str, str] = {}
    for key, value in CONVENIENCES.items():
        if key not in taken:
            conf[key] = value
    quiet = f"-Dlog4j2.configurationFile=file:{_quiet_log4j()}"
    if "spark.driver.extraJavaOptions" not in taken:
        conf["spark.driver.extraJavaOptions"] = f"-XX:TieredStopAtLevel=1 {quiet}"
    elif "spark.driver.extraJavaOptions" not in user:
        # the site's driver options stay, whole; the quiet log4j goes last (the last -D of a property wins), so
        # a failure is kafkalog's one error line whatever the site sets, not ~200 lines of Spark logs (issue 27)
        conf["spark.driver.extraJavaOptions"] = f"{site['spark.driver.extraJavaOptions']} {quiet}".strip()
    for key, value in FORMAT.items():
        if key not in user:
            conf[key] = value
    conf.update(user)
    conf.pop("spark.master", None)
    # The executors' Python: PySpark started from Python (not spark-submit) takes it from PYSPARK_PYTHON only
    # (pyspark/core/context.py: pythonExec = os.environ.get("PYSPARK_PYTHON", "python3")), so a
    # spark.pyspark.python setting is turned into that variable. Local masters (local[N], local-cluster[...]) start
    # executors on this machine: without any setting they run this very interpreter (else the system python3, which
    # cannot import kafkalog_cli).
    out_env: dict[str, str] = {}
    python = user.get("spark.pyspark.python") or site.get("spark.pyspark.python")
    if python:
        out_env["PYSPARK_PYTHON"] = python
    elif chosen.startswith("local") and not env.get("PYSPARK_PYTHON"):
        out_env["PYSPARK_PYTHON"] = sys.executable
    return chosen, conf, out_env


QUIET_LOG4J = """\
rootLogger.level = fatal
rootLogger.appenderRef.console.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
"""


def _quiet_log4j() -> str:
    """A log4j2 configuration that shows only fatal errors: an on-call report should not open with 20 lines of JVM
    warnings, nor a failed task's 138-line stack trace (the failure reaches kafkalog as an exception and is reported
    in one line). Written to a temp file because the JVM reads it by path."""
    path = os.path.join(tempfile.gettempdir(), f"kafkalog-log4j2-fatal-{os.getuid()}.properties")
    if not os.path.exists(path):
        with open(path, "w") as f:
            f.write(QUIET_LOG4J)
    return path


def executor_env_problem(text: str) -> str | None:
    """One line saying that the executors have no usable Python environment, when ``text`` (a Spark job failure,
    with its Java and Python stack traces) shows it; else None."""
    import re

    m = re.search(r'Cannot run program "([^"]+)"', text)
    if m:
        return (f"the Spark executors cannot start Python {m.group(1)!r} (no such program on the worker): ship an "
                "executor environment (scripts/build_executor_env.sh, then --conf spark.archives=... and "
                "PYSPARK_PYTHON=./kafkalog_env/bin/python) or install kafkalog at that path on every node")
    m = re.search(r"No module named '?(kafkalog_cli|pyarrow)[\w.]*'?", text)
    if m:
        return (f"the Spark executors' Python has no {m.group(1)} module: ship an executor environment built from "
                "the kafkalog wheel (scripts/build_executor_env.sh) with spark.archives, or install kafkalog on "
                "every node")
    m = re.search(r"Python in worker has different version (.+?) than that in driver ([\d.]+)", text)
    if m:
        return (f"the Spark executors run Python {m.group(1)} but the driver runs {m.group(2)}: build the executor "
                "environment with the driver's Python version")
    return None
