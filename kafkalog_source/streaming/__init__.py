"""Incremental reads of a growing archive: stream offsets (:mod:`.offsets`), what the archive
holds at each trigger (:mod:`.snapshot`), rewrite detection (:mod:`.rewrites`), admission control
(:mod:`.admission`), the data-loss policy (:mod:`.loss`) and micro-batch plans (:mod:`.source`),
under Spark's ``readStream`` (``spark/stream.py``) and the ``convert --checkpoint`` command."""
