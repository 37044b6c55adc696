"""grstream: process graphs larger than GPU memory with Gather-Apply-Scatter programs.

Public API::

    import grstream as gr
    gr.build_shards(source, "shards/g.h5", num_shards=8)   # partition engine
    store = gr.open("shards/g.h5")                          # shard store
    result = gr.run(gr.algorithms.PageRank(), store)       # compute engine
"""
__version__ = "0.1.0"

from . import errors  # noqa: E402

#: names of the GAS program API, loaded with grstream.program (numpy) on first use
_PROGRAM = ("GASProgram", "monoid", "where", "minimum", "maximum", "abs", "sqrt", "exp", "log",
            "program_from_source")

__all__ = ["errors", "GASProgram", "monoid", "where", "minimum", "maximum", "abs", "sqrt", "exp",
           "log", "program_from_source", "build_shards", "open", "ShardStore", "run", "Result",
           "Session", "algorithms"]


def __getattr__(name):
    # Every subsystem loads on first use, so `import grstream` (and the command line's
    # parser) imports no numpy, h5py or scipy.
    if name in _PROGRAM:
        from . import program as _program
        return getattr(_program, name)
    if name in ("build_shards",):
        from .partition import build_shards
        return build_shards
    if name in ("open", "ShardStore"):
        from . import store as _store
        return getattr(_store, name)
    if name in ("run", "Result", "Session"):
        from . import engine as _engine
        return getattr(_engine, name)
    if name == "algorithms":
        import importlib
        return importlib.import_module(".algorithms", __name__)
    raise AttributeError(f"module 'grstream' has no attribute {name!r}")
