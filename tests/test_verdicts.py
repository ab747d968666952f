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
