"""salvage's transaction rules (issue 27, "Repairs"): the evidence in the cut bytes decides.

* a cut whose framing and headers are readable shows whether it held a marker: a control batch of a producer whose
  transaction is open at the cut is a lost COMMIT/ABORT marker: refused, or with ``--allow-lost-marker`` salvaged
  with the consequence named (never silently turned into an abort that never happened);
* readable headers without such a marker (e.g. a torn last batch of pid -1 after an open transaction): salvaged, as
  the broker's own recovery loads it with the transaction open;
* unknown bytes inside an open transaction's span: refused, or with ``--allow-unknown-in-transaction`` a warning;
* a trailing cut is a note.

The oracle tests compare with Kafka's own ``Load`` (tests/kafka_real.py) on the same directories.
"""

from __future__ import annotations

import json
import os
import shutil
import struct

import pytest
from click.testing import CliRunner
from partition_gen import PartitionBuilder

from kafkalog_cli.broker import loader as ld
from kafkalog_cli.cli.main import cli
from kafkalog_cli.storage import companions as comp

NOW = 1_700_000_100_000


def _positions(data: bytes) -> list[int]:
    pos, out = 0, []
    while pos + 12 <= len(data):
        out.append(pos)
        pos += 12 + struct.unpack_from(">i", data, pos + 8)[0]
    return out


def _partition(root, kind: str) -> str:
    """Small partitions of producer 4242 (transactional) and plain batches, damaged as ``kind`` says."""
    pdir = os.path.join(str(root), "logs", "t-0")
    os.makedirs(pdir)
    pb = PartitionBuilder(pdir)
    if kind in ("lost-commit", "unknown-marker"):
        # txn data at 0, COMMIT at 1 (damaged), the same producer's next transaction at 2, ABORT at 3, plain at 4
        pb.batch([(b"a", b"x" * 20)], pid=4242, txn=True)
        pb.marker(4242, abort=False)
        pb.batch([(b"b", b"y" * 20)], pid=4242, txn=True)
        pb.marker(4242, abort=True)
        pb.batch([(b"c", b"z" * 20)])
    elif kind == "torn-tail":
        # txn data at 0 (open), plain at 1, a torn plain batch at 2 (its header intact: pid -1, not control)
        pb.batch([(b"a", b"x" * 20)], pid=4242, txn=True)
        pb.batch([(b"c", b"z" * 20)])
        pb.batch([(b"d", b"z" * 200)])
    elif kind in ("data-cut-open", "data-cut-hanging"):
        # txn data at 0, a damaged plain batch at 1 (header readable), plain at 2 (then a COMMIT at 3, or still open)
        pb.batch([(b"a", b"x" * 20)], pid=4242, txn=True)
        pb.batch([(b"c", b"z" * 20)])
        pb.batch([(b"d", b"z" * 20)])
        if kind == "data-cut-open":
            pb.marker(4242, abort=False)
    pb.write()
    path = os.path.join(pdir, f"{0:020d}.log")
    data = bytearray(open(path, "rb").read())
    rows = _positions(bytes(data))
    if kind == "lost-commit":
        data[rows[1] + 70] ^= 0xFF  # inside the COMMIT's record: CRC fails, header intact
    elif kind == "unknown-marker":
        data[rows[1]:rows[1] + 40] = b"\xa5" * 40  # the COMMIT's header is garbage: nothing readable
    elif kind == "torn-tail":
        del data[rows[2] + 100:]
    else:
        data[rows[1] + 70] ^= 0xFF
    open(path, "wb").write(bytes(data))
    return pdir


