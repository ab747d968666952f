"""``dump --remote-log-metadata-decoder`` against Kafka's own DumpLogSegments at every version (issue 26, item 5).

Generated ``__remote_log_metadata`` partitions (tests/oracle_remote.py: every record type RemoteLogMetadataSerde reads,
values that reach every constructor check and ``toString`` branch, frames changed after encoding), written by Kafka's
UnifiedLog (kafka-real's ``Write``: codecs, batches, rolls), dumped by the tool and by ``kafkalog dump
--kafka-version V --remote-log-metadata-decoder``; stdout byte for byte, stderr too (tests/dump_oracle.py's rule):

- 4.0: kafka-real's ``Dump`` (1eb7644) in the shared Batch JVM, one call per segment and option set;
- 3.9: the 3.9.0-rc3 tool (kafka-real/versions; the option is KIP-1057, new in 3.9), one JVM per option set over
  every segment of a partition at once;
- 3.6, 3.0, 2.8: those tools do not have the option; jopt-simple stops with ``UnrecognizedOptionException`` and
  prints nothing on stdout. kafkalog prints nothing on stdout either and refuses the option with a located usage
  error (exit 2; ``versions.Profile.missing_decoders``).

Marker ``oracle``; the long campaign (``-m oracle_long``, ``KAFKALOG_ORACLE_LONG_SEEDS``) runs 200 seeds per version.
"""

from __future__ import annotations

import os
from pathlib import Path

import dump_oracle as do
import oracle_remote as orm
import pytest
from kafka_real import write_partition
from oracle_plans import seeds

pytestmark = pytest.mark.oracle

LONG = int(os.environ.get("KAFKALOG_ORACLE_LONG_SEEDS", "200"))
FLAG = "--remote-log-metadata-decoder"
OPTION_SETS = ([], ["--skip-record-metadata"], ["--deep-iteration", "--print-data-log"])
#: what the generated partitions must make the decoder print at least once (else the generator lost a branch)
SHAPES = ("RemoteLogSegmentMetadata{", "RemoteLogSegmentMetadataUpdate{", "RemotePartitionDeleteMetadata{",
          "RemoteLogSegmentMetadataSnapshot{", "customMetadata=Optional[CustomMetadata{", "customMetadata=Optional.empty",
          "Unknown metadata id", "Failed to deserialize record with type", "byte(s) of garbage after",
          "frame version 0", "unknown frame version", "segmentLeaderEpochs can not be null or empty",
          "StartOffset for a remote segment cannot be negative", "cannot be less than startOffset",
          "state can not be null", "Error while reading frame version", "Record.value()\" is null")


def _partition(kafka_real, tmp_path: Path, seed: int) -> Path:
    recs = orm.records(seed)
    return write_partition(kafka_real, tmp_path / f"r{seed}", orm.plan(recs, seed))


def _run(kafka_real, kafka_dump_tool, tmp_path: Path, chosen: list[int], version: str) -> tuple[int, str]:
    problems, n, printed = [], 0, []
    for seed in chosen:
        part = _partition(kafka_real, tmp_path, seed)
        logs = [str(f) for f in sorted(part.glob("*.log"))]
        # 4.0: one segment a call in the warm Batch JVM; a release's tool: every segment at once (a JVM a call)
        calls = [[f] for f in logs] if version == "4.0" else [logs]
        for files in calls:
            for opts in OPTION_SETS:
                args = ["--files", ",".join(files), FLAG, *opts]
                ours = do.kafkalog(args, version, accel=seed % 3 != 2)
                k = do.kafka(kafka_real, args, version, kafka_dump_tool)
                d = do.judge(k, ours, files)
                n += 1
                printed.append(ours.stdout.decode(errors="replace"))
                if d:
                    problems.append(f"[{version} seed {seed}] {' '.join(opts)} {len(files)} file(s)\n{d}")
    assert not problems, f"{len(problems)} disagreement(s):\n\n" + "\n\n".join(problems[:6])
    return n, "".join(printed)


@pytest.mark.parametrize("version", ["4.0", "3.9"])
def test_remote_log_metadata_decoder_as_each_release_that_has_it(kafka_real, kafka_dump_tool, tmp_path, version):
    """Every record type, valid and invalid values, changed frames: 4.0's and 3.9's tools and kafkalog print the
    same bytes; the sample reaches every output shape the decoder has (SHAPES)."""
    if version != "4.0":
        kafka_dump_tool(version)
    n, text = _run(kafka_real, kafka_dump_tool, tmp_path, seeds(24 if version == "4.0" else 16, base=80_000), version)
    assert n >= 48
    missing = [s for s in SHAPES if s not in text]
    assert not missing, f"the generated sample never printed {missing}"


@pytest.mark.parametrize("version", ["3.6", "3.0", "2.8"])
def test_remote_log_metadata_decoder_refused_where_the_release_lacks_it(kafka_real, kafka_dump_tool, tmp_path, version):
    """3.6.2, 3.0.2 and 2.8.2 stop with jopt-simple's UnrecognizedOptionException (empty stdout, stack trace, exit 1);
    kafkalog prints nothing on stdout and refuses with a located usage error, exit 2."""
    kafka_dump_tool(version)
    part = _partition(kafka_real, tmp_path, 80_500)
    args = ["--files", ",".join(str(f) for f in sorted(part.glob("*.log"))), FLAG]
    k = do.kafka(kafka_real, args, version, kafka_dump_tool)
    assert k.threw and b"UnrecognizedOptionException" in k.stderr and k.stdout == b"", k.stderr[:400]
    ours = do.kafkalog(args, version)
    assert do.judge(k, ours, args[1].split(",")) is None
    assert ours.rc == 2 and b"not an option of Kafka" in ours.stderr and b"use --kafka-version 3.9" in ours.stderr


@pytest.mark.oracle_long
@pytest.mark.parametrize("version", ["4.0", "3.9"])
def test_remote_log_metadata_decoder_long(kafka_real, kafka_dump_tool, tmp_path, version):
    if version != "4.0":
        kafka_dump_tool(version)
    assert _run(kafka_real, kafka_dump_tool, tmp_path, seeds(LONG, base=180_000), version)[0] > 0
