"""Kafka's own storage code as the oracle (tests only): ``../shared/kafka-real`` built once into its cache and run.

The harness lives in ``../shared/kafka-real`` (Kafka's sources stay in its tarballs; nothing of it is copied here).
``launcher()`` builds it on first use with this interpreter's pyspark jars (``build.sh --python sys.executable``;
an unchanged rebuild is a 0.3 s no-op thanks to its stamps) and returns the ``kafka-real`` launcher. ``dump_launcher(tag)``
does the same for one release's DumpLogSegments in ``versions/``.

Where the oracle cannot be had (no JDK, no pyspark, no ``../shared``) the tests that need it skip, except under
``CI=true``, where a missing oracle fails the test: CI installs everything it needs (``.ci/run``).

``Oracle`` runs programs either one JVM per call (``run``) or through one long-lived ``Batch`` JVM (``batch``), which
is what the differential tests use: a JVM start costs 2-3 s on the 2-core machine, a request in a warm JVM ~10-100 ms.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest
from realdata_path import kafka_real_root

#: the dump profiles kafkalog has for the four tags versions/ builds
VERSION_TAGS = {"2.8": "2.8.2", "3.0": "3.0.2", "3.6": "3.6.2", "3.9": "3.9.0-rc3"}


def kafka_real_dir() -> Path:
    return kafka_real_root()


class OracleUnavailable(Exception):
    """The oracle cannot be built here (the message says what is missing)."""


_lock = threading.Lock()
_built: dict[str, Path | OracleUnavailable] = {}


def _build(key: str, cmd: list[str]) -> Path:
    with _lock:
        got = _built.get(key)
        if got is None:
            try:
                p = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
            except (OSError, subprocess.TimeoutExpired) as e:
                got = OracleUnavailable(f"{cmd[0]}: {e}")
            else:
                lines = p.stdout.strip().splitlines()
                if p.returncode != 0 or not lines or not Path(lines[-1]).exists():
                    tail = (p.stderr.strip().splitlines() or ["(no output)"])[-1]
                    got = OracleUnavailable(f"{' '.join(cmd[:2])} exit {p.returncode}: {tail}")
                else:
                    got = Path(lines[-1])
            _built[key] = got
    if isinstance(got, OracleUnavailable):
        raise got
    return got


def _unavailable(why: str):
    if os.environ.get("CI") == "true":
        pytest.fail(f"kafka-real oracle missing under CI=true: {why}")
    pytest.skip(f"kafka-real oracle not available: {why}")


def launcher() -> Path:
    """The built ``kafka-real`` launcher (skips or, under CI=true, fails when it cannot be built)."""
    d = kafka_real_dir()
    if not (d / "build.sh").exists():
        _unavailable(f"{d}/build.sh not found (set KAFKALOG_KAFKA_REAL)")
    try:
        return _build("main", ["bash", str(d / "build.sh"), "--python", sys.executable])
    except OracleUnavailable as e:
        _unavailable(str(e))
        raise


def dump_launcher(version: str) -> Path:
    """Kafka's own DumpLogSegments of release ``version`` (a kafkalog profile name: 2.8, 3.0, 3.6, 3.9)."""
    tag = VERSION_TAGS[version]
    d = kafka_real_dir() / "versions"
    if not (d / "build.sh").exists():
        _unavailable(f"{d}/build.sh not found")
    try:
        return _build(tag, ["bash", str(d / "build.sh"), tag, "--python", sys.executable])
    except OracleUnavailable as e:
        _unavailable(str(e))
        raise


@dataclass
class Run:
    rc: int
    stdout: bytes
    stderr: bytes

    def json(self) -> dict:
        return json.loads(self.stdout)


class Oracle:
    """One ``kafka-real`` launcher; ``batch()`` keeps a single JVM for many requests."""

    def __init__(self, path: Path, workdir: Path):
        self.path = path
        self.workdir = workdir
        self._proc: subprocess.Popen | None = None
        self._n = 0
        self._plock = threading.Lock()

    def run(self, program: str, *args: str, timeout: float = 300) -> Run:
        """One JVM for one program (exactly ``kafka-real PROGRAM ARGS``)."""
        env = dict(os.environ, LC_ALL="C.UTF-8")
        p = subprocess.run([str(self.path), program, *args], capture_output=True, timeout=timeout, env=env)
        return Run(p.returncode, p.stdout, p.stderr)

    def batch(self, program: str, *args: str) -> Run:
        """The same program run in the shared Batch JVM (the bytes are those of a standalone run)."""
        rc, out, err = self.batch_to_files(program, *args)
        res = Run(rc, out.read_bytes(), err.read_bytes())
        out.unlink()
        err.unlink()
        return res

    def batch_to_files(self, program: str, *args: str) -> tuple[int, Path, Path]:
        """``batch`` leaving stdout and stderr in files (rc, stdout path, stderr path) the caller removes: for
        outputs of hundreds of MB (a deep dump of every real file), compared as streams."""
        with self._plock:
            if self._proc is None or self._proc.poll() is not None:
                env = dict(os.environ, LC_ALL="C.UTF-8")
                self._proc = subprocess.Popen(
                    [str(self.path), "Batch"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
                )
            self._n += 1
            out = self.workdir / f"req{self._n}.out"
            err = self.workdir / f"req{self._n}.err"
            req = {"id": str(self._n), "program": program, "args": list(args), "stdout": str(out), "stderr": str(err)}
            assert self._proc.stdin is not None and self._proc.stdout is not None
            self._proc.stdin.write(json.dumps(req) + "\n")
            self._proc.stdin.flush()
            line = self._proc.stdout.readline()
            if not line:
                self._proc = None
                raise RuntimeError(f"kafka-real Batch JVM ended during request {req}")
            ans = json.loads(line)
            return int(ans["rc"]), out, err

    def json(self, program: str, *args: str) -> dict:
        """A Write/Load/Clean/Truncate/Seek run's JSON (through the Batch JVM)."""
        r = self.batch(program, *args)
        if r.rc != 0:
            raise AssertionError(f"kafka-real {program} {' '.join(args)}: rc {r.rc}\n{r.stderr.decode(errors='replace')}")
        return r.json()

    def close(self) -> None:
        if self._proc is not None:
            try:
                assert self._proc.stdin is not None
                self._proc.stdin.close()
                self._proc.wait(timeout=30)
            except Exception:
                self._proc.kill()
            self._proc = None


def write_partition(oracle: Oracle, out: Path, plan: dict) -> Path:
    """Kafka's ``UnifiedLog`` writes ``plan`` into the new data dir ``out``; returns the partition directory."""
    res = oracle.json("Write", "--out", str(out), "--plan-json", json.dumps(plan))
    if res.get("error"):
        raise AssertionError(f"Write failed: {res['error']}")
    return Path(res["partitionDir"])


def dir_digest(d: Path) -> dict[str, str]:
    """name -> sha256 of every regular file directly in ``d`` (what a 'Load changes no byte' check compares)."""
    import hashlib

    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(d.iterdir()) if p.is_file()}
