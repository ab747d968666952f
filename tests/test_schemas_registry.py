"""``kafkalog schemas``: the registry state replayed from ``_schemas`` records (soft and hard deletes, CONFIG, MODE,
DELETE_SUBJECT, references, --at, leftovers and replicas), the export bundle against a registry stand-in."""

from __future__ import annotations

import json
import os
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest
from click.testing import CliRunner
from schema_world import (
    AVRO_V1,
    AVRO_V2,
    NOOP_KEY,
    config_key,
    delete_subject_key,
    mode_key,
    schema_key,
    schema_record,
    schema_value,
    write_segment,
)

from kafkalog_cli.cli.main import cli
from kafkalog_cli.internal_topics.schema_registry import replay
from kafkalog_cli.ops.schemas import export, load_registry


def _history(logs: Path) -> Path:
    """A registry's history: two subjects, a soft delete then a hard delete, CONFIG and MODE records."""
    recs = [
        (NOOP_KEY, None),
        schema_record("orders-value", 1, 1, AVRO_V1),  # offset 1
        schema_record("orders-value", 2, 2, AVRO_V2),  # 2
        (config_key(None), b'{"compatibilityLevel":"FULL"}'),  # 3
        (config_key("orders-value"), b'{"compatibilityLevel":"NONE"}'),  # 4
        schema_record("pay-value", 1, 3, '{"type":"string"}'),  # 5
        (mode_key(None), b'{"mode":"IMPORT"}'),  # 6
        # soft delete of orders-value v1 (the registry rewrites the SCHEMA record with deleted=true), then the hard
        # delete (permanent=true): a tombstone for the key
        (schema_key("orders-value", 1), schema_value("orders-value", 1, 1, AVRO_V1, deleted=True)),  # 7
        (schema_key("orders-value", 1), None),  # 8
        (delete_subject_key("pay-value"), b'{"subject":"pay-value","version":1}'),  # 9
        (mode_key(None), b'{"mode":"READONLY"}'),  # 10
        (config_key("orders-value"), None),  # 11: the subject's setting removed
    ]
    write_segment(logs / "_schemas-0", recs)
    return logs


def test_replay_soft_hard_delete_config_mode(tmp_path: Path) -> None:
    reg = load_registry([str(_history(tmp_path / "logs"))])
    v1, v2 = reg.find("orders-value", 1), reg.find("orders-value", 2)
    pay = reg.find("pay-value", 1)
    assert v1 is not None and v2 is not None and pay is not None
    assert (v1.hard_deleted, v1.deleted) == (True, True)
    assert v1.schema == AVRO_V1 and v1.schema_id == 1  # the hard-deleted content is still readable
    assert (v2.deleted, v2.hard_deleted, v2.schema_id) == (False, False, 2)
    assert pay.deleted and not pay.hard_deleted and pay.schema_type == "AVRO"
    assert reg.config == {None: "FULL"}
    assert reg.mode == {None: "READONLY"}
    assert reg.compatibility("orders-value") == "FULL"
    assert [v.subject for v in reg.by_id(1)] == ["orders-value"]


def test_at_offset_gives_the_earlier_state(tmp_path: Path) -> None:
    logs = _history(tmp_path / "logs")
    reg = load_registry([str(logs)], at_offset=6)
    v1 = reg.find("orders-value", 1)
    assert v1 is not None and not v1.deleted and not v1.hard_deleted
    assert reg.mode == {None: "IMPORT"}
    assert reg.config == {None: "FULL", "orders-value": "NONE"}
    r = CliRunner().invoke(cli, ["schemas", "--at", "7", "--format", "json", str(logs)])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    state = {(v["subject"], v["version"]): (v["deleted"], v["hard_deleted"]) for v in doc["versions"]}
    assert state[("orders-value", 1)] == (True, False)  # soft-deleted at 7, hard-deleted only at 8
    # a time: everything up to the 5th record's timestamp (write_segment: ts = 1_700_000_000_000 + offset)
    r = CliRunner().invoke(cli, ["schemas", "--at", "1700000000005ms", "--format", "json", str(logs)])
    assert r.exit_code == 0, r.output
    assert {v["subject"] for v in json.loads(r.output)["versions"]} == {"orders-value", "pay-value"}
    assert json.loads(r.output)["mode"] == {}


