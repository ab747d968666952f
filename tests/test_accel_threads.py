"""The two-thread CRC windows of kafkalog_cli/_accel.c give exactly the single-thread C results and the Python ones.

verify_run, rebuild_index and scan_v2 ask for each batch CRC through a window of predicted batches whose CRCs are
computed on two threads (``accel.parallel_config``). These tests run each walk with one thread, with the default
settings (threads only after 4 MiB, windows up to 32 MiB) on segments large enough to use them, and with tiny
thresholds and windows that put many window boundaries into small segments; the corruptions sit in the first half,
in the second half, on the last batch of a window and on the first batch of the next one, and (on a smaller segment)
at every batch in turn. The pure-Python code (``KAFKALOG_NO_ACCEL=1``) is the reference for all of them.
"""

from __future__ import annotations

import random
import struct
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from conftest import _verify_dict
from test_accel_walk import python_scan, rebuilt_tuple

from kafkalog_cli.format.encoder import RecordSpec, encode_batch
from kafkalog_cli.ops import rebuild_index as ri
from kafkalog_cli.ops import verify
from kafkalog_cli.storage import accel, segment_check

pytestmark = pytest.mark.skipif(accel.module() is None, reason="compiled accelerator not built or disabled")

MiB = 1 << 20
DEFAULTS = accel.parallel_config()
# (threads, min_bytes, window): sequential C, the shipped settings, and settings that force many small windows
SINGLE = (1, DEFAULTS.min_bytes, DEFAULTS.window)
SHIPPED = (2, 4 * MiB, 32 * MiB)
TINY = (2, 0, 64 << 10)
CONFIGS = {"single": SINGLE, "shipped": SHIPPED, "tiny": TINY}


@contextmanager
def parallel(cfg: tuple[int, int, int]) -> Iterator[None]:
    old = accel.parallel_config(*cfg)
    try:
        yield
    finally:
        accel.parallel_config(old.threads, old.min_bytes, old.window)


def make_segment(total: int, value_sizes: tuple[int, ...], seed: int) -> tuple[bytearray, list[int]]:
    """Clean v2 batches of mixed sizes (4 records each, consecutive offsets, leader epoch 5) up to ``total`` bytes;
    returns the bytes and the batch positions. Base offsets are patched into copies of a few templates (the base
    offset is not under the CRC), so a 40 MiB segment takes a fraction of a second."""
    rng = random.Random(seed)
    templates = []
    for vs in value_sizes:
        recs = [RecordSpec(b"k%d" % i, rng.randbytes(vs), timestamp=1_700_000_000_000 + i) for i in range(4)]
        templates.append(bytearray(encode_batch(recs, base_offset=0, partition_leader_epoch=5)))
    out = bytearray()
    positions = []
    off = 0
    while len(out) < total:
        t = rng.choice(templates)
        struct.pack_into(">q", t, 0, off)
        positions.append(len(out))
        out += t
        off += 4
    return out, positions


def window_starts(data: bytes, positions: list[int], cfg: tuple[int, int, int]) -> list[int]:
    """Indexes of the batches that open a window on a clean run, by the rule of crcw_get/crcw_fill in _accel.c."""
    _threads, min_bytes, window_max = cfg
    lengths = [struct.unpack_from(">i", data, p + 8)[0] for p in positions]
    starts, consumed, i = [], 0, 0
    while i < len(lengths):
        if consumed < min_bytes:
            consumed += lengths[i]
            i += 1
            continue
        target = max(min(consumed, window_max), 1)
        starts.append(i)
        total = 0
        while i < len(lengths) and (total == 0 or total < target):
            total += lengths[i]
            i += 1
        consumed += total
    return starts


# ------------------------------------------------------------------------------------------------ corruptions
def flip_payload(data: bytearray, pos: int) -> None:
    data[pos + 70] ^= 0x10  # a record byte: only the CRC catches it


def bad_length(data: bytearray, pos: int) -> None:
    (length,) = struct.unpack_from(">i", data, pos + 8)
    struct.pack_into(">i", data, pos + 8, length - 100)  # lands inside the batch: the walks' predictions diverge


def offset_back(data: bytearray, pos: int) -> None:
    struct.pack_into(">q", data, pos, 0)  # not under the CRC: offset order (verify) / index order (rebuild)


def epoch_down(data: bytearray, pos: int) -> None:
    struct.pack_into(">i", data, pos + 12, 3)  # not under the CRC: a leader-epoch warning in verify


def zero_block(data: bytearray, pos: int) -> None:
    data[pos : pos + 20000] = bytes(min(20000, len(data) - pos))


CORRUPTIONS: dict[str, Callable[[bytearray, int], None]] = {
    "crc": flip_payload, "length": bad_length, "offset": offset_back, "epoch": epoch_down, "zeros": zero_block,
}


# ------------------------------------------------------------------------------------------------ comparisons
def results(data: bytes, path: Path, *, progress_every: int | None = None) -> dict[str, object]:
    """What the three walks return for ``data`` (under the current parallel settings / KAFKALOG_NO_ACCEL)."""
    path.write_bytes(data)
    steps: list[int] = []
    rep = verify.verify_segment(str(path), indexes=False, progress=steps.append if progress_every else None)
    out: dict[str, object] = {
        "verify": (_verify_dict(rep), steps),
        "rebuild": rebuilt_tuple(ri.rebuild_segment(data, 0, 4096, file="x.log")),
    }
    if accel.module() is not None:
        got, stop, why = accel.scan_v2(data)
        out["scan"] = ([tuple(b) for b in got], stop, why)
    return out


