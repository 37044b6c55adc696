"""The restricted-Python checker: what it rejects (with the right line) and what it records."""
import numpy as np
import pytest

import grstream as gr
from grstream.errors import ProgramError, UsageError
from grstream.program.cuda import translate

from . import samples
from .host_harness import load_module

HEADER = '''import grstream
import grstream as gr
from grstream import minimum as smallest

GLOBAL_K = 3

def helper(x):
    return x

class P(gr.GASProgram):
    vertex = {"x": "float64", "k": "int64"}
    reads = {"weight", "out_degree"}
    gather_reduce = gr.monoid.sum
    params = {"alpha": 0.5}
    aggregates = {"total": gr.monoid.sum}

    def aggregate_total(self, v):
        return v.x
'''
GATHER_OK = '''
    def gather_map(self, src, dst, edge):
        return src.x
'''
APPLY_OK = '''
    def apply(self, v, acc):
        return True
'''

# (method source with one line marked "#!", expected message fragment)
REJECTED = [
    ("gather", "y = 1\n        if y > 0:  #!\n            y = 2\n        return src.x", "if statements"),
    ("gather", "for i in range(3):  #!\n            pass\n        return src.x", "for loops"),
    ("gather", "while True:  #!\n            pass\n        return src.x", "while loops"),
    ("gather", "return src.x if src.k > 0 else 0.0  #!", "gr.where"),
    ("gather", "return (src.x > 0) and (dst.x > 0)  #!", "use & and |"),
    ("gather", "return (src.x > 0) or (dst.x > 0)  #!", "use & and |"),
    ("gather", "return not (src.x > 0)  #!", "use ~"),
    ("gather", "return 0 < src.x < 1  #!", "chained comparisons"),
    ("gather", "return helper(src.x)  #!", "call of helper"),
    ("gather", "return abs(src.x)  #!", "call of abs"),
    ("gather", "return src.x[0]  #!", "subscripts"),
    ("gather", "return (lambda q: q)(src.x)  #!", "call of"),
    ("gather", "return sum([src.x for _ in range(2)])  #!", "call of sum"),
    ("gather", "return src.y  #!", "'y' is not a vertex field"),
    ("gather", "return src.in_degree  #!", "add 'in_degree' to the program's reads"),
    ("gather", "return edge.length  #!", "edge property 'length' is neither in reads"),
    ("gather", "return self.beta  #!", "self.beta is not a param"),
    ("gather", "return GLOBAL_K * src.x  #!", "unknown name 'GLOBAL_K'"),
    ("gather", "src.x = 1.0  #!\n        return src.x", "cannot write src.x"),
    ("gather", "edge.weight = 1.0  #!\n        return src.x", "cannot write edge.weight"),
    ("gather", "return src.x.real  #!", "attribute access src.x.real"),
    ("gather", "return 'a'  #!", "constant 'a'"),
    ("gather", "return None  #!", "constant None"),
    ("gather", "y = z = src.x  #!\n        return y", "chained assignment"),
    ("gather", "a, b = src.x, dst.x  #!\n        return a", "tuple"),
    ("gather", "return y  #!", "unknown name 'y'"),
    ("gather", "return src  #!", "cannot be used as a value"),
    ("gather", "src = 1  #!\n        return src", "cannot assign to the argument"),
    ("gather", "y = src.x\n        y += 1.0  #!\n        return y", "write y = y + ..."),
    ("gather", "return gr.where(src.x > 0, 1.0)  #!", "where() takes 3"),
    ("gather", "return gr.sqrt(x=src.x)  #!", "positional arguments only"),
    ("gather", "return gr.mean(src.x)  #!", "call of gr.mean"),
    ("gather", "return src.x @ dst.x  #!", "operator @"),
    ("gather", "return src.k << 1  #!", "operator <<"),
    ("gather", "return src.k in dst.k  #!", "comparison in"),
    ("gather", "return src.x\n        y = 1  #!", "code after return"),
    ("gather", "y = src.x  #!", "must end with 'return'"),
    ("gather", "src.x + 1  #!\n        return src.x", "bare expression"),
    ("gather", "y: float = src.x  #!\n        return y", "annotated"),
    ("gather", "import math  #!\n        return src.x", "imports"),
    ("gather", "gr = 1  #!\n        return src.x", "shadows a gr function or module"),
    ("apply", "v.id = 3  #!\n        return True", "built-in vertex property and read-only"),
    ("apply", "v.out_degree = 3  #!\n        return True", "built-in vertex property and read-only"),
    ("apply", "v.zz = 3  #!\n        return True", "'zz' is not a declared vertex field"),
    ("apply", "v.x += 1.0  #!\n        return True", "augmented assignment to a field"),
    ("apply", "self.alpha = 2.0  #!\n        return True", "read-only"),
    ("apply", "return  #!", "return needs a value"),
    ("apply", "y = acc.real  #!\n        return True", "gathered value, it has no attributes"),
    # the changed mask is bool: a number is refused, not read as "nonzero changed"
    ("apply", "return v.x  #!", "returns float64 where the changed mask must be bool"),
    ("apply", "new = acc * 2.0\n        return new - v.x  #!", "returns float64 where"),
    ("apply", "return 1.0  #!", "returns a Python float where"),
    ("apply", "return 1  #!", "returns a Python int where"),
    ("apply", "v.k = v.k + 1\n        return v.k  #!", "returns int64 where"),
    ("apply", "return gr.where(acc > 0.0, 1, 0)  #!", "returns int64 where"),
]


