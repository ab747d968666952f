"""Issue 27, "Verdicts and inputs" / "Damage below the recovery point": commands that look at one partition tell
one story about it (verify-crc's ``next:`` line, recover, scan), and their inputs get the documented verdicts."""

from __future__ import annotations

import json
import os

import pytest
from click.testing import CliRunner
from partition_gen import PartitionBuilder

from kafkalog_cli.cli.main import cli


def _run(*args: str):
    return CliRunner().invoke(cli, list(args))


def _below_rp_partition(root: str, recovery_point: int = 8) -> str:
    """Two segments (offsets 0..3, 4..7), a CRC-corrupt batch at offset 1, the recovery point at 8."""
    pdir = os.path.join(root, "t-0")
    pb = PartitionBuilder(pdir)
    for i in range(4):
        pb.batch([(b"k%d" % i, b"v" * 50)])
    pb.roll()
    for i in range(4):
        pb.batch([(b"k%d" % i, b"w" * 50)])
    pb.write()
    with open(os.path.join(root, "recovery-point-offset-checkpoint"), "w") as f:
        f.write(f"0\n1\nt 0 {recovery_point}\n")
    with open(os.path.join(root, "log-start-offset-checkpoint"), "w") as f:
        f.write("0\n1\nt 0 0\n")
    seg = os.path.join(pdir, f"{0:020d}.log")
    data = bytearray(open(seg, "rb").read())
    first = int.from_bytes(data[8:12], "big") + 12
    data[first + 70] ^= 0xFF  # inside the second batch's records: its CRC no longer verifies
    with open(seg, "wb") as f:
        f.write(data)
    return pdir


# ------------------------------------------------------------------------------------ damage below the recovery point
def test_damage_below_recovery_point_one_story(tmp_path):
    pdir = _below_rp_partition(str(tmp_path))
    v = _run("verify-crc", pdir)
    assert v.exit_code == 1
    nxt = [ln for ln in v.output.splitlines() if ln.startswith("next:")]
    assert len(nxt) == 1, v.output
    assert "will NOT repair" in nxt[0] and "truncates" not in nxt[0], nxt[0]
    assert "fetches from offset 1 fail" in nxt[0] and "followers" in nxt[0]
    assert f"'kafkalog salvage {pdir}'" in nxt[0] and f"'kafkalog recover --recovery-point 0 {pdir}'" in nxt[0]

    r = _run("recover", pdir)
    assert r.exit_code == 1, r.output
    bad = [ln for ln in r.output.splitlines() if "NOT REPAIRED" in ln]
    assert len(bad) == 1, r.output
    # the same advice, word for word, in both commands
    advice = nxt[0].split(f"{pdir}: ", 1)[1]
    assert bad[0].endswith(advice), (bad[0], advice)

    doc = json.loads(_run("recover", "--format", "json", pdir).output)
    assert doc["unrepaired"] == [{"segment": 0, "position": 120, "offset": 1, "problem": "batch CRC mismatch"}]


def test_salvage_says_the_broker_keeps_damage_below_the_recovery_point(tmp_path):
    """salvage's comparison line must not read as an all-clear: the broker loses nothing there because it repairs
    nothing (the same story as verify-crc's next: and recover's NOT REPAIRED)."""
    pdir = _below_rp_partition(str(tmp_path))
    r = _run("salvage", pdir)
    lines = r.output.splitlines()
    i = next(k for k, ln in enumerate(lines) if "the broker's own recovery would lose: nothing" in ln)
    assert "will NOT repair the corrupt batch at byte 120 of segment 0 (offset 1)" in lines[i + 1], r.output
    doc = json.loads(_run("salvage", "--format", "json", pdir).output)
    assert doc["broker_unrepaired"] == [{"segment": 0, "position": 120, "offset": 1, "problem": "batch CRC mismatch"}]


