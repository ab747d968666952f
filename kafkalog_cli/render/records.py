"""``dump --records``: one line per record (kcat's ``-f`` format string) or one JSON object per record (kcat
``-J``'s envelope), for people who want the records, not DumpLogSegments' batches.

Format string tokens (kcat's, plus three of kafkalog's own; docs/dump.md, "Records"):

=======  ======================================================================
``%t``   topic (from the partition directory's name; empty when it is not one)
``%p``   partition (-1 when the directory is not a partition directory)
``%o``   offset
``%T``   timestamp, milliseconds since the epoch
``%I``   timestamp as UTC ISO-8601 (``2024-06-15T10:00:00.000Z``; kafkalog's own)
``%k``   key (UTF-8; invalid bytes as ``\\xNN``; nothing for a null key; with ``--key-decoder schema-registry``
         the decoded JSON, or ``<undecoded: REASON> base64:RAW``, as the text dump prints it)
``%K``   key length (-1 for null)
``%s``   value, as ``%k`` (``--value-decoder schema-registry``: decoded)
``%S``   value length (-1 for null)
``%h``   headers, ``name=value`` separated by ``,``
``%P``   producer id (kafkalog's own)
``%E``   producer epoch (kafkalog's own)
``%%``   a ``%``; ``\\n``, ``\\t``, ``\\r``, ``\\\\``: newline, tab, carriage return, backslash
=======  ======================================================================

With a schema-registry decoder the ``-J`` object's ``key``/``payload`` are that decoded text and ``decoded`` holds
the structured decode ``dump --format json`` gives (schema id, subject, version, the value or the error).

Control records (transaction markers) are not records a consumer sees and are not printed. Everything that is not a
record (errors, unreadable bytes) goes to stderr as in the text dump.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from typing import Any

from kafkalog_cli.format.batch import LOG_APPEND_TIME, Record
from kafkalog_cli.ops import dump as d
from kafkalog_cli.storage.partition_name import parse_topic_partition_name
from kafkalog_cli.storage.segment import Entry
from kafkalog_cli.timefmt import iso_utc

DEFAULT_FORMAT = "%o %I %k %s\\n"
_TOKEN = re.compile(r"%(.)|\\(.)", re.S)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\"}


class FormatError(ValueError):
    """A format string token kafkalog does not know."""


def _text(b: bytes | None) -> str:
    return "" if b is None else b.decode("utf-8", "backslashreplace")


def _headers(rec: Record) -> str:
    return ",".join(f"{_text(k)}={_text(v)}" for k, v in rec.headers)


def compile_format(fmt: str) -> list[str | tuple[str]]:
    """The format string as literal pieces and 1-tuples naming a field; FormatError for an unknown token."""
    parts: list[str | tuple[str]] = []
    pos = 0
    for m in _TOKEN.finditer(fmt):
        parts.append(fmt[pos:m.start()])
        pos = m.end()
        tok, esc = m.group(1), m.group(2)
        if tok is not None:
            if tok == "%":
                parts.append("%")
            elif tok in _FIELD_TEXT:
                parts.append((tok,))
            else:
                raise FormatError(f"unknown format token %{tok} in {fmt!r}; the tokens are "
                                  + " ".join(f"%{c}" for c in _FIELD_TEXT) + " and %%")
        elif esc in _ESCAPES:
            parts.append(_ESCAPES[esc])
        else:
            parts.append("\\" + esc)
    parts.append(fmt[pos:])
    return [p for p in parts if p != ""]


class RecordRenderer:
    """Renders a dump's ``RecordEvent``s as record lines (``fmt``) or kcat ``-J`` objects (``fmt`` None); every
    other event that reaches stderr in a text dump (``FileError``, read findings, the summary) goes through
    ``errors``, a text renderer whose stdout is discarded."""

    def __init__(self, fmt: str | None, out_bytes: Callable[[bytes], None], errors: Any, decoder: Any = None) -> None:
        """``decoder``: the dump's ``SchemaRegistryParser`` (``--key-decoder``/``--value-decoder schema-registry``),
        whose text replaces the bytes of the side it decodes."""
        self.parts = compile_format(fmt) if fmt is not None else None
        self.out_bytes = out_bytes
        self.errors = errors
        self.decoder = decoder
        self.topic = ""
        self.partition = -1

    def handle(self, ev: object) -> None:
        if isinstance(ev, d.RecordEvent):
            if not ev.entry.is_control:
                self.record(ev.entry, ev.record)
        elif isinstance(ev, d.FileBegin):
            name = parse_topic_partition_name(os.path.basename(os.path.dirname(os.path.abspath(ev.path))))
            self.topic, self.partition = (name.topic, name.partition) if name is not None else ("", -1)
        elif isinstance(ev, (d.FileError, d.ReadFindingEvent, d.Ignored)):
            self.errors.handle(ev)

    def summary(self, s: d.DumpSummary) -> None:
        self.errors.summary(s)

    def record(self, entry: Entry, rec: Record) -> None:
        if self.parts is None:
            line = json.dumps(self.envelope(entry, rec), ensure_ascii=False) + "\n"
        else:
            line = "".join(p if isinstance(p, str) else self.field(p[0], entry, rec) for p in self.parts)
        self.out_bytes(line.encode("utf-8", "surrogateescape"))

    def field(self, tok: str, entry: Entry, rec: Record) -> str:
        return _FIELD_TEXT[tok](self, entry, rec)

    def key_text(self, rec: Record) -> str:
        if rec.key is not None and self.decoder is not None and self.decoder.key:
            return self.decoder.text(rec.key, rec.headers, is_key=True)
        return _text(rec.key)

    def value_text(self, rec: Record) -> str:
        if rec.value is not None and self.decoder is not None and self.decoder.value:
            return self.decoder.text(rec.value, rec.headers, is_key=False)
        return _text(rec.value)

    def envelope(self, entry: Entry, rec: Record) -> dict[str, Any]:
        """kcat -J's object: topic, partition, offset, tstype, ts, headers (a flat name, value list), key, payload;
        ``broker`` (the broker a consumer fetched from) does not exist in a file and is left out."""
        if entry.is_legacy and entry.magic == 0:
            tstype = "none"
        else:
            tstype = "logappend" if entry.timestamp_type == LOG_APPEND_TIME else "create"
        obj: dict[str, Any] = {"topic": self.topic, "partition": self.partition, "offset": rec.offset,
                               "tstype": tstype, "ts": rec.timestamp}
        if rec.headers:
            flat: list[str | None] = []
            for k, v in rec.headers:
                flat += [_text(k), None if v is None else _text(v)]
            obj["headers"] = flat
        obj["key"] = None if rec.key is None else self.key_text(rec)
        obj["payload"] = None if rec.value is None else self.value_text(rec)
        if self.decoder is not None:
            obj["decoded"] = self.decoder.json(rec)
        return obj


# the text of each format token (the topic and partition are the renderer's, from the file's directory)
_FIELD_TEXT: dict[str, Callable[[RecordRenderer, Entry, Record], str]] = {
    "t": lambda r, e, rec: r.topic,
    "p": lambda r, e, rec: str(r.partition),
    "o": lambda r, e, rec: str(rec.offset),
    "T": lambda r, e, rec: str(rec.timestamp),
    "I": lambda r, e, rec: iso_utc(rec.timestamp),
    "k": lambda r, e, rec: r.key_text(rec),
    "K": lambda r, e, rec: str(rec.key_size),
    "s": lambda r, e, rec: r.value_text(rec),
    "S": lambda r, e, rec: str(rec.value_size),
    "h": lambda r, e, rec: _headers(rec),
    "P": lambda r, e, rec: str(e.producer_id),
    "E": lambda r, e, rec: str(e.producer_epoch),
}
