"""The tools of ``kafkalog mcp``: which commands they are, their input schemas, their arguments -> a command line.

Why a table: the tools are kafkalog's own read-only commands, run as they are with ``--format json`` (so a tool's
result is the command's JSON document by construction); a tool is one row of ``TOOLS``, and its input schema is
derived from the click command's own parameters (name, type, choices, range, help, default). Writing options are
never offered and refused when sent (``WRITING_PARAMS``); every path argument is confined to the server's ``--root``
directories (``confine``). ``tests/test_mcp.py`` fails when a command of ``cli/main.py`` is neither a tool here nor
listed in ``NOT_TOOLS`` with its reason, so a new read-only command shows up (or the suite says where to add it).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Any

import click

from kafkalog_cli.errors import KafkalogError


@dataclass(frozen=True)
class ToolSpec:
    """One tool: the kafkalog command it runs, how its ``--format json`` output is read, what it does not offer."""

    command: str
    output: str = "document"  # "document": one JSON document; "lines": one JSON object per line (dump)
    drop: frozenset[str] = frozenset()  # click parameter names not offered (beyond OMITTED_PARAMS)
    fixed: tuple[str, ...] = ()  # arguments always given (after --format json)
    path_list_options: frozenset[str] = frozenset()  # string options holding comma-separated paths (dump --files)
    dry_run_only: bool = False  # a writing command offered without its --execute (recover, salvage)


# tool name -> spec. A row for a command that is not in cli/main.py COMMANDS (yet) is skipped: the rows of the
# read-only commands other branches are adding (schemas, find-key, metadata, inventory, group-history, preflight)
# are here so that they show up as tools once merged.
TOOLS: dict[str, ToolSpec] = {
    "verify_crc": ToolSpec("verify-crc", drop=frozenset({"plain"})),
    "dump": ToolSpec("dump", output="lines", path_list_options=frozenset({"files_opt"})),
    "seek_offset": ToolSpec("seek-offset", drop=frozenset({"verbose"})),
    "seek_time": ToolSpec("seek-time", drop=frozenset({"verbose"})),
    "recover": ToolSpec("recover", dry_run_only=True),
    "salvage": ToolSpec("salvage", dry_run_only=True),
    "compare_replicas": ToolSpec("compare-replicas"),
    "transactions": ToolSpec("transactions"),
    "explain_retention": ToolSpec("explain-retention"),
    "explain_cleaner": ToolSpec("explain-cleaner"),
    "locate_group": ToolSpec("locate-group"),
    "locate_txn": ToolSpec("locate-txn"),
    # the fleet report over scan datasets; --replicas would write its divergence dataset (--out): not offered
    "report": ToolSpec("report", drop=frozenset({"replicas", "broker_ids", "engine", "master", "confs"})),
    "schemas": ToolSpec("schemas"),
    "find_key": ToolSpec("find-key"),
    "audit_partitioning": ToolSpec("audit-partitioning", drop=frozenset({"engine", "master"})),  # no Spark from MCP
    "metadata": ToolSpec("metadata"),
    "inventory": ToolSpec("inventory"),
    # --all-groups would take GROUP as a path the server cannot confine; the --emit-* options write files
    "group_history": ToolSpec("group-history", drop=frozenset({"all_groups", "emit_reset", "emit_patch"})),
    "preflight": ToolSpec("preflight"),
}

# commands that are not tools, and why (tests/test_mcp.py: every command is in TOOLS or here)
NOT_TOOLS: dict[str, str] = {
    "compact": "a repair (writes segments); explain-cleaner is its read-only view",
    "truncate-to-epoch": "a repair (truncates a partition)",
    "rebuild-index": "a repair (writes indexes)",
    "scan": "writes Parquet datasets (--out); report reads them",
    "export": "writes files (NDJSON, Parquet or partition directories under --out)",
    "completion": "prints a shell script, no evidence",
    "mcp": "this server",
    "replay": "writes to a live cluster (produces records; --execute)",
}

# parameters never offered: the output format is always json; the others write, or choose text-only output
WRITING_PARAMS = frozenset({"execute", "backup_dir", "no_backup", "rewrite_valid", "out_dir", "out"})
OMITTED_PARAMS = WRITING_PARAMS | {"fmt", "format"}
# arguments of the server itself, on every tool
CURSOR, LIMIT = "cursor", "page_lines"  # never a command option's name (Tool.schema checks)


class Refused(KafkalogError):
    """A tool call the server will not run (a path outside the roots, a writing option): message and hint."""


@dataclass
class Tool:
    """A tool as served: its name, command, the click parameters it offers, its JSON schema."""

    name: str
    spec: ToolSpec
    command: click.Command
    params: list[click.Parameter] = field(default_factory=list)
    help: str = ""

    def by_name(self) -> dict[str, click.Parameter]:
        """argument name -> click parameter (an option is named by its long flag, ``--bootstrap-server`` ->
        ``bootstrap_server``; a positional argument by its click name)."""
        return {arg_name(p): p for p in self.params}

    def schema(self, page_chars: int) -> dict[str, Any]:
        props: dict[str, Any] = {}
        required: list[str] = []
        for name, p in self.by_name().items():
            if name in (CURSOR, LIMIT):
                raise ValueError(f"{self.spec.command}'s {name!r} clashes with the server's own argument: rename it here")
            props[name] = param_schema(p, self.spec)
            if p.required:
                required.append(name)
        props[CURSOR] = {"type": "string", "description": "Where the next page starts: the next_cursor of the page before "
                                                            "(results are bounded; absent: the first page)."}
        if self.spec.output == "lines":
            props[LIMIT] = {"type": "integer", "minimum": 1, "maximum": 10_000, "default": 500,
                            "description": f"Most JSON lines in this page (and at most {page_chars} characters)."}
        schema: dict[str, Any] = {"type": "object", "properties": props, "additionalProperties": False}
        if required:
            schema["required"] = required
        return schema

    def description(self) -> str:
        text = self.help
        body = " ".join((self.command.help or "").replace("\b", "").split("Example")[0].split())
        if body and body != text:
            text += " " + body
        codes = [ln.strip() for ln in (self.command.epilog or "").replace("\b", "").split("\n\n")
                 if ln.strip().startswith("Exit codes")]
        if codes:
            text += " " + " ".join(codes[0].split())
        if self.spec.dry_run_only:
            text += " Dry run only: the plan of what --execute would do; this server never executes it."
        if self.spec.output == "lines":
            text += " The result is the command's JSON lines, a page at a time (cursor, page_lines)."
        return text + f" Runs `kafkalog {self.spec.command} --format json`; paths must lie inside the server's --root dirs."


def arg_name(p: click.Parameter) -> str:
    if isinstance(p, click.Option):
        longs = [o for o in p.opts if o.startswith("--")] or p.opts
        return longs[0].lstrip("-").replace("-", "_")
    return p.name or ""


_WRITING_WORDS = re.compile(r"(^|_)(execute|out|output|export|write|backup|save|dest|destination)(_|$)")


def writes(name: str, p: click.Parameter | None = None) -> bool:
    """Whether a parameter (or an argument name an agent sent) is a writing one: a name of ``WRITING_PARAMS``, a
    name with a writing word (``--export-dir``, ``--output``), or a writable ``click.Path`` / ``click.File`` -- so a
    new command's writing option is never offered even before its tool row says so."""
    name = name.replace("-", "_").lstrip("_")
    if name in WRITING_PARAMS or _WRITING_WORDS.search(name):
        return True
    if p is not None:
        t = p.type
        if isinstance(t, click.Path) and t.writable:
            return True
        if isinstance(t, click.File) and any(c in t.mode for c in "wax+"):
            return True
    return False


