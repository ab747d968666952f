"""``compact --execute`` on legacy (v0/v1) topics and with a non-default ``max.message.bytes``, against Kafka's own
LogCleaner (kafka-real ``Clean``, Kafka 4.0 at 1eb7644), issue 26.

The partitions are written by Kafka's ``UnifiedLog`` from seeded plans (``legacy_plan``):

* ``v0`` / ``v1`` topics (``message.format.version`` 0.9.0 / 0.10.2): the leader writes magic 0 / 1 messages, plain or
  in compressed wrappers (gzip, snappy, lz4), CreateTime or LogAppendTime (v1), with tombstones;
* ``mixed`` topics: a v2 topic whose entries a follower appended as the leader sent them (``asFollower``): v0, v1 and
  v2 entries side by side, v2 ones sometimes from an idempotent producer or compressed with zstd.

Each case is compared round by round with ``test_oracle_compact.compare_rounds`` (every file of the two partition
directories after every round; compressed entries by their decompressed records, tests/oracle_files.py; Kafka's Load
of the result changes nothing). The ``max.message.bytes`` cases clean with a small topic ``max.message.bytes`` and a
small ``--io-buffer-bytes`` so that batches exceed the cleaner's read buffer and the limit, and its growth
(``growBuffersOrFail``/``growBuffers``) decides where each append, and so each index entry, goes.

The harness builds its Cleaner with ``maxIoBufferSize = log.config.maxMessageSize`` (kafka-real Clean.scala:67), where
a broker passes its own ``message.max.bytes`` (LogCleaner.scala:360); kafkalog takes both (``--max-message-bytes``,
``--message-max-bytes``), and these tests give it the topic's value for both, as the harness runs.

Pinned version: Kafka 4.0 (the only cleaner kafka-real builds).
"""

from __future__ import annotations

import random

import pytest
from oracle_plans import seeds
from test_oracle_compact import START, compare_rounds, settings

pytestmark = pytest.mark.oracle

CI_SEEDS = 14  # legacy cases in the default run (~3 s each with the shared Batch JVM)
CI_MAX_MESSAGE_SEEDS = 12  # from 50010: includes 50013 and 50021, which fail with the default buffer growth
LONG_SEEDS = 300
LEGACY_CODECS = ("none", "none", "gzip", "snappy", "lz4")
FORMATS = {"v0": "0.9.0", "v1": "0.10.2"}


def legacy_plan(seed: int) -> dict:
    """A compacted topic with v0/v1 entries (see the module doc), the same for the same seed."""
    rng = random.Random(f"legacy-{seed}")
    kind = rng.choice(["v0", "v1", "v1", "mixed", "mixed"])
    config: dict[str, str] = {"cleanup.policy": "compact"}
    if kind in FORMATS:
        config["message.format.version"] = FORMATS[kind]
    if rng.random() < 0.7:
        config["segment.bytes"] = str(rng.choice([600, 1024, 2000, 4096]))
    if rng.random() < 0.6:
        config["index.interval.bytes"] = str(rng.choice([1, 64, 100, 300]))
    if kind == "v1" and rng.random() < 0.3:
        config["message.timestamp.type"] = "LogAppendTime"
    keyspace = rng.choice([2, 3, 5, 12])
    small = int(config.get("segment.bytes", "1073741824")) <= 2000
    ops: list[dict] = []
    pid = 5000
    for _ in range(rng.randint(3, 12)):
        r = rng.random()
        if r < 0.12:
            ops.append({"op": "roll"})
            continue
        if r < 0.17:
            ops.append({"op": "advanceTime", "ms": rng.choice([1, 1000, 60000])})
            continue
        magic = {"v0": rng.choice([0, 0, 2]), "v1": rng.choice([0, 1, 1, 2]), "mixed": rng.choice([0, 1, 2])}[kind]
        codec = rng.choice(LEGACY_CODECS + (("zstd",) if magic == 2 and kind == "mixed" else ()))
        op: dict = {"op": "append", "magic": magic, "codec": codec, "batches": rng.choice([1, 1, 2, 3])}
        if rng.random() < 0.5:
            op["records"] = [
                {"key": f"key-{rng.randrange(keyspace)}",
                 "value": None if rng.random() < 0.2 else "v" * rng.choice([0, 1, 5, 40 if small else 300])}
                for _ in range(rng.randint(1, 4 if small else 6))]
        else:
            op.update(count=rng.randint(1, 6 if small else 20), keyFormat="k%d", keyModulo=keyspace,
                      valueFormat=rng.choice(["value-%d", "v%d" + "y" * (10 if small else 50), ""]))
            if rng.random() < 0.3:
                op["nullValueEvery"] = rng.choice([2, 3, 5])
        if kind == "mixed":
            op.update(asFollower=True, leaderEpoch=0 if magic == 2 else -1)
            if magic == 2 and rng.random() < 0.3:
                op.update(producerId=pid, producerEpoch=0)
        ops.append(op)
    # the last appended entry ends the cleanable range only after a roll; keep the active segment non-empty
    ops += [{"op": "roll"}, {"op": "append", "count": 1, "keyFormat": "last%d",
                             **({"asFollower": True, "magic": 2, "leaderEpoch": 0} if kind == "mixed" else {})}]
    return {"topic": "t", "partition": 0, "config": config, "startTimeMs": START,
            "timeStepMs": rng.choice([1, 1, 7, 1000]), "ops": ops, "shutdown": "clean"}


