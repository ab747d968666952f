"""kafka-python as an independent decoder (tests only): batches and records of a segment as plain tuples."""

from __future__ import annotations

from kafka.record import MemoryRecords


def oracle_entries(data: bytes) -> list[dict]:
    """Every entry kafka-python finds in ``data``, with its records (it stops at a truncated tail, like Kafka)."""
    out = []
    mr = MemoryRecords(data)
    while True:
        b = mr.next_batch()
        if b is None:
            break
        recs = []
        for r in b:
            recs.append(
                {
                    "offset": r.offset,
                    "timestamp": r.timestamp,
                    "key": r.key,
                    "value": r.value,
                    "headers": [(k, v) for k, v in getattr(r, "headers", [])],
                }
            )
        entry = {"magic": b.magic, "records": recs}
        if b.magic >= 2:
            entry.update(
                base_offset=b.base_offset,
                last_offset_delta=b.last_offset_delta,
                producer_id=b.producer_id,
                producer_epoch=b.producer_epoch,
                base_sequence=b.base_sequence,
                leader_epoch=b.leader_epoch,
                max_timestamp=b.max_timestamp,
                crc=b.crc,
                records_count=b.records_count,
                is_transactional=b.is_transactional,
                is_control=b.is_control_batch,
                codec=b.compression_type,
                timestamp_type=b.timestamp_type,
            )
        out.append(entry)
    return out
