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
    since='3.7',
)

# group-coordinator/src/main/resources/common/message/ConsumerGroupCurrentMemberAssignmentValue.json at 6541f94017d844ae7b9656ababf6ce970c802f56
ConsumerGroupCurrentMemberAssignmentValue = Message(
    'ConsumerGroupCurrentMemberAssignmentValue', 8, (0, 0), 0,
    [
        Field('memberEpoch', 'int32'),
        Field('previousMemberEpoch', 'int32'),
        Field('state', 'int8'),
        Field('assignedPartitions', ("array", ("struct", [
            Field('topicId', 'uuid'),
            Field('partitions', ("array", 'int32')),
            Field('assignmentEpochs', ("array", 'int32'), nullable=(0, 32767), tag=0, default=None),
        ]))),
        Field('partitionsPendingRevocation', ("array", ("struct", [
            Field('topicId', 'uuid'),
            Field('partitions', ("array", 'int32')),
            Field('assignmentEpochs', ("array", 'int32'), nullable=(0, 32767), tag=0, default=None),
        ]))),
    ],
    since='3.7',
)

ConsumerGroupMemberMetadataKey = Message(
    'ConsumerGroupMemberMetadataKey', None, (5, 5), None,
    [
        Field('groupId', 'string', versions=(5, 5)),
        Field('memberId', 'string', versions=(5, 5)),
    ],
    since='3.7',
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
    since='3.7',
)

ConsumerGroupMetadataKey = Message(
    'ConsumerGroupMetadataKey', None, (3, 3), None,
    [
        Field('groupId', 'string', versions=(3, 3)),
    ],
    since='3.7',
)

# group-coordinator/src/main/resources/common/message/ConsumerGroupMetadataValue.json at 266ed846e560e96f90575e4bb1a98b6f135177f0
ConsumerGroupMetadataValue = Message(
    'ConsumerGroupMetadataValue', 3, (0, 0), 0,
    [
        Field('epoch', 'int32'),
        Field('metadataHash', 'int64', tag=0, default=0),
        Field('creationTimeMs', 'int64', tag=1, default=-1),
    ],
    since='3.7',
)

ConsumerGroupPartitionMetadataKey = Message(
    'ConsumerGroupPartitionMetadataKey', None, (4, 4), None,
    [
        Field('groupId', 'string', versions=(4, 4)),
    ],
    since='3.7',
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
    since='3.7',
)

# group-coordinator/src/main/resources/common/message/ConsumerGroupRegularExpressionKey.json at 53364c539970785f9317c2ddab26a4e350f12b23
ConsumerGroupRegularExpressionKey = Message(
    'ConsumerGroupRegularExpressionKey', None, (16, 16), None,
    [
        Field('groupId', 'string', versions=(16, 16)),
        Field('regularExpression', 'string', versions=(16, 16)),
    ],
    since='4.0',
)

# group-coordinator/src/main/resources/common/message/ConsumerGroupRegularExpressionValue.json at 53364c539970785f9317c2ddab26a4e350f12b23
ConsumerGroupRegularExpressionValue = Message(
    'ConsumerGroupRegularExpressionValue', None, (0, 0), 0,
    [
        Field('topics', ("array", 'string')),
        Field('version', 'int64'),
        Field('timestamp', 'int64'),
    ],
    since='4.0',
)

ConsumerGroupTargetAssignmentMemberKey = Message(
    'ConsumerGroupTargetAssignmentMemberKey', None, (7, 7), None,
    [
        Field('groupId', 'string', versions=(7, 7)),
        Field('memberId', 'string', versions=(7, 7)),
    ],
    since='3.7',
)

ConsumerGroupTargetAssignmentMemberValue = Message(
    'ConsumerGroupTargetAssignmentMemberValue', None, (0, 0), 0,
    [
        Field('topicPartitions', ("array", ("struct", [
            Field('topicId', 'uuid'),
            Field('partitions', ("array", 'int32')),
        ]))),
    ],
    since='3.7',
)

ConsumerGroupTargetAssignmentMetadataKey = Message(
    'ConsumerGroupTargetAssignmentMetadataKey', None, (6, 6), None,
    [
        Field('groupId', 'string', versions=(6, 6)),
    ],
    since='3.7',
)

