"""compact / truncate-to-epoch apply the broker's start-up recovery first by default (issue 26; ops/load_first.py).

A broker always loads a partition before its cleaner or its follower truncation runs on it, so on a partition that
needs it (left by a crash: no ``.kafka_cleanshutdown``) ``--execute`` first does what ``recover --execute`` does;
``--no-recover-first`` keeps the files as they are. The dry run says that the recovery will be applied and what it
changes. Compared with Kafka's own Clean / Truncate in tests/test_oracle_compact.py and tests/test_oracle_truncate.py
(crash inputs); kill-at-every-step of the combined path in tests/test_crash_steps.py and test_crash_kafka_load.py.
"""

from __future__ import annotations

import json
import os

from click.testing import CliRunner
from partition_gen import mark_clean_shutdown, random_partition

from kafkalog_cli.cli.main import cli

NOW = "1700000001000"  # partition_gen's clock: no producer expires


def run(*args: str) -> tuple[int, str]:
    r = CliRunner().invoke(cli, list(args))
    assert "Traceback" not in r.output, r.output
    return r.exit_code, r.output


def recover_changes(pdir: str) -> list:
    code, out = run("recover", "--format", "json", "--now-ms", NOW, pdir)
    doc = json.loads(out)
    [p] = doc if isinstance(doc, list) else [doc]
    return p["changes"]


def crashed(tmp_path, seed: int = 6) -> str:
    pdir = str(tmp_path / "logs" / "t-0")
    random_partition(pdir, seed)
    with open(os.path.join(pdir, sorted(n for n in os.listdir(pdir) if n.endswith(".log"))[-1]), "ab") as f:
        f.write(bytes(8) + b"\x00\x00\x01\x00\x00")  # a torn append at the end of the active segment
    return pdir


def test_truncate_execute_recovers_first_by_default(tmp_path):
    pdir = crashed(tmp_path)
    assert recover_changes(pdir), "the input must need a recovery"
    code, out = run("truncate-to-epoch", "--to-offset", "50", pdir)  # dry run
    assert code == 1
    assert "the broker's start-up recovery changes" in out and "--no-recover-first" in out, out
    assert "segment(s) recovered" in out, out
    code, out = run("truncate-to-epoch", "--execute", "--no-backup", "--now-ms", NOW, "--to-offset", "50", pdir)
    assert code == 0, out
    assert "applied first" in out, out
    # loaded and truncated: the broker's next start recovers nothing (it only deletes the snapshot the truncation
    # left at a target inside a batch, above the log end on disk, as after Kafka's own truncation)
    assert [c for c in recover_changes(pdir) if not c["name"].endswith(".snapshot")] == []


def test_no_recover_first_truncates_the_files_as_they_are(tmp_path):
    pdir = crashed(tmp_path)
    code, out = run("truncate-to-epoch", "--no-recover-first", "--to-offset", "50", pdir)
    assert code == 1 and "start-up recovery" not in out, out
    code, out = run("truncate-to-epoch", "--execute", "--no-backup", "--no-recover-first", "--now-ms", NOW,
                    "--to-offset", "50", pdir)
    assert code == 0 and "start-up recovery" not in out, out
    assert recover_changes(pdir), "without the recovery the broker's next start still has work to do"


def test_compact_execute_recovers_first_by_default(tmp_path):
    pdir = str(tmp_path / "logs" / "t-0")
    random_partition(pdir, 9)  # no marker: left by a crash (no torn tail: the dry run plans on the files as they are)
    code, out = run("compact", "--now-ms", NOW, pdir)
    assert code == 1 and "the broker's start-up recovery changes" in out, out
    code, out = run("compact", "--execute", "--no-backup", "--now-ms", NOW, pdir)
    assert code == 0 and "applied first" in out, out
    # recovered, then compacted: the broker's next unclean start cuts nothing and rebuilds no offset index (it
    # still rebuilds a cleaned segment's .txnindex from the markers left, as after Kafka's own clean)
    assert [c["name"] for c in recover_changes(pdir) if c["name"].endswith((".log", ".index"))] == []


def test_clean_shutdown_partition_is_not_recovered(tmp_path):
    pdir = str(tmp_path / "logs" / "t-0")
    random_partition(pdir, 6)
    mark_clean_shutdown(pdir)
    code, out = run("truncate-to-epoch", "--to-offset", "50", pdir)
    assert code == 1 and "start-up recovery" not in out, out


def test_refusal_after_the_recovery_says_the_recovery_stays(tmp_path):
    """An epoch the recovered cache cannot answer is refused before anything is written; a refusal of the repair
    itself after the recovery ran says that the recovery stays (it is what the broker's next start leaves)."""
    pdir = crashed(tmp_path)
    before = sorted(os.listdir(pdir))
    code, out = run("truncate-to-epoch", "--execute", "--now-ms", NOW, pdir, "999")
    assert code == 2 and sorted(os.listdir(pdir)) == before, out


