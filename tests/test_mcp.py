"""``kafkalog mcp`` (issue 36), end to end through the MCP SDK's own stdio client: the tool list and its schemas,
every tool's result against the CLI's ``--format json``, the refusals (paths outside the roots, writing options),
errors, timeouts, pages, the docs as resources, nothing written (a read-only copy, digests before and after), and
canary strings planted in the records' keys, values and header values that never appear without --allow-values."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import os
import shutil
import stat
import struct
import subprocess
import sys
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

mcp = pytest.importorskip("mcp")

from mcp import ClientSession, StdioServerParameters, stdio_client  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402

from kafkalog_cli.cli.main import COMMANDS  # noqa: E402
from kafkalog_cli.cli.mcp_server import KAFKALOG_ERROR, TIMEOUT, all_commands, doc_resources  # noqa: E402
from kafkalog_cli.cli.mcp_tools import NOT_TOOLS, TOOLS, WRITING_PARAMS, build_tools  # noqa: E402
from kafkalog_cli.format.encoder import (  # noqa: E402
    RecordSpec,
    encode_batch,
    encode_legacy_message,
    encode_legacy_wrapper,
    reseal_crc,
)
from kafkalog_cli.format.varint import read_varint, read_varlong  # noqa: E402
from kafkalog_cli.render.redact import redact  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
INVALID_PARAMS = -32602
NOW = 1_700_000_100_000
CANARY = b"ZQXJ"  # planted in every key, value and header value below; never in a result without --allow-values


# --- the client ---------------------------------------------------------------------------------------------------

@asynccontextmanager
async def session(roots: list[Path], *flags: str):
    args = ["-m", "kafkalog_cli", "mcp", *[a for r in roots for a in ("--root", str(r))], *flags]
    params = StdioServerParameters(command=sys.executable, args=args, cwd=str(ROOT),
                                   env={"PYTHONPATH": str(ROOT), "KAFKALOG_NO_ACCEL": os.environ.get("KAFKALOG_NO_ACCEL", "")})
    async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
        await s.initialize()
        yield s


def with_server(roots: list[Path], fn, *flags: str):
    async def go():
        async with session(roots, *flags) as s:
            return await fn(s)
    try:
        return asyncio.run(go())
    except Exception as group:  # the SDK's task groups wrap what the test raised in exception groups: show it plainly
        leaf: BaseException = group
        while getattr(leaf, "exceptions", None):
            leaf = leaf.exceptions[0]  # type: ignore[attr-defined]
        raise leaf from None


async def call_all_pages(s, tool: str, args: dict) -> tuple[str, list]:
    """Every page of one call: the JSON text joined, and the results."""
    texts, results, cursor = [], [], None
    while True:
        res = await s.call_tool(tool, {**args, **({"cursor": cursor} if cursor else {})})
        results.append(res)
        texts.append(res.content[0].text)
        cursor = (res.meta or {}).get("kafkalog/next_cursor")
        if not cursor:
            return "".join(texts), results


def cli_json(cwd: Path, argv: list[str]) -> tuple[int, list]:
    """The CLI's own ``--format json`` output: exit code and every JSON value printed."""
    p = subprocess.run([sys.executable, "-m", "kafkalog_cli", *argv], cwd=cwd, capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)
    return p.returncode, json_values(p.stdout)


def json_values(text: str) -> list:
    dec, out, i = json.JSONDecoder(), [], 0
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i >= len(text):
            return out
        v, i = dec.raw_decode(text, i)
        out.append(v)


# --- the trees ----------------------------------------------------------------------------------------------------

def _scan(src: Path, out: Path) -> None:
    subprocess.run([sys.executable, "-m", "kafkalog_cli", "scan", "--records", "--jobs", "1", "--out", str(out),
                    str(src)], check=False, capture_output=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)
    assert (out / "batches").exists(), f"scan wrote no dataset into {out}"


@pytest.fixture(scope="module")
def golden(tmp_path_factory) -> Path:
    """A copy of fixtures/ (the golden inputs) plus a scan dataset of its partitions (for report)."""
    root = tmp_path_factory.mktemp("mcp-golden") / "root"
    shutil.copytree(FIXTURES, root / "fixtures", ignore=shutil.ignore_patterns("golden"))
    _scan(root / "fixtures" / "partition", root / "scan")
    return root


