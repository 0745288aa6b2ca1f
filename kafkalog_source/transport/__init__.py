"""Bytes from anywhere, with no knowledge of Kafka: ranged reads of local files and store
objects (:mod:`.source`), the URI → filesystem map with the AWS settings chain
(:mod:`.filesystems`, :mod:`.aws`), which failures a retry can fix (:mod:`.failures`), and the
reader's byte windows (:mod:`.windows`)."""
