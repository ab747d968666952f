"""``kafkalog scan`` on the failing disk (issue 13's scan items): real EIO from the FUSE file system of
test_failing_disk.py through both workers' paths, files that vanish, leftovers, odd directory names."""

from __future__ import annotations

import json
import os
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


def _logdir(tmp_path: Path) -> tuple[Path, Path]:
    from verify_helpers import make_segment

    part = tmp_path / "ld" / "t-0"
    part.mkdir(parents=True)
    (part / SEG_NAME).write_bytes(make_segment(4).data)
    victim = part / "00000000000000000016.log"
    victim.write_bytes(make_segment(4, base=16).data)
    return tmp_path / "ld", victim


def test_segment_deleted_between_listing_and_opening_is_a_vanished_note(tmp_path, monkeypatch):
    from kafkalog_cli.scan import paths

    ld, victim = _logdir(tmp_path)
    real = paths.expand

    def expand_then_delete(*args):
        found = real(*args)
        victim.unlink()  # retention deleted it after the listing
        return found

    monkeypatch.setattr(paths, "expand", expand_then_delete)
    out = tmp_path / "out"
    code, doc = _scan("--jobs", "1", str(ld), out=out)
    assert code == 0, doc  # a note, not a problem
    notes = [(p["kind"], p["severity"], p["segment"]) for p in _rows(out, "problems")]
    assert notes == [("vanished", "info", victim.name)]
    assert len(_rows(out, "batches")) == 4  # the other segment was scanned


def test_segment_truncated_after_verify_pass_is_a_note_and_rows_before_are_kept(tmp_path, monkeypatch):
    from kafkalog_cli.scan import extract
    from kafkalog_cli.scan.extract import scan_segment

    ld, victim = _logdir(tmp_path)
    data = victim.read_bytes()
    real = extract.open_segment

    def open_then_truncate(path):
        opened = real(path)
        os.truncate(path, len(data) // 2)  # the broker shortened it while we read it
        return opened

    monkeypatch.setattr(extract, "open_segment", open_then_truncate)
    rows = scan_segment(str(victim))
    notes = [(p["kind"], p["severity"], p["position"], p["end"]) for p in rows["problems"]]
    assert notes == [("truncated-during-read", "info", len(data) // 2, len(data))]
    assert 0 < len(rows["batches"]) < 4 and all(b["crc_ok"] for b in rows["batches"])


@pytest.mark.parametrize(("name", "want"), [("t-2147483647", ("t", 2147483647)), ("t-2147483648", ("t-2147483648", None)),
                                            ("t-" + "9" * 30, ("t-" + "9" * 30, None)), ("t-٣", ("t", 3)),
                                            ("t-²", ("t-²", None))])
def test_partition_number_beyond_int32_is_no_partition(name, want):
    from kafkalog_cli.scan.paths import parse_partition_dir

    assert parse_partition_dir(name) == want  # Kafka: LocalLog.scala partitionString.toInt


def test_non_utf8_and_huge_partition_directory_names_are_scanned(tmp_path):
    from verify_helpers import make_segment

    ld = tmp_path / "ld"
    for name in (b"t\xff-0", b"big-" + b"9" * 25):
        part = os.path.join(os.fsencode(ld), name)
        os.makedirs(part)
        with open(os.path.join(part, os.fsencode(SEG_NAME)), "wb") as f:
            f.write(make_segment(2).data)
    out = tmp_path / "out"
    code, doc = _scan("--jobs", "1", str(ld), out=out)
    assert code == 0, doc
    got = sorted((b["partition_dir"], b["topic"], b["partition"]) for b in _rows(out, "batches"))
    assert got == [("big-" + "9" * 25, "big-" + "9" * 25, None)] * 2 + [("t\\xff-0", "t\\xff", 0)] * 2


def test_unlistable_partition_directory_is_reported_and_the_rest_scanned(bad_disk, tmp_path):  # noqa: F811
    disk = bad_disk({f"ld/a-0/{SEG_NAME}": _segment(), f"ld/c-0/{SEG_NAME}": _segment()}, {}, bad_dirs=["ld/b-0"])
    out = tmp_path / "out"
    code, doc = _scan("--jobs", "1", disk.path("ld"), out=out)
    assert code == 2, doc  # a directory unreadable as a whole (was: exit 0, "no problems found")
    bad = [(p["partition_dir"], p["topic"], p["partition"], p["kind"], p["end"]) for p in _rows(out, "problems")]
    assert bad == [("b-0", "b", 0, "unreadable", 0)]
    assert "cannot list directory" in _rows(out, "problems")[0]["message"]
    assert len(_rows(out, "batches")) == 200  # a-0 and c-0 were scanned
    assert doc["totals"]["unreadable"] == 1


def test_leftovers_are_reported_with_what_the_broker_does(tmp_path):
    from verify_helpers import make_segment

    ld, _victim = _logdir(tmp_path)
    part = ld / "t-0"
    data = make_segment(2, base=32).data
    for name in ("00000000000000000032.log.swap", "00000000000000000040.log.cleaned", "00000000000000000048.log.deleted"):
        (part / name).write_bytes(data)
    out = tmp_path / "out"
    code, doc = _scan("--jobs", "1", str(ld), out=out)
    assert code == 1, doc  # the .swap is a warning: the broker will serve other data than what was scanned
    rows = {p["segment"]: p for p in _rows(out, "problems")}
    assert set(rows) == {"00000000000000000032.log.swap", "00000000000000000040.log.cleaned",
                         "00000000000000000048.log.deleted"}
    assert {n: (p["kind"], p["severity"], p["partition_dir"]) for n, p in rows.items()} == {
        "00000000000000000032.log.swap": ("leftover", "warning", "t-0"),
        "00000000000000000040.log.cleaned": ("leftover", "info", "t-0"),
        "00000000000000000048.log.deleted": ("leftover", "info", "t-0")}
    assert "deletes it at start-up" in rows["00000000000000000048.log.deleted"]["message"]
    assert "deletes it at start-up" in rows["00000000000000000040.log.cleaned"]["message"]
    assert len(_rows(out, "batches")) == 8  # leftovers are not scanned as segments
