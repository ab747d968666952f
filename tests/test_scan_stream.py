"""``kafkalog scan`` as a stream: compiled and Python walks give identical rows (also across window boundaries), a
row for every CRC failure, null timestamps and the schema version in the files, row groups, the streaming partition
pass, empty partitions in the report, and a worker that dies or a window that cannot be read."""

from __future__ import annotations

import errno
import os
import random
from pathlib import Path

import pytest

pa = pytest.importorskip("pyarrow")
import pyarrow.parquet as pq  # noqa: E402
from scan_data import load_sorted, make_corrupt_fleet, make_logdir  # noqa: E402

from kafkalog_cli.scan import output, verify_pass  # noqa: E402
from kafkalog_cli.scan import window as window_mod  # noqa: E402
from kafkalog_cli.scan.extract import scan_segment_chunks  # noqa: E402
from kafkalog_cli.scan.local_engine import run_local  # noqa: E402
from kafkalog_cli.scan.output import DatasetWriter  # noqa: E402
from kafkalog_cli.scan.partition import COLUMNS, PartitionPass, partition_problems  # noqa: E402
from kafkalog_cli.scan.paths import expand  # noqa: E402
from kafkalog_cli.scan.schema import BATCHES, SCHEMA_VERSION, TIMESTAMP, VERSION_KEY  # noqa: E402
from kafkalog_cli.scan.summary import summarize  # noqa: E402
from kafkalog_cli.scan.work import CRASH_ENV  # noqa: E402
from kafkalog_cli.storage import accel, safe_read  # noqa: E402


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    return make_corrupt_fleet(tmp_path_factory.mktemp("fleet"))


@pytest.fixture(scope="module")
def logdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_logdir(tmp_path_factory.mktemp("scan"))


def _all_rows(path: str, **kw) -> dict[str, list]:
    out: dict[str, list] = {"batches": [], "problems": [], "records": []}
    for name, t in scan_segment_chunks(path, records=True, **kw):
        out[name].extend(t.to_pylist())
    return out


@pytest.mark.skipif(accel.module() is None or not hasattr(accel.module(), "scan_table"),
                    reason="the compiled accelerator is not built")
@pytest.mark.parametrize("window", [64, 300, 4096, window_mod.WINDOW])
def test_compiled_and_python_walks_give_identical_rows(fleet: tuple[Path, int], logdir: Path, window: int) -> None:
    """Windows smaller than one batch, cutting batches and regions at every place, change nothing."""
    segments, _ = expand([str(fleet[0]), str(logdir)])
    reference = {s: _all_rows(s, use_accel=False) for s in segments}
    for seg in segments:
        assert _all_rows(seg, use_accel=True, window=window) == reference[seg], (seg, window)
        assert _all_rows(seg, use_accel=False, window=window) == reference[seg], (seg, window)


def test_every_crc_failure_has_a_row(fleet: tuple[Path, int], tmp_path: Path) -> None:
    logdir, bad = fleet
    segments, _ = expand([str(logdir)])
    run_local(segments, str(tmp_path), records=True, jobs=1)
    batches = load_sorted(tmp_path, "batches")
    problems = load_sorted(tmp_path, "problems")
    failing = sorted((b["partition_dir"], b["position"]) for b in batches if not b["crc_ok"])
    mismatches = sorted((p["partition_dir"], p["position"]) for p in problems if p["kind"] == "crc-mismatch")
    assert len(failing) == bad == len(mismatches)
    assert failing == mismatches
    # no record comes from a failing batch
    failing_at = {(b["partition_dir"], b["segment"], b["position"]) for b in batches if not b["crc_ok"]}
    assert not [r for r in load_sorted(tmp_path, "records")
                if (r["partition_dir"], r["segment"], r["batch_position"]) in failing_at]
    # the good batches after each corruption are there
    assert {b["base_offset"] for b in batches if b["partition_dir"] == "crc-1"} == {0, 10, 20}
    assert {b["base_offset"] for b in batches if b["partition_dir"] == "crc-3"} == {0, 20}


def test_empty_partitions_are_listed(fleet: tuple[Path, int], tmp_path: Path) -> None:
    segments, _ = expand([str(fleet[0])])
    run_local(segments, str(tmp_path), jobs=1)
    summary = summarize(str(tmp_path), segments)
    parts = {p["partition_dir"]: p for p in summary["partitions"]}
    assert set(parts) == {"crc-0", "crc-1", "crc-2", "crc-3", "empty-0", "big-0"}
    empty = parts["empty-0"]
    assert (empty["segments"], empty["batches"], empty["bytes"], empty["first_offset"]) == (2, 0, 0, None)
    assert (empty["topic"], empty["partition"]) == ("empty", 0)
    assert summary["totals"]["partitions"] == 6 and summary["totals"]["segments"] == len(segments)


