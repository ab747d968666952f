"""``kafkalog mcp``: a Model Context Protocol server over stdio, giving AI incident agents kafkalog's read-only
commands as tools (docs/mcp.md).

Why: when a cluster is down or lying, the evidence is on the disk, and an agent needs a safe way to read it. Each
tool call runs the kafkalog command itself (``python -m kafkalog_cli CMD --format json ...``) in a child process
with the server's first ``--root`` as working directory: the result is the command's own JSON by construction, a
call can be stopped at its timeout (the child's process group is killed), and a crash in a call cannot take the
server down. The tool table, schemas and path confinement are ``cli/mcp_tools.py``; redaction is
``render/redact.py``. Results are bounded: one page of at most ``--page-chars`` characters (dump: ``page_lines`` lines),
with a ``next_cursor``.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from kafkalog_cli.cli.common import fail, install_hint
from kafkalog_cli.cli.mcp_tools import CURSOR, LIMIT, Refused, Tool, build_tools, coerce, command_line, writes

# JSON-RPC error codes of our errors (the -32000..-32099 range is the server's own)
KAFKALOG_ERROR = -32000  # the command failed: exit 2 (usage, unreadable input, refused) or a crash
TIMEOUT = -32001
MAX_DOCUMENT = 256 << 20  # the most JSON one document-printing call may print (it is held in memory to be paged)
# the documents an agent can read (resources): the on-call guides and the pages they point at
DOC_GLOBS = ("guides/*.md", "troubleshooting.md", "recover-and-salvage.md", "explain.md", "output.md", "mcp.md",
             "verify-crc.md", "dump.md", "indexes-and-lookups.md", "replicas.md", "internal-topics.md")
EXIT_MEANING = {0: "clean", 1: "problems found (a dry run: changes pending)", 2: "usage error, unreadable input or refused"}


@dataclass(frozen=True)
class Settings:
    roots: tuple[Path, ...]
    allow_values: bool = False
    timeout: float = 120.0
    page_chars: int = 200_000
    max_calls: int = 2


@dataclass
class Outcome:
    """What one run of a command gave: its exit code (None: stopped early, a page was full), stdout, stderr."""

    code: int | None
    stdout: str
    stderr: str
    more: bool = False


def docs_dir() -> Path:
    return Path(__file__).resolve().parent.parent.parent / "docs"


def doc_resources() -> dict[str, Path]:
    """uri -> file of the docs served as resources (absent in an install without the docs: none)."""
    base = docs_dir()
    found: dict[str, Path] = {}
    for pattern in DOC_GLOBS:
        for p in sorted(base.glob(pattern)):
            found[f"kafkalog://docs/{p.relative_to(base).as_posix()}"] = p
    return found


def all_commands() -> tuple[dict[str, click.Command], dict[str, str]]:
    """Every command of cli/main.py (name -> click command) and its one-line help."""
    from kafkalog_cli.cli.main import COMMANDS, cli

    ctx = click.Context(cli)
    cmds: dict[str, click.Command] = {}
    for name in COMMANDS:
        if name == "mcp":
            continue
        cmd = cli.get_command(ctx, name)
        if cmd is not None:
            cmds[name] = cmd
    ctx.close()
    return cmds, {name: row[2] for name, row in COMMANDS.items()}


class ToolError(Exception):
    def __init__(self, code: int, message: str, data: dict[str, Any]) -> None:
        super().__init__(message)
        self.code, self.message, self.data = code, message, data


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("KAFKALOG_DEBUG", None)  # a traceback is not a result; the error line is
    env["PYTHONIOENCODING"] = "utf-8"
    env.setdefault("COLUMNS", "200")
    return env


async def run_command(argv: list[str], settings: Settings, *, skip: int = 0, limit: int | None = None) -> Outcome:
    """Run ``kafkalog ARGV`` in a child process (new process group) under the call's timeout. ``limit``: read only
    JSON lines ``[skip, skip + limit)`` (and at most a page of characters), then stop the child."""
    launcher = [sys.executable] if getattr(sys, "frozen", False) else [sys.executable, "-m", "kafkalog_cli"]
    proc = await asyncio.create_subprocess_exec(
        *launcher, *argv, cwd=str(settings.roots[0]), env=_child_env(),
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        start_new_session=True, limit=1 << 24,
    )
    assert proc.stdout is not None and proc.stderr is not None
    err_task = asyncio.ensure_future(_read_capped(proc.stderr, 1 << 20))

    async def read_all() -> tuple[str, bool]:
        assert proc.stdout is not None
        if limit is None:
            data = bytearray()
            while chunk := await proc.stdout.read(1 << 20):
                data += chunk
                if len(data) > MAX_DOCUMENT:
                    _kill(proc)
                    raise ToolError(KAFKALOG_ERROR, f"kafkalog {argv[0]} printed more than {MAX_DOCUMENT >> 20} MiB of "
                                    "JSON: stopped", {"hint": "narrow the input (one partition dir, one segment, fewer "
                                                              "problems with max_problems)", "exit_code": None})
            return data.decode("utf-8", "replace"), False
        lines: list[str] = []
        size = 0
        index = 0
        while True:
            line = await proc.stdout.readline()
            if not line:
                return "".join(lines), False
            if index >= skip:
                text = line.decode("utf-8", "replace")
                if len(lines) >= limit or (lines and size + len(text) > settings.page_chars):
                    return "".join(lines), True
                lines.append(text)
                size += len(text)
            index += 1

    try:
        out, more = await asyncio.wait_for(read_all(), settings.timeout)
        if more:
            _kill(proc)
        code = await asyncio.wait_for(proc.wait(), settings.timeout)
    except asyncio.TimeoutError:
        _kill(proc)
        await proc.wait()
        err_task.cancel()
        raise ToolError(TIMEOUT, f"kafkalog {argv[0]} did not finish within {settings.timeout:g} s: stopped",
                        {"hint": "narrow the input (one partition dir, one segment, a dump window) or start the "
                                 "server with a larger --timeout", "timeout_seconds": settings.timeout}) from None
    finally:
        if proc.returncode is None:
            _kill(proc)
    try:
        err = (await asyncio.wait_for(err_task, 5)).decode("utf-8", "replace")
    except (asyncio.TimeoutError, asyncio.CancelledError):
        err = ""
    return Outcome(None if more else code, out, err, more)


async def _read_capped(stream: asyncio.StreamReader, cap: int) -> bytes:
    """Everything until EOF, keeping the last ``cap`` bytes (the child never blocks on a full stderr pipe)."""
    kept = bytearray()
    while True:
        chunk = await stream.read(1 << 16)
        if not chunk:
            return bytes(kept)
        kept += chunk
        if len(kept) > cap:
            del kept[:len(kept) - cap]


def _kill(proc: asyncio.subprocess.Process) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def parse_json_values(text: str) -> list[Any]:
    """Every JSON value in ``text`` (one document, JSON lines, or documents one after another)."""
    dec = json.JSONDecoder()
    values: list[Any] = []
    i, n = 0, len(text)
    while True:
        while i < n and text[i].isspace():
            i += 1
        if i >= n:
            return values
        value, i = dec.raw_decode(text, i)
        values.append(value)


def error_from(outcome: Outcome, argv: list[str]) -> ToolError:
    """kafkalog's own error line and hint (``kafkalog: error: ...`` / ``hint: ...`` on stderr) as an MCP error."""
    message, hint = "", None
    for line in outcome.stderr.splitlines():
        if line.startswith("kafkalog: error: ") and not message:
            message = line[len("kafkalog: error: "):]
        elif line.startswith("Error: ") and not message:  # click's usage errors
            message = line[len("Error: "):]
        elif line.startswith("hint: ") and hint is None:
            hint = line[len("hint: "):]
    if not message:
        tail = [ln for ln in outcome.stderr.splitlines() if ln.strip()]
        message = tail[-1] if tail else f"kafkalog {argv[0]} exited {outcome.code}"
    data: dict[str, Any] = {"exit_code": outcome.code, "message": message, "hint": hint,
                            "stderr": outcome.stderr[-4000:]}
    try:
        values = parse_json_values(outcome.stdout)
    except ValueError:
        values = []
    if values:
        data["document"] = values[0] if len(values) == 1 else values
    return ToolError(KAFKALOG_ERROR, message, data)


