"""find-key and --prove-erased on the fixture fleet of tests/find_key_fleet.py (the key planted in every kind of
place), checked against its brute-force decompress-and-grep; the verdicts; the exit codes; an oracle run of Kafka's
own cleaner past the delete horizon."""

from __future__ import annotations

import json
import os
import shutil

import find_key_fleet as F
import pytest
from click.testing import CliRunner
from partition_gen import PartitionBuilder

from kafkalog_cli.cli.main import cli
from kafkalog_cli.format.partitioners import consistent_random


def run(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def doc(*args: str) -> tuple[int, dict]:
    r = run("find-key", *args, "--format", "json", "--now-ms", str(F.NOW))
    return r.exit_code, json.loads(r.stdout)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("fleet"))
    return F.build(root)


def test_precision_and_recall_against_brute_force(fleet):
    code, d = doc("customer-42", fleet.root, "--any-partition")
    assert code == 1
    found = {(h["file"], h["offset"]) for h in d["hits"] if h["match"] == "key"}
    truth, raw_files = F.brute_force(fleet.root, F.KEY)
    assert found == truth  # every record of the key, and nothing else (the compacted-away offset 5 of sessions-0)
    files = {h["file"] for h in d["hits"]}
    assert files == raw_files  # every file holding the key's bytes at all, raw or decompressed or base64
    assert not any("sessions-0" in f for f in files)


def test_every_kind_of_place(fleet):
    _code, d = doc("customer-42", fleet.root, "--any-partition")
    kinds = {h["kind"] for h in d["hits"]}
    assert kinds == {"live", "leftover", "delete-dir", "future-dir", "stray-dir", "tiered", "copy", "other-file"}
    brokers = {h["broker"] for h in d["hits"] if h["kind"] == "live"}
    assert brokers == {"1", "2"}
    cut = [h for h in d["hits"] if h["match"] == "unparsed"]
    assert [h["file"] for h in cut] == [fleet.planted["cut-write"]]


def test_murmur2_pruning(fleet):
    _code, d = doc("customer-42", fleet.root)
    assert d["targets"]["users"]["chosen"] == {"murmur2": F.P}
    assert not any(h["partition"] == F.OTHER_P and h["topic"] == "users" for h in d["hits"])
    skipped = [loc for loc in d["locations"] if not loc["searched"]]
    assert skipped and all(loc["partition"] != F.P for loc in skipped)
    # the librdkafka producer's copy is found with its partitioner
    _code, d2 = doc("customer-42", fleet.root, "--partitioner", "murmur2", "--partitioner", "consistent_random")
    got = any(h["partition"] == F.OTHER_P for h in d2["hits"])
    assert got == (consistent_random(F.KEY, F.N) == F.OTHER_P)


def test_states_on_the_leader(fleet):
    _code, d = doc("customer-42", fleet.root, "--cleanup-policy", "compact")
    leader = [h for h in d["hits"] if h["kind"] == "live" and h["broker"] == "1" and h["match"] == "key"]
    states = [(h["offset"], h["state"]) for h in leader]
    assert states == [(2, "tombstoned"), (4, "aborted"), (6, "tombstoned"), (8, "tombstone")]
    assert all("clean" in h["removed_by"] for h in leader)
    follower = [h for h in d["hits"] if h["kind"] == "live" and h["broker"] == "2"]
    assert [h["state"] for h in follower] == ["live"]
    deleted = [h for h in d["hits"] if h["kind"] == "leftover"]
    assert deleted and all("deletes it at start-up" in h["removed_by"] for h in deleted)


def test_prove_erased_finds_value_under_another_key(fleet):
    code, d = doc("customer-42", fleet.root, "--prove-erased")
    assert code == 1 and d["verdict"] == "PRESENT"
    other = [h for h in d["hits"] if h["match"] == "value-bytes"]
    assert other and other[0]["offset"] == 7 and "another key" in other[0]["detail"]
    # without --prove-erased the value copy under another key is not searched
    _code, d2 = doc("customer-42", fleet.root)
    assert not [h for h in d2["hits"] if h["match"] == "value-bytes"]


def _partition(tmp_path, records, codec=0) -> str:
    pb = PartitionBuilder(str(tmp_path / "kafka" / "t-0"))
    for kvs in records:
        pb.batch(kvs, codec=codec)
    pb.roll()
    pb.batch([(b"filler", b"x")])
    pb.write()
    return str(tmp_path / "kafka")


