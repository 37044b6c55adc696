"""The executor classes' policies for planner tests that build Capabilities by hand."""
from grstream.backends.cpu.balance import cpu_policy
from grstream.backends.cuda.loadbalance import cuda_policy
from grstream.engine.capabilities import Policies

CPU_POLICIES = Policies(balance=cpu_policy)
CUDA_POLICIES = Policies(balance=cuda_policy)


def policies_for(caps, calibration=None):
    """The load-balance policy of ``caps.kind``'s executor, with ``calibration`` (or none)."""
    balance = cuda_policy if caps.kind == "cuda" else cpu_policy
    return Policies(balance=balance, calibration=calibration)
