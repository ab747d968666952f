"""The metadata.version feature level names (``internal_topics/version_hint.METADATA_VERSIONS``, MetadataVersion.java's enum): one
name per level, consecutive from 3.0-IV1 (level 1), up to the newest levels of Kafka's trunk (4.1 .. 4.4)."""

from __future__ import annotations

import os
import re
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from realdata_path import REALDATA  # noqa: E402

from kafkalog_cli.ops import metadata as md  # noqa: E402


def test_levels_are_consecutive_and_named_as_kafka_names_them():
    levels = sorted(md.METADATA_VERSIONS)
    assert levels == list(range(1, levels[-1] + 1))
    names = [md.METADATA_VERSIONS[level] for level in levels]
    assert all(re.fullmatch(r"\d\.\d+-IV\d", n) for n in names)
    releases = [tuple(int(x) for x in n.split("-")[0].split(".")) for n in names]
    assert releases == sorted(releases)  # a later level never names an older release
    # the levels after 4.0-IV3 (MetadataVersion.java on Kafka's trunk: IBP_4_1_IV0(26) .. IBP_4_4_IV2(33))
    assert {k: md.METADATA_VERSIONS[k] for k in range(25, 34)} == {
        25: "4.0-IV3", 26: "4.1-IV0", 27: "4.1-IV1", 28: "4.2-IV0", 29: "4.2-IV1", 30: "4.3-IV0", 31: "4.4-IV0",
        32: "4.4-IV1", 33: "4.4-IV2"}
    assert md.metadata_version_name(29) == "4.2-IV1 (level 29)"
    assert md.metadata_version_name(99) == "unknown (level 99)"
    assert md.metadata_version_name(None).startswith("unknown")


@pytest.mark.realdata
def test_a_real_4_2_cluster_is_named():
    dirs = [d for d in sorted(REALDATA.glob("**/__cluster_metadata-0"))
            if md.load(str(d)).image.features.get("metadata.version") == 29]
    if not dirs:
        pytest.skip("no real metadata log at level 29")
    from click.testing import CliRunner

    from kafkalog_cli.cli.main import cli

    out = CliRunner().invoke(cli, ["metadata", str(dirs[0])]).output
    assert "metadata.version: 4.2-IV1 (level 29)" in out
