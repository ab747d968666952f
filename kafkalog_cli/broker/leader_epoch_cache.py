"""The broker's leader-epoch cache (``LeaderEpochFileCache``, spec §10.1, errata E7), as pure functions over its
entries: a list of ``(epoch, start offset)`` in epoch order, what ``leader-epoch-checkpoint`` holds.

Why one module: the loader (``LogLoader``: ``truncateFromEnd(LEO)`` then ``truncateFromStart(log start)``),
``truncate-to-epoch`` (``endOffsetFor`` then ``UnifiedLog.truncateTo``'s ``truncateFromEnd``), ``salvage`` and the
replica comparison all apply the same rules; each is written once, here. Nothing here reads or writes a file:
``storage/companions.py`` parses and encodes the checkpoint.

Sources (apache/kafka 1eb7644, ``storage/src/main/java/org/apache/kafka/storage/internals/epoch/
LeaderEpochFileCache.java``): ``assign`` 105-147 (``isUpdateNeeded``, ``maybeTruncateNonMonotonicEntries``),
``endOffsetFor`` 286-329, ``truncateFromStart`` 392-403, ``truncateFromEnd`` 405-411.
"""

from __future__ import annotations

from collections.abc import Iterable

Epochs = list[tuple[int, int]]


def assign(cache: Epochs, epoch: int, start: int) -> Epochs:
    """``assign(epoch, startOffset)``: unchanged when the latest entry has this epoch and starts at or before
    ``start``; otherwise every entry with an epoch >= ``epoch`` or a start >= ``start`` goes and the new one is
    appended (errata E7 load semantics)."""
    if cache and cache[-1][0] == epoch and start >= cache[-1][1]:
        return cache
    out = [(e, s) for e, s in cache if e < epoch and s < start]
    out.append((epoch, start))
    return out


def truncate_from_end(cache: Epochs, end_offset: int) -> Epochs:
    """``truncateFromEnd``: drop entries starting at or after ``end_offset`` (a negative offset changes nothing)."""
    if end_offset >= 0 and cache and cache[-1][1] >= end_offset:
        return [(e, s) for e, s in cache if s < end_offset]
    return list(cache)


def truncate_from_start(cache: Epochs, start: int) -> Epochs:
    """``truncateFromStart``: entries starting at or before ``start`` go; the last of them comes back starting at
    ``start`` (exclusive: an entry at ``start`` is kept)."""
    removed = [(e, s) for e, s in cache if s <= start]
    if not removed:
        return cache
    return [(removed[-1][0], start)] + [(e, s) for e, s in cache if s > start]


def end_offset_for(cache: Epochs, requested: int, log_end_offset: int) -> tuple[int, int]:
    """``endOffsetFor`` (spec §10.1): (epoch, end offset), (-1, -1) when undefined."""
    if requested < 0 or not cache:
        return -1, -1
    if requested == cache[-1][0]:
        return requested, log_end_offset
    higher = next(((e, s) for e, s in cache if e > requested), None)
    if higher is None:
        return -1, -1
    floor = [(e, s) for e, s in cache if e <= requested]
    if not floor:
        return requested, higher[1]
    return floor[-1][0], higher[1]


def first_of_each_higher_epoch(batches: Iterable[tuple[int, int]]) -> Epochs:
    """Entries rebuilt from batches' ``(partition leader epoch, base offset)`` in log order: the first batch of each
    epoch above the latest one (``LogSegment.recover``'s ``latestEpoch`` test, LogSegment.java:497-501); batches
    without an epoch (-1) are passed over. Appends, as the commands that rebuild a cache without a checkpoint
    always did (for offsets in order this is what ``assign`` gives)."""
    cache: Epochs = []
    for epoch, base in batches:
        if epoch >= 0 and (not cache or epoch > cache[-1][0]):
            cache.append((epoch, base))
    return cache
