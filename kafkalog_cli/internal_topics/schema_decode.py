"""Decode schema-registry payloads (Avro, Protobuf, JSON Schema) with a registry rebuilt from ``_schemas``.

Why: most production topics carry Confluent-framed payloads, so a dump shows binary noise exactly where an operator
needs to read the data. ``Decoder.decode(bytes, headers)`` finds the schema reference (``format/schema_wire``: the
prefix, the header ids, Apicurio's global id), looks the schema up in the ``Registry`` (soft- and hard-deleted
versions included: the data written with them is still in the log) and decodes:

* AVRO with fastavro (``parse_schema`` with the references' named types first; ``schemaless_reader``); bytes left
  over after the record are a mismatch, not a value;
* PROTOBUF with descriptors built by ``protoc`` (grpcio-tools' bundled compiler, never a hand-written parser) from
  the ``.proto`` text and its references (each written under its reference ``name``, the import path), the message
  chosen by the message-index list; shown as protobuf's canonical JSON with the field names of the ``.proto``;
* JSON: the JSON value, validated against the schema with ``jsonschema`` on request.

Every schema is compiled once per id (``_compiled``), so memory stays flat however many records are decoded. A
value that does not decode is a ``Decoded`` with ``ok=False``, its ``kind`` and ``reason`` (``unknown-id``,
``bad-magic`` = poison pill, ``truncated``, ``mismatch``, ``invalid``): never an exception. Nothing here prints.
"""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, time
from decimal import Decimal
from typing import Any
from uuid import UUID

from kafkalog_cli.format import schema_wire as sw
from kafkalog_cli.internal_topics.schema_registry import Registry, SchemaVersion


@dataclass
class Decoded:
    ok: bool
    kind: str = "ok"  # ok | unknown-id | deleted-id | bad-magic | truncated | bad-indexes | mismatch | invalid | schema
    reason: str | None = None
    schema_id: int | None = None
    guid: str | None = None
    subject: str | None = None
    version: int | None = None
    schema_type: str | None = None
    source: str | None = None  # prefix | header | apicurio-prefix | apicurio-header
    value: Any = None
    deleted: bool = False  # decoded with a soft- or hard-deleted schema

    def text(self) -> str:
        """The value as compact JSON (Avro bytes as Avro's JSON encoding, times ISO-8601)."""
        return to_json(self.value)

    def as_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"ok": self.ok, "schema_id": self.schema_id, "subject": self.subject,
                             "version": self.version, "schema_type": self.schema_type, "source": self.source}
        if self.guid is not None:
            d["guid"] = self.guid
        if self.ok:
            d["value"] = json.loads(self.text())
            if self.deleted:
                d["deleted_schema"] = True
        else:
            d["error"] = self.kind
            d["reason"] = self.reason
        return d


def _default(o: Any) -> Any:
    if isinstance(o, (bytes, bytearray, memoryview)):
        return bytes(o).decode("latin-1")  # Avro's JSON encoding of bytes/fixed: one code point per byte
    if isinstance(o, (datetime, date, time)):
        return o.isoformat()
    if isinstance(o, (Decimal, UUID)):
        return str(o)
    raise TypeError(f"{type(o).__name__} is not JSON serializable")


_ENCODE = json.JSONEncoder(default=_default, ensure_ascii=False, separators=(",", ":")).encode


def to_json(value: Any) -> str:
    return _ENCODE(value)


class SchemaCompileError(Exception):
    pass


# ------------------------------------------------------------------------------------------------ compilers
def _refs(reg: Registry, sv: SchemaVersion, seen: set[tuple[str, int]] | None = None) -> list[tuple[str, SchemaVersion]]:
    """The schema's references, transitively, dependencies first: (reference name, version)."""
    seen = set() if seen is None else seen
    out: list[tuple[str, SchemaVersion]] = []
    for r in sv.references:
        subj, ver, name = r.get("subject"), r.get("version"), r.get("name")
        if not isinstance(subj, str) or not isinstance(ver, int):
            raise SchemaCompileError(f"malformed reference {r!r}")
        if ver == -1:  # "latest"
            vs = reg.subject_versions(subj)
            target = vs[-1] if vs else None
        else:
            target = reg.find(subj, ver)
        if target is None:
            raise SchemaCompileError(f"reference {name!r} -> {subj} version {ver} is not in the registry")
        if (target.subject, target.version) in seen:
            continue
        seen.add((target.subject, target.version))
        out += _refs(reg, target, seen)
        out.append((str(name or subj), target))
    return out