def test_recover_with_recovery_point_lowered_cuts_like_the_broker(tmp_path):
    pdir = _below_rp_partition(str(tmp_path))
    doc = json.loads(_run("recover", "--recovery-point", "0", "--format", "json", pdir).output)
    assert doc["unrepaired"] == []
    assert doc["log_end_offset"] == 1 and doc["lost_records"] == 6
    ex = _run("recover", "--recovery-point", "0", "--execute", pdir)
    assert ex.exit_code == 0, ex.output
    again = _run("recover", pdir)
    assert "NOT REPAIRED" not in again.output and again.exit_code == 0, again.output
    assert _run("verify-crc", pdir).exit_code == 0


def test_damage_above_recovery_point_still_truncates(tmp_path):
    pdir = _below_rp_partition(str(tmp_path), recovery_point=0)
    nxt = [ln for ln in _run("verify-crc", pdir).output.splitlines() if ln.startswith("next:")]
    assert len(nxt) == 1 and "broker truncates" in nxt[0], nxt
    assert "NOT REPAIRED" not in _run("recover", pdir).output


def test_clean_shutdown_marker_repairs_nothing(tmp_path):
    pdir = _below_rp_partition(str(tmp_path), recovery_point=0)
    open(os.path.join(str(tmp_path), ".kafka_cleanshutdown"), "w").close()
    nxt = [ln for ln in _run("verify-crc", pdir).output.splitlines() if ln.startswith("next:")]
    assert "will NOT repair" in nxt[0] and ".kafka_cleanshutdown" in nxt[0], nxt
    assert "NOT REPAIRED" in _run("recover", pdir).output


@pytest.mark.oracle
def test_below_recovery_point_kafka_loader_keeps_the_corrupt_batch(tmp_path, kafka_real):
    """Kafka's LogLoader (LogLoader.java:467: ``segments.values(recoveryPointCheckpoint, ..)``) leaves segment 0 as
    it is; with the recovery point lowered to 0 it cuts it at the corrupt batch, as ``recover --recovery-point 0``."""
    pdir = _below_rp_partition(str(tmp_path / "d"))
    size = os.path.getsize(os.path.join(pdir, f"{0:020d}.log"))
    res = kafka_real.json("Load", "--in", pdir, "--work", str(tmp_path / "load"), "--now-ms", "1700000100000")
    assert "error" not in res, res["error"]
    segs = {s["baseOffset"]: s["sizeBytes"] for s in res["log"]["segments"]}
    assert segs[0] == size and res["log"]["logEndOffset"] == 8
    ours = json.loads(_run("recover", "--format", "json", pdir).output)
    assert [u["segment"] for u in ours["unrepaired"]] == [0] and ours["log_end_offset"] == 8

    low = kafka_real.json("Load", "--in", pdir, "--work", str(tmp_path / "load0"), "--now-ms", "1700000100000",
                          "--recovery-point", "0")
    ours0 = json.loads(_run("recover", "--recovery-point", "0", "--format", "json", pdir).output)
    assert low["log"]["logEndOffset"] == ours0["log_end_offset"] == 1
    assert [s["baseOffset"] for s in low["log"]["segments"]] == [0]


def test_salvage_never_prints_python_none(tmp_path):
    """A corrupt FIRST batch of a segment has no last good offset: the text says so instead of 'None'."""
    pdir = os.path.join(str(tmp_path), "t-0")
    pb = PartitionBuilder(pdir)
    for i in range(3):
        pb.batch([(b"k%d" % i, b"v" * 50)])
    pb.write()
    seg = os.path.join(pdir, f"{0:020d}.log")
    data = bytearray(open(seg, "rb").read())
    data[70] ^= 0xFF
    with open(seg, "wb") as f:
        f.write(data)
    res = _run("salvage", pdir)
    assert "None" not in res.output, res.output
    assert "no intact batch before it in the segment, next good offset 1" in res.output, res.output


