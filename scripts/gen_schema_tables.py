"""Generate the internal-topic schema tables (kafkalog_cli/internal_topics/schemas_{group,metadata,remote,txn_share}.py)
from Apache Kafka's message JSON schemas.

Kafka generates a ``*Data`` class per ``*.json`` message schema; kafkalog keeps the schemas as ``Message`` tables
instead and decodes with them (``internal_topics/schema.py``). This script is how those tables are made: it reads the JSON
files of one Kafka commit out of a Kafka git repository (bare or not) and writes the four modules, so a new Kafka
field is one regeneration, never a hand edit; ``RELEASE_TABLES`` are the metadata schemas of older releases at their
own tags. ``schemas_metadata_28.py`` (the 2.8 KRaft preview's schemas) is
restated by hand and not generated.

Usage:
    python scripts/gen_schema_tables.py --kafka-git PATH [--commit SHA] [--check]

``--check`` writes nothing and exits 1 when a committed table differs from the output (``tests/test_schema_tables.py``
runs the same comparison when ``$KAFKALOG_KAFKA_GIT`` names a Kafka repository).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
COMMIT = "1eb7644349cb07139d6a3c1ad1986979647cac99"
MAX_VERSION = 0x7FFF


@dataclass(frozen=True)
class Table:
    """One generated module: its file, docstring head, and the Kafka directories/files it is made of, in order."""

    module: str
    doc: str
    sources: tuple[str, ...]  # a directory (every *.json in it, by file name) or one .json file


TABLES = (
    Table("schemas_group.py",
          "``__consumer_offsets`` record schemas (group coordinator keys/values) and the consumer embedded protocol.",
          ("group-coordinator/src/main/resources/common/message",
           "clients/src/main/resources/common/message/ConsumerProtocolSubscription.json",
           "clients/src/main/resources/common/message/ConsumerProtocolAssignment.json")),
    Table("schemas_metadata.py",
          "KRaft ``__cluster_metadata`` record schemas (MetadataRecordType), one ``Message`` per apiKey.",
          ("metadata/src/main/resources/common/metadata",)),
    Table("schemas_remote.py",
          "``__remote_log_metadata`` record schemas (TopicBasedRemoteLogMetadataManager).",
          ("storage/src/main/resources/message/RemoteLogSegmentMetadataRecord.json",
           "storage/src/main/resources/message/RemoteLogSegmentMetadataSnapshotRecord.json",
           "storage/src/main/resources/message/RemoteLogSegmentMetadataUpdateRecord.json",
           "storage/src/main/resources/message/RemotePartitionDeleteMetadataRecord.json")),
    Table("schemas_txn_share.py",
          "``__transaction_state`` and ``__share_group_state`` record schemas.",
          ("transaction-coordinator/src/main/resources/common/message",
           "share-coordinator/src/main/resources/common/message")),
)

# the __cluster_metadata schemas of older releases, whose generated readers decode any record version with their own
# fields (no version check) and know fewer record types: --cluster-metadata-decoder at --kafka-version 3.0 - 3.6
RELEASE_TABLES = (
    (Table("schemas_metadata_30.py",
           "KRaft ``__cluster_metadata`` record schemas of Kafka 3.0 (tag 3.0.2), one ``Message`` per apiKey.",
           ("metadata/src/main/resources/common/metadata",)), "25b1aea02e37da1457026f6ac82a66f81c878e45"),
    (Table("schemas_metadata_36.py",
           "KRaft ``__cluster_metadata`` record schemas of Kafka 3.6 (tag 3.6.2), one ``Message`` per apiKey.",
           ("metadata/src/main/resources/common/metadata",)), "c4deed513057c94eb502e64490d6bdc23551d8b6"),
)


class KafkaSource:
    """Files of one commit of a Kafka git repository (read with ``git show``: works on bare mirrors)."""

    def __init__(self, git_dir: str, commit: str) -> None:
        self.git_dir = git_dir
        self.commit = commit

    def _git(self, *args: str) -> str:
        return subprocess.run(["git", "-C", self.git_dir, *args], check=True, capture_output=True, text=True).stdout

    def json_files(self, source: str) -> list[str]:
        if source.endswith(".json"):
            return [source]
        names = self._git("ls-tree", "--name-only", f"{self.commit}:{source}").split()
        return [f"{source}/{n}" for n in sorted(names) if n.endswith(".json")]

    def load(self, path: str) -> dict[str, Any]:
        return parse_json_with_comments(self._git("show", f"{self.commit}:{path}"))


def parse_json_with_comments(text: str) -> dict[str, Any]:
    """Kafka's schema files are JSON with ``//`` line comments (its generator's Jackson allows them)."""
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("//")]
    return json.loads("\n".join(lines))


def version_range(spec: str | None) -> tuple[int, int] | None:
    """Kafka's version syntax: ``"3"``, ``"1-4"``, ``"2+"`` or ``"none"``."""
    if spec is None or spec == "none":
        return None
    if spec.endswith("+"):
        return int(spec[:-1]), MAX_VERSION
    lo, _, hi = spec.partition("-")
    return int(lo), int(hi or lo)


