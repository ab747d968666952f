"""Inputs every command reads the same way (issue 19): seek-time's time formats (always echoed), --kafka-version
(every release listed, a newer one warned about), --dry-run beside --execute, --debug after the command."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from shipping_helpers import BASE_TS, make_partition

from kafkalog_cli.cli.main import cli
from kafkalog_cli.cli.timespec import iso_utc, parse_time

NOW = 1_718_446_827_000


@pytest.mark.parametrize(("text", "ms", "how"), [
    ("1718446827", 1_718_446_827_000, "epoch seconds"),  # once read as milliseconds: January 1970
    ("1718446827000", 1_718_446_827_000, "epoch milliseconds"),
    ("1718446827s", 1_718_446_827_000, "epoch seconds"),
    ("1718446827000ms", 1_718_446_827_000, "epoch milliseconds"),
    ("0", 0, "epoch seconds"),
    ("2024-06-15T10:20:27Z", 1_718_446_827_000, "ISO-8601"),
    ("2024-06-15T12:20:27+02:00", 1_718_446_827_000, "ISO-8601"),
    ("2024-06-15 10:20:27.5", 1_718_446_827_500, "UTC assumed"),
    ("2024-06-15", 1_718_409_600_000, "UTC assumed"),
    ("-1h", NOW - 3_600_000, "1h before now"),
    ("-30m", NOW - 1_800_000, "30m before now"),
    ("-1h30m", NOW - 5_400_000, "before now"),
    ("\u22122d", NOW - 2 * 86_400_000, "2d before now"),
    ("now", NOW, "now"),
])
def test_time_formats(text: str, ms: int, how: str) -> None:
    spec = parse_time(text, now_ms=NOW)
    assert spec.ms == ms and how in spec.how
    assert iso_utc(ms) in spec.echo(text)


@pytest.mark.parametrize("text", ["yesterday", "", "-1", "-1x", "12:00", "1h"])
def test_bad_times_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="epoch seconds"):
        parse_time(text, now_ms=NOW)


def test_seek_time_echoes_what_it_understood(tmp_path) -> None:  # noqa: ANN001
    part = make_partition(tmp_path)
    seconds = str(BASE_TS // 1000)  # 10 digits: seconds, so the first record (at BASE_TS ms) is found
    r = CliRunner().invoke(cli, ["seek-time", str(part), seconds])
    assert r.exit_code == 0, r.output
    assert f"read as epoch seconds (10 digits) = {iso_utc(BASE_TS)}" in r.stderr
    assert r.stdout.startswith("offset: 0 ")
    r = CliRunner().invoke(cli, ["seek-time", str(part), "-1h", "--format", "json"])  # not taken for -1 -h (help)
    assert r.exit_code == 1 and "1h before now" in r.stderr and "Usage" not in r.output
    r = CliRunner().invoke(cli, ["seek-time", str(part), "2023-11-14T22:13:20"])
    assert r.exit_code == 0 and "UTC assumed" in r.stderr
    r = CliRunner().invoke(cli, ["seek-time", str(part), "yesterday"])
    assert r.exit_code == 2 and "ISO-8601" in r.stderr


# ---------------------------------------------------------------------------------------------- --kafka-version
def test_kafka_version_help_lists_every_release() -> None:
    from kafkalog_cli.versions import KNOWN_VERSIONS

    for cmd in ("dump", "seek-offset"):
        r = CliRunner().invoke(cli, [cmd, "--help"], terminal_width=400)
        text = " ".join(r.output.split())
        assert ", ".join(KNOWN_VERSIONS) in text, cmd


def test_newer_kafka_version_warns(tmp_path) -> None:  # noqa: ANN001
    part = make_partition(tmp_path)
    seg = str(part / ("0" * 20 + ".log"))
    for v in ("4.5", "5.0"):  # 4.4 is the newest known release (issue 28)
        r = CliRunner().invoke(cli, ["dump", "--kafka-version", v, seg])
        assert r.exit_code == 0 and f"warning: Kafka {v} is newer than the newest release kafkalog knows" in r.stderr
    r = CliRunner().invoke(cli, ["dump", "--kafka-version", "4.3.1", seg])
    assert r.exit_code == 0 and "warning" not in r.stderr
    r = CliRunner().invoke(cli, ["dump", "--kafka-version", "1.1", seg])
    assert r.exit_code == 2 and "2.0 to 4.4" in r.stderr


def _complete(words: str) -> list[str]:
    """What a TAB after ``words`` offers, through click's completion protocol (the shells' scripts call the same)."""
    from click.shell_completion import ShellComplete

    args = words.split()
    incomplete = "" if words.endswith(" ") else args.pop()
    return [c.value for c in ShellComplete(cli, {}, "kafkalog", "_KAFKALOG_COMPLETE").get_completions(args[1:], incomplete)]


def test_completion_offers_versions_and_decoders() -> None:
    assert _complete("kafkalog dump --kafka-version 3.")[:3] == ["3.9", "3.8", "3.7"]
    assert "4.3" in _complete("kafkalog seek-offset --kafka-version ")
    assert _complete("kafkalog dump --value-decoder-class org.apache.kafka.tools.api.I") == [
        "org.apache.kafka.tools.api.IntegerDecoder"]
    assert "LongDecoder" in _complete("kafkalog dump --key-decoder-class L")


# ---------------------------------------------------------------------------------------------- --dry-run, --debug
@pytest.mark.parametrize("cmd", ["rebuild-index", "compact", "truncate-to-epoch"])
def test_dry_run_is_accepted_where_execute_is(tmp_path, cmd: str) -> None:  # noqa: ANN001
    part = make_partition(tmp_path / "logs")
    extra = {"truncate-to-epoch": ["--to-offset", "3"], "compact": ["--now-ms", "1800000000000"]}.get(cmd, [])
    before = {p.name: p.read_bytes() for p in part.iterdir()}
    default = CliRunner().invoke(cli, [cmd, *extra, str(part)])
    dry = CliRunner().invoke(cli, [cmd, "--dry-run", *extra, str(part)])
    assert dry.exit_code == default.exit_code and dry.stdout == default.stdout, dry.output
    assert {p.name: p.read_bytes() for p in part.iterdir()} == before


def test_debug_after_the_command(tmp_path) -> None:  # noqa: ANN001
    import subprocess

    from shipping_helpers import ROOT, python_argv

    part = make_partition(tmp_path)
    for argv in (["--debug", "dump", str(part)], ["dump", "--debug", str(part)], ["dump", str(part), "--debug"]):
        r = subprocess.run(python_argv() + argv, cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert r.returncode == 0 and "No such option" not in r.stderr, (argv, r.stderr)
