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


@pytest.mark.skipif(not os.path.isdir(os.environ.get("KAFKALOG_KAFKA_GIT", "") or "/nonexistent")
                    or not os.path.isdir(os.environ.get("KAFKALOG_KAFKA_OVERLAY", "") or "/nonexistent"),
                    reason="set KAFKALOG_KAFKA_GIT to a Kafka git repository and KAFKALOG_KAFKA_OVERLAY to the files of "
                           "scripts/kafka_schema_overlay.json to compare the tables with Kafka's JSON")
def test_committed_tables_are_the_generator_output() -> None:
    overlay = gen.Overlay.load(os.environ["KAFKALOG_KAFKA_OVERLAY"])
    src = gen.KafkaSource(os.environ["KAFKALOG_KAFKA_GIT"], gen.COMMIT, overlay)
    for table in gen.TABLES:
        committed = (gen.package_dir() / table.module).read_text()
        assert committed == gen.render(table, src), table.module


def test_overlay_files_extend_the_base_commit(tmp_path) -> None:  # noqa: ANN001
    """A file of the manifest is read from --overlay and named with its commit and first release in the table; a
    file the manifest lists but --overlay lacks stops the generator (never a silently older table)."""
    manifest = tmp_path / "m.json"
    manifest.write_text('{"files": {"d/NewKey.json": {"commit": "abc123", "since": "4.4"}}, "since": {}}')
    (tmp_path / "o" / "d").mkdir(parents=True)
    (tmp_path / "o" / "d" / "NewKey.json").write_text(
        '{"apiKey": 30, "type": "coordinator-key", "name": "NewKey", "validVersions": "0", "flexibleVersions": "none",'
        ' "fields": [{"name": "GroupId", "type": "string", "versions": "0"}]}')
    overlay = gen.Overlay.load(str(tmp_path / "o"), manifest)
    src = gen.KafkaSource("/nonexistent", gen.COMMIT, overlay)
    text = gen.message(src.load("d/NewKey.json"), src.note("d/NewKey.json"), src.since("NewKey"))
    assert text.startswith("# d/NewKey.json at abc123\nNewKey = Message(\n    'NewKey', 30, (0, 0), None,")
    assert "since='4.4'" in text
    missing = gen.KafkaSource("/nonexistent", gen.COMMIT, gen.Overlay.load(None, manifest))
    with pytest.raises(SystemExit, match="pass --overlay DIR"):
        missing.load("d/NewKey.json")


def test_generated_tables_name_every_newer_file() -> None:
    """Each file of the manifest appears in a generated table with its commit (or as restated)."""
    overlay = gen.Overlay.load(None)
    tables = "".join((gen.package_dir() / t.module).read_text() for t in gen.TABLES)
    for path, commit in overlay.files.items():
        assert f"# {path} {'at ' + commit if commit else 'restated'}" in tables, path
