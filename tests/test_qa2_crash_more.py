"""SIGKILL after every file-changing step of `salvage --execute` and `recover --execute` (qa2).

`tests/test_crash_steps.py` covers rebuild-index, compact and truncate-to-epoch; issue 12 asks the same of every
writing command. Same harness: each directory left behind must load, under the broker-loader model and after
kafkalog's recovery, as exactly the old or exactly the new partition."""

from __future__ import annotations

import os

import pytest
from crash_driver import corrupt_third_batch, kill_at_every_step
from partition_gen import random_partition


def _scenario(kind: str, root: str) -> tuple[str, list[str]]:
    pdir = os.path.join(root, "logs", "t-0")
    random_partition(pdir, 11)
    logs = sorted(n for n in os.listdir(pdir) if n.endswith(".log"))
    if kind == "salvage":
        corrupt_third_batch(os.path.join(pdir, logs[1]))
        return pdir, ["salvage", "--execute", pdir]
    # recover: an unclean shutdown left a torn write at the end of the active segment and a lost index
    with open(os.path.join(pdir, logs[-1]), "ab") as f:
        f.write(b"\x00\x00\x00\x00\x00\x00\x00\x63\x00\x00\x01\x00garbage")
    os.unlink(os.path.join(pdir, logs[-2].replace(".log", ".index")))
    return pdir, ["recover", "--execute", pdir]


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["salvage", "recover"])
def test_kill_at_every_step_of_salvage_and_recover(tmp_path, kind):
    src, args = _scenario(kind, str(tmp_path / "src"))
    kill_at_every_step(str(tmp_path), src, args, min_steps=4, sample=30)


@pytest.mark.oracle_long
@pytest.mark.parametrize("kind", ["salvage", "recover"])
def test_kill_at_every_syscall_of_salvage_and_recover(tmp_path, kind):
    src, args = _scenario(kind, str(tmp_path / "src"))
    kill_at_every_step(str(tmp_path), src, args, min_steps=4)
