"""Benchmark (not a test): did reading through ``format/layouts.py`` slow the hot paths? CPU time, two trees, one run.

Runs the same workloads in child processes against two source trees (``--base``: a checkout before the change,
``--new``: after) alternately, ``--repeat`` times each, and reports the smallest user+sys CPU time of each child
(``os.wait4``), so that both sides see the same machine load. Workloads, on generated segments in ``--dir``:
  verify-py / verify-c    verify_segment over 1-record batches (per-batch header cost), KAFKALOG_NO_ACCEL=1 / accel
  rebuild-py              rebuild_segment_py over the same segment (header unpack per batch)
  walk-py                 storage.segment.entries (Batch objects) over the same segment
  dump-py / dump-c        deep dump with --print-data-log of 100-record batches, pure Python / accelerator

    python bench/layouts_bench.py --base /tmp/base-tree --new . [--mib 48] [--repeat 3]

Each tree needs its own built ``kafkalog_cli/_accel*.so`` (build both the same way for a fair C comparison).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from benchio import ab_min  # noqa: E402  (bench/benchio.py, shared with records_bench.py)

from kafkalog_cli.format.encoder import RecordSpec, encode_batch  # noqa: E402

WORKLOADS = {
    "verify-py": ("1", "small", "from kafkalog_cli.ops.verify import verify_segment as f; r = f(P); assert r.batches > 0"),
    "verify-c": ("", "small", "from kafkalog_cli.ops.verify import verify_segment as f; r = f(P); assert r.batches > 0"),
    "rebuild-py": ("1", "small", "from kafkalog_cli.ops.rebuild_index import rebuild_segment_py as f\n"
                                 "b = open(P, 'rb').read(); r = f(b, 0); assert r.problem is None"),
    "walk-py": ("1", "small", "from kafkalog_cli.storage.segment import entries\n"
                              "b = memoryview(open(P, 'rb').read()); n = sum(1 for e in entries(b)); assert n > 0"),
    "dump-py": ("1", "big", "DUMP"),
    "dump-c": ("", "big", "DUMP"),
}

DUMP = """
import os
from kafkalog_cli.ops.dump import Dumper, DumpOptions
from kafkalog_cli.render.dls import DlsRenderer
from kafkalog_cli.render.parsers import DecoderParser
try:
    from kafkalog_cli.versions import profile_for
except ImportError:  # a tree from before issue 21 moved the profile out of render/
    from kafkalog_cli.render.versions import profile_for
sink = open(os.devnull, 'w')
lines = [0]
def out(line):
    lines[0] += 1
    sink.write(line + '\\n')
prof = profile_for('3.6')
opts = DumpOptions(print_data_log=True, deep_iteration=True, parser=DecoderParser())
r = DlsRenderer(prof, opts, out, out)
if not os.environ.get('KAFKALOG_NO_ACCEL'):
    opts.fast = r.fast_formatter(); assert opts.fast is not None
for ev in Dumper(prof, opts).run([P]):
    r.handle(ev)
assert lines[0] > 500, lines  # the compiled formatter hands over a batch's lines as one string
"""


def make_segments(d: str, mib: int) -> dict[str, str]:
    os.makedirs(os.path.join(d, "small-0"))
    os.makedirs(os.path.join(d, "big-0"))
    small = os.path.join(d, "small-0", "00000000000000000000.log")
    big = os.path.join(d, "big-0", "00000000000000000000.log")
    off = 0
    with open(small, "wb") as f:
        while f.tell() < mib << 20:
            f.write(encode_batch([RecordSpec(b"k%d" % off, b"v" * 100, timestamp=1_700_000_000_000 + off)],
                                 base_offset=off, partition_leader_epoch=1))
            off += 1
    off = 0
    with open(big, "wb") as f:
        while f.tell() < (mib // 3) << 20:
            recs = [RecordSpec(b"key-%08d" % (off + i), b"value-%d-" % i + b"x" * 80,
                               headers=[("trace", b"1")] if i % 4 == 0 else [], timestamp=1_700_000_000_000 + off + i)
                    for i in range(100)]
            f.write(encode_batch(recs, base_offset=off, partition_leader_epoch=1))
            off += 100
    return {"small": small, "big": big}


def cpu_of(tree: str, no_accel: str, code: str, path: str) -> float:
    env = {k: v for k, v in os.environ.items() if k not in ("KAFKALOG_NO_ACCEL", "PYTHONPATH")}
    env["PYTHONPATH"] = tree
    if no_accel:
        env["KAFKALOG_NO_ACCEL"] = "1"
    check = f"import kafkalog_cli, os; assert os.path.dirname(os.path.dirname(kafkalog_cli.__file__)) == {tree!r}\n"
    proc = subprocess.Popen([sys.executable, "-c", check + f"P = {path!r}\n" + code], env=env, cwd=tree)
    _pid, status, ru = os.wait4(proc.pid, 0)
    if status != 0:
        raise SystemExit(f"workload failed in {tree} (status {status})")
    return ru.ru_utime + ru.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--base", required=True)
    ap.add_argument("--new", default=str(ROOT))
    ap.add_argument("--mib", type=int, default=48)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dir", default=tempfile.gettempdir())
    ap.add_argument("--only", nargs="*", default=list(WORKLOADS))
    a = ap.parse_args()
    base, new = os.path.abspath(a.base), os.path.abspath(a.new)
    with tempfile.TemporaryDirectory(dir=a.dir) as d:
        segs = make_segments(d, a.mib)
        print(f"segments: small {os.path.getsize(segs['small']) >> 20} MiB (1-record batches), "
              f"big {os.path.getsize(segs['big']) >> 20} MiB (100-record batches); load {os.getloadavg()[0]:.2f}")
        print(f"{'workload':<12} {'base CPU s':>10} {'new CPU s':>10} {'new/base':>9}")
        for name in a.only:
            no_accel, seg, code = WORKLOADS[name]
            code = DUMP if code == "DUMP" else code
            b, n = ab_min(base, new, a.repeat, partial(cpu_of, no_accel=no_accel, code=code, path=segs[seg]))
            print(f"{name:<12} {b:>10.3f} {n:>10.3f} {n / b:>9.3f}")
        print(f"load after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