def _offered(p: click.Parameter, spec: ToolSpec) -> bool:
    if p.name in OMITTED_PARAMS or p.name in spec.drop or getattr(p, "hidden", False):
        return False
    return not (isinstance(p, click.Option) and (writes(p.name or "", p) or writes(arg_name(p))))


def build_tools(commands: dict[str, click.Command], helps: dict[str, str]) -> dict[str, Tool]:
    """The tools whose command exists (``commands``: name -> click command, of cli/main.py)."""
    tools: dict[str, Tool] = {}
    for name, spec in TOOLS.items():
        cmd = commands.get(spec.command)
        if cmd is None:
            continue
        params = [p for p in cmd.params if _offered(p, spec)]
        tools[name] = Tool(name, spec, cmd, params, helps.get(spec.command, "") or (cmd.help or "").split("\n")[0])
    return tools


def _is_path(p: click.Parameter, spec: ToolSpec) -> bool:
    return isinstance(p.type, click.Path) or p.name in spec.path_list_options


def param_schema(p: click.Parameter, spec: ToolSpec) -> dict[str, Any]:
    """The JSON schema of one click parameter: type, enum, range, description (the option's help), default."""
    t = p.type
    item: dict[str, Any]
    is_flag = isinstance(p, click.Option) and p.is_flag and not p.count
    if is_flag or isinstance(t, click.types.BoolParamType):
        item = {"type": "boolean"}
    elif isinstance(t, click.Choice):
        item = {"type": "string", "enum": [str(c) for c in t.choices]}
    elif isinstance(t, click.types.IntParamType):
        item = {"type": "integer"}
    elif isinstance(t, click.types.FloatParamType):
        item = {"type": "number"}
    else:
        item = {"type": "string"}
    if isinstance(t, click.types._NumberRangeBase):
        if t.min is not None:
            item["exclusiveMinimum" if t.min_open else "minimum"] = t.min
        if t.max is not None:
            item["exclusiveMaximum" if t.max_open else "maximum"] = t.max
    many = (isinstance(p, click.Argument) and p.nargs == -1) or (isinstance(p, click.Option) and p.multiple)
    schema: dict[str, Any] = {"type": "array", "items": item} if many else dict(item)
    if many and p.required:
        schema["minItems"] = 1
    words: list[str] = []
    if isinstance(p, click.Option):
        words.append(f"{p.opts[0]}: {p.help or ''}".strip())
    else:
        words.append(f"{(p.human_readable_name or p.name or '').upper()} (argument)")
    if _is_path(p, spec):
        words.append("A path inside a --root dir: absolute, or relative to the first --root that has it"
                     + (" (comma-separated)." if p.name in spec.path_list_options else "."))
    schema["description"] = " ".join(w for w in words if w)
    default = p.default
    if not is_flag and not many and isinstance(default, str | int | float) and not isinstance(default, bool):
        schema["default"] = default
    return schema