def examples(base: str = "fixtures") -> dict[str, list[dict]]:
    """Tool -> calls over the golden tree (paths relative to the root). Every tool must have one: a new tool
    without an example fails test_every_tool_has_an_example."""
    p = f"{base}/partition/orders-0"
    return {
        "verify_crc": [{"paths": [p]}, {"paths": [f"{base}/corrupt/bad-0"], "deep": True}, {"paths": [base]}],
        "dump": [{"paths": [f"{p}/00000000000000000000.log"], "print_data_log": True},
                 {"paths": [f"{base}/corrupt/bad-0"], "deep_iteration": True},
                 {"paths": [f"{base}/kraft/__cluster_metadata-0/00000000000000000000.log"], "cluster_metadata_decoder": True},
                 {"files": f"{p}/00000000000000000040.txnindex,{p}/00000000000000000000.index"}],
        "seek_offset": [{"partition_dir": p, "offset": 5, "print_data_log": True}, {"partition_dir": p, "offset": 999}],
        "seek_time": [{"partition_dir": p, "timestamp": "1700000005000"}],
        "recover": [{"paths": [p]}, {"paths": [f"{base}/corrupt/bad-0"], "kafka_version": "3.6"}],
        "salvage": [{"paths": [f"{base}/corrupt/bad-0"]}],
        "compare_replicas": [{"dirs": [f"{base}/sample-logdir/payments-0", f"{base}/sample-logdir/payments-1"]}],
        "transactions": [{"paths": [p], "now_ms": NOW}],
        "explain_retention": [{"paths": [p], "now_ms": NOW, "retention_ms": 1000}],
        "explain_cleaner": [{"paths": [p], "now_ms": NOW}],
        "locate_group": [{"group": "orders-app", "partitions": 12}],
        "locate_txn": [{"txn_id": "--execute"}],
        "report": [{"datasets": ["scan"]}],
        "schemas": [{"paths": [f"{base}/registry"]}, {"paths": [f"{base}/registry"], "audit": True}],
        "metadata": [{"path": f"{base}/kraft/__cluster_metadata-0"}],
        "inventory": [{"paths": [f"{base}/sample-logdir"], "metadata": f"{base}/kraft/__cluster_metadata-0"}],
        "group_history": [{"group": "orders-app", "paths": [f"{base}/groups", f"{base}/partition"]},
                          {"group": "orders-app", "paths": [f"{base}/groups"], "at": "1700000006500"},
                          {"group": "csv-source", "paths": [f"{base}/groups"], "connect": True}],
        "preflight": [{"paths": [f"{base}/sample-logdir"]},
                      {"paths": [f"{base}/sample-logdir"], "metadata": f"{base}/kraft/__cluster_metadata-0",
                       "auto_offset_reset": "earliest"}],
        "find_key": [{"key": "k1", "paths": [f"{base}/partition"], "any_partition": True, "now_ms": NOW},
                     {"key": "k1", "paths": [p], "prove_erased": True, "now_ms": NOW}],
        "audit_partitioning": [{"paths": [f"{base}/sample-logdir"]}],
    }


def timeless(v):
    """A document without its wall-clock fields (``seconds``: the only ones two runs may differ in)."""
    if isinstance(v, list):
        return [timeless(x) for x in v]
    if isinstance(v, dict):
        return {k: timeless(x) for k, x in v.items() if k != "seconds"}
    return v


def cli_argv(tool, args: dict) -> list[str]:
    """The command line a person types for the same call (independent of the server's own builder: flags by
    their option names, positionals in the command's order)."""
    argv = [tool.spec.command, "--format", "json"]
    positional: list[str] = []
    for p in tool.command.params:
        name = p.opts[0].lstrip("-").replace("-", "_") if p.param_type_name == "option" else p.name
        if name not in args:
            continue
        v = args[name]
        if p.param_type_name == "argument":
            positional.extend(map(str, v if isinstance(v, list) else [v]))
        elif v is True:
            argv.append(p.opts[0])
        else:
            argv += [p.opts[0], str(v)]
    return argv + ["--", *positional]


# --- the tool list ------------------------------------------------------------------------------------------------

def test_every_command_is_a_tool_or_says_why_not():
    """A new command (schemas, metadata, inventory, ...) must be a tool (a row of TOOLS, mcp_tools.py) or be listed in
    NOT_TOOLS with its reason: the suite fails here until one of the two is done."""
    offered = {spec.command for spec in TOOLS.values()}
    missing = [c for c in COMMANDS if c not in offered and c not in NOT_TOOLS]
    assert not missing, (f"command(s) {missing} are neither MCP tools nor excluded: add a row to TOOLS in "
                         "kafkalog_cli/cli/mcp_tools.py (read-only) or to NOT_TOOLS (with the reason), and an example "
                         "to tests/test_mcp.py examples()")
    assert not offered & set(NOT_TOOLS)