def run(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(cli, list(args))
    return res.exit_code, res.output


def _files(pdir: str) -> dict[str, bytes]:
    return {n: open(os.path.join(pdir, n), "rb").read() for n in sorted(os.listdir(pdir))}


def _txnindex(pdir: str) -> list[tuple[int, int, int]]:
    data = comp.read_if_exists(os.path.join(pdir, f"{0:020d}.txnindex")) or b""
    return [(pid, first, last) for _v, pid, first, last, _lso in struct.iter_unpack(">hqqqq", data)]


def test_lost_commit_marker_is_refused_not_written_as_an_abort(tmp_path):
    """Before: exit 0 and a .txnindex entry 4242 0..3, so the committed offset 0 read as aborted."""
    pdir = _partition(tmp_path, "lost-commit")
    before = _files(pdir)
    code, out = run("salvage", "--execute", pdir)
    assert code == 2, out
    assert "lost its COMMIT/ABORT marker" in out and "control batch of that producer at offset 1" in out, out
    assert "--allow-lost-marker" in out and "offsets 0..3 of producer 4242 as aborted" in out, out
    assert _files(pdir) == before
    code, out = run("salvage", pdir)  # the dry run tells the same
    assert code == 2 and "--allow-lost-marker" in out, out


def test_lost_marker_override_names_the_consequence(tmp_path):
    pdir = _partition(tmp_path, "lost-commit")
    code, out = run("salvage", "--execute", "--allow-lost-marker", "--backup-dir", str(tmp_path / "bk"), pdir)
    assert code == 0, out
    assert "WARNING: producer 4242's transaction from offset 0 lost its COMMIT/ABORT marker" in out, out
    # what the broker's own replay of the kept batches makes of it (and what the warning said)
    assert _txnindex(pdir) == [(4242, 0, 3)]
    assert not ld.plan_load(pdir).changes


def test_lost_marker_of_the_last_transaction_names_the_abort_command(tmp_path):
    """The lost marker ended the producer's last transaction: it now hangs; the override prints the command."""
    pdir = os.path.join(str(tmp_path), "logs", "orders-3")
    os.makedirs(pdir)
    pb = PartitionBuilder(pdir)
    pb.batch([(b"a", b"x" * 20)], pid=77, txn=True)
    pb.marker(77, abort=False)
    pb.batch([(b"c", b"z" * 20)])
    pb.write()
    path = os.path.join(pdir, f"{0:020d}.log")
    data = bytearray(open(path, "rb").read())
    data[_positions(bytes(data))[1] + 70] ^= 0xFF
    open(path, "wb").write(bytes(data))
    code, out = run("salvage", pdir)
    assert code == 2 and "it stays open: it hangs" in out, out
    code, out = run("salvage", "--allow-lost-marker", pdir)
    assert code == 1, out
    assert ("kafka-transactions.sh --bootstrap-server BROKER:9092 abort --topic orders --partition 3 "
            "--start-offset 0") in out, out


def test_torn_tail_after_an_open_transaction_is_salvaged_as_the_broker_loads_it(tmp_path):
    """Before: exit 2 ("its marker may be in the cut bytes") although the cut header says pid -1, not control."""
    pdir = _partition(tmp_path, "torn-tail")
    code, out = run("salvage", "--execute", "--backup-dir", str(tmp_path / "bk"), pdir)
    assert code == 0, out
    assert "producer 4242's transaction from offset 0 is open at the log end" in out, out
    assert "--start-offset 0" in out and "None" not in out, out
    plan = ld.plan_load(pdir)
    assert not plan.changes and plan.log_end_offset == 2


def test_unknown_bytes_inside_a_transaction_are_refused_unless_allowed(tmp_path):
    """Before: the garbage that replaced the COMMIT was cut silently and the .txnindex said 0..3 aborted."""
    pdir = _partition(tmp_path, "unknown-marker")
    code, out = run("salvage", pdir)
    assert code == 2 and "spans unreadable bytes" in out and "--allow-unknown-in-transaction" in out, out
    code, out = run("salvage", "--allow-unknown-in-transaction", "--execute", "--backup-dir", str(tmp_path / "bk"),
                    pdir)
    assert code == 0 and "WARNING: producer 4242's transaction from offset 0 spans unreadable bytes" in out, out
    assert "read_committed consumers" in out


@pytest.mark.parametrize("kind", ["data-cut-open", "data-cut-hanging"])
def test_readable_headers_without_a_marker_proceed(tmp_path, kind):
    """A cut inside a transaction whose header says plain data (pid -1) cannot have held its marker: no refusal.
    (Before, the open variant was refused.)"""
    pdir = _partition(tmp_path, kind)
    code, out = run("salvage", "--execute", "--backup-dir", str(tmp_path / "bk"), pdir)
    assert code == 0, out
    assert "WARNING: producer" not in out
    assert not ld.plan_load(pdir).changes


# ------------------------------------------------------------------------------------------------ Kafka's own Load
def _load(kafka_real, pdir: str, work) -> dict:
    shutil.rmtree(work, ignore_errors=True)
    res = kafka_real.json("Load", "--in", pdir, "--work", str(work), "--now-ms", str(NOW), "--segment-details")
    assert not res.get("error"), res["error"]
    return res


def _unchanged_but_preallocation(res: dict) -> bool:
    """Load changed nothing but the active segment's preallocated indexes (LogSegment.open of the last segment)."""
    ch = res["changes"]
    return not ch["deleted"] and not ch["created"] and all(
        m["name"].endswith((".index", ".timeindex")) and m["sizeAfter"] >= m["sizeBefore"] for m in ch["modified"])


def _producers(res: dict) -> list[tuple]:
    return [(p["producerId"], p["currentTxnFirstOffset"], p["lastDataOffset"]) for p in res["log"]["producers"]]


@pytest.mark.oracle
def test_oracle_torn_tail_matches_kafkas_load(tmp_path, kafka_real):
    """Kafka's Load of the damaged directory cuts the torn tail and keeps the transaction open; salvage's result is
    what Kafka loads without changing a byte (but the preallocation), with the same producer state."""
    pdir = _partition(tmp_path / "a", "torn-tail")
    broker = _load(kafka_real, pdir, tmp_path / "w1")
    assert broker["log"]["logEndOffset"] == 2 and _producers(broker) == [(4242, 0, 0)]
    code, out = run("salvage", "--execute", "--backup-dir", str(tmp_path / "bk"), pdir)
    assert code == 0, out
    after = _load(kafka_real, pdir, tmp_path / "w2")
    assert _unchanged_but_preallocation(after), after["changes"]
    assert _producers(after) == _producers(broker)
    assert after["log"]["firstUnstableOffset"] == broker["log"]["firstUnstableOffset"] == 0


@pytest.mark.oracle
def test_oracle_lost_marker_txnindex_is_kafkas(tmp_path, kafka_real):
    """Kafka's Load of the damaged directory truncates at the corrupt COMMIT (offset 1: the transaction from 0 stays
    open, no abort is recorded); salvage refuses by default, and with --allow-lost-marker writes exactly the
    .txnindex and producer state Kafka's own recovery derives from the kept batches (a full unclean Load of the
    result changes nothing) -- the consequence its warning names."""
    pdir = _partition(tmp_path / "a", "lost-commit")
    broker = _load(kafka_real, pdir, tmp_path / "w1")
    assert broker["log"]["logEndOffset"] == 1 and _producers(broker) == [(4242, 0, 0)]
    assert [s["abortedTxns"] for s in broker["log"]["segments"]] == [0]
    assert run("salvage", pdir)[0] == 2
    code, out = run("salvage", "--execute", "--allow-lost-marker", "--backup-dir", str(tmp_path / "bk"), pdir)
    assert code == 0, out
    after = _load(kafka_real, pdir, tmp_path / "w2")
    assert _unchanged_but_preallocation(after), after["changes"]
    assert [s["abortedTxns"] for s in after["log"]["segments"]] == [1] and _txnindex(pdir) == [(4242, 0, 3)]
    assert _producers(after) == [(4242, None, 2)]
    snap = json.dumps(after["log"])
    assert '"logEndOffset": 5' in snap


def test_a_torn_marker_at_the_tail_is_a_note(tmp_path):
    """The COMMIT itself is the torn last batch: the broker's own recovery cuts it and loads with the transaction
    open, so salvage does the same and says so (a trailing cut is at most a note)."""
    pdir = os.path.join(str(tmp_path), "logs", "t-0")
    os.makedirs(pdir)
    pb = PartitionBuilder(pdir)
    pb.batch([(b"a", b"x" * 20)], pid=4242, txn=True)
    pb.marker(4242, abort=False)
    pb.write()
    path = os.path.join(pdir, f"{0:020d}.log")
    data = open(path, "rb").read()
    open(path, "wb").write(data[: _positions(data)[1] + 70])
    code, out = run("salvage", pdir)
    assert code == 1, out
    assert "the tail held a control batch of that producer at offset 1" in out and "--start-offset 0" in out, out


def test_a_control_batch_of_another_producer_in_a_transaction_is_a_risk(tmp_path):
    """The cut's header says control batch, but of producer 99, which has no open transaction: its producer id may
    be the damaged field (the CRC failed), so 4242's open transaction is at risk: refused unless allowed."""
    pdir = _partition(tmp_path, "lost-commit")
    path = os.path.join(pdir, f"{0:020d}.log")
    data = bytearray(open(path, "rb").read())
    pos = _positions(bytes(data))[1]
    struct.pack_into(">q", data, pos + 43, 99)  # the COMMIT's producer id field
    open(path, "wb").write(bytes(data))
    code, out = run("salvage", pdir)
    assert code == 2 and "spans a damaged control batch" in out and "of producer 99" in out, out
    assert "--allow-unknown-in-transaction" in out
    assert run("salvage", "--allow-unknown-in-transaction", pdir)[0] == 1
