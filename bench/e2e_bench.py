#!/usr/bin/env python3
"""Benchmark of what the user runs (not a test): the CLI end to end, stdout to a file, start-up subtracted.

For each input (a 64 MiB segment of 100-record v2 batches; values of 100 bytes and 1 KiB; uncompressed and lz4) it
measures, in ONE run so that the ratios hold on a shared machine (best of --repeat each):
  * aiokafka's Cython decode of the same bytes (in this process, every record's key/value/headers/timestamp touched);
  * ``kafkalog dump --deep-iteration --print-data-log --files SEG > FILE`` (a child process);
  * ``kafkalog dump --deep-iteration --print-data-log --format json --files SEG > FILE``;
  * ``kafkalog verify-crc --deep SEG`` and ``kafkalog dump --deep-iteration SEG > FILE`` (no data);
and subtracts the start-up of the same command line on a one-batch segment. Ratios printed:
  dump / aiokafka (target >= 1.2), json / text dump (>= 0.5), verify-crc --deep / dump --deep-iteration (>= 0.5).
With --peak it also reports the child's peak RSS (VmHWM from wait4's rusage) of verify-crc --deep.

    python bench/e2e_bench.py                      # all four inputs
    python bench/e2e_bench.py --value 100 --codec none --repeat 3
    KAFKALOG_NO_ACCEL=1 python bench/e2e_bench.py  # the pure-Python reference, for comparison
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kafkalog_cli.format import codecs  # noqa: E402
from kafkalog_cli.format.encoder import RecordSpec, encode_batch  # noqa: E402

CLI = [sys.executable, "-m", "kafkalog_cli"]


def generate(path: Path, mib: float, codec: int, value: int) -> int:
    """A segment of 100-record batches (a header on every 4th record); returns the record count."""
    off = 0
    total = 0
    pad = b"x" * max(0, value - 12)
    with open(path, "wb") as f:
        while total < mib * 1024 * 1024:
            recs = [
                RecordSpec(b"key-%08d" % (off + i), (b"value-%05d-" % (i % 100000) + pad)[:value],
                           headers=[("trace", b"1")] if i % 4 == 0 else [], timestamp=1_700_000_000_000 + off + i)
                for i in range(100)
            ]
            b = encode_batch(recs, base_offset=off, codec=codec, partition_leader_epoch=1)
            f.write(b)
            total += len(b)
            off += 100
    return off


def aiokafka_decode(data: bytes) -> int:
    from aiokafka.record.memory_records import MemoryRecords

    n = 0
    mr = MemoryRecords(data)
    while True:
        b = mr.next_batch()
        if b is None:
            return n
        for rec in b:
            rec.key, rec.value, rec.headers, rec.timestamp, rec.offset  # noqa: B018
            n += 1


def best(fn, repeat: int) -> float:  # noqa: ANN001
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def run_cli(args: list[str], out_path: str) -> tuple[float, int]:
    """Wall time of one child with stdout to ``out_path``, and its peak RSS in KiB."""
    with open(out_path, "wb") as out:
        t = time.perf_counter()
        p = subprocess.Popen(CLI + args, stdout=out, stderr=subprocess.DEVNULL)
        _pid, status, ru = os.wait4(p.pid, 0)
        dt = time.perf_counter() - t
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):
        raise SystemExit(f"{' '.join(args)}: exit {code}")
    return dt, ru.ru_maxrss


def cli_best(args: list[str], tiny_args: list[str], out_path: str, repeat: int) -> tuple[float, float, int]:
    """(best wall time, best start-up time, peak RSS KiB); the start-up run is the same command on a tiny segment."""
    walls, starts, peak = [], [], 0
    for _ in range(repeat):
        s, _ = run_cli(tiny_args, out_path)
        w, rss = run_cli(args, out_path)
        walls.append(w)
        starts.append(s)
        peak = max(peak, rss)
    return min(walls), min(starts), peak


def measure(tmp: Path, mib: float, codec_name: str, value: int, repeat: int) -> dict[str, float]:
    seg = tmp / f"v{value}-{codec_name}" / "00000000000000000000.log"
    seg.parent.mkdir()
    tiny = tmp / f"tiny-{value}-{codec_name}" / "00000000000000000000.log"
    tiny.parent.mkdir()
    codec = codecs.CODEC_IDS[codec_name]
    n = generate(seg, mib, codec, value)
    generate(tiny, 0.0001, codec, value)
    data = seg.read_bytes()
    assert aiokafka_decode(data) == n
    out_path = str(tmp / "out.txt")
    res: dict[str, float] = {"records": n, "bytes": len(data)}
    t_aio = best(lambda: aiokafka_decode(data), repeat)
    res["aiokafka"] = n / t_aio
    commands = {
        "dump": ["dump", "--deep-iteration", "--print-data-log", "--files"],
        "json": ["dump", "--deep-iteration", "--print-data-log", "--format", "json", "--files"],
        "deep": ["dump", "--deep-iteration", "--files"],
        "verify_deep": ["verify-crc", "--deep"],
    }
    for name, cmd in commands.items():
        wall, start, rss = cli_best(cmd + [str(seg)], cmd + [str(tiny)], out_path, repeat)
        res[name] = n / max(wall - start, 1e-9)
        res[name + "_wall"] = wall
        res[name + "_start"] = start
        res[name + "_rss"] = rss
        if name == "dump":
            res["dump_out"] = os.path.getsize(out_path)
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mib", type=float, default=64)
    ap.add_argument("--codec", choices=["none", "lz4", "both"], default="both")
    ap.add_argument("--value", type=int, choices=[0, 100, 1024], default=0, help="0 = both 100 and 1024")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(f"machine: {platform.machine()} {os.cpu_count()} cpus, {platform.python_implementation()} "
          f"{platform.python_version()}, load average {os.getloadavg()[0]:.1f} at start, "
          f"accelerator {'off' if os.environ.get('KAFKALOG_NO_ACCEL') else 'on'}")
    values = [100, 1024] if args.value == 0 else [args.value]
    cods = ["none", "lz4"] if args.codec == "both" else [args.codec]
    with tempfile.TemporaryDirectory() as tmp:
        for value in values:
            for codec in cods:
                r = measure(Path(tmp), args.mib, codec, value, args.repeat)
                m = lambda k, r=r: r[k] / 1e6  # noqa: E731
                print(f"\n== {r['bytes'] / 2**20:.0f} MiB segment, {int(r['records'])} records, value {value} B, "
                      f"codec {codec} (best of {args.repeat}; start-up subtracted) ==")
                print(f"aiokafka Cython decode (in process)      {m('aiokafka'):7.3f} M records/s")
                for k, label in (("dump", "dump --deep-iteration --print-data-log"), ("json", "  ... --format json"),
                                 ("deep", "dump --deep-iteration (no data)"), ("verify_deep", "verify-crc --deep")):
                    print(f"{label:40s} {m(k):7.3f} M records/s  (wall {r[k + '_wall']:.3f} s, start-up "
                          f"{r[k + '_start']:.3f} s, peak RSS {r[k + '_rss'] / 1024:.0f} MiB)")
                print(f"  text output {r['dump_out'] / 2**20:.0f} MiB")
                print(f"ratio dump / aiokafka                    {r['dump'] / r['aiokafka']:6.2f}   (target >= 1.2)")
                print(f"ratio json / text dump                   {r['json'] / r['dump']:6.2f}   (target >= 0.5)")
                print(f"ratio verify-crc --deep / dump --deep    {r['verify_deep'] / r['deep']:6.2f}   (target >= 0.5)")
                sys.stdout.flush()


if __name__ == "__main__":
    main()