# ------------------------------------------------------------------------------------ missing index files
def test_verify_reports_missing_indexes_as_rebuild_index_does(tmp_path):
    pdir = os.path.join(str(tmp_path), "t-0")
    pb = PartitionBuilder(pdir)
    for _ in range(3):
        pb.batch([(b"k", b"v" * 40)])
    pb.roll()
    pb.batch([(b"k", b"w")])
    pb.write()
    os.remove(os.path.join(pdir, f"{0:020d}.index"))
    os.remove(os.path.join(pdir, f"{3:020d}.timeindex"))
    v = _run("verify-crc", "--format", "json", pdir)
    assert v.exit_code == 1
    doc = json.loads(v.output)
    got = sorted((os.path.basename(p["file"]), p["kind"], p["severity"]) for p in doc["problems"])
    assert got == [(f"{0:020d}.index", "index-missing", "warning"), (f"{3:020d}.timeindex", "timeindex-missing", "warning")]
    assert any("rebuild-index" in s for s in doc["next_steps"])
    r = _run("rebuild-index", pdir)
    assert r.exit_code == 1 and r.output.count("missing") >= 2, r.output
    assert _run("rebuild-index", "--execute", pdir).exit_code == 0
    assert _run("verify-crc", pdir).exit_code == 0


def test_lone_log_copy_has_no_missing_index_finding(tmp_path):
    pdir = os.path.join(str(tmp_path), "copy")
    pb = PartitionBuilder(pdir)
    pb.batch([(b"k", b"v")])
    pb.write()
    for n in os.listdir(pdir):
        if not n.endswith(".log"):
            os.remove(os.path.join(pdir, n))
    assert _run("verify-crc", os.path.join(pdir, f"{0:020d}.log")).exit_code == 0


# ------------------------------------------------------------------------------------ damaged index: grouped findings
def _damaged_index(root: str, garbage: int) -> str:
    pdir = os.path.join(root, "t-0")
    pb = PartitionBuilder(pdir)
    for i in range(400):
        pb.batch([(b"k%d" % i, b"v" * 1000)])
    pb.write()
    p = os.path.join(pdir, f"{0:020d}.index")
    d = bytearray(open(p, "rb").read())
    rnd = __import__("random").Random(garbage)
    if garbage <= len(d) - 80:
        d[80:80 + garbage] = rnd.randbytes(garbage)
    else:
        d = bytearray(rnd.randbytes(garbage))
    with open(p, "wb") as f:
        f.write(d)
    return pdir


@pytest.mark.parametrize("garbage", [40, 100 * 1024])
def test_damaged_index_findings_grouped_per_kind(tmp_path, garbage):
    pdir = _damaged_index(str(tmp_path), garbage)
    res = _run("verify-crc", "--plain", pdir)
    assert res.exit_code == 1
    lines = [ln for ln in res.output.splitlines() if ".index:" in ln]
    kinds = [ln.split(": ")[1].split()[1] for ln in lines]
    assert len(lines) == len(set(kinds)) <= 4, res.output  # one line per kind
    grouped = [ln for ln in lines if " slots (" in ln]
    assert grouped and all("--max-problems N lists them one by one" in ln for ln in grouped)
    total = sum(int(ln.split(" slots (")[0].rsplit(" ", 1)[1]) if " slots (" in ln else 1 for ln in lines)
    detail = _run("verify-crc", "--plain", "--max-problems", "100000", pdir)
    per_slot = [ln for ln in detail.output.splitlines() if ".index:" in ln]
    assert len(per_slot) == total > len(lines)  # the counts add up to the slot-by-slot detail
    assert not any(" slots (" in ln for ln in per_slot)


# ------------------------------------------------------------------------------------ transactions
def _txn_open(pdir: str, pid: int) -> int:
    pb = PartitionBuilder(pdir)
    pb.batch([(b"k", b"v")])
    first = pb.next_offset
    pb.batch([(b"t1", b"x"), (b"t2", b"y")], pid=pid, txn=True)
    pb.batch([(b"plain", b"z")])
    pb.write()
    return first


