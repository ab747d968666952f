"""``dump --value-decoder/--key-decoder schema-registry`` on the compiled formatter (issue 30.6): the C text dump calls
the parser's callables per key and value (``SchemaRegistryParser.fast_decoders``) and writes the decoded value's
JSON itself (accel/json_value.c). The pure-Python record tier is the reference: every dump here is compared byte for
byte with it (``KAFKALOG_NO_ACCEL``-free, in process: the same options with and without ``opts.fast``/``fast_run``),
and the fast tiers must really run (FormattedRun/FormattedBatch events, no RecordEvent)."""

from __future__ import annotations

import io
import json
import math
import uuid
from datetime import date, datetime, time, timedelta, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from schema_world import AVRO_V1, schema_record, write_segment

from kafkalog_cli.cli.main import cli
from kafkalog_cli.format import codecs
from kafkalog_cli.format.encoder import RecordSpec, encode_batch
from kafkalog_cli.format.schema_wire import confluent_prefix
from kafkalog_cli.internal_topics.schema_decode import _ENCODE, Decoder, SchemaRegistryParser, _default
from kafkalog_cli.ops.dump import Dumper, DumpOptions, FormattedBatch, FormattedRun, RecordEvent
from kafkalog_cli.ops.schemas import load_registry
from kafkalog_cli.render import accel
from kafkalog_cli.render.dls import DlsRenderer
from kafkalog_cli.render.parsers import integer_decoder, string_decoder
from kafkalog_cli.versions import profile_for

pytestmark = pytest.mark.skipif(not accel.available(), reason="the compiled accelerator is not built")
fastavro = pytest.importorskip("fastavro")

# every Avro type and logical type fastavro gives a distinct Python object for (jv_put's cases and _default's)
WIDE = json.dumps({"type": "record", "name": "Wide", "namespace": "t", "fields": [
    {"name": "i", "type": "int"}, {"name": "l", "type": "long"}, {"name": "f", "type": "float"},
    {"name": "d", "type": "double"}, {"name": "b", "type": "boolean"}, {"name": "n", "type": "null"},
    {"name": "s", "type": "string"}, {"name": "raw", "type": "bytes"},
    {"name": "fx", "type": {"type": "fixed", "name": "F4", "size": 4}},
    {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["X", "Y"]}},
    {"name": "arr", "type": {"type": "array", "items": ["null", "long"]}},
    {"name": "m", "type": {"type": "map", "values": "string"}},
    {"name": "u", "type": ["null", "string", "double"]},
    {"name": "dec", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2}},
    {"name": "uid", "type": {"type": "string", "logicalType": "uuid"}},
    {"name": "day", "type": {"type": "int", "logicalType": "date"}},
    {"name": "tm", "type": {"type": "int", "logicalType": "time-millis"}},
    {"name": "tu", "type": {"type": "long", "logicalType": "time-micros"}},
    {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "tsu", "type": {"type": "long", "logicalType": "timestamp-micros"}},
    {"name": "lts", "type": {"type": "long", "logicalType": "local-timestamp-millis"}}]})
PROTO = 'syntax = "proto3";\npackage p;\nmessage M { int64 id = 1; string name = 2; repeated double xs = 3; }\n'
JSON_SCHEMA = json.dumps({"type": "object", "properties": {"n": {"type": "integer", "minimum": 0}}, "required": ["n"]})


def _avro(schema: str, value: dict) -> bytes:
    bio = io.BytesIO()
    fastavro.schemaless_writer(bio, fastavro.parse_schema(json.loads(schema)), value)
    return bio.getvalue()


def _wide(i: int) -> dict[str, Any]:
    return {"i": -i, "l": 2**40 + i, "f": 0.1 * i, "d": [math.nan, math.inf, -math.inf, 1e16, -0.0][i % 5],
            "b": bool(i % 2), "n": None, "s": f'q"\\\n\t\x01é😀{i}', "raw": bytes([i % 256, 0, 0x80, 0xFF]),
            "fx": b"\x00\x7f\x80\xff", "e": "XY"[i % 2], "arr": [None, i], "m": {"k": "v", "é": "\x1f"},
            "u": [None, f"s{i}", 2.5][i % 3], "dec": Decimal("-12.30") + i, "uid": uuid.UUID(int=i),
            "day": date(1970 + i % 50, 1, 2), "tm": time(1, 2, 3, (i % 1000) * 1000), "tu": time(23, 59, 59, i),
            "ts": datetime(2024, 1, 2, 3, 4, 5, (i % 2) * 1000, tzinfo=timezone.utc),
            "tsu": datetime(1, 1, 1, tzinfo=timezone.utc) + timedelta(microseconds=i),
            "lts": datetime(2024, 6, 15, 10, 0, i % 60)}


