"""Record parsers: turn a record's key and value into the text DumpLogSegments prints after ``key:``/``payload:``.

The default parser applies a key and a value decoder (String, Integer, Long, Default). Internal-topic decoders
(``--offsets-decoder`` and friends) implement the same ``RecordParser`` protocol in ``kafkalog_cli.internal_topics``.
"""

from __future__ import annotations

import zlib
from typing import Protocol

from kafkalog_cli.errors import KafkalogError
from kafkalog_cli.format.layouts import INT32, INT64
from kafkalog_cli.format.text import java_utf8


class RecordParser(Protocol):
    def parse(self, record, batch) -> tuple[str | None, str | None]:  # noqa: ANN001
        """(key text or None, payload text or None). None means that part is not printed."""


def string_decoder(b: bytes) -> str:
    return java_utf8(b)


def integer_decoder(b: bytes) -> str:
    if len(b) < INT32.size:
        raise KafkalogError("IntegerDecoder needs 4 bytes", expected="4 bytes", found=f"{len(b)} bytes")
    return str(INT32.unpack_from(b)[0])


def long_decoder(b: bytes) -> str:
    if len(b) < INT64.size:
        raise KafkalogError("LongDecoder needs 8 bytes", expected="8 bytes", found=f"{len(b)} bytes")
    return str(INT64.unpack_from(b)[0])


def default_decoder(b: bytes) -> str:
    # Java prints the byte[]'s identity hash ("[B@1b6d3586"), which is not reproducible; we print a stable one.
    return f"[B@{zlib.crc32(b) & 0x7FFFFFFF:x}"


DECODERS = {
    "StringDecoder": string_decoder,
    "IntegerDecoder": integer_decoder,
    "LongDecoder": long_decoder,
    "DefaultDecoder": default_decoder,
}
DECODER_PACKAGES = ("org.apache.kafka.tools.api.", "kafka.serializer.", "")


def resolve_decoder(name: str | None):
    """Map a decoder class name (fully qualified or short) to a function; raises ValueError for others."""
    if not name:
        return string_decoder
    for pkg in DECODER_PACKAGES:
        if name.startswith(pkg) and name[len(pkg):] in DECODERS:
            return DECODERS[name[len(pkg):]]
    raise ValueError(
        f"unsupported decoder class {name!r}: use one of "
        + ", ".join(f"org.apache.kafka.tools.api.{n}" for n in DECODERS)
    )


class DecoderParser:
    """DumpLogSegments' DecoderMessageParser: key decoder + value decoder."""

    def __init__(self, key_decoder=string_decoder, value_decoder=string_decoder, *, tombstone_key: bool = True) -> None:
        self.key_decoder = key_decoder
        self.value_decoder = value_decoder
        self.tombstone_key = tombstone_key

    def parse(self, record, batch) -> tuple[str | None, str | None]:  # noqa: ANN001
        if record.value is None and not self.tombstone_key:
            return None, None  # 2.0-2.3 print neither key nor payload for a tombstone
        key = None if record.key is None else self.key_decoder(record.key)
        value = None if record.value is None else self.value_decoder(record.value)
        return key, value
