"""A fast reader of ``OffsetCommitValue``, for the replay of long ``__consumer_offsets`` logs (``group-history``).

Why: nine records in ten of a busy ``__consumer_offsets`` partition are offset commits, and the generic schema reader
(``schema.read`` over ``format.flexible``) is most of the time of a replay. This reader is compiled from the same
schema table (``schemas_group.OffsetCommitValue``: whatever versions and fields it holds) per version: the
non-flexible versions (0-3) as the fixed-width fields of ``format.flexible.FIXED_WIDTH`` and Kafka's int16-length
strings, the
flexible ones through ``metadata_fast.compile_reader``. It returns the dict the generic reader returns, or None to
decline (a version the table does not have, a null or a length that does not add up, trailing bytes, bad UTF-8);
the caller then uses the generic reader, which words the problem exactly (``tests/test_group_history.py`` checks
that the two agree).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from kafkalog_cli.format.flexible import FIXED_WIDTH
from kafkalog_cli.format.layouts import SCHEMA_VERSION
from kafkalog_cli.internal_topics import metadata_fast
from kafkalog_cli.internal_topics import schemas_group as sg
from kafkalog_cli.internal_topics.schema import Message

_I16 = FIXED_WIDTH["int16"].unpack_from
Reader = Callable[[bytes, int], dict[str, Any]]


class _Decline(Exception):
    pass


def _in(v: int, rng: tuple[int, int] | None) -> bool:
    return rng is not None and rng[0] <= v <= rng[1]


def _plain_reader(msg: Message, version: int) -> Reader | None:
    """Non-flexible ``msg`` at ``version``: fixed-width numbers and non-nullable strings only, else None."""
    steps: list[tuple[str, Any, str]] = []  # ("fixed", Struct of FIXED_WIDTH, name) | ("string", None, name)
    for f in msg.fields:
        if not _in(version, f.versions):
            continue
        if f.tag is not None:
            return None
        if f.type == "string":
            if _in(version, f.nullable):
                return None
            steps.append(("string", None, f.name))
        elif isinstance(f.type, str) and f.type in FIXED_WIDTH and f.type != "float64":
            steps.append(("fixed", FIXED_WIDTH[f.type], f.name))
        else:
            return None

    def read(buf: bytes, pos: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for kind, st, name in steps:
            if kind == "fixed":
                (out[name],) = st.unpack_from(buf, pos)
                pos += st.size
            else:
                (n,) = _I16(buf, pos)
                pos += 2
                if n < 0 or pos + n > len(buf):
                    raise _Decline
                out[name] = buf[pos:pos + n].decode("utf-8")
                pos += n
        if pos != len(buf):
            raise _Decline
        return out
    return read


class OffsetCommitReader:
    """``read(value) -> (version, values)`` or None to decline."""

    def __init__(self, msg: Message = sg.OffsetCommitValue) -> None:
        self.msg = msg
        self._readers: dict[int, Reader | None] = {}

    def reader(self, version: int) -> Reader | None:
        if version not in self._readers:
            r: Reader | None = None
            if self.msg.supports(version):
                r = (metadata_fast.compile_reader(self.msg, version) if self.msg.is_flexible(version)
                     else _plain_reader(self.msg, version))
            self._readers[version] = r
        return self._readers[version]

    def read(self, value: bytes) -> tuple[int, dict[str, Any]] | None:
        if len(value) < 2:
            return None
        (ver,) = SCHEMA_VERSION.unpack_from(value, 0)
        r = self.reader(ver)
        if r is None:
            return None
        try:
            return ver, r(value, 2)
        except (_Decline, metadata_fast._Decline, IndexError, struct.error, UnicodeDecodeError):
            return None
