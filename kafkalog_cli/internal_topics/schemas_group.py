"""``__consumer_offsets`` record schemas (group coordinator keys/values) and the consumer embedded protocol.

Generated from Apache Kafka's message JSON schemas at commit 1eb7644349cb07139d6a3c1ad1986979647cac99
(restated as data; regenerate rather than hand-edit when Kafka adds a field)."""

from __future__ import annotations

from kafkalog_cli.format.flexible import Field
from kafkalog_cli.internal_topics.schema import Message

ConsumerGroupCurrentMemberAssignmentKey = Message(
    'ConsumerGroupCurrentMemberAssignmentKey', None, (8, 8), None,
    [
        Field('groupId', 'string', versions=(8, 8)),
        Field('memberId', 'string', versions=(8, 8)),
    ],
)

ConsumerGroupCurrentMemberAssignmentValue = Message(
    'ConsumerGroupCurrentMemberAssignmentValue', None, (0, 0), 0,
    [
        Field('memberEpoch', 'int32'),
        Field('previousMemberEpoch', 'int32'),
        Field('state', 'int8'),
        Field('assignedPartitions', ("array", ("struct", [
            Field('topicId', 'uuid'),
            Field('partitions', ("array", 'int32')),
        ]))),
        Field('partitionsPendingRevocation', ("array", ("struct", [
            Field('topicId', 'uuid'),
            Field('partitions', ("array", 'int32')),
        ]))),
    ],
)

ConsumerGroupMemberMetadataKey = Message(
    'ConsumerGroupMemberMetadataKey', None, (5, 5), None,
    [
        Field('groupId', 'string', versions=(5, 5)),
        Field('memberId', 'string', versions=(5, 5)),
    ],
)

ConsumerGroupMemberMetadataValue = Message(
    'ConsumerGroupMemberMetadataValue', None, (0, 0), 0,
    [
        Field('instanceId', 'string', nullable=(0, 32767)),
        Field('rackId', 'string', nullable=(0, 32767)),
        Field('clientId', 'string'),
        Field('clientHost', 'string'),
        Field('subscribedTopicNames', ("array", 'string')),
        Field('subscribedTopicRegex', 'string', nullable=(0, 32767)),
        Field('rebalanceTimeoutMs', 'int32'),
        Field('serverAssignor', 'string', nullable=(0, 32767)),
        Field('classicMemberMetadata', ("struct", [
            Field('sessionTimeoutMs', 'int32'),
            Field('supportedProtocols', ("array", ("struct", [
                Field('name', 'string'),
                Field('metadata', 'bytes'),
            ]))),
        ]), nullable=(0, 32767), tag=0, default=None),
    ],
)

ConsumerGroupMetadataKey = Message(
    'ConsumerGroupMetadataKey', None, (3, 3), None,
    [
        Field('groupId', 'string', versions=(3, 3)),
    ],
)

ConsumerGroupMetadataValue = Message(
    'ConsumerGroupMetadataValue', None, (0, 0), 0,
    [
        Field('epoch', 'int32'),
    ],
)

ConsumerGroupPartitionMetadataKey = Message(
    'ConsumerGroupPartitionMetadataKey', None, (4, 4), None,
    [
        Field('groupId', 'string', versions=(4, 4)),
    ],
)

ConsumerGroupPartitionMetadataValue = Message(
    'ConsumerGroupPartitionMetadataValue', None, (0, 0), 0,
    [
        Field('topics', ("array", ("struct", [
            Field('topicId', 'uuid'),
            Field('topicName', 'string'),
            Field('numPartitions', 'int32'),
            Field('partitionMetadata', ("array", ("struct", [
                Field('partition', 'int32'),
                Field('racks', ("array", 'string')),
            ]))),
        ]))),
    ],
)

ConsumerGroupTargetAssignmentMemberKey = Message(
    'ConsumerGroupTargetAssignmentMemberKey', None, (7, 7), None,
    [
        Field('groupId', 'string', versions=(7, 7)),
        Field('memberId', 'string', versions=(7, 7)),
    ],
)

ConsumerGroupTargetAssignmentMemberValue = Message(
    'ConsumerGroupTargetAssignmentMemberValue', None, (0, 0), 0,
    [
        Field('topicPartitions', ("array", ("struct", [
            Field('topicId', 'uuid'),
            Field('partitions', ("array", 'int32')),
        ]))),
    ],
)

