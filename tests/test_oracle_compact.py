"""``compact --execute`` against Kafka's own LogCleaner (kafka-real ``Clean``, Kafka 4.0 at 1eb7644), issue 26.

Each generated case: Kafka's ``UnifiedLog`` writes a compacted topic (tests/oracle_plans.py, clean shutdown); Kafka's
cleaner and ``kafkalog compact --execute`` then clean copies of it with the same settings (delete.retention.ms,
min.compaction.lag.ms, segment.bytes, index.interval.bytes, the clock) over several rounds, the clock moving between
them so that tombstone and transaction-marker horizons set in one round expire in a later one. After every round
every file of the two partition directories must be the same (tests/oracle_files.py: bytes, except compressed
batches, compared by their records), indexes included; after the last, Kafka's ``Load`` of kafkalog's output must
change nothing kafkalog wrote, with and without the clean-shutdown marker.

A round of kafkalog is a whole clean from the log start (its first dirty offset is the log start), so each Kafka round
is a ``Clean`` with ``--first-dirty`` at the log start on the previous round's output: the same round, where Kafka's
own ``--passes`` would skip a round with nothing dirty.

Pinned version: Kafka 4.0 (the only loader/cleaner kafka-real builds); kafkalog's compaction has no version switch.
"""

from __future__ import annotations

import json
import random
import re
import shutil
from pathlib import Path

import pytest
from kafka_real import Oracle, write_partition
from oracle_cases import assert_load_keeps, config_args, copy_partition, execute_as_predicted, kafkalog
from oracle_files import differences
from oracle_plans import Profile, plan, seeds

pytestmark = pytest.mark.oracle

PROFILE = Profile(compact=True, shutdowns=("clean",))
CI_SEEDS = 36  # x 2-3 rounds + 2 loads: ~150 compared states in ~2 min on the 2-core machine
LONG_SEEDS = 1000
START = 1_700_000_000_000


def settings(seed: int) -> dict:
    """The cleaner settings of one case, drawn from the seed (as the plan is)."""
    rng = random.Random(f"compact-{seed}")
    return {
        "delete_retention_ms": rng.choice([0, 1000, 3_600_000, 86_400_000]),
        "min_compaction_lag_ms": rng.choice([0, 0, 0, 5000, 100_000_000]),
        "now_ms": START + rng.choice([10_000, 3_600_000, 90_000_000, 200_000_000]),
        "advance_ms": rng.choice([1000, 3_700_000, 90_000_000]),
        "rounds": rng.choice([2, 2, 3]),
    }


class KafkaCannotLoad(Exception):
    """Kafka's Clean threw before cleaning: its load of the partition fails (the broker does not start)."""


def kafka_round(oracle: Oracle, part: Path, work: Path, config: dict[str, str], now_ms: int,
                extra: tuple[str, ...] = ()) -> tuple[Path, dict]:
    args = ("--in", str(part), "--work", str(work), "--now-ms", str(now_ms), "--first-dirty", "0",
            *config_args(config), *extra)
    r = oracle.batch("Clean", *args)
    err = r.stderr.decode(errors="replace")
    if r.rc != 0 and "CorruptRecordException" in err:
        raise KafkaCannotLoad(err.strip().splitlines()[0])
    assert r.rc == 0, f"kafka-real Clean {' '.join(args)}: rc {r.rc}\n{err}"
    res = r.json()
    assert not res.get("error"), f"Kafka's cleaner failed: {res['error']}"
    return Path(res["partitionDir"]), res


def kafkalog_round(part: Path, config: dict[str, str], s: dict, now_ms: int, predicted: bool = False) -> None:
    """One ``compact --execute`` round; ``predicted``: after its dry run, which must plan exactly that
    (oracle_cases.execute_as_predicted)."""
    args = kafkalog_args(part, config, s, now_ms)
    r = execute_as_predicted(args, part) if predicted else kafkalog(*args, "--execute", "--no-backup")
    assert r.exit_code == 0, f"kafkalog {' '.join(args)} --execute: exit {r.exit_code}\n{r.output}"