# ------------------------------------------------------------------ the dry run plans on the loaded partition
def _digest(root: str) -> dict:
    import hashlib

    out = {}
    for d, _dirs, files in os.walk(root):
        for n in files:
            p = os.path.join(d, n)
            out[os.path.relpath(p, root)] = hashlib.sha256(open(p, "rb").read()).hexdigest()
    return out


def _json(args: list[str]) -> tuple[int, dict]:
    r = CliRunner().invoke(cli, [*args, "--format", "json"])
    assert "Traceback" not in r.output, r.output
    return r.exit_code, json.loads(r.stdout) if r.exit_code in (0, 1) else {}


def _without_run_fields(doc: dict) -> dict:
    doc = {k: v for k, v in doc.items() if k not in ("execute", "written", "backup_dir")}
    doc["notes"] = [n.split("):", 1)[0] if "start-up recovery changes" in n else n for n in doc["notes"]]
    return doc


def test_dry_run_plans_what_execute_does_after_the_start_up_step(tmp_path):
    """A torn tail after a crash: the dry run used to plan on the files as they are (and refuse the torn batch)
    while --execute cut it first and compacted. It now plans on a copy of the loaded partition: the same document as
    the execution's, and not a byte of the live log dir changed."""
    pdir = crashed(tmp_path, seed=9)
    logdir = os.path.dirname(pdir)
    before = _digest(logdir)
    code, dry = _json(["compact", "--now-ms", NOW, pdir])
    assert code == 1, dry
    assert _digest(logdir) == before, "the dry run wrote to the log dir"
    assert "made on a copy of the partition with them applied" in dry["notes"][0], dry["notes"]
    assert not any("kafkalog-dry-run-" in json.dumps(v) for v in dry.values()), "a path of the copy leaked"
    code, done = _json(["compact", "--execute", "--no-backup", "--now-ms", NOW, pdir])
    assert code == 0, done
    assert _without_run_fields(dry) == _without_run_fields(done)


def test_dry_run_too_large_to_copy_plans_on_the_files_and_says_so(tmp_path, monkeypatch):
    pdir = crashed(tmp_path, seed=9)
    monkeypatch.setenv("KAFKALOG_DRY_RUN_COPY_MAX_BYTES", "0")
    r = CliRunner().invoke(cli, ["compact", "--now-ms", NOW, pdir])
    assert r.exit_code == 2 and "Traceback" not in r.output, r.output  # the torn batch, as the files are
    assert "the broker's start-up finishes it first, and so does --execute" in r.output, r.output


def test_truncate_dry_run_plans_after_the_start_up_step(tmp_path):
    pdir = crashed(tmp_path)
    logdir = os.path.dirname(pdir)
    before = _digest(logdir)
    code, dry = _json(["truncate-to-epoch", "--to-offset", "50", "--now-ms", NOW, pdir])
    assert code == 1 and _digest(logdir) == before
    assert "made on a copy of the partition with them applied" in dry["notes"][0], dry["notes"]
    code, done = _json(["truncate-to-epoch", "--execute", "--no-backup", "--to-offset", "50", "--now-ms", NOW, pdir])
    assert code == 0
    assert _without_run_fields(dry) == _without_run_fields(done)


def test_a_start_up_recovery_that_drops_intact_records_is_refused(tmp_path):
    """A flipped byte in the first batch of a crash-shutdown partition: the broker's recovery would cut the segment
    there and delete every later segment. compact and truncate-to-epoch refuse (exit 2, dry run and --execute alike,
    nothing written) and point to salvage; before, the dry run refused with the CRC error while --execute applied the
    recovery and dropped every record."""
    pdir = str(tmp_path / "logs" / "t-0")
    random_partition(pdir, 4)
    with open(os.path.join(pdir, f"{0:020d}.log"), "r+b") as f:
        f.seek(70)
        b = f.read(1)
        f.seek(70)
        f.write(bytes([b[0] ^ 0xFF]))
    before = _digest(str(tmp_path))
    for args in (["compact", "--now-ms", NOW], ["truncate-to-epoch", "--to-offset", "50", "--now-ms", NOW]):
        for extra in ([], ["--execute", "--no-backup"]):
            code, out = run(*args, *extra, pdir)
            assert code == 2, out
            assert "drops" in out and "intact record(s)" in out and "CRC" in out and "salvage" in out, out
            assert _digest(str(tmp_path)) == before, f"{args + extra} changed files"
