"""The failing disk (issue 13): real EIO from a FUSE file system, SIGBUS from a file truncated while mapped, files
deleted between listing and opening, unreadable partition directories, and the inputs that used to be internal
errors. Every read-only command must report a located finding and go on, never crash."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from verify_helpers import make_segment

from kafkalog_cli.cli.main import cli
from kafkalog_cli.errors import FileVanishedError
from kafkalog_cli.ops import verify as verify_ops
from kafkalog_cli.ops.dump import Dumper, DumpOptions, ReadFindingEvent
from kafkalog_cli.storage import safe_read, segment_check
from kafkalog_cli.storage.segment import MappedFile
from kafkalog_cli.versions import profile_for

HERE = Path(__file__).resolve().parent
SEG_NAME = "00000000000000000000.log"
BAD = (40000, 45000)  # bytes whose reads fail: pages [36864, 45056)
BAD_PAGES = (36864, 45056)


def _segment() -> bytes:
    return make_segment(100, records=4, value_size=500).data  # 100 batches of 2105 bytes


# ------------------------------------------------------------------------------------------------ FUSE fixture
def _fuse_unavailable() -> str | None:
    if not os.path.exists("/dev/fuse"):
        return "/dev/fuse is not available"
    if not (shutil.which("fusermount3") or shutil.which("fusermount")):
        return "fusermount is not installed (apt-get install fuse3)"
    try:
        import mfusepy  # noqa: F401
    except (ImportError, OSError) as exc:
        return f"mfusepy or libfuse is not available: {exc}"
    return None


class BadDisk:
    """A FUSE mount serving ``src`` with EIO on the configured byte ranges / unlistable directories."""

    def __init__(self, base: Path, files: dict[str, bytes], bad: dict[str, list[tuple[int, int]]],
                 bad_dirs: list[str] | None = None) -> None:
        self.src = base / "src"
        self.mnt = base / "mnt"
        for rel, data in files.items():
            (self.src / rel).parent.mkdir(parents=True, exist_ok=True)
            (self.src / rel).write_bytes(data)
        for d in bad_dirs or []:
            (self.src / d).mkdir(parents=True, exist_ok=True)
        self.mnt.mkdir()
        config = base / "badfs.json"
        config.write_text(json.dumps({"bad": {k: [list(r) for r in v] for k, v in bad.items()},
                                      "bad_dirs": bad_dirs or []}))
        self.proc = subprocess.Popen([sys.executable, str(HERE / "fuse_badfs.py"), str(self.src), str(self.mnt),
                                      str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 10
        while not os.path.ismount(self.mnt):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                err = self.proc.stderr.read().decode(errors="replace") if self.proc.poll() is not None else ""
                self.stop()
                pytest.skip(f"could not mount the FUSE test file system: {err.strip()[-300:]}")
            time.sleep(0.05)

    def path(self, rel: str) -> str:
        return str(self.mnt / rel)

    def stop(self) -> None:
        tool = shutil.which("fusermount3") or shutil.which("fusermount") or "fusermount"
        subprocess.run([tool, "-u", "-z", str(self.mnt)], capture_output=True)
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def bad_disk(tmp_path):
    why = _fuse_unavailable()
    if why:
        pytest.skip(why)
    disks: list[BadDisk] = []

    def make(files, bad, bad_dirs=None) -> BadDisk:
        d = BadDisk(tmp_path / f"disk{len(disks)}", files, bad, bad_dirs)
        disks.append(d)
        return d

    yield make
    for d in disks:
        d.stop()


def _verify_json(*args: str, env: dict | None = None):
    res = CliRunner().invoke(cli, ["verify-crc", "--format", "json", *args], env=env)
    assert res.exception is None or isinstance(res.exception, SystemExit), res.output
    return res.exit_code, json.loads(res.stdout)


# ------------------------------------------------------------------------------------------------ EIO (FUSE)
@pytest.mark.parametrize("reader", ["guarded-mmap", "pread"])
def test_verify_reports_exact_unreadable_range_and_goes_on(bad_disk, reader):
    disk = bad_disk({f"t-0/{SEG_NAME}": _segment(), f"t-1/{SEG_NAME}": _segment()}, {f"t-0/{SEG_NAME}": [BAD]})
    env = {"KAFKALOG_NO_MMAP": "1"} if reader == "pread" else {"KAFKALOG_NO_MMAP": ""}
    code, doc = _verify_json(str(disk.mnt), env=env)
    assert code == 1  # problems found, not "unreadable as a whole"
    bad = [p for p in doc["problems"] if p["kind"] == "unreadable"]
    assert [(p["position"], p["end"]) for p in bad] == [BAD_PAGES]
    assert bad[0]["last_good_offset"] == 67 and bad[0]["first_good_offset"] == 88
    files = {Path(f["path"]).parent.name: f for f in doc["files"]}
    assert files["t-0"]["batches"] == 95 and files["t-0"]["last_offset"] == 399  # the rest was verified
    assert files["t-1"]["batches"] == 100 and files["t-1"]["problems"] == 0  # and the other partition
    assert not any(f["unreadable"] for f in doc["files"])


def test_dump_reports_unreadable_range_and_resumes(bad_disk):
    disk = bad_disk({f"t-0/{SEG_NAME}": _segment()}, {f"t-0/{SEG_NAME}": [BAD]})
    res = CliRunner().invoke(cli, ["dump", "--format", "json", disk.path(f"t-0/{SEG_NAME}")])
    assert res.exit_code == 1, res.output
    lines = [json.loads(x) for x in res.stdout.splitlines()]
    findings = [x for x in lines if x["type"] == "read_finding"]
    assert [(f["kind"], f["start"], f["end"]) for f in findings] == [("unreadable", *BAD_PAGES)]
    batches = [x for x in lines if x["type"] == "batch"]
    assert len(batches) == 95 and batches[-1]["last_offset"] == 399  # resumed after the bad pages
    assert all(b["is_valid"] for b in batches)


def test_cat_fails_on_the_fuse_file(bad_disk):
    """The fixture is a real EIO source: plain read(2) fails exactly like a bad sector."""
    disk = bad_disk({f"t-0/{SEG_NAME}": _segment()}, {f"t-0/{SEG_NAME}": [BAD]})
    res = subprocess.run(["cat", disk.path(f"t-0/{SEG_NAME}")], capture_output=True)
    assert res.returncode != 0 and b"Input/output error" in res.stderr


def test_mapped_read_of_a_bad_page_is_a_finding_not_sigbus(bad_disk):
    disk = bad_disk({f"t-0/{SEG_NAME}": _segment()}, {f"t-0/{SEG_NAME}": [BAD]})
    code = (
        "import sys, zlib\n"
        "from kafkalog_cli.storage.segment import MappedFile\n"
        "with MappedFile(sys.argv[1]) as mf:\n"
        "    zlib.crc32(mf.buf)\n"
        "    print([(f.kind, f.start, f.end) for f in mf.findings()])\n"
    )
    res = subprocess.run([sys.executable, "-c", code, disk.path(f"t-0/{SEG_NAME}")], capture_output=True, text=True,
                         timeout=60)
    assert res.returncode == 0, res.stderr  # was -7 (SIGBUS) before the guard
    assert res.stdout.strip() == f"[('unreadable', {BAD_PAGES[0]}, {BAD_PAGES[1]})]"


def test_unlistable_partition_directory_is_reported_and_the_rest_verified(bad_disk):
    disk = bad_disk({f"ld/a-0/{SEG_NAME}": _segment(), f"ld/c-0/{SEG_NAME}": _segment()}, {}, bad_dirs=["ld/b-0"])
    code, doc = _verify_json(disk.path("ld"))
    assert code == 2
    unreadable = [f for f in doc["files"] if f["unreadable"]]
    assert [Path(f["path"]).name for f in unreadable] == ["b-0"]  # the right directory is named
    assert sum(f["batches"] for f in doc["files"] if f["kind"] == "log") == 200  # a-0 and c-0 were verified
    res = CliRunner().invoke(cli, ["dump", disk.path("ld")])
    assert res.exit_code == 2 and isinstance(res.exception, SystemExit)
    assert "b-0" in res.stderr and "cannot list directory" in res.stderr
    assert res.stdout.count("baseOffset:") == 200


# ------------------------------------------------------------------------------------------------ SIGBUS
def test_file_truncated_while_mapped_reads_zeros_and_reports_it(tmp_path):
    path = tmp_path / SEG_NAME
    path.write_bytes(b"\x01" * 100_000)
    code = (
        "import os, sys, zlib\n"
        "from kafkalog_cli.storage.segment import MappedFile\n"
        "with MappedFile(sys.argv[1]) as mf:\n"
        "    os.truncate(sys.argv[1], 10_000)\n"
        "    zlib.crc32(mf.buf)\n"  # touches the pages past the new end: SIGBUS without the guard
        "    print(bytes(mf.buf[50_000:50_004]), [(f.kind, f.start, f.end) for f in mf.findings()])\n"
    )
    res = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    if safe_read.guard_available():
        assert res.stdout.strip() == "b'\\x00\\x00\\x00\\x00' [('truncated-during-read', 10000, 100000)]"


def test_verify_segment_truncated_mid_walk(tmp_path, monkeypatch):
    seg = make_segment(100, records=4, value_size=500)
    path = tmp_path / SEG_NAME
    path.write_bytes(seg.data)
    monkeypatch.setattr(segment_check, "PROGRESS_EVERY", 4096)
    cut = seg.starts[50]
    calls = []

    def progress(_n: int) -> None:
        if not calls:
            os.truncate(path, cut)  # the broker truncates the segment while we walk it
        calls.append(_n)

    rep = verify_ops.verify_segment(str(path), progress=progress, indexes=False)
    kinds = {(p.kind, p.position, p.end) for p in rep.notes}
    assert ("truncated-during-read", cut, len(seg.data)) in kinds
    assert rep.batches >= 50 and not rep.unreadable


# ------------------------------------------------------------------------------------------------ vanished
def test_segment_deleted_between_listing_and_opening_is_a_note(tmp_path):
    part = tmp_path / "t-0"
    part.mkdir()
    seg = make_segment(4)
    (part / SEG_NAME).write_bytes(seg.data)
    (part / "00000000000000000016.log").write_bytes(make_segment(4, base=16).data)
    victim = part / "00000000000000000016.log"
    result = verify_ops.verify_paths([str(part)], on_total=lambda _t: victim.unlink())
    assert result.exit_code() == 0
    notes = [(p.kind, os.path.basename(p.file)) for p in result.all_notes()]
    assert ("vanished", victim.name) in notes

    victim.write_bytes(make_segment(4, base=16).data)
    dumper = Dumper(profile_for(), DumpOptions())
    events = []
    for ev in dumper.run([str(part)]):
        events.append(ev)
        if len(events) == 1:
            victim.unlink()  # listed already, deleted before it is opened
    vanished = [e.finding for e in events if isinstance(e, ReadFindingEvent)]
    assert [(f.kind, os.path.basename(f.file)) for f in vanished] == [("vanished", victim.name)]
    assert dumper.summary.exit_code() == 0


def test_missing_argument_is_still_unreadable(tmp_path):
    with pytest.raises(FileVanishedError):
        MappedFile(str(tmp_path / "nope.log"))
    res = CliRunner().invoke(cli, ["verify-crc", str(tmp_path / "nope.log")])
    assert res.exit_code == 2


# ------------------------------------------------------------------------------------------------ pread reader
def test_read_into_probes_page_by_page(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(bytes(range(256)) * 100)
    fd = os.open(path, os.O_RDONLY)
    try:
        buf = memoryview(bytearray(25600))
        got, bad = safe_read.read_into(fd, buf)
    finally:
        os.close(fd)
    assert got == 25600 and bad == [] and bytes(buf) == path.read_bytes()
    assert safe_read.merge_pages([4096, 0, 12288, 8192 * 4], 20000) == [(0, 8192), (12288, 16384)]


def test_sparse_holes_are_not_read(tmp_path):
    path = tmp_path / "sparse"
    with open(path, "wb") as f:
        f.truncate(1 << 30)
        f.seek(4096)
        f.write(b"x")
    fd = os.open(path, os.O_RDONLY)
    try:
        ext = safe_read.data_extents(fd, 0, 1 << 30)
    finally:
        os.close(fd)
    assert sum(b - a for a, b in ext) < 1 << 20


# ------------------------------------------------------------------------------------------------ zero runs
def test_zero_run_then_batch_whose_leading_bytes_are_zero(tmp_path):
    """The resync after a zero run starts 11 bytes before its end: a batch with baseOffset 0 continues the run."""
    first = make_segment(2, base=0)
    again = make_segment(1, base=0, seed=7)  # baseOffset 0: 8 zero bytes, then a size field 00 00 xx xx
    path = tmp_path / SEG_NAME
    path.write_bytes(first.data + bytes(1 << 20) + again.data)
    rep = verify_ops.verify_segment(str(path), indexes=False)
    assert [(p.kind, p.position, p.end) for p in rep.problems if p.kind == "zero-filled"] == [
        ("zero-filled", len(first.data), len(first.data) + (1 << 20))]
    assert rep.batches == 3


def test_sparse_segment_holes_are_skipped_without_reading(tmp_path):
    seg = make_segment(2)
    path = tmp_path / SEG_NAME
    with open(path, "wb") as f:
        f.write(seg.data)
        f.truncate(1 << 30)
    with MappedFile(str(path)) as mf:
        ext = mf.data_extents()
        walker = segment_check._Walker(mf.buf, segment_check.SegmentReport(path=str(path), kind="log"), deep=False,
                                    max_batch_size=1 << 20, max_problems=10, observers=[], progress=None,
                                    extents=mf.data_extents)
        assert walker.zero_end(len(seg.data)) == 1 << 30
    if ext != [(0, 1 << 30)]:  # the file system reports holes: nothing past the first extent was read
        assert ext[-1][1] < 1 << 20
    rep = verify_ops.verify_segment(str(path), indexes=False)
    assert [(p.kind, p.position, p.end) for p in rep.notes] == [("zero-tail", len(seg.data), 1 << 30)]
    assert rep.batches == 2 and not rep.problems


def test_quorum_state_nested_json_is_a_located_error(tmp_path):
    q = tmp_path / "quorum-state"
    q.write_text("[" * 200_000 + "]" * 200_000)
    res = CliRunner().invoke(cli, ["dump", str(q)])
    assert res.exit_code == 1 and isinstance(res.exception, SystemExit)
    assert "nests too deeply" in res.stderr
    q.write_text('{"data_version":0,"leaderId":1,"currentVoters":[{"voterId":1}],"s":"[[[[\\"{"}')
    res = CliRunner().invoke(cli, ["dump", "--format", "json", str(q)])
    assert res.exit_code == 0, res.output


# ------------------------------------------------------------------------------------------------ bombs
_PEAK = """
import resource, subprocess, sys
p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


