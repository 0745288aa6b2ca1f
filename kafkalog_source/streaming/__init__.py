"""Incremental reads of a growing archive: stream offsets, admission control and micro-batch
plans (:mod:`.source`), under Spark's ``readStream`` (``spark/stream.py``) and the
``convert --checkpoint`` command."""
