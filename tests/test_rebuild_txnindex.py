"""``rebuild-index`` rebuilds ``.txnindex`` files from the log's ABORT markers (errata E1); the builder's own model of
every aborted transaction (pid, first offset, marker offset, LSO) is the oracle."""

from __future__ import annotations

import os

from click.testing import CliRunner
from partition_gen import random_partition

from kafkalog_cli.cli.main import cli
from kafkalog_cli.ops.rebuild_txnindex import rebuild_txn_indexes


def test_rebuilt_txnindex_matches_the_model_on_random_partitions(tmp_path):
    seen = 0
    for seed in range(12):
        pdir = str(tmp_path / f"t{seed}-0")
        random_partition(pdir, seed)
        for t in rebuild_txn_indexes(pdir):
            assert t.status in ("match", "absent"), (seed, t)
            seen += t.status == "match"
    assert seen > 10


def test_rebuild_index_writes_a_missing_txnindex(tmp_path):
    pdir = str(tmp_path / "logs" / "t-0")
    pb = random_partition(pdir, 3)
    assert pb.aborted
    names = sorted(n for n in os.listdir(pdir) if n.endswith(".txnindex"))
    want = {n: open(os.path.join(pdir, n), "rb").read() for n in names}
    for n in names:
        os.unlink(os.path.join(pdir, n))
    with open(os.path.join(pdir, names[0]), "wb") as f:
        f.write(want[names[0]][:34])  # one entry short: the cleaner would keep aborted data (E1)
    res = CliRunner().invoke(cli, ["rebuild-index", pdir])
    assert res.exit_code == 1 and ".txnindex" in res.output, res.output
    res = CliRunner().invoke(cli, ["rebuild-index", "--execute", "--backup-dir", str(tmp_path / "bk"), pdir])
    assert res.exit_code == 0, res.output
    assert {n: open(os.path.join(pdir, n), "rb").read() for n in names} == want
    res = CliRunner().invoke(cli, ["rebuild-index", pdir])
    assert res.exit_code == 0, res.output
