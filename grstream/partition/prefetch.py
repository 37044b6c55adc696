"""Read-ahead: the next chunk is read and validated on a thread while this one is bucketed.

File reads and numpy's array passes release the GIL, so on two cores the reader's work hides
behind the bucketing's. The next chunk is produced only once the consumer has taken the
previous one, so the read-ahead costs one chunk of memory.
"""
import queue
import threading

_DONE = object()


def read_ahead(iterable):
    """Yield the items of ``iterable``, produced one item ahead on a daemon thread.

    An exception raised by ``iterable`` is re-raised here, at the item where it occurred.
    Closing the generator early (an exception in the consumer) stops the thread.
    """
    items = queue.Queue(maxsize=1)
    stop = threading.Event()
    # one token: the producer starts an item only after the consumer took the one before
    ahead = threading.Semaphore(1)

    def produce():
        try:
            iterator = iter(iterable)
            while True:
                while not ahead.acquire(timeout=0.05):
                    if stop.is_set():
                        return
                if stop.is_set():
                    return
                item = next(iterator, _DONE)
                if not _put(items, (item, None), stop) or item is _DONE:
                    return
                del item
        except BaseException as exc:  # handed to the consumer, raised there
            _put(items, (_DONE, exc), stop)

    thread = threading.Thread(target=produce, name="grstream-read-ahead", daemon=True)
    thread.start()
    try:
        while True:
            item, error = items.get()
            ahead.release()
            if error is not None:
                raise error
            if item is _DONE:
                return
            yield item
            del item
    finally:
        stop.set()
        while thread.is_alive():
            # unblock a producer waiting on a full queue
            try:
                items.get_nowait()
            except queue.Empty:
                pass
            thread.join(0.01)


def _put(items, entry, stop):
    while not stop.is_set():
        try:
            items.put(entry, timeout=0.05)
            return True
        except queue.Full:
            continue
    return False
