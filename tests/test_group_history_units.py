"""``group-history``'s parts that need no oracle: the fast OffsetCommitValue reader against the generic one, the
reset CSV's form, the path and usage errors, the Connect key rule."""

from __future__ import annotations

import random
import struct

import pytest
from click.testing import CliRunner

from kafkalog_cli.cli.main import cli
from kafkalog_cli.internal_topics import connect_offsets as cx
from kafkalog_cli.internal_topics import coordinator as co
from kafkalog_cli.internal_topics import schema as sc
from kafkalog_cli.internal_topics import schemas_group as sg
from kafkalog_cli.internal_topics.offsets_fast import OffsetCommitReader
from kafkalog_cli.ops import group_history as gh


def _value(rng: random.Random, version: int) -> bytes:
    vals = {"offset": rng.randint(-1, 2**62), "leaderEpoch": rng.randint(-1, 2**31 - 1),
            "metadata": rng.choice(["", "m", "meta-ключ", "x" * 300]), "commitTimestamp": rng.randint(0, 2**45),
            "expireTimestamp": rng.randint(-1, 2**45)}
    return struct.pack(">h", version) + sc.encode(sg.OffsetCommitValue, vals, version)


@pytest.mark.parametrize("version", range(sg.OffsetCommitValue.valid[0], sg.OffsetCommitValue.valid[1] + 1))
def test_fast_reader_gives_the_generic_readers_values(version: int) -> None:
    rng = random.Random(version)
    fast = OffsetCommitReader()
    for _ in range(200):
        raw = _value(rng, version)
        got = fast.read(raw)
        assert got is not None, version
        assert got == (version, co.read_checked(raw, sg.OffsetCommitValue, version, 2))


def test_fast_reader_declines_what_it_does_not_cover() -> None:
    fast = OffsetCommitReader()
    good = _value(random.Random(1), 3)
    assert fast.read(good + b"\x00") is None          # trailing bytes
    assert fast.read(good[:-3]) is None               # cut short
    assert fast.read(struct.pack(">h", 9) + good[2:]) is None  # a version the table does not have
    assert fast.read(b"\x00") is None
    bad_utf8 = struct.pack(">hqh", 0, 5, 2) + b"\xff\xfe" + struct.pack(">q", 1)
    assert fast.read(bad_utf8) is None


def test_reset_csv_has_kafkas_two_forms() -> None:
    w = gh.Where(0, 1, "f", 0)
    c = gh.Commit(42, None, "", 1, None, 3, w)
    pos = [gh.Position("g", "orders", 3, "committed", c, ""), gh.Position("g", "orders", 4, "unknown", None, ""),
           gh.Position("g2", "pay.ments", 0, "committed", c, "")]
    assert gh.reset_csv(pos, single_group=True) == "orders,3,42\npay.ments,0,42\n"
    assert gh.reset_csv(pos, single_group=False) == "g,orders,3,42\ng2,pay.ments,0,42\n"


def test_usage_and_path_errors(tmp_path) -> None:  # noqa: ANN001
    r = CliRunner().invoke(cli, ["group-history", "g"])
    assert r.exit_code == 2 and "at least one LOGDIR" in r.stderr
    r = CliRunner().invoke(cli, ["group-history", "g", str(tmp_path), "--emit-reset", str(tmp_path / "x.csv")])
    assert r.exit_code == 2 and "needs --at" in r.stderr and not (tmp_path / "x.csv").exists()
    r = CliRunner().invoke(cli, ["group-history", "g", str(tmp_path), "--at", "yesterday-ish"])
    assert r.exit_code == 2 and "cannot read the time" in r.stderr
    r = CliRunner().invoke(cli, ["group-history", "g", str(tmp_path)])
    assert r.exit_code == 2 and "no __consumer_offsets partition directory" in r.stderr
    r = CliRunner().invoke(cli, ["group-history", "g", str(tmp_path / "missing")])
    assert r.exit_code == 2 and "no such file or directory" in r.stderr and "Traceback" not in r.output


