"""``kafkalog scan`` picks Arrow's allocator before pyarrow is loaded (``scan/memory_pool.py``): jemalloc on Linux
where the wheel has it, never over the user's choice."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pa = pytest.importorskip("pyarrow")

PROBE = """
import sys
from click.testing import CliRunner
from kafkalog_cli.cli.main import cli
res = CliRunner().invoke(cli, ["scan", sys.argv[1], "--out", sys.argv[2], "--format", "json"])
assert res.exit_code in (0, 1), res.output
import pyarrow
print(pyarrow.default_memory_pool().backend_name)
"""


def _has_jemalloc() -> bool:
    try:
        pa.jemalloc_memory_pool()
    except NotImplementedError:
        return False
    return True


def _backend(tmp_path: Path, env: dict[str, str]) -> str:
    from verify_helpers import make_segment

    (tmp_path / "t-0").mkdir(exist_ok=True)
    (tmp_path / "t-0" / "00000000000000000000.log").write_bytes(make_segment(3).data)
    clean = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    out = subprocess.run([sys.executable, "-c", PROBE, str(tmp_path / "t-0"), str(tmp_path / "out")],
                         env={**clean, **env}, capture_output=True, text=True, check=True)
    assert "Unsupported backend" not in out.stderr
    return out.stdout.strip().splitlines()[-1]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="jemalloc is chosen on Linux only")
def test_scan_runs_on_jemalloc_when_pyarrow_has_it(tmp_path: Path) -> None:
    if not _has_jemalloc():
        pytest.skip("this pyarrow is built without jemalloc")
    assert _backend(tmp_path, {}) == "jemalloc"


def test_the_users_choice_of_pool_stands(tmp_path: Path) -> None:
    assert _backend(tmp_path, {"ARROW_DEFAULT_MEMORY_POOL": "system"}) == "system"


@pytest.mark.parametrize("config, expected", [("#define ARROW_JEMALLOC\n#define ARROW_MIMALLOC\n", True),
                                              ("/* #undef ARROW_JEMALLOC */\n#define ARROW_MIMALLOC\n", False)])
def test_jemalloc_is_asked_for_only_where_arrow_has_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, config: str,
                                                       expected: bool) -> None:
    """Read from the wheel's Arrow build configuration, without importing pyarrow (ARM wheels lack jemalloc, and
    Arrow prints a warning on every start when the variable names a pool it does not have)."""
    import importlib.machinery
    import importlib.util

    from kafkalog_cli.scan import memory_pool

    (tmp_path / "include" / "arrow" / "util").mkdir(parents=True)
    (tmp_path / "include" / "arrow" / "util" / "config.h").write_text(config)
    spec = importlib.machinery.ModuleSpec("pyarrow", None, is_package=True)
    spec.submodule_search_locations = [str(tmp_path)]
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: spec if name == "pyarrow" else None)
    assert memory_pool.has_jemalloc() is expected
    monkeypatch.delenv(memory_pool.ENV, raising=False)
    monkeypatch.delitem(sys.modules, "pyarrow")  # as before the CLI loads it (restored after the test)
    memory_pool.prefer_jemalloc()
    assert os.environ.get(memory_pool.ENV) == ("jemalloc" if expected else None)
