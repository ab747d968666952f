"""The typed version profile (kafkalog_cli/versions.py): the change table and the Profile dataclass agree."""

from __future__ import annotations

import dataclasses
import typing

import pytest

from kafkalog_cli import versions
from kafkalog_cli.versions import KNOWN_VERSIONS, TABLE, Profile, profile_for


def _type_ok(value: object, hint: object) -> bool:
    origin = typing.get_origin(hint)
    if origin is typing.Literal:
        return value in typing.get_args(hint)
    if origin is dict:
        kt, vt = typing.get_args(hint)
        return isinstance(value, dict) and all(isinstance(k, kt) and isinstance(v, vt) for k, v in value.items())
    if origin is tuple:
        return isinstance(value, tuple) and all(isinstance(x, t) for x, t in zip(value, typing.get_args(hint)))
    assert isinstance(hint, type), hint
    return isinstance(value, hint)


def test_table_keys_are_the_profile_fields() -> None:
    names = {f.name for f in dataclasses.fields(Profile)} - {"version"}
    assert set(TABLE) == names


def test_every_row_has_its_field_type_and_ascending_versions() -> None:
    hints = typing.get_type_hints(Profile, vars(versions))
    for name, rows in TABLE.items():
        assert rows[0][0] == (0, 0, 0), name
        assert [r[0] for r in rows] == sorted(r[0] for r in rows), name
        for _since, value in rows:
            assert _type_ok(value, hints[name]), (name, value, hints[name])


@pytest.mark.parametrize("text", KNOWN_VERSIONS)
def test_profiles_resolve_for_every_known_version(text: str) -> None:
    p = profile_for(text)
    assert p.label.startswith(text)
    assert set(p.values) == set(TABLE)


def test_engine_does_not_import_render() -> None:
    import pathlib

    root = pathlib.Path(versions.__file__).parent
    for sub in ("ops", "broker", "storage", "format", "internal", "internal_topics", "scan"):
        for path in (root / sub).glob("*.py"):
            assert "kafkalog_cli.render" not in path.read_text(), path


def test_decoder_release_table_matches_its_dataclass() -> None:
    """The internal-topic decoders' per-release table (internal_topics/releases.py) has the same guarantees."""
    import importlib

    releases = importlib.import_module("kafkalog_cli.internal_topics.releases")
    names = {f.name for f in dataclasses.fields(releases.DecoderRelease)}
    assert set(releases.TABLE) == names
    hints = typing.get_type_hints(releases.DecoderRelease, vars(releases))
    for name, rows in releases.TABLE.items():
        assert rows[0][0] == (0, 0, 0), name
        assert [r[0] for r in rows] == sorted(r[0] for r in rows), name
        for _since, value in rows:
            assert _type_ok(value, hints[name]), (name, value)
    for text in KNOWN_VERSIONS:
        releases.release_for(profile_for(text).version)


@pytest.mark.parametrize("version, json_from", [((3, 7, 9), False), ((3, 8, 0), True), ((4, 3, 0), True)])
def test_offsets_decoder_switches_to_json_at_3_8(version: tuple[int, int, int], json_from: bool) -> None:
    import importlib

    offsets = importlib.import_module("kafkalog_cli.internal_topics.consumer_offsets")
    assert isinstance(offsets.make(version), offsets.OffsetsJsonParser) is json_from
