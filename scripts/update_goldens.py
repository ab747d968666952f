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


def main() -> int:
    GOLDEN.mkdir(parents=True, exist_ok=True)
    only = set(sys.argv[1:])
    unknown = sorted(only - set(CASES))
    if unknown:  # a typo must not look like a successful regeneration
        print(f"update_goldens: no such case: {', '.join(unknown)} (the names are tests/golden_cases.py's CASES)",
              file=sys.stderr)
        return 2
    written = 0
    for name, args in CASES.items():
        if only and name not in only:
            continue
        (GOLDEN / f"{name}.txt").write_text(run_case(args))
        written += 1
    print(f"{written} golden files written in {GOLDEN}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
