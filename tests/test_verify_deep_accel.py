"""verify-crc --deep's compiled record walk (``_accel.check_records``, issue 20) against the Python reference.

The C walk may only answer "certainly clean": whenever it says so, the Python walk (``Batch.iter_records`` plus the
offset checks of ``storage/segment_check.py``) must find nothing; otherwise the batch goes to Python, which words the problem.
Batches are mutated inside their records and their CRC recomputed, so that the deep walk (not the CRC) sees them.
"""

from __future__ import annotations

import random
import struct

import pytest

from kafkalog_cli.errors import KafkalogError
from kafkalog_cli.format.batch import Batch
from kafkalog_cli.format.crc import crc32c
from kafkalog_cli.format.encoder import RecordSpec, encode_batch
from kafkalog_cli.ops.verify import verify_segment
from kafkalog_cli.storage import accel

pytestmark = pytest.mark.skipif(accel.module() is None or not hasattr(accel.module(), "check_records"),
                                reason="compiled accelerator not built or disabled")


def _records(rng: random.Random, n: int) -> list[RecordSpec]:
    out = []
    for i in range(n):
        key = None if rng.random() < 0.2 else rng.randbytes(rng.randint(0, 12))
        value = None if rng.random() < 0.2 else rng.randbytes(rng.randint(0, 60))
        headers = [(rng.choice(["h", "ü", "trace"]), None if rng.random() < 0.5 else b"x")
                   for _ in range(rng.randint(0, 3))]
        out.append(RecordSpec(key, value, headers=headers, timestamp=1_700_000_000_000 + i))
    return out


def _fix_crc(batch: bytearray) -> bytearray:
    struct.pack_into(">I", batch, 17, crc32c(bytes(batch[21:])))
    return batch


def _mutated_batch(rng: random.Random, base: int, codec: int = 0) -> bytearray:
    b = bytearray(encode_batch(_records(rng, rng.randint(1, 12)), base_offset=base, codec=codec))
    if codec == 0 and rng.random() < 0.7:
        for _ in range(rng.randint(1, 3)):  # record bytes only: the header stays plausible
            b[rng.randrange(61, len(b))] = rng.randrange(256)
    return _fix_crc(b)


def _python_clean(data: bytes, batch: Batch) -> bool:
    """The reference answer: the Python deep walk of storage/segment_check.py finds nothing in this batch."""
    base, last = batch.base_offset, batch.base_offset + batch.last_offset_delta
    prev = None
    try:
        for rec in batch.iter_records(data, 1 << 20, copy=False):
            if rec.offset < base or rec.offset > last or (prev is not None and rec.offset <= prev):
                return False
            prev = rec.offset
    except KafkalogError:
        return False
    return True


def test_check_records_never_looser_than_python() -> None:
    check = accel.module().check_records
    rng = random.Random(20)
    clean_seen = declined = 0
    for i in range(3000):
        data = bytes(_mutated_batch(rng, rng.choice([0, 5, 2**40])))
        batch = Batch(data, 0)
        if batch.records_count <= 0:
            continue
        c = check(data, 61, batch.size, batch.records_count, batch.base_offset,
                  batch.base_offset + batch.last_offset_delta)
        py = _python_clean(data, batch)
        assert not c or py, (i, data.hex())  # C "clean" implies Python clean
        clean_seen += c
        declined += py and not c
    assert clean_seen > 500  # the walk accepts the clean batches...
    assert declined == 0  # ... and with these inputs it is exactly as strict as Python


def test_check_records_argument_bounds() -> None:
    check = accel.module().check_records
    data = bytes(encode_batch(_records(random.Random(1), 3)))
    assert check(data, 61, len(data), 3, 0, 2)
    assert not check(data, 61, len(data) + 1, 3, 0, 2)  # end past the buffer
    assert not check(data, 62, 61, 3, 0, 2)  # start after end
    assert not check(data, 61, len(data), 4, 0, 3)  # one more record declared than present
    assert not check(data, 61, len(data), 3, 0, 1)  # the last record's offset past lastOffset


@pytest.mark.parametrize("codec", [0, 1, 3])
def test_verify_deep_reports_identical_with_and_without_accelerator(tmp_path, monkeypatch, codec) -> None:  # noqa: ANN001
    rng = random.Random(codec)
    for i in range(40):
        seg = bytearray()
        off = 0
        for _ in range(rng.randint(1, 6)):
            b = _mutated_batch(rng, off, codec)
            seg += b
            off += Batch(bytes(b), 0).last_offset_delta + 1
        path = tmp_path / f"{i:020d}.log"
        path.write_bytes(bytes(seg))
        monkeypatch.delenv("KAFKALOG_NO_ACCEL", raising=False)
        fast = verify_segment(str(path), deep=True, indexes=False)
        monkeypatch.setenv("KAFKALOG_NO_ACCEL", "1")
        slow = verify_segment(str(path), deep=True, indexes=False)
        key = lambda r: [(p.position, p.end, p.kind, p.message, p.severity) for p in r.problems]  # noqa: E731
        assert key(fast) == key(slow), i
        assert (fast.batches, fast.records) == (slow.batches, slow.records)


def test_verify_deep_clean_batches_skip_the_python_walk(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    """The regression guard of the speed-up: clean batches never reach Batch.iter_records."""
    path = tmp_path / "00000000000000000000.log"
    rng = random.Random(3)
    path.write_bytes(b"".join(encode_batch(_records(rng, 10), base_offset=10 * k, codec=k % 2) for k in range(20)))

    def boom(*_a, **_k):  # noqa: ANN002, ANN003, ANN202
        raise AssertionError("the Python record walk ran on a clean batch")

    monkeypatch.setattr(Batch, "iter_records", boom)
    report = verify_segment(str(path), deep=True, indexes=False)
    assert not report.problems and report.records == 200
