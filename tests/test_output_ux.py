"""Issue 19 "Output": next steps tied to the cause, one error format, no internal document numbers in what users
read, readable reports on an 80-column terminal, install hints that never point at PyPI."""

from __future__ import annotations

import ast
import json
import os
import pathlib
import subprocess
import sys

import pytest
from click.testing import CliRunner
from partition_gen import mark_clean_shutdown, random_partition

import kafkalog_cli
from kafkalog_cli.cli.main import cli

NOW = 1_800_000_000_000
PKG = pathlib.Path(kafkalog_cli.__file__).parent


def run(*args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(cli, list(args))
    return res.exit_code, res.stdout, res.stderr


def torn(tmp_path) -> str:
    """A partition whose first segment ends in 13 bytes of a cut-off append (a torn write), later segments intact."""
    pdir = str(tmp_path / "logs" / "orders-0")
    random_partition(pdir, 1)
    with open(os.path.join(pdir, f"{0:020d}.log"), "ab") as f:
        f.write(bytes(8) + b"\x00\x00\x01\x00\x00")
    return pdir


def test_compact_on_a_torn_write_points_at_recover_and_salvage_not_the_txnindex(tmp_path):
    pdir = torn(tmp_path)
    code, _out, err = run("compact", "--now-ms", str(NOW), pdir)
    assert code == 2
    lines = err.splitlines()
    assert lines[0].startswith("kafkalog: error: ") and "torn write" in lines[0]
    assert lines[1].startswith("hint: ")
    assert "salvage" in lines[1] and "kafkalog recover" in lines[1] and ".txnindex" not in lines[1]


def test_compact_refusing_a_missing_txnindex_entry_points_at_rebuild_index(tmp_path):
    pdir = str(tmp_path / "logs" / "t-0")
    random_partition(pdir, 3, drop_txn_entries=1)
    mark_clean_shutdown(pdir)  # after a crash the start-up recovery would rebuild the .txnindex first (Kafka's too)
    code, _out, err = run("compact", "--now-ms", str(NOW), pdir)
    assert code == 2 and "do not record" in err
    assert "hint: " in err and "rebuild-index" in err.split("hint: ", 1)[1]
    # and the hint is right: after rebuild-index --execute, compact runs
    code2, _o, err2 = run("rebuild-index", "--execute", "--backup-dir", str(tmp_path / "bk"), pdir)
    assert code2 == 0, err2
    code3, _o, err3 = run("compact", "--now-ms", str(NOW), pdir)
    assert code3 in (0, 1), err3


def test_verify_crc_says_what_the_broker_does_and_which_command_previews_it(tmp_path):
    pdir = torn(tmp_path)
    code, out, _err = run("verify-crc", pdir)
    assert code == 1
    nxt = [x for x in out.splitlines() if x.startswith("next: ")]
    assert len(nxt) == 1 and f"kafkalog recover {pdir}" in nxt[0] and f"kafkalog salvage {pdir}" in nxt[0]
    assert out.splitlines()[-1].startswith("PROBLEMS:")
    code, out, _err = run("verify-crc", "--format", "json", pdir)
    assert code == 1 and json.loads(out)["next_steps"] == [n[len("next: "):] for n in nxt]


def test_clean_partition_has_no_next_step(tmp_path):
    pdir = str(tmp_path / "logs" / "orders-0")
    random_partition(pdir, 2)
    code, out, _err = run("verify-crc", pdir)
    assert code == 0 and "next:" not in out


def _in_pty(args: list[str], columns: int, env: dict[str, str] | None = None) -> str:
    """Run kafkalog with stdout on a pseudo-terminal of ``columns`` columns (``env`` over the defaults); return what
    it printed."""
    import fcntl
    import pty
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    env = {**os.environ, "COLUMNS": str(columns), "LINES": "50", "NO_COLOR": "1", **(env or {})}
    proc = subprocess.Popen([sys.executable, "-m", "kafkalog_cli", *args], stdout=slave, stderr=subprocess.DEVNULL,
                            env=env)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=60)
    os.close(master)
    return b"".join(chunks).decode("utf-8", "replace")


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pty")
def test_verify_report_on_80_columns_is_one_problem_per_line_and_a_table_on_200(tmp_path):
    pdir = torn(tmp_path)
    narrow = _in_pty(["verify-crc", pdir], 80)
    assert "┃" not in narrow and "error truncated:" in narrow and "next: " in narrow
    wide = _in_pty(["verify-crc", pdir], 200)
    assert "┃" in wide and "next:" in wide
    plain = _in_pty(["verify-crc", "--plain", pdir], 200)
    assert "┃" not in plain and "error truncated:" in plain


