"""One scan, from the expanded segment list to the published datasets and the report's aggregates: what
``kafkalog scan`` runs once the CLI has parsed its options and listed the input (``cli/scan.py`` only parses,
dispatches and renders).

Steps: apply the scan's ``ScanSettings`` in this process (each engine hands them on to its workers); give each
local worker its share of ``--max-read-rate`` (a Spark Python worker gets the whole rate); write into a private
staging directory of the output (a temporary directory for an ``s3://`` output or none given); run the engine;
publish the staged files into the shared datasets (``fleet.publish``), then upload them to the bucket. Returns
data; a refused output raises ``ScanRefused`` (the CLI prints it and exits 2).
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kafkalog_cli.scan.settings import ScanSettings, applied

if TYPE_CHECKING:
    from kafkalog_cli.scan.listing import Listing


class ScanRefused(Exception):
    """The output cannot be written (or a Spark executor's environment is broken): a one-line message and a hint."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


@dataclass
class ScanResult:
    summary: dict
    seconds: float


def run_scan(segments: list[str], listing: Listing, settings: ScanSettings, *, engine: str, records: bool,
             jobs: int, out_dir: str | None, remote_out: str | None, master: str | None = None,
             spark_conf: dict[str, str] | None = None) -> ScanResult:
    """Scan ``segments`` with ``engine`` ("local" or "spark") into ``out_dir`` (a local directory; None: a
    temporary one) or ``remote_out`` (an ``s3://`` prefix, ``out_dir`` then equal to it)."""
    from kafkalog_cli.scan import fleet, output, uri, verify_pass

    engine_settings = settings
    if settings.max_read_rate and engine != "spark":  # each local worker process gets its share
        share = max(1, settings.max_read_rate // min(jobs, max(1, len(segments))))
        engine_settings = dataclasses.replace(settings, max_read_rate=share)
    tmp = None
    if out_dir is None or remote_out is not None:
        tmp = tempfile.TemporaryDirectory(prefix="kafkalog-scan-")
        target = tmp.name
    else:
        target = out_dir
    try:
        with applied(engine_settings):
            try:
                output.prepare(target, records, replace=False)
            except (ValueError, OSError) as exc:
                raise ScanRefused(str(exc)) from None
            # this scan's files go to a private staging directory first; publish() moves them into the shared
            # datasets under unique names and replaces only this source's earlier files (fleet.py)
            scan_id = fleet.new_scan_id()
            staging = fleet.staging_dir(target, scan_id)
            names = ["batches", "problems"] + (["records"] if records else [])
            t0 = time.perf_counter()
            try:
                try:
                    summary = _run(engine, segments, staging, records, master, jobs, spark_conf or {}, listing,
                                   engine_settings)
                    source = fleet.source_key(segments)
                    fleet.publish(target, scan_id, source, names)
                except OSError as exc:  # the engine turns input errors into problem rows: this is the output side
                    if engine != "local":
                        raise
                    raise ScanRefused(f"{out_dir or target}: cannot write the scan datasets: {exc}",
                                      "free space on that file system, or give --out a directory on another one") \
                        from None
                if remote_out is not None:  # publish to the bucket: upload, then drop this source's older objects
                    try:
                        for name in names:
                            uri.upload_tree(os.path.join(target, name), f"{remote_out}/{name}")
                            uri.remove_matching(f"{remote_out}/{name}", f"part-{source}-",
                                                f"part-{source}-{scan_id}-")
                    except OSError as exc:
                        raise ScanRefused(f"{remote_out}: cannot write the datasets: {exc}",
                                          "check the bucket, the AWS_* credentials and --endpoint-url") from None
            finally:
                shutil.rmtree(staging, ignore_errors=True)
            seconds = time.perf_counter() - t0
    finally:
        verify_pass.discard_early()
        if tmp is not None:
            tmp.cleanup()
    return ScanResult(summary, seconds)


def _run(engine: str, segments: list[str], target: str, records: bool, master: str | None, jobs: int,
         spark_conf: dict[str, str], listing: Listing, settings: ScanSettings) -> dict:
    """Run one engine into ``target``, then the listing's problem rows (unlistable directories, leftovers); the
    report's aggregates."""
    if engine == "spark":
        from kafkalog_cli.scan.spark_conf import ExecutorEnvironmentError
        from kafkalog_cli.scan.spark_engine import run_spark
        from kafkalog_cli.scan.summary import summarize

        try:
            run_spark(segments, target, records=records, master=master, parallelism=jobs, conf=spark_conf,
                      settings=settings)
        except ExecutorEnvironmentError as exc:
            raise ScanRefused(str(exc)) from None
        listing.write(target)
        return summarize(target, segments)  # Spark SQL wrote the files; aggregate them, streaming
    from kafkalog_cli.scan.local_engine import run_local
    from kafkalog_cli.scan.summary import Summary

    acc = Summary(segments)  # aggregated from the chunks as they are written: no second read
    run_local(segments, target, records=records, jobs=jobs, summary=acc, settings=settings)
    acc.add("problems", listing.write(target))
    return acc.result()
