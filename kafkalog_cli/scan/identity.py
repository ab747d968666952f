"""Which broker a scanned log dir belongs to: ``broker_id`` on every row.

Why: a fleet writes one shared dataset; a row must say which broker's disk it came from, and the dataset is
partitioned by it. The id is the log dir's ``meta.properties`` (``node.id`` in KRaft mode, ``broker.id`` in
ZooKeeper mode, ``storage.meta_properties``); ``--broker-id`` overrides it for a whole scan (a copied log dir
without its meta.properties). The override travels to worker processes and Spark tasks in the scan's settings
(``scan/settings.py``).
"""

from __future__ import annotations

from functools import lru_cache

from kafkalog_cli.errors import KafkalogError
from kafkalog_cli.scan.settings import current


@lru_cache(maxsize=4096)
def _from_meta(log_dir: str) -> int | None:
    from kafkalog_cli.storage.meta_properties import broker_id_of

    try:
        return broker_id_of(log_dir)
    except (KafkalogError, OSError):  # the driver checked and reported it (check_log_dirs); a row gets null
        return None


def broker_id(log_dir: str) -> int | None:
    """The broker id of rows from ``log_dir``: the override, else meta.properties, else None."""
    override = current().broker_id
    if override is not None:
        return override
    if "://" in log_dir:
        return _from_object_meta(log_dir)
    return _from_meta(log_dir)


@lru_cache(maxsize=1024)
def _from_object_meta(log_dir: str) -> int | None:
    """meta.properties of a log dir copied to an object store (``s3://bucket/host1/kafka-logs/meta.properties``)."""
    from kafkalog_cli.scan import uri
    from kafkalog_cli.storage.meta_properties import parse_properties

    try:
        s3, key = uri.split(log_dir)
        with s3.open_input_stream(f"{key}/meta.properties") as f:
            props = parse_properties(f.read(1 << 20).decode("latin-1"))
    except (OSError, ValueError):
        return None
    for k in ("node.id", "broker.id"):
        if props.get(k, "").strip().lstrip("-").isdigit():
            return int(props[k])
    return None


def check_log_dirs(log_dirs: list[str]) -> None:
    """Raise the typed error of a meta.properties whose id is not an integer (checked once, on the driver; not
    with ``--broker-id``, which overrides them)."""
    from kafkalog_cli.storage.meta_properties import broker_id_of

    if current().broker_id is not None:
        return
    for d in log_dirs:
        if "://" not in d:
            broker_id_of(d)
