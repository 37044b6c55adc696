"""Output files written atomically, and the checks every writing command makes before any work.

An output is written to ``NAME.tmp-<pid>`` beside it, flushed, fsynced and renamed onto ``NAME``,
so ``NAME`` is either the old file or the complete new one. Temporaries (and the bucket
directories of external builds, ``NAME.buckets-<pid>-*``) carry the writer's process id: a
writer removes those of processes that no longer exist from its folder before it starts.
Files are created with mode ``0o666`` minus the umask, as ``open()`` would.
"""
import contextlib
import errno
import os
import re
import shutil
import tempfile
from pathlib import Path

import numpy as np

from ..errors import OutputError, UsageError

#: errors that mean the file system is full: they can only come from writing
_NO_SPACE = (errno.ENOSPC, errno.EDQUOT)
#: write() calls of at most this many bytes, so a numpy array is not copied whole
_WRITE_BLOCK = 1 << 24
_LEFTOVER = re.compile(r".+\.(?:tmp-(\d+)|buckets-(\d+)-[^/]+)")


def temporary_path(path):
    """``NAME.tmp-<pid>`` beside ``path``."""
    path = Path(path)
    return path.with_name(f"{path.name}.tmp-{os.getpid()}")


def make_bucket_dir(directory, name):
    """A new ``NAME.buckets-<pid>-XXXXXXXX`` folder in ``directory`` for an external build of
    target file ``name``, once the dead writers' leftovers there are removed."""
    remove_stale_temporaries(directory)
    return Path(tempfile.mkdtemp(prefix=f"{name}.buckets-{os.getpid()}-", dir=directory))


def remove_stale_temporaries(directory):
    """Remove the temporaries and bucket directories in ``directory`` whose writer has died.

    Returns
    -------
    list of Path
        What was removed.
    """
    removed = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return removed
    for entry in entries:
        match = _LEFTOVER.fullmatch(entry.name)
        if not match:
            continue
        # temporaries are files and bucket directories folders: anything else is not ours
        is_dir = entry.is_dir(follow_symlinks=False)
        if is_dir != (match.group(2) is not None) or \
                (not is_dir and not entry.is_file(follow_symlinks=False)) or \
                _process_alive(int(match.group(1) or match.group(2))):
            continue
        try:
            if is_dir:
                shutil.rmtree(entry.path)
            else:
                os.unlink(entry.path)
        except OSError:
            continue  # someone else's file we may not remove: not ours to insist on
        removed.append(Path(entry.path))
    return removed


def _process_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True


def check_output(path, inputs=(), what="output", create_parents=False):
    """Refuse an output before any work: a folder, the same file as an input, or unwritable.

    Parameters
    ----------
    path : str or Path
        The output file.
    inputs : iterable of str or Path
        Files the command reads; the output may be none of them (also through symlinks and
        hard links).
    what : str
        How the message names the output (``"-o"``, ``"--plot"``, ...).
    create_parents : bool
        The writer creates missing folders: then the nearest existing one must be writable.

    Returns
    -------
    Path

    Raises
    ------
    UsageError
        The output is a folder or the same file as an input.
    OutputError
        Its folder does not exist or cannot be written.
    """
    path = Path(path)
    if path.is_dir():
        raise UsageError(f"{what} {path} is a folder, not a file name")
    for source in inputs:
        if source is not None and _same_file(path, Path(source)):
            raise UsageError(f"{what} {path} is the input {source}: "
                             "the input would be replaced; choose another output name")
    check_folder(path.absolute().parent, f"{what} {path}", create_parents)
    return path


def check_folder(folder, what, create_parents=False):
    """Raise :class:`OutputError` unless files can be created in ``folder`` (or, with
    ``create_parents``, in its nearest existing ancestor); ``what`` names it in the message."""
    folder = Path(folder).absolute()
    if create_parents:
        while not folder.exists() and folder != folder.parent:
            folder = folder.parent
    if not folder.is_dir():
        raise OutputError(f"cannot write {what}: folder {folder} does not exist", path=folder)
    # os.access and not a trial file: it also sees read-only mounts, and creates nothing
    if not os.access(folder, os.W_OK | os.X_OK):
        raise OutputError(f"cannot write {what}: folder {folder} is not writable", path=folder)


def _same_file(a, b):
    if a.resolve() == b.resolve():
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:  # either one does not exist
        return False


def check_distinct(outputs):
    """Refuse two outputs of one command that name the same file (``{what: path}``)."""
    seen = []
    for what, path in outputs.items():
        if path is None:
            continue
        for other, other_path in seen:
            if _same_file(Path(path), Path(other_path)) or \
                    Path(path).absolute() == Path(other_path).absolute():
                raise UsageError(f"{other} and {what} both name {path}: one would replace the other")
        seen.append((what, path))


def no_space_error(exc, target):
    """An :class:`OutputError` for ``exc`` when it says the disk is full, else None."""
    if isinstance(exc, OSError) and not isinstance(exc, OutputError) and exc.errno in _NO_SPACE:
        where = ""
        if exc.filename and not str(exc.filename).startswith(str(target)):
            where = f", writing {exc.filename}"
        return OutputError(f"cannot write {target}: {os.strerror(exc.errno).lower()}{where}"
                           " (nothing was written under that name)", path=target, errno=exc.errno)
    return None


@contextlib.contextmanager
def atomic_file(path, text=False):
    """Yield a binary (or UTF-8 text) file object whose content appears at ``path`` on success.

    Leaving the block by an exception removes the temporary; a full disk raises
    :class:`OutputError` naming ``path``.
    """
    path = Path(path)
    remove_stale_temporaries(path.absolute().parent)
    tmp = temporary_path(path)
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0),
                     0o666)
        with os.fdopen(fd, "w" if text else "wb", **({"encoding": "utf-8"} if text else {})) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        full = no_space_error(exc, path)
        if full is not None:
            raise full from exc
        raise
    fsync_directory(path.absolute().parent)


def write_array(handle, array):
    """Write an array's bytes through ``handle.write`` (``ndarray.tofile`` reports a full disk
    only as "N requested and M written", without errno)."""
    view = memoryview(np.ascontiguousarray(array).reshape(-1).view(np.uint8))
    try:
        for start in range(0, len(view), _WRITE_BLOCK):
            handle.write(view[start:start + _WRITE_BLOCK])
    except OSError as exc:
        name = getattr(handle, "name", None)
        if exc.filename is None and isinstance(name, str):  # say which file
            raise OSError(exc.errno, exc.strerror, name) from exc
        raise


def fsync_directory(directory):
    """Make a rename in ``directory`` durable (the directory entry reaches the disk)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
