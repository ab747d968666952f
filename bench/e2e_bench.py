#!/usr/bin/env python3
"""Benchmark of what the user runs (not a test): the CLI end to end, stdout to a file, start-up subtracted.

For each input (a 64 MiB segment of 100-record v2 batches; values of 100 bytes and 1 KiB; uncompressed and lz4) it
measures, in ONE run so that the ratios hold on a shared machine (best of --repeat each):
  * aiokafka's Cython decode of the same bytes (in this process, every record's key/value/headers/timestamp touched);
  * ``kafkalog dump --deep-iteration --print-data-log --files SEG > FILE`` (a child process);
  * ``kafkalog dump --deep-iteration --print-data-log --format json --files SEG > FILE``;
  * ``kafkalog verify-crc --deep SEG`` and ``kafkalog dump --deep-iteration SEG > FILE`` (no data);
and subtracts the start-up of the same command line on a one-batch segment. Each child is given the segment --passes
times (hard links), so that its start-up, as long as one pass and as noisy on a shared machine, is paid once. aiokafka and the commands
take turns within each round. Ratios printed:
  dump / aiokafka (target >= 1.2), json / text dump (>= 0.5), verify-crc --deep / dump --deep-iteration (>= 0.5).
With --peak it also reports the child's peak RSS (VmHWM from wait4's rusage) of verify-crc --deep.

    python bench/e2e_bench.py                      # all four inputs
    python bench/e2e_bench.py --value 100 --codec none --repeat 3
    KAFKALOG_NO_ACCEL=1 python bench/e2e_bench.py  # the pure-Python reference, for comparison
    python bench/e2e_bench.py --value 1024 --codec none --only dump,floor   # the floor under the 1 KiB figure
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
sys.path.insert(0, str(ROOT / "bench"))

from segments import aiokafka_decode, generate  # noqa: E402  (bench/segments.py: shared with bench/dump_bench.py)

from kafkalog_cli.format import codecs  # noqa: E402

CLI = [sys.executable, "-m", "kafkalog_cli"]


def best(fn, repeat: int, clock=time.perf_counter) -> float:  # noqa: ANN001
    times = []
    for _ in range(repeat):
        t = clock()
        fn()
        times.append(clock() - t)
    return min(times)


def run_cli(args: list[str], out_path: str) -> tuple[float, float, int]:
    """Wall time and CPU time (user + system) of one child with stdout to ``out_path``, and its peak RSS in KiB."""
    with open(out_path, "wb") as out:
        t = time.perf_counter()
        p = subprocess.Popen(CLI + args, stdout=out, stderr=subprocess.DEVNULL)
        _pid, status, ru = os.wait4(p.pid, 0)
        dt = time.perf_counter() - t
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):
        raise SystemExit(f"{' '.join(args)}: exit {code}")
    return dt, ru.ru_utime + ru.ru_stime, ru.ru_maxrss


def child_cpu(cmd: list[str], out_path: str | None = None) -> float:
    """CPU time (user + system) of one child, stdout to ``out_path`` (a new file) or /dev/null."""
    if out_path is not None and os.path.exists(out_path):
        os.unlink(out_path)
    with open(out_path or os.devnull, "wb") as out:
        p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.DEVNULL)
        _pid, _status, ru = os.wait4(p.pid, 0)
    return ru.ru_utime + ru.ru_stime


def floors(tmp: Path, seg: Path, repeat: int) -> dict[str, float]:
    """What no dump can avoid, per pass, by CPU time (best of ``repeat``): writing its output to the same file system
    (``dd bs=1M`` of the text dump's output to a new file, minus ``dd`` of it to /dev/null: the read side) and
    mapping + CRC-checking the input (isvalid is part of every batch line; aiokafka's decode checks no CRC)."""
    import mmap

    from kafkalog_cli.storage import accel

    out = str(tmp / "floor-dump.txt")
    child_cpu(CLI + ["dump", "--deep-iteration", "--print-data-log", "--files", str(seg)], out)
    dd_write = min(child_cpu(["dd", f"if={out}", f"of={tmp / 'floor-dd.txt'}", "bs=1M", "status=none"])
                   for _ in range(repeat))
    dd_read = min(child_cpu(["dd", f"if={out}", "of=/dev/null", "bs=1M", "status=none"]) for _ in range(repeat))
    res = {"output_bytes": os.path.getsize(out), "write": max(dd_write - dd_read, 0.0)}
    for p in (out, str(tmp / "floor-dd.txt")):
        os.unlink(p)
    mod = accel.module()
    if mod is not None:
        def crc() -> None:
            with open(seg, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
                mod.crc32c(m)

        res["input"] = best(crc, repeat, clock=time.process_time)
    return res


def measure(tmp: Path, mib: float, codec_name: str, value: int, repeat: int, only: set[str],
            passes: int) -> dict[str, float]:
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
    commands = {
        "dump": ["dump", "--deep-iteration", "--print-data-log", "--files"],
        "json": ["dump", "--deep-iteration", "--print-data-log", "--format", "json", "--files"],
        "deep": ["dump", "--deep-iteration", "--files"],
        "verify_deep": ["verify-crc", "--deep"],
    }
    # the same segment `passes` times (hard links in their own directories, so verify-crc does not merge them):
    # the child's start-up (0.1-0.35 s on the shared machine, as long as one pass) is paid once, not per pass
    links = [seg]
    for j in range(1, passes):
        link = tmp / f"v{value}-{codec_name}-pass{j}" / seg.name
        link.parent.mkdir()
        os.link(seg, link)
        links.append(link)
    res["passes"] = passes
    if "floor" in only:
        for k, v in floors(tmp, seg, repeat).items():
            res["floor_" + k] = v
    # the commands take turns (order reversed every round), so that a burst of load from other work hits all of
    # them alike instead of one command's three runs: the ratios between them are what the targets are about
    chosen = [name for name in commands if name in only]
    runs: dict[str, list[tuple[float, float, int]]] = {name: [] for name in chosen}
    starts: dict[str, list[tuple[float, float, int]]] = {name: [] for name in chosen}
    aio_wall, aio_cpu = [], []
    for r in range(repeat):
        w, c = time.perf_counter(), time.process_time()
        aiokafka_decode(data)
        aio_wall.append(time.perf_counter() - w)
        aio_cpu.append(time.process_time() - c)
        for name in (chosen if r % 2 == 0 else chosen[::-1]):
            cmd = commands[name]
            full = cmd + ([",".join(map(str, links))] if cmd[-1] == "--files" else [str(p) for p in links])
            starts[name].append(run_cli(cmd + [str(tiny)], out_path))
            runs[name].append(run_cli(full, out_path))
    res["aiokafka"] = n / min(aio_wall)
    res["aiokafka_rate_cpu"] = n / min(aio_cpu)
    for name in chosen:
        t = {"wall": min(x[0] for x in runs[name]), "cpu": min(x[1] for x in runs[name]),
             "start": min(x[0] for x in starts[name]), "start_cpu": min(x[1] for x in starts[name]),
             "rss": max(x[2] for x in runs[name])}
        res[name] = n * passes / max(t["wall"] - t["start"], 1e-9)
        res[name + "_rate_cpu"] = n * passes / max(t["cpu"] - t["start_cpu"], 1e-9)
        for k, v in t.items():
            res[name + "_" + k] = v
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mib", type=float, default=64)
    ap.add_argument("--codec", choices=["none", "lz4", "both"], default="both")
    ap.add_argument("--value", type=int, choices=[0, 100, 1024], default=0, help="0 = both 100 and 1024")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--passes", type=int, default=4, help="the segment is given this many times to each command")
    ap.add_argument("--only", default="dump,json,deep,verify_deep",
                    help="comma-separated subset of the commands; add 'floor' for the write + input floor")
    args = ap.parse_args()
    only = set(args.only.split(","))
    print(f"machine: {platform.machine()} {os.cpu_count()} cpus, {platform.python_implementation()} "
          f"{platform.python_version()}, load average {os.getloadavg()[0]:.1f} at start, "
          f"accelerator {'off' if os.environ.get('KAFKALOG_NO_ACCEL') else 'on'}")
    values = [100, 1024] if args.value == 0 else [args.value]
    cods = ["none", "lz4"] if args.codec == "both" else [args.codec]
    with tempfile.TemporaryDirectory() as tmp:
        for value in values:
            for codec in cods:
                r = measure(Path(tmp), args.mib, codec, value, args.repeat, only, args.passes)
                print(f"\n== {r['bytes'] / 2**20:.0f} MiB segment, {int(r['records'])} records, value {value} B, "
                      f"codec {codec} (best of {args.repeat}; {args.passes} passes per child, start-up subtracted; "
                      f"M records/s by wall clock and by CPU time) ==")
                print(f"{'aiokafka Cython decode (in process)':40s} {r['aiokafka'] / 1e6:7.3f} wall {r['aiokafka_rate_cpu'] / 1e6:7.3f} cpu")
                for k, label in (("dump", "dump --deep-iteration --print-data-log"), ("json", "  ... --format json"),
                                 ("deep", "dump --deep-iteration (no data)"), ("verify_deep", "verify-crc --deep")):
                    if k in r:
                        print(f"{label:40s} {r[k] / 1e6:7.3f} wall {r[k + '_rate_cpu'] / 1e6:7.3f} cpu  (wall {r[k + '_wall']:.3f} s, "
                              f"start-up {r[k + '_start']:.3f} s; cpu {r[k + '_cpu']:.3f}/{r[k + '_start_cpu']:.3f} s; "
                              f"peak RSS {r[k + '_rss'] / 1024:.0f} MiB)")
                if "floor_write" in r:
                    fl = r["floor_write"] + r.get("floor_input", 0.0)
                    aio = r["records"] / r["aiokafka_rate_cpu"]
                    print(f"floor per pass (cpu): write of the {r['floor_output_bytes'] / 1e6:.0f} MB output "
                          f"{r['floor_write']:.4f} s + map and CRC-32C of the input {r.get('floor_input', 0.0):.4f} s "
                          f"= {fl:.4f} s; aiokafka's whole decode {aio:.4f} s: a dump with free formatting would "
                          f"reach {aio / fl:.2f}x")
                for a, b, label, target in (("dump", "aiokafka", "dump / aiokafka", 1.2), ("json", "dump", "json / text dump", 0.5),
                                            ("verify_deep", "deep", "verify-crc --deep / dump --deep", 0.5)):
                    if a in r and b in r:
                        print(f"ratio {label:34s} {r[a] / r[b]:6.2f} wall {r[a + '_rate_cpu'] / r[b + '_rate_cpu']:6.2f} cpu"
                              f"   (target >= {target})")
                sys.stdout.flush()


if __name__ == "__main__":
    main()