def test_files_carry_version_utc_timestamps_and_nulls(logdir: Path, tmp_path: Path) -> None:
    segments, _ = expand([str(logdir)])
    output.prepare(str(tmp_path), True)
    run_local(segments, str(tmp_path), records=True, jobs=1)
    for name in ("batches", "problems", "records"):
        f = next((tmp_path / name).rglob("part-*.parquet"))  # under broker_id=<id>/
        assert pq.read_metadata(f).metadata[VERSION_KEY] == SCHEMA_VERSION.encode()
    schema = pq.read_schema(next((tmp_path / "batches").rglob("part-*.parquet")))
    assert schema.field("first_timestamp").type == TIMESTAMP and str(TIMESTAMP.tz) == "UTC"
    b = pq.read_table(tmp_path / "batches", partitioning=None)  # broker_id is a column of the files too
    v0 = b.filter(pa.compute.equal(b["magic"], 0))
    assert v0.num_rows == 1 and v0["first_timestamp"].null_count == 1 and v0["max_timestamp"].null_count == 1
    assert b["first_timestamp"].null_count == 1  # nothing else is -1 here; nothing reads as 1969
    assert pa.compute.min(b["first_timestamp"]).as_py().year == 2023


def test_writer_cuts_row_groups_whatever_the_input_chunks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Groups of row_group rows; the rest goes into the last group when it would be below MIN_ROW_GROUP."""
    monkeypatch.setattr(output, "MIN_ROW_GROUP", 300)
    w = DatasetWriter(str(tmp_path), "problems", row_group=1000, encoders=1)
    rows = [{"log_dir": "/l", "topic": "t", "partition": 0, "partition_dir": "t-0", "segment": "s", "file": "s",
             "position": i, "end": i, "kind": "k", "severity": "warning", "message": "m", "offset": None}
            for i in range(2500)]
    from kafkalog_cli.scan.schema import to_table

    for k in range(0, 2500, 7):
        w.write(to_table("problems", rows[k : k + 7]))
    w.close()
    md = pq.read_metadata(tmp_path / "problems" / "part-00000.parquet")
    assert [md.row_group(i).num_rows for i in range(md.num_row_groups)] == [1000, 1000, 500]
    w = DatasetWriter(str(tmp_path / "b"), "problems", row_group=1000, encoders=1)
    for k in range(0, 2200, 7):
        w.write(to_table("problems", rows[k : min(k + 7, 2200)]))
    w.close()
    md = pq.read_metadata(tmp_path / "b" / "problems" / "part-00000.parquet")
    assert [md.row_group(i).num_rows for i in range(md.num_row_groups)] == [1000, 1200]  # not 1000, 1000, 200
    assert pq.read_table(tmp_path / "problems")["position"].to_pylist() == list(range(2500))


def _problem_rows(n: int) -> list[dict]:
    return [{"log_dir": "/l", "topic": "t", "partition": 0, "partition_dir": "t-0", "segment": "s", "file": "s",
             "position": i, "end": i, "kind": "k", "severity": "warning", "message": "m", "offset": None}
            for i in range(n)]


def test_two_encoders_write_alternate_groups_into_two_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Group k goes to file k mod 2, in order within each file; every row once; the last group as with one file."""
    from kafkalog_cli.scan.schema import to_table

    monkeypatch.setattr(output, "MIN_ROW_GROUP", 300)
    rows = _problem_rows(4500)
    w = DatasetWriter(str(tmp_path), "problems", row_group=1000, encoders=2)
    for k in range(0, 4500, 7):
        w.write(to_table("problems", rows[k : k + 7]))
    w.close()
    assert (w.rows, w.groups) == (4500, 5)
    d = tmp_path / "problems"
    assert sorted(p.name for p in d.iterdir()) == ["part-00000-1.parquet", "part-00000.parquet"]
    first, second = (pq.read_table(d / n)["position"].to_pylist() for n in ("part-00000.parquet", "part-00000-1.parquet"))
    assert first == list(range(0, 1000)) + list(range(2000, 3000)) + list(range(4000, 4500))
    assert second == list(range(1000, 2000)) + list(range(3000, 4000))
    groups = [pq.read_metadata(d / n).row_group(i).num_rows for n in ("part-00000.parquet", "part-00000-1.parquet")
              for i in range(pq.read_metadata(d / n).num_row_groups)]
    assert groups == [1000, 1000, 500, 1000, 1000]
    assert pq.read_metadata(d / "part-00000-1.parquet").metadata[b"kafkalog.schema_version"] == SCHEMA_VERSION.encode()


