"""The real-data directory comes from $KAFKALOG_REALDATA, default ../shared/realdata (tests/realdata_path.py)."""

from __future__ import annotations

from pathlib import Path

from realdata_path import PROJECT_ROOT, realdata_root


def test_default_is_shared_realdata_beside_the_project() -> None:
    assert realdata_root({}) == PROJECT_ROOT.parent / "shared" / "realdata"
    assert realdata_root({"KAFKALOG_REALDATA": ""}) == PROJECT_ROOT.parent / "shared" / "realdata"


def test_an_absolute_value_is_taken_as_is(tmp_path: Path) -> None:
    assert realdata_root({"KAFKALOG_REALDATA": str(tmp_path)}) == tmp_path


def test_a_relative_value_is_taken_from_the_project_root() -> None:
    assert realdata_root({"KAFKALOG_REALDATA": "data/real"}) == PROJECT_ROOT / "data" / "real"
    assert realdata_root({"KAFKALOG_REALDATA": "../elsewhere"}) == PROJECT_ROOT.parent / "elsewhere"


def test_every_test_finds_realdata_through_this_module() -> None:
    """No test builds the path on its own any more (one rule, one variable)."""
    tests = Path(__file__).resolve().parent
    for path in tests.glob("*.py"):
        if path.name in ("realdata_path.py", "test_realdata_path.py"):
            continue
        # ../shared/kafka-real (the oracle's sources, tests/kafka_real.py) is not real data; only a path that ends
        # in realdata is built here
        text = path.read_text().replace('/ "shared" / "kafka-real"', "")
        assert '/ "shared"' not in text and '/ "realdata"' not in text, path
