"""Kernel argument descriptors: C parameter lists, prepared signatures and launch checking (no GPU)."""
import re

import numpy as np
import pytest

from grstream.algorithms import bfs, pagerank, sssp
from grstream.backends.cuda.codegen import kernel_args
from grstream.backends.cuda.compile import module_source
from grstream.backends.cuda.kernelargs import (KernelArgs, KernelArgumentError, PreparedKernel, ScalarArg,
                                               VectorArg)
from grstream.errors import DeviceError

# the signatures the backend spelled out by hand before the descriptors (struct strings); apply
# took the changed bitmap and push degrees of issue 8 (two pointers before the counters)
HAND_WRITTEN = {
    "fill": "Pq", "hoist": "qP", "apply": "qqPPPPPPPP", "activate": "PPqqPP", "count": "PqPiP",
    "permute8": "PPPq", "gather_twc_in": "PPPqqPPi", "gather_merge_in": "PPPqqqPPq",
    "gather_twc_multi_in": "PiPPPi", "gather_merge_multi_in": "PiPPPq",
}


def declared_params(source, kernel):
    """The parameter list of ``kernel`` as it appears in the generated source."""
    m = re.search(re.escape(kernel) + r"\((.*?)\) \{", source, re.S)
    assert m, kernel
    return [p.strip() for p in m.group(1).split(",")]


@pytest.mark.parametrize("program", [bfs.BFS, pagerank.PageRank, sssp.SSSP], ids=lambda p: p.__name__)
def test_source_parameters_come_from_the_descriptor(program):
    spec = program.spec
    ks = module_source(spec, np.int32, {p: np.float32 for p in spec.edge_reads})
    assert set(ks.args) == set(ks.kernels)
    for phase, kname in ks.kernels.items():
        args = ks.args[phase]
        assert args.kernel == kname
        assert declared_params(ks.source, kname) == [a.declarator() for a in args.args]
        assert args.signature == "".join("P" if isinstance(a, VectorArg) else a.struct_char for a in args.args)


def test_signatures_match_the_hand_written_ones():
    ks = module_source(bfs.BFS.spec, np.int32, hoist=False)
    for phase, sig in HAND_WRITTEN.items():
        if phase in ks.args:
            assert ks.args[phase].signature == sig, phase
    # an edge property adds one pointer after the neighbour ids
    ks = module_source(sssp.SSSP.spec, np.int64, {"weight": np.float32})
    assert ks.args["gather_twc_in"].signature == "PPPPqqPPi"
    assert declared_params(ks.source, ks.kernels["gather_twc_in"])[2] == "const float* __restrict__ e_weight"
    assert kernel_args("k", "permute4").c_params(", ") == (
        "const long long* __restrict__ eid, const unsigned int* __restrict__ state, "
        "unsigned int* __restrict__ out, long long ne")


class FakeFunction:
    """Records what PyCUDA's Function would receive."""

    def __init__(self):
        self.prepared, self.calls = None, []

    def prepare(self, sig):
        self.prepared = sig

    def prepared_async_call(self, grid, block, stream, *args):
        self.calls.append(args)


class Allocation:
    """Stands for pycuda.driver.DeviceAllocation: converts to its address with int()."""

    def __init__(self, addr):
        self.addr = addr

    def __int__(self):
        return self.addr


def test_launch_converts_and_checks_arguments():
    args = KernelArgs("k", (VectorArg("float", "x"), ScalarArg(np.int64, "n"), ScalarArg(np.int32, "flag"),
                            VectorArg("unsigned", "f")))
    fn = FakeFunction()
    k = PreparedKernel(fn, args)
    assert fn.prepared == "PqiP"
    k.launch((1, 1), (256, 1, 1), None, Allocation(4096), 10, np.int64(1), None)
    (call,) = fn.calls
    assert call == (4096, 10, 1, 0)
    assert type(call[1]) is np.int64 and type(call[2]) is np.int32
    bad = [
        (Allocation(1), 10, 1),                       # one argument missing
        (Allocation(1), 10, 1, 0, 0),                 # one too many
        (np.zeros(4, np.float32), 10, 1, 0),          # a host array where a device address goes
        (Allocation(1), 10.0, 1, 0),                  # a float for a long long
        (Allocation(1), 10, 2 ** 31, 0),              # outside int
        (Allocation(1), 10, True, 0),                 # a bool for an int
        (-8, 10, 1, 0),                               # no negative addresses
    ]
    for values in bad:
        with pytest.raises(KernelArgumentError) as info:
            k.launch((1, 1), (256, 1, 1), None, *values)
        assert "kernel k" in str(info.value)
    assert len(fn.calls) == 1                          # nothing bad reached the GPU
    assert issubclass(KernelArgumentError, DeviceError)
    with pytest.raises(KernelArgumentError, match="'n'"):
        k.launch((1, 1), (256, 1, 1), None, 1, "10", 1, 0)


def test_float_scalars_take_numbers():
    arg = ScalarArg(np.float32, "alpha")
    assert arg.struct_char == "f" and arg.declarator() == "float alpha"
    assert type(arg.convert(1)) is np.float32
    with pytest.raises(TypeError):
        arg.convert(True)
    with pytest.raises(TypeError):
        ScalarArg(np.int8, "small")   # no struct character of its own: refused at declaration



def test_allocations_convert_fast_and_still_checked():
    """A class whose instances converted through ``__int__`` is remembered (a launch checks its
    later ones first), and an address it gives below zero is still refused."""
    from grstream.backends.cuda import kernelargs
    arg = VectorArg("float", "x")

    class Alloc(Allocation):
        pass
    assert arg.convert(Alloc(64)) == 64 and Alloc in kernelargs._ADDRESS_TYPES
    assert arg.convert(Alloc(128)) == 128
    with pytest.raises(TypeError):
        arg.convert(Alloc(-8))
    with pytest.raises(TypeError):
        arg.convert(np.float64(3.0))
