"""``dump``'s window (--offset, --count, --start-time, --end-time, --producer-id) and the ``--records`` view (issue 29).

The oracle is the test's own model of what it wrote (offsets, timestamps, producers), never the engine's view; the
text of a window must be DumpLogSegments' own lines: a subsequence of the full dump's output.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from dataclasses import dataclass

import pytest

from kafkalog_cli.format.encoder import RecordSpec, encode_batch
from kafkalog_cli.ops.rebuild_index import rebuild_segment

T0 = 1_718_445_000_000  # 2024-06-15T09:50:00Z


@dataclass
class M:
    offset: int
    ts: int
    pid: int
    key: bytes
    value: bytes


def write_partition(pdir: str, seed: int, *, segments: int = 4, batches: int = 30) -> list[M]:
    """Segments of small batches from three producers, timestamps rising by 1-20 s per record, indexes every
    256 bytes (the recovery rule), so a window's start can be found through them."""
    rng = random.Random(seed)
    os.makedirs(pdir, exist_ok=True)
    model: list[M] = []
    offset, ts = 0, T0
    for _s in range(segments):
        base, data = offset, bytearray()
        for _b in range(batches):
            pid = rng.choice([4001, 4002, 4003])
            specs = []
            for i in range(rng.randint(1, 4)):
                ts += rng.randint(1000, 20000)
                k, v = b"k%d" % rng.randint(0, 9), b"v%d" % (offset + i)
                specs.append(RecordSpec(key=k, value=v, timestamp=ts, offset_delta=i))
                model.append(M(offset + i, ts, pid, k, v))
            data += encode_batch(specs, base_offset=offset, producer_id=pid, producer_epoch=0,
                                 base_sequence=offset, codec=rng.choice([0, 0, 1]))
            offset += len(specs)
        path = os.path.join(pdir, f"{base:020d}.log")
        with open(path, "wb") as f:
            f.write(data)
        rb = rebuild_segment(bytes(data), base, 256)
        with open(path[:-4] + ".index", "wb") as f:
            f.write(rb.index)
        with open(path[:-4] + ".timeindex", "wb") as f:
            f.write(rb.timeindex)
    return model


