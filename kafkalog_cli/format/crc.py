"""CRC-32C (v2 batches, producer snapshots) and CRC-32 (v0/v1 messages).

CRC-32C comes from the ``crc32c`` package (hardware SSE4.2/ARMv8 instructions, accepts memoryview slices without a
copy). ``crcmod``'s C extension is the fallback; a pure-Python CRC is ~1000x slower, so ``implementation()`` says
which one is loaded and the tests assert that it is compiled.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable

_crc32c: Callable[[bytes | memoryview], int]
_IMPL: str

try:  # pragma: no branch - the preferred path
    import crc32c as _crc32c_mod

    _crc32c = _crc32c_mod.crc32c
    _IMPL = "crc32c-hardware" if getattr(_crc32c_mod, "hardware_based", False) else "crc32c-software-c"
except ImportError:  # pragma: no cover - exercised only where crc32c is missing
    import crcmod.predefined as _crcmod_predef

    _crcmod_fun = _crcmod_predef.mkCrcFun("crc-32c")

    def _crc32c(data: bytes | memoryview) -> int:
        return _crcmod_fun(bytes(data) if isinstance(data, memoryview) else data)

    try:
        from crcmod import _crcfunext  # noqa: F401

        _IMPL = "crcmod-c"
    except ImportError:
        _IMPL = "crcmod-python"


def crc32c(data: bytes | memoryview) -> int:
    """CRC-32C (Castagnoli) of ``data`` as an unsigned 32-bit int."""
    return _crc32c(data)


def crc32(data: bytes | memoryview) -> int:
    """IEEE CRC-32 (zlib) of ``data`` as an unsigned 32-bit int."""
    return zlib.crc32(data) & 0xFFFFFFFF


def implementation() -> str:
    """Name of the loaded CRC-32C implementation: crc32c-hardware, crc32c-software-c, crcmod-c or crcmod-python."""
    return _IMPL
