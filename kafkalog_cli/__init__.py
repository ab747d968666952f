"""kafkalog: forensic dump-and-repair for Apache Kafka log directories.

Layers (docs/hacking.md, checked by tests/test_layers.py): ``format`` (bytes <-> values), ``storage`` (files on
disk), ``broker`` (Kafka's storage model), ``internal_topics`` / ``ops`` / ``scan`` (what commands do, as data),
``render`` (DumpLogSegments text per Kafka version, JSON), ``cli`` (thin click commands).
Nothing below ``cli`` prints or exits.
"""

__version__ = "0.1.0"
