"""Redaction of record contents in the ``--format json`` documents, for ``kafkalog mcp`` (docs/mcp.md).

Why it exists: an MCP client is an AI agent whose context may leave the host (a hosted model, its logs). The log
dir's evidence an agent needs is structural (offsets, sizes, CRCs, producers, epochs, ranges); the records' bytes
are the customers' data. So, unless the operator starts the server with ``--allow-values``, every record's key,
value and header values are replaced by their length and SHA-256, wherever a document carries a record (``dump``'s
``record`` lines, ``seek-offset``'s ``record``), including the internal-topic decoders' decoded form (a
``__cluster_metadata`` ConfigRecord or an offset commit's metadata string is as sensitive as a value). Header names
and record sizes are kept: they are schema, not data. Keys are redacted too: they are the customers' identifiers
(a user id, an e-mail) as often as values are.

A redacted field is ``{"redacted": true, "length": N, "sha256": HEX}``: the length and hash of the raw bytes (from
the ``*_b64`` field beside the text when the document has it, else of the UTF-8 text), so an operator can still tell
whether a record holds a value they know (``printf %s VALUE | sha256sum``). ``null`` stays ``null`` (a tombstone is
evidence, not data).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from typing import Any

# (text field, raw base64 field) pairs of a record object (render/jsonl.py on_RecordEvent)
_RECORD_FIELDS = (("key", "key_b64"), ("payload", "value_b64"))
_DECODED_FIELDS = ("decoded",)


def digest(raw: bytes) -> dict[str, Any]:
    """The stand-in of one redacted value."""
    return {"redacted": True, "length": len(raw), "sha256": hashlib.sha256(raw).hexdigest()}


def _raw(text: Any, b64: Any) -> bytes:
    if isinstance(b64, str):
        try:
            return base64.b64decode(b64, validate=True)
        except (binascii.Error, ValueError):
            pass
    if isinstance(text, str):
        return text.encode("utf-8", "surrogatepass")
    return json.dumps(text, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode("utf-8")


def _redact_record(obj: dict[str, Any]) -> dict[str, Any]:
    out = dict(obj)
    for text_key, b64_key in _RECORD_FIELDS:
        if text_key not in out and b64_key not in out:
            continue
        text, b64 = out.get(text_key), out.get(b64_key)
        if text is None and b64 is None:
            continue
        out[text_key] = digest(_raw(text, b64))
        if b64_key in out:
            out[b64_key] = None
    for key in _DECODED_FIELDS:
        if out.get(key) is not None:
            out[key] = digest(_raw(out[key], None))
    headers = out.get("headers")
    if isinstance(headers, list):
        out["headers"] = [_redact_header(h) for h in headers]
    return out


def _redact_header(h: Any) -> Any:
    if not isinstance(h, dict):
        return h
    out = dict(h)
    if out.get("value") is not None or out.get("value_b64") is not None:
        out["value"] = digest(_raw(out.get("value"), out.get("value_b64")))
        if "value_b64" in out:
            out["value_b64"] = None
    return out


def redact(doc: Any) -> Any:
    """``doc`` with every record's key, value, header values and decoded form replaced by length and SHA-256 (a new
    object; ``doc`` is not changed). A record is an object whose ``"type"`` is ``"record"``, at any depth."""
    if isinstance(doc, list):
        return [redact(x) for x in doc]
    if not isinstance(doc, dict):
        return doc
    if doc.get("type") == "record":
        doc = _redact_record(doc)
    return {k: redact(v) if isinstance(v, dict | list) else v for k, v in doc.items()}
