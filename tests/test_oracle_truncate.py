"""``truncate-to-epoch`` / ``--to-offset`` against Kafka's own ``UnifiedLog.truncateTo`` (kafka-real ``Truncate``,
Kafka 4.0 at 1eb7644), issue 26.

Each generated case: Kafka's ``UnifiedLog`` writes a partition (tests/oracle_plans.py, clean shutdown); Kafka's
follower truncation (``endOffsetForEpoch(E)`` or an offset, then ``truncateTo`` and a clean shutdown) and
``kafkalog truncate-to-epoch --execute`` (with the same clock, ``--now-ms``) cut copies of it: to the end of every
cached epoch, to an epoch above the cache (Kafka does nothing, kafkalog refuses: exit 2, nothing changed), and to
offsets drawn from the log, at batch boundaries and inside batches. Every file of the partition directory must be
the same (tests/oracle_files.py), the leader-epoch checkpoint and the producer snapshots included; then Kafka's
``Load`` of kafkalog's output must change nothing except as it changes Kafka's own output (the snapshot Kafka's
truncation writes at a target inside a batch lies above the log end and is deleted at the next start, by both).

What is not compared: the data-dir checkpoints (kafkalog leaves recovery-point and log-start checkpoints to the
broker's clipping at load; Kafka's shutdown rewrites them). Pinned version: Kafka 4.0 (no other truncation code is
built; kafkalog's truncation has no version switch).
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest
from kafka_real import Oracle, dir_digest
from oracle_cases import assert_load_keeps, config_args, copy_partition, execute_as_predicted, kafkalog
from oracle_files import differences
from oracle_plans import Profile, plan, seeds

pytestmark = pytest.mark.oracle

PROFILE = Profile(shutdowns=("clean",))
CI_SEEDS = 16  # x ~6 targets: ~100 truncations in ~1.5-2.5 min
LONG_SEEDS = 600
START = 1_700_000_000_000


def write(oracle: Oracle, out: Path, p: dict) -> tuple[Path, list[tuple[int, int]]]:
    """The written partition and its batches' (first offset, last offset)."""
    res = oracle.json("Write", "--out", str(out), "--plan-json", json.dumps(p))
    err = res.get("error")
    if err and err.get("class", "").endswith("RecordBatchTooLargeException"):  # see test_oracle_compact.written
        pytest.skip(f"the generated plan does not fit segment.bytes: {err['message']}")
    assert not err, err
    batches = [(r["firstOffset"], r["lastOffset"]) for a in res["appends"] for r in a.get("results", [])]
    batches += [(a["offset"], a["offset"]) for a in res["appends"] if a.get("op") == "marker"]
    return Path(res["partitionDir"]), sorted(batches)


def targets(rng: random.Random, part: Path, batches: list[tuple[int, int]]) -> list[tuple[str, int]]:
    lines = (part / "leader-epoch-checkpoint").read_text().splitlines()[2:]
    epochs = [int(ln.split()[0]) for ln in lines if ln.strip()]
    out = [("epoch", e) for e in epochs] + [("epoch", max(epochs, default=0) + rng.choice([1, 4]))]
    inside = [(f, t) for f, t in batches if t > f]
    if inside:
        f, t = rng.choice(inside)
        out.append(("offset", rng.randint(f + 1, t)))  # inside a batch
    if batches:
        out.append(("offset", rng.choice(batches)[0]))  # a batch's base
        out.append(("offset", rng.randint(batches[0][0], batches[-1][1] + 1)))
    return out


def compare(oracle: Oracle, tmp: Path, part: Path, config: dict[str, str], kind: str, value: int, now: int,
            extra: tuple[str, ...] = ()) -> None:
    ours = copy_partition(part, tmp / "kafkalog")
    before = dir_digest(ours)
    args = ["truncate-to-epoch", str(ours), "--now-ms", str(now), *extra]
    for key, opt in (("index.interval.bytes", "--index-interval-bytes"), ("segment.index.bytes", "--segment-index-bytes")):
        if key in config:
            args += [opt, config[key]]
    args += [str(value)] if kind == "epoch" else ["--to-offset", str(value)]
    try:
        res = oracle.json("Truncate", "--in", str(part), "--work", str(tmp / "kafka"), f"--{kind}", str(value),
                          "--now-ms", str(now), *config_args(dict(config, **{"file.delete.delay.ms": "0"})))
    except AssertionError as exc:
        if "CorruptRecordException" not in str(exc):
            raise
        # Kafka's load throws (the broker does not start), so its truncation never runs: kafkalog refuses too
        r = kafkalog(*args, "--execute", "--no-backup")
        assert r.exit_code == 2, (str(exc)[-400:], r.output)  # the loader's FATAL, or the refusal of what it throws on
        assert dir_digest(ours) == before
        return
    assert not res.get("error") and not res.get("closeError"), res
    r = execute_as_predicted(args, ours)  # its dry run first: it must plan exactly what --execute does
    if "unknownEpoch" in res:  # Kafka's leader has no end offset for it: nothing is truncated
        assert r.exit_code == 2 and dir_digest(ours) == before, r.output
        return
    m = re.search(r"drops \d+ intact record\(s\) before it cleans or truncates \(log end offset \d+ -> (\d+)\)",
                  r.output)
    if r.exit_code == 2 and m and res["logBefore"]["logEndOffset"] == int(m.group(1)):
        # kept by design: the broker's start-up recovery drops intact records here (Kafka's own load ended at the
        # log end kafkalog names); kafkalog refuses rather than lose them (ops/load_first.refuse_loss)
        assert dir_digest(ours) == before, r.output
        return
    assert r.exit_code == 0, f"kafkalog {' '.join(args)}: exit {r.exit_code}\n{r.output}"
    theirs = Path(res["partitionDir"])
    diff = differences(theirs, ours)
    assert not diff, f"{kind} {value} (target {res.get('target')}): files differ from Kafka's: {diff}\n{theirs}\n{ours}"
    assert_load_keeps(oracle, theirs, ours, tmp / "load", now, config)