def _proto(id_: int, name: str, xs: list[float]) -> bytes:
    """M{id, name, xs} in protobuf's wire form (field 1 varint, 2 length-delimited, 3 packed doubles)."""
    import struct

    from kafkalog_cli.format.varint import write_uvarint

    out = bytearray(b"\x08")
    write_uvarint(id_, out)
    nb = name.encode()
    out += b"\x12" + bytes([len(nb)]) + nb
    packed = b"".join(struct.pack("<d", x) for x in xs)
    out += b"\x1a" + bytes([len(packed)]) + packed
    return bytes(out)


GUID = "3f2a4c1e-0000-4000-8000-00000000000a"


def _world(tmp_path: Path) -> Path:
    """A log dir: _schemas with Avro ids 1 (AVRO_V1) and 2 (WIDE, also by GUID), Protobuf 3, JSON 4; a ``t-0``
    whose batches mix every case a dump meets (several records per batch, so a decline mid-batch rolls back)."""
    logs = tmp_path / "logs"
    write_segment(logs / "_schemas-0", [
        schema_record("t-value", 1, 1, AVRO_V1), schema_record("w-value", 1, 2, WIDE, guid=GUID),
        schema_record("p-value", 1, 3, PROTO, schema_type="PROTOBUF"),
        schema_record("j-value", 1, 4, JSON_SCHEMA, schema_type="JSON")])
    good = [confluent_prefix(1) + _avro(AVRO_V1, {"id": i, "item": f"x{i}"}) for i in range(6)]
    wide = [confluent_prefix(2) + _avro(WIDE, _wide(i)) for i in range(10)]
    guid_hdr = b"\x01" + uuid.UUID(GUID).bytes
    batches = [
        [RecordSpec(key=str(i).encode(), value=v) for i, v in enumerate(good)],
        [RecordSpec(key=b"k", value=v) for v in wide],
        # nulls: a tombstone, a null key, an empty value
        [RecordSpec(key=b"gone", value=None), RecordSpec(key=None, value=good[0]), RecordSpec(key=b"e", value=b"")],
        # decode errors mid-batch: bad magic (a poison pill), unknown id, cut short, bytes left over, not Avro
        [RecordSpec(key=b"a", value=good[1]), RecordSpec(key=b"b", value=b"plain text"),
         RecordSpec(key=b"c", value=confluent_prefix(99) + b"\x02"), RecordSpec(key=b"d", value=b"\x00\x00\x00"),
         RecordSpec(key=b"e", value=good[2] + b"extra"), RecordSpec(key=b"f", value=confluent_prefix(1) + b"\x02"),
         RecordSpec(key=b"g", value=good[3])],
        # headers: the Confluent 8.x GUID header (raw Avro body), an id header, unrelated headers
        [RecordSpec(key=b"h1", value=_avro(WIDE, _wide(3)), headers=[("__value_schema_id", guid_hdr)]),
         RecordSpec(key=b"h2", value=_avro(AVRO_V1, {"id": 7, "item": "hdr"}),
                    headers=[("trace", b"abc"), ("__value_schema_id", b"\x00" + (1).to_bytes(4, "big"))]),
         RecordSpec(key=b"h3", value=good[4], headers=[("trace", None), ("x", b"\xff")]),
         RecordSpec(key=b"h4", value=good[5], headers=[("__value_schema_id", None), ("trace", b"t")]),
         RecordSpec(key=b"h5", value=good[1] + b"!", headers=[("trace", b"t")])],
        # Protobuf (message index [0]) and JSON Schema values, one of each that does not decode
        [RecordSpec(key=b"p", value=confluent_prefix(3, [0]) + _proto(5, "n\"é", [1.5, math.nan])),
         RecordSpec(key=b"p2", value=confluent_prefix(3, [0]) + b"\xff\xff"),
         RecordSpec(key=b"j", value=confluent_prefix(4) + b'{"n": 3, "s": "\\u00e9", "f": 1e400}'),
         RecordSpec(key=b"j2", value=confluent_prefix(4) + b'{"n": -1}'),
         RecordSpec(key=b"j3", value=confluent_prefix(4) + b"{not json")],
        # a key that is not UTF-8 (printed as text: the C formatter declines, Python prints Java's replacement)
        [RecordSpec(key=b"\xff\xfe", value=good[5]), RecordSpec(key=b"ok", value=good[0])],
    ]
    out = bytearray()
    off = 0
    for recs in batches:
        out += encode_batch(recs, base_offset=off, base_timestamp=1_700_000_000_000)
        off += len(recs)
    # a gzip batch (dump_run's decompress path) and a batch of Avro keys
    out += encode_batch([RecordSpec(key=b"z", value=v) for v in good], base_offset=off, codec=codecs.GZIP,
                        base_timestamp=1_700_000_000_000)
    off += len(good)
    out += encode_batch([RecordSpec(key=v, value=v) for v in good[:3]], base_offset=off,
                        base_timestamp=1_700_000_000_000)
    (logs / "t-0").mkdir(parents=True)
    (logs / "t-0" / "00000000000000000000.log").write_bytes(bytes(out))
    return logs