ConsumerGroupTargetAssignmentMetadataValue = Message(
    'ConsumerGroupTargetAssignmentMetadataValue', None, (0, 0), 0,
    [
        Field('assignmentEpoch', 'int32'),
    ],
    since='3.7',
)

GroupMetadataKey = Message(
    'GroupMetadataKey', None, (2, 2), None,
    [
        Field('group', 'string', versions=(2, 2)),
    ],
    since='0.9',
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
    since='0.9',
)

OffsetCommitKey = Message(
    'OffsetCommitKey', None, (0, 1), None,
    [
        Field('group', 'string', versions=(0, 1)),
        Field('topic', 'string', versions=(0, 1)),
        Field('partition', 'int32', versions=(0, 1)),
    ],
    since='0.9',
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
    since='0.9',
)

ShareGroupCurrentMemberAssignmentKey = Message(
    'ShareGroupCurrentMemberAssignmentKey', None, (14, 14), None,
    [
        Field('groupId', 'string', versions=(14, 14)),
        Field('memberId', 'string', versions=(14, 14)),
    ],
    since='4.0',
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
    since='4.0',
)

ShareGroupMemberMetadataKey = Message(
    'ShareGroupMemberMetadataKey', None, (10, 10), None,
    [
        Field('groupId', 'string', versions=(10, 10)),
        Field('memberId', 'string', versions=(10, 10)),
    ],
    since='4.0',
)

ShareGroupMemberMetadataValue = Message(
    'ShareGroupMemberMetadataValue', None, (0, 0), 0,
    [
        Field('rackId', 'string', nullable=(0, 32767)),
        Field('clientId', 'string'),
        Field('clientHost', 'string'),
        Field('subscribedTopicNames', ("array", 'string')),
    ],
    since='4.0',
)

ShareGroupMetadataKey = Message(
    'ShareGroupMetadataKey', None, (11, 11), None,
    [
        Field('groupId', 'string', versions=(11, 11)),
    ],
    since='4.0',
)

ShareGroupMetadataValue = Message(
    'ShareGroupMetadataValue', None, (0, 0), 0,
    [
        Field('epoch', 'int32'),
    ],
    since='4.0',
)

ShareGroupPartitionMetadataKey = Message(
    'ShareGroupPartitionMetadataKey', None, (9, 9), None,
    [
        Field('groupId', 'string', versions=(9, 9)),
    ],
    since='4.0',
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
    since='4.0',
)

ShareGroupStatePartitionMetadataKey = Message(
    'ShareGroupStatePartitionMetadataKey', None, (15, 15), None,
    [
        Field('groupId', 'string', versions=(15, 15)),
    ],
    since='4.0',
)

# group-coordinator/src/main/resources/common/message/ShareGroupStatePartitionMetadataValue.json at 25002b6a64b07c60e5777685732620ad6df6bbd5
ShareGroupStatePartitionMetadataValue = Message(
    'ShareGroupStatePartitionMetadataValue', 15, (0, 0), 0,
    [
        Field('initializingTopics', ("array", ("struct", [
            Field('topicId', 'uuid'),
            Field('topicName', 'string'),
            Field('partitions', ("array", 'int32')),
            Field('createTimestamp', 'int64'),
        ]))),
        Field('initializedTopics', ("array", ("struct", [
            Field('topicId', 'uuid'),
            Field('topicName', 'string'),
            Field('partitions', ("array", 'int32')),
            Field('createTimestamp', 'int64'),
        ]))),
        Field('deletingTopics', ("array", ("struct", [
            Field('topicId', 'uuid'),
            Field('topicName', 'string'),
        ]))),
    ],
    since='4.1',
)

ShareGroupTargetAssignmentMemberKey = Message(
    'ShareGroupTargetAssignmentMemberKey', None, (13, 13), None,
    [
        Field('groupId', 'string', versions=(13, 13)),
        Field('memberId', 'string', versions=(13, 13)),
    ],
    since='4.0',
)

ShareGroupTargetAssignmentMemberValue = Message(
    'ShareGroupTargetAssignmentMemberValue', None, (0, 0), 0,
    [
        Field('topicPartitions', ("array", ("struct", [
            Field('topicId', 'uuid'),
            Field('partitions', ("array", 'int32')),
        ]))),
    ],
    since='4.0',
)

ShareGroupTargetAssignmentMetadataKey = Message(
    'ShareGroupTargetAssignmentMetadataKey', None, (12, 12), None,
    [
        Field('groupId', 'string', versions=(12, 12)),
    ],
    since='4.0',
)

