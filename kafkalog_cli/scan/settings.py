"""The settings of one scan, handed to every process that scans: the CLI builds a ``ScanSettings`` from its
options, ``scan/run.py`` applies it in this process, the local engine passes it to each worker process as an
argument (pickled by ``multiprocessing``) and the Spark engine in its task closure (pickled by Spark).

Why an object and not environment variables: the workers used to learn ``--broker-id``, ``--low-impact``,
``--max-read-rate`` and ``--endpoint-url`` from variables the CLI wrote into its own ``os.environ`` (and into
``spark.executorEnv.*``); that channel leaked into the calling process (a test, a second scan in the same
interpreter) and hid what a worker depends on. Readers (``identity.broker_id``, ``impact.gentle``,
``uri.s3_filesystem``) ask ``current()``, which is this process's applied settings (the defaults until then).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass


@dataclass(frozen=True)
class ScanSettings:
    """What a scanning process needs besides the paths: ``broker_id`` overrides meta.properties for every row;
    ``low_impact`` drops the pages a segment's scan brought into the page cache; ``max_read_rate`` is the read
    rate bound of THIS process in bytes/s (0: none; the local engine gives each worker its share); ``endpoint_url``
    is the S3 endpoint (None: ``$AWS_ENDPOINT_URL_S3``, then ``$AWS_ENDPOINT_URL``, then AWS)."""

    broker_id: int | None = None
    low_impact: bool = False
    max_read_rate: int = 0
    endpoint_url: str | None = None
    decode_schemas: tuple[tuple[int, str], ...] = ()  # scan --records --decode: the _schemas copies (scan/decode.py)


_current = ScanSettings()
_in_worker = False


def current() -> ScanSettings:
    """The settings applied in this process (``ScanSettings()`` when no scan applied any)."""
    return _current


def in_worker() -> bool:
    """True in a local engine's worker process (``install(..., worker=True)``)."""
    return _in_worker


def install(settings: ScanSettings, *, worker: bool = False) -> None:
    """Apply ``settings`` for the rest of this process: the entry of a worker process or a Spark task."""
    global _current, _in_worker
    _current = settings
    _in_worker = _in_worker or worker


@contextmanager
def applied(settings: ScanSettings) -> Iterator[ScanSettings]:
    """Apply ``settings`` in this process while the block runs, then restore the previous ones."""
    global _current
    before = _current
    _current = settings
    try:
        yield settings
    finally:
        _current = before
