"""Every record of the real internal-topic files in ../shared/realdata decodes without error or exception."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from realdata_path import REALDATA

from kafkalog_cli.errors import InvalidRecordError
from kafkalog_cli.internal_topics import decode_json, make_parser
from kafkalog_cli.storage.segment import MappedFile, entries
from kafkalog_cli.versions import profile_for

REAL = REALDATA  # $KAFKALOG_REALDATA, default ../shared/realdata (tests/realdata_path.py)

pytestmark = pytest.mark.realdata


def _files(pattern: str) -> list[Path]:
    if not REAL.is_dir():
        pytest.skip("shared/realdata is absent")
    return sorted(REAL.glob(pattern))


CASES = [
    ("offsets", "**/__consumer_offsets-*/*.log", ["2.3", "3.6", "3.9", "4.0"]),
    ("transaction-log", "**/__transaction_state-*/*.log", ["2.3", "3.6", "4.0"]),
    ("cluster-metadata", "**/__cluster_metadata-0/*.log", ["3.6", "4.0"]),
    ("cluster-metadata", "**/*.checkpoint", ["3.6", "4.0"]),
]


@pytest.mark.parametrize("kind,pattern,versions", CASES, ids=[c[1] for c in CASES])
def test_every_record_decodes(kind: str, pattern: str, versions: list[str]) -> None:
    files = [f for f in _files(pattern) if kind != "cluster-metadata" or "__cluster_metadata" in str(f)]
    if not files:
        pytest.skip(f"no {pattern} files")
    parsers = [make_parser(kind, profile_for(v)) for v in versions]
    count = 0
    for f in files:
        with MappedFile(str(f)) as mf:
            for entry in entries(mf.buf, file=str(f)):
                if entry.is_control:
                    continue
                for record in entry.iter_records(mf.buf):
                    count += 1
                    for v, p in zip(versions, parsers):
                        try:
                            texts = p.parse(record, entry)
                        except InvalidRecordError as exc:
                            # a value version the release does not know (v4: 3.5+) aborts that release's tool too
                            # (checked against the 2.8.2 tool: "Unknown offset message version: 4")
                            assert kind == "offsets" and profile_for(v).version < (3, 5, 0), (f, v, exc)
                            assert re.fullmatch(r"Unknown (offset|group metadata) message version: 4", exc.message), exc
                            continue
                        for text in texts:
                            if kind == "cluster-metadata" and v != "4.0" and text and re.match(
                                    r"Error at \d+, skipping\. (org\.apache\.kafka\.common\.errors\.UnsupportedVersion"
                                    r"Exception: Unknown metadata id|Failed to deserialize record with type) ", text):
                                continue  # a record type / version newer than the release (its tool says the same)
                            assert text is None or ("Error at" not in text and "Unknown record type" not in text), (f, text)
                    assert "error" not in decode_json(kind, record), f
    assert count > 0
