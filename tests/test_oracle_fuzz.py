"""recover, rebuild-index and seek against Kafka's own code on the differently shaped cases of tests/oracle_fuzz.py.

Each case: ``fuzz_plan(seed)`` (tiny segments, huge batches, follower gaps, DeleteRecords, truncation, interleaved
transactions, v0/v1 before v2, a full index, odd timestamps, LogAppendTime; every codec) written by Kafka's
UnifiedLog, then ``fuzz_damage(seed)`` (random byte offsets of any file: flips, truncation, zero fill, zero or junk
extension; snapshots removed, garbled or stale; checkpoints above/below; leftovers; marker or not). On the same
files, pinned to ``--kafka-version 4.0``:

- ``recover`` dry run and ``--execute`` vs ``kafka-real Load`` (+ its clean close), and Kafka's next Load changes
  nothing (tests/test_oracle_recover.py ``compare_recover_case``);
- ``rebuild-index --execute --rewrite-valid`` vs the indexes Kafka's recovery writes, and Kafka's next Load
  changes no index or log byte;
- ``seek-offset`` / ``seek-time`` vs ``kafka-real Seek`` on the undamaged partition (offsets below the log start,
  in gaps, at the end; timestamps before and after all, on every batch's max timestamp and around it).

The default run is a bounded sample (``N_*``); ``pytest -m oracle_long tests/test_oracle_fuzz.py`` runs the long
campaign (``KAFKALOG_FUZZ_LONG`` cases per comparison, seeds from ``KAFKALOG_FUZZ_BASE``).
"""

from __future__ import annotations

import json
import os
import random
import shutil
from pathlib import Path

import pytest
from kafka_real import Oracle
from oracle_cases import copy_partition
from oracle_fuzz import fuzz_damage, fuzz_plan, kafka_plan
from test_oracle_recover import (
    VERSION,
    Refused,
    _files,
    _kafka_config,
    _kfiles,
    _topic_config,
    _with_context,
    compare_recover_case,
    load_changes_nothing,
)

from kafkalog_cli.ops import rebuild_index as ri
from kafkalog_cli.ops import seek as sk

pytestmark = pytest.mark.oracle

NOW = 1_700_000_500_000
N_RECOVER, N_REBUILD, N_SEEK = 10, 4, 6
LONG = int(os.environ.get("KAFKALOG_FUZZ_LONG", 1000))
LONG_BASE = int(os.environ.get("KAFKALOG_FUZZ_BASE", 1_000_000))


def _write(oracle: Oracle, out: Path, p: dict) -> tuple[Path, dict]:
    res = oracle.json("Write", "--out", str(out), "--plan-json", json.dumps(kafka_plan(p)))
    err = res.get("error")
    if err:
        # Kafka's leader refuses the generated program (a batch larger than a tiny segment, a follower batch below
        # the log end after a truncation, ...): nothing to compare for this seed
        raise Refused(f"{err['class']}: {err['message']}")
    return Path(res["partitionDir"]), res


def compare_fuzz_recover(oracle: Oracle, tmp: Path, seed: int) -> list[str]:
    p = fuzz_plan(seed)
    pdir, _ = _write(oracle, tmp / "w", p)
    muts = fuzz_damage(seed, pdir)
    return compare_recover_case(oracle, tmp, p, pdir, [f"shapes {p['_shapes']}", *muts], seed)


def compare_fuzz_rebuild_index(oracle: Oracle, tmp: Path, seed: int) -> list[str]:
    """rebuild-index --execute --rewrite-valid on the damaged indexes of a shaped case vs Kafka's recovery from 0."""
    p = fuzz_plan(seed)
    pdir, _ = _write(oracle, tmp / "w", p)
    rng = random.Random(seed)
    muts = [f"shapes {p['_shapes']}"]
    for f in sorted(pdir.glob("*.*index")):
        if f.suffix in (".index", ".timeindex") and rng.random() < 0.4:
            from oracle_fuzz import _byte_damage

            muts.append(_byte_damage(rng, f))
    cfg = _topic_config(p)
    (pdir.parent / ".kafka_cleanshutdown").unlink(missing_ok=True)
    k = oracle.json("Load", "--in", str(pdir), "--work", str(tmp / "load"), "--now-ms", str(NOW), *_kafka_config(p),
                    "--close", "--recovery-point", "0", "--clean-shutdown", "false")
    if k.get("error"):
        # Kafka's recovery fails on these files (e.g. legacy follower batches and a tiny segment.index.bytes: the
        # recovery's per-interval index overflows, seed 50428): there are no indexes to compare, and kafkalog's
        # loader model must say so too
        from kafkalog_cli.broker import loader as ld

        ours = ld.plan_load(str(pdir), VERSION, now_ms=NOW, config=cfg, recovery_point=0)
        return [] if ours.fatal else _with_context([f"Kafka's load threw {k['error']['class']}; kafkalog's loader "
                                                    "predicts a normal start"], seed, muts)
    ref = copy_partition(pdir, tmp / "ref")  # the input as it was: what Kafka's own next start does to it
    ri.run([str(pdir)], interval=cfg.index_interval_bytes, segment_index_bytes=cfg.segment_index_bytes,
           execute=True, rewrite_valid=True, backup_dir=str(tmp / "backup"))
    theirs = _kfiles(k["filesAfterClose"])
    mine = _files(pdir)
    bad = [f"{n}: kafkalog {mine.get(n, 'absent')}, Kafka {theirs.get(n, 'absent')}"
           for n in sorted(set(mine) | set(theirs))
           if n.endswith((".index", ".timeindex")) and n.split(".")[0] + ".log" in mine and mine.get(n) != theirs.get(n)]
    for clean in (False, True):
        only = (".log", ".index", ".timeindex", ".txnindex")
        got = load_changes_nothing(oracle, pdir, tmp / f"reload-{clean}", p, clean, only)
        if got:
            # a change Kafka's start makes to the input as well is not rebuild-index's doing: e.g. a .txnindex whose
            # lastStableOffset the live append and the recovery's replay compute differently (seed 50159)
            own = set(load_changes_nothing(oracle, ref, tmp / f"ref-reload-{clean}", p, clean, only))
            got = [g for g in got if g not in own]
        bad += got
    return _with_context(bad, seed, muts)