def coerce(args: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """What agents often send, made what the schema says: a single path where a list is wanted (``"paths": "x"``),
    a number or a flag as a string (``"offset": "5"``, ``"deep": "true"``), a number for a string
    (``"timestamp": 1700000000000``); ``format: "json"`` (the only format) is
    dropped. Anything else is left for the schema's validation to refuse."""
    props = schema.get("properties", {})
    out: dict[str, Any] = {}
    for key, value in args.items():
        if key == "format" and value == "json":
            continue
        want = props.get(key, {})
        if want.get("type") == "array" and not isinstance(value, list):
            value = [value]
        item = want.get("items", {}) if want.get("type") == "array" else want
        if isinstance(value, list):
            value = [_coerce_one(v, item) for v in value]
        else:
            value = _coerce_one(value, item)
        out[key] = value
    return out


def _coerce_one(value: Any, want: dict[str, Any]) -> Any:
    kind = want.get("type")
    if kind == "string" and isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)  # seek_time's timestamp sent as a number
    if not isinstance(value, str):
        return value
    text = value.strip()
    if kind == "integer" and text.lstrip("-").isdigit():
        return int(text)
    if kind == "number":
        try:
            return float(text)
        except ValueError:
            return value
    if kind == "boolean" and text.lower() in ("true", "false"):
        return text.lower() == "true"
    return value


# --- arguments -> a command line --------------------------------------------------------------------------------

