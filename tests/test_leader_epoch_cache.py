"""broker/leader_epoch_cache.py: the one copy of LeaderEpochFileCache's rules (assign, truncateFromEnd,
truncateFromStart, endOffsetFor) that the loader, truncate-to-epoch, salvage and replicas share."""

from __future__ import annotations

from kafkalog_cli.broker import leader_epoch_cache as lec
from kafkalog_cli.broker import loader
from kafkalog_cli.ops import replicas, salvage, truncate


def test_assign_keeps_a_later_start_of_the_latest_epoch_and_drops_non_monotonic_entries() -> None:
    cache = [(0, 0), (2, 10), (4, 20)]
    assert lec.assign(cache, 4, 25) == cache  # isUpdateNeeded: same epoch, later start
    assert lec.assign(cache, 4, 15) == [(0, 0), (2, 10), (4, 15)]  # same epoch, earlier start: replaced
    assert lec.assign(cache, 3, 30) == [(0, 0), (2, 10), (3, 30)]  # lower epoch: the higher one goes (E7)
    assert lec.assign(cache, 5, 10) == [(0, 0), (5, 10)]  # start not above an entry's: that entry goes
    assert lec.assign([], 1, 7) == [(1, 7)]


def test_truncate_from_start_rewrites_the_last_removed_entry_at_the_start() -> None:
    cache = [(0, 0), (2, 10), (4, 20)]
    assert lec.truncate_from_start(cache, 15) == [(2, 15), (4, 20)]
    assert lec.truncate_from_start(cache, 20) == [(4, 20)]  # exclusive: the entry at the start stays
    assert lec.truncate_from_start(cache, -1) == cache
    assert lec.truncate_from_end(cache, 20) == [(0, 0), (2, 10)]
    assert lec.truncate_from_end(cache, -1) == cache


def test_first_of_each_higher_epoch_skips_undefined_and_lower_epochs() -> None:
    got = lec.first_of_each_higher_epoch([(-1, 0), (1, 3), (1, 5), (0, 6), (3, 9), (-1, 12), (4, 14)])
    assert got == [(1, 3), (3, 9), (4, 14)]


def test_every_command_uses_the_one_copy() -> None:
    """No second body of the rules: the commands name the broker's functions."""
    assert truncate.end_offset_for is lec.end_offset_for and truncate.truncate_from_end is lec.truncate_from_end
    assert replicas.end_offset_for is lec.end_offset_for and replicas.truncate_from_end is lec.truncate_from_end
    assert loader.lec is lec and salvage.lec is lec