def compare_fuzz_seek(oracle: Oracle, tmp: Path, seed: int) -> list[str]:
    """seek-offset / seek-time vs Kafka's UnifiedLog.read / fetchOffsetByTimestamp on a shaped, clean partition."""
    p = dict(fuzz_plan(seed), shutdown="clean")
    pdir, w = _write(oracle, tmp / "w", p)
    rng = random.Random(seed)
    log = w["log"]
    start, leo = log["logStartOffset"], log["logEndOffset"]
    offsets = {0, start, max(0, start - 1), max(0, leo - 1), leo}
    times = {0, p["startTimeMs"] - 1}
    for a in w["appends"]:
        for b in a.get("results", []):
            offsets |= {b["firstOffset"], b["lastOffset"], b["firstOffset"] - 1, b["lastOffset"] + 1}
            t = b["logAppendTime"] if b.get("logAppendTime", -1) >= 0 else b["maxTimestamp"]
            times |= {t - 1, t, t + 1}
    offsets = {o for o in offsets if 0 <= o <= leo}
    offsets |= {rng.randrange(max(1, leo)) for _ in range(4)}
    times |= {max(times) + 1000}
    times = {t for t in times if t >= 0}
    k = oracle.json("Seek", "--in", str(pdir), "--work", str(tmp / "seek"), "--now-ms", str(NOW), *_kafka_config(p),
                    "--offsets", ",".join(map(str, sorted(offsets))), "--timestamps", ",".join(map(str, sorted(times))))
    bad = []
    for ans in k["offsets"]:
        off = ans["offset"]
        try:
            res = sk.seek_offset(str(pdir), off)
        except sk.OffsetNotFound as exc:
            if "error" not in ans and ans.get("batchBaseOffset") is not None:
                bad.append(f"seek-offset {off}: kafkalog: not found ({exc.message}); Kafka: batch at "
                           f"{ans.get('batchBaseOffset')}")
            continue
        if "error" in ans:
            bad.append(f"seek-offset {off}: kafkalog finds the batch at {res.batch_base_offset}; Kafka: {ans['error']}")
            continue
        if ans.get("batchBaseOffset") is None:
            continue  # the log end: Kafka returns an empty read
        e = res.entry
        want = (int(ans["segmentBaseOffset"]), ans["position"], ans.get("batchBaseOffset"), ans.get("batchLastOffset"))
        got = (int(Path(res.segment).stem), res.position, res.batch_base_offset, e.last_offset if e else None)
        if got != want:
            bad.append(f"seek-offset {off}: kafkalog (segment, position, batch base, last) {got}, Kafka {want}")
    for ans in k["timestamps"]:
        t = ans["target"]
        try:
            r = sk.seek_time(str(pdir), t)
            got_t = (r.record.offset, r.record.timestamp) if r.record is not None else None
        except sk.OffsetNotFound:
            got_t = None
        want_t = (ans["offset"], ans["timestamp"]) if ans.get("offset") is not None else None
        if "error" in ans:
            want_t = ("error", ans["error"])
        if got_t != want_t:
            bad.append(f"seek-time {t}: kafkalog (offset, timestamp) {got_t}, Kafka {want_t}")
    return _with_context(bad, seed, [f"shapes {p['_shapes']}"])


def _or_skip(fn, *args):  # noqa: ANN001, ANN202
    try:
        return fn(*args)
    except Refused as exc:
        pytest.skip(f"Kafka refuses the generated plan: {exc}")


@pytest.mark.parametrize("seed", range(N_RECOVER))
def test_fuzz_recover_matches_kafka_load(kafka_real, tmp_path, seed):
    assert _or_skip(compare_fuzz_recover, kafka_real, tmp_path, seed) == []