async def call_tool(tool: Tool, args: dict[str, Any], settings: Settings) -> dict[str, Any]:
    """One tool call: the page of the command's JSON (redacted unless --allow-values), as the parts of an MCP
    CallToolResult: ``text`` (the JSON), ``structured`` (the document, when the page holds all of it), ``note``
    (exit code, stderr, the next cursor; absent when there is nothing to say), ``meta``. Raises Refused / ToolError."""
    from kafkalog_cli.render.redact import redact

    argv = command_line(tool, args, settings.roots)
    cursor = _cursor(args.get(CURSOR))
    lines = tool.spec.output == "lines"
    if lines:
        limit = int(args.get(LIMIT) or 500)
        outcome = await run_command(argv, settings, skip=cursor, limit=limit)
    else:
        outcome = await run_command(argv, settings)
    if outcome.code not in (None, 0, 1):
        raise error_from(outcome, argv)
    try:
        values = parse_json_values(outcome.stdout)
    except ValueError as exc:
        raise ToolError(KAFKALOG_ERROR, f"kafkalog {argv[0]} printed no JSON document: {exc}",
                        {"exit_code": outcome.code, "stderr": outcome.stderr[-4000:], "hint": None}) from None
    if not values and outcome.code:  # exit 1 with nothing on stdout (seek-offset: the offset is outside the log)
        raise error_from(outcome, argv)
    red = values if settings.allow_values else [redact(v) for v in values]
    changed = red != values
    next_cursor: int | None = None
    structured: Any = None
    if lines:
        text = outcome.stdout if not changed else "".join(
            json.dumps(v, ensure_ascii=False, separators=(",", ":")) + "\n" for v in red)
        if outcome.more:
            next_cursor = cursor + len(values)
        structured = {"lines": red}
    else:
        doc = red[0] if len(red) == 1 else red
        full = outcome.stdout if not changed else json.dumps(doc, ensure_ascii=False, separators=(",", ":")) + "\n"
        text = full[cursor:cursor + settings.page_chars]
        if cursor + settings.page_chars < len(full):
            next_cursor = cursor + settings.page_chars
        if cursor == 0 and next_cursor is None:
            structured = doc if isinstance(doc, dict) else {"documents": doc}
    notes: list[str] = []
    if outcome.code is not None:
        notes.append(f"exit {outcome.code}: {EXIT_MEANING.get(outcome.code, '')}")
    if next_cursor is not None:
        what = "JSON lines" if lines else "characters of the document"
        notes.append(f"more {what} follow: call again with cursor={next_cursor!s}")
    if not settings.allow_values:
        notes.append("record keys, values and header values are redacted (length + sha256)")
    if outcome.stderr.strip():
        notes.append("stderr: " + outcome.stderr.strip()[-2000:])
    meta = {"kafkalog/exit_code": outcome.code, "kafkalog/next_cursor": None if next_cursor is None else str(next_cursor),
            "kafkalog/argv": ["kafkalog", *argv], "kafkalog/redacted": not settings.allow_values}
    return {"text": text, "structured": structured, "note": "; ".join(notes), "meta": meta,
            "next_cursor": next_cursor}