def test_one_group_is_one_file_and_no_rows_one_empty_file(tmp_path: Path) -> None:
    from kafkalog_cli.scan.schema import to_table

    w = DatasetWriter(str(tmp_path / "a"), "problems", row_group=1000, encoders=2)
    w.write(to_table("problems", _problem_rows(900)))
    w.close()
    assert [p.name for p in (tmp_path / "a" / "problems").iterdir()] == ["part-00000.parquet"]
    w = DatasetWriter(str(tmp_path / "b"), "problems", encoders=2)
    w.close()
    files = list((tmp_path / "b" / "problems").iterdir())
    assert [p.name for p in files] == ["part-00000.parquet"] and pq.read_metadata(files[0]).num_rows == 0


def test_an_encoder_error_reaches_the_scanning_thread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kafkalog_cli.scan.schema import to_table

    monkeypatch.setattr(output, "MIN_ROW_GROUP", 10)
    w = DatasetWriter(str(tmp_path), "problems", row_group=100, encoders=2)

    def broken(table: object, row_group_size: int) -> None:
        raise OSError(28, "No space left on device")

    for writer in w._encoders.writers:
        monkeypatch.setattr(writer, "write_table", broken)
    with pytest.raises(OSError, match="No space left"):
        for k in range(0, 2000, 50):
            w.write(to_table("problems", _problem_rows(2000)[k : k + 50]))
        w.close()


def test_many_partitions_make_one_row_group(tmp_path: Path) -> None:
    from scan_data import _recs, _segment

    from kafkalog_cli.format.encoder import encode_batch

    logdir = tmp_path / "many"
    for i in range(60):
        p = logdir / f"t-{i}"
        p.mkdir(parents=True)
        _segment(p, 0, [encode_batch(_recs(1, 1_700_000_000_000, "m"), base_offset=0)])
    segments, _ = expand([str(logdir)])
    stats = run_local(segments, str(tmp_path / "out"), jobs=2)
    assert stats["batches"] == {"rows": 60, "row_groups": 1}
    assert pq.read_metadata(next((tmp_path / "out" / "batches").rglob("part-*.parquet"))).num_row_groups == 1


def _random_rows(seed: int) -> list[dict]:
    rnd = random.Random(seed)
    rows, off, seqs = [], 0, {}
    for seg in (f"{b:020d}.log" for b in (0, 10, 150, 1000)):
        for pos in range(0, 4000, 100):
            pid, ep = rnd.choice([-1, 1, 2]), rnd.choice([0, 1])
            bs = seqs.get((pid, ep), 0) + (rnd.choice([-3, 5]) if rnd.random() < 0.1 else 0)
            if rnd.random() < 0.05:
                bs = 2147483640
            cnt = rnd.randint(1, 5)
            last = bs + cnt - 1 if bs + cnt - 1 <= 2147483647 else bs + cnt - 1 - 2147483648
            seqs[(pid, ep)] = 0 if last == 2147483647 else last + 1
            rows.append({"log_dir": "/l", "topic": "t", "partition": 0, "partition_dir": "t-0", "segment": seg,
                         "position": pos, "size": 100, "base_offset": off, "last_offset": off + cnt - 1,
                         "max_timestamp": rnd.choice([None, 1000 + off * 10, 500 + off * 10, 5]), "producer_id": pid,
                         "producer_epoch": ep, "base_sequence": bs if pid >= 0 else -1,
                         "last_sequence": last if pid >= 0 else -1, "control": rnd.random() < 0.1,
                         "crc_ok": rnd.random() < 0.9})
            off += cnt if rnd.random() < 0.9 else -20
    return rows


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_streaming_partition_pass_matches_the_reference(seed: int) -> None:
    rows = _random_rows(seed)
    expected = partition_problems(rows)
    assert {p["kind"] for p in expected} == {"segment-order", "timestamp-order", "sequence-gap"}

    def table(rs: list[dict]) -> pa.Table:
        return pa.table({c: pa.array([r[c] for r in rs], type=BATCHES.field(c).type) for c in COLUMNS})

    for vector_from in (0, 5, 10**9):  # all columnar, mixed, all rows
        pp = PartitionPass(vector_from=vector_from)
        got = []
        for seg in sorted({r["segment"] for r in rows}):
            srows = [r for r in rows if r["segment"] == seg]
            for k in range(0, len(srows), 7):
                got += pp.feed(table(srows[k : k + 7]))
        assert got == expected, vector_from


