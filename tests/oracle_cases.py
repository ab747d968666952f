"""Shared steps of the compact and truncate differential tests (tests only): run kafkalog in-process, copy a written
partition, and check that Kafka's ``Load`` of a directory kafkalog wrote changes nothing kafkalog touched.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner, Result
from kafka_real import Oracle, dir_digest

from kafkalog_cli.cli.main import cli


def kafkalog(*args: str) -> Result:
    """``kafkalog ARGS`` in-process (the CLI, not the engine: options, exit code and messages included)."""
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def execute_as_predicted(args: list[str], part: Path) -> Result:
    """``kafkalog ARGS --execute`` after its dry run (``ARGS``: the command, ``part`` and its options without
    --execute), which must change no
    file and plan exactly what the execution then does: the same exit (1 then 0, or the same refusal: 2 and its
    message) and the same JSON document but for what only an execution has (execute, written, backup_dir, the start-up
    note's tense). A partition with start-up changes is planned on a copy of the loaded partition
    (ops/load_first.loaded_copy). Returns the execution's result."""
    from kafka_real import dir_digest

    before = dir_digest(part.parent)
    dry = kafkalog(*args, "--format", "json")
    assert dir_digest(part.parent) == before, f"the dry run changed files: {dry.output}"
    done = kafkalog(*args, "--execute", "--no-backup", "--format", "json")
    if done.exit_code == 2:
        assert dry.exit_code == 2, f"--execute refused, its dry run did not ({dry.exit_code}):\n{dry.output}\n{done.output}"
        first = [ln for ln in done.stderr.splitlines() if ln.strip()][:1]
        assert first and first[0] in dry.stderr, f"the dry run refused otherwise:\n{dry.stderr}\n{done.stderr}"
        return done
    assert done.exit_code == 0 and dry.exit_code in (0, 1), f"dry {dry.exit_code}, --execute {done.exit_code}:\n" \
        f"{dry.output}\n{done.output}"
    a, b = json.loads(dry.stdout), json.loads(done.stdout)
    start_up = bool(a.get("notes")) and "start-up recovery changes" in a["notes"][0]
    if "actions" in b:  # compact's document lists them (truncate's exit follows its plan's changes)
        assert dry.exit_code == (1 if b["actions"] or start_up else 0), dry.output
    elif start_up:
        assert dry.exit_code == 1, dry.output
    for doc in (a, b):
        for key in ("execute", "written", "backup_dir"):
            doc.pop(key, None)
        if doc.get("notes") and "start-up recovery changes" in doc["notes"][0]:
            doc["notes"][0] = doc["notes"][0].split("):", 1)[0]  # the tense after the summary differs
    assert a == b, f"the dry run planned otherwise than --execute did:\n{json.dumps(a)}\n{json.dumps(b)}"
    return done


def copy_partition(part: Path, dest: Path) -> Path:
    """A copy of the data dir holding ``part`` (checkpoints and marker beside it, as a broker has them)."""
    shutil.copytree(part.parent, dest)
    return dest / part.name


def config_args(config: dict[str, str]) -> list[str]:
    out: list[str] = []
    for k, v in sorted(config.items()):
        out += ["--config", f"{k}={v}"]
    return out


def _load_changes(oracle: Oracle, part: Path, work: Path, clean: str, now_ms: int,
                  config: dict[str, str]) -> tuple[dict[str, str], dict[str, str | None]]:
    """(sha256 of every file before, name -> sha256 after Load and its clean close, None if deleted) of what
    Kafka's loader changed."""
    res = oracle.json("Load", "--in", str(part), "--work", str(work), "--now-ms", str(now_ms), "--clean-shutdown",
                      clean, "--close", *config_args(config))
    assert not res.get("error"), f"Kafka's Load failed on {part}: {res['error']}"
    assert not res.get("closeError"), f"Kafka's close failed on {part}: {res['closeError']}"
    before = {f["name"]: f["sha256"] for f in res["filesBefore"]}
    after = {f["name"]: f["sha256"] for f in res["filesAfterClose"]}
    changed: dict[str, str | None] = {n: after.get(n) for n in set(before) | set(after) if before.get(n) != after.get(n)}
    return before, changed


def assert_load_keeps(oracle: Oracle, reference: Path, written: Path, work: Path, now_ms: int,
                      config: dict[str, str]) -> None:
    """Kafka's Load (with and without the clean-shutdown marker, then a clean close) changes no file kafkalog wrote
    or left in ``written``, except as it changes the same file of ``reference`` (the input, or Kafka's own output of
    the same operation): a file Kafka changes in ``written`` must have the same bytes in ``reference`` and come out
    of Kafka's Load of ``reference`` the same (e.g. the snapshot of producers that expire at ``now_ms``, or the
    snapshot Kafka's own truncation leaves above the log end: the broker's own start-up, not the repair's doing)."""
    assert dir_digest(written), written
    for clean in ("true", "false"):
        b_after, c_after = _load_changes(oracle, written, work / f"after-{clean}", clean, now_ms, config)
        bad = {}
        if c_after:
            b_orig, c_orig = _load_changes(oracle, reference, work / f"ref-{clean}", clean, now_ms, config)
            bad = {n: sha for n, sha in c_after.items()
                   if n not in c_orig or c_orig[n] != sha or b_orig.get(n) != b_after.get(n)}
        assert not bad, f"Kafka's Load (clean shutdown {clean}) changed {sorted(bad)} of {written}"
