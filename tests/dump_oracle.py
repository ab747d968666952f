"""Differential `dump` against Kafka's own DumpLogSegments (tests only; issue 26).

``compare(...)`` runs one DumpLogSegments argument list through Kafka's tool (4.0: kafka-real's ``Dump`` in the shared
Batch JVM; an older release: that release's launcher from ``kafka-real/versions``) and through ``kafkalog dump
--kafka-version V`` in-process, on the same files, and returns the disagreement (None when there is none):

- stdout byte for byte, always (also when Kafka's tool dies with a stack trace: what it printed before it died must
  be what kafkalog prints);
- stderr byte for byte where Kafka prints no stack trace; where it does, kafkalog must instead print a located error
  (``kafkalog: error: ...``) and exit non-zero;
- a file kafkalog dumps in its own format where Kafka's tool crashes on the name (``leader-epoch-checkpoint`` and other
  names without a dot, docs/dump.md) only has to begin with Kafka's stdout.

Kafka's tool can write: a ``.timeindex`` whose ``.index`` is missing makes it create an empty ``.index``. kafkalog runs
first, on the untouched files; a caller that reuses a directory after a damaged case copies it first.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from click.testing import CliRunner

from kafkalog_cli.cli.main import cli

STACK = b"\tat "
NO_DOT_OWN_FORMAT = ("leader-epoch-checkpoint",)


@dataclass
class Side:
    rc: int
    stdout: bytes
    stderr: bytes

    @property
    def threw(self) -> bool:
        return b"Exception in thread" in self.stderr or STACK in self.stderr


def kafkalog(args: list[str], version: str = "4.0", accel: bool = True) -> Side:
    env = {} if accel else {"KAFKALOG_NO_ACCEL": "1"}
    saved = {k: os.environ.get(k) for k in ("KAFKALOG_NO_ACCEL",)}
    try:
        os.environ.pop("KAFKALOG_NO_ACCEL", None)
        os.environ.update(env)
        r = CliRunner().invoke(cli, ["dump", "--kafka-version", version, *args], catch_exceptions=False)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return Side(r.exit_code, r.stdout_bytes, r.stderr_bytes)


def kafka(oracle, args: list[str], version: str = "4.0", tool=None) -> Side:  # noqa: ANN001
    """Kafka's DumpLogSegments: 4.0 = kafka-real's Dump (Batch JVM); else ``tool(version)``'s launcher, one JVM."""
    if version == "4.0":
        r = oracle.batch("Dump", *args)
        return Side(r.rc, r.stdout, r.stderr)
    launcher = tool(version)
    env = dict(os.environ, LC_ALL="C.UTF-8")
    p = subprocess.run([str(launcher), *args], capture_output=True, timeout=300, env=env)
    return Side(p.returncode, p.stdout, p.stderr)


def judge(k: Side, ours: Side, files: list[str]) -> str | None:
    """The disagreement between Kafka's run ``k`` and kafkalog's ``ours``, or None."""
    own_format = any(os.path.basename(f) in NO_DOT_OWN_FORMAT or "." not in os.path.basename(f) for f in files)
    if own_format and k.threw:
        if not ours.stdout.startswith(k.stdout):
            return diff("stdout (prefix)", k.stdout, ours.stdout)
        return None
    if k.threw and len(files) > 1:
        # Kafka's tool dies at the first bad file; kafkalog reports it and dumps the others (ops/dump.py): up to the
        # failure the two must agree byte for byte
        if not ours.stdout.startswith(k.stdout):
            return diff("stdout (prefix, Kafka died in a multi-file run)", k.stdout, ours.stdout)
        if ours.rc == 0 or b"kafkalog: error: " not in ours.stderr:
            return f"Kafka threw but kafkalog exited {ours.rc} without a located error"
        return None
    if b"java.lang.OutOfMemoryError" in k.stderr:
        # Kafka's JVM ran out of heap (e.g. a corrupt legacy wrapper whose inner size field it allocates before
        # reading: DataLogInputStream.nextBatch). What it printed before must be what kafkalog printed first; after
        # that kafkalog goes on as the tool would with a larger heap (the short read ends the inner messages).
        if not ours.stdout.startswith(k.stdout):
            return diff("stdout (prefix, Kafka out of memory)", k.stdout, ours.stdout)
        return None
    if ours.stdout != k.stdout:
        return diff("stdout", k.stdout, ours.stdout)
    if k.threw:
        if ours.rc == 0 or b"kafkalog: error: " not in ours.stderr:
            return f"Kafka threw but kafkalog exited {ours.rc} without a located error:\n" + ours.stderr.decode(
                errors="replace"
            ) + "\n--- Kafka stderr:\n" + k.stderr.decode(errors="replace")[:2000]
        return None
    if ours.stderr != k.stderr:
        return diff("stderr", k.stderr, ours.stderr)
    if k.rc != 0 and ours.rc == 0:
        return f"Kafka exited {k.rc}, kafkalog 0"
    return None


