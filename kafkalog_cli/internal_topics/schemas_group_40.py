"""``__consumer_offsets`` share-group records of Kafka 4.0 whose layout 4.1 changed in value version 0.

Generated from Apache Kafka's message JSON schemas at commit 1eb7644349cb07139d6a3c1ad1986979647cac99
(restated as data; regenerate rather than hand-edit when Kafka adds a field)."""

from __future__ import annotations

from kafkalog_cli.format.flexible import Field
from kafkalog_cli.internal_topics.schema import Message

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

MESSAGES = [ShareGroupStatePartitionMetadataValue]
