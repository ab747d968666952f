"""KRaft ``__cluster_metadata`` record schemas (MetadataRecordType), one ``Message`` per apiKey.

Generated from Apache Kafka's message JSON schemas at commit 1eb7644349cb07139d6a3c1ad1986979647cac99
(restated as data; regenerate rather than hand-edit when Kafka adds a field)."""

from __future__ import annotations

from kafkalog_cli.format.flexible import Field
from kafkalog_cli.internal_topics.schema import Message

AbortTransactionRecord = Message(
    'AbortTransactionRecord', 25, (0, 0), 0,
    [
        Field('reason', 'string', nullable=(0, 32767), tag=0, default=None),
    ],
)

AccessControlEntryRecord = Message(
    'AccessControlEntryRecord', 18, (0, 0), 0,
    [
        Field('id', 'uuid'),
        Field('resourceType', 'int8'),
        Field('resourceName', 'string'),
        Field('patternType', 'int8'),
        Field('principal', 'string'),
        Field('host', 'string'),
        Field('operation', 'int8'),
        Field('permissionType', 'int8'),
    ],
)

BeginTransactionRecord = Message(
    'BeginTransactionRecord', 23, (0, 0), 0,
    [
        Field('name', 'string', nullable=(0, 32767), tag=0, default=None),
    ],
)

BrokerRegistrationChangeRecord = Message(
    'BrokerRegistrationChangeRecord', 17, (0, 2), 0,
    [
        Field('brokerId', 'int32'),
        Field('brokerEpoch', 'int64'),
        Field('fenced', 'int8', tag=0, default=0),
        Field('inControlledShutdown', 'int8', versions=(1, 32767), tag=1, default=0),
        Field('logDirs', ("array", 'uuid'), versions=(2, 32767), tag=2, default=[]),
    ],
)

# metadata/src/main/resources/common/metadata/ClearElrRecord.json at 9e1f0bb07f5d0d8e81360d103868b0333f5c054e
ClearElrRecord = Message(
    'ClearElrRecord', 28, (0, 0), 0,
    [
        Field('topicName', 'string'),
    ],
    since='4.0',
)

ClientQuotaRecord = Message(
    'ClientQuotaRecord', 14, (0, 0), 0,
    [
        Field('entity', ("array", ("struct", [
            Field('entityType', 'string'),
            Field('entityName', 'string', nullable=(0, 32767)),
        ]))),
        Field('key', 'string'),
        Field('value', 'float64'),
        Field('remove', 'bool'),
    ],
)

ConfigRecord = Message(
    'ConfigRecord', 4, (0, 0), 0,
    [
        Field('resourceType', 'int8'),
        Field('resourceName', 'string'),
        Field('name', 'string'),
        Field('value', 'string', nullable=(0, 32767)),
    ],
)

DelegationTokenRecord = Message(
    'DelegationTokenRecord', 10, (0, 0), 0,
    [
        Field('owner', 'string'),
        Field('requester', 'string'),
        Field('renewers', ("array", 'string')),
        Field('issueTimestamp', 'int64'),
        Field('maxTimestamp', 'int64'),
        Field('expirationTimestamp', 'int64'),
        Field('tokenId', 'string'),
    ],
)

EndTransactionRecord = Message(
    'EndTransactionRecord', 24, (0, 0), 0,
    [

    ],
)

FeatureLevelRecord = Message(
    'FeatureLevelRecord', 12, (0, 0), 0,
    [
        Field('name', 'string'),
        Field('featureLevel', 'int16'),
    ],
)

FenceBrokerRecord = Message(
    'FenceBrokerRecord', 7, (0, 0), 0,
    [
        Field('id', 'int32'),
        Field('epoch', 'int64'),
    ],
)

NoOpRecord = Message(
    'NoOpRecord', 20, (0, 0), 0,
    [

    ],
)

PartitionChangeRecord = Message(
    'PartitionChangeRecord', 5, (0, 2), 0,
    [
        Field('partitionId', 'int32'),
        Field('topicId', 'uuid'),
        Field('isr', ("array", 'int32'), nullable=(0, 32767), tag=0, default=None),
        Field('leader', 'int32', tag=1, default=-2),
        Field('replicas', ("array", 'int32'), nullable=(0, 32767), tag=2, default=None),
        Field('removingReplicas', ("array", 'int32'), nullable=(0, 32767), tag=3, default=None),
        Field('addingReplicas', ("array", 'int32'), nullable=(0, 32767), tag=4, default=None),
        Field('leaderRecoveryState', 'int8', tag=5, default=-1),
        Field('directories', ("array", 'uuid'), versions=(1, 32767), nullable=(1, 32767), tag=8, default=None),
        Field('eligibleLeaderReplicas', ("array", 'int32'), versions=(2, 32767), nullable=(2, 32767), tag=6, default=None),
        Field('lastKnownElr', ("array", 'int32'), versions=(2, 32767), nullable=(2, 32767), tag=7, default=None),
    ],
)