@pytest.mark.parametrize("seed", seeds(CI_SEEDS))
def test_compact_legacy_matches_kafka_cleaner(kafka_real, tmp_path, seed):
    compare_rounds(kafka_real, tmp_path, legacy_plan(seed), settings(seed))


@pytest.mark.oracle_long
@pytest.mark.parametrize("seed", seeds(LONG_SEEDS, base=100_000))
def test_compact_legacy_matches_kafka_cleaner_long(kafka_real, tmp_path, seed):
    compare_rounds(kafka_real, tmp_path, legacy_plan(seed), settings(seed))


# ------------------------------------------------------------------------------------------ max.message.bytes
def max_message_plan(seed: int) -> dict:
    """A compacted topic of batches from tens of bytes to a few KiB (v2, v1 or v0, codecs mixed), rolled now and
    then, with small index intervals: where the cleaner's read buffer grows decides which batches are one append,
    and so the index entries."""
    rng = random.Random(f"max-message-plan-{seed}")
    kind = rng.choice(["v2", "v2", "v1", "v0"])
    config = {"cleanup.policy": "compact", "index.interval.bytes": str(rng.choice([1, 1, 50, 200, 4096]))}
    if kind in FORMATS:
        config["message.format.version"] = FORMATS[kind]
    if rng.random() < 0.5:
        config["segment.bytes"] = str(rng.choice([8000, 20000]))
    keyspace = rng.choice([3, 8, 40])
    ops: list[dict] = []
    for i in range(rng.randint(6, 20)):
        if i and rng.random() < 0.15:
            ops.append({"op": "roll"})
        ops.append({"op": "append", "count": rng.randint(1, 12), "keyFormat": "k%d", "keyModulo": keyspace,
                    "valueFormat": "v%d" + "y" * rng.choice([0, 20, 100, 400]),
                    "codec": rng.choice(("none", "none", "gzip", "lz4") + (("zstd",) if kind == "v2" else ())),
                    "batches": rng.choice([1, 1, 2])})
        if rng.random() < 0.15:
            ops[-1]["nullValueEvery"] = 3
    ops += [{"op": "roll"}, {"op": "append", "count": 1, "keyFormat": "last%d"}]
    return {"topic": "t", "partition": 0, "config": config, "startTimeMs": START, "timeStepMs": 1, "ops": ops,
            "shutdown": "clean"}


def max_message_case(seed: int) -> tuple[dict, dict]:
    """(plan, settings) of a clean with a small read buffer (half of --io-buffer-bytes) and a topic
    max.message.bytes of its own, both often smaller than the batches."""
    rng = random.Random(f"max-message-{seed}")
    s = dict(settings(seed), min_compaction_lag_ms=0, io_buffer_bytes=rng.choice([120, 200, 400, 1000, 3000, 8000]),
             clean_config={"max.message.bytes": str(rng.choice([60, 150, 400, 1500, 5000, 1_048_588]))})
    return max_message_plan(seed), s


@pytest.mark.parametrize("seed", seeds(CI_MAX_MESSAGE_SEEDS, base=50_010))
def test_compact_max_message_bytes_matches_kafka_cleaner(kafka_real, tmp_path, seed):
    compare_rounds(kafka_real, tmp_path, *max_message_case(seed))


@pytest.mark.oracle_long
@pytest.mark.parametrize("seed", seeds(LONG_SEEDS, base=150_000))
def test_compact_max_message_bytes_matches_kafka_cleaner_long(kafka_real, tmp_path, seed):
    compare_rounds(kafka_real, tmp_path, *max_message_case(seed))


# ------------------------------------------------------------------------------------------ the classes, by name
@pytest.mark.parametrize(("fmt", "codec", "ts_type"), [("0.9.0", "gzip", "CreateTime"), ("0.10.2", "lz4", "CreateTime"),
                                                       ("0.10.2", "snappy", "LogAppendTime"), ("0.9.0", "lz4", "CreateTime")])
