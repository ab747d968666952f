"""Benchmark (not a test): ``kafkalog scan`` throughput, Spark local[1] vs local[2], and the local engine vs Spark.

Issue 14 (streaming rows, flat memory), each measurement a fresh ``kafkalog`` process, wall time and ru_maxrss:

    python bench/scan_bench.py segment --mib 64,1024            # ~100-byte batches: scan vs verify-crc, peak RSS
    python bench/scan_bench.py segment --mib 1024 --repeat 5    # the same five times in turn, and the median ratio
    python bench/scan_bench.py segment --mib 64,1024 --records  # the same with the records dataset
    python bench/scan_bench.py fleet --partitions 50000         # local vs Spark local[2], RSS, row groups, duckdb
    python bench/scan_bench.py fleet --partitions 50000 --records

Issue 9 (throughput of both engines):

    python bench/scan_bench.py                       # 8 segments x 24 MiB, batches only
    python bench/scan_bench.py --records             # also decode every record (the heavier workload)
    python bench/scan_bench.py --segments 16 --mib 32 --repeat 3

Generates one segment of small lz4/none v2 batches (1 KiB-ish, 8 records each: a realistic producer with
linger.ms=0), copies it into N partition directories, then times each engine on the same input after a warm-up
run (session start-up is reported apart: it is a fixed cost, not throughput). Figures are wall-clock medians of
``--repeat`` runs; the machine is shared, so read them as ratios measured in one run.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from kafkalog_cli.format import codecs
from kafkalog_cli.format.encoder import RecordSpec, encode_batch
from kafkalog_cli.scan.paths import expand

# kafkalog_cli.scan.output and .local_engine load pyarrow: imported where used, so that the ``_measure`` child runs
# the CLI as the console script does, with pyarrow not yet loaded (scan/memory_pool.py chooses the allocator then)


def make_input(root: Path, segments: int, mib: int) -> list[str]:
    part0 = root / "logs" / "bench-0"
    part0.mkdir(parents=True)
    seg = part0 / "00000000000000000000.log"
    target = mib << 20
    with open(seg, "wb") as f:
        offset, written, i = 0, 0, 0
        while written < target:
            recs = [RecordSpec(key=f"k{offset + j}".encode(), value=os.urandom(40).hex().encode() * 1,
                               timestamp=1_700_000_000_000 + offset + j) for j in range(8)]
            b = encode_batch(recs, base_offset=offset, codec=codecs.LZ4 if i % 2 else codecs.NONE,
                             producer_id=9, producer_epoch=0, base_sequence=offset, partition_leader_epoch=1)
            f.write(b)
            written += len(b)
            offset += 8
            i += 1
    for n in range(1, segments):
        d = root / "logs" / f"bench-{n}"
        d.mkdir()
        shutil.copyfile(seg, d / seg.name)
    segs, _ = expand([str(root / "logs")])
    return segs


def timed(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--segments", type=int, default=8)
    ap.add_argument("--mib", type=int, default=24, help="size of each segment")
    ap.add_argument("--records", action="store_true")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--no-spark", action="store_true")
    ap.add_argument("--no-local", action="store_true")
    ap.add_argument("--spark-cores", default="1,2", help="order of the Spark runs, e.g. 2,1")
    ap.add_argument("--same-jvm", action="store_true",
                    help="run the Spark configurations in this process (default: a fresh process and JVM for each)")
    ap.add_argument("--input", help=argparse.SUPPRESS)  # child mode: reuse this generated input
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="scan-bench-") as tmp:
        root = Path(tmp)
        t0 = time.perf_counter()
        from kafkalog_cli.scan import output
        from kafkalog_cli.scan.local_engine import run_local

        segs = expand([args.input])[0] if args.input else make_input(root, args.segments, args.mib)
        total = sum(os.path.getsize(s) for s in segs)
        print(f"input: {len(segs)} segments, {total / 2**20:.0f} MiB, generated in {time.perf_counter() - t0:.1f} s;"
              f" records={'yes' if args.records else 'no'}; python {sys.version.split()[0]}, {os.cpu_count()} CPUs")
        results: dict[str, float] = {}

        def local(jobs: int) -> None:
            out = str(root / f"out-local-{jobs}")
            output.prepare(out, args.records)
            run_local(segs, out, records=args.records, jobs=jobs)

        for jobs in () if args.no_local else (1, 2):
            local(jobs)  # warm the page cache
            results[f"local jobs={jobs}"] = timed(lambda jobs=jobs: local(jobs), args.repeat)
            print(f"  local engine, --jobs {jobs}: {results[f'local jobs={jobs}']:.2f} s "
                  f"({total / 2**20 / results[f'local jobs={jobs}']:.0f} MiB/s)", flush=True)

        if not args.no_spark:
            from kafkalog_cli.scan.spark_engine import get_session, missing_requirements, run_spark

            missing = missing_requirements()
            if missing:
                sys.exit(f"cannot run the Spark part: {missing}")
            for cores in (int(c) for c in args.spark_cores.split(",")):
                if not args.same_jvm and not args.input:
                    import subprocess

                    child = subprocess.run(
                        [sys.executable, __file__, "--no-local", "--spark-cores", str(cores), "--input",
                         str(root / "logs"), "--repeat", str(args.repeat)] + (["--records"] if args.records else []),
                        capture_output=True, text=True, check=True)
                    line = next(ln for ln in child.stdout.splitlines() if ln.startswith("RESULT "))
                    results[f"spark local[{cores}]"] = float(line.split()[1])
                    print(f"  spark local[{cores}] (fresh JVM): {results[f'spark local[{cores}]']:.2f} s "
                          f"({total / 2**20 / results[f'spark local[{cores}]']:.0f} MiB/s); {line.split(' ', 2)[2]}",
                          flush=True)
                    continue
                t0 = time.perf_counter()
                spark = get_session(f"local[{cores}]")
                start = time.perf_counter() - t0
                assert spark.sparkContext.master == f"local[{cores}]", spark.sparkContext.master
                out = str(root / f"out-spark-{cores}")

                def run(spark=spark, out=out) -> None:
                    run_spark(segs, out, records=args.records, spark=spark)

                run()  # warm-up: JIT, Python worker daemon
                key = f"spark local[{cores}]"
                results[key] = timed(run, args.repeat)
                spark.stop()
                print(f"  spark local[{cores}]: {results[key]:.2f} s ({total / 2**20 / results[key]:.0f} MiB/s); "
                      f"session start {start:.1f} s", flush=True)
                if args.input:
                    print(f"RESULT {results[key]} session start {start:.1f} s", flush=True)
                    return
            ratio = results["spark local[1]"] / results["spark local[2]"]
            print(f"spark local[2] vs local[1] speed-up: {ratio:.2f}x (target >= 1.6)")
            if "local jobs=2" in results:
                print(f"local engine --jobs 2 vs spark local[2]: "
                      f"{results['spark local[2]'] / results['local jobs=2']:.2f}x faster")
        print(f"load average after the run: {os.getloadavg()[0]:.1f} (2 = both cores busy with someone's work)")
        if "local jobs=2" in results:
            print(f"local engine --jobs 2 vs --jobs 1 speed-up: {results['local jobs=1'] / results['local jobs=2']:.2f}x")


# ------------------------------------------------------------------------------------------------------ issue 14
SMALL_BATCH = None


# set by --batch-bytes, --per-batch, --codec (the _make child inherits them)
BATCH_BYTES = int(os.environ.get("SCAN_BENCH_BATCH_BYTES", "100"))
PER_BATCH = int(os.environ.get("SCAN_BENCH_PER_BATCH", "1"))
CODEC = os.environ.get("SCAN_BENCH_CODEC", "none")


def small_batch() -> bytes:
    """One v2 batch of about BATCH_BYTES (1 record by default; 100 bytes by default; PER_BATCH records of
    BATCH_BYTES / PER_BATCH bytes otherwise, each with a header, compressed with CODEC). The CRC does not cover
    baseOffset, so copies with new offsets stay valid."""
    if PER_BATCH == 1 and CODEC == "none":
        return encode_batch([RecordSpec(key=b"key-0001", value=b"v" * max(24, BATCH_BYTES - 76),
                                        timestamp=1_700_000_000_000)], base_offset=0, producer_id=-1)
    value = max(8, BATCH_BYTES // PER_BATCH - 30)
    recs = [RecordSpec(key=f"key-{i:04d}".encode(), value=os.urandom(value // 2).hex().encode(),
                       headers=[("trace", b"t")], timestamp=1_700_000_000_000 + i) for i in range(PER_BATCH)]
    return encode_batch(recs, base_offset=0, producer_id=-1, codec={"none": codecs.NONE, "lz4": codecs.LZ4,
                                                                    "zstd": codecs.ZSTD, "gzip": codecs.GZIP}[CODEC])


def make_small_batch_segment(path: Path, mib: int) -> int:
    """A segment of ``mib`` MiB of ~100-byte batches with consecutive offsets; returns the batch count."""
    import struct

    tpl = small_batch()
    size = len(tpl)
    per_chunk = (64 << 20) // size
    target = (mib << 20) // size
    count = 0
    with open(path, "wb") as f:
        while count < target:
            n = min(per_chunk, target - count)
            buf = bytearray(tpl * n)
            pack = struct.Struct(">q").pack_into
            for i in range(n):
                pack(buf, i * size, (count + i) * PER_BATCH)
            f.write(buf)
            count += n
    return count


def warm(path: Path) -> None:
    """Read the file through, so that the command measured next finds every page in the page cache. Needed before
    each measurement, not once: this machine's page cache gives back about a tenth of a 1 GiB file within 20 s
    with 21 GB of memory free (``fincore``, session 4), and a command that meets evicted pages reads the disk."""
    with open(path, "rb", buffering=0) as f:
        buf = bytearray(1 << 20)
        while f.readinto(buf):
            pass


def measure(argv: list[str], cwd: str | None = None, baseline: str | None = None) -> dict:
    """Run ``kafkalog ARGV`` in a fresh process; wall seconds, exit code, ru_maxrss (MiB) of the process itself and
    the largest of its children (the worker processes; Spark's JVM is a child too)."""
    import json
    import subprocess

    fd, rfile = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    t0 = time.perf_counter()
    env = None
    if baseline:  # another checkout of kafkalog (built in place) first on the path: the same command, before/after
        env = {**os.environ, "PYTHONPATH": baseline + os.pathsep + os.environ.get("PYTHONPATH", "")}
    res = subprocess.run([sys.executable, __file__, "_measure", rfile, *argv], capture_output=True, text=True, cwd=cwd,
                         env=env)
    wall = time.perf_counter() - t0
    with open(rfile) as f:
        usage = json.load(f)
    os.unlink(rfile)
    usage.update(wall=wall, rc=res.returncode, stdout=res.stdout, stderr=res.stderr)
    return usage


def _measure_child(rfile: str, argv: list[str]) -> None:
    import json
    import resource

    from kafkalog_cli.cli.main import main as cli

    sys.argv = ["kafkalog", *argv]
    rc = 0
    try:
        cli()
    except SystemExit as e:
        rc = e.code if isinstance(e.code, int) else 1
    finally:
        hwm = 0.0
        with open("/proc/self/status") as f:  # peak RSS of this process image (ru_maxrss also counts the forking parent)
            for line in f:
                if line.startswith("VmHWM:"):
                    hwm = int(line.split()[1]) / 1024
        ru_self = resource.getrusage(resource.RUSAGE_SELF)
        ru_kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        me, kids = ru_self.ru_maxrss / 1024, ru_kids.ru_maxrss / 1024
        cpu = ru_self.ru_utime + ru_self.ru_stime + ru_kids.ru_utime + ru_kids.ru_stime
        with open(rfile, "w") as f:
            json.dump({"self_mib": me, "hwm_mib": hwm, "children_mib": kids, "tree_mib": max(me, kids), "cpu": cpu}, f)
    sys.exit(rc)


def row_groups(directory: Path) -> tuple[int, int, int, int]:
    """(files, row groups, rows, smallest row group) of a Parquet dataset directory."""
    import pyarrow.parquet as pq

    files = sorted(directory.rglob("*.parquet"))  # below broker_id=<id>/topic=<topic>/ (schema version 3)
    sizes = []
    for f in files:
        md = pq.read_metadata(f)
        sizes += [md.row_group(i).num_rows for i in range(md.num_row_groups)]
    return len(files), len(sizes), sum(sizes), min(sizes) if sizes else 0


def duckdb_count(directory: Path, repeat: int = 3) -> str:
    try:
        import duckdb
    except ImportError:
        return "duckdb not installed (pip install duckdb)"
    times = []
    for _ in range(repeat):
        con = duckdb.connect()
        t0 = time.perf_counter()
        n = con.execute(f"select count(*) from read_parquet('{directory}/**/*.parquet')").fetchall()[0][0]
        times.append(time.perf_counter() - t0)
        con.close()
    return f"count(*) = {n} in {statistics.median(times) * 1000:.0f} ms (median of {repeat}, duckdb {duckdb.__version__})"


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f}"


