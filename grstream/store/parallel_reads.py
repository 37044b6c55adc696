"""A shard's datasets read at once on a few threads.

Each read is an ``os.preadv`` into its own array and a CRC32 of it (ISA-L and zlib release the
GIL for large buffers), so a shard's indptr, id and property datasets overlap their reads
and checksums; small shards are read on the caller's thread, where a thread hand-off would
cost more than it saves.
"""
import threading
from concurrent.futures import ThreadPoolExecutor

#: shards of fewer bytes (over the datasets asked for) are read one dataset after another
PARALLEL_READ_BYTES = 4 << 20
#: threads of the shared pool (a shard has 4 to 7 datasets)
READERS = 4

_pool = None
_pool_lock = threading.Lock()


def _readers():
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(READERS, thread_name_prefix="grstream-read")
        return _pool


def read_datasets(store, i, names):
    """``{name: store.read(i, name)}``, the datasets read at once when they are large."""
    sizes = store.shard_info(i).dataset_nbytes
    if len(names) < 2 or sum(sizes.get(name, 0) for name in names) < PARALLEL_READ_BYTES:
        return {name: store.read(i, name) for name in names}
    futures = [(name, _readers().submit(store.read, i, name)) for name in names]
    return {name: future.result() for name, future in futures}
