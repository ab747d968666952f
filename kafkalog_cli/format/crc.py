"""CRC-32C (v2 batches, producer snapshots) and CRC-32 (v0/v1 messages).

CRC-32C comes from kafkalog's own compiled accelerator when it is built (``_accel.crc32c``: SSE4.2 three-stream or
slicing-by-8, GIL released), else from the ``crc32c`` package (hardware SSE4.2/ARMv8 instructions, accepts memoryview
slices without a copy), else from ``crcmod``'s C extension; a pure-Python CRC is ~1000x slower, so
``implementation()`` says which one is loaded and the tests assert that it is compiled. The accelerator comes first
for start-up time: importing the ``crc32c`` package costs ~25 ms (it imports ``importlib.metadata`` for its version),
a sixth of a ``verify-crc`` run's start-up and paid on every command. ``KAFKALOG_NO_ACCEL=1`` skips it, so the
reference path runs on the independent package. The values are the same whichever is loaded (tests compare them).
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Callable


def _load() -> tuple[Callable[[bytes | memoryview], int], str]:
    """The first CRC-32C implementation available, in the order of the module docstring, and its name."""
    if not os.environ.get("KAFKALOG_NO_ACCEL"):
        try:
            from kafkalog_cli import _accel

            return _accel.crc32c, "accel-" + _accel.crc_implementation()
        except ImportError:  # pragma: no cover - a build without a C compiler
            pass
    try:
        import crc32c as package

        return package.crc32c, "crc32c-hardware" if getattr(package, "hardware_based", False) else "crc32c-software-c"
    except ImportError:  # pragma: no cover - exercised only where crc32c is missing
        pass
    import crcmod.predefined

    table_crc = crcmod.predefined.mkCrcFun("crc-32c")

    def crcmod_crc32c(data: bytes | memoryview) -> int:
        return table_crc(bytes(data) if isinstance(data, memoryview) else data)

    try:
        from crcmod import _crcfunext  # noqa: F401

        return crcmod_crc32c, "crcmod-c"
    except ImportError:
        return crcmod_crc32c, "crcmod-python"


_crc32c, _IMPL = _load()


def crc32c(data: bytes | memoryview) -> int:
    """CRC-32C (Castagnoli) of ``data`` as an unsigned 32-bit int."""
    return _crc32c(data)


def crc32(data: bytes | memoryview) -> int:
    """IEEE CRC-32 (zlib) of ``data`` as an unsigned 32-bit int."""
    return zlib.crc32(data) & 0xFFFFFFFF


def implementation() -> str:
    """Name of the loaded CRC-32C implementation: accel-sse4.2-3way, accel-slicing-by-8, crc32c-hardware,
    crc32c-software-c, crcmod-c or crcmod-python."""
    return _IMPL
