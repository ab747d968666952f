"""The on-disk layouts are declared once (kafkalog_cli/format/layouts.py) and everything else derives from them.

Checks: the declaration against Kafka's own numbers (DefaultRecordBatch, LegacyRecord, Records, AbortedTxn, the index
entry sizes, ProducerSnapshot v1); the named readers against the classes that decode real batches; the committed C
header against the generator; the compiled module against the declaration (a stale build); the typed stub of the
accelerator against its method table; and that no reader outside the declaration spells a layout format again.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kafkalog_cli.format import layouts as L
from kafkalog_cli.format.batch import Batch
from kafkalog_cli.format.encoder import RecordSpec, encode_batch, encode_legacy_message
from kafkalog_cli.format.legacy import LegacyEntry
from kafkalog_cli.storage import companions as comp

ROOT = Path(__file__).resolve().parent.parent


def test_v2_header_offsets_are_kafkas():
    # DefaultRecordBatch.java:103-130 (BASE_OFFSET_OFFSET .. RECORDS_OFFSET = RECORD_BATCH_OVERHEAD)
    expected = {"base_offset": 0, "batch_length": 8, "partition_leader_epoch": 12, "magic": 16, "crc": 17,
                "attributes": 21, "last_offset_delta": 23, "base_timestamp": 27, "max_timestamp": 35,
                "producer_id": 43, "producer_epoch": 51, "base_sequence": 53, "records_count": 57}
    assert {f.name: f.offset for f in L.BATCH_V2.fields} == expected
    assert L.BATCH_V2.size == L.V2_HEADER_SIZE == 61
    assert (L.LOG_OVERHEAD, L.HEADER_SIZE_UP_TO_MAGIC, L.MAGIC_OFFSET) == (12, 17, 16)  # Records.java:46-56
    assert (L.V2_MIN_BATCH_LENGTH, L.V2_CRC_SKIP, L.V2_RECORDS_COUNT_OFFSET) == (49, 9, 57)


def test_other_layouts_are_kafkas():
    # LegacyRecord.java:44-57 (offsets relative to the message; ours include the 12-byte log overhead)
    assert [(f.name, f.offset) for f in L.LEGACY_V1.fields] == [
        ("offset", 0), ("size", 8), ("crc", 12), ("magic", 16), ("attributes", 17), ("timestamp", 18)]
    assert (L.LEGACY_V0.size, L.LEGACY_V1.size, L.LEGACY_V0_RECORD_OVERHEAD) == (18, 26, 14)
    assert (L.OFFSET_INDEX_ENTRY.size, L.TIME_INDEX_ENTRY.size) == (8, 12)
    assert L.TXN_INDEX_ENTRY.size == 34 and L.TXN_INDEX_ENTRY.offset("last_stable_offset") == 26  # AbortedTxn.java
    assert (L.PRODUCER_SNAPSHOT_HEADER.size, L.PRODUCER_SNAPSHOT_ENTRY.size) == (10, 46)
    assert (L.CONTROL_KEY.size, L.END_TXN_MARKER.size) == (4, 6)
    # the derived struct is the declaration: no padding, fields in order
    for layout in L.ALL_LAYOUTS:
        assert layout.struct.format.startswith(">") and layout.struct.size == layout.size
        assert [f.offset for f in layout.fields] == sorted(f.offset for f in layout.fields)
        assert layout.fields[-1].end == layout.size


def test_record_field_order_is_declared():
    names = [n for n, _kind in L.RECORD_V2_FIELDS]
    assert names[:5] == ["length", "attributes", "timestamp_delta", "offset_delta", "key_length"]
    assert names[-2:] == ["headers_count", "headers"]


def test_named_view_reads_what_batch_reads():
    raw = encode_batch([RecordSpec(key=b"k", value=b"v", timestamp=1_700_000_000_123)], base_offset=42,
                       producer_id=7, producer_epoch=3, base_sequence=5, partition_leader_epoch=9)
    h = L.BATCH_V2.read(raw)
    b = Batch(raw, 0)
    for f in L.BATCH_V2.fields:
        if f.name != "attributes":
            assert getattr(h, f.name) == getattr(b, f.name), f.name
    assert h.crc == b.computed_crc(raw) and b.is_valid(raw)
    assert L.BATCH_V2.unpack_from(raw, 0)[L.BATCH_V2.index("records_count")] == 1


def test_legacy_view_reads_what_legacy_entry_reads():
    raw = encode_legacy_message(offset=5, key=b"k", value=b"value", magic=1, timestamp=1234)
    v = L.LEGACY_V1.read(raw)
    e = LegacyEntry(raw, 0)
    assert (v.offset, v.crc, v.magic, v.timestamp) == (e.offset, e.crc, e.magic, e.timestamp)
    assert e.is_valid(raw) and e.key_value(raw) == (b"k", b"value")


def test_snapshot_underflow_names_the_field_from_the_declaration():
    entry = comp.ProducerEntry(1, 2, 3, 4, 5, 6, 7, 8)
    data = comp.encode_producer_snapshot([entry])
    assert comp.parse_producer_snapshot(data).entries == [entry]
    cut = L.PRODUCER_SNAPSHOT_HEADER.size + L.PRODUCER_SNAPSHOT_ENTRY.offset("last_offset") + 3
    with pytest.raises(comp.CorruptSnapshotError, match="Error reading field 'last_offset'"):
        comp.parse_producer_snapshot(data[:cut])
    with pytest.raises(comp.CorruptSnapshotError, match="Error reading field 'crc'"):
        comp.parse_producer_snapshot(data[:5])


# ------------------------------------------------------------------------------------------------ the C side
def test_committed_header_is_generated_from_the_declaration():
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import gen_layouts_h
    finally:
        sys.path.pop(0)
    committed = (ROOT / "kafkalog_cli" / "accel" / "layouts.h").read_text()
    assert committed == gen_layouts_h.render(), "accel/layouts.h is stale: run python scripts/gen_layouts_h.py"
    res = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_layouts_h.py"), "--check"], capture_output=True)
    assert res.returncode == 0, res.stderr


def test_c_parts_use_the_names_not_the_numbers():
    """The walks that read headers spell no raw header offset (the numbers live in layouts.h only)."""
    raw = re.compile(r"\b(?:be(?:16|32|64)\([a-z_]+(?: \+ pos)? \+ (?:8|12|17|21|23|27|35|43|51|53|57)\)"
                     r"|\[(?:pos \+ )?16\]|< 61\b|< 49\b|- 17\)|\+ 21,)")
    parts = ("bytes.h", "walk.c", "index_build.c", "crc_parallel.c", "scan_columns.c", "scan_records.c", "dump_run.c")
    for name in parts:
        text = (ROOT / "kafkalog_cli" / "accel" / name).read_text()
        code = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
        assert not raw.findall(code), (name, raw.findall(code))


def _accel():
    try:
        from kafkalog_cli import _accel
    except ImportError:
        pytest.skip("the compiled accelerator is not built here")
    return _accel


def test_compiled_constants_equal_the_declaration():
    assert _accel().layout_constants() == L.c_constants()


def _method_table() -> set[str]:
    text = (ROOT / "kafkalog_cli" / "_accel.c").read_text()
    table = text[text.index("static PyMethodDef methods[]"):]
    table = table[: table.index("};")]
    return set(re.findall(r'\{"(\w+)",', table))


def _stub_functions() -> set[str]:
    tree = ast.parse((ROOT / "kafkalog_cli" / "_accel.pyi").read_text())
    return {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}


def test_stub_lists_the_method_table():
    assert _stub_functions() == _method_table()


def test_stub_lists_the_built_module():
    mod = _accel()
    built = {n for n in dir(mod) if not n.startswith("_") and callable(getattr(mod, n))}
    guard_only = {"guard_register", "guard_faults", "guard_release", "first_nonzero"}  # #ifdef KAFKALOG_GUARD
    assert built <= _stub_functions()
    assert _stub_functions() - built <= guard_only


def test_stub_documents_every_function():
    tree = ast.parse((ROOT / "kafkalog_cli" / "_accel.pyi").read_text())
    for n in tree.body:
        if isinstance(n, ast.FunctionDef):
            assert ast.get_docstring(n), n.name
            assert n.returns is not None, n.name


# ------------------------------------------------------------------------------------------------ no second copy
ALLOWED_FILES = {"format/layouts.py"}  # the declaration itself
# Formats that are not on-disk log layouts, allowed by (file, format string), never a whole file: codec framings,
# protocol primitives, the kernel's flock struct, the C side's packed records, the cleaner's in-memory offset map,
# and the scan's native-order Arrow column buffers.
ALLOWED = {
    ("format/codecs.py", ">ii"), ("format/codecs.py", "<IIII"), ("format/codecs.py", "<I"), ("format/codecs.py", ">i"),
    ("format/codecs.py", "<II"),  # the gzip member trailer (CRC-32, ISIZE: RFC 1952), compress_kafka
    ("format/flexible.py", ">b"), ("format/flexible.py", ">h"), ("format/flexible.py", ">H"),
    ("format/flexible.py", ">i"), ("format/flexible.py", ">I"), ("format/flexible.py", ">q"),
    ("format/flexible.py", ">d"),
    ("storage/lock.py", "hhqqi4x"), ("storage/accel.py", "<qiBBhqiiqqiqhiI"), ("storage/accel.py", "<qiqqq"),
    ("ops/compact_io.py", ">q"), ("ops/compact_io.py", ">i"), ("scan/records.py", "=q"), ("scan/records.py", "=i"),
}


def test_no_layout_format_outside_the_declaration():
    pat = re.compile(r"""struct\.(?:Struct|unpack_from|unpack|pack|pack_into)\(\s*["']([^"']*)["']?""")
    offenders = []
    used = set()
    for path in sorted((ROOT / "kafkalog_cli").rglob("*.py")):
        rel = path.relative_to(ROOT / "kafkalog_cli").as_posix()
        if rel in ALLOWED_FILES:
            continue
        for i, line in enumerate(path.read_text().splitlines(), 1):
            for m in pat.finditer(line):
                if (rel, m.group(1)) in ALLOWED:
                    used.add((rel, m.group(1)))
                else:
                    offenders.append(f"{rel}:{i}: {line.strip()}")
    assert used == ALLOWED, f"allowed formats no longer used, remove them: {ALLOWED - used}"
    assert not offenders, "read these through kafkalog_cli/format/layouts.py:\n" + "\n".join(offenders)