def kafkalog_args(part: Path, config: dict[str, str], s: dict, now_ms: int) -> list[str]:
    """``compact`` with the round's settings (the cleaner's and the topic's), without --execute."""
    args = ["compact", "--now-ms", str(now_ms), *s.get("extra", ()),
            "--delete-retention-ms", str(s["delete_retention_ms"]),
            "--min-compaction-lag-ms", str(s["min_compaction_lag_ms"])]
    for key, opt in (("segment.bytes", "--segment-bytes"), ("index.interval.bytes", "--index-interval-bytes"),
                     ("segment.index.bytes", "--segment-index-bytes"), ("max.message.bytes", "--max-message-bytes"),
                     # the harness's Cleaner takes the topic's max.message.bytes as maxIoBufferSize (Clean.scala:67)
                     ("max.message.bytes", "--message-max-bytes")):
        if key in config:
            args += [opt, config[key]]
    if "io_buffer_bytes" in s:
        args += ["--io-buffer-bytes", str(s["io_buffer_bytes"])]
    args.append(str(part))
    return args


def written(oracle: Oracle, out: Path, p: dict) -> Path:
    """Kafka writes the plan; a generated batch larger than a small segment.bytes is refused by Kafka's leader
    (RecordBatchTooLargeException): such a seed has no partition to compare (tests/oracle_plans.py sizes batches to
    the segment, about 1 seed in 200 still overshoots), anything else failing is an error."""
    res = oracle.json("Write", "--out", str(out), "--plan-json", json.dumps(p))
    err = res.get("error")
    if err and err.get("class", "").endswith("RecordBatchTooLargeException"):
        pytest.skip(f"the generated plan does not fit segment.bytes: {err['message']}")
    assert not err, f"Write failed: {err}"
    return Path(res["partitionDir"])


def compare_rounds(oracle: Oracle, tmp: Path, p: dict, s: dict, mutate=None) -> None:
    part = written(oracle, tmp / "written", p)
    if mutate is not None:
        mutate(part)
    topic = dict(p["config"])
    config = dict(topic, **{"delete.retention.ms": str(s["delete_retention_ms"]),
                            "min.compaction.lag.ms": str(s["min_compaction_lag_ms"]),
                            "min.cleanable.dirty.ratio": "0.01", "file.delete.delay.ms": "0"},
                  **s.get("clean_config", {}))  # topic configs of the clean only (e.g. a max.message.bytes Write refuses)
    kafka_extra = ("--io-buffer-bytes", str(s["io_buffer_bytes"])) if "io_buffer_bytes" in s else ()
    ours = copy_partition(part, tmp / "kafkalog")
    theirs = part
    # left by a crash, or with start-up work despite the marker (leftovers: the broker's load rewrites them first)
    crashed = not (part.parent / ".kafka_cleanshutdown").exists() or s.get("start_up_changes", False)
    now = s["now_ms"]
    for i in range(s["rounds"]):
        try:
            theirs, res = kafka_round(oracle, theirs, tmp / f"kafka-{i}", config, now, kafka_extra)
        except KafkaCannotLoad as exc:
            # the broker cannot start on these files (e.g. a zero-filled .log.swap: readNextOffset throws), so its
            # cleaner never runs: kafkalog must refuse too, and say why
            assert i == 0, f"Kafka's load failed after round {i}: {exc}"
            r = kafkalog(*kafkalog_args(ours, config, s, now), "--execute", "--no-backup")
            assert r.exit_code == 2, (str(exc), r.output)  # the loader's FATAL, or the refusal of what it throws on
            return
        try:
            kafkalog_round(ours, config, s, now, predicted=i == 0)
        except AssertionError as exc:
            # kept by design: where the broker's start-up recovery drops intact records (a torn write in a segment
            # with a later one, e.g. an interrupted swap's, that the recovery then deletes), kafkalog refuses
            # (ops/load_first.refuse_loss) where Kafka loads, loses them and cleans: accepted only where Kafka's own
            # load ended at the log end kafkalog names
            m = re.search(r"drops \d+ intact record\(s\) before it cleans or truncates \(log end offset \d+ -> (\d+)\)",
                          str(exc))
            if i == 0 and m and "exit 2" in str(exc) and res["logBefore"]["logEndOffset"] == int(m.group(1)):
                return
            raise
        diff = differences(theirs, ours)
        assert not diff, f"round {i} (now {now}): files differ from Kafka's cleaner: {diff}\n{theirs}\n{ours}"
        now += s["advance_ms"]
        # the next round starts from a broker that ran: Kafka's Clean ends with a clean shutdown, which writes the
        # marker and the recovery-point checkpoint (data-dir files the broker writes and kafkalog leaves alone); after
        # a crash input kafkalog's data dir gets Kafka's, so the next round and the final loads start from the same
        # data dir (an unclean start from an old recovery point would rebuild the cleaned segments' per-append
        # indexes by the recovery rule, on either side)
        if crashed:
            for name in (".kafka_cleanshutdown", "recovery-point-offset-checkpoint"):
                if (theirs.parent / name).exists():
                    shutil.copyfile(theirs.parent / name, ours.parent / name)
    # a crash input: Kafka's unclean start rewrites the log-end snapshot of its own cleaned output as it does ours,
    # so Kafka's output is the reference there
    assert_load_keeps(oracle, theirs if crashed else part, ours, tmp / "load", now, topic)