def reference(data: bytes, path: Path, monkeypatch: pytest.MonkeyPatch, **kw: int) -> dict[str, object]:
    monkeypatch.setenv("KAFKALOG_NO_ACCEL", "1")
    try:
        ref = results(data, path, **kw)
    finally:
        monkeypatch.delenv("KAFKALOG_NO_ACCEL")
    ref["scan"] = python_scan(bytes(data))  # (rebuild_segment ran rebuild_segment_py: the accelerator was off)
    return ref


def assert_all_equal(data: bytes, path: Path, monkeypatch: pytest.MonkeyPatch, configs: dict, label: str,
                     **kw: int) -> None:
    ref = reference(data, path, monkeypatch, **kw)
    for name, cfg in configs.items():
        with parallel(cfg):
            got = results(data, path, **kw)
        for walk in ("verify", "rebuild", "scan"):
            assert got[walk] == ref[walk], (label, name, walk)


# ------------------------------------------------------------------------------------------------ tests
@pytest.fixture(scope="module")
def big() -> tuple[bytearray, list[int]]:
    return make_segment(40 * MiB, (200, 3000, 16000, 40000, 900), seed=1)


def test_threads_are_used_on_a_long_clean_run(big: tuple[bytearray, list[int]], tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    data, _positions = big
    path = tmp_path / "00000000000000000000.log"
    for name, cfg in CONFIGS.items():
        before = accel.parallel_config().windows
        with parallel(cfg):
            got = results(bytes(data), path)
        threaded = accel.parallel_config().windows - before
        assert (threaded > 0) == (cfg[0] > 1), name  # 3 walks; each opens several windows on 40 MiB
        assert got["verify"][0][0]["batches"] == len(_positions)
    assert_all_equal(bytes(data), path, monkeypatch, CONFIGS, "clean")


@pytest.mark.parametrize("kind", sorted(CORRUPTIONS))
def test_corruption_in_halves_and_at_window_boundaries(kind: str, big: tuple[bytearray, list[int]], tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    data, positions = big
    path = tmp_path / "00000000000000000000.log"
    n = len(positions)
    starts = window_starts(data, positions, SHIPPED)
    assert len(starts) >= 3, starts  # windows at ~4, 8, 16, 32 MiB
    where = {"first-half": n // 5, "second-half": 4 * n // 5}
    for k in (1, 2):  # last batch of a window, first batch of the next
        where[f"window-{k}-last"] = starts[k] - 1
        where[f"window-{k}-first"] = starts[k]
    where["before-threads"] = 3  # the sequential prefix, before the first window
    for label, idx in where.items():
        mutated = bytearray(data)
        if kind == "epoch":  # a decrease needs an earlier epoch >= 0: all batches carry 5, this one 3
            epoch_down(mutated, positions[idx])
        else:
            CORRUPTIONS[kind](mutated, positions[idx])
        assert_all_equal(bytes(mutated), path, monkeypatch, CONFIGS, f"{kind} {label} batch {idx}")


def test_two_corruptions_and_progress_boundaries(big: tuple[bytearray, list[int]], tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """verify_run restarts after each problem (a fresh sequential prefix) and stops at each progress boundary (the
    predicted windows must not run past it)."""
    data, positions = big
    mutated = bytearray(data)
    flip_payload(mutated, positions[len(positions) // 3])
    offset_back(mutated, positions[2 * len(positions) // 3])
    monkeypatch.setattr(segment_check, "PROGRESS_EVERY", 5 * MiB + 12345)
    assert_all_equal(bytes(mutated), tmp_path / "00000000000000000000.log", monkeypatch, CONFIGS, "two",
                     progress_every=1)


@pytest.mark.parametrize("window", [1, 5000, 20000])
def test_every_batch_corrupted_in_turn_with_tiny_windows(window: int, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Each batch of a small segment corrupted in turn, windows of a few batches: every position relative to a
    window boundary is covered (window 1: one batch per window, so no threads; the others split every window)."""
    data, positions = make_segment(500_000, (50, 300, 1200, 3000), seed=window)
    path = tmp_path / "00000000000000000000.log"
    cfg = {"tiny": (2, 0, window), "tiny-after-8k": (2, 8192, window)}
    rng = random.Random(window)
    kinds = sorted(CORRUPTIONS)
    for idx in range(len(positions)):
        mutated = bytearray(data)
        kind = kinds[idx % len(kinds)] if idx % 2 else "crc"
        CORRUPTIONS[kind](mutated, positions[idx])
        if rng.random() < 0.2:  # sometimes a second problem later on
            flip_payload(mutated, positions[rng.randrange(idx, len(positions))])
        assert_all_equal(bytes(mutated), path, monkeypatch, cfg, f"{kind} batch {idx}")


def test_parallel_config_arguments() -> None:
    old = accel.parallel_config()
    try:
        with pytest.raises(ValueError):
            accel.parallel_config(threads=0)
        with pytest.raises(ValueError):
            accel.parallel_config(window=0)
        accel.parallel_config(threads=3, min_bytes=0, window=4096)
        assert accel.parallel_config()[:3] == (3, 0, 4096)
    finally:
        accel.parallel_config(old.threads, old.min_bytes, old.window)
    assert accel.parallel_config()[:3] == old[:3]
