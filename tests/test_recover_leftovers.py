"""recover --execute leaves what Kafka's loader leaves (issue 27 "recover --execute leaves orphans"; issue 26).

Hand-built partitions (tests/partition_gen.py); what Kafka 4.0 does with the same damage is checked against Kafka's own
loader in tests/test_oracle_recover.py (the ``test_regression_*`` cases there)."""

from __future__ import annotations

import os

from click.testing import CliRunner
from partition_gen import PartitionBuilder

from kafkalog_cli.broker import loader as ld
from kafkalog_cli.cli.main import cli


def _partition(tmp_path, segments: int = 3) -> str:
    pdir = tmp_path / "logs" / "orders-0"
    pdir.mkdir(parents=True)
    pb = PartitionBuilder(str(pdir))
    for s in range(segments):
        if s:
            pb.roll()
        for i in range(10):
            pb.batch([(f"k{s}-{i}".encode(), b"v" * 40)], pid=7 if i % 2 else -1, leader_epoch=s)
    pb.write()
    return str(pdir)


def _run(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(cli, list(args))
    return res.exit_code, res.output


def test_segment_recovered_at_load_then_deleted_leaves_no_orphans(tmp_path):
    """Segment 10 has no .index (recovered at load: its indexes are rebuilt), then the unclean pass cuts segment 0
    and deletes 10 and 20: none of 10's files may stay behind, and the next dry run finds nothing to change."""
    pdir = _partition(tmp_path)
    os.unlink(os.path.join(pdir, f"{10:020d}.index"))
    log0 = os.path.join(pdir, f"{0:020d}.log")
    with open(log0, "ab") as f:
        # a torn tail shorter than a batch header (17 bytes): recovery cuts segment 0 and deletes every later
        # segment. A longer one (30 zero bytes, as here before) makes Kafka's load throw: recovering segment 10 at
        # load first replays producer state through segment 0 (UnifiedLog.rebuildProducerState), whose batch
        # iterator reads size 0 < 14 (CorruptRecordException; kafka-real Load at 1eb7644 agrees, and so does
        # kafkalog's loader since it follows that replay)
        f.write(b"\x00" * 10)
    plan = ld.plan_load(pdir, "4.0")
    assert [d.segment for d in plan.deleted_segments] == [10, 20]
    code, out = _run("recover", "--execute", "--kafka-version", "4.0", "--backup-dir", str(tmp_path / "bk"), pdir)
    assert code == 0, out
    left = sorted(n for n in os.listdir(pdir) if n[:20].isdigit() and int(n[:20]) in (10, 20) and not n.endswith(".snapshot"))
    assert left == []
    code, out = _run("recover", "--kafka-version", "4.0", pdir)
    assert code == 0, out


def test_recover_config_option(tmp_path):
    """--config index.interval.bytes=N is what recovery indexes by (a broker has it from the topic's metadata)."""
    pdir = _partition(tmp_path, segments=1)
    os.unlink(os.path.join(pdir, f"{0:020d}.index"))
    default = ld.plan_load(pdir, "4.0")
    small = ld.plan_load(pdir, "4.0", config=ld.TopicConfig.from_pairs(["index.interval.bytes=1", "cleanup.policy=compact"]))
    size = [next(c.size for c in p.changes if c.name.endswith(".index")) for p in (default, small)]
    assert size == [0, 8 * 9]  # 4096: no entry in 10 small batches; 1: one entry per batch after the first
    code, out = _run("recover", "--config", "index.interval.bytes=1", "--format", "json", pdir)
    assert code == 1, out
    code, out = _run("recover", "--config", "index.interval.bytes", pdir)
    assert code == 2 and "KEY=VALUE" in out


def test_recovery_point_above_the_log_end_is_written_back(tmp_path):
    pdir = _partition(tmp_path, segments=2)
    cp = os.path.join(os.path.dirname(pdir), "recovery-point-offset-checkpoint")
    with open(cp, "w") as f:
        f.write("0\n2\nother 3 77\norders 0 1000\n")
    plan = ld.plan_load(pdir, "4.0")
    assert plan.recovery_point_rewrite == 20 and plan.has_changes
    code, out = _run("recover", "--execute", "--kafka-version", "4.0", "--backup-dir", str(tmp_path / "bk"), pdir)
    assert code == 0, out
    assert open(cp).read() == "0\n2\nother 3 77\norders 0 20\n"
    assert not ld.plan_load(pdir, "4.0").has_changes


def test_txnindex_version_is_the_first_byte(tmp_path):
    """AbortedTxn.version() reads ONE byte (buffer.get(0)) of the int16 field: 0x0005 passes the load's sanity
    check (kafka-real Load loads it), 0x0100 stops the broker (KafkaException)."""
    import struct

    pdir = _partition(tmp_path, segments=2)
    x = os.path.join(pdir, f"{10:020d}.txnindex")
    for version, fatal in ((5, False), (0x100, True)):
        with open(x, "wb") as f:
            f.write(struct.pack(">hqqqq", version, 9, 12, 13, 12))
        plan = ld.plan_load(pdir, "4.0")
        assert bool(plan.fatal) is fatal, (version, plan.fatal)
