"""The internal-topic schema tables are the output of the committed generator, scripts/gen_schema_tables.py.

The byte-for-byte comparison needs a Kafka git repository ($KAFKALOG_KAFKA_GIT, bare or not, holding commit
1eb7644); without one it skips. The generator's rules themselves are checked on a small schema here always.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import gen_schema_tables as gen  # noqa: E402

from kafkalog_cli.format.flexible import Field  # noqa: E402


def test_version_syntax() -> None:
    assert gen.version_range("0+") == (0, 0x7FFF)
    assert gen.version_range("3") == (3, 3)
    assert gen.version_range("1-4") == (1, 4)
    assert gen.version_range("none") is None and gen.version_range(None) is None


def test_a_schema_renders_to_the_message_it_declares() -> None:
    schema = gen.parse_json_with_comments("""
    // a comment line, as Kafka's files have
    {"type": "data", "name": "DemoValue", "validVersions": "0-2", "flexibleVersions": "2+",
     "fields": [
       {"name": "Id", "type": "int64", "versions": "0+"},
       {"name": "Note", "type": "string", "versions": "1+", "nullableVersions": "1+"},
       {"name": "Parts", "type": "[]Part", "versions": "0+"},
       {"name": "Hint", "type": "int32", "taggedVersions": "2+", "tag": 0, "default": -1},
       {"name": "Isr", "type": "[]int32", "taggedVersions": "2+", "tag": 1, "default": "null",
        "nullableVersions": "2+"}],
     "commonStructs": [{"name": "Part", "versions": "0+", "fields": [
       {"name": "Topic", "type": "string", "versions": "0+"}]}]}
    """)
    namespace: dict[str, object] = {}
    exec(  # the generated text is Python: run it and compare the objects
        "from kafkalog_cli.format.flexible import Field\nfrom kafkalog_cli.internal_topics.schema import Message\n"
        + gen.message(schema), namespace)
    msg = namespace["DemoValue"]
    assert msg.name == "DemoValue" and msg.api_key is None and msg.valid == (0, 2) and msg.flexible_from == 2
    assert msg.fields == [
        Field("id", "int64"),
        Field("note", "string", versions=(1, 0x7FFF), nullable=(1, 0x7FFF)),
        Field("parts", ("array", ("struct", [Field("topic", "string")]))),
        Field("hint", "int32", versions=(2, 0x7FFF), tag=0, default=-1),
        Field("isr", ("array", "int32"), versions=(2, 0x7FFF), nullable=(2, 0x7FFF), tag=1, default=None),
    ]


@pytest.mark.skipif(not os.path.isdir(os.environ.get("KAFKALOG_KAFKA_GIT", "") or "/nonexistent"),
                    reason="set KAFKALOG_KAFKA_GIT to a Kafka git repository to compare the tables with Kafka's JSON")
def test_committed_tables_are_the_generator_output() -> None:
    src = gen.KafkaSource(os.environ["KAFKALOG_KAFKA_GIT"], gen.COMMIT)
    for table in gen.TABLES:
        committed = (gen.package_dir() / table.module).read_text()
        assert committed == gen.render(table, src), table.module