def _program(tmp_path, which, body):
    lines = body.split("\n")
    if which == "gather":
        method = "\n    def gather_map(self, src, dst, edge):\n        " + "\n".join(lines) + "\n" + APPLY_OK
    else:
        method = GATHER_OK + "\n    def apply(self, v, acc):\n        " + "\n".join(lines) + "\n"
    text = HEADER + method
    expected = next(i + 1 for i, line in enumerate(text.split("\n")) if "#!" in line)
    return text, expected


@pytest.mark.parametrize("which,body,fragment", REJECTED, ids=[r[2][:30] for r in REJECTED])
def test_rejected_construct_names_the_line(tmp_path, which, body, fragment):
    text, expected = _program(tmp_path, which, body)
    with pytest.raises(ProgramError) as err:
        load_module(tmp_path / "prog.py", text)
    assert err.value.lineno == expected, str(err.value)
    assert err.value.program == "P"
    assert fragment in str(err.value), str(err.value)
    assert f"P line {expected}: " in str(err.value)


@pytest.mark.parametrize("returned", ["True", "False", "acc > v.x", "(v.x > 0.0) & (v.k != 1)",
                                      "gr.where(acc > 0.0, True, v.k > 2)", "~(acc > 0.0)"])
def test_apply_returning_a_bool_is_accepted_and_translates(tmp_path, returned):
    text = HEADER + GATHER_OK + f"\n    def apply(self, v, acc):\n        return {returned}\n"
    program = load_module(tmp_path / "prog.py", text).P
    assert "bool grstream_apply" in translate(program, {"weight": np.float64}).source


def test_accepted_program_analysis(tmp_path):
    text = HEADER + '''
    def gather_map(self, s, d, e):
        """Renamed arguments are fine; their roles are what counts."""
        w = e.weight * self.alpha
        w += 1
        return grstream.where(s.k > 0, smallest(s.x, w), gr.abs(s.x) / s.out_degree)

    def apply(self, v, acc):
        pass
        v.x = acc + self.total + v.id
        y = v.x * 2
        v.k = v.k + self.iteration
        return (y > 0) & ~(acc < self.num_vertices)
'''
    mod = load_module(tmp_path / "ok.py", text)
    a = mod.P.spec.analysis
    g = a.methods["gather_map"]
    assert a.gather_uses == {"src", "edge"}
    assert g.vertex_reads == {"src": {"k", "x", "out_degree"}}
    assert g.edge_reads == {"weight"} and g.params == {"alpha"}
    assert g.argmap == {"s": "src", "d": "dst", "e": "edge"}
    assert set(g.functions.values()) == {"where", "minimum", "abs"}
    ap = a.methods["apply"]
    assert a.apply_writes == {"x", "k"} == ap.vertex_writes
    assert ap.vertex_reads == {"v": {"id", "k"}}
    assert ap.uses == {"v", "acc"} and ap.aggregates == {"total"}
    assert ap.self_builtins == {"iteration", "num_vertices"}
    assert a.methods["aggregate_total"].vertex_reads == {"v": {"x"}}
    assert a.methods["gather_map"].lineno == text.split("\n").index("    def gather_map(self, s, d, e):") + 1
    assert a.scatter_writes == set()


def test_gather_uses_for_samples():
    assert samples.BFS.spec.analysis.gather_uses == {"src"}
    assert samples.SSSP.spec.analysis.gather_uses == {"src", "edge"}
    assert samples.CC.spec.analysis.gather_uses == {"src", "dst"}


def test_program_without_gather_has_empty_gather_uses():
    class NoGather(gr.GASProgram):
        vertex = {"x": "int32"}

        def apply(self, v, acc):
            v.x = v.x + 1
            return False

    assert NoGather.spec.analysis.gather_uses == set()
    assert NoGather.spec.analysis.apply_writes == {"x"}


def test_scatter_writes_only_declared_edge_state(tmp_path):
    text = HEADER + GATHER_OK + APPLY_OK + """
    def scatter(self, src, dst, edge):
        edge.weight = edge.weight * 0.5
"""
    with pytest.raises(ProgramError, match="scatter needs|edge_state"):
        load_module(tmp_path / "sc.py", text)


