"""``dump --max-bytes`` / ``--max-message-size`` against Kafka's own DumpLogSegments, byte for byte (issue 26).

Generated partitions (tests/oracle_plans.py; every third on a v0/v1 topic, compressed wrappers included), every
``.log`` with ``--max-bytes`` at 0, 1, 70, half, one byte short of and past its size (a cut inside a header, inside
a batch and at a batch end), each with and without ``--deep-iteration`` / ``--print-data-log``, and
``--max-message-size`` 1, 50 and 200 with ``--deep-iteration`` (the decoder's limit for a legacy wrapper's inner
messages): stdout and stderr must equal the tool's (tests/dump_oracle.py's rule). 4.0 is kafka-real's Dump in the
Batch JVM; the releases 3.9, 3.6 and 2.8 (``kafka-real/versions``, a JVM a call) run a smaller set, ``--max-bytes``
only where the release has it (3.3+). Marker ``oracle``.
"""

from __future__ import annotations

from pathlib import Path

import dump_oracle as do
import oracle_damage as od
import pytest
from kafka_real import write_partition
from oracle_plans import plan, seeds

pytestmark = pytest.mark.oracle


def _partition(kafka_real, tmp_path: Path, seed: int) -> Path:
    p = plan(seed)
    if seed % 3 == 2:
        p = od.legacy(p, seed % 2)
    return write_partition(kafka_real, tmp_path / f"w{seed}", p)


#: the releases whose DumpLogSegments has --max-bytes (KIP-824, 3.3.0); kafkalog accepts it with every version
#: (docs/dump.md), where 2.8's and 3.0's tools stop with joptsimple's UnrecognizedOptionException
HAS_MAX_BYTES = ("4.0", "3.9", "3.6")


def _option_sets(f: Path, small: bool, version: str) -> list[list[str]]:
    size = f.stat().st_size
    cuts = sorted({0, size // 2, size + 5} if small else {0, 1, 70, size // 2, size - 1, size + 5})
    modes = ([], ["--deep-iteration", "--print-data-log"]) if small else \
        ([], ["--deep-iteration"], ["--deep-iteration", "--print-data-log"])
    out = [["--max-bytes", str(mb), *m] for mb in cuts for m in modes] if version in HAS_MAX_BYTES else []
    out += [["--max-message-size", str(mm), "--deep-iteration"] for mm in ((50,) if small else (1, 50, 200))]
    return out


def _run(kafka_real, kafka_dump_tool, tmp_path: Path, seed: int, version: str) -> int:
    part = _partition(kafka_real, tmp_path, seed)
    logs = sorted(part.glob("*.log"))
    small = version != "4.0"
    problems, n = [], 0
    for f in logs[-1:] if small else logs:
        for opts in _option_sets(f, small, version):
            args = ["--files", str(f), *opts]
            d = do.compare(kafka_real, args, version, kafka_dump_tool)
            n += 1
            if d:
                problems.append(f"[seed {seed}, {version}] {' '.join(opts)} {f.name}\n{d}")
    assert not problems, "\n\n".join(problems[:6])
    return n


@pytest.mark.parametrize("seed", seeds(6, base=70_000))
def test_max_bytes_and_max_message_size_as_kafka_40(kafka_real, kafka_dump_tool, tmp_path, seed):
    assert _run(kafka_real, kafka_dump_tool, tmp_path, seed, "4.0") > 0


@pytest.mark.parametrize("version", ["3.9", "3.6", "2.8"])
def test_max_bytes_and_max_message_size_as_each_release(kafka_real, kafka_dump_tool, tmp_path, version):
    for seed in (70_001, 70_002):  # a v2 topic and a v0/v1 one
        assert _run(kafka_real, kafka_dump_tool, tmp_path / str(seed), seed, version) > 0


@pytest.mark.oracle_long
@pytest.mark.parametrize("seed", seeds(60, base=170_000))
def test_max_bytes_and_max_message_size_long(kafka_real, kafka_dump_tool, tmp_path, seed):
    for version in ("4.0", "3.9", "3.6", "3.0", "2.8"):
        _run(kafka_real, kafka_dump_tool, tmp_path / version, seed, version)
