"""Benchmark of the failing-disk cases (not a test): decompression-bomb peak RSS and zero-run speed.

* bomb: one v2 batch whose single record's value inflates to just under the decompression cap (default 255 MiB of
  zeros, gzip and zstd); peak RSS (VmHWM of a fresh child process) of ``kafkalog dump --deep-iteration`` and of
  ``kafkalog verify-crc --deep`` on it, against the target cap + 64 MiB, and the child's baseline RSS (``--version``).
* zero runs: a segment of real (written, not sparse) zeros of --zero-mib MiB after one batch, page-cached; the time of
  ``verify-crc`` on it against ``cat FILE > /dev/null`` (target <= 2x), and ``verify-crc`` on a sparse segment of
  --sparse-gib GiB (a hole after one batch; was a 20-34 s "hang").

    python bench/disk_bench.py
    python bench/disk_bench.py --bomb-mib 64 --zero-mib 256 --sparse-gib 1   # quicker
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

from kafkalog_cli.format import codecs
from kafkalog_cli.format.encoder import RecordSpec, encode_batch, encode_legacy_wrapper

KAFKALOG = [sys.executable, "-c", "from kafkalog_cli.cli.main import main; main()"]
HWM = """
import resource, subprocess, sys
p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, p.stderr.strip()[-200:].replace(chr(10), ' | '))
"""


def peak_rss_mib(cmd: list[str]) -> tuple[int, float, str]:
    """(exit code, peak RSS in MiB, stderr tail) of ``cmd`` run as the only child of a fresh interpreter."""
    out = subprocess.run([sys.executable, "-c", HWM, *cmd], capture_output=True, text=True, check=True).stdout
    code, kib, err = out.split(" ", 2)
    return int(code), int(kib) / 1024, err.strip()


def best_time(cmd: list[str], repeat: int, **kw) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **kw)
        times.append(time.perf_counter() - t)
    return min(times)


def bomb(tmp: str, mib: int) -> None:
    cap = codecs.DEFAULT_LIMIT
    value = bytes((mib << 20) - 1024)  # the records section must stay under the cap: value + record framing
    base_code, base_rss, _ = peak_rss_mib([*KAFKALOG, "--version"])
    print(f"child baseline (kafkalog --version): peak RSS {base_rss:.0f} MiB")
    for codec, magic in ((codecs.GZIP, 2), (codecs.ZSTD, 2), (codecs.GZIP, 1)):
        name = codecs.CODEC_NAMES[codec] + ("" if magic == 2 else f" v{magic} wrapper")
        d = os.path.join(tmp, f"bomb-{name.replace(' ', '-')}-0")
        os.makedirs(d)
        path = os.path.join(d, "00000000000000000000.log")
        with open(path, "wb") as f:
            if magic == 2:
                f.write(encode_batch([RecordSpec(key=b"k", value=value, timestamp=1_700_000_000_000)], codec=codec))
            else:
                f.write(encode_legacy_wrapper([(b"k", value, 1_700_000_000_000)], offset=0, codec=codec, magic=magic))
        size = os.path.getsize(path)
        for cmd in (["dump", "--deep-iteration"], ["verify-crc", "--deep"]):
            code, rss, err = peak_rss_mib([*KAFKALOG, *cmd, path])
            target = cap / (1 << 20) + 64
            print(f"{name} bomb ({size} bytes -> {len(value) >> 20} MiB, cap {cap >> 20} MiB): {' '.join(cmd):24s} "
                  f"exit {code}, peak RSS {rss:6.0f} MiB (target < {target:.0f}) {'ok' if rss < target else 'OVER'}"
                  + (f"  [{err}]" if code not in (0, 1) else ""))


def zeros(tmp: str, mib: int, sparse_gib: int, repeat: int) -> None:
    head = encode_batch([RecordSpec(key=b"k", value=b"v" * 100, timestamp=1_700_000_000_000)])
    d = os.path.join(tmp, "zeros-0")
    os.makedirs(d)
    path = os.path.join(d, "00000000000000000000.log")
    with open(path, "wb") as f:
        f.write(head)
        block = bytes(8 << 20)
        left = (mib << 20) - len(head)
        while left > 0:
            f.write(block[: min(left, len(block))])
            left -= len(block)
    subprocess.run(["cat", path], stdout=subprocess.DEVNULL, check=True)  # page-cache it
    t_cat = best_time(["cat", path], repeat)
    t_verify = best_time([*KAFKALOG, "verify-crc", path], repeat)
    t_start = best_time([*KAFKALOG, "--version"], repeat)
    print(f"{mib} MiB zero-filled segment (page-cached): cat {t_cat:.3f} s, verify-crc {t_verify:.3f} s "
          f"(of which interpreter start {t_start:.3f} s); ratio {t_verify / t_cat:.2f} (target <= 2), "
          f"without start-up {(t_verify - t_start) / t_cat:.2f}")
    sd = os.path.join(tmp, "sparse-0")
    os.makedirs(sd)
    spath = os.path.join(sd, "00000000000000000000.log")
    with open(spath, "wb") as f:
        f.write(head)
        f.truncate(sparse_gib << 30)
    t_sparse = best_time([*KAFKALOG, "verify-crc", spath], 1)
    t_dump = best_time([*KAFKALOG, "dump", spath], 1)
    print(f"{sparse_gib} GiB sparse segment: verify-crc {t_sparse:.2f} s, dump {t_dump:.2f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bomb-mib", type=int, default=255)
    ap.add_argument("--zero-mib", type=int, default=1024)
    ap.add_argument("--sparse-gib", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--skip", choices=["bomb", "zeros"], action="append", default=[])
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="kafkalog-disk-bench-")
    try:
        if "bomb" not in args.skip:
            bomb(tmp, args.bomb_mib)
        if "zeros" not in args.skip:
            zeros(tmp, args.zero_mib, args.sparse_gib, args.repeat)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