ConsumerGroupTargetAssignmentMetadataKey = Message(
    'ConsumerGroupTargetAssignmentMetadataKey', None, (6, 6), None,
    [
        Field('groupId', 'string', versions=(6, 6)),
    ],
)

ConsumerGroupTargetAssignmentMetadataValue = Message(
    'ConsumerGroupTargetAssignmentMetadataValue', None, (0, 0), 0,
    [
        Field('assignmentEpoch', 'int32'),
    ],
)

GroupMetadataKey = Message(
    'GroupMetadataKey', None, (2, 2), None,
    [
        Field('group', 'string', versions=(2, 2)),
    ],
)

GroupMetadataValue = Message(
    'GroupMetadataValue', None, (0, 4), 4,
    [
        Field('protocolType', 'string'),
        Field('generation', 'int32'),
        Field('protocol', 'string', nullable=(0, 32767)),
        Field('leader', 'string', nullable=(0, 32767)),
        Field('currentStateTimestamp', 'int64', versions=(2, 32767)),
        Field('members', ("array", ("struct", [
            Field('memberId', 'string'),
            Field('groupInstanceId', 'string', versions=(3, 32767), nullable=(3, 32767)),
            Field('clientId', 'string'),
            Field('clientHost', 'string'),
            Field('rebalanceTimeout', 'int32', versions=(1, 32767)),
            Field('sessionTimeout', 'int32'),
            Field('subscription', 'bytes'),
            Field('assignment', 'bytes'),
        ]))),
    ],
)

OffsetCommitKey = Message(
    'OffsetCommitKey', None, (0, 1), None,
    [
        Field('group', 'string', versions=(0, 1)),
        Field('topic', 'string', versions=(0, 1)),
        Field('partition', 'int32', versions=(0, 1)),
    ],
)

OffsetCommitValue = Message(
    'OffsetCommitValue', None, (0, 4), 4,
    [
        Field('offset', 'int64'),
        Field('leaderEpoch', 'int32', versions=(3, 32767)),
        Field('metadata', 'string'),
        Field('commitTimestamp', 'int64'),
        Field('expireTimestamp', 'int64', versions=(1, 1)),
    ],
)

ShareGroupCurrentMemberAssignmentKey = Message(
    'ShareGroupCurrentMemberAssignmentKey', None, (14, 14), None,
    [
        Field('groupId', 'string', versions=(14, 14)),
        Field('memberId', 'string', versions=(14, 14)),
    ],
)

ShareGroupCurrentMemberAssignmentValue = Message(
    'ShareGroupCurrentMemberAssignmentValue', None, (0, 0), 0,
    [
        Field('memberEpoch', 'int32'),
        Field('previousMemberEpoch', 'int32'),
        Field('state', 'int8'),
        Field('assignedPartitions', ("array", ("struct", [
            Field('topicId', 'uuid'),
            Field('partitions', ("array", 'int32')),
        ]))),
    ],
)

ShareGroupMemberMetadataKey = Message(
    'ShareGroupMemberMetadataKey', None, (10, 10), None,
    [
        Field('groupId', 'string', versions=(10, 10)),
        Field('memberId', 'string', versions=(10, 10)),
    ],
)

ShareGroupMemberMetadataValue = Message(
    'ShareGroupMemberMetadataValue', None, (0, 0), 0,
    [
        Field('rackId', 'string', nullable=(0, 32767)),
        Field('clientId', 'string'),
        Field('clientHost', 'string'),
        Field('subscribedTopicNames', ("array", 'string')),
    ],
)

ShareGroupMetadataKey = Message(
    'ShareGroupMetadataKey', None, (11, 11), None,
    [
        Field('groupId', 'string', versions=(11, 11)),
    ],
)

ShareGroupMetadataValue = Message(
    'ShareGroupMetadataValue', None, (0, 0), 0,
    [
        Field('epoch', 'int32'),
    ],
)

ShareGroupPartitionMetadataKey = Message(
    'ShareGroupPartitionMetadataKey', None, (9, 9), None,
    [
        Field('groupId', 'string', versions=(9, 9)),
    ],
)

ShareGroupPartitionMetadataValue = Message(
    'ShareGroupPartitionMetadataValue', None, (0, 0), 0,
    [
        Field('topics', ("array", ("struct", [
            Field('topicId', 'uuid'),
            Field('topicName', 'string'),
            Field('numPartitions', 'int32'),
            Field('partitionMetadata', ("array", ("struct", [
                Field('partition', 'int32'),
                Field('racks', ("array", 'string')),
            ]))),
        ]))),
    ],
)