def test_transactions_on_a_folder_of_log_dirs_looks_one_level_down(tmp_path):
    from txn_scenarios import meta, txn_record, txn_state_partition

    for broker in (1, 2):
        ld = str(tmp_path / f"broker{broker}")
        meta(ld, broker)
        _txn_open(os.path.join(ld, f"orders-{broker}"), 1000 + broker)
        txn_state_partition(ld, [txn_record(f"tx{broker}", 1000 + broker, 0, "CompleteAbort", {})],
                            partition=broker - 1, partitions=2)
    res = _run("transactions", "--partitions", "2", "--format", "json", str(tmp_path))
    doc = json.loads(res.stdout)
    assert res.exit_code == 1, res.output
    assert sorted(t["topic"] + "-" + str(t["partition"]) for t in doc["open"]) == ["orders-1", "orders-2"]
    assert all(t["classification"] == "hanging" for t in doc["open"])


def test_transactions_on_an_empty_dir_is_not_an_all_clear(tmp_path):
    (tmp_path / "nothing").mkdir()
    res = _run("transactions", str(tmp_path / "nothing"))
    assert res.exit_code == 2
    assert "no partition directories found" in res.output and "expected a broker log dir" in res.output


def test_transactions_committed_by_coordinator_warns_before_abort(tmp_path):
    from txn_scenarios import meta, txn_record, txn_state_partition

    ld = str(tmp_path / "data")
    meta(ld, 1)
    first = _txn_open(os.path.join(ld, "orders-0"), 1001)
    txn_state_partition(ld, [txn_record("tx-done", 1001, 0, "Ongoing", {"orders": [0]}),
                             txn_record("tx-done", 1001, 0, "PrepareCommit", {"orders": [0]}),
                             txn_record("tx-done", 1001, 0, "CompleteCommit", {})], partition=0, partitions=1)
    res = _run("transactions", "--partitions", "1", ld)
    assert res.exit_code == 1
    out = res.output
    assert "COMMITTED" in out and "prefer the coordinator's outcome" in out, out
    warn = [ln for ln in out.splitlines() if "WARNING:" in ln]
    assert warn and "read_committed consumers then SKIP the committed records" in warn[0]
    assert f"offsets {first}..{first + 1}" in warn[0]
    lines = out.splitlines()
    assert lines.index(warn[0]) < next(i for i, ln in enumerate(lines) if "abort --topic orders" in ln)
    doc = json.loads(_run("transactions", "--partitions", "1", "--format", "json", ld).stdout)
    assert doc["open"][0]["committed_by_coordinator"] is True and doc["open"][0]["abort_warning"]


# ------------------------------------------------------------------------------------ empty and non-Kafka inputs
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXTRA = {"seek-offset": ["0"], "seek-time": ["0"], "truncate-to-epoch": ["0"]}
INPUTS = ("missing path", "empty dir", "empty partition", "non-Kafka file", "stray file")


