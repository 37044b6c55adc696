"""Giving a temporary file's consumed bytes back to the system before the file is removed.

An external build reads each stretch of its run files once; their pages then sit in the page
cache, dirty, until the files are removed at the end, while the store's writes take fresh pages.
On a VM that returns free memory to its host a fresh page is faulted in from the host, several
times slower to write than a page a punched hole has just freed
(docs/BENCHMARKS.md, "Measured constants").
Punching the consumed stretches out (``fallocate`` ``FALLOC_FL_PUNCH_HOLE``) lets the store
reuse the runs' pages. Where the call or the file system does not support it, nothing happens.
"""
import ctypes
import ctypes.util
import errno
import mmap
import sys

_PUNCH_HOLE_KEEP_SIZE = 0x02 | 0x01
PAGE = mmap.PAGESIZE


def _fallocate():
    if not sys.platform.startswith("linux"):    # the call and its flags are Linux's
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        call = libc.fallocate
    except (OSError, AttributeError):
        return None
    call.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
    call.restype = ctypes.c_int
    return call


_CALL = _fallocate()


def release(fd, start, stop):
    """Drop the whole pages within bytes ``start..stop`` of the file ``fd`` (reads of them
    give zeros afterwards); the pages around them are kept. Returns whether it was done."""
    global _CALL
    first = -(-start // PAGE) * PAGE
    last = stop // PAGE * PAGE
    if _CALL is None or last <= first:
        return False
    if _CALL(fd, _PUNCH_HOLE_KEEP_SIZE, first, last - first) == 0:
        return True
    if ctypes.get_errno() in (errno.EOPNOTSUPP, errno.ENOSYS):
        _CALL = None        # not asked again
    return False
