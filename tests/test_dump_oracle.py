"""``kafkalog dump`` against Kafka's own DumpLogSegments, generated and real files, every version (issue 26).

Kafka's UnifiedLog writes seeded plans (tests/oracle_plans.py) and internal-topic records serialised by Kafka's own
serdes (tests/oracle_internal.py); some copies are damaged (tests/oracle_damage.py); then kafkalog and the tool dump
every file kind with every option set, and stdout (always) and stderr (where Kafka prints no stack trace) must be
equal byte for byte (tests/dump_oracle.py says exactly what is compared).

- 4.0: kafka-real's ``Dump`` (Kafka trunk 1eb7644, 4.0.0-SNAPSHOT) in the shared Batch JVM, against
  ``--kafka-version 4.0``. Exception: ``--transaction-log-decoder``. That snapshot still has the 3.x text decoder
  (TransactionLog.formatRecordKeyAndValue, DumpLogSegments.scala:586-590 at 1eb7644); the 4.0.0 release prints JSON
  (docs/dump.md, spec kafka-format.md §4.0.0). So that comparison pins ``--kafka-version 3.9``, the release whose
  decoder the snapshot has.
- 2.8, 3.0, 3.6, 3.9: each release's own tool (kafka-real/versions, one JVM per call), against that version. Each
  call takes every file of a kind at once (a JVM start costs 1-2 s), which also checks the order of the stderr
  summary over several files (Scala hash-map order).

The default sample is a few hundred comparisons (about 2-3 minutes with the four release builds cached);
``KAFKALOG_ORACLE_SEEDS=N`` or ``pytest -m oracle_long`` runs the long campaign (docs/testing.md).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import dump_oracle as do
import oracle_damage as od
import oracle_internal as oi
import pytest
from kafka_real import write_partition
from oracle_plans import plan, seeds
from realdata_path import REALDATA

pytestmark = pytest.mark.oracle

OLD_VERSIONS = ("3.9", "3.6", "3.0", "2.8")
LONG = int(os.environ.get("KAFKALOG_ORACLE_LONG_SEEDS", "200"))
LONG_RUN = "KAFKALOG_ORACLE_SEEDS" in os.environ  # a long campaign asked for: the finer real-data runs too


def _fail(problems: list[str]) -> None:
    if problems:
        pytest.fail(f"{len(problems)} disagreement(s) with Kafka's DumpLogSegments:\n\n" + "\n\n".join(problems[:8]))


def _clean_new(part: Path, before: set[str]) -> None:
    """Remove what Kafka's tool created (an empty .index beside a .timeindex whose .index was missing)."""
    for q in part.iterdir():
        if q.name not in before:
            q.unlink()


def _generated(kafka_real, tmp_path: Path, seed: int, legacy: int | None = None) -> Path:
    p = plan(seed)
    if legacy is not None:
        p = od.legacy(p, legacy)
    return write_partition(kafka_real, tmp_path / f"w{seed}", p)


def _check_partition(kafka_real, part: Path, tag: str, accel: bool = True) -> tuple[int, list[str]]:
    n, problems = 0, []
    for f in sorted(part.iterdir()):
        for args in do.variants(f):
            before = {q.name for q in part.iterdir()}
            d = do.compare(kafka_real, args, accel=accel)
            _clean_new(part, before)
            n += 1
            if d:
                problems.append(f"[{tag}] {' '.join(args[1:])}\n{d}")
    return n, problems