def bench_segment(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="scan-bench14-") as tmp:
        for mib in (int(m) for m in args.mib.split(",")):
            part = Path(tmp) / f"seg{mib}" / "small-0"
            part.mkdir(parents=True)
            seg = part / "00000000000000000000.log"
            t0 = time.perf_counter()
            # in a child process: this one stays small, since a child's ru_maxrss starts at its forking parent's
            import subprocess

            n = int(subprocess.run([sys.executable, __file__, "_make", str(seg), str(mib)], check=True,
                                   capture_output=True, text=True).stdout)
            print(f"== {mib} MiB segment, {n:,} batches of {len(small_batch())} bytes ({PER_BATCH} records, {CODEC}) "
                  f"(generated in {time.perf_counter() - t0:.1f} s); {_load()}", flush=True)
            measure(["verify-crc", str(seg)])  # page cache warm-up
            out = Path(tmp) / f"out{mib}"
            cmd = ["scan", str(part), "--out", str(out), "--jobs", "2", "--format", "json"]
            if args.records:
                cmd.append("--records")
            ratios, cpu_ratios, speedups = [], [], []
            for rep in range(args.repeat):  # verify and scan in turn: each ratio is taken under the same conditions
                if rep:
                    shutil.rmtree(out)
                warm(seg)
                v = measure(["verify-crc", str(seg)])
                print(f"  kafkalog verify-crc {seg.name}: {v['wall']:.2f} s wall, {v['cpu']:.2f} s CPU, rc {v['rc']}, "
                      f"ru_maxrss {v['self_mib']:.0f} MiB (VmHWM {v['hwm_mib']:.0f} MiB)", flush=True)
                warm(seg)
                s = measure(cmd)
                assert s["rc"] == 0, (s["rc"], s["stderr"][-2000:], s["stdout"][-2000:])
                print(f"  kafkalog {' '.join(cmd[:1] + ['<dir>'] + cmd[2:3] + ['<out>'] + cmd[4:])}: {s['wall']:.2f} s "
                      f"wall, {s['cpu']:.2f} s CPU, ru_maxrss {s['self_mib']:.0f} MiB (VmHWM {s['hwm_mib']:.0f} MiB, "
                      f"largest child {s['children_mib']:.0f} MiB)", flush=True)
                ratios.append(v["wall"] / s["wall"])
                cpu_ratios.append(v["cpu"] / s["cpu"])
                print(f"  scan throughput / verify-crc throughput = {ratios[-1]:.3f} by wall time, "
                      f"{cpu_ratios[-1]:.3f} by CPU time (target >= 0.25); {n / s['wall'] / 1e6:.2f} M batches/s",
                      flush=True)
                if args.baseline:  # the same command from another tree, in the same round
                    shutil.rmtree(out)
                    warm(seg)
                    b = measure(cmd, baseline=args.baseline)
                    assert b["rc"] == 0, b["stderr"][-2000:]
                    speedups.append(b["wall"] / s["wall"])
                    print(f"  baseline ({args.baseline}), same command: {b['wall']:.2f} s wall, {b['cpu']:.2f} s CPU, "
                          f"ru_maxrss {b['self_mib']:.0f} MiB; this tree is {b['wall'] / s['wall']:.2f}x faster by "
                          f"wall, {b['cpu'] / s['cpu']:.2f}x by CPU", flush=True)
            if args.repeat > 1:
                print(f"  median of {args.repeat}: {statistics.median(ratios):.3f} by wall (min {min(ratios):.3f}, "
                      f"max {max(ratios):.3f}), {statistics.median(cpu_ratios):.3f} by CPU"
                      + (f"; this tree {statistics.median(speedups):.2f}x the baseline's speed by wall"
                         if speedups else ""), flush=True)
            for name in ("batches", "records") if args.records else ("batches",):
                files, groups, rows, smallest = row_groups(out / name)
                print(f"  {name}: {rows:,} rows, {files} file(s), {groups} row groups, smallest {smallest:,}; "
                      f"{rows / s['wall'] / 1e6:.2f} M rows/s by wall, {rows / s['cpu'] / 1e6:.2f} M rows/s by CPU")
            print(f"  after: {_load()}", flush=True)
            shutil.rmtree(out)
            shutil.rmtree(part.parent)


