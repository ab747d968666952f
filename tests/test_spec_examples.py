"""Output that comes from outside this project, byte for byte: the spec's §3.4 example (Kafka 3.3-4.2), its 2.8
variant, the legacy examples, the G3/G4 (2.2-2.3) rendering from errata-dump C.3, and the real Kafka 2.3.1 output
quoted in the foundation issue. Only the path in the ``Dumping`` line is substituted (the spec used /data/t-0)."""

from __future__ import annotations

from golden import run_case

SPEC = "spec34/t-0/00000000000000000000.log"

SPEC_34 = """\
Dumping /data/t-0/00000000000000000000.log
Log starting offset: 0
baseOffset: 0 lastOffset: 1 count: 2 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 partitionLeaderEpoch: 0 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 1700000000005 size: 86 magic: 2 compresscodec: none crc: 1670528130 isvalid: true
| offset: 0 CreateTime: 1700000000000 keySize: 2 valueSize: 2 sequence: -1 headerKeys: [h1] key: k0 payload: v0
| offset: 1 CreateTime: 1700000000005 keySize: 2 valueSize: -1 sequence: -1 headerKeys: [] key: k1
baseOffset: 2 lastOffset: 2 count: 1 baseSequence: 0 lastSequence: 0 producerId: 1000 producerEpoch: 0 partitionLeaderEpoch: 0 isTransactional: true isControl: false deleteHorizonMs: OptionalLong.empty position: 86 CreateTime: 1700000000010 size: 77 magic: 2 compresscodec: none crc: 2732749172 isvalid: true
| offset: 2 CreateTime: 1700000000010 keySize: -1 valueSize: 9 sequence: 0 headerKeys: [] payload: txn-value
baseOffset: 3 lastOffset: 3 count: 1 baseSequence: -1 lastSequence: -1 producerId: 1000 producerEpoch: 0 partitionLeaderEpoch: 0 isTransactional: true isControl: true deleteHorizonMs: OptionalLong.empty position: 163 CreateTime: 1700000000011 size: 78 magic: 2 compresscodec: none crc: 2669019467 isvalid: true
| offset: 3 CreateTime: 1700000000011 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] endTxnMarker: COMMIT coordinatorEpoch: 5
Found 7 invalid bytes at the end of 00000000000000000000.log
"""

SPEC_28_FIRST_RECORD = (
    "| offset: 0 isValid: true crc: null keySize: 2 valueSize: 2 CreateTime: 1700000000000 baseOffset: 0 lastOffset: 1 "
    "baseSequence: -1 lastSequence: -1 producerEpoch: -1 partitionLeaderEpoch: 0 batchSize: 86 magic: 2 "
    "compressType: NONE position: 0 sequence: -1 headerKeys: [h1] key: k0 payload: v0"
)

ERRATA_C3_G34 = """\
Dumping /data/t-0/00000000000000000000.log
Starting offset: 0
baseOffset: 0 lastOffset: 1 count: 2 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 partitionLeaderEpoch: 0 isTransactional: false isControl: false position: 0 CreateTime: 1700000000005 size: 86 magic: 2 compresscodec: NONE crc: 1670528130 isvalid: true
| offset: 0 CreateTime: 1700000000000 keysize: 2 valuesize: 2 sequence: -1 headerKeys: [h1] key: k0 payload: v0
| offset: 1 CreateTime: 1700000000005 keysize: 2 valuesize: -1 sequence: -1 headerKeys: []
baseOffset: 2 lastOffset: 2 count: 1 baseSequence: 0 lastSequence: 0 producerId: 1000 producerEpoch: 0 partitionLeaderEpoch: 0 isTransactional: true isControl: false position: 86 CreateTime: 1700000000010 size: 77 magic: 2 compresscodec: NONE crc: 2732749172 isvalid: true
| offset: 2 CreateTime: 1700000000010 keysize: -1 valuesize: 9 sequence: 0 headerKeys: [] payload: txn-value
baseOffset: 3 lastOffset: 3 count: 1 baseSequence: -1 lastSequence: -1 producerId: 1000 producerEpoch: 0 partitionLeaderEpoch: 0 isTransactional: true isControl: true position: 163 CreateTime: 1700000000011 size: 78 magic: 2 compresscodec: NONE crc: 2669019467 isvalid: true
| offset: 3 CreateTime: 1700000000011 keysize: 4 valuesize: 6 sequence: -1 headerKeys: [] endTxnMarker: COMMIT coordinatorEpoch: 5
Found 7 invalid bytes at the end of 00000000000000000000.log
"""