def _input_table() -> list[tuple[str, str, int, str]]:
    """(command, input, exit code, what the cell says) from docs/commands.md's table."""
    text = open(os.path.join(ROOT, "docs", "commands.md"), encoding="utf-8").read()
    head = "| command | " + " | ".join(INPUTS) + " |"
    assert head in text
    rows = []
    for line in text.split(head, 1)[1].splitlines()[2:]:
        if not line.startswith("| `"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        cmd = cells[0].strip("`")
        for inp, cell in zip(INPUTS, cells[1:]):
            rows.append((cmd, inp, int(cell.split()[0]), cell))
    return rows


TABLE = _input_table()


def _make_input(root: str, which: str) -> str:
    if which == "missing path":
        return os.path.join(root, "nonexistent")
    if which == "empty dir":
        os.makedirs(os.path.join(root, "empty"))
        return os.path.join(root, "empty")
    if which == "empty partition":
        os.makedirs(os.path.join(root, "ld", "orders-0"))
        return os.path.join(root, "ld", "orders-0")
    if which == "non-Kafka file":
        p = os.path.join(root, "notes.txt")
        with open(p, "w") as f:
            f.write("hello, not kafka\n")
        return p
    src = os.path.join(root, "src", "t-0")
    pb = PartitionBuilder(src)
    pb.batch([(b"k", b"v")])
    pb.write()
    os.makedirs(os.path.join(root, "stray"))
    p = os.path.join(root, "stray", "0.log")
    os.rename(os.path.join(src, f"{0:020d}.log"), p)
    return p


def test_input_table_covers_every_path_command():
    assert len(TABLE) == 14 * len(INPUTS)


@pytest.mark.parametrize(("cmd", "which", "code", "cell"), TABLE, ids=[f"{c}-{i}" for c, i, _, _ in TABLE])
def test_input_table(tmp_path, cmd, which, code, cell):
    path = _make_input(str(tmp_path), which)
    args = [cmd, path, *EXTRA.get(cmd, [])]
    if cmd == "compare-replicas":
        args = [cmd, path, path]
    if cmd == "scan":
        args += ["--out", str(tmp_path / "scan-out"), "--jobs", "1"]
    res = CliRunner().invoke(cli, args)
    said = res.output + (res.stderr if res.stderr_bytes is not None else "")
    assert res.exit_code == code, f"{cell!r}: {said}"
    assert "Traceback" not in said and "internal error" not in said, said
    if code == 2:
        assert "kafkalog: error:" in said, said
    if "note" in cell:
        assert "note" in said, said
    if "never reads it" in cell:
        assert "never reads it" in said, said


# ------------------------------------------------------------------------------------ Ctrl-C during --jobs 2
def _ctrl_c(args: list[str], wait_for: bytes | None, delay: float) -> tuple[int, bytes]:
    """Run ``python -m kafkalog_cli ARGS`` on a pseudo-terminal, type Ctrl-C once ``wait_for`` was printed (or after
    ``delay`` s); (exit code, everything the terminal showed)."""
    import pty
    import select
    import sys
    import time

    pid, fd = pty.fork()
    if pid == 0:  # pragma: no cover - the child
        os.execv(sys.executable, [sys.executable, "-m", "kafkalog_cli", *args])
    out, sent, t0 = b"", False, time.monotonic()
    while time.monotonic() - t0 < 120:
        r, _, _ = select.select([fd], [], [], 0.05)
        if r:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
        if not sent and ((wait_for is not None and wait_for in out) or time.monotonic() - t0 > delay):
            os.write(fd, b"\x03")
            sent = True
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), out


@pytest.fixture(scope="module")
def many_partitions(tmp_path_factory):
    root = tmp_path_factory.mktemp("many")
    for p in range(4):
        pb = PartitionBuilder(str(root / f"t-{p}"))
        for _ in range(3):
            for i in range(2500):
                pb.batch([(b"k%d" % i, b"v" * 300)], codec=1)
            pb.roll()
        pb.batch([(b"x", b"y")])
        pb.write()
    return root


@pytest.mark.parametrize("cmd", ["verify-crc", "scan"])
def test_ctrl_c_with_two_jobs_is_quiet(many_partitions, tmp_path, cmd):
    if cmd == "verify-crc":
        args, wait_for = ["verify-crc", "--deep", "--jobs", "2", str(many_partitions)], b" MB"  # the bar runs
    else:
        args, wait_for = ["scan", "--jobs", "2", "--records", str(many_partitions), "--out", str(tmp_path / "o")], None
    code, shown = _ctrl_c(args, wait_for, 1.5)
    if code == 0:
        pytest.skip("the command finished before Ctrl-C reached it")
    assert code == 130, shown[-2000:]
    assert b"Traceback" not in shown and b"KeyboardInterrupt" not in shown, shown[-3000:]
    if cmd == "verify-crc":  # the bar is live: the terminal does not echo '^C' into it
        assert b"^C" not in shown, shown[-500:]
    assert shown.count(b"kafkalog: interrupted") <= 1, shown[-500:]


