"""Issue 28: one --kafka-version setting for every command (flag > $KAFKALOG_KAFKA_VERSION > default)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from shipping_helpers import make_partition

from kafkalog_cli.broker import loader
from kafkalog_cli.cli.main import cli
from kafkalog_cli.versions import DEFAULT_VERSION, ENV_VAR, KNOWN_VERSIONS, default_version


def test_one_default_everywhere() -> None:
    # dump/seek's profiles and recover/salvage's loader used to default to 4.3 and 3.9
    assert loader.DEFAULT_VERSION == DEFAULT_VERSION == KNOWN_VERSIONS[-1] == "4.4"
    for cmd in ("dump", "seek-offset", "recover", "salvage"):
        r = CliRunner().invoke(cli, [cmd, "--help"], terminal_width=400)
        assert r.exit_code == 0, r.output
        assert f"${ENV_VAR} when set, else {DEFAULT_VERSION}" in " ".join(r.output.split()), cmd


def test_default_version_reads_the_environment() -> None:
    assert default_version({}) == (DEFAULT_VERSION, "default")
    assert default_version({ENV_VAR: "  "}) == (DEFAULT_VERSION, "default")
    assert default_version({ENV_VAR: "3.6"}) == ("3.6", ENV_VAR)


def _dump(seg: str, *args: str, env: dict[str, str] | None = None):  # noqa: ANN202
    return CliRunner().invoke(cli, ["dump", *args, seg], env=env)


def test_env_sets_dump_version_and_flag_wins(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.delenv(ENV_VAR, raising=False)
    seg = str(make_partition(tmp_path) / ("0" * 20 + ".log"))
    r = _dump(seg)
    assert r.exit_code == 0 and r.stdout.startswith("Dumping") and "Log starting offset: 0" in r.stdout
    assert "note" not in r.stderr
    r = _dump(seg, env={ENV_VAR: "3.2"})  # before 3.3 the header was "Starting offset:"
    assert r.exit_code == 0 and "\nStarting offset: 0" in r.stdout
    assert f"kafkalog: note: assuming Kafka 3.2 (from ${ENV_VAR})" in r.stderr
    r = _dump(seg, "--kafka-version", "4.4", env={ENV_VAR: "3.2"})
    assert r.exit_code == 0 and "Log starting offset: 0" in r.stdout and "note" not in r.stderr
    r = _dump(seg, env={ENV_VAR: "1.0"})
    assert r.exit_code == 2 and "unsupported Kafka version '1.0'" in r.stderr


@pytest.mark.parametrize("cmd", ["recover", "salvage"])
def test_env_sets_loader_version(tmp_path, monkeypatch, cmd) -> None:  # noqa: ANN001
    monkeypatch.delenv(ENV_VAR, raising=False)
    part = make_partition(tmp_path)
    r = CliRunner().invoke(cli, [cmd, "--format", "json", str(part)])
    assert r.exit_code in (0, 1), r.output
    assert '"kafka_version": "4.4"' in r.stdout.replace('": "', '": "')
    r = CliRunner().invoke(cli, [cmd, "--format", "json", str(part)], env={ENV_VAR: "3.6"})
    assert r.exit_code in (0, 1), r.output
    assert '"kafka_version": "3.6"' in r.stdout and "assuming Kafka 3.6" in r.stderr


def test_44_profile_is_43s_text_without_a_warning(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    """docs/kafka-versions.md: the stored Java DumpLogSegments (c929596, 04b0517) print every line alike, so 4.4 adds no
    row; it is known (no "newer than" warning), 4.5 is not."""
    from kafkalog_cli.versions import newer_than_known, profile_for

    monkeypatch.delenv(ENV_VAR, raising=False)
    assert profile_for("4.4").values == profile_for("4.3").values
    assert newer_than_known("4.4") is None and newer_than_known("4.4.1") is None
    assert "newer than the newest release kafkalog knows (4.4)" in (newer_than_known("4.5") or "")
    seg = str(make_partition(tmp_path) / ("0" * 20 + ".log"))
    a, b = _dump(seg, "--deep-iteration", "--kafka-version", "4.4"), _dump(seg, "--deep-iteration", "--kafka-version", "4.3")
    assert a.exit_code == b.exit_code == 0 and a.stdout == b.stdout and a.stderr == b.stderr == ""


def _metadata_log(log_dir, levels: list[int]) -> None:  # noqa: ANN001
    """__cluster_metadata-0 with one FeatureLevelRecord(metadata.version) per level, as a controller appends them."""
    from kafkalog_cli.format.encoder import RecordSpec, encode_batch
    from kafkalog_cli.internal_topics import cluster_metadata as cm
    from kafkalog_cli.internal_topics import schemas_metadata as smd

    d = log_dir / "__cluster_metadata-0"
    d.mkdir()
    data = b"".join(encode_batch([RecordSpec(key=None, value=cm.encode_frame(
        smd.FeatureLevelRecord, {"name": "metadata.version", "featureLevel": lv}, 0), timestamp=1)], base_offset=i)
        for i, lv in enumerate(levels))
    (d / ("0" * 20 + ".log")).write_bytes(data)


@pytest.mark.parametrize("cmd", ["recover", "salvage"])
def test_the_metadata_log_names_the_release(tmp_path, monkeypatch, cmd) -> None:  # noqa: ANN001
    """flag > $KAFKALOG_KAFKA_VERSION > the broker's files (metadata.version, last record wins) > default."""
    monkeypatch.delenv(ENV_VAR, raising=False)
    part = make_partition(tmp_path)
    _metadata_log(tmp_path, [19, 21])  # 3.7-IV4, then the upgrade to 3.9-IV0
    r = CliRunner().invoke(cli, [cmd, "--format", "json", str(part)])
    assert r.exit_code in (0, 1), r.output
    assert '"kafka_version": "3.9"' in r.stdout
    assert "assuming Kafka 3.9 (from the metadata.version feature level 21 in" in r.stderr
    r = CliRunner().invoke(cli, [cmd, "--format", "json", str(part)], env={ENV_VAR: "3.6"})
    assert '"kafka_version": "3.6"' in r.stdout and "metadata.version" not in r.stderr
    r = CliRunner().invoke(cli, [cmd, "--format", "json", "--kafka-version", "4.1", str(part)])
    assert '"kafka_version": "4.1"' in r.stdout and "note" not in r.stderr


