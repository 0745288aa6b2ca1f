"""Kafka's log layout over the transport: log directories, partition directories and segment
files found (:mod:`.discovery`), the tiered-storage plugin's layout (:mod:`.tiered`), a segment's
index files (:mod:`.indexes`), the log directory's checkpoint files (:mod:`.checkpoints`), and
:func:`~.files.open_source`, which opens a segment as Kafka wrote it whatever layout holds it."""