# ------------------------------------------------------------------------------------ one verdict for Kafka Streams data
STREAMS_CHANGELOG = {
    "topic": "app-KSTREAM-AGGREGATE-STATE-STORE-0000000002-changelog", "partition": 0,
    "config": {"cleanup.policy": "compact", "segment.bytes": "1200", "min.cleanable.dirty.ratio": "0.01"},
    "ops": [  # exactly-once (transactional) writes of event-time records, out of timestamp order
        {"op": "append", "records": [{"key": "a", "value": "1", "timestamp": 1700000005000,
                                      "headers": {"v": "1", "__streams": None}}],
         "producerId": 7000, "transactional": True, "codec": "lz4"},
        {"op": "append", "records": [{"key": "b", "value": "1", "timestamp": 1700000001000}],
         "producerId": 7000, "transactional": True},
        {"op": "marker", "type": "COMMIT", "producerId": 7000},
        {"op": "append", "records": [{"key": "a", "value": "2", "timestamp": 1700000003000}],
         "producerId": 7000, "transactional": True, "batches": 3, "codec": "zstd"},
        {"op": "marker", "type": "COMMIT", "producerId": 7000},
        {"op": "roll"},
        {"op": "append", "records": [{"key": "c", "value": "3", "timestamp": 1700000002000}],
         "producerId": 7000, "transactional": True},
        {"op": "marker", "type": "COMMIT", "producerId": 7000},
    ],
    "shutdown": "clean"}
STREAMS_REPARTITION = {
    "topic": "app-KSTREAM-REPARTITION-0000000003-repartition", "partition": 0,
    "config": {"segment.bytes": "1500", "cleanup.policy": "delete"},
    "ops": [  # purged by DeleteRecords, as Streams does after each commit
        {"op": "append", "count": 5, "keyFormat": "r%d", "producerId": 5001, "transactional": True, "codec": "snappy",
         "records": [{"key": "x", "value": "y", "timestamp": 1700000009000, "headers": {"__repartition": "1"}}],
         "batches": 4},
        {"op": "marker", "type": "COMMIT", "producerId": 5001},
        {"op": "highWatermark"},
        {"op": "deleteRecords", "offset": 12},
        {"op": "append", "count": 5, "keyFormat": "r%d", "producerId": 5001, "transactional": True, "batches": 2},
        {"op": "marker", "type": "COMMIT", "producerId": 5001},
    ],
    "shutdown": "clean"}


@pytest.mark.oracle
def test_healthy_streams_data_one_verdict(tmp_path, kafka_real):
    """Kafka's own UnifiedLog writes a Streams changelog (then its log cleaner compacts it) and a purged repartition
    topic: scan, verify-crc and recover all say healthy (exit 0), and the default views print no info note."""
    from kafka_real import write_partition

    chg = write_partition(kafka_real, tmp_path / "w1", STREAMS_CHANGELOG)
    res = kafka_real.json("Clean", "--in", str(chg), "--work", str(tmp_path / "c1"), "--now-ms", "1700000500000")
    assert "error" not in res, res
    rep = write_partition(kafka_real, tmp_path / "w2", STREAMS_REPARTITION)
    for pdir in (str(tmp_path / "c1" / chg.name), str(chg), str(rep)):
        v = _run("verify-crc", pdir)
        assert v.exit_code == 0, v.output
        assert " info " not in v.output, v.output
        r = _run("recover", pdir)
        assert r.exit_code == 0, r.output
        s = _run("scan", pdir, "--out", str(tmp_path / ("scan-" + os.path.basename(os.path.dirname(pdir)))),
                 "--jobs", "1")
        assert s.exit_code == 0, s.output
        assert "no problems found" in s.output and "(info)" not in s.output, s.output
