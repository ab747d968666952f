"""storage/partition_name.py: the one topic-partition directory-name parser (LocalLog.parseTopicPartitionName,
core/src/main/scala/kafka/log/LocalLog.scala:637-671 at apache/kafka 1eb7644), and the commands that use it."""

from __future__ import annotations

import pytest

from kafkalog_cli.internal_topics.logdir import split_name
from kafkalog_cli.scan.paths import parse_partition_dir
from kafkalog_cli.storage.partition_name import TopicPartitionName, parse_topic_partition_name
from kafkalog_cli.storage.paths import live_partition as topic_partition

UUID = "0f" * 16


@pytest.mark.parametrize(("name", "want"), [
    ("orders-0", TopicPartitionName("orders", 0)),
    ("my-topic.v2-13", TopicPartitionName("my-topic.v2", 13)),
    (f"orders-2.{UUID}-delete", TopicPartitionName("orders", 2, "-delete")),
    (f"orders-2.{UUID}-future", TopicPartitionName("orders", 2, "-future")),
    (f"orders-2.{UUID}-stray", TopicPartitionName("orders", 2, "-stray")),
    ("orders-2.x-delete", TopicPartitionName("orders", 2, "-delete")),  # any \S+ unique id
    ("t-2147483647", TopicPartitionName("t", 2147483647)),
    ("t-\u0663", TopicPartitionName("t", 3)),  # Character.digit takes decimal digits of any script
    ("t-+5", TopicPartitionName("t", 5)),  # Integer.parseInt takes a sign
    ("t--5", TopicPartitionName("t-", 5)),  # the last '-' separates
])
def test_names_the_broker_takes(name: str, want: TopicPartitionName) -> None:
    assert parse_topic_partition_name(name) == want


@pytest.mark.parametrize("name", ["", "data", "t-", "-3", "t-2147483648", "t-" + "9" * 30, "t-\u00b2", "t-1 ",
                                  "t-0-delete", f"t-0.{UUID}-future\n", "orders-2. x-delete", "t-x"])
def test_names_the_broker_refuses(name: str) -> None:
    assert parse_topic_partition_name(name) is None


def test_the_commands_take_the_one_rule() -> None:
    """Live-only readers (recover's loader model, the transaction and retention views) and the scan's labels
    (every partition directory, renamed ones too) give the parser's answers."""
    suffixed = f"orders-2.{UUID}-future"
    assert topic_partition("/x/t-\u0663") == ("t", 3) and topic_partition(f"/x/{suffixed}") is None
    assert split_name("t-\u0663") == ("t", 3) and split_name(suffixed) == (suffixed, -1)
    assert parse_partition_dir(suffixed) == ("orders", 2) and parse_partition_dir("t-+5") == ("t", 5)
    for reader in (lambda n: topic_partition("/x/" + n), split_name, parse_partition_dir):
        assert reader("t-2147483648") in (None, ("t-2147483648", -1), ("t-2147483648", None))
