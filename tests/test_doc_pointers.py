"""Pointers from the code (help texts, hints, docstrings) to the documentation lead somewhere: a named
``docs/<page>.md`` exists and a quoted section of it is one of its headings; no pointer sends a reader to a README
section that moved to docs/ (the README keeps only the sections it lists)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
POINTER = re.compile(r'docs/([a-z0-9_/-]+\.md)(?:[ \t]*\(?\\?"([^"\\\n]+)\\?"\)?)?')
README_SECTION = re.compile(r"README(?:'s| \(| \")\s*\"?([A-Za-z][^\"\)]*)")


def _headings(path: Path) -> set[str]:
    return {m.group(1).strip() for m in re.finditer(r"^#+\s+(.*)$", path.read_text(), re.M)}


def test_every_docs_pointer_names_a_page_and_a_heading() -> None:
    bad = []
    for src in sorted((ROOT / "kafkalog_cli").rglob("*.py")):
        text = src.read_text()
        for m in POINTER.finditer(text):
            page = ROOT / "docs" / m.group(1)
            if not page.is_file():
                bad.append(f"{src.name}: docs/{m.group(1)} does not exist")
                continue
            section = m.group(2)
            if section and not any(h.startswith(section) or section in h for h in _headings(page)):
                bad.append(f"{src.name}: docs/{m.group(1)} has no section {section!r}")
    assert not bad, bad


def test_no_pointer_to_a_readme_section_that_is_not_there() -> None:
    readme = _headings(ROOT / "README.md")
    bad = []
    for src in sorted((ROOT / "kafkalog_cli").rglob("*.py")):
        for m in README_SECTION.finditer(src.read_text()):
            name = m.group(1).strip()
            if not any(h.startswith(name) for h in readme):
                bad.append(f"{src.relative_to(ROOT)}: README section {name!r}")
    assert not bad, bad
