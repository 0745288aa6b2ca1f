# cython: language_level=3, boundscheck=True, wraparound=False, initializedcheck=False, cdivision=True
# The compiled kernels, bounds-checked build (KL_BOUNDSCHECK: every index and span checked).
include "native.pxi"
