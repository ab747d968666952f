"""Benchmark (not a test): ``kafkalog scan`` throughput, Spark local[1] vs local[2], and the local engine vs Spark.

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
from kafkalog_cli.scan import output
from kafkalog_cli.scan.local_engine import run_local
from kafkalog_cli.scan.paths import expand


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


if __name__ == "__main__":
    main()
