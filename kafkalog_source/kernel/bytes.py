"""How the kernels read bytes, as far as Python must know it.

Varints are read without bounds checks, for speed (``csrc/kl_common.h``): callers guarantee at
least ``PAD`` readable bytes after the end of the data the kernels walk, and the kernels check
every returned position against the end of the enclosing record. A varint longer than allowed
returns a position past any real data (``p + TOO_LONG``), so that same check reports it.
"""

from __future__ import annotations

PAD = 16
TOO_LONG = 1 << 40
