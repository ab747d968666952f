"""Differently shaped cases for compact, truncate-to-epoch and seek against Kafka's own code (kafka-real; issue 26).

Generators of its own (not tests/oracle_plans.py nor tests/oracle_fuzz.py's flat programs):

- ``compact``: a compacted topic written by many producers interleaved (up to five transactional, four idempotent,
  plain appends), aborted and committed transactions spanning rolls, a codec drawn per batch, LogAppendTime half of
  the time, tombstones and empty values with headers, binary/empty keys from a tiny key space, explicit
  (decreasing, far past) timestamps, very small ``segment.bytes`` with records near its size, ``index.interval.bytes``
  1, follower appends with offset gaps (null keys among them), DeleteRecords; then 3-5 cleaner rounds with the clock
  advancing (tests/test_oracle_compact.compare_rounds).
- ``seek``: the compacted plans after one Kafka clean (offset gaps, per-append indexes), every batch's first/last
  offset and max timestamp and their neighbours: ``seek-offset``/``seek-time`` vs kafka-real ``Seek``.
- ``truncate``: the same plans without compaction (crash or clean shutdowns), truncated to every epoch, to offsets
  inside open and aborted transactions, at and after markers, at the log start, below it, at and past the log end
  (tests/test_oracle_truncate.compare).

Used by tests/test_oracle_explore.py (a small CI sample, the long form under ``-m oracle_long``) and by
scripts/explore_oracle.py (a campaign over a seed range, one line per seed).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

T0 = 1_700_000_000_000
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
REFUSED: list[tuple[int, str, int]] = []  # truncations kafkalog refuses by design (counted, not compared)


def _blob(rng: random.Random, n: int) -> dict:
    return {"hex": bytes(rng.randrange(256) for _ in range(n)).hex()}


def _key(rng: random.Random, keyspace: int, binary_keys: bool) -> object:
    k = rng.randrange(keyspace)
    if binary_keys and k % 3 == 0:
        return {"hex": f"{k:02x}00ff"}
    if k == 0 and rng.random() < 0.3:
        return ""
    return f"K{k}"


def _value(rng: random.Random, room: int) -> object:
    r = rng.random()
    if r < 0.2:
        return None  # tombstone
    if r < 0.3:
        return ""
    if r < 0.4:
        return _blob(rng, rng.randint(1, max(1, min(room, 30))))
    return "v" + "q" * rng.randint(0, max(0, room))


def explore_plan(seed: int, compact: bool) -> dict:
    rng = random.Random(f"explore-{'c' if compact else 't'}-{seed}")
    config: dict[str, str] = {}
    if compact:
        config["cleanup.policy"] = "compact"
    seg = rng.choice([None, None, rng.randint(260, 500), 700, 1500, 6000])
    if seg:
        config["segment.bytes"] = str(seg)
    ii = rng.choice([None, 1, 1, 17, 250, 1024])
    if ii is not None:
        config["index.interval.bytes"] = str(ii)
    if rng.random() < 0.15:
        config["segment.index.bytes"] = str(rng.choice([48, 96, 240]))
    lat = rng.random() < 0.45
    if lat:
        config["message.timestamp.type"] = "LogAppendTime"
    # room for a value: a batch must fit the segment (61-byte header, ~20 per record)
    room = 160 if seg and seg < 600 else (400 if seg and seg < 2000 else 1500)
    keyspace = rng.choice([1, 2, 4, 8, 30])
    binary_keys = rng.random() < 0.3
    ts_mode = rng.choice([None, None, "decreasing", "past", "equal"])
    clock = [T0]
    ops: list[dict] = []
    epoch = rng.choice([0, 0, 2])
    pstate: dict[int, int] = {}
    coord: dict[int, int] = {}
    open_txn: set[int] = set()
    seq_used: set[int] = set()
    n_ops = rng.randint(6, 30)
    follower_ok = rng.random() < 0.25
    for _ in range(n_ops):
        r = rng.random()
        if r < 0.07:
            ops.append({"op": "roll"})
            continue
        if r < 0.10:
            ops.append({"op": "advanceTime", "ms": rng.choice([1, 1000, 600_000, 90_000_000])})
            continue
        if r < 0.13:
            epoch += 1
            continue
        if r < 0.22 and open_txn:
            pid = rng.choice(sorted(open_txn))
            coord[pid] = max(coord.get(pid, 0), rng.choice([0, 2]))  # a coordinator epoch never goes down
            ops.append({"op": "marker", "type": rng.choice(["COMMIT", "ABORT", "ABORT"]), "producerId": pid,
                        "producerEpoch": pstate[pid], "coordinatorEpoch": coord[pid], "leaderEpoch": epoch})
            open_txn.discard(pid)
            if rng.random() < 0.25:
                pstate[pid] += 1
            continue
        if r < 0.25 and not compact and not open_txn:
            ops.append({"op": "deleteRecords", "offsetFromEnd": rng.randint(0, 8)})
            continue
        if r < 0.25 and compact and rng.random() < 0.3:
            ops.append({"op": "deleteRecords", "offsetFromEnd": rng.randint(2, 20)})
            continue
        if r < 0.27:
            ops.append({"op": "flush"})
            continue
        op: dict = {"op": "append", "codec": rng.choice(CODECS), "leaderEpoch": epoch}
        kind = rng.random()
        if kind < 0.4:
            if open_txn and rng.random() < 0.6:
                pid = rng.choice(sorted(open_txn))
            else:
                pid = rng.choice([p for p in range(10, 15) if p not in open_txn] or [99])
                if pid == 99:
                    pid = sorted(open_txn)[0]
                pstate.setdefault(pid, rng.choice([0, 0, 3]))
                open_txn.add(pid)
            op.update(producerId=pid, producerEpoch=pstate[pid], transactional=True)
        elif kind < 0.65:
            pid = rng.choice(range(20, 24))
            pstate.setdefault(pid, 0)
            op.update(producerId=pid, producerEpoch=pstate[pid])
            seq_used.add(pid)
        elif follower_ok and kind < 0.75:
            op.update(asFollower=True, baseOffsetGap=rng.choice([0, 1, 7, 200]))
        n = rng.randint(1, 3 if room < 500 else 8)
        recs = []
        for _i in range(n):
            key: object = _key(rng, keyspace, binary_keys)
            if op.get("asFollower") and rng.random() < 0.15:
                key = None  # a follower copy skips the leader's key check
            if not compact and rng.random() < 0.2:
                key = None
            rec: dict = {"key": key, "value": _value(rng, room // n)}
            if rng.random() < 0.3:
                rec["headers"] = [[rng.choice(["h", "", "trace"]), rng.choice([None, "", "x", _blob(rng, 3)])]
                                  for _ in range(rng.randint(1, 3))]
            if ts_mode == "decreasing":
                clock[0] -= rng.choice([1, 10, 5000])
                rec["timestamp"] = clock[0]
            elif ts_mode == "past":
                rec["timestamp"] = T0 - rng.choice([0, 86_400_000, 30 * 86_400_000])
            elif ts_mode == "equal":
                rec["timestamp"] = T0
            recs.append(rec)
        op["records"] = recs
        op["batches"] = rng.choice([1, 1, 2, 3])
        ops.append(op)
    if rng.random() < 0.6:
        for pid in sorted(open_txn):
            ops.append({"op": "marker", "type": rng.choice(["COMMIT", "ABORT"]), "producerId": pid,
                        "producerEpoch": pstate[pid], "coordinatorEpoch": coord.get(pid, 0), "leaderEpoch": epoch})
    if not any(o["op"] == "append" for o in ops):
        ops.append({"op": "append", "records": [{"key": "K0", "value": "v"}], "leaderEpoch": epoch})
    shutdown = "clean" if compact and rng.random() < 0.7 else rng.choice(["clean", "clean", "crash",
                                                                           "crash-no-checkpoint"])
    return {"topic": "t", "partition": 0, "config": config, "startTimeMs": T0,
            "timeStepMs": rng.choice([0, 1, 1, 13, 1000]), "ops": ops, "shutdown": shutdown}


def compact_settings(seed: int) -> dict:
    rng = random.Random(f"explore-cs-{seed}")
    return {
        "delete_retention_ms": rng.choice([0, 0, 500, 3_600_000, 86_400_000]),
        "min_compaction_lag_ms": rng.choice([0, 0, 0, 2000, 3_600_000]),
        "now_ms": T0 + rng.choice([5_000, 600_000, 3_600_000, 90_000_000]),
        "advance_ms": rng.choice([0, 700, 3_700_000, 86_400_001]),
        "rounds": rng.choice([3, 3, 4, 5]),
    }


def run_compact(oracle, tmp: Path, seed: int) -> None:
    from test_oracle_compact import compare_rounds

    p = explore_plan(seed, compact=True)
    s = compact_settings(seed)
    compare_rounds(oracle, tmp, p, s)


def truncate_targets(rng: random.Random, part: Path, res: dict) -> list[tuple[str, int]]:
    batches = [(r["firstOffset"], r["lastOffset"]) for a in res["appends"] for r in a.get("results", [])]
    markers = [a["offset"] for a in res["appends"] if a.get("op") == "marker"]
    out: list[tuple[str, int]] = []
    epf = part / "leader-epoch-checkpoint"
    lines = epf.read_text().splitlines()[2:] if epf.exists() else []
    epochs = [int(ln.split()[0]) for ln in lines if ln.strip()]
    out += [("epoch", e) for e in epochs]
    if epochs:
        out.append(("epoch", epochs[0] - 1 if epochs[0] > 0 else epochs[-1] + 2))
    log = res.get("log") or {}
    lso, leo = log.get("logStartOffset", 0), log.get("logEndOffset", 0)
    cands = [lso, leo, leo + 3, max(0, lso - 1)]
    for m in markers:
        cands += [m, m + 1]
    txn_batches = [(a, r) for a in res["appends"] for r in a.get("results", [])]
    for f, t in batches:
        if t > f:
            cands.append(rng.randint(f + 1, t))
    if res.get("log", {}).get("firstUnstableOffset") is not None:
        cands.append(log["firstUnstableOffset"] + 1)
    del txn_batches
    rng.shuffle(cands)
    seen = set()
    for c in cands:
        if c not in seen and len(seen) < 6:
            seen.add(c)
            out.append(("offset", c))
    return out


def run_truncate(oracle, tmp: Path, seed: int) -> int:
    from test_oracle_truncate import compare

    p = explore_plan(seed, compact=False)
    res = oracle.json("Write", "--out", str(tmp / "written"), "--plan-json", json.dumps(p))
    if res.get("error"):
        pytest.skip(f"{res['error']['class']}: {res['error']['message']}")
    part = Path(res["partitionDir"])
    rng = random.Random(f"explore-tt-{seed}")
    now = T0 + rng.choice([10_000, 3_600_000, 200_000_000])
    n = 0
    for i, (kind, value) in enumerate(truncate_targets(rng, part, res)):
        try:
            compare(oracle, tmp / f"case{i}", part, p["config"], kind, value, now)
        except AssertionError as exc:
            # documented refusal (docs/repairs.md): a target below the first segment's base, where Kafka's
            # truncateTo calls truncateFullyAndStartAt and deletes the whole log
            if "exit 2" in str(exc) and "is below the first segment's base offset" in str(exc):
                REFUSED.append((seed, kind, value))
                continue
            raise AssertionError(f"target {kind} {value} (now {now}): {exc}") from exc
        n += 1
    return n


def run_seek(oracle, tmp: Path, seed: int) -> int:
    """seek-offset / seek-time vs Kafka's Seek on a compacted topic after one Kafka clean (offset gaps, per-append
    indexes, LogAppendTime half of the time): every batch's first/last offset and neighbours, every batch's max
    timestamp (or LogAppendTime) and neighbours, before all and after all."""
    from test_oracle_compact import kafka_round
    from test_oracle_fuzz import NOW

    from kafkalog_cli.ops import seek as sk

    p = dict(explore_plan(seed, compact=True), shutdown="clean")
    s = compact_settings(seed)
    w = oracle.json("Write", "--out", str(tmp / "written"), "--plan-json", json.dumps(p))
    if w.get("error"):
        pytest.skip(f"{w['error']['class']}: {w['error']['message']}")
    config = dict(p["config"], **{"delete.retention.ms": str(s["delete_retention_ms"]), "min.compaction.lag.ms": "0",
                                  "min.cleanable.dirty.ratio": "0.01", "file.delete.delay.ms": "0"})
    pdir, res = kafka_round(oracle, Path(w["partitionDir"]), tmp / "clean", config, s["now_ms"])
    log = res["logAfter"]
    start, leo = log["logStartOffset"], log["logEndOffset"]
    offsets = {0, start, max(0, start - 1), max(0, leo - 1), leo}
    times = {0, p["startTimeMs"] - 1}
    for a in w["appends"]:
        for b in a.get("results", []):
            offsets |= {b["firstOffset"], b["lastOffset"], b["firstOffset"] - 1, b["lastOffset"] + 1}
            t = b["logAppendTime"] if b.get("logAppendTime", -1) >= 0 else b["maxTimestamp"]
            times |= {t - 1, t, t + 1}
    offsets = {o for o in offsets if 0 <= o <= leo}
    times |= {max(times) + 1000}
    times = {t for t in times if t >= 0}
    from oracle_cases import config_args

    k = oracle.json("Seek", "--in", str(pdir), "--work", str(tmp / "seek"), "--now-ms", str(NOW),
                    *config_args(p["config"]), "--offsets", ",".join(map(str, sorted(offsets))),
                    "--timestamps", ",".join(map(str, sorted(times))))
    bad = []
    for ans in k["offsets"]:
        off = ans["offset"]
        try:
            r = sk.seek_offset(str(pdir), off)
        except sk.OffsetNotFound as exc:
            if "error" not in ans and ans.get("batchBaseOffset") is not None:
                bad.append(f"seek-offset {off}: kafkalog not found ({exc.message}); Kafka {ans.get('batchBaseOffset')}")
            continue
        if "error" in ans:
            bad.append(f"seek-offset {off}: kafkalog {r.batch_base_offset}; Kafka {ans['error']}")
            continue
        if ans.get("batchBaseOffset") is None:
            continue
        e = r.entry
        want = (int(ans["segmentBaseOffset"]), ans["position"], ans.get("batchBaseOffset"), ans.get("batchLastOffset"))
        got = (int(Path(r.segment).stem), r.position, r.batch_base_offset, e.last_offset if e else None)
        if got != want:
            bad.append(f"seek-offset {off}: kafkalog {got}, Kafka {want}")
    for ans in k["timestamps"]:
        t = ans["target"]
        try:
            rt = sk.seek_time(str(pdir), t)
            got_t = (rt.record.offset, rt.record.timestamp) if rt.record is not None else None
        except sk.OffsetNotFound:
            got_t = None
        want_t = (ans["offset"], ans["timestamp"]) if ans.get("offset") is not None else None
        if "error" in ans:
            want_t = ("error", ans["error"])
        if got_t != want_t:
            bad.append(f"seek-time {t}: kafkalog {got_t}, Kafka {want_t}")
    assert not bad, f"{pdir}: " + "; ".join(bad[:8])
    return len(k["offsets"]) + len(k["timestamps"])




def run_salvage(oracle, tmp: Path, seed: int) -> str:
    """``salvage --execute`` (pinned to 4.0) on a damaged partition of the truncate plans (tests/oracle_fuzz.py's
    fuzz_damage: any file, any byte offset), then Kafka's Load, with and without the clean-shutdown marker, and its
    clean close must change no file of the partition. Returns "refused" when salvage refuses (exit 2), else "ok"."""
    from oracle_cases import assert_load_keeps, copy_partition, kafkalog
    from oracle_fuzz import fuzz_damage

    p = explore_plan(seed, compact=False)
    w = oracle.json("Write", "--out", str(tmp / "written"), "--plan-json", json.dumps(p))
    if w.get("error"):
        pytest.skip(f"{w['error']['class']}: {w['error']['message']}")
    part = Path(w["partitionDir"])
    muts = fuzz_damage(seed, part)
    reference = copy_partition(part, tmp / "reference")
    # a clock just after the plan's own: no producer expires at Kafka's load (the plan's clock moves by its
    # advanceTime ops and a step per record)
    now = T0 + sum(o.get("ms", 0) for o in p["ops"] if o["op"] == "advanceTime") + 3_600_000
    cfg = [a for k in ("index.interval.bytes", "segment.index.bytes") if k in p["config"]
           for a in ("--config", f"{k}={p['config'][k]}")]
    r = kafkalog("salvage", "--kafka-version", "4.0", "--execute", "--now-ms", str(now), *cfg,
                 "--allow-lost-marker", "--allow-unknown-in-transaction", str(part))
    if r.exit_code == 2:
        return "refused"
    assert r.exit_code == 0, f"salvage exit {r.exit_code} ({muts}):\n{r.output}"
    try:
        # a change Kafka's load also makes to the same, untouched file of the damaged input is the broker's own
        # start-up (e.g. an unflushed segment's live per-append index rebuilt by the recovery rule), not salvage's
        assert_load_keeps(oracle, reference, part, tmp / "load", now, p["config"])
    except AssertionError as exc:
        if "Kafka's Load failed" in str(exc) and "on " + str(reference) in str(exc):
            return "ok"  # the input itself does not load: nothing to exempt, the salvaged partition loaded (checked)
        raise AssertionError(f"{muts}: {exc}") from None
    return "ok"