def diff(what: str, a: bytes, b: bytes) -> str:
    import difflib

    la = a.decode(errors="replace").splitlines(keepends=True)
    lb = b.decode(errors="replace").splitlines(keepends=True)
    lines = list(difflib.unified_diff(la, lb, "kafka", "kafkalog", n=1))
    return f"{what} differs:\n" + "".join(lines[:40])


def compare(oracle, args: list[str], version: str = "4.0", tool=None, accel: bool = True) -> str | None:  # noqa: ANN001
    """Kafka vs kafkalog on ``args`` (DumpLogSegments arguments with ``--files``); the disagreement or None."""
    files = args[args.index("--files") + 1].split(",") if "--files" in args else []
    ours = kafkalog(args, version, accel)
    k = kafka(oracle, args, version, tool)
    return judge(k, ours, files)


def variants(path: Path) -> list[list[str]]:
    """The DumpLogSegments option sets that apply to a file of this kind."""
    name = path.name
    f = ["--files", str(path)]
    if name.endswith(".log"):
        return [f, f + ["--deep-iteration"], f + ["--print-data-log"], f + ["--deep-iteration", "--print-data-log"],
                f + ["--print-data-log", "--skip-record-metadata"]]
    if name.endswith(".index") or name.endswith(".timeindex"):
        return [f, f + ["--verify-index-only"], f + ["--index-sanity-check"]]
    return [f]


def same_file(a: Path, b: Path) -> bool:
    """Byte equality of two (large) files, read in chunks."""
    if a.stat().st_size != b.stat().st_size:
        return False
    with open(a, "rb") as fa, open(b, "rb") as fb:
        while True:
            x, y = fa.read(1 << 22), fb.read(1 << 22)
            if x != y:
                return False
            if not x:
                return True


def _last_dumping(path: Path) -> str | None:
    """The file named by the last ``Dumping F`` line of a DumpLogSegments stdout (the file it was on when it died)."""
    last = None
    with open(path, "rb") as f:
        for line in f:
            if line.startswith(b"Dumping "):
                last = line[len(b"Dumping "):].rstrip(b"\n").decode(errors="replace")
    return last


def compare_streamed(oracle, args: list[str], version: str, tool,  # noqa: ANN001
                     work: Path) -> tuple[str | None, str | None]:
    """``compare`` for outputs too large to hold twice in memory (every real file in one call): kafkalog runs as its
    console command in a subprocess, at the same time as Kafka's tool (one JVM: 4.0 in the Batch JVM, a release's
    launcher otherwise; kafkalog first where the tool creates files), both writing stdout to files; equal stdouts are compared as streams and judged as equal,
    unequal ones are read and judged as ``compare`` does. Returns (the disagreement or None, the file Kafka's tool
    died on or None)."""
    import sys

    files = args[args.index("--files") + 1].split(",")
    work.mkdir(parents=True, exist_ok=True)
    ours_out, ours_err = work / "kafkalog.out", work / "kafkalog.err"
    env = dict(os.environ, LC_ALL="C.UTF-8")
    # Kafka's tool creates the missing .index of a .timeindex it dumps: kafkalog must have finished with those files
    # before it starts (the module docstring), so such a run is not concurrent
    writes = any(f.endswith(".timeindex") and not os.path.exists(f[: -len(".timeindex")] + ".index") for f in files)
    with open(ours_out, "wb") as o, open(ours_err, "wb") as e:
        proc = subprocess.Popen([sys.executable, "-m", "kafkalog_cli", "dump", "--kafka-version", version, *args],
                                stdout=o, stderr=e, env=env)
        if writes:
            proc.wait(timeout=900)
        try:
            if version == "4.0":
                rc, k_out, k_err = oracle.batch_to_files("Dump", *args)
            else:
                k_out, k_err = work / "kafka.out", work / "kafka.err"
                with open(k_out, "wb") as ko, open(k_err, "wb") as ke:
                    rc = subprocess.run([str(tool(version)), *args], stdout=ko, stderr=ke, timeout=900,
                                        env=env).returncode
        finally:
            ours_rc = proc.wait(timeout=900)
    equal = same_file(k_out, ours_out)
    k = Side(rc, b"" if equal else k_out.read_bytes(), k_err.read_bytes())
    ours = Side(ours_rc, b"" if equal else ours_out.read_bytes(), ours_err.read_bytes())
    died = _last_dumping(k_out) if k.threw else None
    for q in (k_out, k_err, ours_out, ours_err):
        q.unlink()
    return judge(k, ours, files), died
