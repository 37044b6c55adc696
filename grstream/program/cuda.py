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
* ``AGG_T grstream_aggnext_<name>(long long v)``: the same term right after ``grstream_apply(v,
  ...)`` wrote ``v``'s new state, before it is published: the fields apply assigns are read from
  ``g.nxt_F[v]``, the others from ``g.cur_F[v]`` (a dense apply reduces the aggregates as it
  applies, instead of a pass over the published state after it);
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
import hashlib
from dataclasses import dataclass, field
from typing import Dict, List

import numpy as np

from ..errors import ProgramError, UsageError
from . import cuda_prelude
from .checker import SELF_BUILTINS
from .cuda_types import check_ctype, ctype
from .cuda_emit import _Emitter

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
        if mname.startswith("aggregate_"):   # its term over the state apply just wrote
            funcs.append(_Emitter(spec, info, edge_dtypes, after_apply=True).function())

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