def test_connect_key_rule() -> None:
    """OffsetUtils.processPartitionKey: [string, map]; anything else is ignored; schemas.enable envelopes unwrap."""
    assert cx.decode_key(b'["c",{"f":"a"}]') == ("c", {"f": "a"})
    assert cx.decode_key(b'{"schema":{"type":"array"},"payload":["c",{"f":1}]}') == ("c", {"f": 1})
    for bad in (b'["c"]', b'["c",null]', b'[1,{}]', b'"c"', b"\xff", None, b'["c",{},3]'):
        assert cx.decode_key(bad) is None, bad
    assert cx.decode_value(None) == (True, None) and cx.decode_value(b'{"p":1}') == (True, {"p": 1})
    assert cx.decode_value(b"[1]") == (False, None)
    assert cx.partition_id({"b": 1, "a": 2}) == cx.partition_id({"a": 2, "b": 1})


def test_sample_reset_is_named_against_the_data_log() -> None:
    """fixtures/groups' orders-app resets orders-0 to 0 while Empty; fixtures/partition/orders-0 starts at 0."""
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent / "fixtures"
    h = gh.history([str(root / "groups"), str(root / "partition")], "orders-app")
    p0 = h.groups["orders-app"].partitions[("orders", 0)]
    (reset,) = [t for t in p0.timeline if isinstance(t, gh.Change) and t.kind == "reset"]
    assert "Empty" in reset.text and "the data log's start now (a reset --to-earliest)" in reset.text
    no_data = gh.history([str(root / "groups")], "orders-app")
    (r2,) = [t for t in no_data.groups["orders-app"].partitions[("orders", 0)].timeline
             if isinstance(t, gh.Change) and t.kind == "reset"]
    assert "--to-earliest" not in r2.text


def test_a_batch_failing_its_crc_is_not_read(tmp_path) -> None:  # noqa: ANN001
    """A flipped byte in the reset commit's batch: that commit is not taken as history (a warning names the entry)."""
    import shutil
    from pathlib import Path

    from kafkalog_cli.storage.segment import entries

    src = Path(__file__).resolve().parent.parent / "fixtures" / "groups" / "__consumer_offsets-5"
    dst = tmp_path / "__consumer_offsets-5"
    shutil.copytree(src, dst)
    log = dst / "00000000000000000000.log"
    data = bytearray(log.read_bytes())
    (batch,) = [b for b in entries(bytes(data)) if b.base_offset == 12]
    data[batch.position + batch.size - 12] ^= 0x01  # inside the commit's value (its offset field)
    log.write_bytes(bytes(data))
    r = CliRunner().invoke(cli, ["group-history", "orders-app", str(tmp_path)])
    assert "Traceback" not in r.output
    assert f"the entry at byte {batch.position} (offsets 12..12) fails its CRC" in r.stderr
    h = gh.history([str(tmp_path)], "orders-app")
    (reset,) = [t for t in h.groups["orders-app"].partitions[("orders", 0)].timeline
                if isinstance(t, gh.Change) and t.kind == "reset"]
    assert reset.after is not None and reset.after.offset == 4  # 10 -> 4: the damaged commit of 0 is not read


def test_a_deleted_partition_directory_is_a_copy_too(tmp_path) -> None:  # noqa: ANN001
    """A ``-delete`` directory (LocalLog's name for a partition scheduled for deletion) still holds history; so does a
    partition directory holding only a ``.log.deleted`` leftover."""
    import shutil
    from pathlib import Path

    src = Path(__file__).resolve().parent.parent / "fixtures" / "groups" / "__consumer_offsets-5"
    gone = tmp_path / "b1" / "__consumer_offsets-5.0123456789abcdef0123456789abcdef-delete"
    shutil.copytree(src, gone)
    h = gh.history([str(tmp_path / "b1")], "orders-app")
    assert h.partitions_read == [5] and h.groups["orders-app"].partitions[("orders", 0)].commits == 7
    left = tmp_path / "b2" / "__consumer_offsets-5"
    left.mkdir(parents=True)
    shutil.copy(src / "00000000000000000000.log", left / "00000000000000000000.log.deleted")
    h = gh.history([str(tmp_path / "b2")], "orders-app")
    assert h.groups["orders-app"].partitions[("orders", 0)].commits == 7
    both = gh.history([str(tmp_path / "b1"), str(tmp_path / "b2")], "orders-app")
    p0 = both.groups["orders-app"].partitions[("orders", 0)]
    assert p0.commits == 7 and p0.current is not None and p0.current.at.copies == 2 and not both.conflicts
