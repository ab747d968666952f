#!/usr/bin/env python3
"""Benchmark: `kafkalog dump --deep-iteration --print-data-log` records/s against aiokafka's Cython reader and
kafka-python's pure-Python reader, all three in this process on the same page-cached segment; plus the same dump
with the accelerator forced off, and the end-to-end CLI (`> /dev/null`) in a subprocess.

    python bench/dump_bench.py [--mib 128] [--codec none|lz4|zstd|gzip|snappy]

Targets (issue 9): dump >= 1.0 x aiokafka and >= 10 x kafka-python. Not a test: it prints figures.
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

import segments  # noqa: E402  (bench/segments.py: the generator shared with bench/e2e_bench.py)

from kafkalog_cli.format import codecs  # noqa: E402


def generate(path: Path, mib: int, codec: int) -> int:
    """The segment of this benchmark's figures since issue 9 (highly compressible values of 88-89 bytes)."""
    return segments.generate(path, mib, codec, 100, filler=True)


def best(fn, repeat: int = 3) -> float:  # noqa: ANN001
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def kafkalog_dump(path: Path, accel: bool) -> None:
    from kafkalog_cli.ops.dump import Dumper, DumpOptions
    from kafkalog_cli.render.dls import DlsRenderer
    from kafkalog_cli.render.parsers import DecoderParser
    from kafkalog_cli.versions import profile_for

    with open(os.devnull, "w") as sink:
        write = sink.write

        def out(line: str) -> None:
            write(line + "\n")

        prof = profile_for("3.6")
        opts = DumpOptions(print_data_log=True, deep_iteration=True, parser=DecoderParser())
        r = DlsRenderer(prof, opts, out, out)
        if accel:
            opts.fast = r.fast_formatter()
            assert opts.fast is not None, "accelerator not built"
        d = Dumper(prof, opts)
        for ev in d.run([str(path)]):
            r.handle(ev)


def kafka_python_decode(data: bytes) -> int:
    from kafka.record import MemoryRecords

    return segments.decode_all(MemoryRecords, data)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=128)
    ap.add_argument("--codec", default="none", choices=list(codecs.CODEC_IDS))
    args = ap.parse_args()
    print(f"machine: {platform.machine()} {os.cpu_count()} cpus, {platform.python_implementation()} {platform.python_version()}")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "00000000000000000000.log"
        n = generate(path, args.mib, codecs.CODEC_IDS[args.codec])
        data = path.read_bytes()
        print(f"input: {len(data) / 2**20:.0f} MiB, {n} records, codec {args.codec}, 100 records/batch")
        t_fast = best(lambda: kafkalog_dump(path, True))
        t_slow = best(lambda: kafkalog_dump(path, False), repeat=1)
        assert segments.aiokafka_decode(data) == n
        t_aio = best(lambda: segments.aiokafka_decode(data))
        t_kp = best(lambda: kafka_python_decode(data), repeat=1)
        t0 = time.perf_counter()
        with open(os.devnull, "wb") as null:
            subprocess.run([sys.executable, "-m", "kafkalog_cli", "dump", "--deep-iteration", "--print-data-log",
                            "--kafka-version", "3.6", str(path)], stdout=null, check=False)
        t_cli = time.perf_counter() - t0
    rate = lambda t: n / t / 1e6  # noqa: E731
    print(f"kafkalog dump (accelerator):     {rate(t_fast):6.2f} M records/s")
    print(f"kafkalog dump (pure Python):     {rate(t_slow):6.2f} M records/s")
    print(f"kafkalog CLI > /dev/null:        {rate(t_cli):6.2f} M records/s (incl. start-up)")
    print(f"aiokafka Cython decode:          {rate(t_aio):6.2f} M records/s")
    print(f"kafka-python decode:             {rate(t_kp):6.2f} M records/s")
    print(f"ratio dump / aiokafka:           {t_aio / t_fast:6.2f}  (target >= 1.0)")
    print(f"ratio dump / kafka-python:       {t_kp / t_fast:6.2f}  (target >= 10)")


if __name__ == "__main__":
    main()
