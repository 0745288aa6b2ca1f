# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, cdivision=True
# The compiled kernels, sanitizer build (AddressSanitizer, UndefinedBehaviorSanitizer).
include "native.pxi"
