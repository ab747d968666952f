"""The replay's fast paths agree with the generic readers: the compiled record reader (internal_topics/
metadata_fast.py) with ``cluster_metadata.read_frame``, the plain-batch walk (ops/metadata._simple_values) with
``Batch.iter_records``; both decline (None) rather than guess."""

from __future__ import annotations

import os
import random
import sys

sys.path.insert(0, os.path.dirname(__file__))
import metadata_gen as gen  # noqa: E402
from realdata_path import REALDATA  # noqa: E402

from kafkalog_cli.format.encoder import RecordSpec, encode_batch  # noqa: E402
from kafkalog_cli.internal_topics.cluster_metadata import BY_KEY, MetadataParseError, enum_name, read_frame  # noqa: E402
from kafkalog_cli.internal_topics.metadata_fast import FastReader  # noqa: E402
from kafkalog_cli.ops import metadata as md  # noqa: E402
from kafkalog_cli.storage.segment import MappedFile, entries  # noqa: E402


def _values() -> list[bytes]:
    out: list[bytes] = []
    for seed in range(6):
        c = gen.Cluster(seed)
        for _ in range(150):
            c.step()
        out += gen.encode(c.records)
    for d in sorted(REALDATA.glob("**/__cluster_metadata-0"))[:6]:
        for name in sorted(os.listdir(d)):
            if name.endswith((".log", ".checkpoint")):
                with MappedFile(str(d / name)) as mf:
                    for b in entries(mf.buf):
                        if not b.is_legacy and not b.is_control:
                            out += [bytes(r.value) for r in b.iter_records(mf.buf) if r.value is not None]
    return out


def test_fast_reader_equals_generic_reader_or_declines():
    fast = FastReader(list(BY_KEY.values()), enum_name)
    values = _values()
    rng = random.Random(5)
    covered = 0
    for v in values:
        mutated = [v, v[:-1], v + b"\x00"]
        if len(v) > 4:
            i = rng.randrange(3, len(v))
            mutated.append(v[:i] + bytes([v[i] ^ 0x40]) + v[i + 1:])
        for m in mutated:
            got = fast.read(m)
            try:
                msg, _ver, want = read_frame(m)
            except MetadataParseError:
                assert got is None, m.hex()
                continue
            if got is not None:
                assert got == (enum_name(msg), want), m.hex()
                covered += m is v
    assert covered > len(values) * 0.8  # the common records are on the fast path


def test_plain_batch_walk_equals_iter_records_or_declines(tmp_path):
    c = gen.Cluster(3)
    for _ in range(100):
        c.step()
    vals = gen.encode(c.records)
    shapes = [
        [RecordSpec(None, v) for v in vals[:40]],
        [RecordSpec(b"k", v) for v in vals[:5]],                     # a key: declined
        [RecordSpec(None, v, headers=[(b"h", b"x")]) for v in vals[:5]],  # headers: declined
        [RecordSpec(None, v, timestamp=1_700_000_000_000 + 10**6 * i) for i, v in enumerate(vals[:50])],
    ]
    for i, recs in enumerate(shapes):
        data = encode_batch(recs, base_offset=1000, base_timestamp=1_700_000_000_000, timestamp_type=i % 2)
        [b] = list(entries(data))
        got = md._simple_values(data, b)
        want = [(r.offset, r.timestamp, bytes(r.value), None) for r in b.iter_records(data)]
        if i in (1, 2):
            assert got is None
        else:
            assert got == want
    for count in (39, 41):  # a records count that does not match the bytes: declined (iter_records words it)
        data = encode_batch(shapes[0], base_offset=0, base_timestamp=1, records_count=count)
        [b] = list(entries(data))
        assert md._simple_values(data, b) is None
