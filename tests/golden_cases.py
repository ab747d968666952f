"""The golden-output contract: every case is one ``kafkalog`` invocation run in ``fixtures/``; its exact stdout,
stderr and exit code are stored in ``fixtures/golden/<name>.txt``. Regenerate with ``scripts/update_goldens.py``
and review the diff; a golden file changes only with a reason in the commit message.
"""

from __future__ import annotations

ALL_VERSIONS = ["2.0", "2.1", "2.2", "2.3", "2.4", "2.8", "3.0", "3.2", "3.3", "3.5", "3.8", "4.0", "4.1", "4.3"]
SPEC = "spec34/t-0/00000000000000000000.log"
LEGACY = "legacy/l-0/00000000000000000002.log"
KRAFT = "kraft/__cluster_metadata-0/00000000000000000000.log"
KSNAP = "kraft/__cluster_metadata-0/00000000000000000004-0000000001.checkpoint"
CODECS = "codecs/c-0/00000000000000000100.log"
SEED = "seed231/demo-0/00000000000000000000.log"


def _cases() -> dict[str, list[str]]:
    c: dict[str, list[str]] = {}
    for v in ALL_VERSIONS:
        tag = v.replace(".", "")
        c[f"spec34-shallow-{tag}"] = ["dump", "--kafka-version", v, SPEC]
        c[f"spec34-data-{tag}"] = ["dump", "--kafka-version", v, "--print-data-log", SPEC]
        c[f"legacy-data-{tag}"] = ["dump", "--kafka-version", v, "--print-data-log", LEGACY]
        c[f"kraft-deep-{tag}"] = ["dump", "--kafka-version", v, "--deep-iteration", KRAFT, KSNAP]
    for v in ("2.3", "2.8", "3.0", "3.6", "4.3"):
        tag = v.replace(".", "")
        c[f"seed-data-{tag}"] = ["dump", "--kafka-version", v, "--deep-iteration", "--print-data-log", SEED]
        c[f"codecs-data-{tag}"] = ["dump", "--kafka-version", v, "--print-data-log", CODECS]
        c[f"partition-dir-{tag}"] = ["dump", "--kafka-version", v, "partition/orders-0"]
    c["codecs-shallow-20"] = ["dump", "--kafka-version", "2.0", CODECS]
    c["spec34-skipmeta-data-36"] = ["dump", "--kafka-version", "3.6", "--print-data-log", "--skip-record-metadata", SPEC]
    c["spec34-skipmeta-data-43"] = ["dump", "--kafka-version", "4.3", "--print-data-log", "--skip-record-metadata", SPEC]
    c["spec34-skipmeta-deep-36"] = ["dump", "--kafka-version", "3.6", "--deep-iteration", "--skip-record-metadata", SPEC]
    c["spec34-maxbytes-36"] = ["dump", "--kafka-version", "3.6", "--max-bytes", "100", SPEC]
    c["spec34-maxbytes-32"] = ["dump", "--kafka-version", "3.2", "--max-bytes", "100", SPEC]
    c["spec34-files-option"] = ["dump", "--files", SPEC + "," + SEED, "--kafka-version", "3.6"]
    c["spec34-json"] = ["dump", "--format", "json", "--print-data-log", SPEC]
    c["legacy-json"] = ["dump", "--format", "json", "--deep-iteration", LEGACY]
    c["codecs-integer-decoder"] = ["dump", "--kafka-version", "3.6", "--key-decoder-class",
                                   "org.apache.kafka.tools.api.IntegerDecoder", SPEC.replace("spec34", "spec34")]
    c["seed-deprecated-decoder-38"] = ["dump", "--kafka-version", "3.8", "--value-decoder-class",
                                       "kafka.serializer.StringDecoder", SEED]
    c["partition-deep-gaps-java"] = ["dump", "--deep-iteration", "--gap-tracker", "java", "partition/orders-0"]
    c["partition-index-verify-only"] = ["dump", "--verify-index-only", "partition/orders-0/00000000000000000040.index",
                                        "partition/orders-0/00000000000000000040.timeindex"]
    c["partition-index-sanity"] = ["dump", "--index-sanity-check", "partition/orders-0/00000000000000000000.index",
                                   "partition/orders-0/00000000000000000040.timeindex"]
    c["partition-json"] = ["dump", "--format", "json", "partition/orders-0"]
    for v in ("2.8", "3.3", "3.6", "4.0", "4.3"):
        c[f"snapshot-{v.replace('.', '')}"] = ["dump", "--kafka-version", v, "partition/orders-0/00000000000000000060.snapshot",
                                               "corrupt/bad-0/00000000000000000003.snapshot"]
    c["corrupt-dir-36"] = ["dump", "--kafka-version", "3.6", "--deep-iteration", "corrupt/bad-0"]
    c["corrupt-json"] = ["dump", "--format", "json", "corrupt/bad-0"]
    c["missing-file"] = ["dump", "no/such/00000000000000000000.log", SEED]
    c["unknown-files"] = ["dump", "--kafka-version", "3.2", KSNAP, "partition/orders-0/partition.metadata.bak"]
    return c


CASES = _cases()
