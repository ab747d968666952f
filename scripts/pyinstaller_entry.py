"""PyInstaller entry point for the single-file ``kafkalog`` binary.

PyInstaller needs a script, not a console-script entry point. Commands are imported lazily through importlib, so the
build passes ``--collect-submodules kafkalog_cli``; this file only has to call ``main``.

``KAFKALOG_SELFTEST=1 kafkalog`` checks the bundle itself (every codec round-trips, CRC-32C is the compiled one, the
C accelerator is there) and
exits: an operator can run it on a new host before trusting the binary, and ``tests/test_binary.py`` uses it to catch
a codec or metadata file the build forgot (crc32c reads its own dist-info at import and silently falls back to a
1000x slower CRC when it is missing).
"""

from __future__ import annotations

import os
import sys


def selftest() -> int:
    """Round-trip every codec and report the CRC-32C implementation; 0 when the bundle is complete."""
    from kafkalog_cli.format import codecs, crc

    data = b"kafkalog self-test " * 1000
    status = 0
    for cid, name in sorted(codecs.CODEC_NAMES.items()):
        if cid == codecs.NONE:
            continue
        try:
            ok = codecs.decompress(cid, codecs.compress(cid, data)) == data
            detail = ""
        except Exception as exc:  # report every codec, not just the first broken one
            ok, detail = False, f" ({type(exc).__name__}: {exc})"
        print(f"codec {name}: {'ok' if ok else 'FAILED'}{detail}")
        status |= not ok
    impl = crc.implementation()  # compiled: the accelerator's, or the crc32c package's (not crcmod's fallback)
    crc_ok = impl.startswith(("accel-", "crc32c-")) and crc.crc32c(b"123456789") == 0xE3069283
    print(f"crc32c: {impl} {'ok' if crc_ok else 'FAILED'}")
    status |= not crc_ok
    try:  # the reference path's CRC (KAFKALOG_NO_ACCEL=1) and the fallback where the accelerator cannot load
        import crc32c as package

        pkg_ok = package.crc32c(b"123456789") == 0xE3069283
    except ImportError:
        pkg_ok = False
    print(f"crc32c package: {'ok' if pkg_ok else 'FAILED (missing from the bundle)'}")
    status |= not pkg_ok
    try:  # the compiled accelerator: without it deep dumps and CRC walks are up to 20x slower
        import kafkalog_cli._accel  # noqa: F401

        accel_ok = True
    except ImportError:
        accel_ok = False
    print(f"accelerator: kafkalog_cli._accel {'ok' if accel_ok else 'FAILED (missing from the bundle)'}")
    status |= not accel_ok
    return int(status)


if __name__ == "__main__":
    # verify-crc --jobs and scan use process pools: under a start method that re-executes the program (spawn,
    # forkserver; the default from Python 3.14), a frozen child must run the worker, not the CLI again.
    import multiprocessing

    multiprocessing.freeze_support()
    if os.environ.get("KAFKALOG_SELFTEST"):
        sys.exit(selftest())
    from kafkalog_cli.entry import main

    main()