def test_verdict_pending_then_erased(tmp_path):
    logdir = _partition(tmp_path, [[(b"k1", b"secret-value-1")], [(b"k2", b"v")], [(b"k1", None)]], codec=1)
    code, d = doc("k1", logdir, "--prove-erased", "--cleanup-policy", "compact")
    assert code == 1 and d["verdict"] == "PENDING"
    assert "clean" in d["verdicts"][0]["reason"]
    # the same partition after the cleaner removed the old value (only the tombstone remains)
    shutil.rmtree(logdir)
    logdir = _partition(tmp_path, [[(b"k2", b"v")], [(b"k1", None)]], codec=1)
    code, d = doc("k1", logdir, "--prove-erased", "--cleanup-policy", "compact")
    assert code == 0 and d["verdict"] == "ERASED"


def test_verdict_present_for_live_value_and_corrupt_batch(tmp_path):
    logdir = _partition(tmp_path, [[(b"k1", b"secret-value-1")]])
    code, d = doc("k1", logdir, "--prove-erased")
    assert code == 1 and d["verdict"] == "PRESENT"
    # the value's bytes in a batch whose header is destroyed: found as unparsed bytes
    shutil.rmtree(logdir)
    logdir = _partition(tmp_path, [[(b"k1", b"secret-value-1")], [(b"k1", None)]])
    seg = os.path.join(logdir, "t-0", "00000000000000000000.log")
    with open(seg, "r+b") as f:
        f.write(b"\xff" * 12)  # the first batch's offset and length: the walk cannot read it
    code, d = doc("k1", logdir, "--prove-erased", "--cleanup-policy", "compact")
    assert code == 1 and d["verdict"] == "PRESENT"
    assert any(h["match"] == "unparsed" for h in d["hits"])


def test_exit_codes_and_errors(tmp_path, fleet):
    assert run("find-key", "nobody-has-this-key", fleet.root, "--any-partition").exit_code == 0
    assert run("find-key", "customer-42", fleet.root).exit_code == 1
    r = run("find-key", "k", str(tmp_path / "missing"))
    assert r.exit_code == 2 and "no such file or directory" in r.stderr
    r = run("find-key", "--key-hex", "zz", fleet.root)
    assert r.exit_code == 2 and "--key-hex" in r.stderr
    r = run("find-key", "--key-hex", F.KEY.hex(), fleet.root, "--format", "json")
    assert r.exit_code == 1 and json.loads(r.stdout)["key_hex"] == F.KEY.hex()
    keyfile = tmp_path / "key.bin"
    keyfile.write_bytes(F.KEY)
    assert run("find-key", "--key-file", str(keyfile), fleet.root).exit_code == 1


def test_text_output(fleet):
    r = run("find-key", "customer-42", fleet.root, "--now-ms", str(F.NOW))
    assert r.exit_code == 1
    assert "HIT tombstone" in r.stdout and f"murmur2 -> {F.P}" in r.stdout


def test_text_fits_80_columns_and_says_each_rule_once():
    """Prose wraps at 80 columns (a hit's path has a line of its own: only such a line may be longer), and the
    retention rule's name is not repeated ("retention.ms: retention.ms: ..." before)."""
    root = os.path.join(os.path.dirname(__file__), "..", "fixtures", "partition")
    r = CliRunner().invoke(cli, ["find-key", "k1", root])
    assert r.exit_code == 1, r.output
    assert "HIT " in r.stdout and "removed by: retention" in r.stdout
    for line in r.stdout.splitlines():
        assert len(line) <= 80 or line.startswith("    at "), line
    assert "retention.ms: retention.ms" not in r.stdout
    assert "1 partitions" not in r.stdout


def test_value_regex_and_time_range(fleet):
    code, d = doc("customer-42", fleet.root, "--value-regex", "alice@new", "--any-partition")
    assert any(h["match"] == "key" and h["value_size"] == len(F.V2) for h in d["hits"])
    # --since after every record: nothing found
    code, d = doc("customer-42", fleet.root, "--since", str(F.NOW + 10**9), "--any-partition")
    assert not [h for h in d["hits"] if h["match"] == "key"]