PartitionRecord = Message(
    'PartitionRecord', 3, (0, 2), 0,
    [
        Field('partitionId', 'int32'),
        Field('topicId', 'uuid'),
        Field('replicas', ("array", 'int32')),
        Field('isr', ("array", 'int32')),
        Field('removingReplicas', ("array", 'int32')),
        Field('addingReplicas', ("array", 'int32')),
        Field('leader', 'int32'),
        Field('leaderRecoveryState', 'int8', tag=0, default=0),
        Field('leaderEpoch', 'int32'),
        Field('partitionEpoch', 'int32'),
        Field('directories', ("array", 'uuid'), versions=(1, 32767)),
        Field('eligibleLeaderReplicas', ("array", 'int32'), versions=(2, 32767), nullable=(2, 32767), tag=1, default=None),
        Field('lastKnownElr', ("array", 'int32'), versions=(2, 32767), nullable=(2, 32767), tag=2, default=None),
    ],
)

ProducerIdsRecord = Message(
    'ProducerIdsRecord', 15, (0, 0), 0,
    [
        Field('brokerId', 'int32'),
        Field('brokerEpoch', 'int64'),
        Field('nextProducerId', 'int64'),
    ],
)

RegisterBrokerRecord = Message(
    'RegisterBrokerRecord', 0, (0, 3), 0,
    [
        Field('brokerId', 'int32'),
        Field('isMigratingZkBroker', 'bool', versions=(2, 32767)),
        Field('incarnationId', 'uuid'),
        Field('brokerEpoch', 'int64'),
        Field('endPoints', ("array", ("struct", [
            Field('name', 'string'),
            Field('host', 'string'),
            Field('port', 'uint16'),
            Field('securityProtocol', 'int16'),
        ]))),
        Field('features', ("array", ("struct", [
            Field('name', 'string'),
            Field('minSupportedVersion', 'int16'),
            Field('maxSupportedVersion', 'int16'),
        ]))),
        Field('rack', 'string', nullable=(0, 32767)),
        Field('fenced', 'bool'),
        Field('inControlledShutdown', 'bool', versions=(1, 32767)),
        Field('logDirs', ("array", 'uuid'), versions=(3, 32767), tag=0, default=[]),
    ],
)

RegisterControllerRecord = Message(
    'RegisterControllerRecord', 27, (0, 0), 0,
    [
        Field('controllerId', 'int32'),
        Field('incarnationId', 'uuid'),
        Field('zkMigrationReady', 'bool'),
        Field('endPoints', ("array", ("struct", [
            Field('name', 'string'),
            Field('host', 'string'),
            Field('port', 'uint16'),
            Field('securityProtocol', 'int16'),
        ]))),
        Field('features', ("array", ("struct", [
            Field('name', 'string'),
            Field('minSupportedVersion', 'int16'),
            Field('maxSupportedVersion', 'int16'),
        ]))),
    ],
)

RemoveAccessControlEntryRecord = Message(
    'RemoveAccessControlEntryRecord', 19, (0, 0), 0,
    [
        Field('id', 'uuid'),
    ],
)

RemoveDelegationTokenRecord = Message(
    'RemoveDelegationTokenRecord', 26, (0, 0), 0,
    [
        Field('tokenId', 'string'),
    ],
)

RemoveTopicRecord = Message(
    'RemoveTopicRecord', 9, (0, 0), 0,
    [
        Field('topicId', 'uuid'),
    ],
)

RemoveUserScramCredentialRecord = Message(
    'RemoveUserScramCredentialRecord', 22, (0, 0), 0,
    [
        Field('name', 'string'),
        Field('mechanism', 'int8'),
    ],
)

TopicRecord = Message(
    'TopicRecord', 2, (0, 0), 0,
    [
        Field('name', 'string'),
        Field('topicId', 'uuid'),
    ],
)

UnfenceBrokerRecord = Message(
    'UnfenceBrokerRecord', 8, (0, 0), 0,
    [
        Field('id', 'int32'),
        Field('epoch', 'int64'),
    ],
)

UnregisterBrokerRecord = Message(
    'UnregisterBrokerRecord', 1, (0, 0), 0,
    [
        Field('brokerId', 'int32'),
        Field('brokerEpoch', 'int64'),
    ],
)

UserScramCredentialRecord = Message(
    'UserScramCredentialRecord', 11, (0, 0), 0,
    [
        Field('name', 'string'),
        Field('mechanism', 'int8'),
        Field('salt', 'bytes'),
        Field('storedKey', 'bytes'),
        Field('serverKey', 'bytes'),
        Field('iterations', 'int32'),
    ],
)

ZkMigrationStateRecord = Message(
    'ZkMigrationStateRecord', 21, (0, 0), 0,
    [
        Field('zkMigrationState', 'int8'),
    ],
)

MESSAGES = [AbortTransactionRecord, AccessControlEntryRecord, BeginTransactionRecord, BrokerRegistrationChangeRecord, ClearElrRecord, ClientQuotaRecord, ConfigRecord, DelegationTokenRecord, EndTransactionRecord, FeatureLevelRecord, FenceBrokerRecord, NoOpRecord, PartitionChangeRecord, PartitionRecord, ProducerIdsRecord, RegisterBrokerRecord, RegisterControllerRecord, RemoveAccessControlEntryRecord, RemoveDelegationTokenRecord, RemoveTopicRecord, RemoveUserScramCredentialRecord, TopicRecord, UnfenceBrokerRecord, UnregisterBrokerRecord, UserScramCredentialRecord, ZkMigrationStateRecord]
