"""The row walk beside the verify pass (``verify_pass.Background``, ``extract._SegmentScan._walk``): whatever the pass
has or has not reached when the walk asks, the rows, the problems and their order are those of the walk that ran
after the whole pass. Checked three ways: a pass that vouches up to any point and then is "finished" (every switch
point of the walk, deterministic), the real thread, and ``Background.clean_until`` alone against a pass whose steps
the test releases one by one."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

pa = pytest.importorskip("pyarrow")
from scan_data import make_corrupt_fleet, make_logdir  # noqa: E402
from verify_helpers import make_segment  # noqa: E402

from kafkalog_cli.scan import extract, verify_pass  # noqa: E402
from kafkalog_cli.scan.extract import scan_segment_chunks  # noqa: E402
from kafkalog_cli.scan.paths import expand  # noqa: E402
from kafkalog_cli.storage.verify_model import ERROR, INFO, Problem, SegmentReport  # noqa: E402

NEVER = 1 << 62


def _rows(path: str, window: int, use_accel: bool | None = None) -> dict[str, list]:
    out: dict[str, list] = {"batches": [], "problems": [], "records": []}
    for name, t in scan_segment_chunks(path, records=True, window=window, use_accel=use_accel):
        out[name].extend(t.to_pylist())
    return out


class _Vouching:
    """A pass that has walked past whatever the walk asks about (it vouches exactly as the running pass would: no
    region starting before the end, nothing dropped) for ``calls`` questions, and is finished from then on."""

    def __init__(self, path: str, calls: int) -> None:
        self.res = verify_pass.verify(path)
        self.calls = calls

    def clean_until(self, end: int) -> bool:
        if self.calls <= 0:
            return False
        self.calls -= 1
        found, regions, _unreadable, _checked = self.res
        if any(p["kind"] == "problems-dropped" for p in found):
            return False
        return all(start >= end for start in regions)

    def result(self) -> verify_pass.Result:
        return self.res


def _segments(tmp: Path) -> list[str]:
    fleet, _bad = make_corrupt_fleet(tmp / "fleet")
    logdir = make_logdir(tmp / "scan")
    part = tmp / "mixed" / "mixed-0"
    part.mkdir(parents=True)
    seg = bytearray(make_segment(40, records=3, value_size=200).data)
    seg[5000] ^= 0xFF  # a CRC failure in the middle
    seg += bytes(3000)  # and a zero tail
    (part / "00000000000000000000.log").write_bytes(bytes(seg))
    segments, _ = expand([str(fleet), str(logdir), str(tmp / "mixed")])
    return segments


@pytest.fixture(scope="module")
def segments(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    return _segments(tmp_path_factory.mktemp("overlap"))


@pytest.mark.parametrize("window", [64, 300, 4096])
def test_every_switch_point_gives_the_rows_of_the_walk_after_the_pass(segments: list[str], window: int,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(extract, "OVERLAP_ABOVE", NEVER)
    after = {s: _rows(s, window) for s in segments}
    monkeypatch.setattr(extract, "OVERLAP_ABOVE", 0)
    for calls in (0, 1, 2, 3, 5, 8, 13, 40, NEVER):
        monkeypatch.setattr(verify_pass, "Background", lambda path, calls=calls: _Vouching(path, calls))
        for s in segments:
            assert _rows(s, window) == after[s], (s, window, calls)
            assert _rows(s, window, use_accel=False) == after[s], (s, window, calls, "python walk")


def test_the_real_thread_gives_the_same_rows(segments: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(extract, "OVERLAP_ABOVE", NEVER)
    after = {s: _rows(s, 300) for s in segments}
    monkeypatch.setattr(extract, "OVERLAP_ABOVE", 0)
    for _ in range(3):
        for s in segments:
            assert _rows(s, 300) == after[s], s


def test_a_big_segment_with_regions_scans_the_same_beside_the_pass(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Above OVERLAP_ABOVE with the default window and the real thread: a flipped batch early, a zero-filled gap past
    the middle (where the pass may or may not be when the walk gets there), a zero tail."""
    part = tmp_path / "big-0"
    part.mkdir()
    seg = bytearray(make_segment(9000, records=2, value_size=1000).data)  # ~19 MiB
    assert len(seg) > extract.OVERLAP_ABOVE
    seg[70_000] ^= 0xFF
    mid = len(seg) * 3 // 5
    seg[mid:mid + 50_000] = bytes(50_000)
    seg += bytes(10_000)
    path = part / "00000000000000000000.log"
    path.write_bytes(bytes(seg))
    beside = _rows(str(path), extract.WINDOW)
    monkeypatch.setattr(extract, "OVERLAP_ABOVE", NEVER)
    after = _rows(str(path), extract.WINDOW)
    assert beside == after
    kinds = sorted(p["kind"] for p in after["problems"])
    assert "crc-mismatch" in kinds and "zero-filled" in kinds and len(after["batches"]) > 8000  # (a zero tail is a note)


