"""broker/producer_state_manager.py: one producer-state model (ProducerStateEntry, ProducerState,
ProducerStateManager) for the loader, truncate-to-epoch, salvage, rebuild-txnindex, compact and explain."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from kafkalog_cli.broker import loader, repair_view
from kafkalog_cli.broker import producer_state_manager as pst
from kafkalog_cli.format.control import ABORT, COMMIT
from kafkalog_cli.storage.companions import ProducerEntry


def _batch(base: int, last: int, *, pid: int = 7, epoch: int = 0, txn: bool = False, control: bool = False) -> Any:
    return SimpleNamespace(producer_id=pid, producer_epoch=epoch, base_offset=base, last_offset=last,
                           last_sequence=last - base, max_timestamp=1000 + base, is_transactional=txn,
                           is_control=control, records_count=last - base + 1)


def _info(b: Any, ctype: int | None = None) -> pst.BatchInfo:
    return pst.BatchInfo(0, 0, b.base_offset, b.last_offset, b.records_count, b.producer_id, b.producer_epoch,
                         b.last_sequence, b.max_timestamp, 0, b.is_transactional, b.is_control, ctype, 3, 2000)


def test_repair_replay_and_loader_replay_agree_on_a_transaction() -> None:
    batches = [(_batch(0, 4, txn=True), None), (_batch(5, 5, txn=True, control=True), ABORT),
               (_batch(6, 9), None), (_batch(10, 12, txn=True), None)]
    light: dict[int, pst.ProducerStateEntry] = {}
    for b, ct in batches:
        pst.replay_for_repair(light, b, ct)
    full = pst.ProducerState()
    full.replay(_info(b, ct) for b, ct in batches)
    for e in (light[7], full.producers[7]):
        assert (e.epoch, e.last_data_offset, e.current_txn_first_offset) == (0, 12, 10)


def test_repair_replay_keeps_its_documented_differences() -> None:
    """Pinned so that the move onto one entry type changed nothing compact or explain transactions print."""
    state: dict[int, pst.ProducerStateEntry] = {}
    pst.replay_for_repair(state, _batch(0, 3), None)
    pst.replay_for_repair(state, _batch(4, 4, epoch=1, control=True), None)  # empty control batch, new epoch
    assert (state[7].epoch, state[7].last_data_offset) == (1, -1)
    full = pst.ProducerState()
    full.replay([_info(_batch(0, 3)), _info(_batch(4, 4, epoch=1, control=True), None)])
    assert (full.producers[7].epoch, full.producers[7].last_data_offset) == (0, 3)  # the broker's rule
    pst.replay_for_repair(state, _batch(5, 6, epoch=1, txn=True), None)
    pst.replay_for_repair(state, _batch(7, 7, epoch=1), None)  # not transactional inside a transaction: applied
    assert (state[7].last_data_offset, state[7].current_txn_first_offset) == (7, 5)
    pst.replay_for_repair(state, _batch(8, 8, epoch=1, control=True), COMMIT)
    assert state[7].current_txn_first_offset == -1


def test_snapshot_entries_load_with_their_last_data_offset() -> None:
    got = pst.entries_from_snapshot([ProducerEntry(3, 2, 9, 41, 4, 5000, 1, -1), ProducerEntry(4, 0, -1, -1, 0, 7, -1, 30)])
    assert (got[3].epoch, got[3].last_data_offset, got[3].current_txn_first_offset) == (2, 41, -1)
    assert (got[4].last_data_offset, got[4].current_txn_first_offset) == (-1, 30)
    assert got[3].snapshot_entry() == ProducerEntry(3, 2, 9, 41, 4, 5000, 1, -1)


def test_one_model() -> None:
    assert loader.ProducerStateManager is pst.ProducerStateManager and loader.SnapshotStore is pst.SnapshotStore
    assert not hasattr(repair_view, "ProducerState") and not hasattr(repair_view, "replay_batch")
