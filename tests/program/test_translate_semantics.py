"""The translated device functions, compiled for the host, compute what numpy computes."""
import inspect

import numpy as np
import pytest

import grstream as gr
from grstream.program.cuda import translate

from . import samples
from .host_harness import HostProgram, assert_same, needs_gxx, numpy_reference, random_inputs


def algorithm_programs():
    import grstream.algorithms as algos
    import importlib
    import pkgutil
    found = []
    for info in pkgutil.iter_modules(algos.__path__):
        mod = importlib.import_module(f"grstream.algorithms.{info.name}")
        for obj in vars(mod).values():
            if inspect.isclass(obj) and issubclass(obj, gr.GASProgram) and obj.spec is not None \
                    and obj.__module__ == mod.__name__:
                found.append(obj)
    return found


ALL = samples.SAMPLES + algorithm_programs()


def instance(cls, rng, n):
    prog = object.__new__(cls)  # some algorithms' __init__ takes extra host-side state
    gr.GASProgram.__init__(prog)
    prog.num_vertices = n
    prog.num_edges = 4 * n
    prog.iteration = 3
    for a, dt in cls.spec.aggregate_dtype.items():
        setattr(prog, a, dt.type(rng.random() * 5))
    return prog


def test_real_algorithms_were_found():
    names = {c.__name__ for c in algorithm_programs()}
    assert {"BFS", "SSSP", "PageRank", "ConnectedComponents"} <= names


@needs_gxx
@pytest.mark.parametrize("cls", ALL, ids=lambda c: f"{c.__module__.split('.')[-1]}.{c.__name__}")
def test_host_translation_matches_numpy(cls, tmp_path):
    rng = np.random.default_rng(7)
    t = translate(cls)
    host = HostProgram(t, tmp_path)
    for trial in range(3):
        n = 50 + trial
        prog = instance(cls, rng, n)
        inputs = random_inputs(cls.spec, rng, n=n, m=300)
        if trial == 2:  # levels at the iteration boundary, zero degrees, ties
            for f, dt in cls.spec.vertex_fields.items():
                if np.dtype(dt).kind == "i":
                    inputs["cur"][f] = rng.integers(-1, 4, n).astype(dt)
        out = host.run(prog, inputs)
        ref = numpy_reference(prog, inputs)
        assert_same(out, ref)
        assert list(out["offsets"]) == [t.args_dtype.fields[m][1] for m in t.args_dtype.names]


@needs_gxx
def test_params_and_aggregates_reach_the_device_functions(tmp_path):
    """Changing a param or an aggregate on the instance changes the host result accordingly."""
    rng = np.random.default_rng(1)
    t = translate(samples.PageRank)
    host = HostProgram(t, tmp_path)
    inputs = random_inputs(samples.PageRank.spec, rng)
    outs = []
    for damping, dangling in ((0.85, 0.0), (0.5, 0.0), (0.5, 3.0)):
        prog = samples.PageRank(damping=damping)
        prog.num_vertices = inputs["n"]
        prog.dangling = np.float64(dangling)
        out = host.run(prog, inputs)
        assert_same(out, numpy_reference(prog, inputs))
        outs.append(out["nxt"]["rank"].copy())
    assert not np.array_equal(outs[0], outs[1]) and not np.array_equal(outs[1], outs[2])
