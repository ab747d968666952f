"""KRaft ``__cluster_metadata`` record schemas of Kafka 2.8 (the KRaft preview), one ``Message`` per apiKey.

Restated from ``metadata/src/main/resources/common/metadata/*.json`` at git tag 2.8.0 (unchanged in 2.8.1/2.8.2).
Why a table of its own: 2.8's schemas are not an older version of today's. Twelve of the fourteen declare no
``flexibleVersions`` (so version 0 is *not* flexible: strings carry an int16 length, arrays and bytes an int32 length,
no tagged fields), only ``AccessControlRecord`` and ``PartitionChangeRecord`` say ``"flexibleVersions": "0+"``; today
every metadata record is flexible from version 0, so reading 2.8 data with today's schemas fails on every record.
Some records differ too (``RegisterBrokerRecord`` has no ``fenced``; ``QuotaRecord`` is apiKey 14 and
``AccessControlRecord`` apiKey 6, both renamed or replaced later).
"""

from __future__ import annotations

from kafkalog_cli.format.flexible import Field
from kafkalog_cli.internal_topics.schema import Message

NULLABLE = (0, 32767)

MESSAGES_28 = [
    Message("RegisterBrokerRecord", 0, (0, 0), None, [
        Field("brokerId", "int32"),
        Field("incarnationId", "uuid"),
        Field("brokerEpoch", "int64"),
        Field("endPoints", ("array", ("struct", [
            Field("name", "string"),
            Field("host", "string"),
            Field("port", "uint16"),
            Field("securityProtocol", "int16"),
        ]))),
        Field("features", ("array", ("struct", [
            Field("name", "string"),
            Field("minSupportedVersion", "int16"),
            Field("maxSupportedVersion", "int16"),
        ]))),
        Field("rack", "string", nullable=NULLABLE),
    ]),
    Message("UnregisterBrokerRecord", 1, (0, 0), None, [
        Field("brokerId", "int32"),
        Field("brokerEpoch", "int64"),
    ]),
    Message("TopicRecord", 2, (0, 0), None, [
        Field("name", "string"),
        Field("topicId", "uuid"),
    ]),
    Message("PartitionRecord", 3, (0, 0), None, [
        Field("partitionId", "int32", default=-1),
        Field("topicId", "uuid"),
        Field("replicas", ("array", "int32")),
        Field("isr", ("array", "int32")),
        Field("removingReplicas", ("array", "int32"), nullable=NULLABLE),
        Field("addingReplicas", ("array", "int32"), nullable=NULLABLE),
        Field("leader", "int32", default=-1),
        Field("leaderEpoch", "int32", default=-1),
        Field("partitionEpoch", "int32", default=-1),
    ]),
    Message("ConfigRecord", 4, (0, 0), None, [
        Field("resourceType", "int8"),
        Field("resourceName", "string"),
        Field("name", "string"),
        Field("value", "string"),
    ]),
    Message("PartitionChangeRecord", 5, (0, 0), 0, [
        Field("partitionId", "int32", default=-1),
        Field("topicId", "uuid"),
        Field("isr", ("array", "int32"), nullable=NULLABLE, tag=0, default=None),
        Field("leader", "int32", tag=1, default=-2),
    ]),
    Message("AccessControlRecord", 6, (0, 0), 0, [
        Field("resourceType", "int8"),
        Field("resourceName", "string", nullable=NULLABLE),
        Field("patternType", "int8"),
        Field("principal", "string"),
        Field("host", "string"),
        Field("operation", "int8"),
        Field("permissionType", "int8"),
    ]),
    Message("FenceBrokerRecord", 7, (0, 0), None, [
        Field("id", "int32"),
        Field("epoch", "int64"),
    ]),
    Message("UnfenceBrokerRecord", 8, (0, 0), None, [
        Field("id", "int32"),
        Field("epoch", "int64"),
    ]),
    Message("RemoveTopicRecord", 9, (0, 0), None, [
        Field("topicId", "uuid"),
    ]),
    Message("DelegationTokenRecord", 10, (0, 0), None, [
        Field("owner", "string"),
        Field("renewers", ("array", "string")),
        Field("issueTimestamp", "int64"),
        Field("maxTimestamp", "int64"),
        Field("expirationTimestamp", "int64"),
        Field("tokenId", "string"),
    ]),
    Message("UserScramCredentialRecord", 11, (0, 0), None, [
        Field("name", "string"),
        Field("credentialInfos", ("array", ("struct", [
            Field("mechanism", "int8"),
            Field("salt", "bytes"),
            Field("saltedPassword", "bytes"),
            Field("iterations", "int32"),
        ]))),
    ]),
    Message("FeatureLevelRecord", 12, (0, 0), None, [
        Field("name", "string"),
        Field("minFeatureLevel", "int16"),
        Field("maxFeatureLevel", "int16"),
    ]),
    Message("QuotaRecord", 14, (0, 0), None, [
        Field("entity", ("array", ("struct", [
            Field("entityType", "string"),
            Field("entityName", "string", nullable=NULLABLE),
        ]))),
        Field("key", "string"),
        Field("value", "float64"),
        Field("remove", "bool"),
    ]),
]

BY_KEY_28: dict[int, Message] = {m.api_key: m for m in MESSAGES_28 if m.api_key is not None}