def _user_strings(path: pathlib.Path) -> list[tuple[int, str]]:
    """String constants that are not docstrings (messages, help texts, hints)."""
    tree = ast.parse(path.read_text())
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, ast.Module | ast.FunctionDef | ast.ClassDef | ast.AsyncFunctionDef)
            and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    return [(n.lineno, n.value) for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs]


def test_no_internal_document_numbers_and_no_pypi_hint_in_user_facing_text():
    import re

    bad = re.compile(r"errata|spec ?§|§ ?\d|\bE\d{1,2}\b|pip install kafkalog|pip install 'kafkalog")
    found = [f"{p.relative_to(PKG)}:{line}: {s[:80]!r}" for p in sorted(PKG.rglob("*.py"))
             for line, s in _user_strings(p) if bad.search(s)]
    assert not found, found


@pytest.mark.parametrize("args", [
    ["explain-retention", "/nonexistent/orders-0"],
    ["transactions", "/nonexistent/__transaction_state-0"],
    ["locate-group", ""],
    ["seek-offset", "/nonexistent/orders-0", "5"],
])
def test_errors_have_one_format(args):
    code, _out, err = run(*args)
    assert code == 2, err
    lines = err.splitlines()
    assert lines[0].startswith("kafkalog: error: "), err
    assert len(lines) > 1 and lines[1].startswith("hint: "), err


def test_seek_past_the_end_is_an_error_line_with_a_hint(tmp_path):
    pdir = str(tmp_path / "logs" / "orders-0")
    random_partition(pdir, 2)
    code, _out, err = run("seek-offset", pdir, "999999")
    assert code == 1
    assert err.startswith("kafkalog: error: ") and "\nhint: " in err


def test_install_hints_never_point_at_pypi_and_name_the_binary(monkeypatch):
    from kafkalog_cli.cli.common import install_hint

    text = install_hint("spark", "the Spark engine")
    assert "pip install '.[spark]'" in text and "kafkalog[" not in text
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    frozen = install_hint("spark", "the Spark engine")
    assert "not in the single-file binary" in frozen


def _keys(obj) -> set[str]:  # noqa: ANN001
    """Every key of a JSON value, except inside Kafka's own decoded data (``decoded``/``data``/``key``/``value``)."""
    if isinstance(obj, list):
        return set().union(*(_keys(x) for x in obj)) if obj else set()
    if isinstance(obj, dict):
        out = set(obj)
        for k, v in obj.items():
            if k not in ("decoded", "data", "key", "value", "index_mismatches", "timestamp_mismatches",
                         "out_of_order_timestamps", "indexed_offsets_not_found", "non_consecutive_offsets"):
                out |= _keys(v)
        return out
    return set()


def test_every_json_document_is_snake_case_and_versioned(tmp_path):
    import re

    from kafkalog_cli.render.jsondoc import SCHEMA_VERSION

    pdir = str(tmp_path / "logs" / "orders-0")
    random_partition(pdir, 2)
    docs = []
    for args in (["verify-crc", pdir], ["compact", "--now-ms", str(NOW), pdir], ["rebuild-index", pdir],
                 ["recover", pdir], ["salvage", pdir], ["seek-offset", pdir, "3"], ["seek-time", pdir, "0"],
                 ["locate-group", "g1"], ["locate-txn", "t1"], ["explain-retention", pdir],
                 ["explain-cleaner", pdir], ["transactions", pdir], ["truncate-to-epoch", "--to-offset", "5", pdir],
                 ["compare-replicas", pdir, pdir]):
        code, out, err = run(*args, "--format", "json")
        assert code in (0, 1), (args, err)
        docs.append((args[0], json.loads(out)))
    code, out, err = run("dump", "--format", "json", "--deep-iteration", "--print-data-log", pdir)
    lines = [json.loads(x) for x in out.splitlines()]
    assert lines[0]["type"] == "file" and lines[0]["schema_version"] == SCHEMA_VERSION
    assert lines[-1]["type"] == "summary" and lines[-1]["schema_version"] == SCHEMA_VERSION
    camel = re.compile(r"[a-z][A-Z]")
    for name, doc in docs:
        for d in doc if isinstance(doc, list) else [doc]:
            assert d["schema_version"] == SCHEMA_VERSION, name
        assert not [k for k in _keys(doc) if camel.search(k)], name
    assert not [k for k in _keys(lines) if camel.search(k)]