def make_fleet(root: Path, partitions: int) -> None:
    tpl = small_batch()
    for i in range(partitions):
        d = root / f"t{i // 1000}-{i % 1000}"
        d.mkdir(parents=True)
        (d / "00000000000000000000.log").write_bytes(tpl)


def bench_fleet(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="scan-bench14-") as tmp:
        logs = Path(tmp) / "logs"
        t0 = time.perf_counter()
        make_fleet(logs, args.partitions)  # small objects only: this process stays small
        print(f"== {args.partitions:,} one-segment partitions, one {len(small_batch())}-byte batch each (generated in "
              f"{time.perf_counter() - t0:.1f} s); records={'yes' if args.records else 'no'}; {_load()}", flush=True)
        extra = ["--records"] if args.records else []
        for engine in ("local", "spark"):
            out = Path(tmp) / f"out-{engine}"
            s = measure(["scan", str(logs), "--out", str(out), "--engine", engine, "--jobs", "2", "--format", "json",
                         *extra])
            assert s["rc"] == 0, s["stderr"][-2000:]
            print(f"  {engine}: {s['wall']:.1f} s wall (CLI end to end), {s['cpu']:.1f} s CPU (local: with its workers; "
                  f"Spark: the driver only), parent ru_maxrss {s['self_mib']:.0f} MiB (VmHWM {s['hwm_mib']:.0f} MiB), "
                  f"largest child {s['children_mib']:.0f} MiB; {_load()}", flush=True)
            for name in ("batches", "records") if args.records else ("batches",):
                files, groups, rows, smallest = row_groups(out / name)
                print(f"    {name}: {rows:,} rows in {files} file(s), {groups} row groups (smallest {smallest:,}); "
                      f"duckdb {duckdb_count(out / name)}", flush=True)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "_measure":
        _measure_child(sys.argv[2], sys.argv[3:])
    elif len(sys.argv) > 1 and sys.argv[1] == "_make":
        print(make_small_batch_segment(Path(sys.argv[2]), int(sys.argv[3])))
    elif len(sys.argv) > 1 and sys.argv[1] in ("segment", "fleet"):
        ap14 = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
        ap14.add_argument("what", choices=["segment", "fleet"])
        ap14.add_argument("--mib", default="64,1024", help="segment sizes, comma-separated")
        ap14.add_argument("--partitions", type=int, default=50_000)
        ap14.add_argument("--records", action="store_true")
        ap14.add_argument("--repeat", type=int, default=1, help="segment mode: verify-crc and scan this many times "
                          "in turn (each ratio printed, then their median)")
        ap14.add_argument("--batch-bytes", type=int, default=100, help="size of each batch (segment mode)")
        ap14.add_argument("--per-batch", type=int, default=1, help="records per batch (segment mode)")
        ap14.add_argument("--codec", default="none", choices=["none", "lz4", "zstd", "gzip"], help="(segment mode)")
        ap14.add_argument("--baseline", help="segment mode: also run the scan from this source tree (PYTHONPATH; "
                          "its _accel built in place), e.g. a `git archive` of an earlier commit")
        a = ap14.parse_args()
        os.environ["SCAN_BENCH_BATCH_BYTES"] = str(a.batch_bytes)
        os.environ["SCAN_BENCH_PER_BATCH"] = str(a.per_batch)
        os.environ["SCAN_BENCH_CODEC"] = a.codec
        BATCH_BYTES, PER_BATCH, CODEC = a.batch_bytes, a.per_batch, a.codec
        bench_segment(a) if a.what == "segment" else bench_fleet(a)
    else:
        main()