def run_seed(oracle: Oracle, tmp: Path, seed: int) -> None:
    p = plan(seed, PROFILE)
    part, batches = write(oracle, tmp / "written", p)
    rng = random.Random(f"truncate-{seed}")
    now = START + rng.choice([10_000, 3_600_000, 200_000_000])
    for i, (kind, value) in enumerate(targets(rng, part, batches)):
        compare(oracle, tmp / f"case{i}", part, p["config"], kind, value, now)


@pytest.mark.parametrize("seed", seeds(CI_SEEDS))
def test_truncate_matches_kafka(kafka_real, tmp_path, seed):
    run_seed(kafka_real, tmp_path, seed)


@pytest.mark.oracle_long
@pytest.mark.parametrize("seed", seeds(LONG_SEEDS, base=100_000))
def test_truncate_matches_kafka_long(kafka_real, tmp_path, seed):
    run_seed(kafka_real, tmp_path, seed)


# ------------------------------------------------------------------------------------------ the classes found
def _case(oracle: Oracle, tmp: Path, p: dict, kind: str, value: int, now: int = START + 10_000,
          extra: tuple[str, ...] = ()) -> None:
    part, _ = write(oracle, tmp / "written", p)
    compare(oracle, tmp, part, p.get("config", {}), kind, value, now, extra)


IDEMPOTENT = {"op": "append", "count": 5, "keyFormat": "k%d", "producerId": 9, "batches": 3}


def test_offset_inside_a_batch_snapshot_and_epochs_at_the_target(kafka_real, tmp_path):
    """Kafka sets the log end to the target itself: the snapshot is written at offset 7 (inside batch 5..9) and the
    epochs are truncated from 7, so epoch 1 (from 5) stays although the log on disk ends at 5; kafkalog aligned both
    to the batch (snapshot at 5, epoch 1 dropped)."""
    p = {"ops": [dict(IDEMPOTENT, batches=1), {"op": "append", "count": 5, "leaderEpoch": 1, "producerId": 9},
                 {"op": "append", "count": 3, "leaderEpoch": 2}], "shutdown": "clean"}
    _case(kafka_real, tmp_path, p, "offset", 7)


def test_time_index_after_truncation_follows_truncate_to_and_close(kafka_real, tmp_path):
    """Every time entry of the cut segment at or past the target goes; with none left, the loaded segment's max
    timestamp is (-1, base) and close appends nothing (LogSegment.truncateTo/readLargestTimestamp/close); kafkalog
    appended the kept part's largest timestamp."""
    p = {"ops": [{"op": "append", "count": 2, "keyFormat": "k%d", "batches": 4}], "shutdown": "clean"}
    _case(kafka_real, tmp_path, p, "offset", 4)


def test_expired_producers_leave_the_snapshot_with_now_ms(kafka_real, tmp_path):
    """With the clock a day and more past the producer's last write, the broker's reload drops it: the snapshot at
    the cut is empty (isEmptyBeforeTruncation); kafkalog kept it."""
    p = {"ops": [IDEMPOTENT], "shutdown": "clean"}
    _case(kafka_real, tmp_path, p, "offset", 10, now=START + 200_000_000)


def test_deleted_leftovers_are_deleted_not_refused(kafka_real, tmp_path):
    """A roll of an empty active segment leaves ``.deleted`` files; Kafka's load deletes them; kafkalog refused."""
    p = {"ops": [{"op": "append", "count": 3, "batches": 2}, {"op": "roll"}, {"op": "roll"},
                 {"op": "append", "count": 3, "batches": 2}], "shutdown": "clean"}
    part, _ = write(kafka_real, tmp_path / "probe", p)
    assert any(n.name.endswith(".deleted") for n in part.iterdir()), "the plan must leave .deleted files"
    _case(kafka_real, tmp_path, p, "offset", 8)


# ------------------------------------------------------------------------------------------ crash-shutdown inputs
CRASH_PROFILE = Profile(shutdowns=("crash", "crash-no-checkpoint"))


