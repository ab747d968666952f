"""What one ``kafkalog mcp`` tool call costs over running the command itself (issue 36).

Run from the project root: ``.venv/bin/python bench/mcp_call_overhead.py`` (needs the ``mcp`` package). Each tool call
is one child ``kafkalog`` process, so the cost is the same process start plus the JSON-RPC round trip.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path

from mcp import ClientSession, StdioServerParameters, stdio_client

ROOT = Path(__file__).resolve().parent.parent
N = 20
CASES = [
    ("locate_group", {"group": "g"}, ["locate-group", "--format", "json", "g"]),
    ("verify_crc", {"paths": ["partition/orders-0"]}, ["verify-crc", "--format", "json", "partition/orders-0"]),
]


async def main() -> None:
    fixtures = ROOT / "fixtures"
    params = StdioServerParameters(command=sys.executable, args=["-m", "kafkalog_cli", "mcp", "--root", str(fixtures)],
                                   cwd=str(ROOT))
    async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
        await s.initialize()
        for tool, args, argv in CASES:
            t = time.perf_counter()
            for _ in range(N):
                await s.call_tool(tool, args)
            mcp_ms = (time.perf_counter() - t) / N * 1000
            t = time.perf_counter()
            for _ in range(N):
                subprocess.run([sys.executable, "-m", "kafkalog_cli", *argv], cwd=fixtures, capture_output=True)
            cli_ms = (time.perf_counter() - t) / N * 1000
            print(f"{tool}: MCP call {mcp_ms:.0f} ms, the command itself {cli_ms:.0f} ms (mean of {N})")


if __name__ == "__main__":
    asyncio.run(main())