# ------------------------------------------------------------------------------------- Background.clean_until
class _Steps:
    """A stand-in for ``verify_pass.verify`` whose walk the test drives: each ``step(walked, problems)`` appends the
    problems to the report, reports progress, and waits for the test to release the next step."""

    def __init__(self) -> None:
        self.report = SegmentReport(path="seg.log", kind="log")
        self.go = threading.Semaphore(0)
        self.done = threading.Event()
        self.script: list[tuple[int, list[Problem], int]] = []  # (bytes walked, problems found, dropped)

    def __call__(self, path: str, progress, started) -> verify_pass.Result:
        started(self.report)
        for walked, problems, dropped in self.script:
            self.go.acquire()
            for p in problems:
                self.report.add(p)
            self.report.dropped_problems += dropped
            progress(walked)
        self.go.acquire()
        self.done.set()
        return [], {}, False, 0


def _region(start: int, end: int, kind: str = "crc-mismatch") -> Problem:
    return Problem("seg.log", start, end, kind, "x", INFO if kind == "zero-tail" else ERROR)


def _ask(bg: verify_pass.Background, end: int) -> list[bool]:
    got: list[bool] = []
    t = threading.Thread(target=lambda: got.append(bg.clean_until(end)), daemon=True)
    t.start()
    t.join(0.3)
    return got


def test_clean_until_waits_for_the_pass_and_says_what_it_found(monkeypatch: pytest.MonkeyPatch) -> None:
    steps = _Steps()
    steps.script = [
        (100, [], 0),
        (100, [Problem("seg.log", 10, 20, "index-entry", "not a region")], 0),  # not a region: the walk goes on
        (100, [_region(250, 260), Problem("other.index", 0, 10, "truncated", "another file")], 0),
        (100, [], 0),
    ]
    monkeypatch.setattr(verify_pass, "verify", steps)
    bg = verify_pass.Background("seg.log")
    assert _ask(bg, 50) == []  # the pass has walked nothing yet: the walk waits
    steps.go.release()
    assert _ask(bg, 100) == [True]
    assert _ask(bg, 150) == []
    steps.go.release()
    assert _ask(bg, 200) == [True]
    steps.go.release()
    time.sleep(0.05)
    assert bg.clean_until(250) is True  # the region starts at 250: a window ending there is still clean
    assert bg.clean_until(251) is False
    assert bg.clean_until(100) is True  # (never asked again for less by the walk, but the answer is exact)
    steps.go.release()
    steps.go.release()
    steps.done.wait(2)
    assert bg.clean_until(10) is False  # finished: the walk takes result()
    assert bg.result() == ([], {}, False, 0)


def test_clean_until_is_false_once_a_problem_was_dropped(monkeypatch: pytest.MonkeyPatch) -> None:
    steps = _Steps()
    steps.script = [(100, [], 0), (100, [], 1), (100, [], 0)]
    monkeypatch.setattr(verify_pass, "verify", steps)
    bg = verify_pass.Background("seg.log")
    steps.go.release()
    assert _ask(bg, 100) == [True]
    steps.go.release()
    time.sleep(0.05)
    assert bg.clean_until(150) is False
    for _ in range(2):
        steps.go.release()
    bg.result()


def test_clean_until_sees_a_zero_tail_note(monkeypatch: pytest.MonkeyPatch) -> None:
    steps = _Steps()
    steps.script = [(100, [_region(60, 100, "zero-tail")], 0)]
    monkeypatch.setattr(verify_pass, "verify", steps)
    bg = verify_pass.Background("seg.log")
    steps.go.release()
    time.sleep(0.05)
    assert bg.clean_until(60) is True
    assert bg.clean_until(61) is False
    steps.go.release()
    bg.result()