ShareGroupTargetAssignmentMetadataValue = Message(
    'ShareGroupTargetAssignmentMetadataValue', None, (0, 0), 0,
    [
        Field('assignmentEpoch', 'int32'),
    ],
    since='4.0',
)

# group-coordinator/src/main/resources/common/message/StreamsGroupCurrentMemberAssignmentKey.json at 75a150ae8002d03ad7061727797012f3e1f153e3
StreamsGroupCurrentMemberAssignmentKey = Message(
    'StreamsGroupCurrentMemberAssignmentKey', 22, (0, 0), None,
    [
        Field('groupId', 'string', versions=(0, 0)),
        Field('memberId', 'string', versions=(0, 0)),
    ],
    since='4.1',
)

# group-coordinator/src/main/resources/common/message/StreamsGroupCurrentMemberAssignmentValue.json at 5096058a08e6ac2bfb8c1aa2d55c98891ff780aa
StreamsGroupCurrentMemberAssignmentValue = Message(
    'StreamsGroupCurrentMemberAssignmentValue', None, (0, 0), 0,
    [
        Field('memberEpoch', 'int32'),
        Field('previousMemberEpoch', 'int32'),
        Field('state', 'int8'),
        Field('activeTasks', ("array", ("struct", [
            Field('subtopologyId', 'string'),
            Field('partitions', ("array", 'int32')),
        ]))),
        Field('standbyTasks', ("array", ("struct", [
            Field('subtopologyId', 'string'),
            Field('partitions', ("array", 'int32')),
        ]))),
        Field('warmupTasks', ("array", ("struct", [
            Field('subtopologyId', 'string'),
            Field('partitions', ("array", 'int32')),
        ]))),
        Field('activeTasksPendingRevocation', ("array", ("struct", [
            Field('subtopologyId', 'string'),
            Field('partitions', ("array", 'int32')),
        ]))),
        Field('standbyTasksPendingRevocation', ("array", ("struct", [
            Field('subtopologyId', 'string'),
            Field('partitions', ("array", 'int32')),
        ]))),
        Field('warmupTasksPendingRevocation', ("array", ("struct", [
            Field('subtopologyId', 'string'),
            Field('partitions', ("array", 'int32')),
        ]))),
    ],
    since='4.1',
)

# group-coordinator/src/main/resources/common/message/StreamsGroupMemberMetadataKey.json at 7e11ea85e0c7aafa334fe9bebfc278c88c0ae5ad
StreamsGroupMemberMetadataKey = Message(
    'StreamsGroupMemberMetadataKey', 19, (0, 0), None,
    [
        Field('groupId', 'string', versions=(0, 0)),
        Field('memberId', 'string', versions=(0, 0)),
    ],
    since='4.1',
)

# group-coordinator/src/main/resources/common/message/StreamsGroupMemberMetadataValue.json at 59bf751f9dc2e78a84a66940ec836457447b8db0
StreamsGroupMemberMetadataValue = Message(
    'StreamsGroupMemberMetadataValue', None, (0, 0), 0,
    [
        Field('instanceId', 'string', nullable=(0, 32767)),
        Field('rackId', 'string', nullable=(0, 32767)),
        Field('clientId', 'string'),
        Field('clientHost', 'string'),
        Field('rebalanceTimeoutMs', 'int32'),
        Field('topologyEpoch', 'int32'),
        Field('processId', 'string'),
        Field('userEndpoint', ("struct", [
            Field('host', 'string'),
            Field('port', 'uint16'),
        ]), nullable=(0, 32767)),
        Field('clientTags', ("array", ("struct", [
            Field('key', 'string'),
            Field('value', 'string'),
        ]))),
    ],
    since='4.1',
)

# group-coordinator/src/main/resources/common/message/StreamsGroupMetadataKey.json at c940dbbffeb76d0333c84531b442e92181dd7717
StreamsGroupMetadataKey = Message(
    'StreamsGroupMetadataKey', 17, (0, 0), None,
    [
        Field('groupId', 'string', versions=(0, 0)),
    ],
    since='4.1',
)

