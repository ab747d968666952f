"""Benchmark (not a test): did the one compiled record decoder (accel/record.h, issue 21) slow its four users?

A/B by CPU time in one run, like bench/layouts_bench.py (whose segment generator and child-process timer it uses):
the same CLI command runs in child processes against two source trees (``--base``: before the change, ``--new``:
after), alternately, ``--repeat`` times each; the smallest user+sys CPU time of each child (``os.wait4``) is kept.
Workloads, on layouts_bench's "big" segment (100-record batches, a header on every fourth record), accelerator on:
  dump        kafkalog dump --deep-iteration --print-data-log          (put_records)
  json        kafkalog dump --deep-iteration --print-data-log --format json   (put_json_records)
  verify-deep kafkalog verify-crc --deep                               (records_clean)
  scan        kafkalog scan --records --jobs 1                         (rec_walk)

    python bench/records_bench.py --base /tmp/base-tree --new . [--mib 48] [--repeat 3] [--only dump json]
                                  [--seg SEGMENT.log] [--passes 4]

With --in-process it instead loads both trees' ``_accel`` into this process and times the four C walks alone
(dump_run text / JSON, check_records, scan_records per batch; process CPU time, best of --repeat rounds, the two
builds alternating; --new-first swaps the order, which matters for scan_records' allocations).

Each tree needs its own built ``kafkalog_cli/_accel*.so``, built the same way.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Callable
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchio import ab_min  # noqa: E402
from layouts_bench import cpu_of, make_segments  # noqa: E402

CLI = """
import os, sys, tempfile
sink = os.open(os.devnull, os.O_WRONLY)
os.dup2(sink, 1)
args = {args!r}
paths = P.split(',')
if args[0] == 'scan':
    args = ['scan', *[os.path.dirname(p) for p in paths], '--out', os.path.join(tempfile.mkdtemp(), 'out')] + args[1:]
elif args[-1] == '--files':
    args = args + [P]
else:
    args = args + paths
sys.argv = ['kafkalog'] + args
from kafkalog_cli.cli.main import main
try:
    main()
except SystemExit as e:
    assert e.code in (0, None), e.code
"""

WORKLOADS: dict[str, list[str]] = {
    "dump": ["dump", "--deep-iteration", "--print-data-log", "--files"],
    "json": ["dump", "--deep-iteration", "--print-data-log", "--format", "json", "--files"],
    "verify-deep": ["verify-crc", "--deep"],
    "scan": ["scan", "--records", "--jobs", "1"],
}


def in_process(base: str, new: str, seg: str, rounds: int, new_first: bool) -> None:
    """The four record walks of the two builds, alternating in one process (see the module doc)."""
    import importlib.util
    import struct
    import sysconfig
    import time
    from types import ModuleType

    mods: dict[str, ModuleType] = {}
    for name, tree in (("new", new), ("base", base)) if new_first else (("base", base), ("new", new)):
        so = os.path.join(tree, "kafkalog_cli", "_accel" + sysconfig.get_config_var("EXT_SUFFIX"))
        spec = importlib.util.spec_from_file_location("kafkalog_cli._accel", so)
        assert spec is not None and spec.loader is not None, so
        m = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(m)
        mods[name] = m
    data = open(seg, "rb").read()
    batches = []
    pos = 0
    while pos + 61 <= len(data):
        base_offset, length = struct.unpack_from(">qi", data, pos)
        lod, bts, mts = struct.unpack_from(">iqq", data, pos + 23)
        count = struct.unpack_from(">i", data, pos + 57)[0]
        batches.append((pos, pos + 61, pos + 12 + length, count, base_offset, base_offset + lod, bts, mts))
        pos += 12 + length

    class Decline(Exception):
        pass

    def decompress(*_a: object) -> bytes:
        raise Decline

    def dump(m: ModuleType, mode: int) -> None:
        p = 0
        while p < len(data):
            r = m.dump_run(data, p, len(data), mode, True, True, False, 4, (b"CreateTime", b"LogAppendTime"),
                           (b"NONE", b"GZIP", b"SNAPPY", b"LZ4", b"ZSTD"), b'"x"', -1, False, 1 << 26, decompress,
                           Decline)
            if r[1] == p:
                break
            p = r[1]

    def check(m: ModuleType) -> None:
        for _p, s, e, c, b, last, _bts, _mts in batches:
            assert m.check_records(data, s, e, c, b, last)

    def scan(m: ModuleType) -> None:
        outs = tuple(bytearray() for _ in range(10))
        for p, s, e, c, b, _last, bts, mts in batches:
            assert m.scan_records(data, s, e, outs, p, b, bts, mts, False, c)

    work: dict[str, Callable[[ModuleType], None]] = {
        "dump text (put_records)": lambda m: dump(m, 0), "dump json (put_json_records)": lambda m: dump(m, 1),
        "verify --deep (records_clean)": check, "scan --records (rec_walk)": scan}
    print(f"in process: {len(data) >> 20} MiB, {len(batches)} batches, {rounds} rounds, "
          f"{'new' if new_first else 'base'} first; load {os.getloadavg()[0]:.2f}")
    for wname, fn in work.items():
        best = {"base": 1e9, "new": 1e9}
        for _ in range(rounds):
            for name, m in mods.items():
                t0 = time.process_time()
                fn(m)
                best[name] = min(best[name], time.process_time() - t0)
        print(f"{wname:<30} base {best['base']:.4f} s  new {best['new']:.4f} s  new/base "
              f"{best['new'] / best['base']:.3f}", flush=True)
    print(f"load after: {os.getloadavg()[0]:.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--base", required=True)
    ap.add_argument("--new", default=str(Path(__file__).resolve().parents[1]))
    ap.add_argument("--mib", type=int, default=48, help="layouts_bench's size: the big segment is a third of it")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dir", default=tempfile.gettempdir())
    ap.add_argument("--only", nargs="*", default=list(WORKLOADS))
    ap.add_argument("--seg", help="use this segment instead of generating one")
    ap.add_argument("--passes", type=int, default=4,
                    help="each command gets the segment this many times (hard links in their own directories), so "
                         "that its start-up is paid once")
    ap.add_argument("--in-process", action="store_true", help="time the C walks alone (needs --seg)")
    ap.add_argument("--new-first", action="store_true")
    a = ap.parse_args()
    base, new = os.path.abspath(a.base), os.path.abspath(a.new)
    if a.in_process:
        in_process(base, new, a.seg, a.repeat, a.new_first)
        return
    with tempfile.TemporaryDirectory(dir=a.dir) as d:
        seg = a.seg or make_segments(d, a.mib)["big"]
        links = [seg]
        for j in range(1, a.passes):
            os.makedirs(os.path.join(d, f"pass{j}-0"))
            links.append(os.path.join(d, f"pass{j}-0", os.path.basename(seg)))
            os.link(seg, links[-1])
        print(f"segment: {os.path.getsize(seg) >> 20} MiB of 100-record batches, {a.passes} passes; "
              f"load {os.getloadavg()[0]:.2f}")
        print(f"{'workload':<12} {'base CPU s':>10} {'new CPU s':>10} {'new/base':>9}")
        for name in a.only:
            code = CLI.format(args=WORKLOADS[name])
            b, n = ab_min(base, new, a.repeat, partial(cpu_of, no_accel="", code=code, path=",".join(links)))
            print(f"{name:<12} {b:>10.3f} {n:>10.3f} {n / b:>9.3f}", flush=True)
        print(f"load after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