def test_an_error_in_the_pass_reaches_the_walk(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(path: str, progress, started) -> verify_pass.Result:
        raise RuntimeError("pass broke")

    monkeypatch.setattr(verify_pass, "verify", broken)
    bg = verify_pass.Background("seg.log")
    assert bg.clean_until(10) is False
    with pytest.raises(RuntimeError, match="pass broke"):
        bg.result()


# ------------------------------------------------------------------------------------------------ start_early
def test_an_early_pass_is_the_one_the_walk_takes(segments: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(extract, "OVERLAP_ABOVE", NEVER)
    path = next(s for s in segments if "mixed-0" in s)
    after = _rows(path, 300)
    monkeypatch.setattr(extract, "OVERLAP_ABOVE", 0)
    monkeypatch.setattr(verify_pass, "OVERLAP_ABOVE", 0)
    made: list[str] = []
    real = verify_pass.Background

    class Counting(real):  # type: ignore[misc, valid-type]
        def __init__(self, p: str) -> None:
            made.append(p)
            super().__init__(p)

    monkeypatch.setattr(verify_pass, "Background", Counting)
    verify_pass.start_early(path)
    verify_pass.start_early(path)  # once per path
    assert made == [path]
    assert _rows(path, 300) == after
    assert made == [path]  # the walk took the early pass instead of starting its own
    assert _rows(path, 300) == after and made == [path, path]  # taken once: the next walk starts its own


def test_the_cli_starts_the_first_pass_early_only_when_it_walks_that_segment_itself(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from kafkalog_cli.cli.scan import scan

    for name in ("a-0", "b-0"):
        (tmp_path / "logs" / name).mkdir(parents=True)
        (tmp_path / "logs" / name / "00000000000000000000.log").write_bytes(make_segment(3).data)
    started: list[str] = []
    monkeypatch.setattr(verify_pass, "start_early", started.append)

    def run(*args: str) -> None:
        res = CliRunner().invoke(scan, [*args, "--out", str(tmp_path / "out"), "--format", "json"])
        assert res.exit_code in (0, 1), res.output

    run(str(tmp_path / "logs" / "a-0"))
    assert started == [str(tmp_path / "logs" / "a-0" / "00000000000000000000.log")]
    started.clear()
    run(str(tmp_path / "logs"), "--jobs", "2")  # two partitions on two workers: not this process
    assert started == []
    run(str(tmp_path / "logs"), "--jobs", "1")
    assert started == [str(tmp_path / "logs" / "a-0" / "00000000000000000000.log")]
    started.clear()
    run(str(tmp_path / "logs" / "a-0"), "--low-impact")  # its page accounting is per segment, around the walk
    run(str(tmp_path / "logs" / "a-0"), "--max-read-rate", "100M")
    assert started == []


def test_a_read_error_in_a_vouched_window_is_worded_as_without_the_overlap(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """The pass (through its mapping) found nothing, the walk's own pread fails: the walk leaves the window to the
    finished pass's rules, which probe it and report the bad pages exactly as when the pass ran first."""
    import errno
    import os

    from kafkalog_cli.storage import safe_read

    (tmp_path / "t-0").mkdir()
    seg = tmp_path / "t-0" / "00000000000000000000.log"
    seg.write_bytes(make_segment(60, records=4, value_size=500).data)  # 60 batches of 2105 bytes
    real = os.preadv

    def failing_preadv(fd: int, bufs: list, offset: int) -> int:
        if offset < 40_000 and offset + sum(len(b) for b in bufs) > 36_000:
            raise OSError(errno.EIO, "Input/output error")
        return real(fd, bufs, offset)

    monkeypatch.setattr(safe_read.os, "preadv", failing_preadv)  # the os module: window.py's single preadv too
    monkeypatch.setattr(extract, "OVERLAP_ABOVE", NEVER)
    after = _rows(str(seg), 8192)
    assert any(p["kind"] == "unreadable" for p in after["problems"])
    monkeypatch.setattr(extract, "OVERLAP_ABOVE", 0)
    for calls in (1, 3, NEVER):
        monkeypatch.setattr(verify_pass, "Background", lambda path, calls=calls: _Vouching(path, calls))
        assert _rows(str(seg), 8192) == after, calls


def test_an_early_pass_of_a_file_that_changed_since_is_not_taken(segments: list[str], tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    monkeypatch.setattr(verify_pass, "OVERLAP_ABOVE", 0)
    path = tmp_path / "c-0" / "00000000000000000000.log"
    path.parent.mkdir()
    shutil.copyfile(next(s for s in segments if "mixed-0" in s), path)
    verify_pass.start_early(str(path))
    early = verify_pass._early[str(path)][1]
    early.result()
    path.write_bytes(make_segment(5).data)  # rewritten: another inode or size or time
    assert verify_pass.background(str(path)) is not early
    verify_pass.start_early(str(path))
    verify_pass.discard_early()
    assert verify_pass._early == {}


def test_a_local_scan_computes_crcs_on_one_thread_and_restores_the_setting(segments: list[str], tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from kafkalog_cli.scan import local_engine
    from kafkalog_cli.storage import accel

    if accel.module() is None:
        pytest.skip("the compiled accelerator is not built")
    seen: list[int] = []
    real = local_engine._run_local

    def spy(*args: object) -> dict:
        seen.append(accel.parallel_config().threads)
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(local_engine, "_run_local", spy)
    monkeypatch.delenv("KAFKALOG_ACCEL_THREADS", raising=False)
    before = accel.parallel_config(threads=2)
    try:
        local_engine.run_local(segments[:1], str(tmp_path / "a"))
        assert seen == [1] and accel.parallel_config().threads == 2
        monkeypatch.setenv("KAFKALOG_ACCEL_THREADS", "2")  # the user's choice stands
        local_engine.run_local(segments[:1], str(tmp_path / "b"))
        assert seen == [1, 2]
    finally:
        accel.parallel_config(threads=before.threads)
