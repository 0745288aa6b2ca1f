"""Kafka's on-disk structures as data, the bottom layer: each structure's layout and its parser,
over bytes already in memory (no I/O, no other layer imported).

* :mod:`.batch`: the prefix every batch shares, the v2 batch header, :class:`~.batch.BatchHeader`
  and varints;
* :mod:`.legacy`: the v0/v1 message header (a legacy "batch" is one message, or a compressed
  wrapper holding a message set);
* :mod:`.control`: control records (transaction markers and KRaft control records);
* :mod:`.indexes`: entries of ``.index``, ``.timeindex``, ``.txnindex`` and producer ``.snapshot``
  files;
* :mod:`.names`: codec ids, control record types, producer sequence arithmetic, segment file
  names;
* :mod:`.tiered`: the tiered-storage plugin's encoded chunk index.

Every header offset, size and attribute bit is named once here (:mod:`.batch`, :mod:`.legacy`,
:mod:`.names`) and used by name everywhere else, the compiled kernels included: their C code
(:mod:`..kernel`, :func:`~..framing.scan.scan_window`) takes the same names from
``kernel/csrc/kl_layout.h``, generated from these modules and checked against them by a test;
everything else reads a Kafka structure through these modules.
"""
