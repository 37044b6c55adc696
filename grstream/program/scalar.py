"""A checked GAS method as a scalar Python function: one edge or one vertex per call.

The translatable methods (``gather_map``, ``apply``) are written over numpy arrays, but their
subset (grstream/program/subset.py) is also plain Python over single numbers once every
``role.<field>`` read becomes an argument, ``v.<field> = x`` a local, ``self.<param>`` an
argument and ``gr.where(c, a, b)`` a conditional expression. :func:`scalar_method` makes that
rewrite on the checker's tree (the one source of the program) and returns the function's text
with the list of what each argument is; a backend that compiles per-element loops (the CPU's
numba kernels, grstream/backends/cpu/compiled.py) calls it from its loops. The ``gr``
functions keep their numpy spelling (``np.minimum`` ...), whose scalar forms give what the
arrays give elementwise (NaN propagation included).

Only methods whose arithmetic gives the numpy result on scalars qualify (:func:`qualifies`):
vertex fields, messages and edge properties of 64-bit or bool types, where a Python literal
and a 64-bit value promote alike in numpy and in scalar code, and no ``~`` (on a Python bool it
is the integer complement, not numpy's logical not).
"""
import ast
import copy

import numpy as np

#: argument kinds of a scalar method: ("vertex", role, field), ("id", role), ("edge", prop),
#: ("param", name) (params, aggregates and self built-ins), ("acc",)
_SAFE_KINDS = "biuf"


def _wide(dtype):
    dtype = np.dtype(dtype)
    return dtype == np.bool_ or (dtype.kind in "if" and dtype.itemsize == 8)


def qualifies(spec, stored_dtypes=None):
    """``(True, "")`` when ``spec``'s gather_map and apply translate to scalar code that gives
    the numpy result, else ``(False, why)``. ``stored_dtypes``: the edge properties' dtypes."""
    if not spec.has_gather:
        return False, "no gather_map"
    if spec.has_scatter or spec.edge_state:
        return False, "scatter / edge state"
    wide = list(spec.vertex_fields.values()) + [spec.gather_dtype]
    if not all(_wide(dt) for dt in wide):
        return False, "a vertex field or the message is not a 64-bit or bool type"
    for prop, dt in (stored_dtypes or {}).items():
        if prop in spec.edge_reads and np.dtype(dt).kind not in "if":
            return False, f"edge property {prop!r} is not an int or float"
    for name in ("gather_map", "apply"):
        tree = spec.analysis.methods[name].tree
        if any(isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Invert)
               for node in ast.walk(tree)):
            return False, f"{name} uses ~"
    return True, ""


class ScalarMethod:
    """``source``: ``def <name>(<args>): ...``; ``args``: what each argument is (kinds above);
    ``writes``: apply's written fields, returned after the changed flag as
    ``(changed, <field>, ...)``."""

    def __init__(self, name, source, args, writes=()):
        self.name, self.source, self.args, self.writes = name, source, tuple(args), tuple(writes)


def scalar_method(spec, method, name):
    """The scalar form of ``spec``'s checked ``method`` ("gather_map" or "apply"), as the
    function ``name``."""
    info = spec.analysis.methods[method]
    tree = copy.deepcopy(info.tree)
    self_name = tree.args.args[0].arg
    args = []

    def arg(kind):
        if kind not in args:
            args.append(kind)
        return _arg_name(kind)

    class Rewrite(ast.NodeTransformer):
        def visit_Attribute(self, node):
            if not isinstance(node.value, ast.Name):
                return self.generic_visit(node)
            base, attr = node.value.id, node.attr
            if base == self_name:
                return ast.Name(arg(("param", attr)), node.ctx)
            role = info.argmap.get(base)
            if role == "edge":
                return ast.Name(arg(("edge", attr)), node.ctx)
            if role == "v" and (attr in info.vertex_writes or isinstance(node.ctx, ast.Store)):
                if attr in spec.vertex_fields and not isinstance(node.ctx, ast.Store):
                    arg(("vertex", "v", attr))   # read before the write: the state's value
                return ast.Name(_arg_name(("vertex", "v", attr)), node.ctx)
            if role in ("src", "dst", "v"):
                kind = ("id", role) if attr == "id" else ("vertex", role, attr)
                return ast.Name(arg(kind), node.ctx)
            return self.generic_visit(node)

        def visit_Name(self, node):
            if info.argmap.get(node.id) == "acc":
                return ast.Name(arg(("acc",)), node.ctx)
            return node

        def visit_Call(self, node):
            self.generic_visit(node)
            canon = info.functions.get(_dotted(node.func))
            if canon == "where":
                cond, a, b = node.args
                return ast.IfExp(test=cond, body=a, orelse=b)
            return ast.Call(func=ast.Attribute(ast.Name("np", ast.Load()), canon, ast.Load()),
                            args=node.args, keywords=[])

    body = [s for s in tree.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    # the checker's dotted spellings of the calls are looked up before the rewrite
    new_body = [Rewrite().visit(s) for s in body]
    writes = sorted(info.vertex_writes) if method == "apply" else []
    if method == "apply":
        ret = new_body[-1]
        values = [ret.value] + [ast.Name(_arg_name(("vertex", "v", f)), ast.Load()) for f in writes]
        new_body[-1] = ast.Return(ast.Tuple(values, ast.Load()))
    fn = ast.FunctionDef(name=name, args=ast.arguments(
        posonlyargs=[], args=[ast.arg(_arg_name(k)) for k in args], kwonlyargs=[], kw_defaults=[],
        defaults=[]), body=new_body, decorator_list=[], returns=None, type_params=[])
    module = ast.fix_missing_locations(ast.Module([fn], type_ignores=[]))
    return ScalarMethod(name, ast.unparse(module), args, writes)


def _arg_name(kind):
    """A generated name no user local can take (users' names never hold a double underscore
    at both ends)."""
    return "__" + "_".join(kind) + "__"


def _dotted(node):
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return _dotted(node.value) + "." + node.attr
    return ""
