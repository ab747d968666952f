"""The one PATH resolver (storage/paths.py, issue 35 item 2): every command resolves its PATH arguments through it,
so a path shape gets the same answer and the same typed error whatever the command. The table runs each shape
through the installed command tree (click's CliRunner over ``kafkalog_cli.cli.main.cli``)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from shipping_helpers import make_partition

from kafkalog_cli.cli.main import cli
from kafkalog_cli.storage import paths

UUID = "0123456789abcdef0123456789abcdef"
SEG = "0" * 20 + ".log"


def _tree(root: Path) -> dict[str, Path]:
    """A log dir with two live partitions, a -delete, a -future and a -stray copy, a folder of two log dirs, and the
    shapes that are not Kafka's."""
    ld = root / "logs"
    for name in ("orders-0", "orders-1", f"orders-2.{UUID}-delete", f"orders-3.{UUID}-future",
                 f"orders-4.{UUID}-stray"):
        make_partition(ld, name)
    (ld / "meta.properties").write_text("version=1\nbroker.id=1\n")
    fleet = root / "fleet"
    make_partition(fleet / "b1", "orders-0")
    make_partition(fleet / "b2", "orders-0")
    (root / "notes.txt").write_text("not kafka\n")
    (root / "empty").mkdir()
    return {"logdir": ld, "partition": ld / "orders-0", "future": ld / f"orders-3.{UUID}-future",
            "fleet": fleet, "file": root / "notes.txt", "empty": root / "empty", "missing": root / "nope",
            "segment": ld / "orders-0" / SEG}


# ------------------------------------------------------------------------------------------------ the resolver
def test_partition_dirs_take_the_live_partitions_of_a_log_dir(tmp_path: Path) -> None:
    t = _tree(tmp_path)
    assert paths.partition_dirs([str(t["logdir"])]) == [str(t["logdir"] / "orders-0"), str(t["logdir"] / "orders-1")]
    assert paths.partition_dirs([str(t["partition"])]) == [str(t["partition"])]


def test_log_dir_partitions_go_one_level_down(tmp_path: Path) -> None:
    t = _tree(tmp_path)
    found, notes = paths.log_dir_partitions([str(t["fleet"]), str(t["logdir"])])
    assert [(os.path.relpath(p, tmp_path), os.path.relpath(d, tmp_path)) for p, d in found] == [
        ("fleet/b1/orders-0", "fleet/b1"), ("fleet/b2/orders-0", "fleet/b2"),
        ("logs/orders-0", "logs"), ("logs/orders-1", "logs")]
    assert notes == []
    assert paths.log_dir_partitions([str(t["empty"])])[1] == [f"{t['empty']}: no partition directories (topic-N "
                                                              "holding .log segments) found"]


def test_segment_groups_and_files(tmp_path: Path) -> None:
    t = _tree(tmp_path)
    idx = str(t["partition"] / ("0" * 20 + ".index"))
    assert paths.segment_groups([idx]) == {str(t["partition"]): [str(t["segment"])]}
    assert paths.segment_groups([idx, str(t["partition"])]) == {str(t["partition"]): None}
    files = paths.directory_files(str(t["partition"]))
    assert [os.path.basename(f) for f in files] == [SEG, "0" * 20 + ".index", "0" * 20 + ".timeindex"]
    segs = paths.segment_files(str(t["logdir"]))
    assert sorted(os.path.relpath(s, t["logdir"]) for s in segs) == sorted(
        f"{n}/{SEG}" for n in ("orders-0", "orders-1", f"orders-2.{UUID}-delete", f"orders-3.{UUID}-future",
                               f"orders-4.{UUID}-stray"))
    assert paths.segment_files(str(tmp_path / "nope")) == []


@pytest.mark.parametrize(("name", "key"), [
    ("orders-0", ("orders", "0")),
    (f"orders-3.{UUID}-future", ("orders", "3")),  # the future log is checkpointed in its log dir
    (f"orders-2.{UUID}-delete", (f"orders-2.{UUID}-delete", "-1")),  # no longer a log of the broker: no entry
    (f"orders-4.{UUID}-stray", (f"orders-4.{UUID}-stray", "-1")),
    ("weird", ("weird", "-1")),
])
def test_checkpoint_key(name: str, key: tuple[str, str]) -> None:
    assert paths.checkpoint_key(name) == key


def test_high_watermark_of_a_future_copy_is_its_own_entry(tmp_path: Path) -> None:
    """LogManager checkpoints ``currentLogs ++ futureLogs`` per log dir (LogManager.scala:1460-1471), keyed by
    TopicPartition: a ``-future`` copy's entry is ``orders 3``. The name used to be cut at its last '-' (topic
    ``orders-3.<uuid>``, partition ``future``), which never matches."""
    from kafkalog_cli.broker.checkpoints import high_watermark

    t = _tree(tmp_path)
    (t["logdir"] / "replication-offset-checkpoint").write_text("0\n2\norders 0 7\norders 3 11\n")
    assert high_watermark(str(t["future"])) == (11, "")
    assert high_watermark(str(t["partition"])) == (7, "")