def _dump(logs: Path, *, fast: bool, key: bool = False, value: bool = True, validate: bool = False,
          key_fallback: Any = string_decoder, version: str = "3.6") -> tuple[bytes, dict[str, int]]:
    """The text dump of t-0 with a schema-registry parser: the compiled tiers on (``fast``) or the Python record
    tier; the bytes written and how many events of each tier there were."""
    prof = profile_for(version)
    parser = SchemaRegistryParser(Decoder(load_registry([str(logs)]), validate=validate), key=key, value=value,
                                  key_fallback=key_fallback, value_fallback=string_decoder,
                                  tombstone_key=bool(prof.tombstone_key))
    opts = DumpOptions(print_data_log=True, deep_iteration=True, parser=parser)
    chunks: list[bytes] = []
    r = DlsRenderer(prof, opts, lambda line: chunks.append((line + "\n").encode("utf-8", "replace")),
                    lambda _line: None, out_bytes=lambda b: chunks.append(bytes(b)))
    if fast:
        opts.fast, opts.fast_run = r.fast_formatter(), r.fast_run()
        assert opts.fast is not None and opts.fast_run is not None
    d = Dumper(prof, opts)
    counts = {"run": 0, "batch": 0, "record": 0}
    for ev in d.run([str(logs / "t-0" / "00000000000000000000.log")]):
        counts["run"] += isinstance(ev, FormattedRun)
        counts["batch"] += isinstance(ev, FormattedBatch)
        counts["record"] += isinstance(ev, RecordEvent)
        r.handle(ev)
    return b"".join(chunks), counts


def test_decoded_dump_is_byte_identical_to_the_python_tier(tmp_path: Path) -> None:
    logs = _world(tmp_path)
    want, slow = _dump(logs, fast=False)
    got, tiers = _dump(logs, fast=True)
    assert got == want
    assert slow["record"] > 0 and slow["run"] == 0
    text = got.decode()
    assert 'payload: {"id":0,"item":"x0"}' in text
    assert '"d":NaN' in text and '"ts":"2024-01-02T03:04:05.001000+00:00"' in text and '"dec":"-11.30"' in text
    assert ("payload: <undecoded: not schema-registry framed (bad magic byte: a poison pill) (expected magic byte "
            "0x00, found 0x70)> base64:cGxhaW4gdGV4dA==") in text
    assert "<undecoded: unknown schema id 99" in text and "5 bytes left after the Avro value" in text
    assert '{"id":"5","name":"n\\"é","xs":[1.5,"NaN"]}' in text  # protobuf's canonical JSON (int64 as a string)
    assert '{"n":3,"s":"é","f":Infinity}' in text  # the JSON value as Python's json reads it
    # all but the batch Python must word (the non-UTF-8 key) stayed compiled
    assert tiers["run"] >= 2 and tiers["record"] == 2


def test_keys_headers_validation_and_a_key_fallback(tmp_path: Path) -> None:
    logs = _world(tmp_path)
    for kw in ({"key": True}, {"key": True, "value": False}, {"validate": True}):
        want, _ = _dump(logs, fast=False, **kw)
        got, _ = _dump(logs, fast=True, **kw)
        assert got == want, kw
    got, _ = _dump(logs, fast=True, validate=True)
    assert b"does not validate against its JSON schema at n" in got
    # a key decoder that raises on most keys (IntegerDecoder): the C formatter declines, Python words it as before
    want, _ = _dump(logs, fast=False, key_fallback=integer_decoder)
    got, _ = _dump(logs, fast=True, key_fallback=integer_decoder)
    assert got == want and got.endswith(b"headerKeys: []")  # the line Kafka printed before its parser threw


