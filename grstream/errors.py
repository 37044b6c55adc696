"""One exception hierarchy for everything grstream raises on bad input or bad state.

The CLI catches :class:`GrstreamError` and prints ``str(exc)`` as one line, so every
message must be complete on its own (say which file, line, shard or dataset).
"""


class GrstreamError(Exception):
    """Base class of every error grstream raises on purpose."""


class InputFormatError(GrstreamError):
    """An input graph file or object is malformed.

    ``path`` and ``line`` (1-based) locate the problem when known.
    """

    def __init__(self, message, path=None, line=None):
        self.path = None if path is None else str(path)
        self.line = line
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


class ChecksumError(ShardStoreError):
    """A dataset's checksum does not match the one recorded when it was written."""


class FormatVersionError(ShardStoreError):
    """The store was written in a format version this grstream cannot read."""


class MemoryBudgetError(GrstreamError):
    """A memory budget is too small for the work; ``minimum`` is the least that works (bytes)."""

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


class UsageError(GrstreamError):
    """A request is invalid: unknown algorithm, bad option value, source out of range, ..."""