def test_checkpoint_partition_is_parsed_as_the_broker_parses_it(tmp_path: Path) -> None:
    """OffsetCheckpointFile.java:86-88: the entry's partition is ``Integer.parseInt``, so ``00`` and ``+0`` are
    partition 0 (a string comparison missed them)."""
    from kafkalog_cli.broker.checkpoints import high_watermark

    t = _tree(tmp_path)
    (t["logdir"] / "replication-offset-checkpoint").write_text("0\n2\norders 00 7\norders +1 9\n")
    assert high_watermark(str(t["partition"])) == (7, "")
    assert high_watermark(str(t["logdir"] / "orders-1")) == (9, "")


def test_one_java_int_parser() -> None:
    """The checkpoint reader and the partition-name parser parse numbers alike (``Character.digit``: decimal digits of
    any script; no superscripts, no spaces)."""
    from kafkalog_cli.storage import companions as comp
    from kafkalog_cli.storage.partition_name import java_parse_int

    for text in ("7", "+7", "-7", "\u0667", "2147483647", "2147483648", "\u00b2", " 7", "7\n", "", "+"):
        want = java_parse_int(text)
        try:
            got: int | None = comp.java_parse_int(text)
        except ValueError:
            got = None
        assert got == want, text
    assert comp.parse_checkpoint("0\n\u0661\norders 0 5\n").entries == [["orders", "0", "5"]]


def test_recovery_point_rewrite_skips_entries_the_broker_would_not_parse(tmp_path: Path) -> None:
    """A superscript digit is ``str.isdigit`` but not a Java int: the rewrite used to die on ``int('\u00b2')``."""
    from kafkalog_cli.ops.recover import write_recovery_point

    t = _tree(tmp_path)
    cp = t["logdir"] / "recovery-point-offset-checkpoint"
    cp.write_text("0\n2\norders \u00b2 5\norders 0 3\n")
    write_recovery_point(str(t["partition"]), 1)
    assert cp.read_text() == "0\n2\norders \u00b2 5\norders 0 1\n"


def test_abort_command_names_the_partition_of_a_future_copy(tmp_path: Path) -> None:
    from kafkalog_cli.ops.salvage import abort_command

    t = _tree(tmp_path)
    assert "--topic orders --partition 3 --start-offset 5" in abort_command(str(t["future"]), 5)
    assert "--topic orders --partition 0 " in abort_command(str(t["partition"]), 5)


# ------------------------------------------------------------------------------------------------ the CLI table
DIR_COMMANDS = ("recover", "salvage", "compact", "truncate-to-epoch", "seek-offset", "seek-time", "explain-cleaner",
                "explain-retention", "compare-replicas")
FILE_COMMANDS = ("dump", "verify-crc", "rebuild-index", "transactions", "scan")
EXTRA = {"seek-offset": ["0"], "seek-time": ["0"], "truncate-to-epoch": ["0"]}


def _run(cmd: str, path: Path, tmp_path: Path) -> tuple[int, str]:
    args = [cmd, str(path), *EXTRA.get(cmd, [])]
    if cmd == "compare-replicas":
        args = [cmd, str(path), str(path)]
    if cmd == "scan":
        args += ["--out", str(tmp_path / "scan-out"), "--jobs", "1"]
    res = CliRunner().invoke(cli, args)
    said = res.output + (res.stderr if res.stderr_bytes is not None else "")
    assert "Traceback" not in said and "internal error" not in said, said
    return res.exit_code, said


@pytest.mark.parametrize("cmd", DIR_COMMANDS + FILE_COMMANDS)
def test_a_missing_path_is_the_same_error_everywhere(tmp_path: Path, cmd: str) -> None:
    t = _tree(tmp_path)
    code, said = _run(cmd, t["missing"], tmp_path)
    assert code == 2, said
    # dump keeps its golden wording (fixtures/golden/missing-file.txt): it opens the argument as a file
    want = "no such file" if cmd == "dump" else paths.NO_SUCH_PATH
    assert f"kafkalog: error: {t['missing']}: {want}" in said, said


@pytest.mark.parametrize("cmd", DIR_COMMANDS)
def test_a_file_where_a_directory_is_needed(tmp_path: Path, cmd: str) -> None:
    t = _tree(tmp_path)
    for shape in ("file", "segment"):
        code, said = _run(cmd, t[shape], tmp_path)
        assert code == 2, said
        assert re.search(rf"kafkalog: error: {re.escape(str(t[shape]))}: not a directory", said), said


@pytest.mark.parametrize("cmd", ("recover", "salvage", "explain-cleaner", "explain-retention"))
def test_a_log_dir_names_its_live_partitions(tmp_path: Path, cmd: str) -> None:
    """The commands over a log dir's partitions take its live ``topic-N`` directories, never a -delete, -future or
    -stray copy (the broker renamed those itself)."""
    t = _tree(tmp_path)
    code, said = _run(cmd, t["logdir"], tmp_path)
    named = set(re.findall(r"orders-\d+(?:\.[0-9a-f]{32}-\w+)?", said))
    assert named == {"orders-0", "orders-1"}, (code, said)