def test_clean_avro_partition_never_reaches_the_record_tier(tmp_path: Path) -> None:
    """The regression: a --value-decoder dump used to take the Python record tier for every batch."""
    logs = tmp_path / "logs"
    write_segment(logs / "_schemas-0", [schema_record("t-value", 1, 1, AVRO_V1)])
    (logs / "t-0").mkdir()
    (logs / "t-0" / "00000000000000000000.log").write_bytes(b"".join(
        encode_batch([RecordSpec(key=b"k", value=confluent_prefix(1) + _avro(AVRO_V1, {"id": b * 10 + i, "item": "x"}))
                      for i in range(10)], base_offset=b * 10) for b in range(20)))
    got, tiers = _dump(logs, fast=True)
    assert tiers["record"] == 0 and tiers["batch"] <= 1 and tiers["run"] >= 1
    assert got == _dump(logs, fast=False)[0]
    assert got.count(b'payload: {"id":') == 200


def test_older_versions_print_what_they_printed(tmp_path: Path) -> None:
    """2.0-2.3 print no key for a tombstone (no fast decoders then); 2.8's verbose lines stay Python's."""
    logs = _world(tmp_path)
    for version in ("2.1", "2.8", "3.0", "4.0"):
        prof = profile_for(version)
        want, _ = _dump(logs, fast=False, version=version)
        parser = SchemaRegistryParser(Decoder(load_registry([str(logs)])), key=False, value=True,
                                      key_fallback=string_decoder, value_fallback=string_decoder,
                                      tombstone_key=bool(prof.tombstone_key))
        r = DlsRenderer(prof, DumpOptions(print_data_log=True, deep_iteration=True, parser=parser), print, print,
                        out_bytes=lambda b: None)
        if r.fast_formatter() is not None:
            assert _dump(logs, fast=True, version=version)[0] == want


def test_cli_dump_with_and_without_the_accelerator(tmp_path: Path) -> None:
    logs = _world(tmp_path)
    args = ["dump", "--value-decoder", "schema-registry", "--key-decoder", "schema-registry", str(logs / "t-0")]
    fast = CliRunner().invoke(cli, args)
    slow = CliRunner().invoke(cli, args, env={"KAFKALOG_NO_ACCEL": "1"})
    assert fast.exit_code == slow.exit_code == 0, fast.output
    assert fast.output == slow.output and "payload: {" in fast.output


def test_a_base_exception_from_a_decoder_propagates(tmp_path: Path) -> None:
    logs = _world(tmp_path)
    buf = (logs / "t-0" / "00000000000000000000.log").read_bytes()

    def stop(data: bytes, headers: Any = None) -> Any:
        raise KeyboardInterrupt

    def boom(data: bytes, headers: Any = None) -> Any:
        raise ValueError("no")

    run = accel.make_run(json=False, print_data=True, decoders=(None, (stop, None), _ENCODE, _default, 5))
    assert run is not None
    with pytest.raises(KeyboardInterrupt):
        run(buf, 0, len(buf), True, 4, -1, False)
    run = accel.make_run(json=False, print_data=True, decoders=(None, (boom, None), _ENCODE, _default, 5))
    assert run is not None
    text, npos, batches, *_ = run(buf, 0, len(buf), True, 4, -1, False)
    assert (text, npos, batches) == (bytearray(), 0, 0)  # declined at the first batch: Python formats it


_SCALARS = (st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text()
            | st.binary(max_size=8) | st.decimals(allow_nan=False) | st.uuids()
            | st.datetimes(timezones=st.none() | st.just(timezone.utc) | st.timezones()) | st.dates()
            | st.times(timezones=st.none() | st.just(timezone.utc)))
_VALUES = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=4) | st.tuples(inner, inner)
                       | st.dictionaries(st.text(max_size=6) | st.integers(), inner, max_size=4), max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(_VALUES)
def test_json_text_is_the_python_encoders(value: Any) -> None:
    got = accel._accel.json_text(value, _ENCODE, _default)
    try:
        want: bytes | None = _ENCODE(value).encode("utf-8")
    except (TypeError, UnicodeEncodeError, ValueError):
        want = None  # Python cannot write it: the C encoder must decline too (then Python words the problem)
    if got is None:
        return  # declined: the Python encoder writes it (dec_value)
    assert got == want


