"""Every .log and KRaft .checkpoint written by a real broker (../shared/realdata) dumps with --deep-iteration
without an error, and the batch and record counts equal kafka-python's. Skipped when ../shared is absent."""

from __future__ import annotations

from pathlib import Path

import pytest
from kafka_oracle import oracle_entries
from realdata_path import REALDATA

from kafkalog_cli.ops.dump import Dumper, DumpOptions, FileError
from kafkalog_cli.versions import profile_for

FILES = sorted(REALDATA.rglob("*.log")) + sorted(REALDATA.rglob("*.checkpoint")) if REALDATA.is_dir() else []

pytestmark = pytest.mark.skipif(not FILES, reason="../shared/realdata is absent")


def test_realdata_present() -> None:
    assert len(FILES) > 100


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(REALDATA)) if REALDATA in p.parents else str(p))
def test_deep_dump_matches_kafka_python(path: Path) -> None:
    dumper = Dumper(profile_for("3.6"), DumpOptions(deep_iteration=True))
    errors = [ev.error.describe() for ev in dumper.run([str(path)]) if isinstance(ev, FileError)]
    assert errors == []
    oracle = oracle_entries(path.read_bytes())
    assert (dumper.summary.batches, dumper.summary.records) == (len(oracle), sum(len(e["records"]) for e in oracle))
