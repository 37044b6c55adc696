"""Translate a GAS program's checked Python methods to CUDA C device functions.

:func:`translate` returns a :class:`TranslatedProgram` whose ``source`` the GPU backend splices
into its kernel skeletons. The contract between the two:

``struct GasArgs`` (defined in ``source``, one ``__constant__ GasArgs g;`` per module), members in
this order::

    for each vertex field F (declaration order), C type T:   const T* cur_F;  T* nxt_F;
    for each edge_state S (declaration order), C type T:     const T* ecur_S;  T* enxt_S;
    const long long* in_degree;  const long long* out_degree;
    long long num_vertices;  long long num_edges;  long long iteration;
    for each param p (declaration order):   p_p  -- double for a float default, long long for an
                                               int default, int for a bool default (a numpy
                                               scalar default keeps its own type)
    for each aggregate a:                   agg_a  -- C type of spec.aggregate_dtype[a]

``TranslatedProgram.args_dtype`` is the numpy structured dtype with the same layout (pointers as
uint64) and ``pack_args(program, pointers)`` the bytes to copy into ``g`` before each launch.

Device functions (``MSG_T`` is ``msg_ctype``, the C type of ``spec.gather_dtype``):

* ``MSG_T grstream_gather_map(long long src, long long dst[, T e_P ...])`` with one argument per
  edge property gather_map reads, in ``edge_props["gather_map"]`` (sorted) order; an edge_state
  name among them is passed like a stored property (its current value for the edge);
* ``bool grstream_apply(long long v, MSG_T acc)``: reads ``g.cur_F[v]`` (a field it assigned
  reads the assigned value), writes each field it assigns to ``g.nxt_F[v]`` and returns the
  changed mask. Fields it does not assign are not written: ``nxt_F`` must already hold them;
* ``AGG_T grstream_aggregate_<name>(long long v)``: the aggregate's per-vertex term;
* ``void <monoid.cuda_atomic>(T* addr, T val)`` (``grstream_atomic_add/min/max/or/and/mul``) for
  the gather monoid on MSG_T and each aggregate's monoid on its dtype.

* ``void grstream_scatter(long long src, long long dst, long long e[, T e_P ...])``: ``e`` is the
  edge's position in the global CSR order; it reads the source's new state (``g.nxt_F[src]``),
  the destination's ``g.cur_F[dst]``, edge state ``g.ecur_S[e]`` (a state it assigned reads the
  assigned value) and the stored properties in ``edge_props["scatter"]`` order, and writes each
  edge_state it assigns to ``g.enxt_S[e]`` (buffered: gathers see it from the next iteration).

Semantics follow numpy on the declared dtypes (see :mod:`.cuda_types`), including NEP 50 Python
scalars, Python floor division and modulo, integer division by zero giving 0 and wrap-around on
integer overflow, NaN-propagating minimum/maximum. Known differences: float-to-int conversion of
out-of-range values (undefined in both), negative integer powers (numpy raises; here 0 unless
the base is +-1), a Python-int param too large for the array's dtype (numpy raises; here it wraps),
and sqrt/exp/log/pow of float32, which CUDA's libm may round differently by an ulp or two.
"""
import ast
import hashlib
import operator
from dataclasses import dataclass, field
from typing import Dict, List

import numpy as np

from ..errors import ProgramError, UsageError
from . import cuda_prelude
from .checker import SELF_BUILTINS
from .cuda_types import (BINARY_PY, CANONICAL, SYMBOLS, WEAK_DTYPE, Val, binary, check_ctype, common, ctype, result, weak)
from .functions import FUNCTIONS

_CMP = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}
_FLOATFN = {"sqrt": "sqrt", "exp": "exp", "log": "log", "abs": "fabs"}
_PARAM_CTYPE = {float: "double", int: "long long", bool: "int"}
_PARAM_NP = {"double": "f8", "long long": "i8", "int": "i4"}


