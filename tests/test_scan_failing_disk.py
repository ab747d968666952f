"""``kafkalog scan`` on the failing disk (issue 13's scan items): real EIO from the FUSE file system of
test_failing_disk.py through both workers' paths, files that vanish, leftovers, odd directory names."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from test_failing_disk import BAD, BAD_PAGES, SEG_NAME, _segment, bad_disk  # noqa: F401 - bad_disk is a fixture

from kafkalog_cli.cli.main import cli


def _scan(*args: str, out: Path | None = None) -> tuple[int, dict]:
    extra = ["--out", str(out)] if out is not None else []
    res = CliRunner().invoke(cli, ["scan", "--format", "json", *extra, *args])
    assert res.exception is None or isinstance(res.exception, SystemExit), res.output
    return res.exit_code, json.loads(res.stdout)


def _rows(out: Path, name: str) -> list[dict]:
    files = sorted(Path(out, name).rglob("*.parquet"))
    return [r for f in files for r in pq.read_table(f).to_pylist()]


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_scan_reports_exact_unreadable_range_and_keeps_the_rest(bad_disk, tmp_path, jobs):  # noqa: F811
    disk = bad_disk({f"t-0/{SEG_NAME}": _segment(), f"t-1/{SEG_NAME}": _segment()}, {f"t-0/{SEG_NAME}": [BAD]})
    out = tmp_path / "out"
    code, doc = _scan("--jobs", jobs, str(disk.mnt), out=out)
    assert code == 1, doc  # problems found; no file is unreadable as a whole
    problems = _rows(out, "problems")
    bad = [(p["partition_dir"], p["position"], p["end"]) for p in problems if p["kind"] == "unreadable"]
    assert bad == [("t-0", *BAD_PAGES)]
    batches = _rows(out, "batches")
    assert len([b for b in batches if b["partition_dir"] == "t-0"]) == 95  # the rest of the segment is listed
    assert len([b for b in batches if b["partition_dir"] == "t-1"]) == 100
    assert doc["totals"]["unreadable"] == 0