def test_record_view_shows_decoded_keys_and_values(tmp_path: Path) -> None:
    """``dump --records`` with --value-decoder/--key-decoder: %k/%s and the -J object carry the decoded text (issue
    30's record view; it printed the raw bytes before)."""
    logs = _world(tmp_path)
    part = str(logs / "t-0")
    r = CliRunner().invoke(cli, ["dump", "--records", "--value-decoder", "schema-registry", "--count", "3", part])
    assert r.exit_code == 0, r.output
    assert r.output.splitlines() == [f'{i} 2023-11-14T22:13:20.000Z {i} {{"id":{i},"item":"x{i}"}}' for i in range(3)]
    r = CliRunner().invoke(cli, ["dump", "--records", "-f", "%o|%k|%s\\n", "--key-decoder", "schema-registry",
                                 "--value-decoder", "schema-registry", "--offset", "19", "--count", "2", part])
    assert r.exit_code == 0, r.output
    lines = [ln for ln in r.output.splitlines() if not ln.startswith("kafkalog: note:")]  # the missing index
    assert lines[0].startswith('19|<undecoded: not schema-registry framed') and lines[0].endswith('|{"id":1,"item":"x1"}')
    assert lines[1].split("|", 2)[2].startswith("<undecoded: not schema-registry framed (bad magic byte: a poison")
    # the header-GUID form (no prefix on the value), and the JSON object with the structured decode
    r = CliRunner().invoke(cli, ["dump", "--records", "--format", "json", "--value-decoder", "schema-registry",
                                 "--offset", "26", "--count", "1", part])
    assert r.exit_code == 0, r.output
    obj = json.loads(r.output.splitlines()[0])
    assert json.loads(obj["payload"])["ts"] == "2024-01-02T03:04:05.001000+00:00"
    assert obj["decoded"]["value"]["source"] == "header" and obj["decoded"]["value"]["subject"] == "w-value"
    assert obj["headers"][0] == "__value_schema_id" and obj["key"] == "h1"
    # without a decoder the view is unchanged: the raw bytes
    r = CliRunner().invoke(cli, ["dump", "--records", "--count", "1", part])
    assert r.output == "0 2023-11-14T22:13:20.000Z 0 \x00\x00\x00\x00\x01\x00\x04x0\n"


def _dump_rss(path: Path) -> int:
    """Peak RSS (KiB) of ``kafkalog dump --value-decoder schema-registry PATH`` with stdout to /dev/null."""
    import os
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-m", "kafkalog_cli", "dump", "--value-decoder", "schema-registry",
                             str(path)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _pid, status, ru = os.wait4(proc.pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, proc.stderr.read() if proc.stderr else ""
    return ru.ru_maxrss


def test_decoded_dump_memory_is_flat(tmp_path: Path) -> None:
    """Issue 30.6: peak RSS at 10x the records must not grow (each schema compiled once per id, the text
    streamed): 8,000 and 80,000 Avro records under three schema ids."""
    logs = tmp_path / "logs"
    write_segment(logs / "_schemas-0", [schema_record(f"t{i}-value", 1, i, AVRO_V1) for i in (1, 2, 3)])
    parsed = fastavro.parse_schema(json.loads(AVRO_V1))
    sizes = {}
    for part, n in (("t-0", 8_000), ("t-1", 80_000)):
        out = bytearray()
        for b in range(0, n, 100):
            recs = []
            for i in range(b, b + 100):
                bio = io.BytesIO()
                fastavro.schemaless_writer(bio, parsed, {"id": i, "item": f"item-{i:08d}"})
                recs.append(RecordSpec(key=b"k%d" % i, value=confluent_prefix(1 + i % 3) + bio.getvalue()))
            out += encode_batch(recs, base_offset=b)
        (logs / part).mkdir()
        (logs / part / "00000000000000000000.log").write_bytes(bytes(out))
        sizes[n] = _dump_rss(logs / part)
    assert sizes[80_000] <= sizes[8_000] + 8 * 1024, sizes  # KiB


@pytest.mark.realdata
@pytest.mark.parametrize("topic", ["orders", "customers_keyed", "promotions"])
def test_real_avro_topics_identical_both_ways(topic: str) -> None:
    """The corpus' Confluent-Avro topics (keys Avro too): the compiled dump prints the Python tier's bytes."""
    from realdata_path import REALDATA

    dirs = sorted(REALDATA.glob(f"*/**/{topic}-0")) if REALDATA.is_dir() else []
    dirs = [d for d in dirs if (d.parent / "_schemas-0").is_dir()]
    if not dirs:
        pytest.skip(f"no {topic}-0 beside a _schemas-0 in the real-data corpus")
    args = ["dump", "--value-decoder", "schema-registry", "--key-decoder", "schema-registry", str(dirs[0])]
    fast = CliRunner().invoke(cli, args)
    slow = CliRunner().invoke(cli, args, env={"KAFKALOG_NO_ACCEL": "1"})
    assert fast.exit_code == slow.exit_code and fast.output == slow.output
    assert fast.output.count("payload: {") > 10
