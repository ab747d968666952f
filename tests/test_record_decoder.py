"""The accelerator's one v2 record decoder (accel/record.h, issue 21) as its four users see it.

The record walk used to be written four times in C (the text dump, the JSON dump, verify-crc --deep, scan --records),
each copy with the same rules. Now they share rec_next; this checks, rule by rule, that every one of the four still
declines a malformed record (so that Python, the reference, words it) and takes a clean one, and that the rule only
the dumps have (at most 64 headers: their header arrays) stays theirs.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from kafkalog_cli.storage import accel

mod = accel.module()
pytestmark = pytest.mark.skipif(mod is None or not hasattr(mod, "json_records"), reason="accelerator not built")

BASE_OFFSET = 1000
BASE_TS = 1_700_000_000_000


def zz(v: int) -> bytes:
    """Zig-zag varint/varlong (Kafka's ByteUtils.writeVarlong)."""
    u = (v << 1) ^ (v >> 63)
    u &= (1 << 64) - 1
    out = bytearray()
    while u >= 0x80:
        out.append(u & 0x7F | 0x80)
        u >>= 7
    out.append(u)
    return bytes(out)


def body(offset_delta: int, key: bytes | None = b"k", value: bytes | None = b"v",
         headers: list[tuple[bytes, bytes | None]] | None = None, *, raw_tail: bytes | None = None) -> bytes:
    """A record body (what follows the length varint), field order of format/layouts.py:RECORD_V2_FIELDS."""
    out = bytearray(b"\x00") + zz(offset_delta) + zz(offset_delta)  # attributes, timestampDelta, offsetDelta
    for part in (key, value):
        out += zz(-1) if part is None else zz(len(part)) + part
    if raw_tail is not None:
        return bytes(out + raw_tail)
    hs = headers or []
    out += zz(len(hs))
    for hk, hv in hs:
        out += zz(len(hk)) + hk + (zz(-1) if hv is None else zz(len(hv)) + hv)
    return bytes(out)


def framed(b: bytes) -> bytes:
    return zz(len(b)) + b


def clean() -> bytes:
    return framed(body(0)) + framed(body(1, headers=[(b"trace", b"1")]))


def walks(records: bytes, count: int = 2) -> dict[str, bool]:
    """Whether each of the four C walks takes `records` (True) or declines it (False)."""
    assert mod is not None
    buf = b"\xee" * 7 + records  # not at offset 0: the walks take (start, end)
    start, end = 7, len(buf)
    last = BASE_OFFSET + count - 1
    hdr = (0, end - start + 61, BASE_OFFSET, count - 1, count, -1, -1, -1, 0, 0, BASE_TS, BASE_TS + 5, 2, 0, True)
    outs = tuple(bytearray() for _ in range(10))
    return {
        "text": mod.dump_batch(buf, start, end, hdr, b"CreateTime", b"NONE", True, True, True, -1, False) is not None,
        "json": mod.json_records(buf, start, end, hdr, b'"f"', b"CreateTime", b"none", True, -1, False) is not None,
        "verify": mod.check_records(buf, start, end, count, BASE_OFFSET, last),
        "scan": mod.scan_records(buf, start, end, outs, 0, BASE_OFFSET, BASE_TS, BASE_TS + 5, False, count),
    }


def test_clean_records_are_taken_by_all_four() -> None:
    assert walks(clean()) == {"text": True, "json": True, "verify": True, "scan": True}


MALFORMED: dict[str, Callable[[], tuple[bytes, int]]] = {
    "length 0": lambda: (framed(body(0)) + zz(0), 2),
    "length past the records' end": lambda: (framed(body(0)) + zz(200) + body(1), 2),
    "length not a varint (6 bytes)": lambda: (framed(body(0)) + b"\xff" * 5 + b"\x01", 2),
    "count larger than the records": lambda: (clean(), 3),
    "timestampDelta cut by the body": lambda: (framed(body(0)) + framed(b"\x00\xff"), 2),
    "offsetDelta varint too long": lambda: (framed(body(0)) + framed(b"\x00\x02" + b"\xff" * 5 + b"\x01" + body(1)[3:]), 2),
    "key past the body": lambda: (framed(body(0)) + framed(body(1, key=None, value=None, raw_tail=b"")[:-2]
                                                            + zz(50) + b"kk"), 2),
    "value past the body": lambda: (framed(body(0)) + framed(body(1, value=None, raw_tail=b"")[:-1] + zz(9) + b"v"), 2),
    "header count negative": lambda: (framed(body(0)) + framed(body(1, raw_tail=zz(-2))), 2),
    "header count above the bytes left": lambda: (framed(body(0)) + framed(body(1, raw_tail=zz(5) + b"\x00")), 2),
    "header key length negative": lambda: (framed(body(0)) + framed(body(1, raw_tail=zz(1) + zz(-1) + zz(-1))), 2),
    "header value past the body": lambda: (framed(body(0)) + framed(body(1, raw_tail=zz(1) + zz(1) + b"h" + zz(7))), 2),
    "fields end before the record's length": lambda: (framed(body(0)) + framed(body(1) + b"\x00"), 2),
    "bytes after the last record": lambda: (clean() + b"\x00", 2),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_every_walk_declines_a_malformed_record(case: str) -> None:
    records, count = MALFORMED[case]()
    assert walks(records, count) == {"text": False, "json": False, "verify": False, "scan": False}


def test_header_limit_is_the_dumps_rule_only() -> None:
    many = framed(body(0)) + framed(body(1, headers=[(b"h%d" % i, b"x") for i in range(65)]))
    assert walks(many) == {"text": False, "json": False, "verify": True, "scan": True}
    at_limit = framed(body(0)) + framed(body(1, headers=[(b"h%d" % i, b"x") for i in range(64)]))
    assert walks(at_limit) == {"text": True, "json": True, "verify": True, "scan": True}


def test_header_text_rules_stay_with_their_walks() -> None:
    bad_key = framed(body(0)) + framed(body(1, headers=[(b"\xff", b"x")]))
    assert walks(bad_key) == {"text": False, "json": False, "verify": True, "scan": False}
    bad_value = framed(body(0)) + framed(body(1, headers=[(b"h", b"\xff")]))  # only JSON prints header values
    assert walks(bad_value) == {"text": True, "json": False, "verify": True, "scan": True}