# group-coordinator/src/main/resources/common/message/StreamsGroupMetadataValue.json at 1291a9305c6cbb5e25c0349eea3aa2cfbde1c5fe
StreamsGroupMetadataValue = Message(
    'StreamsGroupMetadataValue', 17, (0, 0), 0,
    [
        Field('epoch', 'int32'),
        Field('metadataHash', 'int64'),
        Field('validatedTopologyEpoch', 'int32', tag=0, default=-1),
        Field('assignmentConfigs', ("array", ("struct", [
            Field('key', 'string'),
            Field('value', 'string'),
        ]))),
    ],
    since='4.1',
)

# group-coordinator/src/main/resources/common/message/StreamsGroupPartitionMetadataKey.json at 59bf751f9dc2e78a84a66940ec836457447b8db0
StreamsGroupPartitionMetadataKey = Message(
    'StreamsGroupPartitionMetadataKey', None, (18, 18), None,
    [
        Field('groupId', 'string', versions=(18, 18)),
    ],
    since='4.1',
)

# group-coordinator/src/main/resources/common/message/StreamsGroupPartitionMetadataValue.json at 44e616aa774b73381b8238059d2b091238c2df4e
StreamsGroupPartitionMetadataValue = Message(
    'StreamsGroupPartitionMetadataValue', None, (0, 0), 0,
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
    since='4.1',
)

# group-coordinator/src/main/resources/common/message/StreamsGroupTargetAssignmentMemberKey.json at b617af2a892fd306b52c6348cb4482507a6c7d10
StreamsGroupTargetAssignmentMemberKey = Message(
    'StreamsGroupTargetAssignmentMemberKey', 21, (0, 0), None,
    [
        Field('groupId', 'string', versions=(0, 0)),
        Field('memberId', 'string', versions=(0, 0)),
    ],
    since='4.1',
)

# group-coordinator/src/main/resources/common/message/StreamsGroupTargetAssignmentMemberValue.json at 75a150ae8002d03ad7061727797012f3e1f153e3
StreamsGroupTargetAssignmentMemberValue = Message(
    'StreamsGroupTargetAssignmentMemberValue', 21, (0, 0), 0,
    [
        Field('activeTasks', ("array", ("struct", [
            Field('subtopologyId', 'string'),
            Field('partitions', ("array", 'int32')),
        ]))),
        Field('standbyTasks', ("array", ("struct", [
            Field('subtopologyId', 'string'),
            Field('partitions', ("array", 'int32')),
        ]))),
        Field('warmupTasks', ("array", ("struct", [
            Field('subtopologyId', 'string'),
            Field('partitions', ("array", 'int32')),
        ]))),
    ],
    since='4.1',
)

# group-coordinator/src/main/resources/common/message/StreamsGroupTargetAssignmentMetadataKey.json at 59bf751f9dc2e78a84a66940ec836457447b8db0
StreamsGroupTargetAssignmentMetadataKey = Message(
    'StreamsGroupTargetAssignmentMetadataKey', None, (20, 20), None,
    [
        Field('groupId', 'string', versions=(20, 20)),
    ],
    since='4.1',
)

# group-coordinator/src/main/resources/common/message/StreamsGroupTargetAssignmentMetadataValue.json at 5c1644fc05a8ef4b56b72b01d622e94b8298ac3e
StreamsGroupTargetAssignmentMetadataValue = Message(
    'StreamsGroupTargetAssignmentMetadataValue', 20, (0, 0), 0,
    [
        Field('assignmentEpoch', 'int32'),
    ],
    since='4.1',
)

# group-coordinator/src/main/resources/common/message/StreamsGroupTargetAssignmentResolvedTopicIdsKey.json at 14440d21214cd060d08774b4c190fff6dea0efee
StreamsGroupTargetAssignmentResolvedTopicIdsKey = Message(
    'StreamsGroupTargetAssignmentResolvedTopicIdsKey', 24, (0, 0), None,
    [
        Field('groupId', 'string', versions=(0, 0)),
    ],
)

# group-coordinator/src/main/resources/common/message/StreamsGroupTargetAssignmentResolvedTopicIdsValue.json at 14440d21214cd060d08774b4c190fff6dea0efee
StreamsGroupTargetAssignmentResolvedTopicIdsValue = Message(
    'StreamsGroupTargetAssignmentResolvedTopicIdsValue', 24, (0, 0), 0,
    [
        Field('assignmentEpoch', 'int32'),
        Field('resolvedTopicIdsBySubtopology', ("array", ("struct", [
            Field('subtopologyId', 'string'),
            Field('topicIds', ("array", 'uuid')),
        ]))),
    ],
)

