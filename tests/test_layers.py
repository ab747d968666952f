"""No upward import and no package cycle: every import in kafkalog_cli (module level, inside functions, under
TYPE_CHECKING) is checked against the layer list in docs/hacking.md ("The layers", the ``layers`` block)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "kafkalog_cli"

# Known upward edges, each with the reason it is still there. Every entry must still occur (a fixed one is removed).
ALLOWED: dict[tuple[str, str], str] = {}


def layers_from_docs() -> list[list[str]]:
    """The ``layers`` block of docs/hacking.md: one layer a line, lowest first, packages or top-level modules."""
    text = (ROOT / "docs" / "hacking.md").read_text()
    m = re.search(r"```layers\n(.*?)```", text, re.S)
    assert m, "docs/hacking.md has no ```layers block"
    out = []
    for line in m.group(1).splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            out.append(line.split())
    return out


def unit_of(module: str) -> str:
    """The layer unit of a dotted module name: its package under kafkalog_cli (or the top-level module)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""  # "": the package root itself (``from kafkalog_cli import x``)


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def imports_of(path: Path) -> list[tuple[int, str]]:
    """(line, imported module) for every import statement anywhere in the file, relative ones resolved."""
    mod = module_name(path)
    package = mod.split(".") if path.name == "__init__.py" else mod.split(".")[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for a in node.names:  # ``from kafkalog_cli.ops import verify``: the module kafkalog_cli.ops.verify
                sub = ROOT.joinpath(*f"{target}.{a.name}".split("."))
                is_module = sub.with_suffix(".py").is_file() or sub.is_dir() or target == "kafkalog_cli"
                found.append((node.lineno, f"{target}.{a.name}" if is_module else target))
    return [(line, t) for line, t in found if t == "kafkalog_cli" or t.startswith("kafkalog_cli.")]


def edges() -> list[tuple[str, int, str, str, str]]:
    """(file, line, imported module, from unit, to unit) for every import between two units."""
    out = []
    for path in sorted(PKG.rglob("*.py")):
        src = unit_of(module_name(path))
        for line, target in imports_of(path):
            dst = unit_of(target)
            if dst in ("__version__",):
                dst = ""
            if src != dst:
                out.append((str(path.relative_to(ROOT)), line, target, src, dst))
    return out


def test_every_unit_has_a_layer() -> None:
    rank = {u: i for i, layer in enumerate(layers_from_docs()) for u in layer}
    units = {unit_of(module_name(p)) for p in PKG.rglob("*.py")} | {"_accel"}
    assert not units - set(rank) - {""}, f"add these to the layers block of docs/hacking.md: {units - set(rank)}"


def test_no_upward_import() -> None:
    rank = {u: i for i, layer in enumerate(layers_from_docs()) for u in layer}
    rank[""] = -1  # the package root (``__version__``) is below everything
    bad, seen_allowed = [], set()
    for file, line, target, src, dst in edges():
        if dst in rank and rank[dst] < rank[src]:
            continue
        key = (file, target)
        if key in ALLOWED:
            seen_allowed.add(key)
            continue
        why = "same layer, other unit" if rank.get(dst) == rank.get(src) else "upward"
        bad.append(f"{file}:{line} imports {target} ({src} -> {dst}: {why})")
    assert not bad, "imports against docs/hacking.md's layers:\n" + "\n".join(bad)
    assert seen_allowed == set(ALLOWED), f"allowed edges no longer present, remove them: {set(ALLOWED) - seen_allowed}"


def test_no_package_cycle() -> None:
    graph: dict[str, set[str]] = {}
    for _file, _line, _target, src, dst in edges():
        if dst:
            graph.setdefault(src, set()).add(dst)
    cycles = []

    def visit(node: str, stack: list[str]) -> None:
        for nxt in sorted(graph.get(node, ())):
            if nxt in stack:
                cycles.append(stack[stack.index(nxt):] + [nxt])
            elif len(stack) < len(graph) + 1:
                visit(nxt, stack + [nxt])

    for start in sorted(graph):
        visit(start, [start])
    allowed_units = {(unit_of(f.replace("/", ".").removesuffix(".py")), unit_of(t)) for f, t in ALLOWED}
    real = [c for c in cycles if not any((a, b) in allowed_units for a, b in zip(c, c[1:]))]
    assert not real, f"package cycles: {sorted({' -> '.join(c) for c in real})}"


def test_the_walk_sees_function_level_and_relative_imports(tmp_path: Path) -> None:
    """The checker itself: an import inside a function and a relative one are found (else the test cannot fail)."""
    pkg = tmp_path / "kafkalog_cli" / "storage"
    pkg.mkdir(parents=True)
    (tmp_path / "kafkalog_cli" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    f = pkg / "x.py"
    f.write_text("def g():\n    from kafkalog_cli.cli import main\n\nfrom ..ops import dump\nfrom . import y\n")
    global ROOT
    saved = ROOT
    ROOT = tmp_path
    try:
        got = [t for _line, t in imports_of(f)]
    finally:
        ROOT = saved
    assert sorted(got) == ["kafkalog_cli.cli", "kafkalog_cli.ops", "kafkalog_cli.storage"]