@pytest.mark.oracle
def test_erasure_after_kafka_cleaner(kafka_real, tmp_path):
    """Kafka's own cleaner (kafka-real Clean) past the delete horizon: the old values are gone from the live
    segments but stay in the replaced segments (.deleted) until the broker deletes them; then ERASED."""
    import kafka_real as kr

    plan = {"topic": "t", "config": {"cleanup.policy": "compact", "segment.bytes": "1000000"}, "ops": [
        {"op": "append", "records": [{"key": "user-7", "value": "PII-address-street-1"}]},
        {"op": "append", "count": 5, "keyFormat": "other-%d", "batches": 2},
        {"op": "append", "codec": "gzip", "records": [{"key": "user-7", "value": "PII-address-street-2"}]},
        {"op": "append", "records": [{"key": "user-7", "value": None}]},
        {"op": "roll"},
        {"op": "append", "count": 1, "keyFormat": "tail-%d"},
    ]}
    pdir = kr.write_partition(kafka_real, tmp_path / "data", plan)
    code, d = doc("user-7", str(pdir.parent), "--prove-erased", "--cleanup-policy", "compact")
    assert code == 1 and d["verdict"] == "PENDING"
    res = kafka_real.json("Clean", "--in", str(pdir), "--work", str(tmp_path / "clean"), "--now-ms",
                          "1700000100000", "--config", "delete.retention.ms=0", "--config",
                          "min.cleanable.dirty.ratio=0.01", "--passes", "2", "--advance-ms", "1000")
    assert res.get("error") is None, res
    cleaned = tmp_path / "clean" / pdir.name
    assert cleaned.is_dir()
    code, d = doc("user-7", str(cleaned.parent), "--prove-erased", "--cleanup-policy", "compact")
    leftovers = [h for h in d["hits"] if h["kind"] == "leftover" and not h["tombstone"]]
    live_values = [h for h in d["hits"] if h["kind"] == "live" and not h["tombstone"]]
    assert not live_values
    if leftovers:  # the replaced segments, kept as .deleted until file.delete.delay.ms
        assert d["verdict"] == "PENDING"
        for name in os.listdir(cleaned):
            if name.endswith(".deleted"):
                os.unlink(cleaned / name)  # what the broker does after file.delete.delay.ms
        code, d = doc("user-7", str(cleaned.parent), "--prove-erased", "--cleanup-policy", "compact")
    assert code == 0 and d["verdict"] == "ERASED", d["verdicts"]


def test_copies_under_other_names_and_formats(tmp_path):
    """A segment renamed (.bak), gzip-archived (.log.gz), and a Parquet export (snappy pages, binary key column):
    each is read for what it is, not only as raw bytes (the key is inside gzip batches or compressed pages)."""
    import gzip

    import pyarrow as pa
    import pyarrow.parquet as pq

    logdir = _partition(tmp_path, [[(b"k1", b"secret-value-1"), (b"x", b"y")]], codec=1)
    seg = os.path.join(logdir, "t-0", "00000000000000000000.log")
    with open(seg, "rb") as f:
        data = f.read()
    assert b"k1" not in data[61:]  # the batch is compressed: raw bytes alone would not find it
    copies = tmp_path / "copies"
    copies.mkdir()
    (copies / "orders.bak").write_bytes(data)
    (copies / "segment.log.gz").write_bytes(gzip.compress(data))
    pq.write_table(pa.table({"offset": [0, 1], "key": [b"k1", b"x"]}), str(copies / "export.parquet"),
                   compression="snappy")
    code, d = doc("k1", str(copies))
    assert code == 1
    by_file = {os.path.basename(h["file"]): h for h in d["hits"]}
    assert by_file["orders.bak"]["match"] == "key" and by_file["orders.bak"]["offset"] == 0
    assert by_file["segment.log.gz"]["match"] == "key"
    assert "Parquet column 'key', row 0" in by_file["export.parquet"]["detail"]


def test_undecompressable_batch_is_unknown_not_a_hit(tmp_path):
    logdir = _partition(tmp_path, [[(b"other", b"zzzz")]], codec=1)
    seg = os.path.join(logdir, "t-0", "00000000000000000000.log")
    with open(seg, "r+b") as f:
        f.seek(61)
        f.write(b"\x00" * 8)  # the gzip header of the first batch's payload
    code, d = doc("k1", logdir, "--prove-erased")
    assert not d["hits"]  # nothing found ...
    assert d["verdict"] == "UNKNOWN" and code == 1  # ... but nothing proven either


def test_short_key_in_legacy_messages_matches_records_only():
    """A one-byte key occurs by chance in header bytes (CRCs, offsets) and in values ("alpha"): only records
    with the key are hits. The legacy fixture holds v0/v1 messages, wrapped (compressed) ones included."""
    r = run("dump", "--print-data-log", "--deep-iteration", "fixtures/legacy/l-0")
    want = sum(" key: a " in line for line in r.stdout.splitlines())
    for extra in ([], ["--prove-erased"]):
        code, d = doc("a", "fixtures/legacy", "--any-partition", *extra)
        assert code == 1 and want > 0
        assert [h["match"] for h in d["hits"]] == ["key"] * want


