"""Build hook for the optional compiled accelerator (kafkalog_cli._accel). Everything else is in pyproject.toml.

The extension is ``optional``: where no C compiler exists, pip installs kafkalog without it and the pure-Python path
(the reference implementation) is used.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension("kafkalog_cli._accel", ["kafkalog_cli/_accel.c"], optional=True, extra_compile_args=["-O2"]),
    ]
)
