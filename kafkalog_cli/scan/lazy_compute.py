"""``pyarrow.compute``, imported at its first use.

Why: importing it builds a Python wrapper for each of Arrow's several hundred compute functions, about 47 ms of a
scan's start-up (``python -X importtime``), single-threaded before any byte is read; a clean segment walked by the
compiled walk needs no compute kernel at all (its window facts give the report and the partition pass). The modules
of the scan say ``from kafkalog_cli.scan.lazy_compute import pc`` and use ``pc.<function>`` as before.
"""

from __future__ import annotations

from typing import Any


class _Compute:
    def __getattr__(self, name: str) -> Any:
        import pyarrow.compute as module

        value = getattr(module, name)
        setattr(self, name, value)  # the next lookup is a plain attribute
        return value


pc: Any = _Compute()