def test_text_table_and_exit_codes(tmp_path: Path) -> None:
    logs = _history(tmp_path / "logs")
    r = CliRunner().invoke(cli, ["schemas", str(logs)])
    assert r.exit_code == 0, r.output
    assert "global compatibility: FULL; global mode: READONLY" in r.output
    line = next(ln for ln in r.output.splitlines() if ln.startswith("orders-value") and "  1  " in ln)
    assert "hard-deleted" in line
    assert "1 hard-deleted version(s) still readable" in r.output
    empty = tmp_path / "empty"
    (empty / "t-0").mkdir(parents=True)
    write_segment(empty / "t-0", [(b"k", b"v")])
    r = CliRunner().invoke(cli, ["schemas", str(empty)])
    assert r.exit_code == 2
    assert "no _schemas partition found" in r.output and "hint:" in r.output
    assert "Traceback" not in r.output


def test_bad_records_are_notes_not_crashes(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    write_segment(logs / "_schemas-0", [(b"not json", b"{}"), (b'{"keytype":"SCHEMA"}', b"{}"),
                                        schema_record("a-value", 1, 1, '"int"'), (b'{"keytype":"CONTEXT"}', b"{}")])
    reg = load_registry([str(logs)])
    assert reg.find("a-value", 1) is not None
    assert any("key is not JSON" in n for n in reg.notes)
    assert any("SCHEMA key without subject" in n for n in reg.notes)
    assert any("'CONTEXT' not interpreted" in n for n in reg.notes)


def test_compacted_copy_plus_leftover_and_replica(tmp_path: Path) -> None:
    """The cleaner dropped offset 0..1 from the live segment; its .log.deleted leftover (and another broker's
    replica) still hold them: the replay joins every copy by offset."""
    full = [schema_record("x-value", 1, 1, '"int"'), schema_record("x-value", 2, 2, '"long"'),
            (schema_key("x-value", 1), None)]
    a = tmp_path / "b1" / "_schemas-0"
    write_segment(a, full[2:], base_offset=2)  # compacted: only the tombstone survives
    reg = load_registry([str(tmp_path / "b1")])
    assert reg.find("x-value", 1) is None and any("compacted away" in n for n in reg.notes)
    write_segment(a, full[:2], name="00000000000000000000.log.deleted")
    reg = load_registry([str(tmp_path / "b1")])
    v1 = reg.find("x-value", 1)
    assert v1 is not None and v1.hard_deleted and v1.schema == '"int"'
    b = tmp_path / "b2" / "_schemas-0"
    write_segment(b, full[:2])
    os.remove(a / "00000000000000000000.log.deleted")
    reg = replay([(0, str(a)), (0, str(b))])
    assert reg.find("x-value", 1) is not None and reg.find("x-value", 1).hard_deleted  # type: ignore[union-attr]
    assert reg.find("x-value", 2) is not None


class _StandIn(BaseHTTPRequestHandler):
    """A registry stand-in in IMPORT mode: registers with the id and version given, as the real one does."""

    calls: list[tuple[str, str, object]] = []
    state: dict[str, object] = {}

    def _body(self) -> object:
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        return json.loads(raw) if raw else None

    def _reply(self, obj: object, code: int = 200) -> None:
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_PUT(self) -> None:  # noqa: N802
        body = self._body()
        self.calls.append(("PUT", self.path, body))
        if self.path.startswith("/mode"):
            self.state["mode"] = body["mode"]  # type: ignore[index]
        self._reply(body)

    def do_POST(self) -> None:  # noqa: N802
        body = self._body()
        self.calls.append(("POST", self.path, body))
        if self.state.get("mode") != "IMPORT" or "id" not in body:  # type: ignore[operator]
            self._reply({"error_code": 42205, "message": "not in IMPORT mode"}, 422)
            return
        self._reply({"id": body["id"]})  # type: ignore[index]

    def do_DELETE(self) -> None:  # noqa: N802
        self.calls.append(("DELETE", self.path, None))
        self._reply(1)

    def log_message(self, *a: object) -> None:
        pass


def test_export_restores_ids_and_versions_in_import_mode(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    ref_schema = json.dumps({"type": "record", "name": "Money", "namespace": "m",
                             "fields": [{"name": "cents", "type": "long"}]})
    user = json.dumps({"type": "record", "name": "Pay", "fields": [{"name": "amount", "type": "m.Money"}]})
    write_segment(logs / "_schemas-0", [
        schema_record("pay-value", 1, 7, user, references=[{"name": "m.Money", "subject": "money", "version": 1}]),
        schema_record("money", 1, 8, ref_schema),  # a higher id than its user (ids reassigned by a restore): refs first
        schema_record("gone-value", 1, 9, '"string"'),
        (schema_key("gone-value", 1), schema_value("gone-value", 1, 9, '"string"', deleted=True)),
        (schema_key("gone-value", 1), None),
        schema_record("soft-value", 1, 11, '"int"', deleted=True),
        (config_key("pay-value"), b'{"compatibilityLevel":"FORWARD"}'),
    ])
    reg = load_registry([str(logs)])
    out = tmp_path / "bundle"
    res = export(reg, str(out))
    assert res.skipped_hard_deleted == 1 and res.registered == 3
    res = export(reg, str(out), include_hard_deleted=True)
    assert res.registered == 4 and res.hard_deleted == 1
    _StandIn.calls, _StandIn.state = [], {}
    srv = HTTPServer(("127.0.0.1", 0), _StandIn)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        env = {**os.environ, "SCHEMA_REGISTRY_URL": f"http://127.0.0.1:{srv.server_port}"}
        p = subprocess.run(["sh", str(out / "restore.sh")], env=env, capture_output=True, text=True, timeout=60)
    finally:
        srv.shutdown()
    assert p.returncode == 0, p.stderr
    calls = _StandIn.calls
    assert calls[0] == ("PUT", "/mode?force=true", {"mode": "IMPORT"})
    posts = [(path, body["id"], body["version"]) for m, path, body in calls if m == "POST"]  # type: ignore[index]
    assert posts == [("/subjects/money/versions", 8, 1), ("/subjects/pay-value/versions", 7, 1),
                     ("/subjects/gone-value/versions", 9, 1), ("/subjects/soft-value/versions", 11, 1)]
    pay = next(body for m, path, body in calls if m == "POST" and "pay-value" in path)
    assert pay["references"] == [{"name": "m.Money", "subject": "money", "version": 1}]  # type: ignore[index]
    deletes = [path for m, path, _b in calls if m == "DELETE"]
    assert deletes == ["/subjects/gone-value/versions/1", "/subjects/soft-value/versions/1"]
    assert ("PUT", "/config/pay-value", {"compatibility": "FORWARD"}) in calls
    assert calls[-1] == ("PUT", "/mode?force=true", {"mode": "READWRITE"})
    r = CliRunner().invoke(cli, ["schemas", "--export", str(tmp_path / "b2"), "--format", "json", str(logs)])
    assert r.exit_code == 0 and json.loads(r.output)["registered"] == 3
    manifest = json.loads((tmp_path / "b2" / "manifest.json").read_text())
    assert {s["id"] for s in manifest["schemas"]} == {7, 8, 11}


def test_include_hard_deleted_needs_export(tmp_path: Path) -> None:
    r = CliRunner().invoke(cli, ["schemas", "--include-hard-deleted", str(tmp_path)])
    assert r.exit_code == 2 and "needs --export" in r.output


@pytest.mark.parametrize("at", ["yesterday-ish", "-x"])
def test_bad_at_is_a_usage_error(tmp_path: Path, at: str) -> None:
    r = CliRunner().invoke(cli, ["schemas", "--at", at, str(_history(tmp_path / "logs"))])
    assert r.exit_code == 2 and "--at" in r.output and "Traceback" not in r.output