@pytest.mark.parametrize("seed", seeds(CI_SEEDS))
def test_compact_matches_kafka_cleaner(kafka_real, tmp_path, seed):
    compare_rounds(kafka_real, tmp_path, plan(seed, PROFILE), settings(seed))


@pytest.mark.oracle_long
@pytest.mark.parametrize("seed", seeds(LONG_SEEDS, base=100_000))
def test_compact_matches_kafka_cleaner_long(kafka_real, tmp_path, seed):
    compare_rounds(kafka_real, tmp_path, plan(seed, PROFILE), settings(seed))


# ------------------------------------------------------------------------------------------ the classes found
def _keys(n: int, batches: int, **kw) -> dict:
    return {"op": "append", "count": n, "keyFormat": "k%d", "keyModulo": 3, "batches": batches, **kw}


def test_cleaned_indexes_are_per_append(kafka_real, tmp_path):
    """Three source segments merged into one: the cleaner appends once per source segment (LogCleaner.scala:827) and
    LogSegment.append indexes an append only past index.interval.bytes since the last entry, at the append's start
    with its largest offset; the recovery rule (per batch) gives other entries."""
    seg = {"op": "append", "count": 2, "keyFormat": "k%d", "records": [{"key": "dup", "value": "v"}], "batches": 3}
    p = {"config": {"cleanup.policy": "compact", "index.interval.bytes": "1"},
         "ops": [seg, {"op": "roll"}, seg, {"op": "roll"}, seg, {"op": "roll"}],
         "shutdown": "clean"}
    compare_rounds(kafka_real, tmp_path, p, {"delete_retention_ms": 86_400_000, "min_compaction_lag_ms": 0,
                                              "now_ms": START + 10_000, "advance_ms": 1000, "rounds": 1})


def test_expired_producer_last_batch_is_not_kept(kafka_real, tmp_path):
    """An idempotent producer idle longer than producer.id.expiration.ms (1 day) at the clean is dropped by the
    broker's load (ProducerStateManager.loadFromSnapshot), so the cleaner does not keep its last batch."""
    p = {"config": {"cleanup.policy": "compact", "segment.bytes": "600"},
         "ops": [_keys(3, 2, producerId=7), _keys(3, 4), {"op": "roll"}],
         "shutdown": "clean"}
    compare_rounds(kafka_real, tmp_path, p, {"delete_retention_ms": 86_400_000, "min_compaction_lag_ms": 0,
                                              "now_ms": START + 200_000_000, "advance_ms": 1000, "rounds": 1})