# ------------------------------------------------------------------------------------------------ 4.0, generated
def _run_generated(kafka_real, tmp_path: Path, chosen: list[int]) -> int:
    total, problems = 0, []
    for seed in chosen:
        legacy = (seed // 3) % 2 if seed % 3 == 2 else None  # every third plan on a v0/v1 topic
        part = _generated(kafka_real, tmp_path, seed, legacy)
        # the compiled accelerator and the pure-Python path print the same bytes (every fourth seed without C)
        n, probs = _check_partition(kafka_real, part, f"seed {seed}", accel=seed % 4 != 3)
        total += n
        problems += probs
    _fail(problems)
    return total


def test_generated_partitions_dump_as_kafka_does(kafka_real, tmp_path):
    """Every file of 16 generated partitions (codecs, null/empty/binary keys, values and headers, idempotent and
    transactional producers, COMMIT/ABORT, epochs, rolls, LogAppendTime, clean and crash shutdowns, v0/v1 topics),
    with and without --deep-iteration/--print-data-log/--skip-record-metadata, --verify-index-only,
    --index-sanity-check: 4.0's tool and kafkalog print the same bytes."""
    assert _run_generated(kafka_real, tmp_path, seeds(16)) > 300


@pytest.mark.oracle_long
def test_generated_partitions_long_campaign(kafka_real, tmp_path):
    assert _run_generated(kafka_real, tmp_path, seeds(LONG, base=1000)) > 0


# ------------------------------------------------------------------------------------------------ 4.0, damaged
def _run_damaged(kafka_real, tmp_path: Path, chosen: list[int]) -> int:
    total, problems = 0, []
    for seed in chosen:
        legacy = seed % 2 if seed % 3 == 0 else None
        part = _generated(kafka_real, tmp_path, seed, legacy)
        orig = tmp_path / f"orig{seed}"
        shutil.copytree(part, orig)
        for k in range(3):
            shutil.rmtree(part)
            shutil.copytree(orig, part)
            desc, files = od.damage(part, seed * 10 + k)
            for f in files:
                if not f.exists():
                    continue
                for args in do.variants(f):
                    before = {q.name for q in part.iterdir()}
                    d = do.compare(kafka_real, args, accel=k != 2)
                    _clean_new(part, before)
                    total += 1
                    if d:
                        problems.append(f"[seed {seed}/{k}: {desc}] {' '.join(args[1:])}\n{d}")
    _fail(problems)
    return total


def test_damaged_partitions_dump_as_kafka_does(kafka_real, tmp_path):
    """Torn and cut tails, flipped bytes, invalid codec ids on v2 and legacy entries, garbage / odd-length / zeroed
    indexes, a .timeindex whose .index is missing, garbage snapshots and transaction indexes: the same stdout
    (also the partial line Kafka prints before it dies), the same stderr where Kafka prints no stack trace, and a
    located error with a non-zero exit where it does."""
    assert _run_damaged(kafka_real, tmp_path, seeds(12, base=100)) > 100


@pytest.mark.oracle_long
def test_damaged_partitions_long_campaign(kafka_real, tmp_path):
    assert _run_damaged(kafka_real, tmp_path, seeds(LONG, base=5000)) > 0


def test_several_files_summary_order(kafka_real, tmp_path):
    """Several damaged indexes and logs with offset gaps in one run: Kafka prints the stderr summary in the order of
    its Scala hash maps (keyed by absolute path), not in the order of the files; kafkalog prints the same order."""
    import random

    problems = []
    for seed in range(4):
        rng = random.Random(seed)
        ops = [{"op": "append", "count": 2, "keyFormat": "k%d", "batches": rng.randint(15, 40)}]
        ops += [{"op": "append", "asFollower": True, "baseOffsetGap": 3, "count": 2, "leaderEpoch": 0}] * 4
        part = write_partition(kafka_real, tmp_path / f"m{seed}", {
            "config": {"segment.bytes": "600", "index.interval.bytes": "1"}, "ops": ops, "shutdown": "clean"})
        idx, tix = sorted(part.glob("*.index")), sorted(part.glob("*.timeindex"))
        for f in idx + tix:
            b = bytearray(f.read_bytes())
            if len(b) >= 16:
                b[-1 if f.suffix == ".index" else -5] ^= 0x10  # an offset (.index) / a timestamp (.timeindex)
                f.write_bytes(bytes(b))
        assert len(idx) > 3
        for files in (idx, tix, sorted(part.glob("*.log"))):
            args = ["--files", ",".join(map(str, files))]
            if files[0].suffix == ".log":
                args.append("--deep-iteration")
            d = do.compare(kafka_real, args)
            if d:
                problems.append(f"[seed {seed}] {files[0].suffix} x{len(files)}\n{d}")
    _fail(problems)


# ------------------------------------------------------------------------------------------------ decoders
def _decoder_cases(kafka_real, tmp_path: Path, kind: str, chosen: list[int]) -> list[tuple[list[str], str]]:
    """(args, kafkalog version to compare 4.0's tool with) for the internal-topic partitions of ``chosen`` seeds."""
    from kafka_real import launcher

    out = []
    for seed in chosen:
        specs = oi.serialise(launcher(), oi.messages(kind, seed))
        part = write_partition(kafka_real, tmp_path / f"{kind}{seed}", oi.plan(kind, specs, seed))
        # 1eb7644 still has 3.9's transaction-log text decoder (module docstring): pin 3.9 for that decoder
        version = "3.9" if kind == "transaction-log" else "4.0"
        for f in sorted(part.glob("*.log")):
            for extra in ([], ["--skip-record-metadata"], ["--deep-iteration"]):
                out.append((["--files", str(f), oi.FLAGS[kind], *extra], version))
    return out


@pytest.mark.parametrize("kind", sorted(oi.TOPICS))
def test_internal_topic_decoders(kafka_real, tmp_path, kind):
    """__consumer_offsets (offset commits v0-v4, group metadata v0-v4 with consumer-protocol members, tombstones),
    __transaction_state (v0/v1 values in every state, null and empty partition sets, tombstones) and
    __cluster_metadata (record types and versions across releases, a value that is no record): the decoders print
    what 4.0's tool prints (the transaction log pinned to 3.9's text, see the module docstring)."""
    problems = []
    cases = _decoder_cases(kafka_real, tmp_path, kind, seeds(6, base=300))
    for args, version in cases:
        ours = do.kafkalog(args, version)
        k = do.kafka(kafka_real, args)
        d = do.judge(k, ours, [args[1]])
        if d:
            problems.append(f"[{kind} @{version}] {' '.join(args[1:])}\n{d}")
    _fail(problems)
    assert len(cases) >= 18


# ------------------------------------------------------------------------------------------------ older releases
def _batched_calls(part: Path, kind: str | None = None) -> list[list[str]]:
    """Few JVM starts per partition: every file of a kind in one --files list, per option set."""
    def files(*suffixes: str) -> str:
        return ",".join(str(p) for p in sorted(part.iterdir()) if p.suffix in suffixes)

    logs = files(".log")
    calls = []
    if kind:
        calls.append(["--files", logs, oi.FLAGS[kind]])
        return calls
    calls += [["--files", logs], ["--files", logs, "--deep-iteration", "--print-data-log"]]
    idx = files(".index", ".timeindex")
    if idx:
        calls += [["--files", idx + ("," + files(".snapshot", ".txnindex") if files(".snapshot", ".txnindex") else "")],
                  ["--files", idx, "--verify-index-only"], ["--files", idx, "--index-sanity-check"]]
    return calls


def _compare_old(kafka_real, kafka_dump_tool, args: list[str], version: str) -> str | None:
    files = args[1].split(",")
    ours = do.kafkalog(args, version)
    k = do.kafka(kafka_real, args, version, kafka_dump_tool)
    return do.judge(k, ours, files)


@pytest.mark.parametrize("version", OLD_VERSIONS)
def test_older_release_tools(kafka_real, kafka_dump_tool, tmp_path, version):
    """Each release's own DumpLogSegments (2.8.2, 3.0.2, 3.6.2, 3.9.0-rc3) on generated partitions (one with
    damage, one with a .timeindex whose .index is missing), the transaction log and the cluster metadata log:
    ``kafkalog dump --kafka-version V`` prints the same stdout (and stderr where the tool prints no stack trace)."""
    kafka_dump_tool(version)  # build (or find) the release's tool first: skips cleanly without it
    problems = []
    for seed in seeds(1, base=700):
        part = _generated(kafka_real, tmp_path, seed)
        for args in _batched_calls(part):
            d = _compare_old(kafka_real, kafka_dump_tool, args, version)
            if d:
                problems.append(f"[{version} seed {seed}] {' '.join(args[1:])}\n{d}")
    # damage: an invalid codec id on a legacy entry, and a .timeindex without its .index
    part = _generated(kafka_real, tmp_path, 702, legacy=1)
    od.damage(part, 3, "codec")
    log = sorted(part.glob("*.log"))[0]
    for extra in ([], ["--deep-iteration"]):
        d = _compare_old(kafka_real, kafka_dump_tool, ["--files", str(log), *extra], version)
        if d:
            problems.append(f"[{version} codec] {extra}\n{d}")
    part = _generated(kafka_real, tmp_path, 703)
    desc, files = od.damage(part, 5, "missing-index")
    if files:
        before = {q.name for q in part.iterdir()}
        d = _compare_old(kafka_real, kafka_dump_tool, ["--files", str(files[0])], version)
        _clean_new(part, before)
        if d:
            problems.append(f"[{version} {desc}]\n{d}")
    from kafka_real import launcher

    for kind in ("transaction-log", "offsets", "cluster-metadata"):
        if kind == "cluster-metadata" and version == "2.8":
            continue  # 2.8's KRaft preview framed records with frame version 0 (internal_topics/releases.py)
        specs = oi.serialise(launcher(), oi.messages(kind, 710))
        ipart = write_partition(kafka_real, tmp_path / f"{version}{kind}", oi.plan(kind, specs, 710))
        for args in _batched_calls(ipart, kind):
            d = _compare_old(kafka_real, kafka_dump_tool, args, version)
            if d:
                problems.append(f"[{version} {kind}] {' '.join(args[1:])}\n{d}")
    _fail(problems)


# ------------------------------------------------------------------------------------------------ real files
def _real_partitions() -> list[Path]:
    if not REALDATA.is_dir():
        return []
    return sorted({p.parent for p in REALDATA.rglob("*.log") if p.parent.is_dir()})


@pytest.mark.parametrize("version", ("4.0", *OLD_VERSIONS))
def test_real_broker_files(kafka_real, kafka_dump_tool, tmp_path, version):
    """The real broker files of ../shared/realdata, per version: every .log deep with data (and shallow with
    KAFKALOG_ORACLE_SEEDS set), every index, snapshot and .txnindex plainly, on a writable copy (the tool opens a
    .txnindex read-write and creates a missing .index). One JVM per option set over all the files at once (4.0: the
    Batch JVM), kafkalog's console command beside it, the outputs (about 360 MB for the deep dump) compared as
    streams (``dump_oracle.compare_streamed``); the multi-file run also checks the order of the stderr summary.
    Where Kafka's tool dies on a file in a multi-file run, the files after it are compared again without it (the
    .timeindex files without their .index, on which every release dies, get runs of their own)."""
    parts = _real_partitions()
    if not parts:
        pytest.skip(f"no real data at {REALDATA}")
    if version != "4.0":
        kafka_dump_tool(version)
    copies = []
    for i, src in enumerate(parts):
        dst = tmp_path / f"p{i}" / src.name
        shutil.copytree(src, dst)
        for q in dst.rglob("*"):
            q.chmod(0o755 if q.is_dir() else 0o644)
        copies.append(dst)
    kinds = (".log", ".index", ".timeindex", ".snapshot", ".txnindex")
    files = [f for d in copies for f in sorted(d.iterdir()) if f.suffix in kinds]
    logs = [str(f) for f in files if f.suffix == ".log"]
    rest = [str(f) for f in files if f.suffix != ".log"]
    # a .timeindex without its .index: every release's tool prints "Dumping F" and dies (Invalid max index size),
    # whatever the file holds: one run each (4.0: every one, in the Batch JVM; a release: the first three, a JVM
    # each), the others in one run
    orphans = [f for f in rest if f.endswith(".timeindex") and not os.path.exists(f[: -len(".timeindex")] + ".index")]
    rest = [f for f in rest if f not in set(orphans)]
    calls = [(logs, ["--deep-iteration", "--print-data-log"]), (rest, [])]
    calls += [([f], []) for f in (orphans if version == "4.0" or LONG_RUN else orphans[:3])]
    if LONG_RUN:
        calls += [(logs, []), (rest, ["--verify-index-only"])]
    problems, n = [], 0
    while calls:
        chosen, extra = calls.pop(0)
        args = ["--files", ",".join(chosen), *extra]
        dirs = {Path(f).parent for f in chosen}
        before = {d: {q.name for q in d.iterdir()} for d in dirs}
        d, died = do.compare_streamed(kafka_real, args, version, kafka_dump_tool, tmp_path / "out")
        for dd in dirs:
            _clean_new(dd, before[dd])
        n += len(chosen)
        if d:
            problems.append(f"[{version}] {' '.join(extra)} on {len(chosen)} files\n{d}")
        if died is not None:
            # Kafka's tool dies at the first file it cannot read (its stdout names it: "Dumping F"); kafkalog goes
            # on. The files after it are compared in a run of their own
            at = next((i for i, f in enumerate(chosen) if os.path.abspath(f) == os.path.abspath(died)), None)
            assert at is not None, f"Kafka died on {died}, not one of the files given"
            n -= len(chosen) - at - 1
            if at + 1 < len(chosen):
                calls.insert(0, (chosen[at + 1:], extra))
    _fail(problems)
    assert n >= (len(files) - len(orphans)) * (4 if LONG_RUN else 2) // 2
