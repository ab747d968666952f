"""``__remote_log_metadata`` record schemas (TopicBasedRemoteLogMetadataManager).

Generated from Apache Kafka's message JSON schemas at commit 1eb7644349cb07139d6a3c1ad1986979647cac99
(restated as data; regenerate rather than hand-edit when Kafka adds a field)."""

from __future__ import annotations

from kafkalog_cli.format.flexible import Field
from kafkalog_cli.internal_topics.schema import Message

RemoteLogSegmentMetadataRecord = Message(
    'RemoteLogSegmentMetadataRecord', 0, (0, 0), 0,
    [
        Field('remoteLogSegmentId', ("struct", [
            Field('topicIdPartition', ("struct", [
                Field('name', 'string'),
                Field('id', 'uuid'),
                Field('partition', 'int32'),
            ])),
            Field('id', 'uuid'),
        ])),
        Field('startOffset', 'int64'),
        Field('endOffset', 'int64'),
        Field('brokerId', 'int32'),
        Field('maxTimestampMs', 'int64'),
        Field('eventTimestampMs', 'int64'),
        Field('segmentLeaderEpochs', ("array", ("struct", [
            Field('leaderEpoch', 'int32'),
            Field('offset', 'int64'),
        ]))),
        Field('segmentSizeInBytes', 'int32'),
        Field('customMetadata', 'bytes', nullable=(0, 32767)),
        Field('remoteLogSegmentState', 'int8'),
    ],
)

RemoteLogSegmentMetadataSnapshotRecord = Message(
    'RemoteLogSegmentMetadataSnapshotRecord', 3, (0, 0), 0,
    [
        Field('segmentId', 'uuid'),
        Field('startOffset', 'int64'),
        Field('endOffset', 'int64'),
        Field('brokerId', 'int32'),
        Field('maxTimestampMs', 'int64'),
        Field('eventTimestampMs', 'int64'),
        Field('segmentLeaderEpochs', ("array", ("struct", [
            Field('leaderEpoch', 'int32'),
            Field('offset', 'int64'),
        ]))),
        Field('segmentSizeInBytes', 'int32'),
        Field('customMetadata', 'bytes', nullable=(0, 32767)),
        Field('remoteLogSegmentState', 'int8'),
    ],
)

RemoteLogSegmentMetadataUpdateRecord = Message(
    'RemoteLogSegmentMetadataUpdateRecord', 1, (0, 0), 0,
    [
        Field('remoteLogSegmentId', ("struct", [
            Field('topicIdPartition', ("struct", [
                Field('name', 'string'),
                Field('id', 'uuid'),
                Field('partition', 'int32'),
            ])),
            Field('id', 'uuid'),
        ])),
        Field('brokerId', 'int32'),
        Field('eventTimestampMs', 'int64'),
        Field('customMetadata', 'bytes', nullable=(0, 32767)),
        Field('remoteLogSegmentState', 'int8'),
    ],
)

RemotePartitionDeleteMetadataRecord = Message(
    'RemotePartitionDeleteMetadataRecord', 2, (0, 0), 0,
    [
        Field('topicIdPartition', ("struct", [
            Field('name', 'string'),
            Field('id', 'uuid'),
            Field('partition', 'int32'),
        ])),
        Field('brokerId', 'int32'),
        Field('eventTimestampMs', 'int64'),
        Field('remotePartitionDeleteState', 'int8'),
    ],
)

MESSAGES = [RemoteLogSegmentMetadataRecord, RemoteLogSegmentMetadataSnapshotRecord, RemoteLogSegmentMetadataUpdateRecord, RemotePartitionDeleteMetadataRecord]
