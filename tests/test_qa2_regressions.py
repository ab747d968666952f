"""Regressions found by the qa2 black-box run (structure-aware fuzzing and repair scenarios).

Each test runs the real command as a subprocess, so the real stdout stream (errors="replace") is in play."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ORDERS = HERE.parent / "fixtures" / "partition" / "orders-0"


def kafkalog(*args: str | bytes) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kafkalog_cli", *args], capture_output=True, timeout=60)


def test_dump_json_deep_non_utf8_directory_name(tmp_path: Path) -> None:
    """The compiled JSON record formatter encoded the file name strictly: a partition directory whose name is not
    UTF-8 (surrogate escapes) ended in `internal error: UnicodeEncodeError`. It must print like the text path."""
    pdir = os.path.join(os.fsencode(tmp_path), b"t-\xff")
    shutil.copytree(ORDERS, os.fsdecode(pdir))
    seg = os.path.join(pdir, b"00000000000000000000.log")
    res = kafkalog("dump", "--format", "json", "--deep-iteration", "--print-data-log", seg)
    assert b"internal error" not in res.stderr, res.stderr
    assert res.returncode == 0, res.stderr
    assert b'"type":"record"' in res.stdout
    assert b'"type":"summary"' in res.stdout


def test_partition_dir_with_non_ascii_digit_is_not_an_internal_error(tmp_path: Path) -> None:
    """`"²".isdigit()` is True but `int("²")` raises: `truncate-to-epoch` on a directory named `t-²` ended in
    `internal error: ValueError` (loader.topic_partition). Such a name is not `<topic>-<partition>`."""
    pdir = tmp_path / "t-\u00b2"
    shutil.copytree(ORDERS, pdir)
    res = kafkalog("truncate-to-epoch", "--to-offset", "10", str(pdir))
    assert b"internal error" not in res.stderr, res.stderr
    assert res.returncode == 1, res.stderr  # a dry run whose plan changes files
    from kafkalog_cli.storage.paths import live_partition as topic_partition

    assert topic_partition(str(pdir)) is None
    assert topic_partition(str(tmp_path / "t-7")) == ("t", 7)



def test_rebuild_index_ignores_snapshot_named_with_non_ascii_digit(tmp_path: Path) -> None:
    """A stray `²0000000000000000000.snapshot` (29 characters, `isdigit()` True) crashed the `.txnindex` rebuild's
    snapshot search with `internal error: ValueError`; it is not a producer snapshot name (Kafka parses the offset
    with Long.parseLong, which refuses `²`)."""
    pdir = tmp_path / "orders-0"
    shutil.copytree(ORDERS, pdir)
    shutil.copy(pdir / "00000000000000000060.snapshot", pdir / "\u00b20000000000000000000.snapshot")
    for f in pdir.glob("*.txnindex"):
        f.unlink()
    res = kafkalog("rebuild-index", str(pdir))
    assert b"internal error" not in res.stderr, res.stderr
    assert res.returncode == 1, res.stderr  # the missing .txnindex is planned


def test_recover_renames_interrupted_log_swap_before_its_indexes(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    """`recover --execute` completed a broker's interrupted swap in name order (`N.index.swap` before `N.log.swap`):
    a kill between the two left `N.log.swap` beside the renamed `N.index`, which the broker's loader replaces with a
    zero-filled index it creates. The `.log.swap` must go first, as in Kafka's LogSegment.changeFileSuffixes."""
    from kafkalog_cli.ops import recover

    pdir = tmp_path / "ld" / "orders-0"
    shutil.copytree(ORDERS, pdir)
    for ext in ("log", "index", "timeindex"):
        os.rename(pdir / f"00000000000000000040.{ext}", pdir / f"00000000000000000040.{ext}.swap")
    done: list[str] = []
    real_replace = os.replace

    def spy(src, dst):  # noqa: ANN001, ANN202 - records the real renames, then does them
        if str(src).endswith(".swap"):
            done.append(os.path.basename(str(src)))
        return real_replace(src, dst)

    monkeypatch.setattr(recover.os, "replace", spy)
    recover.run([str(pdir)], execute=True, backup_dir=str(tmp_path / "bk"))
    # the leftover renames come first; the transaction that rewrites indexes afterwards renames its own .swap files
    assert done[0] == "00000000000000000040.log.swap", done
    assert sorted(done[:3]) == sorted(f"00000000000000000040.{e}.swap" for e in ("log", "index", "timeindex"))


from test_failing_disk import bad_disk  # noqa: E402, F401 - the FUSE bad-sector fixture (skips without /dev/fuse)