def command_line(tool: Tool, args: dict[str, Any], roots: Sequence[Path]) -> list[str]:
    """The argv (after ``kafkalog``) of one call: ``--format json``, the options as ``--name=value``, then ``--`` and
    the positional arguments (so a value starting with '-' is never read as an option). Paths are confined."""
    by_name = tool.by_name()
    for key in args:
        if key in (CURSOR, LIMIT):
            continue
        if writes(key):
            raise Refused(f"{key!r} is refused: kafkalog mcp never writes (no --execute, no output paths)",
                          hint=f"run `kafkalog {tool.spec.command}` yourself for that; this tool gives the dry run")
        if key not in by_name:
            raise Refused(f"unknown argument {key!r} for {tool.name}",
                          hint=f"the arguments of {tool.name} are: {', '.join(sorted(by_name))}")
    argv = [tool.spec.command, "--format", "json", *tool.spec.fixed]
    positional: list[str] = []
    for name, p in by_name.items():
        if args.get(name) is None:
            continue
        value = args[name]
        values = list(value) if isinstance(value, list | tuple) else [value]
        if _is_path(p, tool.spec):
            values = [confine_list(str(v), roots) if p.name in tool.spec.path_list_options else confine(str(v), roots)
                      for v in values]
        if isinstance(p, click.Argument):
            positional.extend(_text(v) for v in values)
            continue
        assert isinstance(p, click.Option)
        if p.is_flag and not p.count:
            if value is True:
                argv.append(p.opts[0])
            elif value is False and p.secondary_opts:
                argv.append(p.secondary_opts[0])
            continue
        argv.extend(f"{p.opts[0]}={_text(v)}" for v in values)
    return [*argv, "--", *positional] if positional else argv


def _text(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


# --- paths ------------------------------------------------------------------------------------------------------

TREE_LIMIT = 500_000  # entries walked under one directory argument before the call is refused as too large


def _inside(path: str, roots: Sequence[Path]) -> bool:
    return any(path == str(r) or path.startswith(str(r).rstrip(os.sep) + os.sep) for r in roots)


def confine(value: str, roots: Sequence[Path]) -> str:
    """``value`` as the command gets it, once it is known to stay inside ``roots`` (real paths): no ``..``, no NUL,
    an absolute path only inside a root, a relative one taken from the first root that has it (the server's working
    directory is the first root, so a path in it is passed as given, one in another root as that root's absolute
    path); the path and, for a directory, every symlink under it must resolve inside a root. Raises ``Refused``."""
    if not value or "\x00" in value:
        raise Refused(f"invalid path {value!r}", hint="give a path inside one of the --root dirs")
    if ".." in PurePath(value).parts:
        raise Refused(f"path {value!r} contains '..': refused", hint="give the path from a --root dir down, without '..'")
    path = Path(value)
    if path.is_absolute():
        candidates = [(path, value)]
    else:
        candidates = [(r / path, value if i == 0 else str(r / path)) for i, r in enumerate(roots)]
        existing = [c for c in candidates if os.path.lexists(c[0])]
        candidates = existing[:1] or candidates[:1]
    full, given = candidates[0]
    real = os.path.realpath(full)
    if not _inside(real, roots):
        where = f" (it resolves to {real})" if real != os.path.normpath(str(full)) else ""
        raise Refused(f"path {value!r} is outside the --root dirs{where}: refused",
                      hint="the server reads only under: " + ", ".join(str(r) for r in roots))
    if not os.path.lexists(full) and any(ch in value for ch in "*?["):
        raise Refused(f"path {value!r} is a pattern: refused", hint="give the directory or file itself, not a glob")
    if os.path.isdir(real):
        _check_tree(real, roots)
    return given


def confine_list(value: str, roots: Sequence[Path]) -> str:
    """A comma-separated list of paths (dump --files), each confined."""
    return ",".join(confine(v, roots) for v in value.split(",") if v)


def _check_tree(top: str, roots: Sequence[Path]) -> None:
    """Every symlink under ``top`` (and under the directories it leads to) must resolve inside ``roots``: a command
    reading a directory reads what its links point at."""
    seen: set[str] = set()
    todo = [top]
    count = 0
    while todo:
        d = todo.pop()
        if d in seen:
            continue
        seen.add(d)
        for dirpath, dirnames, filenames in os.walk(d, followlinks=False):
            for name in dirnames + filenames:
                count += 1
                if count > TREE_LIMIT:
                    raise Refused(f"{top} has more than {TREE_LIMIT} entries: refused",
                                  hint="give a partition directory or a smaller log dir")
                p = os.path.join(dirpath, name)
                if os.path.islink(p):
                    real = os.path.realpath(p)
                    if not _inside(real, roots):
                        raise Refused(f"{p} is a symlink to {real}, outside the --root dirs: refused",
                                      hint="the server reads only under: " + ", ".join(str(r) for r in roots))
                    if os.path.isdir(real):
                        todo.append(real)
