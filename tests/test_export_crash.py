"""export's crash safety (issue 31.5): a kill before every file-changing system call of ``export --format kafka``
(and of an NDJSON file export) leaves either no output at ``--out`` or the complete output, never a partial one
under the final name, and the staging directory a killed run leaves is recognisably partial (its marker), so the
next run replaces it and writes the complete output.

The kills are tests/crash_driver.py's (an audit hook in a forked child of the real CLI counts every open for
writing, rename, unlink, mkdir, rmdir ... under the output's parent and SIGKILLs the child before the k-th). A
bounded sample of kill points by default; all of them under ``-m oracle_long``."""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
from pathlib import Path

import pytest
from crash_driver import _sample, run_forked
from partition_gen import random_partition

from kafkalog_cli.ops.export import _MARKER, LOCK_SUFFIX, STAGING_SUFFIX

SAMPLE = 25


def tree(d: Path) -> dict[str, str]:
    """Every file under ``d`` (relative path -> SHA-256); a file output: its own hash."""
    if d.is_file():
        return {".": hashlib.sha256(d.read_bytes()).hexdigest()}
    return {str(p.relative_to(d)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(d.rglob("*"))
            if p.is_file()}


def _kill_test(tmp_path: Path, fmt: str, out_name: str, sample: int | None) -> None:
    src = tmp_path / "src" / "t-0"
    random_partition(str(src), 5, batches=30)
    ref_root = tmp_path / "ref"
    ref_root.mkdir()

    def args(root: Path) -> list[str]:
        return ["export", str(src), "--format", fmt, "--out", str(root / out_name)]

    calls_log = str(tmp_path / "calls")
    status = run_forked(args(ref_root), {}, root=str(ref_root), call_log=calls_log)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
    calls = open(calls_log).read().splitlines()
    complete = tree(ref_root / out_name)
    # (pyarrow opens a Parquet file in C++, unseen by the audit hook: its only call seen is the rename)
    assert complete and len(calls) >= (1 if fmt == "parquet" else 2)
    seen = set()
    for k in _sample(calls, sample, fmt, str(ref_root)):
        root = tmp_path / f"k{k}"
        root.mkdir()
        status = run_forked(args(root), {}, root=str(root), kill_at=k)
        at = f"kill before call {k}/{len(calls)} ({calls[k - 1].replace(str(ref_root), '')})"
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, f"{at}: not killed ({status})"
        out = root / out_name
        staging = root / (out_name + STAGING_SUFFIX)
        lock = root / (out_name + LOCK_SUFFIX)  # a killed run's lock file: unlocked (the kernel dropped it)
        leftovers = sorted(n for n in os.listdir(root) if n not in (out_name, out_name + STAGING_SUFFIX, lock.name))
        assert not leftovers, f"{at}: {leftovers}"
        if out.exists():
            got = tree(out)
            # killed right after the rename: the complete output, still carrying the partial-export marker
            got.pop(_MARKER, None)
            assert got == complete, f"{at}: the output under its final name is not the complete output"
            assert not staging.exists(), f"{at}: the output and a staging path"
            seen.add("complete")
            shutil.rmtree(root)
            continue
        seen.add("none")
        if staging.is_dir() and os.listdir(staging):  # a partial directory says so: the next run replaces it
            assert (staging / _MARKER).exists(), f"{at}: a staging directory without the partial-export marker"
        # the next run: the complete output, whatever the killed one left
        status = run_forked(args(root), {})
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, f"{at}: the rerun failed ({status})"
        assert tree(out) == complete, f"{at}: the rerun's output differs"
        assert not staging.exists(), f"{at}: the rerun left the staging path"
        assert not lock.exists(), f"{at}: the rerun left the lock file"
        shutil.rmtree(root)
    # the last calls come after the rename: a directory's marker unlink, then (every format) the lock file's unlink
    assert seen == {"none", "complete"}, seen


@pytest.mark.parametrize("fmt, out_name", [("kafka", "restored"), ("ndjson", "o.ndjson")])
def test_kill_at_every_syscall_of_export_leaves_no_output_or_all_of_it(tmp_path: Path, fmt: str,
                                                                       out_name: str) -> None:
    _kill_test(tmp_path, fmt, out_name, SAMPLE)


@pytest.mark.oracle_long
@pytest.mark.parametrize("fmt, out_name", [("kafka", "restored"), ("ndjson", "o.ndjson"), ("parquet", "o.parquet")])
def test_kill_at_every_syscall_of_export_campaign(tmp_path: Path, fmt: str, out_name: str) -> None:
    _kill_test(tmp_path, fmt, out_name, None)
