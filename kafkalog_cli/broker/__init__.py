"""The broker's storage model, named after Kafka's own classes (``storage/src/main/java/org/apache/kafka/storage/
internals/log/``): what the broker's ``LogLoader`` does to a partition directory (``loader``), the producer map of a
``ProducerStateManager`` (``producer_state_manager``), the leader-epoch cache (``leader_epoch_cache``), the
partition's checkpoints (``checkpoints``) and the strict read view the repairs build on (``repair_view``).

Above ``storage/`` (files and bytes) and below the commands (``ops/``, ``scan/``, ``internal_topics/``): every
command that needs the broker's rules takes them from here, so each rule is written once.
"""
