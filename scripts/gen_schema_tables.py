"""Generate the internal-topic schema tables (kafkalog_cli/internal_topics/schemas_{group,metadata,remote,txn_share}.py)
from Apache Kafka's message JSON schemas.

Kafka generates a ``*Data`` class per ``*.json`` message schema; kafkalog keeps the schemas as ``Message`` tables
instead and decodes with them (``internal_topics/schema.py``). This script is how those tables are made: it reads the JSON
files of one Kafka commit out of a Kafka git repository (bare or not) and writes the four modules, so a new Kafka
field is one regeneration, never a hand edit; ``RELEASE_TABLES`` are the metadata schemas of older releases at their
own tags. ``schemas_metadata_28.py`` (the 2.8 KRaft preview's schemas) is
restated by hand and not generated.

Kafka's git history available here ends at the base commit (1eb7644, Oct 2024); the files Kafka changed or added
after it, up to 4.4, are listed in ``scripts/kafka_schema_overlay.json`` with the commit each copy was read at and
the first release that writes the record, and are read from ``--overlay DIR`` (``DIR/<path>``, e.g. fetched from
``https://raw.githubusercontent.com/apache/kafka/<commit>/<path>``). The generated tables name each overlay file's
commit above its message and tag every message with its first release (``since``) where the manifest gives one.

Usage:
    python scripts/gen_schema_tables.py --kafka-git PATH --overlay DIR [--commit SHA] [--check]

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
OVERLAY_MANIFEST = ROOT / "scripts" / "kafka_schema_overlay.json"


@dataclass(frozen=True)
class Overlay:
    """The manifest of the files newer than the base commit: path -> (commit or None), and message -> first release."""

    files: dict[str, str | None]
    since: dict[str, str]
    directory: Path | None

    @classmethod
    def load(cls, directory: str | None, manifest: Path = OVERLAY_MANIFEST) -> Overlay:
        data = json.loads(manifest.read_text())
        files = {path: meta.get("commit") for path, meta in data["files"].items()}
        since = dict(data.get("since", {}))
        for path, meta in data["files"].items():
            if meta.get("since"):
                since[Path(path).stem] = meta["since"]
        return cls(files, since, Path(directory) if directory else None)

    def note(self, path: str) -> str:
        commit = self.files[path]
        where = f"at {commit}" if commit else "restated (no stored copy of the released file; scripts/kafka_schema_overlay.json)"
        return f"# {path} {where}\n"


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
    # __share_group_state as Kafka 4.0 writes it (uint16 snapshot epoch, no timestamps; 4.1 changed both in value
    # version 0: PR #19432, PR #20016): the base commit's files, whose v0 layouts are 4.0's (KAFKA-18437 made 4.0
    # write ShareUpdateValue at version 0; the base commit's writer still used 1)
    (Table("schemas_share_40.py",
           "``__share_group_state`` record schemas of Kafka 4.0 (the layouts before PR #19432 / #20016).",
           ("share-coordinator/src/main/resources/common/message",)), COMMIT),
    # the share-group record of __consumer_offsets whose value version 0 changed after the base commit (InitializingTopics
    # and each topic's CreateTimestamp: the layout from 4.1, 25002b6): the base commit's, 4.0's
    (Table("schemas_group_40.py",
           "``__consumer_offsets`` share-group records of Kafka 4.0 whose layout 4.1 changed in value version 0.",
           ("group-coordinator/src/main/resources/common/message/ShareGroupStatePartitionMetadataValue.json",)),
     COMMIT),
)


class KafkaSource:
    """Files of one commit of a Kafka git repository (read with ``git show``: works on bare mirrors)."""

    def __init__(self, git_dir: str, commit: str, overlay: Overlay | None = None) -> None:
        self.git_dir = git_dir
        self.commit = commit
        self.overlay = overlay

    def _git(self, *args: str) -> str:
        return subprocess.run(["git", "-C", self.git_dir, *args], check=True, capture_output=True, text=True).stdout

    def json_files(self, source: str) -> list[str]:
        if source.endswith(".json"):
            return [source]
        names = set(self._git("ls-tree", "--name-only", f"{self.commit}:{source}").split())
        if self.overlay is not None:
            names |= {p.rsplit("/", 1)[1] for p in self.overlay.files if p.rsplit("/", 1)[0] == source}
        return [f"{source}/{n}" for n in sorted(names) if n.endswith(".json")]

    def load(self, path: str) -> dict[str, Any]:
        if self.overlay is not None and path in self.overlay.files:
            if self.overlay.directory is None:
                raise SystemExit(f"{path} is newer than {self.commit[:7]}: pass --overlay DIR holding it "
                                 f"(scripts/kafka_schema_overlay.json names its commit)")
            return parse_json_with_comments((self.overlay.directory / path).read_text())
        return parse_json_with_comments(self._git("show", f"{self.commit}:{path}"))

    def note(self, path: str) -> str:
        return self.overlay.note(path) if self.overlay is not None and path in self.overlay.files else ""

    def since(self, name: str) -> str | None:
        return None if self.overlay is None else self.overlay.since.get(name)


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
    if raw == "null" or ("default" in field and raw is None):
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


def message(schema: dict[str, Any], note: str = "", since: str | None = None) -> str:
    name = schema["name"]
    valid = version_range(schema["validVersions"])
    flexible = version_range(schema.get("flexibleVersions"))
    head = f"    {name!r}, {schema.get('apiKey')!r}, {valid}, {None if flexible is None else flexible[0]!r},\n"
    common = {c["name"]: c["fields"] for c in schema.get("commonStructs", [])}
    body = _fields(schema["fields"], 8, common) or "\n"
    tail = "" if since is None else f"    since={since!r},\n"
    return f"{note}{name} = Message(\n{head}    [\n{body}    ],\n{tail})\n"


def render(table: Table, src: KafkaSource) -> str:
    paths = [p for s in table.sources for p in src.json_files(s)]
    schemas = [src.load(p) for p in paths]
    out = [f'"""{table.doc}\n\nGenerated from Apache Kafka\'s message JSON schemas at commit {src.commit}\n'
           "(restated as data; regenerate rather than hand-edit when Kafka adds a field).\"\"\"\n\n"
           "from __future__ import annotations\n\n"
           "from kafkalog_cli.format.flexible import Field\n"
           "from kafkalog_cli.internal_topics.schema import Message\n\n"]
    out.append("\n".join(message(s, src.note(p), src.since(s["name"])) for p, s in zip(paths, schemas)))
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
    ap.add_argument("--overlay", default=None, help="a directory holding the files of scripts/kafka_schema_overlay.json")
    ap.add_argument("--check", action="store_true", help="compare with the committed tables, write nothing")
    args = ap.parse_args(argv)
    src = KafkaSource(args.kafka_git, args.commit, Overlay.load(args.overlay))
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
