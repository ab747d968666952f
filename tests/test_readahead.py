"""Readahead hints of the whole-file walks (issue 20): verify-crc maps a segment with MADV_SEQUENTIAL, which the
kernel shows as the ``sr`` flag of the mapping in /proc/self/smaps; random-access users of MappedFile do not."""

from __future__ import annotations

import os
import sys

import pytest

from kafkalog_cli.format.encoder import RecordSpec, encode_batch
from kafkalog_cli.ops.verify import verify_segment
from kafkalog_cli.storage.segment import MappedFile

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux") or not os.path.exists("/proc/self/smaps"),
                                reason="needs Linux /proc/self/smaps")


def _flags(path: str) -> set[str] | None:
    """VmFlags of this process's mapping of ``path``, or None when it is not mapped."""
    current = None
    with open("/proc/self/smaps") as f:
        for line in f:
            if not line[:1].isupper() or ":" not in line.split()[0]:
                current = line.rstrip("\n").endswith(" " + path)
            elif current and line.startswith("VmFlags:"):
                return set(line.split()[1:])
    return None


def _segment(tmp_path) -> str:  # noqa: ANN001
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(b"".join(encode_batch([RecordSpec(b"k", b"v" * 100)] * 10, base_offset=10 * i) for i in range(50)))
    return str(path)


def test_verify_walk_maps_the_segment_sequential(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.delenv("KAFKALOG_NO_READAHEAD", raising=False)
    path = _segment(tmp_path)
    seen: list[set[str] | None] = []

    class Probe:
        def on_entry(self, *_a: object) -> None:
            if not seen:
                seen.append(_flags(path))

    report = verify_segment(path, indexes=False, extra_observers=[Probe()])
    assert not report.problems
    assert seen and seen[0] is not None, "the segment is not mapped (pread fallback?)"
    assert "sr" in seen[0]


def test_plain_mapping_has_no_sequential_hint(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    path = _segment(tmp_path)
    with MappedFile(path):
        flags = _flags(path)
        if flags is None:
            pytest.skip("not mapped here (pread fallback)")
        assert "sr" not in flags
    monkeypatch.setenv("KAFKALOG_NO_READAHEAD", "1")
    with MappedFile(path) as mf:
        mf.advise_sequential()
        assert "sr" not in (_flags(path) or set())
