#!/usr/bin/env python3
"""Rewrite fixtures/golden/*.txt from the current code. Review ``git diff fixtures/golden`` before committing:
a golden file changes only with a reason in the commit message."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from golden import GOLDEN, run_case  # noqa: E402
from golden_cases import CASES  # noqa: E402


def main() -> None:
    GOLDEN.mkdir(parents=True, exist_ok=True)
    only = set(sys.argv[1:])
    for name, args in CASES.items():
        if only and name not in only:
            continue
        (GOLDEN / f"{name}.txt").write_text(run_case(args))
    print(f"{len(CASES)} golden files in {GOLDEN}")


if __name__ == "__main__":
    main()
