# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, cdivision=True
# The compiled kernels, release build.
include "native.pxi"
