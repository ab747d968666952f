"""Companion-file readers reject exactly what the broker rejects (a malformed checkpoint takes a log directory
offline, errata-repair E7), and accept what it accepts."""

from __future__ import annotations

import pytest

from kafkalog_cli.errors import CheckpointError
from kafkalog_cli.storage.companions import parse_checkpoint, parse_leader_epoch_checkpoint


@pytest.mark.parametrize(
    "text",
    [
        "0 \n1\n0 5\n",  # Integer.parseInt does not trim
        "0\n1\n 0 5\n",  # "\\s+" split of a leading space gives three tokens
        "0\n1\n0 5\n\n",  # a blank line is an entry line, and malformed
        "0\n1\n+0 1_0\n",  # Java rejects the underscore
        "0\n1\n3000000000 5\n",  # epoch above int32
        "0\n2\n0 5\n",  # count mismatch
        "1\n0\n",  # unknown version
        "0\nx\n",
        "0\n1\n-1 5\n",  # negative epoch
    ],
)
def test_broker_rejects(text: str) -> None:
    with pytest.raises(CheckpointError):
        parse_leader_epoch_checkpoint(text, "leader-epoch-checkpoint")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", []),
        ("0\n", []),  # the reader returns nothing when the count line is missing
        ("0\n0\n", []),
        ("0\n1\n0 5\n", [(0, 5)]),
        ("0\n1\n0 5 \n", [(0, 5)]),  # trailing empty tokens are dropped by String.split
        ("0\r\n2\r\n0\t0\r\n+3 9223372036854775807", [(0, 0), (3, 9223372036854775807)]),
    ],
)
def test_broker_accepts(text: str, expected: list[tuple[int, int]]) -> None:
    assert parse_leader_epoch_checkpoint(text, "leader-epoch-checkpoint") == expected


def test_offset_checkpoint_columns() -> None:
    cp = parse_checkpoint("0\n2\norders 0 42\n__consumer_offsets 7 0\n", "recovery-point-offset-checkpoint", columns=3)
    assert cp.entries == [["orders", "0", "42"], ["__consumer_offsets", "7", "0"]]
    with pytest.raises(CheckpointError, match="Malformed line"):
        parse_checkpoint("0\n1\norders 0\n", "x", columns=3)