def test_scatter_with_edge_state_is_checked_and_translated(tmp_path):
    text = HEADER.replace('reads = {"weight", "out_degree"}',
                          'reads = {"weight", "out_degree"}\n    edge_state = {"share": "float64"}')
    text += GATHER_OK + APPLY_OK + """
    def scatter(self, src, dst, edge):
        edge.share = edge.weight * 0.5 + edge.share
"""
    mod = load_module(tmp_path / "sc2.py", text)
    assert mod.P.spec.analysis.scatter_writes == {"share"}
    assert mod.P.spec.analysis.methods["scatter"].edge_reads == {"weight", "share"}
    t = translate(mod.P)
    # stored properties by value, edge state from the current buffer, writes to the next one
    assert t.edge_props["scatter"] == ["weight"]
    assert "void grstream_scatter(long long src, long long dst, long long e, double e_weight)" in t.source
    assert "g.ecur_share[e]" in t.source and "g.enxt_share[e] = " in t.source
    k = t.pointer_members.index("ecur_share")
    assert t.pointer_members[k + 1] == "enxt_share" and t.pointer_members[k + 2] == "in_degree"
    assert "enxt_share" in t.required_pointers


def test_param_keeps_default_type():
    p = samples.PageRank(damping=1)
    assert isinstance(p.damping, float)
    b = samples.BFS(source=4.0)
    assert isinstance(b.source, int) and b.source == 4
    with pytest.raises(ProgramError, match="integer parameter"):
        samples.BFS(source=1.5)


# -- translator errors (typing) ------------------------------------------------------------------
TYPE_ERRORS = [
    ("return src.x & dst.x  #!", "'&' is not defined for float64"),
    ("return ~src.x  #!", "unary '~' is not defined"),
    ("return ~(self.alpha > 1.0)  #!", "~ on a Python bool"),
    ("return src.k ** (-1)  #!", "'**' is not defined"),
]


@pytest.mark.parametrize("body,fragment", TYPE_ERRORS)
def test_translator_rejects_what_numpy_rejects(tmp_path, body, fragment):
    text, expected = _program(tmp_path, "gather", body)
    mod = load_module(tmp_path / "t.py", text)
    with pytest.raises(ProgramError) as err:
        translate(mod.P)
    assert err.value.lineno == expected and fragment in str(err.value), str(err.value)


def test_translator_in_place_dtype_rule(tmp_path):
    text, expected = _program(tmp_path, "gather", "y = src.k * 2\n        y += 0.5  #!\n        return y")
    mod = load_module(tmp_path / "t.py", text)
    with pytest.raises(ProgramError, match="numpy refuses") as err:
        translate(mod.P)
    assert err.value.lineno == expected


def test_translation_outputs(tmp_path):
    t = translate(samples.SSSP, edge_dtypes={"weight": "float32"})
    assert t.msg_ctype == "double" and t.field_ctypes == {"dist": "double"}
    assert t.edge_props == {"gather_map": ["weight"], "apply": []}
    assert "grstream_gather_map(long long src, long long dst, float e_weight)" in t.source
    assert "__constant__ GasArgs g;" in t.source and "grstream_atomic_min(double* addr" in t.source
    assert len(t.key) == 64 and t.key != translate(samples.SSSP).key
    assert t.numbered_source().split("\n")[0].startswith("    1  ")
    with pytest.raises(ProgramError, match="does not have"):
        translate(samples.SSSP, edge_dtypes={})
    with pytest.raises(UsageError):
        translate(object())
    with pytest.raises(ProgramError, match="float16"):
        class Half(gr.GASProgram):
            vertex = {"h": "float16"}

            def apply(self, v, acc):
                return True
        translate(Half)


def test_pack_args_layout_and_values():
    t = translate(samples.PageRank)
    names = list(t.args_dtype.names)
    assert names == ["cur_rank", "nxt_rank", "cur_delta", "nxt_delta", "in_degree", "out_degree",
                     "num_vertices", "num_edges", "iteration", "p_damping", "p_tol",
                     "agg_dangling", "agg_err"]
    prog = samples.PageRank(damping=0.5)
    prog.num_vertices, prog.iteration, prog.dangling = 10, 4, np.float64(2.5)
    ptrs = {"cur_rank": 1, "nxt_rank": 2, "cur_delta": 3, "nxt_delta": 4, "out_degree": 5}
    rec = np.frombuffer(t.pack_args(prog, ptrs), t.args_dtype)[0]
    assert rec["p_damping"] == 0.5 and rec["num_vertices"] == 10 and rec["iteration"] == 4
    assert rec["agg_dangling"] == 2.5 and rec["out_degree"] == 5 and rec["in_degree"] == 0
    with pytest.raises(UsageError, match="out_degree"):
        t.pack_args(prog, {k: v for k, v in ptrs.items() if k != "out_degree"})
    with pytest.raises(UsageError, match="no pointer member"):
        t.pack_args(prog, dict(ptrs, bogus=1))
    with pytest.raises(UsageError, match="expected an instance of PageRank"):
        t.pack_args(samples.BFS(), ptrs)