def test_every_tool_has_an_example():
    tools = build_tools(*all_commands())
    assert set(tools) == set(examples()), "every tool needs a call in examples() (and the equality test runs it)"


def test_tool_list_and_schemas_validate(golden):
    from jsonschema import Draft202012Validator

    cmds, helps = all_commands()
    listing = with_server([golden], lambda s: s.list_tools())
    by_name = {t.name: t for t in listing.tools}
    assert set(by_name) == set(build_tools(cmds, helps))
    assert {"verify_crc", "dump", "seek_offset", "seek_time", "recover", "salvage", "compare_replicas", "transactions",
            "explain_retention", "explain_cleaner", "locate_group", "report"} <= set(by_name)
    for name, tool in by_name.items():
        schema = tool.input_schema
        Draft202012Validator.check_schema(schema)
        props = schema["properties"]
        assert not set(props) & (WRITING_PARAMS | {"format", "fmt", "dry_run"}), name
        assert schema["additionalProperties"] is False
        assert tool.annotations.read_only_hint is True and tool.annotations.destructive_hint is False
        for ex in examples()[name]:
            Draft202012Validator(schema).validate(ex)
        # derived from the click command: every offered option is a property with its type and its help
        cmd = cmds[TOOLS[name].command]
        for p in cmd.params:
            key = p.opts[0].lstrip("-").replace("-", "_") if p.param_type_name == "option" else p.name
            if key in props:
                assert (p.help or "")[:20] in props[key]["description"], (name, key)
    assert "Exit codes: 0 clean, 1 problems found" in by_name["verify_crc"].description
    assert "Dry run only" in by_name["salvage"].description
    dump = by_name["dump"].input_schema["properties"]
    assert dump["print_data_log"]["type"] == "boolean" and dump["max_bytes"]["type"] == "integer"
    assert dump["gap_tracker"]["enum"] == ["scala", "java"] and "default" not in dump["kafka_version"]  # flag > $KAFKALOG_KAFKA_VERSION > files > 4.4
    assert by_name["locate_group"].input_schema["properties"]["partitions"]["minimum"] == 1
    assert by_name["seek_offset"].input_schema["required"] == ["partition_dir", "offset"]
    assert "execute" not in by_name["recover"].input_schema["properties"]
    assert "backup_dir" not in by_name["salvage"].input_schema["properties"]
    assert "out" not in by_name["report"].input_schema["properties"]


# --- results equal the CLI's JSON ---------------------------------------------------------------------------------

def _check_equal(golden: Path, allow_values: bool) -> None:
    tools = build_tools(*all_commands())

    async def run(s):
        seen = 0
        for name, calls in examples().items():
            for args in calls:
                code, want = cli_json(golden, cli_argv(tools[name], args))
                if not allow_values:
                    want = [redact(v) for v in want]
                if not want:  # the command printed its error only: the tool gives it as an MCP error
                    with pytest.raises(MCPError) as exc:
                        await s.call_tool(name, args)
                    assert exc.value.code == KAFKALOG_ERROR and exc.value.data["exit_code"] == code and code
                    seen += 1
                    continue
                text, results = await call_all_pages(s, name, args)
                got = json_values(text)
                assert timeless(got) == timeless(want), (name, args)
                if TOOLS[name].output == "document":
                    whole = want[0] if isinstance(want[0], dict) else {"documents": want[0]}
                    assert len(results) == 1 and timeless(results[0].structured_content) == timeless(whole)
                    assert results[0].meta["kafkalog/exit_code"] == code, (name, args)
                else:
                    assert results[0].structured_content == {"lines": want[:500]}
                seen += 1
        return seen

    flags = () if not allow_values else ("--allow-values",)
    assert with_server([golden], run, *flags) == sum(len(v) for v in examples().values())


def test_results_equal_the_cli_json_with_allow_values(golden):
    _check_equal(golden, allow_values=True)


def test_results_equal_the_cli_json_redacted(golden):
    _check_equal(golden, allow_values=False)