def test_recover_and_salvage_name_an_unreadable_checkpoint(bad_disk) -> None:  # noqa: ANN001, F811
    """A bad sector under `leader-epoch-checkpoint` made `recover` / `salvage` print `kafkalog: error: : Input/output
    error` (no file); the error must name the file (exit 2: the broker cannot read it either)."""
    files = {f"ld/orders-0/{p.name}": p.read_bytes() for p in ORDERS.iterdir()}
    disk = bad_disk(files, {"ld/orders-0/leader-epoch-checkpoint": [(0, 1)]})
    for cmd in ("recover", "salvage"):
        res = kafkalog(cmd, disk.path("ld/orders-0"))
        err = res.stderr.decode()
        assert res.returncode == 2, err
        assert "leader-epoch-checkpoint: Input/output error" in err, err


def test_dump_does_not_print_index_entries_read_from_a_bad_sector(bad_disk) -> None:  # noqa: ANN001, F811
    """A bad sector under `.index` / `.timeindex` is read as zeros; dump printed those zeros as entries
    (`offset: 0 position: 0`, `timestamp: 0 offset: 0`) and compared them with the log. It must report the
    unreadable range only."""
    files = {f"ld/orders-0/{p.name}": p.read_bytes() for p in ORDERS.iterdir()}
    disk = bad_disk(files, {"ld/orders-0/00000000000000000000.index": [(0, 1)],
                            "ld/orders-0/00000000000000000000.timeindex": [(0, 1)]})
    res = kafkalog("dump", disk.path("ld/orders-0/00000000000000000000.index"),
                   disk.path("ld/orders-0/00000000000000000000.timeindex"))
    out, err = res.stdout.decode(), res.stderr.decode()
    assert res.returncode == 1, err
    assert "unreadable" in err and "00000000000000000000.timeindex bytes [0, " in err, err
    assert "position:" not in out and "timestamp:" not in out, out
    assert "Mismatches" not in out and "not found" not in out, out


def test_dump_index_goes_on_past_entries_pointing_into_unreadable_log_bytes(bad_disk, tmp_path: Path) -> None:  # noqa: ANN001, F811
    """An `.index`/`.timeindex` entry pointing into a bad sector of the `.log` made dump walk the zeros, fail with
    `Found record size 0 ...` and stop: every later entry went unprinted and unchecked. Such an entry is printed
    and not compared (the log range is reported as unreadable); the rest of the index is dumped."""
    from partition_gen import PartitionBuilder

    pb = PartitionBuilder(str(tmp_path / "gen" / "t-0"))
    for i in range(120):
        pb.batch([(b"k%d" % (i % 50), b"v" * 300)] * 3)
    pb.roll()
    pb.batch([(b"t", b"a")])
    pb.write()
    gen = tmp_path / "gen" / "t-0"
    files = {f"ld/t-0/{p.name}": p.read_bytes() for p in gen.iterdir()}
    entries = len(files["ld/t-0/00000000000000000000.index"]) // 8
    tentries = len(files["ld/t-0/00000000000000000000.timeindex"]) // 12
    assert entries > 10
    disk = bad_disk(files, {"ld/t-0/00000000000000000000.log": [(10000, 10001)]})
    for name, n, word in (("index", entries, "offset:"), ("timeindex", tentries, "timestamp:")):
        res = kafkalog("dump", disk.path(f"ld/t-0/00000000000000000000.{name}"))
        out, err = res.stdout.decode(), res.stderr.decode()
        assert "record size" not in err, err
        assert "unreadable" in err, err
        assert sum(line.startswith(word) for line in out.splitlines()) == n, out


def test_seek_does_not_call_unreadable_offsets_a_gap(bad_disk, tmp_path: Path) -> None:  # noqa: ANN001, F811
    """seek-offset for an offset inside a bad sector said `not in the log (a gap, e.g. compacted away)`, and
    seek-time answered with the next readable record without saying that earlier records could not be checked."""
    from partition_gen import PartitionBuilder

    pb = PartitionBuilder(str(tmp_path / "gen" / "t-0"))
    for i in range(60):
        pb.batch([(b"k%d" % i, b"v" * 300)] * 3)
    pb.roll()
    pb.batch([(b"t", b"a")])
    pb.write()
    gen = tmp_path / "gen" / "t-0"
    files = {f"ld/t-0/{p.name}": p.read_bytes() for p in gen.iterdir()}
    disk = bad_disk(files, {"ld/t-0/00000000000000000000.log": [(10000, 10001)]})
    pdir = disk.path("ld/t-0")
    res = kafkalog("seek-offset", pdir, "30")
    err = res.stderr.decode()
    assert res.returncode == 1, err
    assert "compacted away" not in err and "may lie in the unreadable bytes [8192, 12288)" in err, err
    first_ts = pb.ts - 60 * 3  # the timestamp of offset 0 (every record took the next millisecond)
    res = kafkalog("seek-time", pdir, str(first_ts + 30))
    err = res.stderr.decode()
    assert res.returncode == 1, err
    assert "unreadable bytes [8192, 12288)" in err and "may be among them" in err, err
