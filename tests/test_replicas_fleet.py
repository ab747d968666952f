"""``kafkalog report --replicas``: scan datasets of three brokers (one log dir each, one scenario per partition)
give, row for row, the answer ``compare-replicas`` gives on the same directories."""

from __future__ import annotations

import json
import os

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from test_replicas import history, rec, replica, values

from kafkalog_cli.cli.main import cli
from kafkalog_cli.ops import replicas as rp
from kafkalog_cli.scan import output
from kafkalog_cli.scan.local_engine import run_local
from kafkalog_cli.scan.paths import expand


def corrupt_batch(pdir: str, index: int) -> None:
    seg = os.path.join(pdir, "00000000000000000000.log")
    data = bytearray(open(seg, "rb").read())
    pos = 0
    for _ in range(index):
        pos += 12 + int.from_bytes(data[pos + 8 : pos + 12], "big")
    data[pos + 70] ^= 0xFF
    open(seg, "wb").write(bytes(data))


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("fleet"))
    parts: dict[str, list[str]] = {}

    def add(part: str, per_broker: dict[int, list]) -> None:
        parts[part] = [replica(root, b, steps, part=part) for b, steps in sorted(per_broker.items())]

    add("orders-0", {b: values(8) + values(4, 8, epoch=1) for b in (1, 2, 3)})  # clean
    add("orders-1", {1: values(10), 2: values(6)})  # lagging follower
    add("orders-2", {1: values(10, pid=7), 2: values(5, pid=7),  # KAFKA-10751
                     3: values(2, pid=7) + values(3, 2, epoch=1, tag="new", pid=9)})
    add("orders-3", {1: values(5) + values(3, 5, epoch=1, tag="a") + values(2, 8, epoch=3, tag="a"),  # KIP-279
                     2: values(5) + values(2, 5, epoch=2, tag="b") + values(2, 7, epoch=4, tag="b")})
    add("orders-4", {1: history(set()), 3: history({0, 1, 2, 3})})  # compacted: agree
    add("orders-5", {1: history(set()), 2: history({0, 1, 8})})  # cleaning divergence
    add("orders-6", {1: [rec(f"k{i % 4}", f"v{i}") for i in range(20)],  # missing range
                     2: [rec(f"k{i % 4}", f"v{i}") for i in range(8)] + [lambda pb: setattr(pb, "next_offset", 12)]
                     + [rec(f"k{i % 4}", f"v{i}") for i in range(12, 20)]})
    add("orders-7", {1: values(10), 2: values(10)})  # corrupt batch on broker 2
    corrupt_batch(parts["orders-7"][1], 4)
    add("solo-0", {1: values(3)})  # on one broker only: no row
    datasets = []
    for b in (1, 2, 3):
        out = os.path.join(root, f"scan{b}")
        segments, missing = expand([os.path.join(root, f"broker{b}")])
        assert not missing
        output.prepare(out, True)
        run_local(segments, out, records=True, jobs=1)
        datasets.append(out)
    return root, parts, datasets


def test_report_matches_compare_replicas_row_for_row(fleet, tmp_path):
    root, parts, datasets = fleet
    ids = ",".join(f"{d}={b}" for b, d in zip((1, 2, 3), datasets))
    res = CliRunner().invoke(cli, ["report", "--replicas", *datasets, "--broker-ids", ids, "--out", str(tmp_path / "div"),
                                   "--format", "json"])
    assert res.exit_code == 1, res.output
    rows = {f"{r['topic']}-{r['partition']}": r for r in json.loads(res.output)["divergence"]}
    assert sorted(rows) == sorted(p for p in parts if p != "solo-0")
    table = pq.read_table(str(tmp_path / "div" / "part-00000.parquet")).to_pylist()
    assert len(table) == len(rows)
    for part, dirs in parts.items():
        if part == "solo-0":
            continue
        names = [os.path.basename(os.path.dirname(d)).removeprefix("broker") for d in dirs]
        cmp = rp.compare(dirs, names)
        row = rows[part]
        assert row["brokers"] == names, part
        assert (row["first_divergent_offset"], row["divergence_kind"], row["leader"]) == \
            (cmp.first_divergent_offset, cmp.divergence_kind, cmp.leader), part
        assert row["truncation_offsets"] == [r.truncation_offset for r in cmp.replicas], part
        assert row["lost_records"] == [r.lost.count for r in cmp.replicas], part
    kinds = {p: r["divergence_kind"] for p, r in rows.items()}
    assert kinds == {"orders-0": None, "orders-1": None, "orders-2": "different-epoch", "orders-3": "different-epoch",
                     "orders-4": None, "orders-5": "cleaning-divergence", "orders-6": "missing-range",
                     "orders-7": "corrupt-batch"}


def test_report_needs_records_and_datasets(fleet, tmp_path):
    _root, _parts, datasets = fleet
    res = CliRunner().invoke(cli, ["report", "--replicas", str(tmp_path)])
    assert res.exit_code == 2 and "not a scan dataset" in res.output
    os.makedirs(tmp_path / "x" / "batches")
    res = CliRunner().invoke(cli, ["report", "--replicas", str(tmp_path / "x")])
    assert res.exit_code == 2 and "--records" in res.output
    res = CliRunner().invoke(cli, ["report", "--replicas", datasets[0], "--broker-ids", "nonsense"])
    assert res.exit_code == 2


def test_records_of_a_batch_are_in_offset_order_whatever_the_dataset_order():
    """A scan dataset has no row order: two encoders write row groups into two part files, so the records of a batch
    cut by a row-group boundary read back as its second part, then its first. The replica rebuilt from the rows
    holds each batch's records in offset order (``_judge_missing`` takes the first one it meets as the earliest)."""
    import random

    from kafkalog_cli.scan.replicas_fleet import _replica

    rows = [{"segment": "00000000000000000000.log", "batch_position": 0, "offset": o, "timestamp": None,
             "value_size": 3, "key": b"k", "header_keys": []} for o in range(50)]
    shuffled = rows[25:] + rows[:25]
    random.Random(3).shuffle(shuffled)
    rep = _replica("b1", "/l", "t-0", [], shuffled)
    assert [r.offset for r in rep.rows[("00000000000000000000.log", 0)]] == list(range(50))