def test_swap_leftover_the_loader_installs_is_present(tmp_path):
    """A .log.swap the broker installs at start-up becomes the live log: its values are PRESENT, while a
    .deleted copy is PENDING (the loader deletes it)."""
    logdir = _partition(tmp_path, [[(b"other", b"x")]])
    pdir = os.path.join(logdir, "t-0")
    leftover = PartitionBuilder(str(tmp_path / "scratch"))
    leftover.batch([(b"k1", b"secret-value-1")])
    leftover.write()
    with open(tmp_path / "scratch" / "00000000000000000000.log", "rb") as f:
        data = f.read()
    with open(os.path.join(pdir, "00000000000000000000.log.deleted"), "wb") as f:
        f.write(data)
    code, d = doc("k1", logdir, "--prove-erased")
    assert d["verdict"] == "PENDING", d["verdicts"]
    os.rename(os.path.join(pdir, "00000000000000000000.log.deleted"), os.path.join(pdir, "00000000000000000000.log.swap"))
    code, d = doc("k1", logdir, "--prove-erased")
    assert d["verdict"] == "PRESENT", d["verdicts"]
    assert [h["kind"] for h in d["hits"]] == ["leftover"] and "installs" in d["hits"][0]["removed_by"]


def test_no_pruning_when_the_partition_count_is_unknown(tmp_path):
    """A broker holding partitions 3 and 7 of a topic: the count is not 8, so both are searched (a key the real
    count maps to partition 3 is found), with a warning; --partitions N prunes again."""
    key = next(k for k in (f"c{i}".encode() for i in range(1000))
               if F.java_default(k, 12) == 3 and F.java_default(k, 8) != 3)
    for p in (3, 7):
        pb = PartitionBuilder(str(tmp_path / "kafka" / f"t-{p}"))
        pb.batch([(key if p == 3 else b"x", b"value")])
        pb.write()
    code, d = doc(key.decode(), str(tmp_path / "kafka"))
    assert code == 1 and [h["partition"] for h in d["hits"]] == [3]
    assert "not known" in d["targets"]["t"]["warning"]
    code, d = doc(key.decode(), str(tmp_path / "kafka"), "--partitions", "12")
    assert code == 1 and [loc["partition"] for loc in d["locations"] if not loc["searched"]] == [7]


def test_value_regex_alone(fleet):
    """find-key --value-regex RE LOGDIR (no key): the one positional is the log dir."""
    code, d = doc("--value-regex", "alice@new", fleet.root)
    assert code == 1 and d["key"] is None
    assert {h["match"] for h in d["hits"]} == {"value-regex"}
    assert all(h["value_size"] == len(F.V2) for h in d["hits"])


def test_copy_nested_in_a_delete_dir(tmp_path):
    """kafkalog's exchange leaves <partition>.<uuid>-delete/<partition>/ (docs/safety.md): the nested copy is
    searched and has the -delete directory's fate."""
    logdir = _partition(tmp_path, [[(b"other", b"x")]])
    side = PartitionBuilder(str(tmp_path / "kafka" / "t-0.0123456789abcdef0123456789abcdef-delete" / "t-0"))
    side.batch([(b"k1", b"old-secret")])
    side.write()
    code, d = doc("k1", logdir)
    assert code == 1 and [h["kind"] for h in d["hits"]] == ["delete-dir"]
    assert "deletes this -delete directory" in d["hits"][0]["removed_by"]


@pytest.mark.parametrize("codec", [1, 3, 4])
def test_key_in_a_cut_compressed_batch(tmp_path, codec):
    """A compressed batch cut short at the end of the segment (a crash mid-write): its readable part is
    decompressed and searched; the key's record is in that part."""
    from kafkalog_cli.format.encoder import RecordSpec, encode_batch

    logdir = _partition(tmp_path, [[(b"other", b"x")]])
    seg = os.path.join(logdir, "t-0", "00000000000000000001.log")
    recs = [RecordSpec(key=b"k1-cut", value=b"secret-value-in-cut-batch", timestamp=F.NOW)]
    recs += [RecordSpec(key=b"pad%d" % i, value=os.urandom(40), timestamp=F.NOW) for i in range(300)]
    blob = encode_batch(recs, base_offset=2, codec=codec)
    with open(seg, "ab") as f:
        f.write(blob[: len(blob) * 2 // 3])
    code, d = doc("k1-cut", logdir)
    assert code == 1
    assert [h["match"] for h in d["hits"]] == ["unparsed"]
    if codec == 1:  # gzip leaves no literal: only the decompressed readable part holds the key
        assert "readable part" in d["hits"][0]["detail"]
