#!/usr/bin/env python3
"""Benchmark: start-up of `kafkalog --help` divided by `python -c "import click"` (target <= 1.5: rich, codecs,
checksums and pyspark must be imported lazily), measured alternately, best of N runs each.

    python bench/startup_bench.py [--runs 20]
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import time


def best(cmd: list[str], runs: int) -> float:
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        out.append(time.perf_counter() - t)
    return min(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args()
    # the console script beside this interpreter (a venv's bin/kafkalog), not a pyenv shim
    script = os.path.join(os.path.dirname(sys.executable), "kafkalog")
    kafkalog = [script] if os.path.exists(script) else [sys.executable, "-m", "kafkalog_cli"]
    click = [sys.executable, "-c", "import click"]
    bare = [sys.executable, "-c", "pass"]
    t_k = t_c = t_b = float("inf")
    for _ in range(2):  # alternate to share the machine's noise
        t_k = min(t_k, best(kafkalog + ["--help"], args.runs // 2))
        t_c = min(t_c, best(click, args.runs // 2))
        t_b = min(t_b, best(bare, args.runs // 2))
    print(f"machine: {platform.machine()} {os.cpu_count()} cpus, Python {platform.python_version()}")
    print(f"command: {' '.join(kafkalog)} --help")
    print(f"python -c pass:          {t_b * 1000:7.1f} ms")
    print(f"python -c 'import click': {t_c * 1000:7.1f} ms")
    print(f"kafkalog --help:         {t_k * 1000:7.1f} ms")
    print(f"ratio:                   {t_k / t_c:7.2f}  (target <= 1.5)")


if __name__ == "__main__":
    main()
