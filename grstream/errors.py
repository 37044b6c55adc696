"""One exception hierarchy for everything grstream raises on bad input or bad state.

The CLI catches :class:`GrstreamError` and prints ``str(exc)`` as one line, so every
message must be complete on its own (say which file, line, shard or dataset), then exits with
the class's ``exit_code`` (the table is ``EXIT_CODES``, also in the README and ``grstream --help``).
"""

#: exit status of the ``grstream`` command -> what it means
EXIT_CODES = {
    0: "success",
    1: "the system failed the work: an output cannot be written (disk full, folder not "
       "writable), the machine ran out of memory while working (host or GPU), no usable GPU, "
       "another I/O error",
    2: "usage or bad input: invalid option or value, malformed input file, rejected program, "
       "a memory budget or limit too small for this graph (found before any work; the message "
       "gives the minimum)",
    3: "damaged store: checksum mismatch, truncated, inconsistent or foreign file, "
       "unsupported format version",
    4: "damaged checkpoint (--resume): a rank file missing, truncated or not matching the "
       "checksum its manifest recorded, or a manifest that is not one",
    70: "internal error: a bug in grstream (an engine invariant failed); please report it",
    130: "interrupted (Ctrl-C, SIGINT)",
    141: "standard output closed early: its reader (head, less, ...) stopped reading (SIGPIPE)",
    143: "terminated (SIGTERM)",
    144: "terminated (SIGTERM) after writing a checkpoint: continue with --resume DIR",
}
EXIT_SYSTEM, EXIT_USAGE, EXIT_CORRUPT, EXIT_INTERNAL = 1, 2, 3, 70
EXIT_INTERRUPTED, EXIT_TERMINATED = 130, 143
EXIT_DAMAGED_CHECKPOINT, EXIT_CHECKPOINTED = 4, 144
EXIT_BROKEN_PIPE = 141


class GrstreamError(Exception):
    """Base class of every error grstream raises on purpose."""

    #: the ``grstream`` command's exit status when this error ends it
    exit_code = EXIT_USAGE


class InputFormatError(GrstreamError):
    """An input graph file or object is malformed.

    ``path`` and ``line`` (1-based) locate the problem when known; ``message`` is what is
    wrong without them.
    """

    def __init__(self, message, path=None, line=None):
        self.path = None if path is None else str(path)
        self.line = line
        self.message = message
        where = ""
        if self.path is not None:
            where = self.path + (f":{line}" if line is not None else "") + ": "
        elif line is not None:
            where = f"line {line}: "
        super().__init__(where + message)


class ShardStoreError(GrstreamError):
    """A shard store cannot be opened, validated or read.

    ``shard`` and ``dataset`` name the failing part when known.
    """

    exit_code = EXIT_CORRUPT

    def __init__(self, message, path=None, shard=None, dataset=None):
        self.path = None if path is None else str(path)
        self.shard = shard
        self.dataset = dataset
        parts = []
        if self.path is not None:
            parts.append(self.path)
        if shard is not None:
            parts.append(f"shard {shard}")
        if dataset is not None:
            parts.append(f"dataset {dataset}")
        prefix = (", ".join(parts) + ": ") if parts else ""
        super().__init__(prefix + message)


class StoreNotFoundError(ShardStoreError):
    """The store file does not exist: a usage error, not damage."""

    exit_code = EXIT_USAGE


class ChecksumError(ShardStoreError):
    """A dataset's checksum does not match the one recorded when it was written."""


class FormatVersionError(ShardStoreError):
    """The store was written in a format version this grstream cannot read."""


class CodecError(ShardStoreError):
    """A compressed id dataset is inconsistent: its block offsets, reset masks and widths
    disagree, or it decodes to ids outside the store's vertex range."""


class OutputError(GrstreamError):
    """An output file cannot be written: its folder is missing or read-only, or the disk is full.

    ``path`` is the output as the user named it; ``errno`` the system error when there was one.
    """

    exit_code = EXIT_SYSTEM

    def __init__(self, message, path=None, errno=None):
        self.path = None if path is None else str(path)
        self.errno = errno
        super().__init__(message)