def _avro(reg: Registry, sv: SchemaVersion) -> Callable[[bytes, int], Any]:
    import fastavro

    named: dict[str, Any] = {}
    try:
        for _name, ref in _refs(reg, sv):
            fastavro.parse_schema(json.loads(ref.schema), named_schemas=named)
        parsed = fastavro.parse_schema(json.loads(sv.schema), named_schemas=named)
    except SchemaCompileError:
        raise
    except Exception as exc:  # fastavro raises SchemaParseException, ValueError, KeyError... for bad schemas
        raise SchemaCompileError(f"the Avro schema does not parse: {exc}") from None
    reader = fastavro.schemaless_reader
    bio = io.BytesIO

    def decode(data: bytes, start: int) -> Any:
        fo = bio(data)
        fo.seek(start)
        value = reader(fo, parsed, None)
        if fo.tell() != len(data):
            raise ValueError(f"{len(data) - fo.tell()} bytes left after the Avro value")
        return value

    decode.parsed = parsed  # type: ignore[attr-defined]
    return decode


def avro_schema(reg: Registry, sv: SchemaVersion) -> Any:
    """The parsed fastavro schema of one version (its references' named types resolved)."""
    return _avro(reg, sv).parsed  # type: ignore[attr-defined]


def _descriptor_b64(text: str) -> Any:
    """The schema as a base64 ``FileDescriptorProto`` (what confluent-kafka's Python serializer registers), or None
    for ``.proto`` text (what the Java clients register)."""
    import binascii

    from google.protobuf import descriptor_pb2
    from google.protobuf.message import DecodeError

    t = text.strip()
    if not t or any(c.isspace() for c in t) or ";" in t:
        return None
    try:
        raw = base64.b64decode(t, validate=True)
        fp = descriptor_pb2.FileDescriptorProto()
        fp.ParseFromString(raw)
    except (binascii.Error, ValueError, DecodeError):
        return None
    return fp if fp.message_type else None