def test_unreadable_window_becomes_a_located_problem(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The windows read through safe_read.read_into: pages that fail are probed one by one, reported as one
    page-rounded ``unreadable`` range (consecutive windows merged), and the batches before them are kept."""
    from verify_helpers import make_segment

    (tmp_path / "t-0").mkdir()
    seg = str(tmp_path / "t-0" / "00000000000000000000.log")
    Path(seg).write_bytes(make_segment(10, records=4, value_size=500).data)  # 10 batches of 2105 bytes
    real = os.preadv
    calls = {"n": 0}

    def failing_preadv(fd: int, bufs: list, offset: int) -> int:
        if offset >= 8192:
            calls["n"] += 1
            raise OSError(errno.EIO, "Input/output error")
        return real(fd, bufs, offset)

    monkeypatch.setattr(verify_pass, "verify", lambda path: ([], {}, False, -1))  # only the windows see the bad disk
    monkeypatch.setattr(safe_read.os, "preadv", failing_preadv)
    size = os.path.getsize(seg)
    rows = {name: [] for name in ("batches", "problems")}
    for name, t in scan_segment_chunks(seg, window=300):
        rows[name].extend(t.to_pylist())
    assert calls["n"]
    bad = [p for p in rows["problems"] if p["kind"] == "unreadable"]
    assert len(bad) == 1 and bad[0]["position"] == 8192  # the first bad page; no row per window or per page
    assert bad[0]["end"] > 8192 and (bad[0]["end"] % 4096 == 0 or bad[0]["end"] == size)
    assert "could not be read" in bad[0]["message"] and bad[0]["severity"] == "error"
    assert [b["position"] for b in rows["batches"]] == [0, 2105, 4210, 6315]  # the batches before the bad pages


def test_a_dying_worker_loses_no_other_partition(logdir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    segments, _ = expand([str(logdir)])
    run_local(segments, str(tmp_path / "clean"), records=True, jobs=1)
    victim = str(logdir / "orders-0" / "00000000000000000020.log")
    monkeypatch.setenv(CRASH_ENV, victim)
    stats = run_local(segments, str(tmp_path / "crash"), records=True, jobs=2)
    assert stats["workers_died"] == 2  # once in its bin, once alone: then it is reported
    problems = load_sorted(tmp_path / "crash", "problems")
    dead = [p for p in problems if p["kind"] == "unreadable"]
    assert [(p["partition_dir"], p["segment"]) for p in dead] == [("orders-0", "00000000000000000020.log")]
    assert "worker died" in dead[0]["message"]
    for name in ("batches", "records"):
        clean = [r for r in load_sorted(tmp_path / "clean", name) if r["segment"] != Path(victim).name
                 or r["partition_dir"] != "orders-0"]
        assert load_sorted(tmp_path / "crash", name) == clean, name  # nothing lost, nothing twice


def test_report_from_the_written_chunks_equals_the_report_from_the_files(fleet: tuple[Path, int], logdir: Path,
                                                                         tmp_path: Path) -> None:
    from kafkalog_cli.scan.summary import Summary

    segments, _ = expand([str(fleet[0]), str(logdir)])
    for jobs in (1, 2):
        out = tmp_path / f"j{jobs}"
        acc = Summary(segments)
        run_local(segments, str(out), records=True, jobs=jobs, summary=acc)
        assert acc.result() == summarize(str(out), segments)


def test_small_segments_gathered_as_rows_equal_the_table_path(fleet: tuple[Path, int], logdir: Path, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Small segments become Python rows gathered across partitions; the datasets are the same as when every
    segment goes the Arrow way (both local paths, and the worker processes)."""
    from kafkalog_cli.scan import work

    segments, _ = expand([str(fleet[0]), str(logdir)])
    run_local(segments, str(tmp_path / "rows"), records=True, jobs=1)
    run_local(segments, str(tmp_path / "rows2"), records=True, jobs=2)
    monkeypatch.setattr(work, "SMALL_SEGMENT", -1)
    run_local(segments, str(tmp_path / "tables"), records=True, jobs=1)
    for name in ("batches", "problems", "records"):
        expected = load_sorted(tmp_path / "tables", name)
        assert expected, name
        assert load_sorted(tmp_path / "rows", name) == expected, name
        assert load_sorted(tmp_path / "rows2", name) == expected, name


def test_workers_hand_over_runs_of_partitions_so_each_topic_is_one_file(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Bins of consecutive partitions (local_engine.bins): with more topics than open part files, each topic's rows
    still go into one file (before, every bin held a slice of every topic and the writers reopened files over and
    over: 400 files of 125-row groups for the 50,000-partition benchmark)."""
    from kafkalog_cli.format.encoder import RecordSpec, encode_batch
    from kafkalog_cli.scan import fleet

    batch = encode_batch([RecordSpec(key=b"k", value=b"v", timestamp=1_700_000_000_000)])
    logs = tmp_path / "logs"
    for t in range(6):
        for p in range(10):
            d = logs / f"topic{t}-{p}"
            d.mkdir(parents=True)
            (d / "00000000000000000000.log").write_bytes(batch)
    monkeypatch.setattr(fleet.PartitionedWriter.__init__, "__defaults__", (5,))  # fewer open files than topics
    segments, _ = expand([str(logs)])
    out = tmp_path / "out"
    run_local(segments, str(out), jobs=2)
    files = sorted(p.relative_to(out / "batches") for p in (out / "batches").rglob("*.parquet"))
    # one file per topic (6); a topic whose runs straddle two workers' bins may get a second one when one worker
    # runs far ahead of the other (scheduling); before this change: 48 files
    assert len(files) <= 12, (len(files), files)
    assert sum(pq.read_metadata(out / "batches" / f).num_rows for f in files) == 60


def test_an_interrupt_while_the_encoders_finish_is_not_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A second Ctrl-C while close() waits for the encoder threads: the KeyboardInterrupt goes on (exit 130 in the
    CLI); no writer is closed while a thread is still writing into it (that raised "Column N had ... rows" or
    crashed), and the threads leave pyarrow before it goes on."""
    import threading
    import time

    from kafkalog_cli.scan.schema import to_table

    writing = [0]
    closed_while_writing: list[int] = []
    real_write, real_close = pq.ParquetWriter.write_table, pq.ParquetWriter.close

    def slow_write(self: pq.ParquetWriter, table: pa.Table, row_group_size: int | None = None) -> None:
        writing[0] += 1
        try:
            time.sleep(0.2)
            real_write(self, table, row_group_size=row_group_size)
        finally:
            writing[0] -= 1

    def close(self: pq.ParquetWriter) -> None:
        if writing[0]:
            closed_while_writing.append(writing[0])
        real_close(self)

    monkeypatch.setattr(pq.ParquetWriter, "write_table", slow_write)
    monkeypatch.setattr(pq.ParquetWriter, "close", close)
    monkeypatch.setattr(output, "MIN_ROW_GROUP", 100)
    w = DatasetWriter(str(tmp_path), "problems", row_group=2000, encoders=2)
    rows = _problem_rows(2000)
    for _ in range(4):
        w.write(to_table("problems", rows))
    real_join = threading.Thread.join
    interrupted: list[str] = []

    def join(self: threading.Thread, timeout: float | None = None) -> None:
        if self.name.startswith("parquet-writer") and timeout is None and not interrupted:
            interrupted.append(self.name)
            raise KeyboardInterrupt
        real_join(self, timeout)

    monkeypatch.setattr(threading.Thread, "join", join)
    with pytest.raises(KeyboardInterrupt):
        w.close()
    assert interrupted and w._encoders.stop
    assert not closed_while_writing
    assert not any(t.is_alive() for t in w._encoders.threads)


def test_an_output_that_cannot_be_written_is_a_located_error(logdir: Path, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """A full or read-only --out: one line naming the directory and the reason, exit 2, not "internal error"."""
    from click.testing import CliRunner

    from kafkalog_cli.cli.main import cli

    def full(self: DatasetWriter, k: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(DatasetWriter, "_open", full)
    res = CliRunner().invoke(cli, ["scan", str(logdir), "--out", str(tmp_path / "out"), "--jobs", "1"])
    assert res.exit_code == 2, res.output
    assert f"{tmp_path / 'out'}: cannot write the scan datasets" in res.output and "No space left" in res.output
    assert "internal error" not in res.output
