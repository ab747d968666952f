#!/usr/bin/env python3
"""Benchmark: start-up of the PyInstaller bundle (dist/kafkalog/kafkalog, built by scripts/build_binary.sh) against
the pip-installed console script beside this interpreter (target: bundle <= 2x the pip command). Each command runs
alternately, ``--runs`` times per round over two rounds; the median and the best are reported.

    python bench/binary_startup_bench.py [--runs 20] [--binary dist/kafkalog/kafkalog] [--onefile PATH]

``--onefile PATH`` adds a one-file build for comparison (built with PyInstaller's --onefile).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def once(cmd: list[str], cwd: str) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, cwd=cwd)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--binary", default=str(ROOT / "dist" / "kafkalog" / "kafkalog"))
    ap.add_argument("--onefile", default=None)
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT / "tests"))
    from shipping_helpers import make_partition

    pip_cmd = os.path.join(os.path.dirname(sys.executable), "kafkalog")
    if not os.path.exists(pip_cmd):
        sys.exit(f"no console script at {pip_cmd}: run with the interpreter of a venv where kafkalog is installed")
    tools = {"pip": [pip_cmd], "bundle": [args.binary]}
    if args.onefile:
        tools["onefile"] = [args.onefile]
    with tempfile.TemporaryDirectory() as tmp:
        make_partition(Path(tmp))
        seg = os.path.join("orders-0", "0" * 20 + ".log")
        cases = {"--version": ["--version"], "--help": ["--help"], "dump SEGMENT": ["dump", "--print-data-log", seg]}
        times: dict[tuple[str, str], list[float]] = {(c, t): [] for c in cases for t in tools}
        for _round in range(2):
            for case, argv in cases.items():
                for _ in range(args.runs):
                    for tool, cmd in tools.items():  # alternate, so both see the same machine noise
                        times[(case, tool)].append(once(cmd + argv, tmp))
    print(f"machine: {platform.machine()} {os.cpu_count()} cpus, Python {platform.python_version()}, "
          f"{2 * args.runs} runs per command")
    print(f"pip command: {pip_cmd}\nbundle: {args.binary}" + (f"\none-file: {args.onefile}" if args.onefile else ""))
    for case in cases:
        pip_med = statistics.median(times[(case, "pip")])
        for tool in tools:
            ts = times[(case, tool)]
            med = statistics.median(ts)
            print(f"{case:<14} {tool:<8} median {med * 1000:7.1f} ms  best {min(ts) * 1000:7.1f} ms  "
                  f"ratio to pip (median) {med / pip_med:5.2f}")


if __name__ == "__main__":
    main()
