"""``__share_group_state`` record schemas of Kafka 4.0 (the layouts before PR #19432 / #20016).

Generated from Apache Kafka's message JSON schemas at commit 1eb7644349cb07139d6a3c1ad1986979647cac99
(restated as data; regenerate rather than hand-edit when Kafka adds a field)."""

from __future__ import annotations

from kafkalog_cli.format.flexible import Field
from kafkalog_cli.internal_topics.schema import Message

ShareSnapshotKey = Message(
    'ShareSnapshotKey', None, (0, 0), None,
    [
        Field('groupId', 'string', versions=(0, 0)),
        Field('topicId', 'uuid', versions=(0, 0)),
        Field('partition', 'int32', versions=(0, 0)),
    ],
)

ShareSnapshotValue = Message(
    'ShareSnapshotValue', None, (0, 0), 0,
    [
        Field('snapshotEpoch', 'uint16', versions=(0, 0)),
        Field('stateEpoch', 'int32'),
        Field('leaderEpoch', 'int32'),
        Field('startOffset', 'int64', versions=(0, 0)),
        Field('stateBatches', ("array", ("struct", [
            Field('firstOffset', 'int64', versions=(0, 0)),
            Field('lastOffset', 'int64', versions=(0, 0)),
            Field('deliveryState', 'int8', versions=(0, 0)),
            Field('deliveryCount', 'int16', versions=(0, 0)),
        ])), versions=(0, 0)),
    ],
)

ShareUpdateKey = Message(
    'ShareUpdateKey', None, (1, 1), None,
    [
        Field('groupId', 'string', versions=(1, 1)),
        Field('topicId', 'uuid', versions=(1, 1)),
        Field('partition', 'int32', versions=(1, 1)),
    ],
)

ShareUpdateValue = Message(
    'ShareUpdateValue', None, (0, 0), 0,
    [
        Field('snapshotEpoch', 'uint16', versions=(0, 0)),
        Field('leaderEpoch', 'int32'),
        Field('startOffset', 'int64', versions=(0, 0)),
        Field('stateBatches', ("array", ("struct", [
            Field('firstOffset', 'int64', versions=(0, 0)),
            Field('lastOffset', 'int64', versions=(0, 0)),
            Field('deliveryState', 'int8', versions=(0, 0)),
            Field('deliveryCount', 'int16', versions=(0, 0)),
        ])), versions=(0, 0)),
    ],
)

MESSAGES = [ShareSnapshotKey, ShareSnapshotValue, ShareUpdateKey, ShareUpdateValue]