def _proto_files(reg: Registry, sv: SchemaVersion) -> Any:
    """A ``FileDescriptorSet`` built by protoc from the version's ``.proto`` text and its references (a reference
    or schema registered as a base64 descriptor is taken as it is)."""
    import os
    import tempfile

    from google.protobuf import descriptor_pb2

    try:
        import grpc_tools
        from grpc_tools import protoc
    except ImportError:
        raise SchemaCompileError("Protobuf decoding needs grpcio-tools (pip install grpcio-tools)") from None
    include = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
    given: list[Any] = []  # base64 descriptors: added to the pool as they are, before the compiled files
    with tempfile.TemporaryDirectory(prefix="kafkalog-proto-") as tmp:
        for name, ref in _refs(reg, sv):
            fp = _descriptor_b64(ref.schema)
            if fp is not None:
                fp.name = name
                given.append(fp)
                continue
            path = os.path.join(tmp, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(ref.schema)
        main = f"__kafkalog_schema_{sv.schema_id}.proto"
        fp = _descriptor_b64(sv.schema)
        if fp is not None:
            fp.name = main
            fds = descriptor_pb2.FileDescriptorSet()
            fds.file.extend(given)
            fds.file.append(fp)
            return fds, main
        with open(os.path.join(tmp, main), "w", encoding="utf-8") as f:
            f.write(sv.schema)
        out = os.path.join(tmp, "set.pb")
        import contextlib

        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            rc = protoc.main(["protoc", f"-I{tmp}", f"-I{include}", "--include_imports",
                              f"--descriptor_set_out={out}", main])
        if rc != 0 or not os.path.exists(out):
            raise SchemaCompileError(f"protoc rejects the .proto text (exit {rc})")
        fds = descriptor_pb2.FileDescriptorSet()
        with open(out, "rb") as fb:
            fds.ParseFromString(fb.read())
    if given:
        done = {f.name for f in given}
        rest = [f for f in fds.file if f.name not in done]
        del fds.file[:]
        fds.file.extend(given + rest)
    return fds, main


def _well_known(name: str) -> Any:
    """The ``FileDescriptorProto`` of one of protobuf's bundled well-known files (``google/protobuf/x.proto``)."""
    import importlib

    from google.protobuf import descriptor_pb2

    try:
        mod = importlib.import_module("google.protobuf." + name[len("google/protobuf/"):-len(".proto")] + "_pb2")
    except ImportError:
        raise SchemaCompileError(f"imports {name}, which is not one of protobuf's well-known files") from None
    fp = descriptor_pb2.FileDescriptorProto()
    mod.DESCRIPTOR.CopyToProto(fp)
    return fp


def _protobuf(reg: Registry, sv: SchemaVersion) -> Callable[[bytes, int, list[int]], Any]:
    from google.protobuf import descriptor_pool, message_factory
    from google.protobuf.json_format import MessageToDict

    fds, main = _proto_files(reg, sv)
    pool = descriptor_pool.DescriptorPool()
    names = {fp.name for fp in fds.file}
    for fp in list(fds.file):
        for dep in fp.dependency:
            if dep not in names and dep.startswith("google/protobuf/"):  # a well-known type a descriptor names
                names.add(dep)
                pool.Add(_well_known(dep))
        try:
            pool.Add(fp)
        except (TypeError, ValueError) as exc:
            raise SchemaCompileError(f"the Protobuf descriptors do not build: {exc}") from None
    fd = pool.FindFileByName(main)
    classes: dict[tuple[int, ...], Any] = {}

    def message_class(indexes: list[int]) -> Any:
        key = tuple(indexes)
        cls = classes.get(key)
        if cls is None:
            msgs = list(fd.message_types_by_name.values())
            desc = None
            for i in indexes:
                if i < 0 or i >= len(msgs):
                    raise ValueError(f"message index {list(indexes)} names no message of the schema")
                desc = msgs[i]
                msgs = list(desc.nested_types)
            if desc is None:
                raise ValueError("empty message-index list")
            cls = classes[key] = message_factory.GetMessageClass(desc)
        return cls

    def decode(data: bytes, start: int, indexes: list[int]) -> Any:
        msg = message_class(indexes)()
        msg.ParseFromString(data[start:])
        return MessageToDict(msg, preserving_proto_field_name=True)

    return decode


def _json_schema(reg: Registry, sv: SchemaVersion, validate: bool) -> Callable[[bytes, int], Any]:
    try:
        schema = json.loads(sv.schema)
    except ValueError as exc:
        raise SchemaCompileError(f"the JSON schema is not JSON: {exc}") from None
    validator = None
    if validate:
        import jsonschema
        from referencing import Registry as RefRegistry
        from referencing import Resource
        from referencing.jsonschema import DRAFT7

        resources = []
        for name, ref in _refs(reg, sv):
            try:
                resources.append((name, Resource.from_contents(json.loads(ref.schema), default_specification=DRAFT7)))
            except ValueError as exc:
                raise SchemaCompileError(f"referenced JSON schema {name!r} is not JSON: {exc}") from None
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft7Validator)
        validator = cls(schema, registry=RefRegistry().with_resources(resources))

    def decode(data: bytes, start: int) -> Any:
        value = json.loads(bytes(data[start:]).decode("utf-8"))
        if validator is not None:
            errors = sorted(validator.iter_errors(value), key=lambda e: list(e.path))
            if errors:
                e = errors[0]
                where = "/".join(str(p) for p in e.path) or "(root)"
                raise _Invalid(f"does not validate against its JSON schema at {where}: {e.message}")
        return value

    return decode


class _Invalid(Exception):
    pass


@dataclass
class _Compiled:
    sv: SchemaVersion
    deleted: bool
    fn: Any = None
    error: str | None = None


