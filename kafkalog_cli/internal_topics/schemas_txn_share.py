"""``__transaction_state`` and ``__share_group_state`` record schemas.

Generated from Apache Kafka's message JSON schemas at commit 1eb7644349cb07139d6a3c1ad1986979647cac99
(restated as data; regenerate rather than hand-edit when Kafka adds a field)."""

from __future__ import annotations

from kafkalog_cli.format.flexible import Field
from kafkalog_cli.internal_topics.schema import Message

TransactionLogKey = Message(
    'TransactionLogKey', None, (0, 0), None,
    [
        Field('transactionalId', 'string', versions=(0, 0)),
    ],
    since='0.11',
)

TransactionLogValue = Message(
    'TransactionLogValue', None, (0, 1), 1,
    [
        Field('producerId', 'int64'),
        Field('previousProducerId', 'int64', versions=(1, 32767), tag=0, default=-1),
        Field('nextProducerId', 'int64', versions=(1, 32767), tag=1, default=-1),
        Field('producerEpoch', 'int16'),
        Field('transactionTimeoutMs', 'int32'),
        Field('transactionStatus', 'int8'),
        Field('transactionPartitions', ("array", ("struct", [
            Field('topic', 'string'),
            Field('partitionIds', ("array", 'int32')),
        ])), nullable=(0, 32767)),
        Field('transactionLastUpdateTimestampMs', 'int64'),
        Field('transactionStartTimestampMs', 'int64'),
        Field('clientTransactionVersion', 'int16', versions=(1, 32767), tag=2, default=0),
    ],
    since='0.11',
)

ShareSnapshotKey = Message(
    'ShareSnapshotKey', None, (0, 0), None,
    [
        Field('groupId', 'string', versions=(0, 0)),
        Field('topicId', 'uuid', versions=(0, 0)),
        Field('partition', 'int32', versions=(0, 0)),
    ],
    since='4.0',
)

# share-coordinator/src/main/resources/common/message/ShareSnapshotValue.json restated (no stored copy of the released file; scripts/kafka_schema_overlay.json)
ShareSnapshotValue = Message(
    'ShareSnapshotValue', 0, (0, 0), 0,
    [
        Field('snapshotEpoch', 'int32'),
        Field('stateEpoch', 'int32'),
        Field('leaderEpoch', 'int32'),
        Field('startOffset', 'int64'),
        Field('createTimestamp', 'int64'),
        Field('writeTimestamp', 'int64'),
        Field('stateBatches', ("array", ("struct", [
            Field('firstOffset', 'int64'),
            Field('lastOffset', 'int64'),
            Field('deliveryState', 'int8'),
            Field('deliveryCount', 'int16'),
        ]))),
    ],
    since='4.1',
)

ShareUpdateKey = Message(
    'ShareUpdateKey', None, (1, 1), None,
    [
        Field('groupId', 'string', versions=(1, 1)),
        Field('topicId', 'uuid', versions=(1, 1)),
        Field('partition', 'int32', versions=(1, 1)),
    ],
    since='4.0',
)

# share-coordinator/src/main/resources/common/message/ShareUpdateValue.json restated (no stored copy of the released file; scripts/kafka_schema_overlay.json)
ShareUpdateValue = Message(
    'ShareUpdateValue', 1, (0, 0), 0,
    [
        Field('snapshotEpoch', 'int32'),
        Field('leaderEpoch', 'int32'),
        Field('startOffset', 'int64'),
        Field('stateBatches', ("array", ("struct", [
            Field('firstOffset', 'int64'),
            Field('lastOffset', 'int64'),
            Field('deliveryState', 'int8'),
            Field('deliveryCount', 'int16'),
        ]))),
    ],
    since='4.1',
)

MESSAGES = [TransactionLogKey, TransactionLogValue, ShareSnapshotKey, ShareSnapshotValue, ShareUpdateKey, ShareUpdateValue]