@pytest.mark.parametrize("cmd", ("dump", "verify-crc", "scan"))
def test_the_file_readers_read_every_copy(tmp_path: Path, cmd: str) -> None:
    """dump, verify-crc and scan read the files of every directory below a log dir, suffixed copies included."""
    t = _tree(tmp_path)
    code, said = _run(cmd, t["logdir"], tmp_path)
    assert code in (0, 1), said
    if cmd == "dump":
        assert said.count("Dumping ") >= 5 and f"orders-3.{UUID}-future/{SEG}" in said, said
    elif cmd == "verify-crc":
        assert "OK: 5 files" in said, said
    else:
        assert "orders-2" in said and "orders-4" in said, said


@pytest.mark.parametrize("cmd", ("dump", "verify-crc", "scan", "transactions", "explain-cleaner",
                                 "explain-retention"))
def test_an_empty_partition_with_a_subdirectory_is_an_empty_log(tmp_path: Path, cmd: str) -> None:
    """The broker's loader reads only a partition directory's files (LogLoader.java:359-361): ``orders-0`` holding
    only a directory is an empty log, a note (scan used to call it a wrong path, exit 2)."""
    part = tmp_path / "logs" / "orders-0"
    (part / "junk").mkdir(parents=True)
    code, said = _run(cmd, part, tmp_path)
    assert code == 0 and ("kafkalog: note:" in said or "info no-segment" in said) and "an empty log" in said, said


@pytest.mark.parametrize("cmd", DIR_COMMANDS + FILE_COMMANDS)
def test_a_directory_that_cannot_be_listed_is_the_same_error_everywhere(tmp_path: Path, cmd: str,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """``errors.cannot_list``: 'cannot list directory: permission denied', exit 2, in every command (explain-* and
    transactions raised PermissionError; the repairs said 'Permission denied', the loader 'cannot list the
    directory', scan 'no segment files in it'). Simulated: the suite may run as root, which chmod cannot stop."""
    import errno

    t = _tree(tmp_path)
    bad = str(t["partition"])
    real_listdir, real_scandir = os.listdir, os.scandir

    def denied(real):  # noqa: ANN001, ANN202
        def call(p=".", *a):  # noqa: ANN001, ANN002, ANN202
            if os.path.abspath(os.fspath(p)) == bad:
                raise PermissionError(errno.EACCES, "Permission denied", os.fspath(p))
            return real(p, *a)
        return call

    monkeypatch.setattr(os, "listdir", denied(real_listdir))
    monkeypatch.setattr(os, "scandir", denied(real_scandir))
    code, said = _run(cmd, t["partition"], tmp_path)
    assert code == 2, said
    assert f"kafkalog: error: {bad}: cannot list directory: permission denied" in said, said


def _empty_partition_codes() -> list[tuple[str, int]]:
    from test_verdicts import TABLE

    return [(cmd, code) for cmd, which, code, _cell in TABLE if which == "empty partition"]


@pytest.mark.parametrize(("cmd", "code"), _empty_partition_codes())
@pytest.mark.parametrize("suffix", ["", f".{UUID}-future", f".{UUID}-delete"])
def test_an_empty_suffixed_copy_is_an_empty_log_everywhere(tmp_path: Path, cmd: str, code: int, suffix: str) -> None:
    """docs/commands.md's "empty partition" column holds for a -future/-delete copy too: the broker loads such a
    directory (LogManager.scala:467-472, parseTopicPartitionName takes the name), so an empty one is an empty log.
    dump, scan, explain-* and transactions called it a wrong path (exit 2) where verify-crc and seek-* said empty."""
    part = tmp_path / "logs" / f"orders-0{suffix}"
    part.mkdir(parents=True)
    got, said = _run(cmd, part, tmp_path)
    assert got == code, said
    if code != 2:
        assert "empty" in said, said


def test_a_symlink_loop_below_a_directory_is_walked_once(tmp_path):
    """dump / verify-crc of a directory holding a link back to itself read every file once (before: the same segment
    once per level until the kernel's ELOOP, then an error)."""
    import shutil

    from kafkalog_cli.storage.paths import directory_files

    pdir = tmp_path / "logs" / "orders-0"
    pdir.mkdir(parents=True)
    shutil.copy(Path(__file__).resolve().parent.parent / "fixtures" / "partition" / "orders-0" /
                "00000000000000000000.log", pdir)
    (pdir / "back").symlink_to(tmp_path / "logs")
    files = directory_files(str(tmp_path / "logs"))
    assert [os.path.basename(f) for f in files] == ["00000000000000000000.log"]
    r = CliRunner().invoke(cli, ["dump", str(tmp_path / "logs")])
    assert r.output.count("Dumping ") == 1 and r.exit_code == 0, r.output[-500:]