def mutated_seed(oracle: Oracle, tmp: Path, seed: int, profile: Profile, mutate, label: str) -> None:
    """A written partition changed by ``mutate(seed, part)``, then truncated to every target by Kafka and kafkalog
    (``--recover-first``, the default: ops/load_first.py applies the broker's start-up changes first)."""
    p = plan(seed, profile)
    part, batches = write(oracle, tmp / "written", p)
    mutate(seed, part)
    rng = random.Random(f"truncate-{label}-{seed}")
    now = START + rng.choice([10_000, 3_600_000, 200_000_000])
    for i, (kind, value) in enumerate(targets(rng, part, batches)):
        compare(oracle, tmp / f"case{i}", part, p["config"], kind, value, now)


def crash_seed(oracle: Oracle, tmp: Path, seed: int) -> None:
    """A partition left by a crash (no clean-shutdown marker; tests/oracle_mutations.py mutate_crash: torn or zero
    tails of the active segment, preallocated indexes, leftovers of an interrupted clean or swap, deleted snapshots,
    the recovery point at 0 or at the active segment): Kafka's Truncate loads (recovers) then truncates;
    ``truncate-to-epoch --execute`` applies the broker's load first (``--recover-first``, the default;
    ops/load_first.py) then truncates. Every truncation's files must be equal."""
    from oracle_mutations import mutate_crash

    mutated_seed(oracle, tmp, seed, CRASH_PROFILE, mutate_crash, "crash")


# 8 seeds from 30000 in CI (~45 truncations), 200 from 130000 under -m oracle_long
@pytest.mark.parametrize("seed", seeds(8, base=30_000) + [pytest.param(s, marks=pytest.mark.oracle_long)
                                                           for s in seeds(200, base=130_000)])
def test_truncate_after_a_crash_matches_kafka(kafka_real, tmp_path, seed):
    crash_seed(kafka_real, tmp_path, seed)


def leftovers_seed(oracle: Oracle, tmp: Path, seed: int) -> None:
    """A partition shut down cleanly (the marker stays) with the leftovers of an interrupted clean, swap or deletion,
    or a lost offset index (oracle_mutations.mutate_leftovers): Kafka's loader finishes them (and recovers that
    segment) before its truncation runs; kafkalog refused ``.cleaned``/``.swap`` files. ``truncate-to-epoch
    --execute`` now applies those start-up changes first (ops/load_first.needs_load_after_clean_shutdown)."""
    from oracle_mutations import mutate_leftovers

    mutated_seed(oracle, tmp, seed, PROFILE, mutate_leftovers, "leftovers")


@pytest.mark.parametrize("seed", seeds(6, base=50_000) + [pytest.param(s, marks=pytest.mark.oracle_long)
                                                           for s in seeds(200, base=150_000)])
def test_truncate_with_leftovers_after_a_clean_shutdown_matches_kafka(kafka_real, tmp_path, seed):
    leftovers_seed(kafka_real, tmp_path, seed)


def test_recovered_segment_emptied_time_index_gets_the_largest_kept_timestamp(kafka_real, tmp_path):
    """After a crash the broker's start-up recovers the segment (LogSegment.recover sets its max timestamp so far),
    then truncates it in the same process: truncateTo leaves no time entry below offset 2, re-reads the largest
    timestamp of the kept batch 0..1 (readLargestTimestamp from (-1, base)) and close appends it. kafkalog applied
    the rule of a cleanly loaded segment (max unknown, read from the emptied index: nothing appended), so the
    ``.timeindex`` differed (10 of 44 crash-input truncations)."""
    p = {"config": {"index.interval.bytes": "1"},
         "ops": [{"op": "append", "count": 2, "keyFormat": "k%d", "batches": 4}], "shutdown": "crash"}
    _case(kafka_real, tmp_path, p, "offset", 2)  # --recover-first: the default


def test_target_below_the_log_start_lowers_the_log_start_checkpoint(kafka_real, tmp_path):
    """A DeleteRecords moved the log start to 7 inside segment 0; a truncation to 2 keeps segment 0 and, in
    UnifiedLog.truncateTo, sets logStartOffset = min(target, logStartOffset) (UnifiedLog.scala:1853), which its
    clean shutdown checkpoints. kafkalog left log-start-offset-checkpoint at 7, above the new log end, so Kafka's
    next load deleted every segment and started an empty one at 7 (LogLoader.java:425-434; explore_oracle truncate
    seeds 5, 7, 14, 27, 29)."""
    p = {"ops": [{"op": "append", "count": 3, "keyFormat": "k%d", "batches": 3},
                 {"op": "deleteRecords", "offset": 7}, {"op": "append", "count": 2, "keyFormat": "k%d"}],
         "shutdown": "clean"}
    _case(kafka_real, tmp_path, p, "offset", 2)
    text = (tmp_path / "kafkalog" / "log-start-offset-checkpoint").read_text()
    assert text.splitlines()[2:] == ["t 0 2"], text