# group-coordinator/src/main/resources/common/message/StreamsGroupTopologyKey.json at 59bf751f9dc2e78a84a66940ec836457447b8db0
StreamsGroupTopologyKey = Message(
    'StreamsGroupTopologyKey', None, (23, 23), None,
    [
        Field('groupId', 'string', versions=(23, 23)),
    ],
    since='4.1',
)

# group-coordinator/src/main/resources/common/message/StreamsGroupTopologyValue.json at 59bf751f9dc2e78a84a66940ec836457447b8db0
StreamsGroupTopologyValue = Message(
    'StreamsGroupTopologyValue', None, (0, 0), 0,
    [
        Field('epoch', 'int32'),
        Field('subtopologies', ("array", ("struct", [
            Field('subtopologyId', 'string'),
            Field('sourceTopics', ("array", 'string')),
            Field('sourceTopicRegex', ("array", 'string')),
            Field('stateChangelogTopics', ("array", ("struct", [
                Field('name', 'string'),
                Field('partitions', 'int32'),
                Field('replicationFactor', 'int16'),
                Field('topicConfigs', ("array", ("struct", [
                    Field('key', 'string'),
                    Field('value', 'string'),
                ]))),
            ]))),
            Field('repartitionSinkTopics', ("array", 'string')),
            Field('repartitionSourceTopics', ("array", ("struct", [
                Field('name', 'string'),
                Field('partitions', 'int32'),
                Field('replicationFactor', 'int16'),
                Field('topicConfigs', ("array", ("struct", [
                    Field('key', 'string'),
                    Field('value', 'string'),
                ]))),
            ]))),
            Field('copartitionGroups', ("array", ("struct", [
                Field('sourceTopics', ("array", 'int16')),
                Field('sourceTopicRegex', ("array", 'int16')),
                Field('repartitionSourceTopics', ("array", 'int16')),
            ]))),
        ]))),
    ],
    since='4.1',
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

MESSAGES = [ConsumerGroupCurrentMemberAssignmentKey, ConsumerGroupCurrentMemberAssignmentValue, ConsumerGroupMemberMetadataKey, ConsumerGroupMemberMetadataValue, ConsumerGroupMetadataKey, ConsumerGroupMetadataValue, ConsumerGroupPartitionMetadataKey, ConsumerGroupPartitionMetadataValue, ConsumerGroupRegularExpressionKey, ConsumerGroupRegularExpressionValue, ConsumerGroupTargetAssignmentMemberKey, ConsumerGroupTargetAssignmentMemberValue, ConsumerGroupTargetAssignmentMetadataKey, ConsumerGroupTargetAssignmentMetadataValue, GroupMetadataKey, GroupMetadataValue, OffsetCommitKey, OffsetCommitValue, ShareGroupCurrentMemberAssignmentKey, ShareGroupCurrentMemberAssignmentValue, ShareGroupMemberMetadataKey, ShareGroupMemberMetadataValue, ShareGroupMetadataKey, ShareGroupMetadataValue, ShareGroupPartitionMetadataKey, ShareGroupPartitionMetadataValue, ShareGroupStatePartitionMetadataKey, ShareGroupStatePartitionMetadataValue, ShareGroupTargetAssignmentMemberKey, ShareGroupTargetAssignmentMemberValue, ShareGroupTargetAssignmentMetadataKey, ShareGroupTargetAssignmentMetadataValue, StreamsGroupCurrentMemberAssignmentKey, StreamsGroupCurrentMemberAssignmentValue, StreamsGroupMemberMetadataKey, StreamsGroupMemberMetadataValue, StreamsGroupMetadataKey, StreamsGroupMetadataValue, StreamsGroupPartitionMetadataKey, StreamsGroupPartitionMetadataValue, StreamsGroupTargetAssignmentMemberKey, StreamsGroupTargetAssignmentMemberValue, StreamsGroupTargetAssignmentMetadataKey, StreamsGroupTargetAssignmentMetadataValue, StreamsGroupTargetAssignmentResolvedTopicIdsKey, StreamsGroupTargetAssignmentResolvedTopicIdsValue, StreamsGroupTopologyKey, StreamsGroupTopologyValue, ConsumerProtocolSubscription, ConsumerProtocolAssignment]
