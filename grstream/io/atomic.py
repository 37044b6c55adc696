"""Output files written atomically, and the checks every writing command makes before any work.

An output is written to ``NAME.tmp-<pid>`` beside it, flushed, fsynced and renamed onto ``NAME``,
so ``NAME`` is either the old file or the complete new one. Temporaries (and the bucket
directories of external builds, ``NAME.buckets-<pid>-*``) carry the writer's process id: a
writer removes those of processes that no longer exist from its folder before it starts.
Files are created with mode ``0o666`` minus the umask, as ``open()`` would. An output name
that holds something other than a regular file (a device, FIFO, socket or folder) is refused,
never replaced, and missing folders are refused, never created.
"""
import contextlib
import ctypes
import errno
import functools
import os
import re
import shutil
import stat
import tempfile
from pathlib import Path

import numpy as np

from ..errors import OutputError, OutputExistsError, UsageError

#: errors that mean the file system is full: they can only come from writing
_NO_SPACE = (errno.ENOSPC, errno.EDQUOT)
#: write() calls of at most this many bytes, so a numpy array is not copied whole
_WRITE_BLOCK = 1 << 24
_LEFTOVER = re.compile(r".+\.(?:tmp-(\d+)|buckets-(\d+)-[^/]+)")
_AT_FDCWD, _RENAME_NOREPLACE = -100, 1
#: renameat2 errors that mean "not here" (old kernel, a file system without it), not a failure
_NO_RENAMEAT2 = (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP)
#: link errors of file systems without hard links
_NO_HARD_LINKS = (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOSYS, errno.EMLINK)
_SPECIAL = ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
            (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"))


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


def check_output(path, inputs=(), what="output", stdout=False):
    """Refuse an output before any work: not a regular file, the same file as an input, or
    in a folder that is missing or unwritable.

    Parameters
    ----------
    path : str or Path
        The output file.
    inputs : iterable of str or Path
        Files the command reads; the output may be none of them (also through symlinks and
        hard links).
    what : str
        How the message names the output (``"-o"``, ``"--plot"``, ...).
    stdout : bool
        The option takes ``-`` for standard output: the message for a device says so.

    Returns
    -------
    Path

    Raises
    ------
    UsageError
        The output exists and is not a regular file (a folder, a device, a FIFO, a socket:
        renaming the finished file onto it would replace it), or is the same file as an input.
    OutputError
        Its folder does not exist or cannot be written.
    """
    path = Path(path)
    refuse_special(path, what, stdout)
    for source in inputs:
        if source is not None and _same_file(path, Path(source)):
            raise UsageError(f"{what} {path} is the input {source}: "
                             "the input would be replaced; choose another output name")
    check_folder(path.absolute().parent, f"{what} {path}")
    return path


def refuse_special(path, what="output", stdout=False):
    """Raise :class:`UsageError` when ``path`` exists (through symlinks) and is not a regular
    file: the finished output is renamed onto its name, which would replace a device node, a
    FIFO or a socket with a regular file."""
    try:
        mode = os.stat(path).st_mode
    except OSError:  # absent (or a dangling link, or in no folder): nothing there to replace
        return
    if stat.S_ISREG(mode):
        return
    if stat.S_ISDIR(mode):
        raise UsageError(f"{what} {path} is a folder, not a file name")
    kind = next((name for test, name in _SPECIAL if test(mode)), "a special file")
    hint = "; '-' writes to standard output" if stdout else ""
    raise UsageError(f"{what} {path} is {kind}, not a regular file: grstream replaces its "
                     f"outputs and will not replace it{hint}")


def check_folder(folder, what):
    """Raise unless files can be created in ``folder``; ``what`` names it in the message.

    Missing folders are not created: a mistyped path is refused, as by every other command.

    Raises
    ------
    UsageError
        ``folder`` exists but is not a folder.
    OutputError
        ``folder`` does not exist or cannot be written.
    """
    folder = Path(folder).absolute()
    if not folder.is_dir():
        if folder.exists():
            raise UsageError(f"cannot write {what}: {folder} is not a folder")
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


def creation_error(exc, target):
    """An :class:`OutputError` for ``exc``, an :class:`OSError` raised while creating
    ``target``'s temporary (HDF5's messages span lines and stop mid-sentence), else None."""
    if isinstance(exc, OSError) and not isinstance(exc, OutputError) and exc.errno:
        return OutputError(f"cannot write {target}: {os.strerror(exc.errno).lower()} "
                           "(nothing was written under that name)", path=target, errno=exc.errno)
    return None


@contextlib.contextmanager
def atomic_file(path, text=False, overwrite=True):
    """Yield a binary (or UTF-8 text) file object whose content appears at ``path`` on success.

    Leaving the block by an exception removes the temporary; a full disk raises
    :class:`OutputError` naming ``path``. Text is written without newline translation (what
    the caller writes is what the file holds, as the csv module needs). ``overwrite=False``
    takes the name only if no file has it when the content is complete (:func:`commit`).
    """
    path = Path(path)
    remove_stale_temporaries(path.absolute().parent)
    tmp = temporary_path(path)
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0),
                     0o666)
        with os.fdopen(fd, "w" if text else "wb",
                       **({"encoding": "utf-8", "newline": ""} if text else {})) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        commit(tmp, path, overwrite)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        full = no_space_error(exc, path)
        if full is not None:
            raise full from exc
        raise


def commit(tmp, path, overwrite=True):
    """Give the complete file ``tmp`` the name ``path`` (same folder), durably.

    ``overwrite``: replace what is there (atomically); a device, FIFO, socket or folder that
    took the name since the output was checked is refused all the same. Otherwise the name is
    taken only if it is free at that moment, exclusively: of several writers racing for it one
    wins and the others raise :class:`OutputExistsError`, each leaving ``tmp`` to its caller.
    """
    path = Path(path)
    refuse_special(path)
    if overwrite:
        os.replace(tmp, path)
    else:
        try:
            _move_no_replace(tmp, path)
        except FileExistsError:
            raise OutputExistsError(f"{path} exists (pass overwrite=True to replace it)",
                                    path=path) from None
    fsync_directory(path.absolute().parent)


def _move_no_replace(tmp, path):
    """Rename ``tmp`` to ``path`` unless ``path`` exists (:class:`FileExistsError`): the
    kernel's rename-no-replace, else a hard link (fails on an existing name), else creating
    the name with O_EXCL then renaming onto it (file systems without hard links)."""
    if _rename_no_replace(tmp, path):
        return
    try:
        os.link(tmp, path)
    except OSError as exc:
        if exc.errno not in _NO_HARD_LINKS:
            raise
    else:
        os.unlink(tmp)
        return
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0),
                     0o666))
    try:
        os.replace(tmp, path)
    except BaseException:
        os.unlink(path)  # the empty file reserving the name is ours
        raise


def _rename_no_replace(src, dst):
    """``renameat2(src, dst, RENAME_NOREPLACE)``; False where the C library, kernel or file
    system lacks it."""
    renameat2 = _renameat2()
    if renameat2 is None:
        return False
    if renameat2(_AT_FDCWD, os.fsencode(src), _AT_FDCWD, os.fsencode(dst), _RENAME_NOREPLACE) == 0:
        return True
    code = ctypes.get_errno()
    if code in _NO_RENAMEAT2:
        return False
    raise OSError(code, os.strerror(code), str(dst))  # EEXIST: FileExistsError


@functools.lru_cache(maxsize=None)
def _renameat2():
    try:
        function = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return None
    function.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p,
                         ctypes.c_uint)
    function.restype = ctypes.c_int
    return function


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