@pytest.mark.parametrize("seed", range(50_000, 50_000 + N_REBUILD))
def test_fuzz_rebuild_index_matches_kafka_recovery(kafka_real, tmp_path, seed):
    assert _or_skip(compare_fuzz_rebuild_index, kafka_real, tmp_path, seed) == []


@pytest.mark.parametrize("seed", range(90_000, 90_000 + N_SEEK))
def test_fuzz_seek_matches_kafka_lookups(kafka_real, tmp_path, seed):
    assert _or_skip(compare_fuzz_seek, kafka_real, tmp_path, seed) == []


def run_campaign(oracle: Oracle, tmp: Path, fn, seeds) -> tuple[int, int, list[str]]:  # noqa: ANN001
    """(cases compared, cases Kafka refused, disagreements) of ``fn`` over ``seeds``."""
    bad: list[str] = []
    n = refused = 0
    for s in seeds:
        d = tmp / f"{fn.__name__}-{s}"
        d.mkdir()
        try:
            bad += fn(oracle, d, s)
            n += 1
        except Refused:
            refused += 1
        shutil.rmtree(d)
    return n, refused, bad


@pytest.mark.oracle_long
def test_fuzz_long_campaign(kafka_real, tmp_path):
    """``pytest -m oracle_long tests/test_oracle_fuzz.py``: LONG recover cases, LONG/3 rebuild-index and seek ones."""
    bad: list[str] = []
    for fn, off, n in ((compare_fuzz_recover, 0, LONG), (compare_fuzz_rebuild_index, 1_000_000, LONG // 3),
                       (compare_fuzz_seek, 2_000_000, LONG // 3)):
        bad += run_campaign(kafka_real, tmp_path, fn, range(LONG_BASE + off, LONG_BASE + off + n))[2]
    assert bad == [], json.dumps(bad[:40], indent=1)


# ------------------------------------------------------------------------------------------------ named regressions
# One seed per disagreement class the campaign found (each failed before its fix; docs/testing.md lists them).
@pytest.mark.parametrize("seed", [5, 170, 569])
def test_regression_active_index_fuller_than_segment_index_bytes(kafka_real, tmp_path, seed):
    """Clean marker, the active segment's .index/.timeindex holds more whole entries than segment.index.bytes (a
    crash-preallocated 10 MiB .timeindex + 12 zero bytes; a tiny segment.index.bytes): resizeIndexes at the end of
    LogLoader.load throws IllegalArgumentException (newPosition > limit) and the partition does not load; kafkalog
    predicted a normal start."""
    assert compare_fuzz_recover(kafka_real, tmp_path, seed) == []
    from kafkalog_cli.broker import loader as ld

    plan_ = ld.plan_load(str(tmp_path / "w" / "t-0"), VERSION, now_ms=NOW, config=_topic_config(fuzz_plan(seed)))
    assert plan_.fatal and "newPosition > limit" in plan_.fatal[0], plan_.fatal


@pytest.mark.parametrize("seed", [13, 128])
def test_regression_recovery_point_raised_to_the_log_start(kafka_real, tmp_path, seed):
    """DeleteRecords moved the log start above the recovery-point checkpoint entry: UnifiedLog's constructor
    (updateLogStartOffset) raises the recovery point to the log start; kafkalog said min(checkpoint, log end)."""
    assert compare_fuzz_recover(kafka_real, tmp_path, seed) == []


def test_regression_recovery_point_checkpointed_after_recovery(kafka_real, tmp_path):
    """Seed 459: a crash without checkpoints; recover --execute left no recovery-point entry, so Kafka's next unclean
    start recovered every segment again and rewrote three producer snapshots; --execute now writes the entry at the
    log end, as the broker's clean close does."""
    assert compare_fuzz_recover(kafka_real, tmp_path, 459) == []
    cp = (tmp_path / "x" / "recovery-point-offset-checkpoint").read_text().splitlines()
    assert cp[2].startswith("t 0 "), cp


@pytest.mark.parametrize("seed", [90006, 90044, 90057, 90063])
def test_regression_seek_log_start_and_the_one_segment_searched(kafka_real, tmp_path, seed):
    """seek-offset below the log start (DeleteRecords) is out of range, as UnifiedLog.read answers; seek-time
    searches only the first segment whose largest timestamp is >= the target (an empty first segment's is its
    mtime: nothing found), from max(time-index offset, log start) and for records at or above the log start."""
    assert compare_fuzz_seek(kafka_real, tmp_path, seed) == []


@pytest.mark.parametrize("seed", [2574, 2618, 3822])
def test_regression_leader_epoch_checkpoint_rewritten_by_the_load(kafka_real, tmp_path, seed):
    """The load writes the leader-epoch checkpoint even when its entries stay the same: truncateFromStart removes
    the entries at or below the log start checkpoint and puts the first back (a torn last newline, 2574 and 2618,
    is rewritten in Kafka's spelling), and deleting every segment (log end below the log start) clears and flushes it
    (a deleted file comes back as "0\\n0\\n", 3822); kafkalog kept the file's bytes or created it empty."""
    assert compare_fuzz_recover(kafka_real, tmp_path, seed) == []