SEED_231 = """\
Starting offset: 0
baseOffset: 0 lastOffset: 0 count: 1 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 partitionLeaderEpoch: 5 isTransactional: false isControl: false position: 0 CreateTime: 1599887411245 size: 84 magic: 2 compresscodec: NONE crc: 3888717251 isvalid: true
| offset: 0 CreateTime: 1599887411245 keysize: 7 valuesize: 9 sequence: -1 headerKeys: [] key: DemoKey payload: DemoValue
"""

LEGACY_3X = """\
offset: 2 position: 0 CreateTime: 1700000000002 size: 36 magic: 1 compresscodec: none crc: 1632253426 isvalid: true
| offset: 2 CreateTime: 1700000000002 keySize: 1 valueSize: 1 isValid: true crc: 1632253426} key: k payload: v
offset: 3 position: 36 NoTimestampType: -1 size: 28 magic: 0 compresscodec: none crc: 535615242 isvalid: true
| offset: 3 NoTimestampType: -1 keySize: 1 valueSize: 1 isValid: true crc: 535615242} key: k payload: v
"""


def stdout_of(args: list[str]) -> str:
    text = run_case(args)
    return text.split("--- stdout\n", 1)[1].split("--- stderr\n", 1)[0]


def test_spec_34_example_for_every_version_from_33_to_42() -> None:
    expected = SPEC_34.replace("/data/t-0/", "spec34/t-0/")
    for v in ("3.3", "3.5", "3.6", "3.7", "3.8", "3.9", "4.0", "4.1", "4.2"):
        assert stdout_of(["dump", "--kafka-version", v, "--deep-iteration", "--print-data-log", SPEC]) == expected, v


def test_spec_34_without_deep_iteration() -> None:
    lines = [ln for ln in SPEC_34.replace("/data/t-0/", "spec34/t-0/").splitlines(keepends=True) if not ln.startswith("|")]
    assert stdout_of(["dump", "--kafka-version", "3.6", SPEC]) == "".join(lines)


def test_spec_28_variant() -> None:
    out = stdout_of(["dump", "--kafka-version", "2.8", "--print-data-log", SPEC]).splitlines()
    assert out[1] == "Starting offset: 0"
    assert "deleteHorizonMs" not in out[2] and "compresscodec: NONE" in out[2]
    assert out[3] == SPEC_28_FIRST_RECORD


def test_errata_g3_g4_rendering() -> None:
    expected = ERRATA_C3_G34.replace("/data/t-0/", "spec34/t-0/")
    for v in ("2.2", "2.3"):
        assert stdout_of(["dump", "--kafka-version", v, "--print-data-log", SPEC]) == expected
    # G5/G6 (2.4.x-2.7.x) differ only in the tombstone line
    g5 = expected.replace("valuesize: -1 sequence: -1 headerKeys: []\n", "valuesize: -1 sequence: -1 headerKeys: [] key: k1\n")
    assert stdout_of(["dump", "--kafka-version", "2.4", "--print-data-log", SPEC]) == g5


def test_kafka_231_seed_output_byte_for_byte() -> None:
    out = stdout_of(["dump", "--kafka-version", "2.3", "--print-data-log", "seed231/demo-0/00000000000000000000.log"])
    assert out == "Dumping seed231/demo-0/00000000000000000000.log\n" + SEED_231


def test_legacy_examples_3x() -> None:
    out = stdout_of(["dump", "--kafka-version", "3.6", "--print-data-log", "legacy/l-0/00000000000000000002.log"])
    assert "".join(out.splitlines(keepends=True)[2:6]) == LEGACY_3X
    # the Java port (4.3) drops the stray brace
    out43 = stdout_of(["dump", "--kafka-version", "4.3", "--print-data-log", "legacy/l-0/00000000000000000002.log"])
    assert "".join(out43.splitlines(keepends=True)[2:6]) == LEGACY_3X.replace("}", "")