class Decoder:
    """Decodes keys and values with one registry; compiles each schema once (``stats()``: how many)."""

    def __init__(self, registry: Registry, *, wire: str = "confluent", validate: bool = False) -> None:
        if wire not in sw.WIRE_FORMS:
            raise ValueError(f"unknown wire format {wire!r}: use one of {', '.join(sw.WIRE_FORMS)}")
        self.registry = registry
        self.wire = wire
        self.validate = validate
        self._compiled: dict[object, _Compiled | None] = {}

    def stats(self) -> dict[str, int]:
        return {"schemas_compiled": sum(1 for c in self._compiled.values() if c is not None and c.fn is not None)}

    def _lookup(self, ref: sw.SchemaRef) -> _Compiled | None:
        key: object = ("guid", ref.guid.lower()) if ref.guid is not None else ("id", ref.schema_id)
        if key in self._compiled:
            return self._compiled[key]
        found = self.registry.by_guid(ref.guid) if ref.guid is not None else self.registry.by_id(int(ref.schema_id or 0))
        comp = None
        if found:
            sv = found[0]
            comp = _Compiled(sv, sv.deleted or sv.hard_deleted)
            try:
                if sv.schema_type == "AVRO":
                    comp.fn = _avro(self.registry, sv)
                elif sv.schema_type == "PROTOBUF":
                    comp.fn = _protobuf(self.registry, sv)
                elif sv.schema_type == "JSON":
                    comp.fn = _json_schema(self.registry, sv, self.validate)
                else:
                    comp.error = f"schema type {sv.schema_type} is not one kafkalog decodes"
            except SchemaCompileError as exc:
                comp.error = str(exc)
        self._compiled[key] = comp
        return comp

    def text(self, data: bytes, headers: list[tuple[bytes, bytes | None]] | None = None, *,
             is_key: bool = False) -> str | None:
        """The decoded value as JSON text, or None when it does not decode (``decode`` says why). The dump's path:
        a Confluent-prefixed Avro value without schema-id headers skips the ``Decoded`` record."""
        if not headers and self.wire == "confluent" and len(data) >= 5 and data[0] == 0:
            comp = self._compiled.get(("id", int.from_bytes(data[1:5], "big", signed=True)))
            if comp is not None and comp.fn is not None and comp.sv.schema_type == "AVRO":
                try:
                    return _ENCODE(comp.fn(data, 5))
                except Exception:  # noqa: BLE001 - the slow path below names the reason
                    return None
        d = self.decode(data, headers, is_key=is_key)
        return d.text() if d.ok else None

    def decode(self, data: bytes | None, headers: list[tuple[bytes, bytes | None]] | None = None, *,
               is_key: bool = False) -> Decoded:
        if data is None:
            return Decoded(True, value=None)
        data = bytes(data)
        try:
            ref = sw.find_ref(data, headers, is_key=is_key, wire=self.wire)
        except sw.WireError as exc:
            return Decoded(False, exc.kind, exc.describe())
        comp = self._lookup(ref)
        out = Decoded(False, schema_id=ref.schema_id, guid=ref.guid, source=ref.source)
        if comp is None:
            what = f"GUID {ref.guid}" if ref.guid is not None else f"id {ref.schema_id}"
            out.kind, out.reason = "unknown-id", f"unknown schema {what} (not in the registry's records)"
            return out
        sv = comp.sv
        out.schema_id, out.subject, out.version, out.schema_type = sv.schema_id, sv.subject, sv.version, sv.schema_type
        out.deleted = comp.deleted
        if comp.fn is None:
            out.kind, out.reason = "schema", f"schema id {sv.schema_id} cannot be used: {comp.error}"
            return out
        try:
            if sv.schema_type == "PROTOBUF":
                if ref.header is not None:
                    idx_buf, idx_pos, start = ref.header, ref.indexes_start or 0, 0
                else:
                    idx_buf, idx_pos = data, ref.payload_start
                indexes, after = sw.read_message_indexes(idx_buf, idx_pos)
                if ref.header is None:
                    start = after
                out.value = comp.fn(data, start, indexes)
            else:
                out.value = comp.fn(data, ref.payload_start)
        except sw.WireError as exc:
            out.kind, out.reason = exc.kind, exc.describe()
            return out
        except _Invalid as exc:
            out.kind, out.reason = "invalid", str(exc)
            return out
        except Exception as exc:  # the libraries' own errors for bytes that do not fit the schema
            out.kind = "mismatch"
            out.reason = f"bytes do not match {sv.schema_type} schema id {sv.schema_id}: {type(exc).__name__}: {exc}"
            return out
        out.ok, out.kind = True, "ok"
        return out


def raw_text(data: bytes) -> str:
    """How undecoded bytes are shown: base64 (lossless and on one line)."""
    return base64.b64encode(data).decode("ascii")


