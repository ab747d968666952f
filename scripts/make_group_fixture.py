#!/usr/bin/env python3
"""Write fixtures/groups/: a log dir with ``__consumer_offsets-5`` (group ``orders-app`` hashes to partition 5 of
50) and ``connect-offsets-0``, the sample of ``group-history`` (the MCP examples and the documented commands).
Deterministic: the same bytes on every run. tests/test_group_history.py checks that Kafka's own DumpLogSegments
decodes these records as kafkalog does.

    python scripts/make_group_fixture.py
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kafkalog_cli.format.encoder import RecordSpec, encode_batch  # noqa: E402
from kafkalog_cli.internal_topics import schema as sc  # noqa: E402
from kafkalog_cli.internal_topics import schemas_group as sg  # noqa: E402
from kafkalog_cli.internal_topics.locate import partition_for  # noqa: E402

OUT = ROOT / "fixtures" / "groups"
T0 = 1700000000000
GROUP = "orders-app"


def _pref(v: int, body: bytes) -> bytes:
    return struct.pack(">h", v) + body


def commit(group: str, topic: str, part: int, offset: int, ts: int, epoch: int = 0) -> tuple[bytes, bytes]:
    key = _pref(1, sc.encode(sg.OffsetCommitKey, {"group": group, "topic": topic, "partition": part}, 1))
    value = _pref(3, sc.encode(sg.OffsetCommitValue, {"offset": offset, "leaderEpoch": epoch, "metadata": "",
                                                      "commitTimestamp": ts}, 3))
    return key, value


def tombstone(group: str, topic: str, part: int) -> tuple[bytes, None]:
    return _pref(1, sc.encode(sg.OffsetCommitKey, {"group": group, "topic": topic, "partition": part}, 1)), None


def generation(group: str, gen: int, members: list[str], ts: int) -> tuple[bytes, bytes]:
    key = _pref(2, sc.encode(sg.GroupMetadataKey, {"group": group}, 2))
    mems = [{"memberId": m, "groupInstanceId": None, "clientId": "orders-consumer", "clientHost": "/10.0.0.7",
             "rebalanceTimeout": 300000, "sessionTimeout": 45000, "subscription": b"", "assignment": b""}
            for m in members]
    value = _pref(3, sc.encode(sg.GroupMetadataValue, {
        "protocolType": "consumer", "generation": gen, "protocol": "range" if members else None,
        "leader": members[0] if members else None, "currentStateTimestamp": ts, "members": mems}, 3))
    return key, value


def write_log(pdir: Path, records: list[tuple[bytes | None, bytes | None, int]]) -> None:
    if pdir.exists():
        shutil.rmtree(pdir)
    pdir.mkdir(parents=True)
    out = bytearray()
    for offset, (k, v, ts) in enumerate(records):
        out += encode_batch([RecordSpec(key=k, value=v, timestamp=ts)], base_offset=offset, base_timestamp=ts,
                            partition_leader_epoch=0)
    (pdir / "00000000000000000000.log").write_bytes(bytes(out))


def main() -> None:
    cp = partition_for(GROUP)
    recs: list[tuple[bytes | None, bytes | None, int]] = []

    def add(kv: tuple[bytes, bytes | None], ts: int) -> None:
        recs.append((kv[0], kv[1], ts))

    add(generation(GROUP, 1, ["orders-consumer-1"], T0), T0)
    for i in range(1, 6):
        add(commit(GROUP, "orders", 0, 2 * i, T0 + 1000 * i), T0 + 1000 * i)
        add(commit(GROUP, "orders", 1, i, T0 + 1000 * i), T0 + 1000 * i)
    add(generation(GROUP, 2, [], T0 + 7000), T0 + 7000)
    add(commit(GROUP, "orders", 0, 0, T0 + 8000), T0 + 8000)  # kafka-consumer-groups --reset-offsets --to-earliest
    add(tombstone(GROUP, "orders", 1), T0 + 9000)
    add(generation(GROUP, 3, ["orders-consumer-2"], T0 + 10_000), T0 + 10_000)
    add(commit(GROUP, "orders", 0, 4, T0 + 11_000), T0 + 11_000)
    write_log(OUT / f"__consumer_offsets-{cp}", recs)

    def ck(connector: str, part: dict) -> bytes:
        return json.dumps([connector, part], separators=(",", ":")).encode()

    a = {"filename": "/data/in/a.csv"}
    rows: list[tuple[bytes | None, bytes | None, int]] = [
        (ck("csv-source", a), json.dumps({"position": 100}).encode(), T0 + 1000),
        (ck("csv-source", a), json.dumps({"position": 250}).encode(), T0 + 5000),
        (ck("csv-source", a), None, T0 + 8000),  # offsets reset (KIP-875)
        (ck("csv-source", a), json.dumps({"position": 40}).encode(), T0 + 9000),
    ]
    write_log(OUT / "connect-offsets-0", rows)
    print(f"wrote {OUT} ({len(recs)} + {len(rows)} records)")
    os.sync()


if __name__ == "__main__":
    main()