def test_deleted_leftovers_are_deleted_not_refused(kafka_real, tmp_path):
    """A roll of an empty active segment leaves ``.deleted`` files (UnifiedLog.roll); Kafka's loader deletes them and
    the cleaner runs; kafkalog refused the partition."""
    p = {"config": {"cleanup.policy": "compact", "segment.bytes": "600"},
         "ops": [_keys(3, 4), {"op": "roll"}, {"op": "roll"}, _keys(3, 1)],
         "shutdown": "clean"}
    part = write_partition(kafka_real, tmp_path / "probe", p)
    assert any(n.name.endswith(".deleted") for n in part.iterdir()), "the plan must leave .deleted files"
    compare_rounds(kafka_real, tmp_path, p, {"delete_retention_ms": 86_400_000, "min_compaction_lag_ms": 0,
                                              "now_ms": START + 10_000, "advance_ms": 1000, "rounds": 1})


def test_segments_without_removals_get_the_cleaners_indexes(kafka_real, tmp_path):
    """Nothing to remove in the only cleanable segment: the broker still rewrites it (cleanSegments runs for every
    group of the round), so its per-batch producer-time indexes become the cleaner's per-append ones; kafkalog left
    the segment as it was."""
    p = {"config": {"cleanup.policy": "compact", "index.interval.bytes": "1"},
         "ops": [{"op": "append", "count": 2, "keyFormat": "k%d", "batches": 4}, {"op": "roll"}],
         "shutdown": "clean"}
    compare_rounds(kafka_real, tmp_path, p, {"delete_retention_ms": 86_400_000, "min_compaction_lag_ms": 0,
                                              "now_ms": START + 10_000, "advance_ms": 1000, "rounds": 2})


def test_txnindex_version_is_its_first_byte(kafka_real, tmp_path):
    """An aborted transaction's entry whose int16 version is 0x0005: Kafka's TransactionIndex checks the first byte
    only (AbortedTxn.java:65-67, TransactionIndex.java:247-249), so the cleaner cleans (and writes version-0 entries);
    kafkalog's repair view read the whole int16 and refused the partition."""
    import struct

    txn = {"op": "append", "count": 2, "keyFormat": "t%d", "producerId": 9, "producerEpoch": 0, "transactional": True}
    p = {"config": {"cleanup.policy": "compact", "segment.bytes": "600"},
         "ops": [_keys(3, 2), txn, {"op": "marker", "type": "ABORT", "producerId": 9, "producerEpoch": 0},
                 _keys(3, 2), {"op": "roll"}, _keys(3, 1)],
         "shutdown": "clean"}

    def version_0005(part: Path) -> None:
        txns = [f for f in part.iterdir() if f.suffix == ".txnindex" and f.stat().st_size]
        assert txns, "the plan must leave an aborted transaction in a .txnindex"
        with open(txns[0], "r+b") as f:
            f.write(struct.pack(">h", 5))

    compare_rounds(kafka_real, tmp_path, p, {"delete_retention_ms": 86_400_000, "min_compaction_lag_ms": 0,
                                              "now_ms": START + 10_000, "advance_ms": 1000, "rounds": 1},
                   mutate=version_0005)


# ------------------------------------------------------------------------------------------ crash-shutdown inputs
CRASH_PROFILE = Profile(compact=True, shutdowns=("crash", "crash-no-checkpoint"))


def crash_case(oracle: Oracle, tmp: Path, seed: int) -> None:
    """A compacted topic left by a crash (no clean-shutdown marker; mutate_crash: torn or zero tails of the active
    segment, preallocated indexes, leftovers of an interrupted clean or swap, deleted snapshots, the recovery point
    at 0 or at the active segment): Kafka's Clean loads (recovers) then cleans; ``compact --execute
    --recover-first`` applies the broker's load first (ops/load_first.py) then compacts. Every round's files must be equal."""
    from oracle_mutations import mutate_crash

    compare_rounds(oracle, tmp, plan(seed, CRASH_PROFILE), dict(settings(seed), extra=("--recover-first",)),
                   mutate=lambda part: mutate_crash(seed, part))


@pytest.mark.parametrize("seed", seeds(16, base=20_000))
def test_compact_after_a_crash_matches_kafka_cleaner(kafka_real, tmp_path, seed):
    crash_case(kafka_real, tmp_path, seed)


@pytest.mark.oracle_long
@pytest.mark.parametrize("seed", seeds(300, base=120_000))
def test_compact_after_a_crash_matches_kafka_cleaner_long(kafka_real, tmp_path, seed):
    crash_case(kafka_real, tmp_path, seed)


