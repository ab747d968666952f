"""The accelerator under AddressSanitizer + UndefinedBehaviorSanitizer (scripts/sanitize.sh), run by CI.

The script builds ``_accel`` with ``-fsanitize=address,undefined`` into a temporary copy of the tree and runs the fuzz
and corrupt-input tests that reach every C entry point against that build. Any sanitizer report (an out-of-bounds
read, a use after free, a signed overflow, a misaligned load ...) halts the process, so the run fails; this test
also fails on a report found in the output. Skipped cleanly where gcc, libasan or the Python headers are missing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
REPORTS = ("ERROR: AddressSanitizer", "runtime error:", "ERROR: LeakSanitizer", "SUMMARY: UndefinedBehaviorSanitizer")


def _toolchain_missing() -> str | None:
    if sys.platform != "linux":
        return "the sanitizer build is set up for Linux/gcc"
    gcc = shutil.which(os.environ.get("CC", "gcc"))
    if gcc is None:
        return "no gcc"
    lib = subprocess.run([gcc, "-print-file-name=libasan.so"], capture_output=True, text=True).stdout.strip()
    if not lib or not os.path.isabs(lib) or not os.path.exists(lib):
        return "gcc has no libasan.so"
    if not (Path(sysconfig.get_paths()["include"]) / "Python.h").exists():
        return "no Python.h to build the extension against"
    return None


@pytest.mark.slow
def test_accelerator_is_clean_under_asan_and_ubsan():
    missing = _toolchain_missing()
    if missing:
        pytest.skip(f"sanitizer build not possible here: {missing}")
    env = {k: v for k, v in os.environ.items() if k not in ("KAFKALOG_NO_ACCEL", "LD_PRELOAD", "PYTHONPATH")}
    env["PYTHON"] = sys.executable
    res = subprocess.run(["bash", str(ROOT / "scripts" / "sanitize.sh")], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=900)
    out = res.stdout + res.stderr
    if res.returncode == 77:
        pytest.skip("sanitize.sh: " + out.strip().splitlines()[-1])
    found = [r for r in REPORTS if r in out]
    assert res.returncode == 0 and not found, f"exit {res.returncode}, reports {found}:\n{out[-6000:]}"
    assert "sanitized build:" in out and " passed" in out, out[-3000:]