@dataclass
class TranslatedProgram:
    """A program's CUDA C translation and how to pass it its arguments (module docstring)."""

    name: str
    source: str
    msg_ctype: str
    edge_props: Dict[str, List[str]]
    field_ctypes: Dict[str, str]
    args_dtype: np.dtype
    spec: object = field(repr=False)
    param_members: Dict[str, str] = field(default_factory=dict)   # param -> member
    pointer_members: List[str] = field(default_factory=list)
    required_pointers: List[str] = field(default_factory=list)
    #: method -> (numpy dtype, is a Python scalar) of the value it returns, before the cast to
    #: the declared message/aggregate type; what numpy would compute on the CPU.
    return_types: Dict[str, tuple] = field(default_factory=dict)
    edge_dtypes: Dict[str, np.dtype] = field(default_factory=dict)

    @property
    def key(self):
        """sha256 of ``source``: the compile-cache key (add the architecture)."""
        return hashlib.sha256(self.source.encode()).hexdigest()

    def numbered_source(self):
        """``source`` with line numbers, as compile errors refer to them."""
        return "\n".join(f"{i + 1:5d}  {line}" for i, line in enumerate(self.source.splitlines()))

    def pack_args(self, program, pointers):
        """The bytes of ``GasArgs`` for ``program``'s current state.

        Parameters
        ----------
        program : GASProgram
            An instance of the translated program; params, ``num_vertices``, ``num_edges``,
            ``iteration`` and aggregates are read from it.
        pointers : dict
            Member name (``cur_F``, ``nxt_F``, ``in_degree``, ``out_degree``) -> device address.
            ``in_degree``/``out_degree`` may be left out when the program does not read them.
        """
        if getattr(type(program), "spec", None) is not self.spec:
            raise UsageError(f"pack_args: expected an instance of {self.name}, got "
                             f"{type(program).__name__}")
        unknown = sorted(set(pointers) - set(self.pointer_members))
        if unknown:
            raise UsageError(f"pack_args: {self.name} has no pointer member(s) {unknown}")
        missing = [m for m in self.required_pointers if m not in pointers]
        if missing:
            raise UsageError(f"pack_args: {self.name} needs device pointer(s) {missing}")
        rec = np.zeros((), self.args_dtype)
        for m in self.pointer_members:
            rec[m] = int(pointers.get(m, 0))
        for m in ("num_vertices", "num_edges", "iteration"):
            rec[m] = int(getattr(program, m))
        for p, member in self.param_members.items():
            value = getattr(program, p)
            kind = self.args_dtype.fields[member][0].kind
            rec[member] = float(value) if kind == "f" else int(round(float(value)))
        for a in self.spec.aggregates:
            rec["agg_" + a] = getattr(program, a)
        return rec.tobytes()


