"""The scan's settings travel as an object (scan/settings.py), never through environment variables (issue 35,
item 4): no module of cli/scan.py or scan/ writes os.environ as a channel, and a scan leaves os.environ as it found
it while its worker processes (and the in-process walk) still apply --broker-id / --low-impact / --max-read-rate."""

from __future__ import annotations

import ast
import os
import pickle
from pathlib import Path

import pytest
from scan_data import load_sorted, make_logdir

ROOT = Path(__file__).resolve().parents[1]
FILES = [ROOT / "kafkalog_cli" / "cli" / "scan.py", *sorted((ROOT / "kafkalog_cli" / "scan").glob("*.py"))]

# Writes that configure a third party before it loads, not a channel to our workers; each must still occur.
ALLOWED: dict[tuple[str, str], str] = {
    ("kafkalog_cli/scan/memory_pool.py", "prefer_jemalloc"):
        "ARROW_DEFAULT_MEMORY_POOL for pyarrow, set before pyarrow is imported (pyarrow reads it only at load)",
    ("kafkalog_cli/scan/spark_engine.py", "get_session"):
        "PYSPARK_PYTHON & co. for the JVM PySpark starts (spark_conf.resolve): read by Spark, not by kafkalog",
}
WRITERS = {"update", "setdefault", "pop", "popitem", "clear", "__setitem__", "__delitem__"}


def _is_environ(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "environ" and isinstance(node.value, ast.Name)
            and node.value.id == "os")


def environ_writes(source: str) -> list[tuple[int, str]]:
    """(line, enclosing function) of every write to os.environ (item assignment or deletion, a mutating method,
    os.putenv / os.unsetenv) in ``source``."""
    found: list[tuple[int, str]] = []

    def visit(node: ast.AST, func: str) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            func = node.name
        hit = False
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            hit = any(isinstance(t, ast.Subscript) and _is_environ(t.value) for t in targets)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            f = node.func
            hit = (f.attr in WRITERS and _is_environ(f.value)) or (
                f.attr in ("putenv", "unsetenv") and isinstance(f.value, ast.Name) and f.value.id == "os")
        if hit:
            found.append((getattr(node, "lineno", 0), func))
        for child in ast.iter_child_nodes(node):
            visit(child, func)

    visit(ast.parse(source), "<module>")
    return found


def test_the_check_finds_each_kind_of_write() -> None:
    src = ("import os\ndef f():\n    os.environ['A'] = '1'\n    os.environ.update(b='2')\n    del os.environ['A']\n"
           "    os.putenv('C', '3')\n    os.environ.setdefault('D', '4')\n    x = os.environ.get('E')\n")
    assert environ_writes(src) == [(3, "f"), (4, "f"), (5, "f"), (6, "f"), (7, "f")]


def test_no_environment_variable_as_a_channel_in_the_scan() -> None:
    seen: set[tuple[str, str]] = set()
    bad = []
    for path in FILES:
        rel = str(path.relative_to(ROOT))
        for line, func in environ_writes(path.read_text()):
            if (rel, func) in ALLOWED:
                seen.add((rel, func))
            else:
                bad.append(f"{rel}:{line} ({func}) writes os.environ: pass the value in ScanSettings instead")
    assert not bad, "\n".join(bad)
    assert seen == set(ALLOWED), f"allow-list entries that no longer occur: {set(ALLOWED) - seen}"


def test_settings_are_frozen_and_pickle() -> None:
    import dataclasses

    from kafkalog_cli.scan.settings import ScanSettings

    s = ScanSettings(broker_id=12, low_impact=True, max_read_rate=1 << 20, endpoint_url="http://127.0.0.1:9000")
    assert pickle.loads(pickle.dumps(s)) == s
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.broker_id = 3  # type: ignore[misc]


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_broker_id_reaches_the_workers_and_the_environment_is_left_alone(tmp_path: Path, jobs: str) -> None:
    """--jobs 2 with several partitions: worker processes write the rows (the settings pickled to them);
    --jobs 1: this process walks. Both write broker_id 12 on every row, and os.environ is unchanged after."""
    from click.testing import CliRunner

    from kafkalog_cli.cli.scan import scan
    from kafkalog_cli.scan import memory_pool
    from kafkalog_cli.scan.settings import ScanSettings, current

    logdir = make_logdir(tmp_path / "host")
    before = dict(os.environ)
    res = CliRunner().invoke(scan, [str(logdir), "--broker-id", "12", "--low-impact", "--max-read-rate", "1G",
                                    "--jobs", jobs, "--records", "--out", str(tmp_path / "out"), "--format", "json"])
    assert res.exit_code == 1, res.output  # the generated log dir has its planted problems
    for name in ("batches", "problems", "records"):
        rows = load_sorted(tmp_path / "out", name)
        assert rows and {r["broker_id"] for r in rows} == {12}, name
    after = dict(os.environ)
    after.pop(memory_pool.ENV, None)  # the allowed write (pyarrow's allocator, set before pyarrow loads)
    before.pop(memory_pool.ENV, None)
    assert after == before
    assert current() == ScanSettings()  # restored after the scan