def test_partly_retained_wrapper_is_rebuilt(kafka_real, tmp_path, fmt, codec, ts_type):
    """A compressed wrapper of four keys, two of them superseded later: Kafka's cleaner rebuilds the wrapper with the
    other two (buildRetainedRecordsInto: v1 inner offsets relative to the first kept record, v0 absolute, the wrapper
    at the last kept offset; with LogAppendTime every inner message takes the wrapper's time). kafkalog refused
    v0/v1 segments."""
    from kafkalog_cli.format import codecs
    from kafkalog_cli.ops.compact_io import SegmentReader

    p = {"config": {"cleanup.policy": "compact", "message.format.version": fmt, "index.interval.bytes": "1",
                    "message.timestamp.type": ts_type},
         "ops": [{"op": "append", "count": 1, "keyFormat": "a%d", "magic": 1},
                 {"op": "append", "count": 4, "keyFormat": "k%d", "codec": codec, "magic": 1},
                 {"op": "append", "records": [{"key": "k1", "value": "new"}, {"key": "k3", "value": "new"}],
                  "codec": "none", "magic": 1},
                 {"op": "roll"}, {"op": "append", "count": 1, "keyFormat": "z%d"}],
         "shutdown": "clean"}
    s = {"delete_retention_ms": 86_400_000, "min_compaction_lag_ms": 0, "now_ms": START + 10_000, "advance_ms": 1000,
         "rounds": 2}
    compare_rounds(kafka_real, tmp_path, p, s)
    with SegmentReader(str(tmp_path / "kafkalog" / "t-0" / "00000000000000000000.log")) as r:
        entries = list(r.entries())
        wrapper = entries[1]
        assert wrapper.is_legacy and wrapper.codec != codecs.NONE and wrapper.last_offset == 3, entries
        assert [rec.offset for rec in wrapper.iter_records(r.buf)] == [1, 3]


def test_legacy_entry_ending_the_round_with_nothing_kept_is_refused_as_kafka_fails(kafka_real, tmp_path):
    """A keyless v1 message (a follower appends what its leader sent, unvalidated) ends the cleanable range: the
    cleaner must keep that entry, empty, which only v2 can express, and Kafka's Clean throws IllegalStateException
    (MemoryRecords.java:219-221). kafkalog refuses (exit 2) and changes nothing."""
    from kafka_real import dir_digest, write_partition
    from oracle_cases import copy_partition, kafkalog

    p = {"config": {"cleanup.policy": "compact"},
         "ops": [{"op": "append", "count": 2, "keyFormat": "k%d", "magic": 1, "asFollower": True},
                 {"op": "append", "count": 1, "magic": 1, "asFollower": True},
                 {"op": "roll"}, {"op": "append", "count": 1, "keyFormat": "z%d", "asFollower": True, "leaderEpoch": 0}],
         "shutdown": "clean"}
    part = write_partition(kafka_real, tmp_path / "w", p)
    res = kafka_real.json("Clean", "--in", str(part), "--work", str(tmp_path / "k"), "--now-ms", str(START + 10_000),
                          "--first-dirty", "0", "--config", "min.cleanable.dirty.ratio=0.01")
    assert (res.get("error") or {}).get("class", "").endswith("IllegalStateException"), res.get("error")
    ours = copy_partition(part, tmp_path / "ours")
    before = dir_digest(ours)
    r = kafkalog("compact", "--execute", "--no-backup", "--now-ms", str(START + 10_000), str(ours))
    assert r.exit_code == 2 and "only a v2 batch can be" in r.output, r.output
    assert dir_digest(ours) == before


@pytest.mark.parametrize(("codec", "magic"), [("gzip", 2), ("zstd", 2), ("gzip", 1)])
def test_rebuilt_gzip_and_zstd_batches_are_kafkas_bytes(kafka_real, tmp_path, codec, magic):
    """A compressed batch the cleaner rebuilds (some records superseded) comes out with Kafka's own bytes: gzip as
    GzipCompression writes it (Java's header, level 6) and zstd as zstd-jni's stream (a flush, then an empty last
    block). kafkalog wrote gzip at level 9 with Python's header and zstd as one frame of one last block: other sizes,
    so where a later round's read buffer or index interval fell between the two sizes the .index differed (long
    campaign, seed 150009)."""
    fmt = {} if magic == 2 else {"message.format.version": "0.10.2"}
    p = {"config": {"cleanup.policy": "compact", **fmt},
         "ops": [{"op": "append", "count": 30, "keyFormat": "k%d", "keyModulo": 20, "valueFormat": "value-%d-xyzxyz",
                  "codec": codec, "magic": magic},
                 {"op": "append", "count": 5, "keyFormat": "k%d", "codec": "none", "magic": magic},
                 {"op": "roll"}, {"op": "append", "count": 1, "keyFormat": "z%d"}],
         "shutdown": "clean"}
    compare_rounds(kafka_real, tmp_path, p, {"delete_retention_ms": 86_400_000, "min_compaction_lag_ms": 0,
                                             "now_ms": START + 10_000, "advance_ms": 1000, "rounds": 1})
    name = "00000000000000000000.log"
    theirs = (tmp_path / "kafka-0" / "t-0" / name).read_bytes()
    assert (tmp_path / "kafkalog" / "t-0" / name).read_bytes() == theirs
