"""KIP-405 tiered-storage layouts: Kafka's LocalTieredStorage and Aiven's plugin. ``scan``, ``verify-crc`` and
``dump`` find the same remote segments (``<20 digits>-<segment id>.log``), scan labels them with topic and partition
from the remote directory names, and an Aiven object of compressed or encrypted chunks is reported, not parsed."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from scan_data import load_sorted, make_logdir

from kafkalog_cli.storage import tiered

KAFKALOG = [sys.executable, "-m", "kafkalog_cli"]
TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"
SEG_IDS = ["dGhpcy1pcy1zZWdtZW50MA", "dGhpcy1pcy1zZWdtZW50MQ", "dGhpcy1pcy1zZWdtZW50Mg"]


@pytest.fixture()
def layouts(tmp_path: Path) -> dict[str, Path]:
    """orders-0 of the generated log dir, copied as a local partition and as both remote layouts."""
    src = make_logdir(tmp_path / "gen") / "orders-0"
    logs = sorted(src.glob("*.log"))
    kafka = tmp_path / "rsm" / "kafka-tiered-storage" / f"orders-0-{TOPIC_ID}"
    aiven = tmp_path / "bucket" / "tiered" / f"orders-{TOPIC_ID}" / "0"
    for d in (kafka, aiven):
        d.mkdir(parents=True)
    for log, sid in zip(logs, SEG_IDS):
        stem = log.name[:20]
        shutil.copy(log, kafka / f"{stem}-{sid}.log")
        shutil.copy(log, aiven / f"{stem}-{sid}.log")
        (aiven / f"{stem}-{sid}.rsm-manifest").write_text(json.dumps(
            {"version": "1", "chunkIndex": {}, "segmentIndexes": {}, "compression": False}))
    return {"src": src, "kafka": kafka.parent, "aiven": aiven.parent.parent, "aiven_part": aiven}


def test_classify_names() -> None:
    r = tiered.classify(f"/x/kafka-tiered-storage/my.topic-3-{TOPIC_ID}/00000000000000000042-{SEG_IDS[0]}.log")
    assert r is not None and (r.layout, r.topic, r.partition, r.base_offset, r.segment_id) == \
        ("kafka-local-tiered", "my.topic", 3, 42, SEG_IDS[0])
    r = tiered.classify(f"s3://b/pfx/my-topic-{TOPIC_ID}/7/00000000000000000100-{SEG_IDS[1]}.indexes")
    assert r is not None and (r.layout, r.topic, r.partition, r.base_offset, r.suffix) == \
        ("aiven", "my-topic", 7, 100, ".indexes")
    assert r.root == "s3://b/pfx" and r.partition_dir == f"my-topic-{TOPIC_ID}/7"
    for bad in (f"/x/orders-0/00000000000000000042-{SEG_IDS[0]}.log",  # not in a remote directory
                f"/x/orders-0-{TOPIC_ID}/42-{SEG_IDS[0]}.log",  # offset not 20 digits
                f"/x/orders-0-{TOPIC_ID}/00000000000000000042-short.log"):
        assert tiered.classify(bad) is None, bad


def _scan(path: Path, out: Path, code: int = 0) -> dict:
    r = subprocess.run([*KAFKALOG, "scan", str(path), "--out", str(out), "--format", "json", "--records"],
                       capture_output=True, text=True)
    # orders-0 has a sequence gap on purpose: an info note since issue 27 (one verdict with verify-crc), exit 0
    assert r.returncode == code, r.stderr
    doc = json.loads(r.stdout)
    if code == 0:
        assert doc["problems"]["by_kind"].get("sequence-gap") == 1
    return doc


def _comparable(rows: list[dict]) -> list[dict]:
    drop = {"log_dir", "partition_dir", "segment", "file"}
    return sorted(({k: v for k, v in r.items() if k not in drop} for r in rows),
                  key=lambda r: tuple((v is None, repr(v)) for v in r.values()))


@pytest.mark.parametrize("layout", ["kafka", "aiven"])
def test_scan_remote_layout_equals_local(layouts: dict[str, Path], tmp_path: Path, layout: str) -> None:
    local = _scan(layouts["src"], tmp_path / "local")
    remote = _scan(layouts[layout], tmp_path / layout)
    (part,) = remote["partitions"]
    assert (part["topic"], part["partition"], part["segments"]) == ("orders", 0, 3)
    assert part["partition_dir"] == (f"orders-0-{TOPIC_ID}" if layout == "kafka" else f"orders-{TOPIC_ID}/0")
    assert part["batches"] == local["partitions"][0]["batches"]
    for name in ("batches", "problems", "records"):
        assert _comparable(load_sorted(tmp_path / layout, name)) == _comparable(load_sorted(tmp_path / "local", name))
    assert {r["segment"][21:43] for r in load_sorted(tmp_path / layout, "batches")} == set(SEG_IDS)


def test_aiven_encoded_objects_are_reported_not_parsed(layouts: dict[str, Path], tmp_path: Path) -> None:
    part = layouts["aiven_part"]
    manifests = sorted(part.glob("*.rsm-manifest"))
    manifests[0].write_text(json.dumps({"version": "1", "chunkIndex": {}, "segmentIndexes": {}, "compression": True,
                                        "encryption": {"dataKey": "x", "aad": "y"}}))
    manifests[1].unlink()  # no manifest, and the object starts with a zstd frame
    log1 = part / (manifests[1].name[: -len(".rsm-manifest")] + ".log")
    log1.write_bytes(tiered.ZSTD_MAGIC + log1.read_bytes())
    doc = _scan(layouts["aiven"], tmp_path / "out", code=1)  # remote-encoded objects: warnings
    encoded = [p for p in load_sorted(tmp_path / "out", "problems") if p["kind"] == "remote-encoded"]
    assert sorted(p["segment"][:20] for p in encoded) == ["00000000000000000000", "00000000000000000020"]
    assert "compression=True" in encoded[0]["message"]
    assert doc["partitions"][0]["batches"] == 4  # only the third segment was parsed
    # verify-crc reports the same objects the same way
    v = subprocess.run([*KAFKALOG, "verify-crc", str(layouts["aiven"])], capture_output=True, text=True)
    assert v.stdout.count("remote-encoded") == 2


def test_verify_and_dump_use_the_same_discovery(layouts: dict[str, Path]) -> None:
    v = subprocess.run([*KAFKALOG, "verify-crc", str(layouts["kafka"])], capture_output=True, text=True)
    assert v.returncode == 0, v.stdout + v.stderr
    assert "3 files" in v.stdout and "stray" not in v.stdout and "file-name" not in v.stdout
    d = subprocess.run([*KAFKALOG, "dump", str(layouts["kafka"])], capture_output=True, text=True)
    assert d.returncode == 0, d.stderr
    assert d.stdout.count("Dumping ") == 3 and "Log starting offset: 20" in d.stdout


def test_remote_partition_numbers_beyond_a_java_int_or_not_ascii_are_no_partition():
    """Kafka parses partition numbers with Integer.parseInt: a remote directory whose number does not fit is no
    partition (never an OverflowError later when the row is stored); '²' is a digit to str.isdigit, not to int()."""
    from kafkalog_cli.storage.tiered import classify

    seg = "00000000000000000000-AAAAAAAAAAAAAAAAAAAAAA.log"
    assert classify(f"/r/t-99999999999999999999-AAAAAAAAAAAAAAAAAAAAAA/{seg}") is None
    assert classify(f"/r/t-AAAAAAAAAAAAAAAAAAAAAA/99999999999999999999/{seg}") is None
    assert classify(f"/r/t-AAAAAAAAAAAAAAAAAAAAAA/\u00b2/{seg}") is None
    ok = classify(f"/r/t-AAAAAAAAAAAAAAAAAAAAAA/7/{seg}")
    assert ok is not None and ok.partition == 7