class MemoryBudgetError(GrstreamError):
    """A memory budget or limit is too small for the work, found before it starts; ``minimum``
    is the least that works (bytes). The user's input (exit status 2): a larger budget, or a
    store of smaller shards, runs it. The machine running out of memory during the work is a
    MemoryError or, on the GPU, a DeviceError (exit status 1)."""

    def __init__(self, message, minimum=None):
        self.minimum = minimum
        super().__init__(message)


class ProgramError(GrstreamError):
    """A GAS program is ill-formed or uses Python outside the translatable subset."""

    def __init__(self, message, program=None, lineno=None):
        self.program = program
        self.lineno = lineno
        where = ""
        if program is not None:
            where = f"{program}" + (f" line {lineno}" if lineno is not None else "") + ": "
        super().__init__(where + message)


class KernelCompileError(GrstreamError):
    """Generated CUDA source failed to compile; ``source`` holds it, ``log`` the compiler output."""

    def __init__(self, message, source="", log=""):
        self.source = source
        self.log = log
        super().__init__(message)

    def numbered_source(self):
        return "\n".join(f"{i + 1:5d}  {line}" for i, line in enumerate(self.source.splitlines()))


class DeviceError(GrstreamError):
    """The requested device is unavailable or failed (no GPU, no PyCUDA, out of memory)."""

    exit_code = EXIT_SYSTEM


class UsageError(GrstreamError):
    """A request is invalid: unknown algorithm, bad option value, source out of range, ..."""


class InternalError(GrstreamError):
    """An invariant of grstream itself failed (the planner and an executor disagree, a plan
    asks for what the engine promised never to ask): a bug, not bad input. The message says
    what failed and asks for a report; the ``grstream`` command exits with EXIT_INTERNAL (70,
    sysexits' EX_SOFTWARE)."""

    exit_code = EXIT_INTERNAL

    def __init__(self, message):
        super().__init__(f"internal error: {message} (this is a bug in grstream, not in the "
                         f"input: please report it with the command or program that failed, "
                         f"the store's `grstream info` and this message)")


def plain(value):
    """``repr`` of a value as a user wrote it: a numpy scalar as its Python number (``-10.0``,
    not ``np.float64(-10.0)``), a numpy dtype as its name, a string quoted; for messages that
    show a given value."""
    if type(value).__module__.split(".")[0] == "numpy":
        if getattr(value, "ndim", None) == 0 and hasattr(value, "item"):
            value = value.item()
        elif hasattr(value, "descr") and hasattr(value, "name"):
            value = value.name
    return repr(value)


class OutputExistsError(UsageError):
    """An output that may not replace an existing file (``overwrite=False``) found one there,
    before the work or when the finished file was about to take its name; ``path`` names it."""

    def __init__(self, message, path=None):
        self.path = None if path is None else str(path)
        super().__init__(message)


class CheckpointError(UsageError):
    """A checkpoint cannot be resumed here: another store, program, parameters, iteration limit,
    device or world size than the run that wrote it (exit status 2), or no checkpoint in the
    folder. ``path`` names the checkpoint folder."""

    def __init__(self, message, path=None):
        self.path = None if path is None else str(path)
        super().__init__(message if path is None else f"{path}: {message}")


class DamagedCheckpointError(CheckpointError):
    """A checkpoint's files are damaged or incomplete: a rank file missing, truncated or not
    matching the checksum its manifest recorded, or a manifest that is not one."""

    exit_code = EXIT_DAMAGED_CHECKPOINT


class Checkpointed(GrstreamError):
    """A run stopped on SIGTERM after writing its checkpoint (``path``, at ``iteration``):
    ``resume=path`` (``--resume``) continues it; every rank raises it (``rank``: this one's). Not a failure of the input: the ``grstream``
    command exits with EXIT_CHECKPOINTED (144)."""

    exit_code = EXIT_CHECKPOINTED
    #: every rank raises it at the same iteration: no rank is left to abort
    every_rank = True

    def __init__(self, path, iteration, rank=0):
        self.path, self.iteration, self.rank = str(path), int(iteration), int(rank)
        super().__init__(f"terminated (SIGTERM) after iteration {iteration}: checkpoint written "
                         f"to {path}; continue with --resume {path}")
