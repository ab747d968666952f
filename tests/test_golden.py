"""Golden-output tests: every case in golden_cases.CASES must reproduce fixtures/golden/<name>.txt exactly."""

from __future__ import annotations

import pytest
from golden import GOLDEN, run_case
from golden_cases import CASES


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden(name: str) -> None:
    expected = (GOLDEN / f"{name}.txt").read_text()
    assert run_case(CASES[name]) == expected


def test_every_golden_file_has_a_case() -> None:
    files = {p.stem for p in GOLDEN.glob("*.txt")}
    assert files == set(CASES), "stale or missing golden files: run scripts/update_goldens.py"
