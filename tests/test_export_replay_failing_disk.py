"""export and replay over a failing disk (issue 31.5): a real FUSE file system returning EIO for a byte range of
a segment (tests/fuse_badfs.py, the ``bad_disk`` fixture of tests/test_failing_disk.py). Each reports the
unreadable bytes as a located finding (file, byte range, what next), counts it, exits 1, and exports / replays
every record it could read, the batches around the bad sector included."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_failing_disk import BAD, BAD_PAGES, SEG_NAME, _segment, bad_disk  # noqa: F401 (bad_disk: a fixture)

from kafkalog_cli.cli.main import cli

#: the segment: 100 batches of 4 records (offsets 0..399) of 2105 bytes; the pages [36864, 45056) fail, which
#: lose the batches holding offsets 68..87 (batches 17..21)
LOST = set(range(68, 88))
READABLE = [o for o in range(400) if o not in LOST]


def _invoke(*args: str):
    r = CliRunner().invoke(cli, list(args))
    assert r.exception is None or isinstance(r.exception, SystemExit), r.exception
    return r


def _disk(bad_disk):  # noqa: ANN001, F811
    return bad_disk({f"t-0/{SEG_NAME}": _segment(), f"t-1/{SEG_NAME}": _segment()}, {f"t-0/{SEG_NAME}": [BAD]})


def _located(f: dict) -> None:
    assert f["kind"] == "unreadable" and f["file"].endswith(f"t-0/{SEG_NAME}"), f
    assert (f["position"], f["end"]) == BAD_PAGES, f


@pytest.fixture(params=["guarded-mmap", "pread"])
def reader(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both ways kafkalog reads a segment: the SIGBUS-guarded map, and pread (KAFKALOG_NO_MMAP=1)."""
    monkeypatch.setenv("KAFKALOG_NO_MMAP", "1" if request.param == "pread" else "")
    return request.param


@pytest.mark.parametrize("fmt", ["ndjson", "kafka"])
def test_export_over_a_bad_sector_reports_it_and_exports_the_rest(bad_disk, tmp_path: Path, fmt: str,  # noqa: F811
                                                                   reader: str) -> None:
    disk = _disk(bad_disk)
    out = tmp_path / ("o.ndjson" if fmt == "ndjson" else "k")
    r = _invoke("export", disk.path("t-0"), "--format", fmt, "--out", str(out), "--summary-format", "json")
    assert r.exit_code == 1, r.output
    doc = json.loads(r.stdout)
    (pp,) = doc["partitions"]
    unreadable = [f for f in pp["findings"] if f["kind"] == "unreadable"]
    assert len(unreadable) == 1
    _located(unreadable[0])
    assert unreadable[0]["hint"]  # what next
    assert pp["corrupt_batches"] >= 1 and doc["corrupt_batches"] == pp["corrupt_batches"]  # counted
    assert doc["records"] == pp["records"] == len(READABLE)
    if fmt == "ndjson":
        got = [json.loads(line)["offset"] for line in out.read_text("utf-8").splitlines()]
    else:  # a partition directory: read back with kafkalog's engine, and it verifies clean
        from kafkalog_cli.ops.replay_source import resolve

        dirs = [d for d in out.rglob("*") if d.is_dir() and any(d.glob("*.log"))]
        (pdir,) = dirs
        (src,), _ = resolve([str(pdir)])
        got = [rec.offset for rec in src.records()]
        assert not src.findings
        v = _invoke("verify-crc", str(pdir))
        assert v.exit_code == 0, v.output
    assert got == READABLE  # the batches before and after the bad sector, nothing else


def _mock():
    pytest.importorskip("confluent_kafka")
    from replay_world import MockCluster

    return MockCluster(1)


def test_replay_of_a_bad_sector_source_reports_it_and_replays_the_rest(bad_disk, tmp_path: Path,  # noqa: F811
                                                                       reader: str) -> None:
    from replay_world import MOCK_PARTITIONS

    disk = _disk(bad_disk)
    mock = _mock()
    r = _invoke("replay", disk.path("t-0"), "--bootstrap-server", mock.bootstrap, "--topic", "rt", "--partitions",
                str(MOCK_PARTITIONS), "--state-dir", str(tmp_path / "st"), "--format", "json")
    assert r.exit_code == 1, r.output  # the dry run: findings (and records to produce)
    doc = json.loads(r.stdout)
    unreadable = [f for f in doc["findings"] if f["kind"] == "unreadable"]
    assert len(unreadable) == 1
    _located(unreadable[0])
    (pp,) = doc["partitions"]
    assert pp["records"] == len(READABLE) and (pp["first_offset"], pp["last_offset"]) == (0, 399)
    assert mock.create_topic("rt") == MOCK_PARTITIONS
    r = _invoke("replay", disk.path("t-0"), "--bootstrap-server", mock.bootstrap, "--topic", "rt",
                "--state-dir", str(tmp_path / "st"), "--format", "json", "--execute")
    assert r.exit_code == 1, r.output  # done, with findings: the unreadable records were not replayed
    res = json.loads(r.stdout)
    assert [f["kind"] for f in res["findings"]].count("unreadable") == 1
    got = mock.consume("rt")
    assert all(c[0] == 0 for c in got)
    offsets = [int(dict(c[4])["kafkalog.source.offset"].decode().rpartition("@")[2]) for c in got]
    assert offsets == READABLE