def test_errors_carry_kafkalogs_message_and_hint(golden):
    p = subprocess.run([sys.executable, "-m", "kafkalog_cli", "seek-time", "fixtures/partition/orders-0", "--", "soon"],
                       cwd=golden, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert p.returncode == 2
    message = p.stderr.splitlines()[0].removeprefix("kafkalog: error: ")
    hint = next(ln for ln in p.stderr.splitlines() if ln.startswith("hint: ")).removeprefix("hint: ")

    async def run(s):
        with pytest.raises(MCPError) as bad_time:
            await s.call_tool("seek_time", {"partition_dir": "fixtures/partition/orders-0", "timestamp": "soon"})
        with pytest.raises(MCPError) as missing:
            await s.call_tool("seek_offset", {"partition_dir": "fixtures/partition/nope-0", "offset": 1})
        with pytest.raises(MCPError) as bad_arg:
            await s.call_tool("seek_offset", {"partition_dir": "fixtures/partition/orders-0", "offset": "x"})
        return bad_time.value, missing.value, bad_arg.value

    bad_time, missing, bad_arg = with_server([golden], run)
    assert bad_time.code == KAFKALOG_ERROR and bad_time.message == message
    assert bad_time.data["hint"] == hint and bad_time.data["exit_code"] == 2
    assert missing.code == KAFKALOG_ERROR and "no such" in missing.message
    assert bad_arg.code == INVALID_PARAMS and "offset" in bad_arg.message


# --- refusals -----------------------------------------------------------------------------------------------------

def test_paths_outside_the_roots_and_writing_options_are_refused(golden, tmp_path):
    root = tmp_path / "root"
    part = root / "orders-0"
    shutil.copytree(FIXTURES / "partition" / "orders-0", part)
    outside = tmp_path / "outside"
    shutil.copytree(FIXTURES / "corrupt" / "bad-0", outside / "bad-0")
    (root / "link-out").symlink_to(outside / "bad-0")  # a partition dir outside, through a link
    (part / "00000000000000000099.log").symlink_to(outside / "bad-0" / "00000000000000000000.log")
    inner = root / "inner"
    shutil.copytree(FIXTURES / "partition" / "orders-0", inner / "orders-0")
    (root / "link-in").symlink_to(inner / "orders-0")  # a link that stays inside: allowed
    refused = [
        ("verify_crc", {"paths": [str(outside / "bad-0")]}, "outside"),
        ("verify_crc", {"paths": ["/etc/passwd"]}, "outside"),
        ("verify_crc", {"paths": ["orders-0/../../outside/bad-0"]}, ".."),
        ("verify_crc", {"paths": [".."]}, ".."),
        ("dump", {"paths": ["link-out/00000000000000000000.log"]}, "outside"),
        ("dump", {"paths": ["orders-0"]}, "symlink"),  # a directory with a link out inside it
        ("dump", {"files": "inner/orders-0/00000000000000000000.log,/etc/hostname"}, "outside"),
        ("verify_crc", {"paths": ["inner/*"]}, "pattern"),
        ("recover", {"paths": ["inner/orders-0"], "execute": True}, "never writes"),
        ("salvage", {"paths": ["inner/orders-0"], "backup_dir": str(tmp_path)}, "never writes"),
        ("report", {"datasets": ["inner"], "out": str(tmp_path / "x")}, "never writes"),
        ("recover", {"paths": ["inner/orders-0"], "format": "text"}, "not allowed"),
        ("explain_retention", {"paths": ["inner/orders-0"], "config": "/etc/hostname"}, "outside"),
    ]

    async def run(s):
        errors = []
        for tool, args, _ in refused:
            with pytest.raises(MCPError) as exc:
                await s.call_tool(tool, args)
            errors.append(exc.value)
        ok = await s.call_tool("verify_crc", {"paths": ["link-in"]})
        return errors, ok

    errors, ok = with_server([root], run)
    for (tool, args, word), err in zip(refused, errors):
        assert err.code == INVALID_PARAMS, (tool, args, err)
        assert word in err.message, (tool, args, err.message)
        assert err.data and err.data.get("hint"), (tool, args)
    assert json.loads(ok.content[0].text)["files"]


# --- bounded output and time --------------------------------------------------------------------------------------

def test_pages_join_to_the_whole_output(golden):
    seg = "fixtures/partition/orders-0/00000000000000000000.log"
    _, want = cli_json(golden, ["dump", "--format", "json", "--deep-iteration", seg])
    _, doc = cli_json(golden, ["verify-crc", "--format", "json", "fixtures"])
    doc_text = subprocess.run([sys.executable, "-m", "kafkalog_cli", "verify-crc", "--format", "json", "fixtures"],
                              cwd=golden, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}).stdout
    assert len(doc_text) > 3000

    async def run(s):
        lines, pages = await call_all_pages(s, "dump", {"paths": [seg], "deep_iteration": True, "page_lines": 7})
        text, doc_pages = await call_all_pages(s, "verify_crc", {"paths": ["fixtures"]})
        return lines, pages, text, doc_pages

    lines, pages, text, doc_pages = with_server([golden], run, "--page-chars", "1000")
    assert json_values(lines) == want and len(pages) >= -(-len(want) // 7)
    for p in pages:  # at most 7 lines and 1000 characters a page (a longer line is a page of its own)
        n = len(json_values(p.content[0].text))
        assert 1 <= n <= 7 and (len(p.content[0].text) <= 1000 or n == 1)
    assert "cursor=" in pages[0].content[1].text
    assert text == doc_text and len(doc_pages) == -(-len(doc_text) // 1000)
    assert all(len(p.content[0].text) <= 1000 for p in doc_pages)
    assert doc_pages[0].structured_content is None  # a part of a document is text only


def test_a_call_past_its_timeout_is_stopped(golden):
    async def run(s):
        with pytest.raises(MCPError) as exc:
            await s.call_tool("verify_crc", {"paths": ["fixtures"], "deep": True})
        return exc.value

    err = with_server([golden], run, "--timeout", "0.05")
    assert err.code == TIMEOUT and "did not finish within 0.05 s" in err.message and err.data["hint"]


def test_docs_are_resources(golden):
    async def run(s):
        listed = await s.list_resources()
        uri = "kafkalog://docs/guides/consumer-stuck.md"
        return [str(r.uri) for r in listed.resources], await s.read_resource(uri)

    uris, read = with_server([golden], run)
    assert set(uris) == set(doc_resources()) and "kafkalog://docs/guides/partition-wont-load.md" in uris
    assert read.contents[0].text == (ROOT / "docs" / "guides" / "consumer-stuck.md").read_text()


# --- nothing is written -------------------------------------------------------------------------------------------

def digest(top: Path) -> dict[str, tuple]:
    out = {}
    for dirpath, dirnames, filenames in os.walk(top):
        for n in dirnames + filenames:
            p = Path(dirpath, n)
            st = p.lstat()
            data = hashlib.sha256(p.read_bytes()).hexdigest() if stat.S_ISREG(st.st_mode) else None
            out[str(p.relative_to(top))] = (st.st_mode, st.st_size, st.st_mtime_ns, data)
    return out


def _read_only_mount(src: Path, dst: Path) -> bool:
    """A read-only bind mount of ``src`` at ``dst`` where this process may mount (root in a namespace); else False."""
    dst.mkdir()
    try:
        subprocess.run(["mount", "--bind", str(src), str(dst)], check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError):
        return False
    r = subprocess.run(["mount", "-o", "remount,bind,ro", str(dst)], capture_output=True)
    if r.returncode != 0:
        subprocess.run(["umount", str(dst)], capture_output=True)
        return False
    return True


def test_every_tool_over_a_read_only_copy_changes_nothing(golden, tmp_path):
    ro = tmp_path / "ro"
    shutil.copytree(golden, ro, symlinks=True)
    for dirpath, dirnames, filenames in os.walk(ro, topdown=False):
        for n in filenames + dirnames:
            os.chmod(Path(dirpath, n), os.stat(Path(dirpath, n)).st_mode & ~0o222)
    os.chmod(ro, 0o555)
    before = digest(ro)
    mounted = tmp_path / "mnt"
    roots = [mounted] if _read_only_mount(ro, mounted) else [ro]
    if roots[0] == mounted:  # even root cannot write there
        with pytest.raises(OSError):
            (mounted / "probe").write_bytes(b"x")

    async def run(s):
        n = 0
        for name, calls in examples().items():
            for args in calls:
                try:
                    await call_all_pages(s, name, args)
                except MCPError as exc:  # seek_offset past the end: the command's own error
                    assert exc.code == KAFKALOG_ERROR, (name, args, exc)
                n += 1
        return n

    try:
        assert with_server(roots, run, "--allow-values") == sum(len(v) for v in examples().values())
    finally:
        if roots[0] == mounted:
            subprocess.run(["umount", str(mounted)], capture_output=True)
        after = digest(ro)
        for dirpath, _, _ in os.walk(ro):
            os.chmod(dirpath, 0o755)  # so that pytest can remove it
    assert after == before


# --- redaction ----------------------------------------------------------------------------------------------------

def test_redaction_replaces_keys_values_and_header_values_by_length_and_hash():
    rec = {"type": "record", "offset": 3, "key": "k1", "payload": "secret", "key_b64": base64.b64encode(b"k1").decode(),
           "value_b64": base64.b64encode(b"secret").decode(), "key_size": 2, "value_size": 6,
           "headers": [{"key": "trace", "value": "t-1", "value_b64": base64.b64encode(b"t-1").decode()},
                       {"key": "none", "value": None, "value_b64": None}], "decoded": {"metadata": "m"}}
    doc = {"schema_version": 1, "record": rec, "lines": [rec]}
    out = redact(doc)
    assert doc["record"]["payload"] == "secret"  # the input is left alone
    for r in (out["record"], out["lines"][0]):
        assert r["payload"] == {"redacted": True, "length": 6, "sha256": hashlib.sha256(b"secret").hexdigest()}
        assert r["key"] == {"redacted": True, "length": 2, "sha256": hashlib.sha256(b"k1").hexdigest()}
        assert r["key_b64"] is None and r["value_b64"] is None
        assert r["headers"][0]["key"] == "trace" and r["headers"][0]["value"]["sha256"] == hashlib.sha256(b"t-1").hexdigest()
        assert r["headers"][1]["value"] is None
        assert r["decoded"]["redacted"] is True and "m" not in json.dumps(r["decoded"])
        assert r["offset"] == 3 and r["value_size"] == 6
    assert redact({"type": "record", "key": None, "payload": None}) == {"type": "record", "key": None, "payload": None}


def _canary(n: int, tag: int) -> bytes:
    token = CANARY + b"%04d" % tag
    return (token * (n // len(token) + 1))[:n]


def plant_in_place(log: Path) -> int:
    """Overwrite every key, value and header value of the uncompressed v2 data batches of ``log`` with canary bytes
    of the same length (so positions, sizes and indexes stay valid); a batch whose CRC was valid is resealed. Returns
    the number of fields planted (those of 4 bytes or more hold the whole token)."""
    data = bytearray(log.read_bytes())
    pos, planted = 0, 0
    while pos + 61 <= len(data):
        (length,) = struct.unpack_from(">i", data, pos + 8)
        end = pos + 12 + length
        if length < 49 or end > len(data) or data[pos + 16] != 2:
            break
        attrs = struct.unpack_from(">h", data, pos + 21)[0]
        if attrs & 0x07 == 0 and not attrs & 0x20:
            valid = bytes(reseal_crc(bytes(data[pos:end]))) == bytes(data[pos:end])
            p = pos + 61
            try:
                while p < end:
                    size, p = read_varint(data, p, end)
                    body_end = p + size
                    p += 1
                    _, p = read_varlong(data, p, body_end)
                    _, p = read_varint(data, p, body_end)
                    fields = []
                    klen, p = read_varint(data, p, body_end)
                    if klen > 0:
                        fields.append((p, klen))
                        p += max(klen, 0)
                    vlen, p = read_varint(data, p, body_end)
                    if vlen > 0:
                        fields.append((p, vlen))
                        p += max(vlen, 0)
                    nh, p = read_varint(data, p, body_end)
                    for _ in range(nh):
                        hk, p = read_varint(data, p, body_end)
                        p += hk
                        hv, p = read_varint(data, p, body_end)
                        if hv > 0:
                            fields.append((p, hv))
                            p += hv
                    for start, n in fields:
                        data[start:start + n] = _canary(n, planted % 10000)
                        planted += n >= 4
                    p = body_end
            except Exception:  # a damaged batch of the corrupt fixtures: what was planted stays
                pass
            if valid:
                data[pos:end] = reseal_crc(bytes(data[pos:end]))
        pos = end
    log.write_bytes(bytes(data))
    return planted


@pytest.fixture(scope="module")
def canaries(tmp_path_factory) -> Path:
    """The golden fixtures with canaries planted in place, and partitions written with canary keys, values and
    header values: plain, gzip, transactional (open and aborted), corrupt, two diverging replicas, offsets and
    transaction coordinators, and a scan dataset with --records of all of it."""
    import txn_scenarios as ts
    from partition_gen import PartitionBuilder

    from kafkalog_cli.format import codecs
    from kafkalog_cli.internal_topics import schema as sc
    from kafkalog_cli.internal_topics import schemas_group as sg

    root = tmp_path_factory.mktemp("mcp-canary") / "root"
    shutil.copytree(FIXTURES, root / "fixtures", ignore=shutil.ignore_patterns("golden"))
    planted = sum(plant_in_place(p) for p in (root / "fixtures").rglob("*.log"))
    assert planted > 100
    logs = root / "logs"
    n = iter(range(1, 10_000))

    def kv() -> tuple[bytes, bytes]:
        i = next(n)
        return b"key-" + _canary(12, i), b"value-" + _canary(40, i)

    for broker, extra in ((1, 0), (2, 3)):
        b = PartitionBuilder(str(logs / f"b{broker}" / "orders-0"))
        b.batch([kv(), kv()])
        b.batch([kv()], codec=codecs.GZIP)
        b.batch([kv(), kv()], pid=7, epoch=0, txn=True)
        b.marker(7, abort=True)
        b.segments[-1].append(encode_batch([RecordSpec(key=kv()[0], value=kv()[1], timestamp=b.ts,
                                                       headers=[("trace", _canary(16, next(n)))])],
                                           base_offset=b.next_offset))
        b.next_offset += 1
        b.roll()
        b.batch([kv()], pid=9, epoch=0, txn=True)  # left open
        for _ in range(extra):  # the second replica diverges: more records, a higher epoch
            b.batch([kv()], leader_epoch=1)
        b.write()
    corrupt = logs / "b1" / "orders-1"
    shutil.copytree(logs / "b1" / "orders-0", corrupt)
    seg = corrupt / "00000000000000000000.log"
    raw = bytearray(seg.read_bytes())
    at = raw.find(b"value-" + CANARY)
    raw[at + 8] ^= 0xFF  # inside a canary value: a CRC mismatch
    seg.write_bytes(bytes(raw))
    legacy = logs / "b1" / "legacy-0"  # v0/v1 messages, one of them in a gzip wrapper
    legacy.mkdir()
    (legacy / "00000000000000000000.log").write_bytes(
        encode_legacy_message(offset=0, key=kv()[0], value=kv()[1], magic=0)
        + encode_legacy_message(offset=1, key=kv()[0], value=kv()[1], timestamp=ts.TS)
        + encode_legacy_wrapper([(kv()[0], kv()[1], ts.TS)], offset=2, codec=codecs.GZIP))
    ts.meta(str(logs / "b1"), 1)
    key, _ = ts.offset_commit("orders-app", "orders", 0, 3)
    value = ts._pref(3, sc.encode(sg.OffsetCommitValue, {"offset": 3, "leaderEpoch": 0, "metadata": _canary(16, 2).decode(),
                                                         "commitTimestamp": ts.TS, "expireTimestamp": -1}, 3))
    ts.write_records(str(logs / "b1" / "__consumer_offsets-0"), [(key, value)])
    ts.txn_state_partition(str(logs / "b1"), [ts.txn_record("tx", 9, 0, "Ongoing", {"orders": [0]})], txn_id="tx")
    _scan(logs / "b1", root / "scan")
    return root


def canary_calls() -> dict[str, list[dict]]:
    calls = examples()
    p1, p2 = "logs/b1/orders-0", "logs/b2/orders-0"
    more = {
        "verify_crc": [{"paths": ["logs"], "deep": True}, {"paths": ["logs/b1/orders-1"], "deep": True}],
        "dump": [{"paths": [p1], "print_data_log": True}, {"paths": ["logs/b1/orders-1"], "print_data_log": True},
                 {"paths": ["logs/b1/legacy-0"], "print_data_log": True},
                 {"paths": ["logs/b1/__consumer_offsets-0"], "offsets_decoder": True},
                 {"paths": [p1], "value_decoder_class": "DefaultDecoder", "key_decoder_class": "StringDecoder"}],
        "seek_offset": [{"partition_dir": p1, "offset": o, "print_data_log": True} for o in range(0, 9)],
        "seek_time": [{"partition_dir": p1, "timestamp": "0"}],
        "recover": [{"paths": ["logs/b1/orders-1"]}, {"paths": ["logs/b1"]}],
        "salvage": [{"paths": ["logs/b1/orders-1"]}],
        "compare_replicas": [{"dirs": [p1, p2]}, {"dirs": [p1, "logs/b1/orders-1"]}],
        "transactions": [{"paths": ["logs/b1"], "now_ms": NOW}],
        "explain_retention": [{"paths": [p1], "now_ms": NOW}],
        "explain_cleaner": [{"paths": [p1, "logs/b1/orders-1"], "now_ms": NOW}],
        "report": [{"datasets": ["scan"]}],
    }
    for k, v in more.items():
        calls[k] = calls[k] + v
    return calls


async def _collect(s, calls) -> list[str]:
    seen = []
    for name, args_list in calls.items():
        for args in args_list:
            try:
                text, results = await call_all_pages(s, name, args)
                seen.append(text)
                for r in results:
                    seen.append(json.dumps(r.model_dump(mode="json")))
            except MCPError as exc:
                seen.append(json.dumps({"message": exc.message, "data": exc.data}))
    return seen


def test_canaries_never_appear_without_allow_values(canaries):
    calls = canary_calls()
    redacted = with_server([canaries], lambda s: _collect(s, calls))
    leaks = [t[:300] for t in redacted if CANARY.decode() in t]
    assert not leaks, leaks
    # the same calls with --allow-values do show them: the canaries are there to be found
    shown = with_server([canaries], lambda s: _collect(s, calls), "--allow-values")
    assert sum(CANARY.decode() in t for t in shown) >= 10
    legacy = next(t for t in shown if "legacy-0" in t and '"type":"record"' in t)
    assert legacy.count(CANARY.decode()) >= 6  # the v0, v1 and wrapped records' keys and values
    assert any("sha256" in t for t in redacted)


def test_two_roots_and_what_agents_often_send(golden):
    """Relative paths are looked up in each root in turn (the first root is the working directory); a single path
    for a list, numbers and flags as strings, and format "json" are accepted as what they mean."""
    first, second = golden / "fixtures" / "partition", golden / "fixtures" / "sample-logdir"
    _, want_replicas = cli_json(first, ["compare-replicas", "--format", "json", "--", str(second / "payments-0"),
                                        str(second / "payments-1")])
    _, want_seek = cli_json(first, ["seek-offset", "--format", "json", "--print-data-log", "--", "orders-0", "5"])

    async def run(s):
        replicas = await s.call_tool("compare_replicas", {"dirs": ["payments-0", "payments-1"]})
        seek = await s.call_tool("seek_offset", {"partition_dir": "orders-0", "offset": "5", "print_data_log": "true",
                                                 "format": "json"})
        one = await s.call_tool("verify_crc", {"paths": "orders-0"})
        when = await s.call_tool("seek_time", {"partition_dir": "orders-0", "timestamp": 1700000005000})
        return replicas, seek, one, when

    replicas, seek, one, when = with_server([first, second], run, "--allow-values")
    assert json.loads(when.content[0].text)["offset"] == 5
    assert json.loads(replicas.content[0].text) == want_replicas[0]
    assert json.loads(seek.content[0].text) == want_seek[0] and want_seek[0]["record"]["offset"] == 5
    assert [f["path"] for f in json.loads(one.content[0].text)["files"]][0].startswith("orders-0/")


def test_a_new_commands_writing_options_are_never_offered(monkeypatch):
    """A command that lands with an export or output option, before anyone looks at its tool row: the option is not
    in the schema, and sending it is refused."""
    import click

    from kafkalog_cli.cli.mcp_tools import Refused, ToolSpec, command_line

    @click.command("fake")
    @click.argument("paths", nargs=-1, type=click.Path())
    @click.option("--export-dir", type=click.Path())
    @click.option("--output", type=str)
    @click.option("--report", "report_file", type=click.File("w"))
    @click.option("--into", type=click.Path(writable=True))
    @click.option("--execute", is_flag=True)
    @click.option("--max-records", type=int)
    def fake(**kw):  # pragma: no cover - never run
        """A fake."""

    monkeypatch.setitem(TOOLS, "fake", ToolSpec("fake"))
    tools = build_tools({"fake": fake}, {"fake": "A fake."})
    assert sorted(tools["fake"].by_name()) == ["max_records", "paths"]
    for key in ("export_dir", "output", "execute", "into_out"):
        with pytest.raises(Refused, match="never writes"):
            command_line(tools["fake"], {key: "x"}, [FIXTURES])
    assert command_line(tools["fake"], {"max_records": 3}, [FIXTURES]) == ["fake", "--format", "json", "--max-records=3"]


def test_usage_errors_exit_2_with_a_hint(tmp_path):
    def run(*code_and_args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-c", *code_and_args], capture_output=True, text=True, cwd=ROOT,
                              env={**os.environ, "PYTHONPATH": str(ROOT)}, stdin=subprocess.DEVNULL, timeout=60)

    start = "import sys; from kafkalog_cli.cli.main import main; sys.argv = ['kafkalog', 'mcp', '--root', {!r}]; "
    no_sdk = run("import sys; sys.modules['mcp'] = None; " + start.format(str(tmp_path)) + "main()")
    assert no_sdk.returncode == 2 and "the MCP SDK (the 'mcp' package) is not installed" in no_sdk.stderr
    assert "pip install '.[mcp]'" in no_sdk.stderr and "Traceback" not in no_sdk.stderr
    (tmp_path / "f").write_text("x")
    not_dir = run(start.format(str(tmp_path / "f")) + "main()")
    assert not_dir.returncode == 2 and "Traceback" not in not_dir.stderr
