"""kafkalog: forensic dump-and-repair for Apache Kafka log directories.

Layers (see README): ``format`` (bytes <-> values), ``storage`` (files on disk), ``ops`` (what commands do,
as data), ``render`` (DumpLogSegments text per Kafka version, JSON), ``cli`` (thin click commands).
Nothing below ``cli`` prints or exits.
"""

__version__ = "0.1.0"
