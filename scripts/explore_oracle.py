"""Explore kafkalog against Kafka's own code (kafka-real) over a seed range, with the generators of
tests/oracle_explore.py (cases shaped unlike tests/oracle_plans.py and tests/oracle_fuzz.py; issue 26).

Usage (from the worktree, one Batch JVM per process)::

    PYTHONPATH=. python scripts/explore_oracle.py compact 0 100 [--out results.jsonl]
    PYTHONPATH=. python scripts/explore_oracle.py truncate 0 100
    PYTHONPATH=. python scripts/explore_oracle.py seek 0 100
    PYTHONPATH=. python scripts/explore_oracle.py salvage 0 100

Each seed prints one line: seed, outcome (ok / skip / FAIL) and the start of a failure; the last line counts them
(``cases``: compact rounds compared per seed count 1, truncate counts targets, seek counts lookups).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import pytest  # noqa: E402
from oracle_explore import REFUSED, run_compact, run_salvage, run_seek, run_truncate  # noqa: E402


def main() -> int:
    from kafka_real import Oracle, launcher

    ap = argparse.ArgumentParser()
    ap.add_argument("command", choices=["compact", "truncate", "seek", "salvage"])
    ap.add_argument("start", type=int)
    ap.add_argument("stop", type=int)
    ap.add_argument("--out")
    a = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix=f"explore-{a.command}-"))
    oracle = Oracle(launcher(), work)
    out = open(a.out, "a") if a.out else None
    counts = {"ok": 0, "skip": 0, "FAIL": 0, "cases": 0}
    try:
        for seed in range(a.start, a.stop):
            tmp = work / f"s{seed}"
            tmp.mkdir()
            t = time.time()
            msg = ""
            try:
                if a.command == "compact":
                    run_compact(oracle, tmp, seed)
                    counts["cases"] += 1
                elif a.command == "salvage":
                    if run_salvage(oracle, tmp, seed) == "refused":
                        REFUSED.append((seed, "salvage", 0))
                    counts["cases"] += 1
                elif a.command == "seek":
                    counts["cases"] += run_seek(oracle, tmp, seed)
                else:
                    counts["cases"] += run_truncate(oracle, tmp, seed)
                status = "ok"
            except pytest.skip.Exception as exc:
                status, msg = "skip", str(exc)[:200]
            except Exception as exc:  # noqa: BLE001 - an exploration records every failure
                status = "FAIL"
                msg = "".join(traceback.format_exception_only(type(exc), exc))[:3000]
            counts[status] += 1
            line = {"command": a.command, "seed": seed, "status": status, "s": round(time.time() - t, 1), "msg": msg}
            print(json.dumps(line)[:600], flush=True)
            if out:
                out.write(json.dumps(line) + "\n")
                out.flush()
            if status == "ok":
                import shutil

                shutil.rmtree(tmp, ignore_errors=True)
    finally:
        oracle.close()
        print(json.dumps(dict(counts, refused_by_design=len(REFUSED))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
