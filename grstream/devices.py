"""Where a run can execute: device names ("cpu", "cuda", "auto") to executor classes.

The engine asks this registry for an executor class and never imports a backend itself; a new
backend adds its name here (docs/ARCHITECTURE.md).
"""
from .errors import DeviceError, UsageError

DEVICES = ("cpu", "cuda", "auto")


def _cpu():
    from .backends.cpu import CpuExecutor
    return CpuExecutor


def resolve(device):
    """The executor class of ``device``; "cuda" without a usable GPU is a DeviceError and
    "auto" falls back to the CPU."""
    if device not in DEVICES:
        raise UsageError(f"unknown device {device!r}; choose one of {', '.join(DEVICES)}")
    if device == "cpu":
        return _cpu()
    try:
        from .backends import cuda
    except ImportError as exc:  # the GPU path is not built into this installation
        if device == "auto":
            return _cpu()
        raise DeviceError(f"the GPU path is not available: {exc}") from None
    ok, reason = cuda.available()
    if ok:
        # the CUDA package names its engine.executor.Executor subclass through executor_class();
        # until it has one, its Backend runs through the engine's legacy loop
        factory = getattr(cuda, "executor_class", None)
        return factory() if factory is not None else cuda.CudaBackend
    if device == "auto":
        return _cpu()
    raise DeviceError(f"device 'cuda' is not available: {reason}")