def _cursor(value: Any) -> int:
    if value in (None, ""):
        return 0
    try:
        n = int(str(value))
    except ValueError:
        raise Refused(f"invalid cursor {value!r}", hint="give the next_cursor of the page before, or none") from None
    if n < 0:
        raise Refused(f"invalid cursor {value!r}", hint="give the next_cursor of the page before, or none")
    return n


def make_server(settings: Settings) -> Any:
    """The MCP server (the SDK's low-level ``Server``) with the tools and the doc resources."""
    import jsonschema
    import mcp_types as types
    from mcp.server.lowlevel import Server
    from mcp.shared.exceptions import MCPError

    from kafkalog_cli import __version__

    cmds, helps = all_commands()
    tools = build_tools(cmds, helps)
    schemas = {name: t.schema(settings.page_chars) for name, t in tools.items()}
    resources = doc_resources()
    gate = asyncio.Semaphore(settings.max_calls)

    async def list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(tools=[
            types.Tool(name=name, title=f"kafkalog {t.spec.command}", description=t.description(),
                       input_schema=schemas[name],
                       annotations=types.ToolAnnotations(read_only_hint=True, destructive_hint=False,
                                                         idempotent_hint=True, open_world_hint=False))
            for name, t in tools.items()])

    async def on_call(ctx: Any, params: Any) -> Any:
        tool = tools.get(params.name)
        if tool is None:
            raise MCPError(types.INVALID_PARAMS, f"unknown tool {params.name!r}",
                           {"hint": "tools: " + ", ".join(sorted(tools))})
        args = coerce(dict(params.arguments or {}), schemas[tool.name])
        try:
            jsonschema.validate(args, schemas[tool.name])
        except jsonschema.ValidationError as exc:
            where = "/".join(str(p) for p in exc.absolute_path)
            written = [k for k in args if writes(k)]
            if written:
                raise MCPError(types.INVALID_PARAMS,
                               f"{written[0]!r} is refused: kafkalog mcp never writes (no --execute, no output paths)",
                               {"hint": f"run `kafkalog {tool.spec.command}` yourself for that"}) from None
            raise MCPError(types.INVALID_PARAMS, f"invalid arguments for {tool.name}: {where + ': ' if where else ''}"
                           f"{exc.message}", {"hint": f"see the input schema of {tool.name} (tools/list)"}) from None
        try:
            async with gate:
                part = await call_tool(tool, args, settings)
        except Refused as exc:
            raise MCPError(types.INVALID_PARAMS, exc.message, {"hint": exc.hint}) from None
        except ToolError as exc:
            raise MCPError(exc.code, exc.message, exc.data) from None
        content: list[types.ContentBlock] = [types.TextContent(type="text", text=part["text"])]
        if part["note"]:
            content.append(types.TextContent(type="text", text="kafkalog: " + part["note"]))
        return types.CallToolResult(content=content, structured_content=part["structured"], is_error=False,
                                    _meta=part["meta"])

    async def list_resources(ctx: Any, params: Any) -> Any:
        return types.ListResourcesResult(resources=[
            types.Resource(name=uri.rsplit("/", 1)[-1], uri=uri, mime_type="text/markdown",
                           description=_title(path), size=path.stat().st_size)
            for uri, path in resources.items()])

    async def read_resource(ctx: Any, params: Any) -> Any:
        path = resources.get(str(params.uri))
        if path is None:
            raise MCPError(types.INVALID_PARAMS, f"unknown resource {params.uri!s}",
                           {"hint": "resources/list names the docs served"})
        return types.ReadResourceResult(contents=[types.TextResourceContents(
            uri=str(params.uri), mime_type="text/markdown", text=path.read_text(encoding="utf-8"))])

    instructions = ("Read-only evidence from Apache Kafka log directories on disk (no cluster needed), under: "
                    + ", ".join(str(r) for r in settings.roots)
                    + ". Start with verify_crc on a log dir or partition dir, then dump / seek_offset / recover "
                      "(dry run) as its findings say; the kafkalog://docs/guides/ resources are the on-call guides."
                    + ("" if settings.allow_values else " Record keys and values are redacted (length + sha256)."))
    return Server("kafkalog", version=__version__, title="kafkalog (read-only Kafka log-dir evidence)",
                  instructions=instructions, on_list_tools=list_tools, on_call_tool=on_call,
                  on_list_resources=list_resources, on_read_resource=read_resource)


