"""Shard data for the CPU backend: a cache of resident shards plus read-ahead streaming buffers.

The CPU image of GPU double buffering: while the compute thread works on one shard, a background
thread reads the next one from the store into a free buffer of a small reusable pool. Reads go
straight into the buffers (the store preads into caller memory, releasing the GIL), so streaming
allocates nothing per iteration. Shards the memory plan marks as cached are kept after their
first read.
"""
import queue
import threading
import time

import numpy as np

from ...engine.schedule import dataset_dtype

_ALIGN = 64


class ShardFeeder:
    def __init__(self, store, names, plan):
        self.store = store
        self.names = list(names)
        self.plan = plan
        self.cache = {}
        self._cacheable = set(plan.cached)
        self._dtypes = {n: dataset_dtype(store, n) for n in self.names}
        self.buffers = [np.empty(plan.buffer_bytes + _ALIGN * (len(self.names) + 1), dtype=np.uint8)
                        for _ in range(plan.num_buffers)]

    def _lengths(self, i):
        info = self.store.shard_info(i)
        return {n: info.dataset_nbytes[n] // self._dtypes[n].itemsize for n in self.names}

    def _read(self, i, buf):
        """Read shard ``i``'s arrays into ``buf`` (carved) or into fresh arrays; returns bytes read."""
        arrays, offset, nbytes = {}, 0, 0
        for name, length in self._lengths(i).items():
            dt = self._dtypes[name]
            size = int(length) * dt.itemsize
            if buf is None:
                arr = np.empty(length, dtype=dt)
            else:
                arr = buf[offset:offset + size].view(dt)
                offset += (size + _ALIGN - 1) // _ALIGN * _ALIGN
            self.store.read(i, name, out=arr)
            arrays[name] = arr
            nbytes += size
        return arrays, nbytes

    def stream(self, shards):
        """Yield ``(i, arrays, bytes_read, waited_seconds, release)`` for each shard in order.

        A consumer calls ``release()`` once it is done with the shard's arrays; that returns the
        streaming buffer to the pool (a no-op for cached shards). At most ``num_buffers`` streamed
        shards are outstanding: the next one waits for a release.
        """
        shards = list(shards)
        if not shards:
            return
        need_io = [i for i in shards if i not in self.cache]
        if not need_io or not self.buffers and all(i in self._cacheable for i in need_io):
            # everything is cached or becomes cached: no read-ahead machinery needed
            for i in shards:
                t0 = time.perf_counter()
                if i in self.cache:
                    yield i, self.cache[i], 0, 0.0, _noop
                else:
                    arrays, nbytes = self._read(i, None)
                    self.cache[i] = arrays
                    yield i, arrays, nbytes, time.perf_counter() - t0, _noop
            return
        yield from self._stream_threaded(shards)

    def _stream_threaded(self, shards):
        free = queue.Queue()
        for b in range(len(self.buffers)):
            free.put(b)
        ready = queue.Queue(maxsize=max(1, len(self.buffers)))
        stop = threading.Event()

        def producer():
            try:
                for i in shards:
                    if stop.is_set():
                        return
                    if i in self.cache:
                        ready.put((i, self.cache[i], 0, None))
                        continue
                    if i in self._cacheable:
                        arrays, nbytes = self._read(i, None)
                        self.cache[i] = arrays
                        ready.put((i, arrays, nbytes, None))
                        continue
                    b = None
                    while b is None:
                        if stop.is_set():
                            return
                        try:
                            b = free.get(timeout=0.1)
                        except queue.Empty:
                            pass
                    arrays, nbytes = self._read(i, self.buffers[b])
                    ready.put((i, arrays, nbytes, b))
            except BaseException as exc:  # hand the failure to the consumer thread
                ready.put(exc)

        thread = threading.Thread(target=producer, name="grstream-readahead", daemon=True)
        thread.start()
        try:
            for _ in shards:
                t0 = time.perf_counter()
                item = ready.get()
                waited = time.perf_counter() - t0
                if isinstance(item, BaseException):
                    raise item
                i, arrays, nbytes, buf = item
                yield i, arrays, nbytes, waited, (_noop if buf is None else _releaser(free, buf))
        finally:
            stop.set()
            # drain so a producer blocked on a full queue can finish
            while thread.is_alive():
                try:
                    ready.get(timeout=0.05)
                except queue.Empty:
                    pass
            thread.join()


def _noop():
    pass


def _releaser(free, buf):
    done = []

    def release():
        if not done:  # idempotent: a buffer goes back once
            done.append(True)
            free.put(buf)
    return release
