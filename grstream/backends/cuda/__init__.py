"""The GPU backend (PyCUDA): generated kernels plus the data-movement engine.

Importing this package never imports PyCUDA; :func:`available` says whether the GPU path can run
here and :func:`require` raises :class:`~grstream.errors.DeviceError` naming what is missing.

Modules: ``kernelargs`` (typed kernel argument lists), ``skeletons`` (kernel templates),
``codegen`` (source generation), ``compile`` (translation + compile + caches), ``options`` (the
executor's typed options), ``facts`` (its footprint, capabilities and policies), ``loadbalance``
(its gather policy), ``buffers`` (static device buffers and their bytes; no CUDA calls),
``streams`` (copy and compute streams, events), ``movement`` (each plan unit's data on the
device), ``transfer`` / ``compact`` / ``zerocopy`` (transfer modes), ``device`` (context, module,
static buffers, readback), ``gathers`` and ``pushes`` (gather and push launches) and
``executor`` (:class:`CudaExecutor`, the engine's executor of plans on the GPU).
"""

__all__ = ["executor_class", "available", "require"]


def executor_class():
    """The engine executor of this package (imports PyCUDA only when it runs)."""
    from .executor import CudaExecutor
    return CudaExecutor


def available():
    """``(True, device name)`` when PyCUDA and a CUDA GPU are usable, else ``(False, reason)``."""
    try:
        import pycuda.driver as cuda
    except ImportError as exc:
        return False, f"PyCUDA is not installed ({exc}); install it with pip install pycuda"
    except Exception as exc:  # a broken build: libcuda missing, ABI mismatch
        return False, f"PyCUDA cannot be imported ({type(exc).__name__}: {exc})"
    try:
        cuda.init()
        count = cuda.Device.count()
    except Exception as exc:
        return False, f"the CUDA driver cannot be initialised ({exc}); is an NVIDIA driver installed?"
    if count == 0:
        return False, "no CUDA GPU found (the driver reports 0 devices)"
    return True, cuda.Device(0).name()


def require():
    """Raise DeviceError naming what is missing unless the GPU path can run."""
    ok, reason = available()
    if not ok:
        from ...errors import DeviceError
        raise DeviceError(f"device 'cuda' is not available: {reason}")
    return reason