def camel(name: str) -> str:
    """The JSON key Kafka's JsonConverter writes: the field name with its first letter lower-cased."""
    return name[:1].lower() + name[1:]


Structs = dict[str, list[dict[str, Any]]]


def _type(field: dict[str, Any], indent: int, common: Structs) -> str:
    t = field["type"]
    is_array = t.startswith("[]")
    inner = t[2:] if is_array else t
    members = field.get("fields", common.get(inner))  # inline fields, else one of the schema's commonStructs
    if members is not None:
        body = _fields(members, indent + 4, common)
        s = f'("struct", [\n{body}{" " * indent}])'
    else:
        s = repr(inner)
    return f'("array", {s})' if is_array else s


def _default(field: dict[str, Any]) -> Any:
    """The value of a tagged field that is not written (its ``default``, else the type's zero value)."""
    t = field["type"]
    raw = field.get("default")
    if raw == "null":
        return None
    if t.startswith("[]"):
        return []
    if t in ("int8", "int16", "uint16", "int32", "uint32", "int64"):
        return int(raw, 0) if isinstance(raw, str) else int(raw or 0)
    if t == "float64":
        return float(raw or 0)
    if t == "bool":
        return raw in (True, "true")
    if t == "string":
        return "" if raw is None else raw
    if t == "uuid":
        return "AAAAAAAAAAAAAAAAAAAAAA"
    return None


def _field(field: dict[str, Any], indent: int, common: Structs) -> str:
    versions = version_range(field.get("versions")) or version_range(field.get("taggedVersions")) or (0, MAX_VERSION)
    args = [repr(camel(field["name"])), _type(field, indent, common)]
    if versions != (0, MAX_VERSION):
        args.append(f"versions={versions}")
    nullable = version_range(field.get("nullableVersions"))
    if nullable is not None:
        args.append(f"nullable={nullable}")
    if "tag" in field:
        args.append(f"tag={field['tag']}")
        args.append(f"default={_default(field)!r}")
    return f"{' ' * indent}Field({', '.join(args)}),\n"


def _fields(fields: list[dict[str, Any]], indent: int, common: Structs) -> str:
    return "".join(_field(f, indent, common) for f in fields)


def message(schema: dict[str, Any]) -> str:
    name = schema["name"]
    valid = version_range(schema["validVersions"])
    flexible = version_range(schema.get("flexibleVersions"))
    head = f"    {name!r}, {schema.get('apiKey')!r}, {valid}, {None if flexible is None else flexible[0]!r},\n"
    common = {c["name"]: c["fields"] for c in schema.get("commonStructs", [])}
    body = _fields(schema["fields"], 8, common) or "\n"
    return f"{name} = Message(\n{head}    [\n{body}    ],\n)\n"


def render(table: Table, src: KafkaSource) -> str:
    schemas = [src.load(p) for s in table.sources for p in src.json_files(s)]
    out = [f'"""{table.doc}\n\nGenerated from Apache Kafka\'s message JSON schemas at commit {src.commit}\n'
           "(restated as data; regenerate rather than hand-edit when Kafka adds a field).\"\"\"\n\n"
           "from __future__ import annotations\n\n"
           "from kafkalog_cli.format.flexible import Field\n"
           "from kafkalog_cli.internal_topics.schema import Message\n\n"]
    out.append("\n".join(message(s) for s in schemas))
    out.append(f"\nMESSAGES = [{', '.join(s['name'] for s in schemas)}]\n")
    return "".join(out)


def package_dir() -> Path:
    """Where the tables live (``internal_topics/``; ``internal/`` on a branch from before the rename of issue 21)."""
    for name in ("internal_topics", "internal"):
        if (ROOT / "kafkalog_cli" / name / "schema.py").is_file():
            return ROOT / "kafkalog_cli" / name
    raise SystemExit("kafkalog_cli's internal-topic package not found")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kafka-git", required=True, help="a Kafka git repository (bare or not)")
    ap.add_argument("--commit", default=COMMIT, help=f"the Kafka commit to read (default {COMMIT[:7]})")
    ap.add_argument("--check", action="store_true", help="compare with the committed tables, write nothing")
    args = ap.parse_args(argv)
    src = KafkaSource(args.kafka_git, args.commit)
    differ = []
    jobs = [(t, src) for t in TABLES] + [(t, KafkaSource(args.kafka_git, c)) for t, c in RELEASE_TABLES]
    for table, source in jobs:
        path = package_dir() / table.module
        text = render(table, source)
        if args.check:
            if path.read_text() != text:
                differ.append(str(path.relative_to(ROOT)))
        else:
            path.write_text(text)
            print(f"wrote {path.relative_to(ROOT)}")
    if differ:
        print("differs from the generator's output: " + ", ".join(differ), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
