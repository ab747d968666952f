"""Where a scan reads and writes: local paths, ``file://`` URIs and object stores (``s3://bucket/prefix``).

Why pyarrow.fs and not Hadoop: pyarrow is already a dependency of ``scan`` and runs in the workers of both engines,
so no S3A jars, no Hadoop configuration. Objects are staged to a temporary file one segment at a time (with its
``.index``/``.timeindex`` companions, which the verify pass checks), scanned there as a local file, and the rows are
relabelled with the object's location, so they equal a local scan of the same bytes except for ``log_dir``.

Credentials and endpoint come from the standard AWS variables. pyarrow's S3 client reads the keys and the region
itself but ignores ``AWS_ENDPOINT_URL`` / ``AWS_ENDPOINT_URL_S3`` (the service-specific one wins, as in the AWS
SDKs), so they are read here; ``--endpoint-url`` wins over both, for the scan and its workers (``ScanSettings.endpoint_url``).
"""

from __future__ import annotations

import os
import posixpath
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import unquote, urlparse

OBJECT_SCHEMES = ("s3",)


def is_uri(path: str) -> bool:
    return "://" in path


def is_object_uri(path: str) -> bool:
    return urlparse(path).scheme in OBJECT_SCHEMES


def local_path(arg: str) -> str:
    """A local path for a local path or a ``file://`` URI (``file:///x`` and ``file://localhost/x``); other URIs
    are returned unchanged. Raises ValueError for a ``file://`` URI naming another host."""
    if not arg.startswith("file:"):
        return arg
    u = urlparse(arg)
    if u.netloc not in ("", "localhost"):
        raise ValueError(f"{arg}: a file:// URI must name this host (file:///path), not {u.netloc!r}")
    return unquote(u.path) or "/"


def s3_filesystem(env: dict[str, str] | None = None) -> Any:
    """A pyarrow S3FileSystem configured from the AWS environment variables (see the module docstring)."""
    from pyarrow import fs

    from kafkalog_cli.scan.settings import current

    env = dict(os.environ) if env is None else env
    kwargs: dict[str, Any] = {}
    endpoint = current().endpoint_url or env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL")
    if endpoint:
        u = urlparse(endpoint if "://" in endpoint else f"https://{endpoint}")
        kwargs["endpoint_override"] = u.netloc
        kwargs["scheme"] = u.scheme or "https"
        kwargs["force_virtual_addressing"] = False
    region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")
    if region:
        kwargs["region"] = region
    elif endpoint:
        kwargs["region"] = "us-east-1"  # a custom endpoint: do not ask AWS where the bucket is
    if env.get("AWS_ACCESS_KEY_ID") and env.get("AWS_SECRET_ACCESS_KEY"):
        kwargs["access_key"] = env["AWS_ACCESS_KEY_ID"]
        kwargs["secret_key"] = env["AWS_SECRET_ACCESS_KEY"]
        if env.get("AWS_SESSION_TOKEN"):
            kwargs["session_token"] = env["AWS_SESSION_TOKEN"]
    return fs.S3FileSystem(**kwargs)


def split(uri: str) -> tuple[Any, str]:
    """(pyarrow filesystem, path inside it) of an object-store URI: ``s3://bucket/key`` -> (S3, ``bucket/key``)."""
    u = urlparse(uri)
    if u.scheme != "s3":
        raise ValueError(f"{uri}: unsupported URI scheme {u.scheme!r} (use a local path, file:// or s3://)")
    return s3_filesystem(), f"{u.netloc}{u.path}".rstrip("/")


def list_objects(uri: str) -> list[str]:
    """Every object below ``uri`` (or the object itself), as ``s3://`` URIs, sorted."""
    from pyarrow import fs

    s3, base = split(uri)
    info = s3.get_file_info(base)
    if info.type == fs.FileType.File:
        return [uri]
    if info.type == fs.FileType.NotFound:
        return []
    return sorted(f"s3://{i.path}" for i in s3.get_file_info(fs.FileSelector(base, recursive=True))
                  if i.type == fs.FileType.File)


COMPANIONS = (".index", ".timeindex", ".txnindex", ".rsm-manifest")


@contextmanager
def staged(uri: str) -> Iterator[str]:
    """A local copy of the segment object ``uri`` (and its index companions, when they exist), at
    ``<tmp>/<partition dir>/<segment name>`` so a scan labels partition and segment as for the original."""
    from pyarrow import fs

    s3, key = split(uri)
    tmp = tempfile.mkdtemp(prefix="kafkalog-stage-")
    try:
        part_dir = os.path.join(tmp, posixpath.basename(posixpath.dirname(key)) or "_")
        os.makedirs(part_dir)
        local = os.path.join(part_dir, posixpath.basename(key))
        stem = key[: -len(".log")] if key.endswith(".log") else None
        wanted = [(key, local)]
        if stem is not None:
            wanted += [(stem + s, local[: -len(".log")] + s) for s in COMPANIONS]
        for src, dst in wanted:
            if src != key and s3.get_file_info(src).type != fs.FileType.File:
                continue
            with s3.open_input_stream(src) as inp, open(dst, "wb") as out:
                shutil.copyfileobj(inp, out, 4 << 20)  # streamed: a segment is never held in memory
        yield local
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def relabel(table: Any, log_dir: str, broker_id: int | None) -> Any:
    """``table`` with ``log_dir`` (and ``broker_id``) replaced by the object's location."""
    import pyarrow as pa

    n = table.num_rows
    i = table.schema.get_field_index("log_dir")
    table = table.set_column(i, table.schema.field(i), pa.array([log_dir] * n, pa.string()).cast(table.schema.field(i).type))
    i = table.schema.get_field_index("broker_id")
    if i >= 0:
        table = table.set_column(i, table.schema.field(i), pa.array([broker_id] * n, table.schema.field(i).type))
    return table


def upload_tree(local_dir: str, uri: str) -> None:
    """Copy the files below ``local_dir`` to ``uri`` (same relative names); each PUT is atomic, so a reader of the
    bucket sees a whole part file or none."""
    from pyarrow import fs

    s3, base = split(uri)
    for root, _dirs, files in os.walk(local_dir):
        for f in files:
            src = os.path.join(root, f)
            rel = os.path.relpath(src, local_dir).replace(os.sep, "/")
            fs.copy_files(src, f"{base}/{rel}", source_filesystem=fs.LocalFileSystem(), destination_filesystem=s3)


def remove_matching(uri: str, prefix: str, keep: str) -> None:
    """Delete the objects below ``uri`` whose name starts with ``prefix`` but not with ``keep``."""
    from pyarrow import fs

    s3, base = split(uri)
    if s3.get_file_info(base).type == fs.FileType.NotFound:
        return
    for i in s3.get_file_info(fs.FileSelector(base, recursive=True)):
        name = posixpath.basename(i.path)
        if i.type == fs.FileType.File and name.startswith(prefix) and not name.startswith(keep):
            try:
                s3.delete_file(i.path)
            except OSError:  # a concurrent re-run removed it first
                pass


def download_tree(uri: str, local_dir: str) -> None:
    """Copy the dataset objects below ``uri`` to ``local_dir`` (``kafkalog report s3://...``)."""
    from pyarrow import fs

    s3, base = split(uri)
    fs.copy_files(base, local_dir, source_filesystem=s3, destination_filesystem=fs.LocalFileSystem())
