"""The binary bundle (scripts/build_binary.sh) behaves byte for byte like ``python -m kafkalog_cli``.

Builds ``dist/kafkalog/kafkalog`` (a one-folder bundle, shipped as a tarball) unless it is newer than every source
file, then runs it with an empty environment
(``env -i``) from another directory on a generated partition (one batch per codec) and compares stdout, stderr and
the exit code with the Python entry point. Commands not in ``COMMANDS`` yet are skipped with the reason.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from shipping_helpers import ROOT, make_partition, python_argv

from kafkalog_cli.cli.main import COMMANDS

pytestmark = pytest.mark.slow

BINARY = ROOT / "dist" / "kafkalog" / "kafkalog"
SEGMENT = "0" * 20 + ".log"
SOURCES = [ROOT / "pyproject.toml", ROOT / "scripts" / "build_binary.sh", ROOT / "scripts" / "pyinstaller_entry.py"]


def newest_source_mtime() -> float:
    files = [*SOURCES, *(ROOT / "kafkalog_cli").rglob("*.py"), ROOT / "kafkalog_cli" / "_accel.c"]
    return max(f.stat().st_mtime for f in files if f.exists())


@pytest.fixture(scope="module")
def binary() -> Path:
    if not BINARY.exists() or BINARY.stat().st_mtime < newest_source_mtime():
        result = subprocess.run(["bash", str(ROOT / "scripts" / "build_binary.sh")], capture_output=True, text=True,
                                timeout=900)
        assert result.returncode == 0, f"build failed:\n{result.stdout}\n{result.stderr}"
    return BINARY


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A partition in a directory that is not the repository (the binary must not depend on the tree)."""
    base = tmp_path_factory.mktemp("binary-run")
    make_partition(base)
    return base


def run_both(binary: Path, workdir: Path, argv: list[str]) -> tuple[subprocess.CompletedProcess, subprocess.CompletedProcess]:
    frozen = subprocess.run(["env", "-i", str(binary), *argv], capture_output=True, cwd=workdir, timeout=120,
                            stdin=subprocess.DEVNULL)
    # the same minimal environment for Python, plus what it needs to find this tree
    env = {"PYTHONPATH": str(ROOT), "PATH": os.defpath}
    source = subprocess.run([*python_argv(), *argv], capture_output=True, cwd=workdir, env=env, timeout=120,
                            stdin=subprocess.DEVNULL)
    return frozen, source