def test_crash_shutdown_input_is_loaded_before_it_is_compacted(kafka_real, tmp_path):
    """A crash leaves the active segment's indexes preallocated (10 MB) and no snapshot at the log end; Kafka's
    cleaner runs on the loaded log, whose load trims those indexes at the close and writes the snapshot. kafkalog
    compacted the files as they were and left both (every crash-shutdown case differed in those three files)."""
    p = {"config": {"cleanup.policy": "compact", "index.interval.bytes": "1"},
         "ops": [_keys(3, 3), {"op": "roll"}, _keys(3, 3), {"op": "roll"}, _keys(3, 2)],
         "shutdown": "crash"}
    compare_rounds(kafka_real, tmp_path, p, {"delete_retention_ms": 86_400_000, "min_compaction_lag_ms": 0,
                                              "now_ms": START + 10_000, "advance_ms": 1000, "rounds": 2,
                                              "extra": ("--recover-first",)})
    r = kafkalog("compact", "--recover-first", str(write_partition(kafka_real, tmp_path / "dry", p)))
    assert r.exit_code == 1 and "the broker's start-up recovery changes" in r.output, r.output


# ------------------------------------------------------------------------------------------ leftovers, clean shutdown
def leftovers_case(oracle: Oracle, tmp: Path, seed: int) -> None:
    """A compacted topic shut down cleanly (the marker stays) with the leftovers of an interrupted clean, swap or
    deletion, or a lost offset index (oracle_mutations.mutate_leftovers): Kafka's loader finishes them (and recovers
    that segment) before its cleaner runs; kafkalog refused ``.cleaned``/``.swap`` files and compacted a segment
    without its index. ``compact --execute`` now applies those start-up changes first
    (ops/load_first.needs_load_after_clean_shutdown)."""
    from oracle_mutations import mutate_leftovers

    try:
        compare_rounds(oracle, tmp, plan(seed, PROFILE), dict(settings(seed), start_up_changes=True),
                       mutate=lambda part: mutate_leftovers(seed, part))
    except AssertionError as exc:
        # the one kept difference: a .log.swap completed after a clean shutdown loses the replaced segment's
        # .txnindex (the loader deletes every file in the swap's range, and recovers nothing at a clean start), so
        # Kafka's cleaner treats that aborted transaction's data as committed and deletes older values of its keys;
        # kafkalog refuses that compaction (exit 2, after the start-up step) rather than lose them (docs/repairs.md)
        if "exit 2" not in str(exc) or "that the .txnindex files do not record" not in str(exc):
            raise


@pytest.mark.parametrize("seed", seeds(10, base=40_000))
def test_compact_with_leftovers_after_a_clean_shutdown_matches_kafka_cleaner(kafka_real, tmp_path, seed):
    leftovers_case(kafka_real, tmp_path, seed)


@pytest.mark.oracle_long
@pytest.mark.parametrize("seed", seeds(300, base=140_000))
def test_compact_with_leftovers_after_a_clean_shutdown_matches_kafka_cleaner_long(kafka_real, tmp_path, seed):
    leftovers_case(kafka_real, tmp_path, seed)


# ------------------------------------------------------------------------------------------ scripts/explore_oracle.py
def test_snapshot_at_the_log_start_is_deleted_by_the_load_before_the_clean(kafka_real, tmp_path):
    """A DeleteRecords to a segment's base leaves a producer snapshot at the log start; at a clean start the load's
    rebuildProducerState still calls truncateAndReload, which deletes every snapshot at or below the log start
    (ProducerStateManager.java:355-361, UnifiedLog.java:100-104), and Kafka's cleaner runs on that. kafkalog
    compacted the files as they were and kept the snapshot (explore_oracle compact seed 1)."""
    p = {"config": {"cleanup.policy": "compact"},
         "ops": [_keys(3, 2), {"op": "roll"}, _keys(3, 2), {"op": "roll"}, {"op": "deleteRecords", "offset": 6},
                 _keys(3, 1), {"op": "roll"}],
         "shutdown": "clean"}
    part = write_partition(kafka_real, tmp_path / "probe", p)
    assert (part / f"{6:020d}.snapshot").exists(), "the plan must leave a snapshot at the log start"
    compare_rounds(kafka_real, tmp_path, p, {"delete_retention_ms": 86_400_000, "min_compaction_lag_ms": 0,
                                              "now_ms": START + 10_000, "advance_ms": 1000, "rounds": 2})


