"""Moved to :mod:`kafkalog_cli.versions` (issue 21: the engine must not import from render/).

A thin re-export kept only while other branches still import the old path; remove it once they are merged.
"""

from __future__ import annotations

from kafkalog_cli.versions import (  # noqa: F401
    DEFAULT_VERSION,
    KNOWN_VERSIONS,
    TABLE,
    Profile,
    Version,
    newer_than_known,
    parse_version,
    profile_for,
)