def translate(program, edge_dtypes=None):
    """Translate ``program`` (a GASProgram subclass, instance or ProgramSpec) to CUDA C.

    Parameters
    ----------
    program : type, GASProgram or ProgramSpec
    edge_dtypes : dict, optional
        Edge property -> dtype, as the store records them (``edge_props`` in FORMAT.md). Every
        property the program reads must be present; by default each is float64.

    Returns
    -------
    TranslatedProgram

    Raises
    ------
    ProgramError
        With the program name and Python source line, when a construct or dtype has no
        numpy-exact CUDA translation.
    """
    spec = _spec_of(program)
    name = spec.name
    if edge_dtypes is None:
        edge_dtypes = {p: np.float64 for p in spec.edge_reads}
    missing = sorted(set(spec.edge_reads) - set(edge_dtypes))
    if missing:
        raise ProgramError(f"reads edge propert(y/ies) {missing} that the store does not have "
                           f"(it has {sorted(edge_dtypes)})", name)
    edge_dtypes = {p: np.dtype(d) for p, d in edge_dtypes.items()}
    # mutable edge state shadows a stored property of the same name (it starts from its values)
    edge_dtypes.update({p: np.dtype(d) for p, d in spec.edge_state.items()})
    state_ctypes = {s: check_ctype(dt, f"edge_state {s!r}", name) for s, dt in spec.edge_state.items()}
    field_ctypes = {f: check_ctype(dt, f"vertex field {f!r}", name)
                    for f, dt in spec.vertex_fields.items()}
    for p in spec.edge_reads:
        check_ctype(edge_dtypes[p], f"edge property {p!r}", name)
    msg_ctype = check_ctype(spec.gather_dtype, "gather_dtype", name)

    names, formats, members = [], [], []
    pointer_members = []
    for f, c in field_ctypes.items():
        members += [f"const {c}* cur_{f};", f"{c}* nxt_{f};"]
        pointer_members += [f"cur_{f}", f"nxt_{f}"]
    for st, c in state_ctypes.items():
        members += [f"const {c}* ecur_{st};", f"{c}* enxt_{st};"]
        pointer_members += [f"ecur_{st}", f"enxt_{st}"]
    members += ["const long long* in_degree;", "const long long* out_degree;"]
    pointer_members += ["in_degree", "out_degree"]
    names += pointer_members
    formats += ["u8"] * len(pointer_members)
    for m in SELF_BUILTINS:
        members.append(f"long long {m};")
        names.append(m)
        formats.append("i8")
    param_members = {}
    for p, default in spec.params.items():
        c = _param_ctype(default)
        members.append(f"{c} p_{p};")
        names.append("p_" + p)
        formats.append(_PARAM_NP.get(c) or _np_code(default))
        param_members[p] = "p_" + p
    for a, dt in spec.aggregate_dtype.items():
        members.append(f"{check_ctype(dt, f'aggregate {a!r}', name)} agg_{a};")
        names.append("agg_" + a)
        formats.append(dt.str if dt.kind != "b" else "?")
    args_dtype = np.dtype({"names": names, "formats": formats}, align=True)
    required = [m for m in pointer_members if m not in ("in_degree", "out_degree")]
    required += sorted(spec.vertex_reads - {"id"})

    funcs = []
    edge_props = {}
    return_types = {}
    analysis = spec.analysis
    for mname in spec.translated_methods:
        info = analysis.methods[mname]
        emitter = _Emitter(spec, info, edge_dtypes)
        funcs.append(emitter.function())
        edge_props[mname] = emitter.edge_args
        if emitter.return_type is not None:
            return_types[mname] = emitter.return_type

    pairs = []
    if spec.has_gather:
        pairs.append((spec.gather_reduce, spec.gather_dtype))
    pairs += [(m, spec.aggregate_dtype[a]) for a, m in spec.aggregates.items()]
    for _, dt in pairs:
        check_ctype(dt, "reduced dtype", name)
    source = "\n".join([
        f"/* grstream: CUDA translation of GAS program {name}. Generated; do not edit. */",
        cuda_prelude.HELPERS,
        "struct GasArgs {",
        *("    " + m for m in members),
        "};",
        "__constant__ GasArgs g;",
        cuda_prelude.atomics(pairs, name),
        *funcs,
    ])
    return TranslatedProgram(name=name, source=source, msg_ctype=msg_ctype, edge_props=edge_props,
                             field_ctypes=field_ctypes, args_dtype=args_dtype, spec=spec,
                             param_members=param_members, pointer_members=pointer_members,
                             required_pointers=required, return_types=return_types,
                             edge_dtypes=edge_dtypes)


def _spec_of(program):
    from .program import GASProgram, ProgramSpec
    if isinstance(program, ProgramSpec):
        return program
    if isinstance(program, type) and issubclass(program, GASProgram) and program.spec is not None:
        return program.spec
    if isinstance(program, GASProgram):
        return type(program).spec
    raise UsageError(f"translate() needs a GASProgram subclass, instance or spec, not "
                     f"{type(program).__name__}")


def _param_ctype(default):
    if isinstance(default, np.generic):
        return ctype(np.asarray(default).dtype)
    return _PARAM_CTYPE[bool if isinstance(default, bool) else type(default)]


def _np_code(default):
    dt = np.asarray(default).dtype
    return "?" if dt.kind == "b" else dt.str


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

    def __init__(self, spec, info, edge_dtypes):
        self.spec = spec
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
            cname = "grstream_" + name
        body = self.info.tree.body
        result_code = None
        for stmt in body:
            if isinstance(stmt, ast.Return) and stmt.value is None:  # scatter's bare return
                break
            if isinstance(stmt, ast.Return):
                val = self.expr(stmt.value)
                self.return_type = (val.dtype, val.weak)
                dt = np.dtype(bool) if name == "apply" else self._ret_dtype()
                result_code = self.declare("grstream_result", Val(cast(val, ret), dt), stmt).code
            else:
                self.stmt(stmt)
        for f, val in self.fields.items():
            self.lines.append(f"    g.nxt_{f}[v] = {cast(val, ctype(spec.vertex_fields[f]))};")
        for st, val in self.edge_fields.items():
            self.lines.append(f"    g.enxt_{st}[e] = {cast(val, ctype(spec.edge_state[st]))};")
        self.lines.append(f"    return {result_code};" if result_code is not None else "    return;")
        head = (f"/* {self.spec.name}.{name}, Python line {self.info.lineno} */\n"
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
