"""The one read-ahead loop: items produced on a thread ahead of the consumer, with a buffer pool.

Used by the partition engine (chunks read while the previous one is bucketed), the CPU executor
(shards read into streaming buffers while the previous one computes) and the GPU executor (shards
read into pinned staging buffers while the previous copy runs). File reads and numpy release the
GIL, so the producer's work hides behind the consumer's.

``read_ahead(iterable, depth)`` runs ``iter(iterable)`` on a daemon thread and yields its items
at most ``depth`` items ahead. A producer that fills reusable buffers takes them from a
:class:`BufferPool` (blocking until the consumer releases one), so memory stays bounded by the
pool whatever ``depth`` is. :func:`map_ahead` runs a function over items on several threads,
results in order: reads of several shards (or datasets) in flight at once, each one large
sequential read.
"""
import queue
import threading
import types
from concurrent.futures import ThreadPoolExecutor, wait

_DONE = object()


class PoolClosed(Exception):
    """The consumer stopped: a producer waiting for a buffer, or a read between two of its
    blocks (:attr:`BufferPool.closed`), gives up."""


class BufferPool:
    """Indices of reusable buffers: ``acquire`` blocks until one is free, ``release`` returns it.

    ``close`` wakes every waiting ``acquire`` with :class:`PoolClosed`.
    """

    def __init__(self, count):
        self._free = list(range(int(count)))
        self._cond = threading.Condition()
        self._closed = False

    def acquire(self, index=None):
        """A free buffer index (the oldest freed), or wait until ``index`` itself is free."""
        with self._cond:
            while not (self._free if index is None else index in self._free):
                if self._closed:
                    raise PoolClosed()
                self._cond.wait()
            if self._closed:
                raise PoolClosed()
            if index is None:
                return self._free.pop(0)
            self._free.remove(index)
            return index

    def try_acquire(self):
        """A free buffer index or None, without waiting."""
        with self._cond:
            return self._free.pop(0) if self._free and not self._closed else None

    def release(self, index):
        with self._cond:
            self._free.append(index)
            self._cond.notify_all()

    def close(self):
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    @property
    def closed(self):
        """Whether the consumer stopped (work for it is discarded: a read stops at its next block)."""
        return self._closed

    @property
    def free(self):
        with self._cond:
            return len(self._free)


def read_ahead(iterable, depth=1, pool=None):
    """Yield the items of ``iterable``, produced up to ``depth`` items ahead on a daemon thread.

    An exception raised by ``iterable`` is re-raised here, at the item where it occurred.
    Closing the generator early (an exception in the consumer) stops the thread: ``pool`` (the
    BufferPool the producer waits on, if any) is closed so that a waiting producer wakes up; the
    producer also stops when the pool's owner closes it, and a generator it draws is closed on
    its thread (its cleanup done before the thread ends).
    """
    depth = max(int(depth), 1)
    items = queue.Queue()
    stop = threading.Event()
    ahead = threading.Semaphore(depth)  # a token per item the producer may run ahead

    def produce():
        iterator = None
        try:
            iterator = iter(iterable)
            while True:
                while not ahead.acquire(timeout=0.05):
                    if stop.is_set():
                        return
                    if pool is not None and pool.closed:   # closed by its owner: stop producing
                        raise PoolClosed()
                if stop.is_set():
                    return
                item = next(iterator, _DONE)
                items.put((item, None))
                if item is _DONE:
                    return
                del item
        except PoolClosed:
            items.put((_DONE, None))
        except BaseException as exc:  # handed to the consumer, raised there
            items.put((_DONE, exc))
        finally:   # a stopped generator's own cleanup runs here, before the consumer's join returns
            if isinstance(iterator, types.GeneratorType):
                try:
                    iterator.close()
                except BaseException as exc:
                    items.put((_DONE, exc))

    thread = threading.Thread(target=produce, name="grstream-read-ahead", daemon=True)
    thread.start()
    try:
        while True:
            item, error = items.get()
            ahead.release()
            if error is not None:
                try:
                    raise error
                finally:   # (its traceback holds this frame: no cycle through this name)
                    error = None
            if item is _DONE:
                return
            yield item
            del item
    finally:
        stop.set()
        if pool is not None:
            pool.close()
        thread.join()
        while not items.empty():   # drop what the producer made ahead
            items.get_nowait()


def map_ahead(fn, iterable, threads, pool=None, workers=None):
    """Yield ``fn(item)`` for the items of ``iterable`` in order, up to ``threads`` calls running
    at once on a thread pool while the caller consumes earlier results.

    ``iterable`` is drawn on its own thread (:func:`read_ahead`), so a producer waiting there for a
    buffer of ``pool`` never blocks the results already made; closing early stops it (``pool``
    closed), cancels the calls not yet started (their results would be discarded) and waits for
    the running ones, which may still be writing into the caller's buffers (a call that checks
    ``pool.closed`` between its blocks ends at the next one). An exception of ``fn`` is raised at
    its item.
    ``workers``: a ``ThreadPoolExecutor`` the caller keeps across calls (no pool set up per
    call); None: one of ``threads`` threads for this call, shut down at its end.
    """
    threads = int(threads)
    if threads <= 1:
        for item in iterable:
            yield fn(item)
        return
    own = workers is None
    if own:
        workers = ThreadPoolExecutor(threads, thread_name_prefix="grstream-read")
    submitted, future = [], None

    def submit(item):
        future = workers.submit(fn, item)
        submitted.append(future)
        return future
    try:
        futures = read_ahead((submit(item) for item in iterable), depth=threads, pool=pool)
        try:
            for future in futures:
                yield future.result()
        finally:
            futures.close()
    finally:
        # not started: cancelled, never run (and not waited for: a cancelled call's pool may be
        # shut down before a thread takes it up); running: finish before their buffers are reused
        wait([f for f in submitted if not f.cancel()])
        if own:
            workers.shutdown(wait=True)
        # a future holds the exception its call raised, whose traceback holds this frame: no
        # cycle through it (the buffers the frames refer to go with the exception)
        submitted.clear()
        future = None