def test_a_level_no_release_is_known_for_keeps_the_default(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.delenv(ENV_VAR, raising=False)
    part = make_partition(tmp_path)
    _metadata_log(tmp_path, [21, 40])
    r = CliRunner().invoke(cli, ["recover", "--format", "json", str(part)])
    assert f'"kafka_version": "{DEFAULT_VERSION}"' in r.stdout and "note" not in r.stderr


def test_a_level_after_4_0_names_its_release(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    """Level 29 (4.2-IV1: the real clusters of shared/realdata) is 4.2, from the one MetadataVersion table
    (internal_topics/version_hint.METADATA_VERSIONS, which `kafkalog metadata` names levels by too)."""
    from kafkalog_cli.internal_topics.version_hint import RELEASE_OF_LEVEL
    from kafkalog_cli.versions import KNOWN_VERSIONS

    assert set(RELEASE_OF_LEVEL.values()) <= set(KNOWN_VERSIONS)  # every release assumed is a profile
    monkeypatch.delenv(ENV_VAR, raising=False)
    part = make_partition(tmp_path)
    _metadata_log(tmp_path, [21, 29])
    r = CliRunner().invoke(cli, ["recover", "--format", "json", str(part)])
    assert '"kafka_version": "4.2"' in r.stdout
    assert "assuming Kafka 4.2 (from the metadata.version feature level 29 in" in r.stderr
