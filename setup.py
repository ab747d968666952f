"""Build hook for the optional compiled accelerator (kafkalog_cli._accel). Everything else is in pyproject.toml.

The extension is ``optional``: where no C compiler exists, pip installs kafkalog without it and the pure-Python path
(the reference implementation) is used. ``-pthread``: the CRC walks compute long runs of CRCs on two threads.
"""

import sys

from setuptools import Extension, setup

THREADS = [] if sys.platform == "win32" else ["-pthread"]

setup(
    ext_modules=[
        Extension("kafkalog_cli._accel", ["kafkalog_cli/_accel.c"], optional=True,
                  extra_compile_args=["-O2", *THREADS], extra_link_args=THREADS),
    ]
)