def test_first_dirty_offset_is_the_log_start_inside_a_segment(kafka_real, tmp_path):
    """A DeleteRecords moved the log start to 3, inside segment 0: with no cleaner checkpoint the first dirty offset
    is the log start (LogCleanerManager.scala:625-644) and the offset map starts there (LogCleaner.scala:612,
    1119), so the two values of ``dup`` at 0 and 1, below it, both stay while ``k0`` at 2 goes (its key is in the
    map). kafkalog started the map at the first segment's base and removed ``dup`` at 0 (explore_oracle compact
    seed 3)."""
    dup = {"op": "append", "records": [{"key": "dup", "value": "old"}], "batches": 2}
    p = {"config": {"cleanup.policy": "compact"},
         "ops": [dup, _keys(3, 1), {"op": "deleteRecords", "offset": 3}, {"op": "roll"}, _keys(3, 1), {"op": "roll"}],
         "shutdown": "clean"}
    compare_rounds(kafka_real, tmp_path, p, {"delete_retention_ms": 86_400_000, "min_compaction_lag_ms": 0,
                                              "now_ms": START + 10_000, "advance_ms": 1000, "rounds": 2})


def test_merged_segment_whose_recovery_would_fill_its_time_index(kafka_real, tmp_path):
    """segment.index.bytes 48: four source segments of two batches each have 12-byte time indexes, so
    groupSegmentsBySize merges them (LogCleaner.scala:976-1001); the cleaner appends once per source segment and
    indexes 3 of its 4 appends (LogSegment.append), within the time index's 3 usable slots (TimeIndex.java:123-125).
    The per-batch recovery rule would want 7 entries; kafkalog's cross-check of its output refused that as 'time
    index over capacity' (and left the staged .index.cleaned behind) where Kafka cleans (explore_oracle compact seed
    58, round 1)."""
    ops: list[dict] = []
    for i in range(4):
        ops += [{"op": "append", "count": 1, "keyFormat": f"s{i}-%d", "batches": 2}, {"op": "roll"}]
    ops.append(_keys(1, 1))
    p = {"config": {"cleanup.policy": "compact", "segment.index.bytes": "48", "index.interval.bytes": "1"},
         "ops": ops, "shutdown": "clean"}
    compare_rounds(kafka_real, tmp_path, p, {"delete_retention_ms": 86_400_000, "min_compaction_lag_ms": 0,
                                              "now_ms": START + 10_000, "advance_ms": 1000, "rounds": 2})
    part = tmp_path / "kafkalog" / "t-0"
    assert not [n.name for n in part.iterdir() if n.name.endswith(".cleaned")]


def test_open_transaction_below_the_log_start_holds_the_last_stable_offset(kafka_real, tmp_path):
    """A transaction left open at offset 0 whose segment a DeleteRecords removed: the broker's producer state (the
    snapshot) still has it ongoing, and the first unstable offset below the log start counts as the log start
    (UnifiedLog.maybeIncrementFirstUnstableOffset, UnifiedLog.scala:959-973), so the last stable offset 3 stops the
    clean before anything (LogCleanerManager.scala:652-678). kafkalog took the open transactions from the remaining
    segments only and compacted segment 3 (explore_oracle compact seed 249)."""
    txn = {"op": "append", "count": 3, "keyFormat": "t%d", "producerId": 9, "transactional": True}
    p = {"config": {"cleanup.policy": "compact"},
         "ops": [txn, {"op": "roll"}, _keys(3, 3), {"op": "roll"}, {"op": "deleteRecords", "offset": 3}, _keys(3, 1)],
         "shutdown": "clean"}
    compare_rounds(kafka_real, tmp_path, p, {"delete_retention_ms": 86_400_000, "min_compaction_lag_ms": 0,
                                              "now_ms": START + 10_000, "advance_ms": 1000, "rounds": 2})
