"""A store's dataset reads and their checks: into a buffer (``os.preadv``) or as the file's
mapped pages, each checked a block at a time as it lands (CRC32 and id range), offsets on their
first read. The reading half of :class:`~grstream.store.shard_store.ShardStore`."""
import mmap
import os

import numpy as np

from ..errors import ChecksumError, UsageError
from . import format as fmt

#: bytes a verified read takes at a time: read, checksummed and range-checked while in cache
READ_BLOCK = 1 << 20


class DatasetReads:
    """Mixin of ShardStore: ``mapped`` and the reads' checks (``_read_into``, ``_checked``)."""

    def mapped(self, i, name):
        """Dataset ``name`` of shard ``i`` as a view of the file's pages, or None where it
        cannot be one (compressed ids, no storage, an offset not a multiple of its item size, a
        byte order other than the machine's, an empty dataset, a file the system cannot map).

        The view is a private mapping of the dataset's range of the file: its pages are the
        page cache's, mapped on first touch, with no copy and no fresh memory to zero (a
        write, which the engine never makes, would change this process's copy only, never the
        file). It is checked as :meth:`read` checks (CRC32, id range, offsets; per the
        ``verify`` mode), a block at a time as the pages come in. The mapping lives as long as
        the array, after the store's close too. A store file truncated or rewritten in place
        while mapped is undefined behaviour (SIGBUS): grstream's writers replace a store by
        renaming a new file onto its path, which leaves an open one as it was.
        """
        i = self._shard_index(i)
        self._held(i, name)
        desc = self._datasets[i].get(name)
        verify = self._verifies(i, name)
        got = self._map(desc, i, verify)
        if got is None:
            return None
        array, sums = got
        self._checked(i, name, desc, array, sums)
        return array

    def mapped_or_read(self, i, name):
        """Dataset ``name`` of shard ``i`` mapped (:meth:`mapped`) where it can be, else read
        (:meth:`read`): checked either way."""
        array = self.mapped(i, name)
        return self.read(i, name) if array is None else array

    def _map(self, desc, shard, verify):
        """``(array, sums)``: ``desc`` mapped (see :meth:`mapped`) and, with ``verify``, its
        ``(crc32, min, max)`` taken as its pages come in; None where it cannot be mapped."""
        if (desc is None or desc.offset is None or desc.size == 0 or self._fd is None
                or desc.offset % desc.dtype.itemsize or not desc.dtype.isnative):
            return None
        start = desc.offset - desc.offset % mmap.ALLOCATIONGRANULARITY
        if desc.offset + desc.nbytes > os.fstat(self._fd).st_size:
            self._fail(f"file truncated: dataset ends at byte {desc.offset + desc.nbytes}",
                       shard=shard, dataset=desc.name)
        try:   # a descriptor of its own onto the same file: the mapping, which keeps one
            # open, then holds no share of HDF5's lock on the store's (a writer may open the
            # file once the store is closed, while the arrays live on)
            fd = os.open(f"/proc/self/fd/{self._fd}", os.O_RDONLY)
        except OSError:   # (no /proc: the dataset is read)
            return None
        try:
            pages = mmap.mmap(fd, desc.offset + desc.nbytes - start, access=mmap.ACCESS_COPY,
                              offset=start)
        except OSError:   # (a file system without mmap, the map count or commit limit: read)
            return None
        finally:
            os.close(fd)
        array = np.frombuffer(pages, dtype=desc.dtype, count=desc.size, offset=desc.offset - start)
        return array, self._read_into(desc, array, shard=shard, verify=verify, landed=True)

    def _held(self, i, name):
        """Refuse dataset ``name`` of shard ``i`` where the store is a part file whose run of
        shards (``part_shards``) leaves ``i`` out: the file declares that shard's edge datasets
        without their data (docs/FORMAT.md, root attribute ``build``; only offsets are every
        shard's). A UsageError saying so, whether read or mapped, never a checksum mismatch
        against data that was never written, nor that data where a tool gave it storage."""
        run = self.part_shards
        if run is not None and not run[0] <= i < run[1] and not name.endswith(fmt.INDPTR):
            part = self.build["part"]
            raise UsageError(f"{self.path} is part {part['index']} of {part['parts']} of "
                             f"{part['of']}: shard {i}'s {name} is in another part (this "
                             f"reads every shard: run it on the whole store)")

    def _verifies(self, i, name):
        """Whether this read of dataset ``name`` of shard ``i`` checks it (the verify mode)."""
        return self.verify == "always" or (self.verify == "first" and (i, name) not in self._verified)

    def _checked(self, i, name, desc, target, sums):
        """A read's checks: its sums (None: unverified) against the stored CRC32 and the id
        bound, and offsets on their first read."""
        key = (i, name)
        if sums is not None:
            crc, low, high = sums
            self._check_crc(desc, None, shard=i, actual=crc)
            if low is not None and (low < 0 or high >= desc.upper):
                what = "edge id" if name.endswith(fmt.EDGE_ID) else "vertex id"
                self._fail(f"{what} {low if low < 0 else high} out of range "
                           f"0..{desc.upper - 1}", shard=i, dataset=desc.name)
            with self._lock:
                self._verified.add(key)
        if name.endswith(fmt.INDPTR) and key not in self._offsets_checked:
            self._check_offsets(i, name, target)

    def _check_offsets(self, i, name, indptr):
        """Check shard ``i``'s offsets ``name`` on their first read (every later read of the
        shard trusts them): from 0, not decreasing, to the edge count."""
        info = self._shards[i]
        edges = info.num_in_edges if name.startswith("in/") else info.num_out_edges
        if indptr[0] != 0 or indptr[-1] != edges or np.any(indptr[1:] < indptr[:-1]):
            self._fail(f"offsets must start at 0, not decrease and end at the edge count "
                       f"{edges}", shard=i, dataset=self._datasets[i][name].name)
        with self._lock:
            self._offsets_checked.add((i, name))

    def _destination(self, desc, out):
        if out is None:
            return np.empty(desc.size, dtype=desc.dtype)
        if isinstance(out, np.ndarray):
            if out.dtype != desc.dtype or out.size != desc.size or not out.flags.c_contiguous \
                    or not out.flags.writeable:
                raise UsageError(f"{self.path}: dataset {desc.name} needs a writable C-contiguous "
                                 f"{desc.dtype} buffer of {desc.size} elements, got {out.dtype} "
                                 f"shape {out.shape}")
            return out.reshape(-1)
        view = memoryview(out)
        if view.readonly or view.nbytes != desc.nbytes:
            raise UsageError(f"{self.path}: dataset {desc.name} needs a writable buffer of "
                             f"{desc.nbytes} bytes, got {view.nbytes}"
                             + (" (read-only)" if view.readonly else ""))
        return np.frombuffer(out, dtype=desc.dtype, count=desc.size)

    def _read_into(self, desc, target, shard, verify=False, landed=False):
        """Read ``desc`` into ``target`` (``landed``: ``target`` is the dataset's mapped pages,
        nothing to read). ``verify``: returns ``(crc32, min, max)`` of what was read (min and
        max None where the dataset has no id bound, or no elements), taken a block of
        READ_BLOCK bytes at a time as it lands, while it is in cache: the data crosses memory
        once, where a read, then a checksum pass and a range pass cross it three times."""
        ranged = verify and desc.upper is not None and desc.size > 0
        if desc.size == 0:
            return (0, None, None) if verify else None
        if landed and not verify:
            return None
        if not landed and (desc.offset is None or self._fd is None):
            with self._lock:
                self._h5[desc.name].read_direct(target)
            if not verify:
                return None
            return (fmt.crc32(target), *(fmt.extremes(target) if ranged else (None, None)))
        view = memoryview(target).cast("B")
        flat, item = target.reshape(-1), desc.dtype.itemsize
        crc, lows, highs, checked, done = 0, [], [], 0, 0
        block = READ_BLOCK if verify else desc.nbytes   # (unverified: one read of the whole)
        while done < desc.nbytes:
            got = (min(block, desc.nbytes - done) if landed else
                   os.preadv(self._fd, [view[done:min(done + block, desc.nbytes)]], desc.offset + done))
            if got == 0:
                self._fail(f"file truncated: {desc.nbytes - done} of {desc.nbytes} bytes missing",
                           shard=shard, dataset=desc.name)
            if verify:
                crc = fmt.crc32_update(view[done:done + got], crc)
                upto = (done + got) // item   # (the elements read whole so far)
                if ranged and upto > checked:
                    part = flat[checked:upto]
                    lows.append(part.min())
                    highs.append(part.max())
                    checked = upto
            done += got
        if not verify:
            return None
        return crc, (int(min(lows)) if ranged else None), (int(max(highs)) if ranged else None)

    def _check_crc(self, desc, array, shard, actual=None):
        """The CRC32 of ``array`` (or the ``actual`` one computed as it was read) is the
        stored one."""
        actual = fmt.crc32(array) if actual is None else actual
        if actual != desc.crc:
            self._fail(f"checksum mismatch (stored {desc.crc:#010x}, data {actual:#010x})",
                       shard=shard, dataset=desc.name, cls=ChecksumError)
