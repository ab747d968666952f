"""Kafka's coordinator partition rule, checked against an independent Java-semantics hash and hand values."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from kafkalog_cli.cli.main import cli
from kafkalog_cli.format.javahash import java_string_hash, kafka_abs
from kafkalog_cli.internal_topics.locate import partition_for


def reference_hash(s: str) -> int:
    """A second implementation: iterate code points, split non-BMP ones into surrogates, wrap with ctypes-like math."""
    units: list[int] = []
    for ch in s:
        cp = ord(ch)
        if cp > 0xFFFF:
            cp -= 0x10000
            units += [0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF)]
        else:
            units.append(cp)
    n = len(units)
    total = sum(u * pow(31, n - 1 - i, 2**32) for i, u in enumerate(units)) % 2**32
    return total - 2**32 if total >= 2**31 else total


@pytest.mark.parametrize("s", ["", "a", "test-group", "my-consumer-group", "grüße", "日本語", "😀", "a😀b", "x" * 300])
def test_hash_matches_reference(s: str) -> None:
    assert java_string_hash(s) == reference_hash(s)


def test_hand_values() -> None:
    # "a" = 97; "ab" = 97*31 + 98 = 3105
    assert java_string_hash("a") == 97
    assert java_string_hash("ab") == 3105
    # U+1F600 is D83D DE00: 55357*31 + 56832 = 1772899 -> 1772899 % 50 = 49
    assert java_string_hash("😀") == 1772899
    assert partition_for("😀") == 49
    # "test-group".hashCode() = 627841412 (Java); 627841412 % 50 = 12
    assert java_string_hash("test-group") == 627841412
    assert partition_for("test-group") == 12
    assert java_string_hash("hello world") == 1794106052  # well-known Java value
    # "é" is one UTF-16 unit 0xE9 = 233 -> 233 % 50 = 33
    assert partition_for("é") == 33


def test_negative_hash_and_min_value() -> None:
    # "polygenelubricants".hashCode() == Integer.MIN_VALUE: Utils.abs maps it to 0 (Math.abs would stay negative)
    assert java_string_hash("polygenelubricants") == -(2**31)
    assert kafka_abs(-(2**31)) == 0
    assert partition_for("polygenelubricants") == 0
    neg = "my-consumer-group-1"
    h = java_string_hash(neg)
    assert h < 0
    assert partition_for(neg, 50) == (-h) % 50 == 7  # Math.abs(-1322913907) % 50
    assert (h & 0x7FFFFFFF) % 50 != 7  # the masking rule would pick another partition


def test_cli_locate() -> None:
    r = CliRunner().invoke(cli, ["locate-group", "test-group"])
    assert r.exit_code == 0 and "__consumer_offsets-12" in r.output
    r = CliRunner().invoke(cli, ["locate-txn", "😀", "--format", "json"])
    assert r.exit_code == 0 and '"partition": 49' in r.output
    r = CliRunner().invoke(cli, ["locate-txn", "x", "--partitions", "-3"])
    assert r.exit_code == 2 and "Traceback" not in r.output
    for name in ("locate-group", "locate-txn", "transactions"):
        assert "Example:" in CliRunner().invoke(cli, [name, "--help"]).output