class SchemaRegistryParser:
    """A ``RecordParser`` (``render/parsers.py``) for ``dump --value-decoder schema-registry`` /
    ``--key-decoder schema-registry``: the decoded JSON, or ``<undecoded: REASON> base64:RAW``."""

    def __init__(self, decoder: Decoder, *, key: bool, value: bool, key_fallback: Callable[[bytes], str],
                 value_fallback: Callable[[bytes], str], tombstone_key: bool = True) -> None:
        self.decoder = decoder
        self.key, self.value = key, value
        self.key_fallback, self.value_fallback = key_fallback, value_fallback
        self.tombstone_key = tombstone_key

    def text(self, data: bytes, headers: Any, *, is_key: bool) -> str:
        """What ``parse`` prints for one decoded side (the record view's ``%k``/``%s``, render/records.py)."""
        return self._text(data, headers, is_key)

    def _text(self, data: bytes, headers: Any, is_key: bool) -> str:
        text = self.decoder.text(data, headers, is_key=is_key)
        if text is not None:
            return text
        d = self.decoder.decode(data, headers, is_key=is_key)
        return f"<undecoded: {d.reason}> base64:{raw_text(bytes(data))}"

    def fast_decoders(self, plain: Callable[[bytes], str]) -> tuple[Any, Any, Callable[[Any], str],
                                                                   Callable[[Any], Any], int] | None:
        """The ``decoders`` of the compiled text dump (``_accel.dump_run`` / ``dump_batch``; accel/json_value.c), or
        None where it does not print what ``parse`` gives (2.0-2.3's tombstones): (key, value, encode, default,
        known_len). A side is None (its fallback is ``plain``, the decoder the C code prints as UTF-8 text:
        render/parsers.string_decoder) or (fn, known): ``fn(bytes[, headers])`` returns ``(value,)`` (written as
        ``to_json(value)``) or the text ``parse`` prints; ``known`` maps a Confluent 5-byte prefix that decoded as
        Avro before to its compiled reader (also held by ``Decoder._compiled``), which C then calls itself.
        Why: ``parse`` per record in the Python record tier cost twice the fastavro decode (issue 30.6)."""
        if not self.tombstone_key:
            return None

        def side(enabled: bool, fallback: Callable[[bytes], str], is_key: bool) -> Any:
            if enabled:
                known: dict[bytes, Callable[[bytes, int], Any]] = {}
                return self._fast_fn(is_key, known), known
            if fallback is plain:
                return None
            return (lambda data, headers=None: fallback(data)), None

        return (side(self.key, self.key_fallback, True), side(self.value, self.value_fallback, False), _ENCODE,
                _default, sw.CONFLUENT_PREFIX_LEN)

    def _fast_fn(self, is_key: bool, known: dict[bytes, Callable[[bytes, int], Any]]) -> Callable[..., Any]:
        """One side's callable for ``fast_decoders``: what ``_text`` prints, with an ok decode as ``(value,)``; a
        prefix-framed Avro decode enters its prefix and compiled reader in ``known`` (the same reader
        ``Decoder.text`` calls for it)."""
        dec = self.decoder
        confluent = dec.wire == "confluent"
        n = sw.CONFLUENT_PREFIX_LEN
        # the headers find_ref reads for this side before the prefix (a tracing header or the like does not count)
        id_headers = ((sw.KEY_SCHEMA_ID_HEADER, sw.APICURIO_KEY_HEADER) if is_key
                      else (sw.VALUE_SCHEMA_ID_HEADER, sw.APICURIO_VALUE_HEADER))

        def fn(data: bytes, headers: Any = None) -> Any:
            if headers is None or not any(v is not None and k in id_headers for k, v in headers):
                f = known.get(data[:n])
                if f is not None:
                    try:
                        return (f(data, n),)
                    except Exception:  # noqa: BLE001 - decode() below names the reason
                        pass
            d = dec.decode(data, headers, is_key=is_key)
            if not d.ok:
                return f"<undecoded: {d.reason}> base64:{raw_text(bytes(data))}"
            if confluent and d.source == "prefix" and d.schema_type == "AVRO":
                comp = dec._compiled.get(("id", d.schema_id))
                if comp is not None and comp.fn is not None:
                    known[bytes(data[:n])] = comp.fn
            return (d.value,)

        return fn

    def parse(self, record: Any, batch: Any) -> tuple[str | None, str | None]:
        if record.value is None and not self.tombstone_key:
            return None, None
        headers = record.headers
        if record.key is None:
            key = None
        else:
            key = self._text(record.key, headers, True) if self.key else self.key_fallback(record.key)
        if record.value is None:
            value = None
        else:
            value = self._text(record.value, headers, False) if self.value else self.value_fallback(record.value)
        return key, value

    def json(self, record: Any) -> dict[str, Any]:
        """The structured decode for ``--format json`` (the record object's ``decoded``)."""
        out: dict[str, Any] = {}
        if self.key and record.key is not None:
            out["key"] = self.decoder.decode(record.key, record.headers, is_key=True).as_dict()
        if self.value and record.value is not None:
            out["value"] = self.decoder.decode(record.value, record.headers).as_dict()
        return out
