#!/usr/bin/env python3
"""Regenerate completions/kafkalog.bash, completions/_kafkalog (zsh) and completions/kafkalog.fish.

The checked-in scripts are what packagers and operators copy into their shells' completion directories; they are
generated from the live command tree so they cannot drift (``tests/test_completion.py`` regenerates and compares).

Usage: python scripts/gen_completions.py [--check]   (--check: exit 1 and name the stale files, write nothing)
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kafkalog_cli.cli.completion import completion_source  # noqa: E402
from kafkalog_cli.cli.main import cli  # noqa: E402

# shell -> file name, following each shell's convention for lazily loaded completions
FILES: dict[str, str] = {"bash": "kafkalog.bash", "zsh": "_kafkalog", "fish": "kafkalog.fish"}


def expected() -> dict[Path, str]:
    """Path of each checked-in script -> the text it should contain."""
    return {ROOT / "completions" / name: completion_source(shell, cli) for shell, name in FILES.items()}


def main(argv: list[str]) -> int:
    check = "--check" in argv
    stale = []
    for path, text in expected().items():
        current = path.read_text() if path.exists() else None
        if current == text:
            continue
        stale.append(path)
        if not check:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    for path in stale:
        print(f"{'stale' if check else 'wrote'}: {path.relative_to(ROOT)}")
    return 1 if check and stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
