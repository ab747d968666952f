"""SIGKILL after every file-changing step of `salvage --execute` and `recover --execute` (qa2).

`tests/test_crash_steps.py` covers rebuild-index, compact and truncate-to-epoch; issue 12 asks the same of every
writing command. Same harness: each directory left behind must load, under the broker-loader model and after
kafkalog's recovery, as exactly the old or exactly the new partition."""

from __future__ import annotations

import os
import shutil
import signal
import struct

import broker_loader
import pytest
from partition_gen import random_partition
from test_crash_steps import _hashes, run_forked

from kafkalog_cli.ops import safety


def _scenario(kind: str, root: str) -> tuple[str, list[str]]:
    pdir = os.path.join(root, "logs", "t-0")
    random_partition(pdir, 11)
    logs = sorted(n for n in os.listdir(pdir) if n.endswith(".log"))
    if kind == "salvage":
        # flip one byte inside the third batch of the second segment: a CRC failure in the middle of the log
        p = os.path.join(pdir, logs[1])
        data = bytearray(open(p, "rb").read())
        pos = 0
        for _ in range(2):
            pos += 12 + struct.unpack_from(">i", data, pos + 8)[0]
        data[pos + 70] ^= 0xFF
        open(p, "wb").write(bytes(data))
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
    old = _hashes(src)
    old_view = broker_loader.load(src, str(tmp_path / "scratch")).view
    ref_root = str(tmp_path / "ref")
    shutil.copytree(os.path.dirname(src), os.path.join(ref_root, "logs"))
    ref = os.path.join(ref_root, "logs", "t-0")
    steps_log = str(tmp_path / "steps")
    status = run_forked([a.replace(src, ref) for a in args], {safety.STEP_LOG_ENV: steps_log})
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
    steps = len(open(steps_log).read().split())
    new = _hashes(ref)
    assert new != old
    new_view = broker_loader.load(ref, str(tmp_path / "scratch")).view
    assert steps >= 4
    seen = {"broker": set(), "kafkalog": set()}
    for k in range(1, steps + 1):
        root = str(tmp_path / f"k{k}")
        shutil.copytree(os.path.dirname(src), os.path.join(root, "logs"))
        pdir = os.path.join(root, "logs", "t-0")
        status = run_forked([a.replace(src, pdir) for a in args], {safety.KILL_ENV: str(k)})
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, f"step {k}: not killed ({status})"
        loaded = broker_loader.load(pdir, str(tmp_path / "scratch"))
        assert not loaded.fabricated_indexes, f"step {k}: the broker would install a zero-filled index"
        assert loaded.view in (old_view, new_view), f"step {k}: the broker would load neither old nor new"
        seen["broker"].add("old" if loaded.view == old_view else "new")
        safety.recover_interrupted(pdir)
        now = _hashes(pdir)
        assert now in (old, new), f"step {k}: kafkalog's recovery left a mixed state"
        seen["kafkalog"].add("old" if now == old else "new")
        assert [n for n in os.listdir(os.path.dirname(pdir)) if n != ".lock"] == ["t-0"], f"step {k}: leftovers"
        shutil.rmtree(root)
    assert seen["kafkalog"] == {"old", "new"}, seen
