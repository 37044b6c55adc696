"""The CUDA translator's expression and statement emitter: one checked method to one C function.

Split from :mod:`.cuda`, which owns the module contract (``GasArgs``, the device functions'
signatures) and drives this emitter once per translated method.
"""
import ast
import operator

import numpy as np

from ..errors import ProgramError
from .cuda_types import (BINARY_PY, CANONICAL, SYMBOLS, WEAK_DTYPE, Val, binary, common, ctype, result, weak)
from .functions import FUNCTIONS

_CMP = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}
_FLOATFN = {"sqrt": "sqrt", "exp": "exp", "log": "log", "abs": "fabs"}


def _param_val(name, default):
    code = "g.p_" + name
    if isinstance(default, np.generic):
        return Val(code, np.asarray(default).dtype)
    if isinstance(default, bool):
        return weak(f"((bool){code})", bool, default)
    return weak(code, type(default), default)


def cast(val, c):
    return val.code if val.ctype == c else f"(({c})({val.code}))"


class _Emitter:
    """Emits one device function from one checked method."""

    def __init__(self, spec, info, edge_dtypes, after_apply=False):
        self.spec = spec
        # an aggregate term read right after apply: the fields apply writes from g.nxt_F
        self.after_apply = after_apply
        self.info = info
        self.edge_dtypes = edge_dtypes
        self.env = {}         # Python local -> Val of its current binding
        self.fields = {}      # apply: vertex field -> Val of its assigned value
        self.edge_fields = {}  # scatter: edge state -> Val of its assigned value
        self.serial = {}
        self.lines = []
        self.edge_args = sorted(info.edge_reads)
        self.return_type = None  # scatter returns nothing
        if info.name == "scatter":  # edge state is read from g.ecur_S[e], stored properties by value
            self.edge_args = sorted(set(info.edge_reads) - set(spec.edge_state))
        self.self_name = info.tree.args.args[0].arg

    def fail(self, node, msg):
        raise ProgramError(f"{self.info.name}: {msg}", self.spec.name, self.info.line(node))

    def fresh(self, base):
        k = self.serial.get(base, 0) + 1
        self.serial[base] = k
        return f"{base}_{k}"

    def declare(self, base, val, node):
        var = self.fresh(base)
        self.lines.append(f"    const {val.ctype} {var} = {val.code};  /* line {self.info.line(node)} */")
        return Val(var, val.dtype, val.weak, val.sample)

    # -- function ----------------------------------------------------------------------------
    def function(self):
        name = self.info.name
        spec = self.spec
        msg = ctype(spec.gather_dtype)
        if name == "gather_map":
            args = ["long long src", "long long dst"] + [
                f"{ctype(self.edge_dtypes[p])} e_{p}" for p in self.edge_args]
            ret = msg
            cname = "grstream_gather_map"
        elif name == "apply":
            args, ret, cname = ["long long v", f"{msg} acc"], "bool", "grstream_apply"
        elif name == "scatter":
            args = ["long long src", "long long dst", "long long e"] + [
                f"{ctype(self.edge_dtypes[p])} e_{p}" for p in self.edge_args]
            ret, cname = "void", "grstream_scatter"
        else:
            agg = name[len("aggregate_"):]
            args, ret = ["long long v"], ctype(spec.aggregate_dtype[agg])
            cname = ("grstream_aggnext_" + agg) if self.after_apply else ("grstream_" + name)
        body = self.info.tree.body
        result_code = None
        for stmt in body:
            if isinstance(stmt, ast.Return) and stmt.value is None:  # scatter's bare return
                break
            if isinstance(stmt, ast.Return):
                val = self.expr(stmt.value)
                self.return_type = (val.dtype, val.weak)
                if name == "apply" and val.dtype.kind != "b":
                    got = f"a Python {val.pytype.__name__}" if val.weak else f"{val.dtype}"
                    self.fail(stmt, f"returns {got} where the changed mask must be bool: return a "
                                    f"comparison (new < v.x), a bool expression or True/False")
                dt = np.dtype(bool) if name == "apply" else self._ret_dtype()
                result_code = self.declare("grstream_result", Val(cast(val, ret), dt), stmt).code
            else:
                self.stmt(stmt)
        for f, val in self.fields.items():
            self.lines.append(f"    g.nxt_{f}[v] = {cast(val, ctype(spec.vertex_fields[f]))};")
        for st, val in self.edge_fields.items():
            self.lines.append(f"    g.enxt_{st}[e] = {cast(val, ctype(spec.edge_state[st]))};")
        self.lines.append(f"    return {result_code};" if result_code is not None else "    return;")
        after = " (the state apply just wrote)" if self.after_apply else ""
        head = (f"/* {self.spec.name}.{name}{after}, Python line {self.info.lineno} */\n"
                f"__device__ __forceinline__ {ret} {cname}({', '.join(args)}) {{")
        return "\n".join([head, *self.lines, "}"]) + "\n"

    def _ret_dtype(self):
        name = self.info.name
        if name == "gather_map":
            return self.spec.gather_dtype
        return self.spec.aggregate_dtype[name[len("aggregate_"):]]

    # -- statements --------------------------------------------------------------------------
    def stmt(self, stmt):
        if isinstance(stmt, ast.Pass) or (isinstance(stmt, ast.Expr)):  # docstring
            return
        if isinstance(stmt, ast.Assign):
            target = stmt.targets[0]
            val = self.expr(stmt.value)
            if isinstance(target, ast.Name):
                self.env[target.id] = self.declare("l_" + target.id, val, stmt)
            elif self.info.name == "scatter":  # edge.S (the checker admits nothing else)
                self.edge_fields[target.attr] = self.declare("w_" + target.attr, val, stmt)
            else:  # v.F in apply (the checker admits nothing else)
                self.fields[target.attr] = self.declare("f_" + target.attr, val, stmt)
            return
        if isinstance(stmt, ast.AugAssign):
            name = stmt.target.id
            cur = self.env[name]
            rhs = self.expr(stmt.value)
            new = self.binop(stmt.op, cur, rhs, stmt)
            if not cur.weak:
                # numpy's in-place operator keeps the array's dtype (same_kind casting).
                if not np.can_cast(new.dtype, cur.dtype, "same_kind"):
                    self.fail(stmt, f"'{name} {SYMBOLS[type(stmt.op)]}= ...' would store "
                                    f"{new.dtype} into {cur.dtype} {name!r}, which numpy refuses; "
                                    f"write {name} = {name} {SYMBOLS[type(stmt.op)]} ...")
                new = Val(cast(new, cur.ctype), cur.dtype)
            self.env[name] = self.declare("l_" + name, new, stmt)
            return
        self.fail(stmt, f"cannot translate {type(stmt).__name__}")  # pragma: no cover - checker

    # -- expressions -------------------------------------------------------------------------
    def expr(self, node):
        if isinstance(node, ast.Constant):
            return self.constant(node)
        if isinstance(node, ast.Name):
            if node.id in self.env:
                return self.env[node.id]
            return Val("acc", self.spec.gather_dtype)  # the only other admitted name
        if isinstance(node, ast.Attribute):
            return self.attribute(node)
        if isinstance(node, ast.BinOp):
            return self.binop(node.op, self.expr(node.left), self.expr(node.right), node)
        if isinstance(node, ast.UnaryOp):
            return self.unary(node)
        if isinstance(node, ast.Compare):
            return self.compare(node)
        if isinstance(node, ast.Call):
            return self.call(node)
        self.fail(node, f"cannot translate {type(node).__name__}")  # pragma: no cover - checker

    def constant(self, node):
        v = node.value
        if isinstance(v, bool):
            return weak("true" if v else "false", bool, v)
        if isinstance(v, int):
            if not -2 ** 63 <= v < 2 ** 63:
                self.fail(node, f"integer literal {v} does not fit in 64 bits")
            return weak(f"{v}LL", int, v)
        if v != v or v in (float("inf"), float("-inf")):
            return weak("HUGE_VAL" if v > 0 else "(-HUGE_VAL)", float, v)
        return weak(repr(v), float, v)

    def attribute(self, node):
        base, attr = node.value.id, node.attr
        spec = self.spec
        if base == self.self_name:
            if attr in spec.params:
                return _param_val(attr, spec.params[attr])
            if attr in spec.aggregates:
                return Val("g.agg_" + attr, spec.aggregate_dtype[attr])
            return weak("g." + attr, int)
        role = self.info.argmap[base]
        scatter = self.info.name == "scatter"
        if role == "edge":
            if scatter and attr in self.edge_fields:
                return self.edge_fields[attr]
            if scatter and attr in spec.edge_state:
                return Val(f"g.ecur_{attr}[e]", spec.edge_state[attr])
            return Val("e_" + attr, self.edge_dtypes[attr])
        if role == "v" and attr in self.fields:
            return self.fields[attr]
        if attr == "id":
            return Val(role, np.dtype(np.int64))
        if attr in ("in_degree", "out_degree"):
            return Val(f"g.{attr}[{role}]", np.dtype(np.int64))
        if scatter and role == "src":  # the source's state after this iteration's apply
            return Val(f"g.nxt_{attr}[src]", spec.vertex_fields[attr])
        if self.after_apply and attr in spec.analysis.apply_writes:
            return Val(f"g.nxt_{attr}[{role}]", spec.vertex_fields[attr])
        return Val(f"g.cur_{attr}[{role}]", spec.vertex_fields[attr])

    def binop(self, op, a, b, node):
        res = binary(op, a, b)
        if isinstance(res, str):
            self.fail(node, res)
        dt, wk = res
        c = ctype(dt)
        A, B = cast(a, c), cast(b, c)
        kind = dt.kind
        t = type(op)
        if kind == "b":
            code = {ast.Add: f"({A} || {B})", ast.Mult: f"({A} && {B})",
                    ast.BitAnd: f"({A} && {B})", ast.BitOr: f"({A} || {B})",
                    ast.BitXor: f"({A} != {B})"}.get(t)
        elif kind == "f":
            sfx = "f" if c == "float" else ""
            code = {ast.Add: f"({A} + {B})", ast.Sub: f"({A} - {B})", ast.Mult: f"({A} * {B})",
                    ast.Div: f"({A} / {B})", ast.FloorDiv: f"grstream_floordiv({A}, {B})",
                    ast.Mod: f"grstream_mod({A}, {B})", ast.Pow: f"pow{sfx}({A}, {B})"}.get(t)
        else:
            u = "(unsigned long long)"
            code = {ast.Add: f"(({c})({u}{A} + {u}{B}))", ast.Sub: f"(({c})({u}{A} - {u}{B}))",
                    ast.Mult: f"(({c})({u}{A} * {u}{B}))",
                    ast.FloorDiv: f"grstream_ifloordiv<{c}>({A}, {B})",
                    ast.Mod: f"grstream_imod<{c}>({A}, {B})",
                    ast.Pow: f"grstream_ipow<{c}>({A}, {B})",
                    ast.BitAnd: f"(({c})({A} & {B}))", ast.BitOr: f"(({c})({A} | {B}))",
                    ast.BitXor: f"(({c})({A} ^ {B}))"}.get(t)
        if code is None:  # pragma: no cover - numpy's typing rules out the other combinations
            self.fail(node, f"'{SYMBOLS[t]}' on {dt} has no translation")
        sample = None
        if wk and a.sample is not None and b.sample is not None:
            try:  # a constant sub-expression's value, for numpy's range checks further up
                sample = BINARY_PY[t](a.sample, b.sample)
            except (ArithmeticError, ValueError):
                pass
            if type(sample) not in (bool, int, float):
                sample = None
        return Val(code, dt, wk, sample)

    def unary(self, node):
        a = self.expr(node.operand)
        op = type(node.op)
        sym = SYMBOLS[op]
        if a.weak:
            if op is ast.Invert and a.pytype is bool:
                self.fail(node, "~ on a Python bool is integer inversion (~True == -2); apply ~ "
                                "to an array expression, or compare with == instead")
            py = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert}[op]
            try:
                dt, wk = WEAK_DTYPE[type(py(CANONICAL[a.pytype]))], True
            except TypeError as exc:
                self.fail(node, f"unary '{sym}' is not defined for Python {a.pytype.__name__} ({exc})")
            # keep the value of a negated literal: numpy checks it against the array's dtype
            sample = None if a.sample is None else py(a.sample)
        else:
            fn = {ast.USub: np.negative, ast.UAdd: np.positive, ast.Invert: np.invert}[op]
            res = result(fn, (a,), f"unary '{sym}'")
            if isinstance(res, str):
                self.fail(node, res)
            dt, wk = res
            sample = None
        c = ctype(dt)
        A = cast(a, c)
        if op is ast.UAdd:
            code = A
        elif op is ast.USub:
            code = f"(-{A})" if dt.kind == "f" else f"(({c})(0ULL - (unsigned long long){A}))"
        else:
            code = f"(!{A})" if dt.kind == "b" else f"(({c})(~{A}))"
        return Val(code, dt, wk, sample if wk else None)

    def compare(self, node):
        a, b = self.expr(node.left), self.expr(node.comparators[0])
        ct = common(a, b)
        if isinstance(ct, str):
            self.fail(node, ct)
        op = _CMP[type(node.ops[0])]
        ints = [v for v in (a, b) if not v.weak and v.dtype.kind in "iu"]
        weak_int = [v for v in (a, b) if v.weak and v.pytype is int]
        if len(ints) == 1 and len(weak_int) == 1:
            # numpy compares an integer array with a Python int by value, even one outside the
            # array's range (uint8 < -3 is False): never cast the literal to the array's type
            return Val(_compare_by_value(a, b, op), np.dtype(bool), False)
        c = ctype(ct)
        code = f"({cast(a, c)} {op} {cast(b, c)})"
        return Val(code, np.dtype(bool), a.weak and b.weak)

    def call(self, node):
        from .checker import _dotted
        canon = self.info.functions[_dotted(node.func)]
        args = [self.expr(x) for x in node.args]
        res = result(FUNCTIONS[canon], args, f"gr.{canon}()")
        if isinstance(res, str):
            self.fail(node, res)
        dt, _ = res
        c = ctype(dt)
        kind = dt.kind
        if canon == "where":
            cond = cast(args[0], "bool")
            return Val(f"({cond} ? {cast(args[1], c)} : {cast(args[2], c)})", dt)
        A = [cast(x, c) for x in args]
        if canon in ("minimum", "maximum"):
            if kind == "b":
                code = f"({A[0]} && {A[1]})" if canon == "minimum" else f"({A[0]} || {A[1]})"
            elif kind == "f":
                code = f"grstream_f{canon}({A[0]}, {A[1]})"
            else:
                code = f"grstream_i{canon}<{c}>({A[0]}, {A[1]})"
        elif canon == "abs" and kind != "f":
            code = A[0] if kind == "b" else f"grstream_iabs<{c}>({A[0]})"
        else:
            sfx = "f" if c == "float" else ""
            code = f"{_FLOATFN[canon]}{sfx}({A[0]})"
        return Val(code, dt)