def _peak_mib(*args: str) -> tuple[int, float]:
    cmd = [sys.executable, "-c", "from kafkalog_cli.cli.main import main; main()", *args]
    out = subprocess.run([sys.executable, "-c", _PEAK, *cmd], capture_output=True, text=True, check=True).stdout
    code, kib = out.split()
    return int(code), int(kib) / 1024


@pytest.mark.slow  # four child processes each, ~4-8 s on the shared machine
@pytest.mark.parametrize("codec", ["gzip", "zstd", "gzip-v1"])
def test_decompression_bomb_is_held_once(tmp_path, codec):
    """A batch inflating to just under the cap: peak RSS grows by about the cap, not 2-3x (the output was copied
    by ``bytes(out)``, then every value again by the record decoder)."""
    from kafkalog_cli.format import codecs
    from kafkalog_cli.format.encoder import RecordSpec, encode_batch, encode_legacy_wrapper

    cap = 32 << 20
    cid = {"gzip": codecs.GZIP, "zstd": codecs.ZSTD, "gzip-v1": codecs.GZIP}[codec]

    def encode(value: bytes) -> bytes:
        if codec.endswith("-v1"):
            return encode_legacy_wrapper([(b"k", value, 1)], offset=0, codec=cid, magic=1)
        return encode_batch([RecordSpec(key=b"k", value=value, timestamp=1)], codec=cid)

    bomb = tmp_path / "bomb-0" / SEG_NAME
    bomb.parent.mkdir()
    bomb.write_bytes(encode(bytes(cap - 4096)))
    small = tmp_path / "small-0" / SEG_NAME
    small.parent.mkdir()
    small.write_bytes(encode(b"v"))
    for cmd in (["dump", "--deep-iteration", f"--max-decompressed-size={cap}"],
                ["verify-crc", "--deep", f"--max-batch-size={cap}"]):
        code0, base = _peak_mib(*cmd, str(small))
        code, peak = _peak_mib(*cmd, str(bomb))
        assert code0 == code == 0
        assert peak - base < (cap >> 20) * 1.25, (cmd, peak, base)


