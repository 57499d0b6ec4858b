"""The C allocator of a server process: freed trace memory kept mapped for the next trace.

A trace keeps every recorded tensor alive until the run ends (~3.6 MB at 6 layers x 8 heads x 64 tokens). When
they are freed together, glibc hands the top of its heap back to the OS, and the next trace maps those pages again
and takes a page fault on each: 1.5-1.7x the untraced forward instead of ~1.1x (`bench/bench_trace.py`). Keeping
16 MiB at the top of each heap (glibc's M_TOP_PAD, what MALLOC_TOP_PAD_ would set) lets the next run reuse them;
it costs at most that much resident memory per malloc arena.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging

M_TOP_PAD = -2  # glibc's mallopt parameter (malloc.h)
TOP_PAD_BYTES = 16 * 2**20
LOG = logging.getLogger(__name__)


def keep_freed_memory_mapped() -> bool:
    """Set glibc's top pad for this process; False (and nothing changed) where the C library is not glibc."""
    path = ctypes.util.find_library("c")
    try:
        mallopt = ctypes.CDLL(path).mallopt
    except (OSError, AttributeError, TypeError):  # no C library found, or one without mallopt (musl, macOS)
        LOG.info("allocator: no glibc mallopt here; the C library's defaults stay")
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return mallopt(M_TOP_PAD, TOP_PAD_BYTES) == 1
