"""`kafkalog --help` must stay cheap: no rich, codec, checksum, pyarrow or pyspark import before a command needs it."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ["rich", "zstandard", "lz4", "cramjam", "snappy", "crc32c", "crcmod", "pyarrow", "pyspark", "kafka"]


def test_help_imports_nothing_heavy() -> None:
    code = (
        "import sys\n"
        "from kafkalog_cli.cli.main import cli\n"
        "try:\n    cli.main(['--help'], standalone_mode=False)\nexcept SystemExit:\n    pass\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "[]"