def test_seek_offset_walks_past_unreadable_bytes(bad_disk):
    disk = bad_disk({f"t-0/{SEG_NAME}": _segment()}, {f"t-0/{SEG_NAME}": [(0 + 2105 * 10 + 30, 2105 * 10 + 60)]})
    res = CliRunner().invoke(cli, ["seek-offset", "--format", "json", disk.path("t-0"), "200"])
    assert res.exit_code == 1, res.output  # found, but bytes on the way could not be read
    assert json.loads(res.stdout)["position"] == 2105 * 50  # batch 50 (offsets 200..203), after the bad page
    assert "20480-24576: unreadable" in res.stderr  # the header of batch 10 sits in that page
    ok = CliRunner().invoke(cli, ["seek-offset", disk.path("t-0"), "12"])  # before the bad bytes: clean
    assert ok.exit_code == 0, ok.output


def test_verify_jobs_2_keeps_every_partition(bad_disk):
    """Workers used to die of SIGBUS (BrokenProcessPool lost every other result); now each reports and goes on."""
    files = {f"ld/t-{i}/{SEG_NAME}": _segment() for i in range(4)}
    disk = bad_disk(files, {f"ld/t-1/{SEG_NAME}": [BAD], f"ld/t-2/{SEG_NAME}": [(0, 10)]})
    code, doc = _verify_json("--jobs", "2", disk.path("ld"))
    assert code == 1
    batches = {Path(f["path"]).parent.name: f["batches"] for f in doc["files"]}
    assert batches == {"t-0": 100, "t-1": 95, "t-2": 98, "t-3": 100}  # t-2: page 0 holds batches 0 and 1
    bad = sorted((Path(p["file"]).parent.name, p["position"], p["end"]) for p in doc["problems"]
                 if p["kind"] == "unreadable")
    assert bad == [("t-1", *BAD_PAGES), ("t-2", 0, 4096)]


