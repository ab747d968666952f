"""Build hook for the optional compiled accelerator (kafkalog_cli._accel). Everything else is in pyproject.toml.

The extension is ``optional``: where no C compiler exists, pip installs kafkalog without it and the pure-Python path
(the reference implementation) is used. The C source is one translation unit, ``_accel.c``, which includes its parts
from ``kafkalog_cli/accel/`` (listed as ``depends`` so that editing a part rebuilds it). ``-pthread``: the CRC walks compute long runs of CRCs on two threads.
"""

import sys
from pathlib import Path

from setuptools import Extension, setup

THREADS = [] if sys.platform == "win32" else ["-pthread"]

setup(
    ext_modules=[
        Extension("kafkalog_cli._accel", ["kafkalog_cli/_accel.c"], optional=True,
                  depends=sorted(str(p) for p in Path("kafkalog_cli/accel").glob("*.[ch]")),
                  extra_compile_args=["-O2", *THREADS], extra_link_args=THREADS),
    ]
)
