"""Message schemas as data, plus the two outputs Kafka's tools derive from them.

Kafka generates a ``*Data`` class and a ``*JsonConverter`` per message JSON schema. We keep the schemas as
``Message`` tables (``schemas_*.py``) and reproduce both generated behaviours here:

* ``read`` decodes one message body with ``format.flexible`` after the version check the generated ``read`` does;
* ``to_json`` builds the ordered dict the generated ``JsonConverter.write`` builds (schema order, fields absent from
  the version dropped, tagged fields only when they differ from their default);
* ``java_json`` serialises it the way Jackson's ``JsonNode.toString`` does (compact, Jackson's string escapes,
  Java's ``Double.toString`` for floats, standard base64 for bytes), because DumpLogSegments prints that string.
"""

from __future__ import annotations

import base64
import math
from dataclasses import dataclass
from typing import Any

from kafkalog_cli.errors import InvalidRecordError
from kafkalog_cli.format import flexible as fx
from kafkalog_cli.format.flexible import Field


@dataclass(frozen=True)
class Message:
    """One Kafka message schema: name, apiKey (None for plain data), valid and first flexible version."""

    name: str
    api_key: int | None
    valid: tuple[int, int]
    flexible_from: int | None
    fields: list[Field]
    #: the first Kafka release that writes this record (scripts/kafka_schema_overlay.json); "" where not established
    since: str = ""

    def is_flexible(self, version: int) -> bool:
        return self.flexible_from is not None and version >= self.flexible_from

    def supports(self, version: int) -> bool:
        return self.valid[0] <= version <= self.valid[1]


class UnsupportedVersion(InvalidRecordError):
    """Kafka's UnsupportedVersionException from a generated ``read``."""


def read(buf: bytes | memoryview, msg: Message, version: int, *, pos: int = 0, exact: bool = False,
         strict_nulls: bool = False) -> tuple[dict[str, Any], int]:
    """Decode ``msg`` at ``version`` from ``buf[pos:]``; returns (values, end position). ``strict_nulls``: stop at
    the first null in a non-nullable field, as the generated ``read`` does."""
    if not msg.supports(version):
        raise UnsupportedVersion(f"Can't read version {version} of {msg.name}")
    r = fx.Reader(buf, pos)
    r.strict_nulls = strict_nulls
    values = fx.read_struct(r, msg.fields, version, msg.is_flexible(version))
    if exact and r.pos != r.end:
        raise InvalidRecordError(f"{r.end - r.pos} unexpected trailing bytes", position=r.pos)
    return values, r.pos


def encode(msg: Message, values: dict[str, Any], version: int) -> bytes:
    return fx.encode(msg.fields, values, version, msg.is_flexible(version))


def _in(v: int, rng: tuple[int, int] | None) -> bool:
    return rng is not None and rng[0] <= v <= rng[1]


def to_json(fields: list[Field], values: dict[str, Any] | None, version: int) -> dict[str, Any] | None:
    """The generated JsonConverter's view of a decoded struct (ordered dict)."""
    if values is None:
        return None
    out: dict[str, Any] = {}
    for f in fields:
        if not _in(version, f.versions):
            continue
        if f.tag is not None:
            if f.name not in values or values[f.name] == f.default:
                continue
        out[f.name] = _json_value(f.type, values.get(f.name, f.default), version)
    return out


def _json_value(t: Any, v: Any, version: int) -> Any:
    if v is None:
        return None
    if isinstance(t, tuple):
        kind, sub = t
        if kind == "array":
            return [_json_value(sub, item, version) for item in v]
        return to_json(sub, v, version)
    return v


# ------------------------------------------------------------------------------------------ Jackson emulation
_HEX = "0123456789ABCDEF"
_SHORT = {0x08: "\\b", 0x09: "\\t", 0x0A: "\\n", 0x0C: "\\f", 0x0D: "\\r", 0x22: '\\"', 0x5C: "\\\\"}


def java_json_string(s: str) -> str:
    """Jackson's string quoting: short escapes, other controls as upper-case ``\\u00XX``, nothing else escaped."""
    out = ['"']
    for ch in s:
        o = ord(ch)
        if o in _SHORT:
            out.append(_SHORT[o])
        elif o < 0x20:
            out.append("\\u00" + _HEX[o >> 4] + _HEX[o & 0xF])
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def java_double(d: float) -> str:
    """Java's ``Double.toString`` (shortest digits, scientific outside [1e-3, 1e7))."""
    if math.isnan(d):
        return "NaN"
    if math.isinf(d):
        return "Infinity" if d > 0 else "-Infinity"
    if d == 0:
        return "-0.0" if math.copysign(1.0, d) < 0 else "0.0"
    sign = "-" if d < 0 else ""
    a = abs(d)
    digits, exp = _shortest_digits(a)
    if 1e-3 <= a < 1e7:
        point = exp + 1  # digits before the decimal point
        if point <= 0:
            return f"{sign}0.{'0' * -point}{digits}"
        if point >= len(digits):
            return f"{sign}{digits}{'0' * (point - len(digits))}.0"
        return f"{sign}{digits[:point]}.{digits[point:]}"
    mant = digits[0] + "." + (digits[1:] or "0")
    return f"{sign}{mant}E{exp}"


def _shortest_digits(a: float) -> tuple[str, int]:
    """(significant digits without trailing zeros, decimal exponent of the first digit)."""
    # repr gives the shortest round-tripping digits; re-derive them in scientific form
    r = repr(a)
    if "e" in r:
        mant, ex = r.split("e")
        exp = int(ex)
        digits = mant.replace(".", "").rstrip("0") or "0"
        return digits, exp
    intpart, _, frac = r.partition(".")
    allds = (intpart + frac).lstrip("0")
    lead_zeros = len(frac) - len(frac.lstrip("0")) if intpart == "0" else 0
    exp = len(intpart) - 1 if intpart != "0" else -(lead_zeros + 1)
    return allds.rstrip("0") or "0", exp


def java_json(v: Any) -> str:
    """Compact JSON exactly as Jackson's ``JsonNode.toString`` prints the tree."""
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return java_double(v)
    if isinstance(v, str):
        return java_json_string(v)
    if isinstance(v, (bytes, bytearray, memoryview)):
        return '"' + base64.b64encode(bytes(v)).decode() + '"'
    if isinstance(v, dict):
        return "{" + ",".join(java_json_string(k) + ":" + java_json(x) for k, x in v.items()) + "}"
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(java_json(x) for x in v) + "]"
    raise TypeError(f"cannot serialise {type(v).__name__}")


def plain_json(v: Any) -> Any:
    """A ``json.dumps``-able copy of a decoded value (bytes as base64 text), for ``--format json``."""
    if isinstance(v, dict):
        return {k: plain_json(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [plain_json(x) for x in v]
    if isinstance(v, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(v)).decode()
    return v
