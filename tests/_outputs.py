"""Hostile places to write to: a disk that fills up, a folder that cannot be written."""
import builtins
import contextlib
import errno
import os
import shutil
import subprocess

import numpy as np
import pytest

from grstream.partition import writer as store_writer


class _Disk:
    def __init__(self, room):
        self.room = room
        self.used = 0

    def take(self, nbytes):
        """Account for ``nbytes``; return how many fit (all of them, or fewer when full)."""
        fits = max(0, min(nbytes, self.room - self.used))
        self.used += fits
        return fits


class _FillingFile:
    """A real file object whose writes fail with ENOSPC once the disk's room is used up."""

    def __init__(self, real, disk):
        self._real = real
        self._disk = disk

    def write(self, data):
        raw = data.encode() if isinstance(data, str) else memoryview(data).cast("B")
        fits = self._disk.take(len(raw))
        if fits < len(raw):
            self._real.write(raw[:fits] if not isinstance(data, str) else data[:0])
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return self._real.write(data)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._real.close()
        return False

    def __getattr__(self, name):
        return getattr(self._real, name)


def disk_full(monkeypatch, room):
    """Make every grstream output fail with ENOSPC after ``room`` bytes in all.

    Covers files written through :func:`grstream.io.atomic.atomic_file` (``os.fdopen``), the
    external build's bucket files (``open`` of a path under ``*.buckets-*``) and HDF5 datasets
    (h5py writes in C: ``StoreWriter.dataset`` raises what h5py raises on a full disk).
    """
    disk = _Disk(room)
    real_fdopen, real_open = os.fdopen, builtins.open
    real_dataset = store_writer.StoreWriter.dataset

    def fdopen(*args, **kwargs):
        return _FillingFile(real_fdopen(*args, **kwargs), disk)

    def open_(file, *args, **kwargs):
        handle = real_open(file, *args, **kwargs)
        if isinstance(file, (str, os.PathLike)) and ".buckets-" in os.fspath(file):
            return _FillingFile(handle, disk)
        return handle

    def dataset(self, name, array):
        if disk.take(np.asarray(array).nbytes) < np.asarray(array).nbytes:
            raise OSError(errno.ENOSPC, "Can't synchronously write data (file write failed: "
                                        "errno = 28, error message = 'No space left on device')")
        return real_dataset(self, name, array)

    monkeypatch.setattr(os, "fdopen", fdopen)
    monkeypatch.setattr(builtins, "open", open_)
    monkeypatch.setattr(store_writer.StoreWriter, "dataset", dataset)
    return disk


@contextlib.contextmanager
def read_only(folder):
    """``folder`` created and made unwritable (chmod for users, ``chattr +i`` for root)."""
    folder.mkdir()
    if os.geteuid() != 0:
        folder.chmod(0o555)
        try:
            yield folder
        finally:
            folder.chmod(0o755)
        return
    if not shutil.which("chattr") or \
            subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode:
        pytest.skip("running as root without chattr +i: no folder is read-only to us")
    try:
        yield folder
    finally:
        subprocess.run(["chattr", "-i", str(folder)], check=True)