def _compare_by_value(a, b, op):
    """C code of ``a <op> b`` for an integer array value and a Python int, compared by value."""
    strong = a if not a.weak else b
    if strong.dtype != np.dtype(np.uint64):
        return f"((long long)({a.code}) {op} (long long)({b.code}))"
    # uint64 against a Python int: a negative int is below every uint64
    w = b if strong is a else a
    negative_true = {"<": strong is not a, "<=": strong is not a, ">": strong is a, ">=": strong is a,
                     "==": False, "!=": True}[op]
    return (f"((long long)({w.code}) < 0LL ? {'true' if negative_true else 'false'} : "
            f"((unsigned long long)({a.code}) {op} (unsigned long long)({b.code})))")


def check_changed_mask(spec):
    """Refuse, when the class is defined, an ``apply`` whose result is not bool (numpy's types,
    as this emitter infers them), so the CPU refuses what the translation refuses instead of
    reading any nonzero number as "changed". An apply the translation refuses for a GPU-only
    reason before its return is typed is left to numpy on the CPU."""
    emitter = _Emitter(spec, spec.analysis.methods["apply"], {})
    try:
        emitter.function()
    except (ProgramError, KeyError) as exc:
        typed = emitter.return_type
        if isinstance(exc, ProgramError) and typed is not None and typed[0].kind != "b":
            raise
