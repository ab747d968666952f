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