def _title(path: Path) -> str:
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            return line.lstrip("# ").strip()
    return path.name


async def serve(settings: Settings) -> None:
    from mcp.server.stdio import stdio_server

    server = make_server(settings)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


@click.command(
    "mcp",
    epilog="""\b
Examples:
  kafkalog mcp --root /var/lib/kafka
  kafkalog mcp --root /mnt/broker1/kafka-logs --root /mnt/broker2/kafka-logs --timeout 300
  claude mcp add kafkalog -- kafkalog mcp --root /var/lib/kafka

\b
Speaks MCP over stdin/stdout (started by the agent, never by hand); docs/mcp.md has the
client configurations. Tools: verify_crc, dump, seek_offset, seek_time, recover and salvage
(dry run only), compare_replicas, transactions, explain_retention, explain_cleaner,
locate_group, locate_txn, report; nothing is ever written, no path outside the roots is read.

\b
Exit codes: 0 the client closed the connection, 2 usage error (a --root that is not a directory,
the mcp package missing).""",
)
@click.option("--root", "roots", multiple=True, required=True, type=click.Path(file_okay=False),
              help="A directory the tools may read (repeatable): paths are confined to these (symlinks resolved).")
@click.option("--allow-values", is_flag=True,
              help="Show record keys, values and header values (default: redacted to length + sha256).")
@click.option("--timeout", type=click.FloatRange(min=0.01), default=120.0, show_default=True,
              help="Seconds one tool call may run before it is stopped.")
@click.option("--page-chars", type=click.IntRange(min=1000), default=200_000, show_default=True,
              help="Most characters of JSON in one result; more is paged (cursor).")
def mcp(roots: tuple[str, ...], allow_values: bool, timeout: float, page_chars: int) -> None:
    """Serve kafkalog's read-only commands to an AI agent as MCP tools over stdio."""
    try:
        import mcp as _sdk  # noqa: F401
    except ImportError:
        fail("the MCP SDK (the 'mcp' package) is not installed", install_hint("mcp", "kafkalog mcp"))
    resolved: list[Path] = []
    for r in roots:
        real = Path(os.path.realpath(r))
        if not real.is_dir():
            fail(f"--root {r}: not a directory", "give a broker log dir (or a directory of them)")
        resolved.append(real)
    settings = Settings(tuple(resolved), allow_values=allow_values, timeout=timeout, page_chars=page_chars)
    asyncio.run(serve(settings))