@pytest.mark.parametrize("topic_id,ok", [
    ("not-a-topic-id!", False),       # a character outside URL-safe base64
    ("AAAAAAAAAAAAAAAAAAAAAAA", False),  # 23 characters: 17 bytes
    ("AAAAAAAAAAAAAAAAAAAAAAAAA", False),  # longer than 24
    ("AAAAAAAAAAAAAAAAAAAAA=", False),  # a 1-character final unit
    ("AAAAAAAAAAAAAAAAAAAAAA", False),  # the zero UUID, refused by PartitionMetadataReadBuffer
    ("9kFVqFMsRaO7CVnpdesMNQ", True),
    ("9kFVqFMsRaO7CVnpdesMNQ==", True),  # padding is optional but accepted
    ("-_FVqFMsRaO7CVnpdesMNQ", True),  # the URL-safe alphabet
])
def test_partition_metadata_topic_id_follows_uuid_fromstring(tmp_path, topic_id, ok):
    pdir = str(tmp_path / "logs" / "orders-0")
    random_partition(pdir, 2)
    with open(os.path.join(pdir, "partition.metadata"), "w") as f:
        f.write(f"version: 0\ntopic_id: {topic_id}\n")
    code, out, _err = run("verify-crc", pdir)
    assert (code == 0) == ok, out
    if not ok:
        assert "partition-metadata" in out and "next: " in out


@pytest.mark.parametrize("suffix,entry", [(".index", 8), (".timeindex", 12)])
def test_rebuild_index_names_a_size_invalid_index(tmp_path, suffix, entry):
    pdir = str(tmp_path / "logs" / "orders-0")
    random_partition(pdir, 2)
    with open(os.path.join(pdir, f"{0:020d}{suffix}"), "ab") as f:
        f.write(b"xyz")  # no longer whole entries: the broker's sanityCheck throws CorruptIndexException
    code, out, _err = run("rebuild-index", pdir)
    assert code == 1, out  # a dry run that would change a file
    line = next(x for x in out.splitlines() if x.strip().startswith(f"{suffix}:") and "size-invalid" in x)
    assert f"not a multiple of the {entry}-byte entry size" in line and "CorruptIndexException" in line
    assert "valid for lookups" not in line


def test_compact_plan_counts_superseded_records(tmp_path):
    from kafkalog_cli.ops.compact import CompactOptions, plan_compaction

    pdir = str(tmp_path / "logs" / "orders-0")
    pb = random_partition(pdir, 5)
    plan = plan_compaction(pdir, CompactOptions(now_ms=NOW))
    upper = plan.first_uncleanable_offset
    data = [r for r in pb.records if not r.control and r.offset < upper and r.outcome != "abort" and r.key is not None]
    latest = {r.key: r.offset for r in data}
    superseded = sum(1 for r in data if latest[r.key] != r.offset)
    t = plan.totals()
    assert superseded > 0 and t["superseded_removed"] == superseded
    markers = sum(s.markers_removed for s in plan.stats)
    assert t["records_before"] - t["records_after"] == (t["superseded_removed"] + t["tombstones_removed"]
                                                        + t["aborted_records_removed"] + t["keyless_removed"] + markers)
    code, out, _err = run("compact", "--now-ms", str(NOW), pdir)
    assert code == 1 and f"removed: {superseded} superseded by a later value of their key" in out


def test_dump_hints_follow_the_problem_and_stay_off_captured_streams(tmp_path):
    from kafkalog_cli.cli.dump import dump_hints
    from kafkalog_cli.ops.dump import DumpSummary

    assert dump_hints(DumpSummary(), ["d"]) == []
    [h] = dump_hints(DumpSummary(trailing_files=1), ["d"])
    assert "kafkalog verify-crc d" in h and "salvage" in h
    [h] = dump_hints(DumpSummary(index_mismatches={"d/0.index": [(1, 2)]}), ["d"])
    assert "kafkalog rebuild-index d" in h
    assert dump_hints(DumpSummary(index_mismatches={"i": [(1, 2)]}, valid_indexes=["i"]), ["d"]) == []
    # a captured stderr (not a terminal) keeps Kafka's streams: no hint line
    code, _out, err = run("dump", torn(tmp_path))
    assert code == 1 and "hint:" not in err


def test_seek_time_after_the_newest_record_says_so(tmp_path):
    pdir = str(tmp_path / "logs" / "orders-0")
    random_partition(pdir, 2)
    code, _out, err = run("seek-time", pdir, str(NOW))
    assert code == 1 and "kafkalog: error: " in err
    assert "hint: every record is older than that time" in err and "explain-retention" not in err


def test_no_help_text_cites_internal_documents_or_pypi():
    import re

    from kafkalog_cli.cli.main import COMMANDS

    bad = re.compile(r"errata|§|\bE\d{1,2}\b|pip install kafkalog|kafkalog\[")
    for name in COMMANDS:
        code, out, _err = run(name, "--help")
        assert code == 0 and not bad.search(out), (name, bad.search(out))