CASES = {
    "version": ["--version"],
    "help": ["--help"],
    "usage-error": ["no-such-command"],
    "dump-log": ["dump", f"orders-0/{SEGMENT}"],
    "dump-deep-data": ["dump", "--deep-iteration", "--print-data-log", "orders-0"],
    "dump-json": ["dump", "--format", "json", "--print-data-log", f"orders-0/{SEGMENT}"],
    "dump-index": ["dump", "--verify-index-only", f"orders-0/{'0' * 20}.index"],
    "dump-missing": ["dump", "orders-0/missing.log"],
    "verify-crc": ["verify-crc", "orders-0"],
    "verify-crc-deep": ["verify-crc", "--deep", "orders-0"],
    "verify-crc-missing": ["verify-crc", "no-such-dir"],
    "verify-crc-jobs": ["verify-crc", "--jobs", "2", "--deep", "."],  # process pool inside the frozen binary
    "seek-offset": ["seek-offset", "orders-0", "7"],
    "seek-offset-help": ["seek-offset", "--help"],
    "completion-bash": ["completion", "bash"],
    "completion-fish": ["completion", "fish"],
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_binary_matches_python(case: str, binary: Path, workdir: Path) -> None:
    argv = CASES[case]
    if argv and not argv[0].startswith("-") and argv[0] != "no-such-command" and argv[0] not in COMMANDS:
        pytest.skip(f"kafkalog {argv[0]} does not exist yet (not in COMMANDS)")
    frozen, source = run_both(binary, workdir, argv)
    assert (frozen.returncode, frozen.stderr.decode(), frozen.stdout.decode()) == (
        source.returncode, source.stderr.decode(), source.stdout.decode())
    assert b"Traceback" not in frozen.stderr


def test_binary_answers_completion(binary: Path, workdir: Path) -> None:
    """A TAB press runs the binary with _KAFKALOG_COMPLETE: same candidates as the Python entry point."""
    env = ["_KAFKALOG_COMPLETE=fish_complete", "COMP_WORDS=kafkalog ", "COMP_CWORD="]
    frozen = subprocess.run(["env", "-i", *env, str(binary)], capture_output=True, cwd=workdir, timeout=60)
    source = subprocess.run([*python_argv()], capture_output=True, cwd=workdir, timeout=60,
                            env={"PYTHONPATH": str(ROOT), **dict(e.split("=", 1) for e in env)})
    assert frozen.returncode == source.returncode == 0
    assert frozen.stdout == source.stdout
    assert sorted(line.split(",", 1)[1].split("\t")[0] for line in frozen.stdout.decode().splitlines()) == sorted(COMMANDS)


def test_binary_selftest_every_codec_and_hardware_crc(binary: Path) -> None:
    result = subprocess.run(["env", "-i", "KAFKALOG_SELFTEST=1", str(binary)], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    for name in ("gzip", "snappy", "lz4", "zstd"):
        assert f"codec {name}: ok" in result.stdout
    # a compiled CRC-32C (the accelerator's since issue 20's start-up work, else the crc32c package), not crcmod's
    assert "crc32c: accel-" in result.stdout or "crc32c: crc32c-" in result.stdout
    assert "crc32c package: ok" in result.stdout  # KAFKALOG_NO_ACCEL=1's reference path still has it
    assert "accelerator: kafkalog_cli._accel ok" in result.stdout


def test_binary_bundles_no_pyspark(binary: Path) -> None:
    """pyspark, pandas, pyarrow and numpy would add ~100 MB; the build excludes them (size guard, on the tarball that
    ships and on the unpacked folder)."""
    (tarball,) = binary.parent.parent.glob("kafkalog-*.tar.gz")
    assert tarball.stat().st_size < 40 * 1024 * 1024
    assert sum(f.stat().st_size for f in binary.parent.rglob("*") if f.is_file()) < 80 * 1024 * 1024


def test_binary_runs_through_a_symlink(binary: Path, workdir: Path, tmp_path: Path) -> None:
    """The documented install: unpack the folder anywhere, symlink the executable into PATH."""
    link = tmp_path / "kafkalog"
    link.symlink_to(binary)
    result = subprocess.run(["env", "-i", str(link), "dump", f"orders-0/{SEGMENT}"], capture_output=True, cwd=workdir,
                            timeout=60)
    assert result.returncode == 0 and result.stdout.startswith(b"Dumping"), result.stderr


def test_build_from_a_clean_clone(tmp_path: Path) -> None:
    """A fresh clone has no compiled _accel: the build compiles it first and the bundle carries it (once, PyInstaller
    only warned and shipped a bundle 20x slower on deep dumps); with no C compiler the build fails instead."""
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(ROOT), str(clone)], check=True, timeout=120)
    head = subprocess.run(["git", "-C", str(ROOT), "stash", "create"], capture_output=True, text=True).stdout.strip()
    if head:  # uncommitted changes of this tree: test them too
        subprocess.run(["git", "-C", str(clone), "fetch", "-q", str(ROOT), head], check=True, timeout=120)
        subprocess.run(["git", "-C", str(clone), "checkout", "-q", head], check=True, timeout=60)
    assert not list((clone / "kafkalog_cli").glob("_accel*.so"))
    env = {**os.environ, "KAFKALOG_BUILD_VENV": str(ROOT / "build" / "venv")}  # reuse the venv: same dependencies
    broken = subprocess.run(["bash", str(clone / "scripts" / "build_binary.sh")], capture_output=True, text=True,
                            timeout=900, env={**env, "CC": "false"})
    assert broken.returncode == 2 and "did not build" in broken.stderr, broken.stdout + broken.stderr
    assert not (clone / "dist" / "kafkalog").exists()
    built = subprocess.run(["bash", str(clone / "scripts" / "build_binary.sh")], capture_output=True, text=True,
                           timeout=900, env=env)
    assert built.returncode == 0, built.stdout + built.stderr
    assert "accelerator: kafkalog_cli._accel ok" in built.stdout
    assert "Hidden import" not in built.stdout + built.stderr


def test_binary_scan_says_pyarrow_is_missing(binary: Path, workdir: Path) -> None:
    """The binary is built without pyarrow (the parquet extra, ~60 MB more): scan must say so, not crash."""
    if "scan" not in COMMANDS:
        pytest.skip("kafkalog scan does not exist yet (not in COMMANDS)")
    result = subprocess.run(["env", "-i", str(binary), "scan", "--jobs", "2", "orders-0"], capture_output=True,
                            text=True, cwd=workdir, timeout=120)
    if result.returncode == 0:
        return  # a build that bundles pyarrow, or a scan that no longer needs it
    assert result.returncode == 2
    assert "pyarrow" in result.stderr and "Traceback" not in result.stderr