ShareGroupStatePartitionMetadataKey = Message(
    'ShareGroupStatePartitionMetadataKey', None, (15, 15), None,
    [
        Field('groupId', 'string', versions=(15, 15)),
    ],
)

ShareGroupStatePartitionMetadataValue = Message(
    'ShareGroupStatePartitionMetadataValue', None, (0, 0), 0,
    [
        Field('initializedTopics', ("array", ("struct", [
            Field('topicId', 'uuid'),
            Field('topicName', 'string'),
            Field('partitions', ("array", 'int32')),
        ]))),
        Field('deletingTopics', ("array", ("struct", [
            Field('topicId', 'uuid'),
            Field('topicName', 'string'),
        ]))),
    ],
)

ShareGroupTargetAssignmentMemberKey = Message(
    'ShareGroupTargetAssignmentMemberKey', None, (13, 13), None,
    [
        Field('groupId', 'string', versions=(13, 13)),
        Field('memberId', 'string', versions=(13, 13)),
    ],
)

ShareGroupTargetAssignmentMemberValue = Message(
    'ShareGroupTargetAssignmentMemberValue', None, (0, 0), 0,
    [
        Field('topicPartitions', ("array", ("struct", [
            Field('topicId', 'uuid'),
            Field('partitions', ("array", 'int32')),
        ]))),
    ],
)

ShareGroupTargetAssignmentMetadataKey = Message(
    'ShareGroupTargetAssignmentMetadataKey', None, (12, 12), None,
    [
        Field('groupId', 'string', versions=(12, 12)),
    ],
)

ShareGroupTargetAssignmentMetadataValue = Message(
    'ShareGroupTargetAssignmentMetadataValue', None, (0, 0), 0,
    [
        Field('assignmentEpoch', 'int32'),
    ],
)

ConsumerProtocolSubscription = Message(
    'ConsumerProtocolSubscription', None, (0, 3), None,
    [
        Field('topics', ("array", 'string')),
        Field('userData', 'bytes', nullable=(0, 32767)),
        Field('ownedPartitions', ("array", ("struct", [
            Field('topic', 'string', versions=(1, 32767)),
            Field('partitions', ("array", 'int32'), versions=(1, 32767)),
        ])), versions=(1, 32767)),
        Field('generationId', 'int32', versions=(2, 32767)),
        Field('rackId', 'string', versions=(3, 32767), nullable=(3, 32767)),
    ],
)

ConsumerProtocolAssignment = Message(
    'ConsumerProtocolAssignment', None, (0, 3), None,
    [
        Field('assignedPartitions', ("array", ("struct", [
            Field('topic', 'string'),
            Field('partitions', ("array", 'int32')),
        ]))),
        Field('userData', 'bytes', nullable=(0, 32767)),
    ],
)

MESSAGES = [ConsumerGroupCurrentMemberAssignmentKey, ConsumerGroupCurrentMemberAssignmentValue, ConsumerGroupMemberMetadataKey, ConsumerGroupMemberMetadataValue, ConsumerGroupMetadataKey, ConsumerGroupMetadataValue, ConsumerGroupPartitionMetadataKey, ConsumerGroupPartitionMetadataValue, ConsumerGroupTargetAssignmentMemberKey, ConsumerGroupTargetAssignmentMemberValue, ConsumerGroupTargetAssignmentMetadataKey, ConsumerGroupTargetAssignmentMetadataValue, GroupMetadataKey, GroupMetadataValue, OffsetCommitKey, OffsetCommitValue, ShareGroupCurrentMemberAssignmentKey, ShareGroupCurrentMemberAssignmentValue, ShareGroupMemberMetadataKey, ShareGroupMemberMetadataValue, ShareGroupMetadataKey, ShareGroupMetadataValue, ShareGroupPartitionMetadataKey, ShareGroupPartitionMetadataValue, ShareGroupStatePartitionMetadataKey, ShareGroupStatePartitionMetadataValue, ShareGroupTargetAssignmentMemberKey, ShareGroupTargetAssignmentMemberValue, ShareGroupTargetAssignmentMetadataKey, ShareGroupTargetAssignmentMetadataValue, ConsumerProtocolSubscription, ConsumerProtocolAssignment]