def test_unreadable_index_page_is_reported_on_the_index(bad_disk):
    from kafkalog_cli.storage.index import OFFSET_ENTRY

    seg = make_segment(100, records=4, value_size=500)
    index = b"".join(OFFSET_ENTRY.pack(seg.first[i], seg.starts[i]) for i in range(0, 100, 2)) + bytes(8192)
    disk = bad_disk({f"t-0/{SEG_NAME}": seg.data, "t-0/00000000000000000000.index": index},
                    {"t-0/00000000000000000000.index": [(100, 104)]})
    code, doc = _verify_json(disk.path("t-0"))
    bad = [(Path(p["file"]).suffix, p["position"], p["end"]) for p in doc["problems"] if p["kind"] == "unreadable"]
    assert bad == [(".index", 0, 4096)] and code == 1
    res = CliRunner().invoke(cli, ["dump", disk.path("t-0/00000000000000000000.index")])
    assert "bytes [0, 4096): unreadable" in res.stderr and res.exit_code == 1


@pytest.mark.parametrize("reader", ["guarded-mmap", "pread"])
def test_file_deleted_while_read_is_a_vanished_note(tmp_path, monkeypatch, reader):
    if reader == "pread":
        monkeypatch.setenv("KAFKALOG_NO_MMAP", "1")
    path = tmp_path / SEG_NAME
    path.write_bytes(make_segment(4).data)
    with MappedFile(str(path)) as mf:
        path.unlink()  # retention deleted it while we read: the open file stays readable
        assert len(bytes(mf.buf)) == mf.size
        assert [f.kind for f in mf.findings()] == ["vanished"]
    assert all(f.is_note for f in mf.findings())


