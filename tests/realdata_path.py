"""Where the tests find real broker files: one rule for every test that reads them (docs/testing.md).

``$KAFKALOG_REALDATA`` when set (a relative value is taken from the project root), else ``../shared/realdata``
beside the project root, the layout CI and the developers' clones have. Tests that need the files skip when the
directory is absent, so the suite passes on a machine without them.
"""

from __future__ import annotations

import os
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]
ENV = "KAFKALOG_REALDATA"
DEFAULT = Path("..") / "shared" / "realdata"


def realdata_root(environ: os._Environ[str] | dict[str, str] | None = None) -> Path:
    """The real-data directory (it may not exist: callers test ``is_dir()`` and skip)."""
    env = os.environ if environ is None else environ
    raw = env.get(ENV) or str(DEFAULT)
    path = Path(raw).expanduser()
    if not path.is_absolute():
        path = PROJECT_ROOT / path
    return Path(os.path.normpath(path))


REALDATA = realdata_root()

KAFKA_REAL_ENV = "KAFKALOG_KAFKA_REAL"
KAFKA_REAL_DEFAULT = Path("..") / "shared" / "kafka-real"


def kafka_real_root(environ: os._Environ[str] | dict[str, str] | None = None) -> Path:
    """Where ../shared/kafka-real (Kafka's own code, the oracle of tests/kafka_real.py) is: ``$KAFKALOG_KAFKA_REAL``,
    else beside the project root, by the same rule as the real data."""
    env = os.environ if environ is None else environ
    path = Path(env.get(KAFKA_REAL_ENV) or str(KAFKA_REAL_DEFAULT)).expanduser()
    if not path.is_absolute():
        path = PROJECT_ROOT / path
    return Path(os.path.normpath(path))