def kafkalog(*args: str, cwd: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kafkalog_cli", *args], capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, "COLUMNS": "200"})


def record_offsets(text: str) -> list[int]:
    return [int(line.split()[2]) for line in text.splitlines() if line.startswith("| offset: ")]


@pytest.fixture(scope="module")
def part(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, list[M]]:
    pdir = str(tmp_path_factory.mktemp("w") / "orders-3")
    return pdir, write_partition(pdir, 29)


def _iso(ms: int) -> str:
    from kafkalog_cli.timefmt import iso_utc

    return iso_utc(ms)


@pytest.mark.parametrize("case", ["offset", "offset+count", "pid", "time", "pid+time", "all"])
def test_window_prints_the_model_records_as_dumplogsegments_lines(part: tuple[str, list[M]], case: str) -> None:
    pdir, model = part
    off = model[len(model) // 3].offset
    start, end = model[40].ts, model[70].ts
    opts = {"offset": ["--offset", str(off)], "offset+count": ["--offset", str(off), "--count", "7"],
            "pid": ["--producer-id", "4002"], "time": ["--start-time", _iso(start), "--end-time", _iso(end)],
            "pid+time": ["--producer-id", "4003", "--start-time", str(start), "--end-time", f"{end}ms"],
            "all": ["--offset", str(model[50].offset), "--count", "5", "--producer-id", "4001",
                    "--start-time", _iso(start)]}[case]
    want = [m for m in model
            if ("--offset" not in opts or m.offset >= int(opts[opts.index("--offset") + 1]))
            and ("--producer-id" not in opts or m.pid == int(opts[opts.index("--producer-id") + 1]))
            and (case not in ("time", "pid+time", "all") or m.ts >= start)
            and (case not in ("time", "pid+time") or m.ts <= end)]
    if "--count" in opts:
        want = want[: int(opts[opts.index("--count") + 1])]
    full = kafkalog("dump", "--deep-iteration", pdir)
    win = kafkalog("dump", "--deep-iteration", *opts, pdir)
    assert win.returncode == 0, win.stderr
    assert record_offsets(win.stdout) == [m.offset for m in want]
    # every line is one the full dump prints, in the same order (the window only leaves lines out)
    lines = full.stdout.splitlines()
    i = 0
    for line in win.stdout.splitlines():
        while lines[i] != line:
            i += 1
        i += 1


def test_window_reads_neither_earlier_segments_nor_bytes_before_the_indexed_start(tmp_path: object) -> None:
    """Garbage in the first segment and at the start of the window's segment: a window that starts after them
    never reads them (the full dump does and fails)."""
    pdir = os.path.join(str(tmp_path), "orders-0")
    model = write_partition(pdir, 7)
    logs = sorted(n for n in os.listdir(pdir) if n.endswith(".log"))
    for n in logs[:3]:
        with open(os.path.join(pdir, n), "r+b") as f:
            f.seek(30)
            f.write(b"\xff" * 40)  # inside the first batch's header and records: its CRC fails
    third, fourth = int(logs[2][:20]), int(logs[3][:20])
    target = [m for m in model if third < m.offset < fourth][-5]  # near the end of the third segment
    assert kafkalog("dump", pdir).returncode == 1
    win = kafkalog("dump", "--deep-iteration", "--offset", str(target.offset), "--count", "2", pdir)
    assert win.returncode == 0, win.stderr
    assert "isvalid: false" not in win.stdout
    assert logs[0] not in win.stdout and logs[1] not in win.stdout
    assert record_offsets(win.stdout) == [target.offset, target.offset + 1]
    assert f"Dumping {pdir}/{logs[2]}" in win.stdout


def test_window_of_one_segment_file_and_json(part: tuple[str, list[M]]) -> None:
    pdir, model = part
    seg = sorted(n for n in os.listdir(pdir) if n.endswith(".log"))[1]
    base = int(seg[:20])
    inside = [m for m in model if m.offset >= base + 3][:4]
    r = kafkalog("dump", "--format", "json", "--deep-iteration", "--offset", str(base + 3), "--count", "4",
                 os.path.join(pdir, seg))
    assert r.returncode == 0, r.stderr
    objs = [json.loads(line) for line in r.stdout.splitlines()]
    assert [o["offset"] for o in objs if o["type"] == "record"] == [m.offset for m in inside]
    assert objs[-1]["type"] == "summary"


def test_records_view_format_string(part: tuple[str, list[M]]) -> None:
    pdir, model = part
    r = kafkalog("dump", "--records", "--producer-id", "4002", "--count", "6",
                 "-f", "%t|%p|%o|%T|%I|%k|%K|%s|%S|%P|%E|%%\\n", pdir)
    assert r.returncode == 0, r.stderr
    want = [m for m in model if m.pid == 4002][:6]
    assert r.stdout.splitlines() == [
        f"orders|3|{m.offset}|{m.ts}|{_iso(m.ts)}|{m.key.decode()}|{len(m.key)}|{m.value.decode()}|{len(m.value)}"
        f"|4002|0|%" for m in want]


def test_records_view_json_is_kcat_envelope(part: tuple[str, list[M]]) -> None:
    pdir, model = part
    r = kafkalog("dump", "--records", "--format", "json", "--count", "3", pdir)
    assert r.returncode == 0, r.stderr
    assert [json.loads(line) for line in r.stdout.splitlines()] == [
        {"topic": "orders", "partition": 3, "offset": m.offset, "tstype": "create", "ts": m.ts,
         "key": m.key.decode(), "payload": m.value.decode()} for m in model[:3]]


@pytest.mark.parametrize("args, message", [
    (["--records", "-f", "%o %Z\\n"], "unknown format token %Z"),
    (["-f", "%o\\n"], "--record-format formats the lines of --records"),
    (["--start-time", "2024-06-15T10:00Z", "--end-time", "2024-06-15T09:00Z"], "is before --start-time"),
    (["--start-time", "yesterday"], "--start-time: cannot read the time"),
])
def test_window_usage_errors(part: tuple[str, list[M]], args: list[str], message: str) -> None:
    r = kafkalog("dump", *args, part[0])
    assert r.returncode == 2
    assert r.stderr.startswith("kafkalog: error: ") and message in r.stderr
    assert "\nhint: " in r.stderr