def test_seek_to_a_batch_with_an_unknown_codec_is_a_located_error(tmp_path):
    """Found by fuzzing: the batch line cannot name codec id 6 (KeyError before)."""
    seg = make_segment(4)
    data = bytearray(seg.data)
    data[seg.starts[2] + 22] = (data[seg.starts[2] + 22] & ~7) | 6  # attributes low byte: codec bits
    (tmp_path / SEG_NAME).write_bytes(bytes(data))
    for cmd in (["seek-offset", str(tmp_path), str(seg.first[2])], ["seek-time", str(tmp_path), str(seg.max_ts[2])]):
        res = CliRunner().invoke(cli, cmd)
        assert isinstance(res.exception, SystemExit) and res.exit_code == 2, (cmd, res.output)
        assert "Unknown compression type id: 6" in res.stderr


def test_raise_if_unreadable_for_writing_commands(tmp_path):
    path = tmp_path / SEG_NAME
    path.write_bytes(b"\x01" * 100_000)
    with MappedFile(str(path)) as mf:
        mf.raise_if_unreadable()  # nothing happened yet
        os.truncate(path, 10_000)
        bytes(mf.buf)  # reads past the new end (SIGBUS without the guard)
        if safe_read.guard_available():
            with pytest.raises(Exception, match="truncated-during-read"):
                mf.raise_if_unreadable()


@pytest.mark.parametrize("command", [["salvage"], ["recover"], ["rebuild-index", "--rewrite-valid"],
                                     ["truncate-to-epoch", "--to-offset", "50"]])
def test_writing_commands_refuse_bytes_the_disk_could_not_deliver(bad_disk, command):
    """The SIGBUS guard reads a bad page as zeros: a read-only command reports it, but a repair planned from those
    zeros would cut good batches (salvage), truncate at them (recover) or stop an index early: refuse, exit 2."""
    disk = bad_disk({f"t-0/{SEG_NAME}": _segment()}, {f"t-0/{SEG_NAME}": [BAD]})
    res = CliRunner().invoke(cli, [*command, disk.path("t-0")])
    assert res.exit_code == 2, res.output
    assert "unreadable" in res.output
    # and the mode ends with the invocation: a read-only command in the same process still reports and goes on
    code, doc = _verify_json(disk.path("t-0"))
    assert code == 1 and any(p["kind"] == "unreadable" for p in doc["problems"])
