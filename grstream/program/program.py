"""``GASProgram``: the single-source Gather-Apply-Scatter program users write in Python.

A subclass declares its vertex state, the data it reads, its reduction and its phase functions.
The class is checked when it is defined (``__init_subclass__``): the translatable methods
(``gather_map``, ``apply``, ``scatter``, ``aggregate_<name>``) may use only the restricted subset
documented in docs/PROGRAMS.md, so the same source runs vectorised on numpy and translates to
CUDA C. ``init`` and ``converged`` run on the host and may use any Python.
"""
import numpy as np

from ..errors import ProgramError
from . import monoid as _monoid

#: built-in vertex properties a program may read as ``v.<name>``.
BUILTIN_VERTEX = ("id", "in_degree", "out_degree")
#: phase methods that must stay inside the translatable subset.
TRANSLATED = ("gather_map", "apply", "scatter")
GATHER_EDGES = ("in", "out", "all")
ACTIVATE = ("frontier", "all", "schedule")
#: "all": an active vertex gathers over all its edges; "changed": only over edges whose other end
#: changed in the previous iteration (delta programs; the seed counts as changed)
GATHER_FROM = ("all", "changed")
DIRECTIONS = ("auto", "pull")


class ProgramSpec:
    """What the engines need to know about a program class, derived once when it is defined."""

    def __init__(self, cls):
        name = cls.__name__
        self.name = name
        vertex = getattr(cls, "vertex", None)
        if not isinstance(vertex, dict) or not vertex:
            raise ProgramError("declare vertex state as a non-empty dict {field: dtype}", name)
        self.vertex_fields = {}
        for field, dt in vertex.items():
            if not isinstance(field, str) or not field.isidentifier():
                raise ProgramError(f"vertex field name {field!r} is not an identifier", name)
            if field in BUILTIN_VERTEX:
                raise ProgramError(f"vertex field {field!r} shadows a built-in vertex property", name)
            try:
                dtype = np.dtype(dt)
            except TypeError as exc:
                raise ProgramError(f"vertex field {field!r}: bad dtype {dt!r} ({exc})", name) from None
            if dtype.kind not in "biuf":
                raise ProgramError(f"vertex field {field!r}: dtype {dtype} is not bool, int or float", name)
            self.vertex_fields[field] = dtype

        reads = set(getattr(cls, "reads", ()) or ())
        self.vertex_reads = {r for r in reads if r in BUILTIN_VERTEX}
        self.edge_reads = reads - set(BUILTIN_VERTEX)
        for prop in self.edge_reads:
            if not isinstance(prop, str) or not prop.isidentifier():
                raise ProgramError(f"reads: {prop!r} is not a property name", name)

        self.edge_state = {}
        for prop, dt in (getattr(cls, "edge_state", None) or {}).items():
            if not isinstance(prop, str) or not prop.isidentifier():
                raise ProgramError(f"edge_state name {prop!r} is not an identifier", name)
            if prop in self.edge_reads:
                raise ProgramError(f"edge property {prop!r} is both in reads and edge_state: "
                                   f"list it in edge_state only (it starts from the stored values)", name)
            try:
                dtype = np.dtype(dt)
            except TypeError as exc:
                raise ProgramError(f"edge_state {prop!r}: bad dtype {dt!r} ({exc})", name) from None
            if dtype.kind not in "biuf":
                raise ProgramError(f"edge_state {prop!r}: dtype {dtype} is not bool, int or float", name)
            self.edge_state[prop] = dtype

        self.has_gather = _defined(cls, "gather_map")
        self.has_scatter = _defined(cls, "scatter")
        if self.has_scatter and not self.edge_state:
            raise ProgramError("scatter writes mutable edge state: declare it as "
                               "edge_state = {name: dtype}", name)
        self.gather_edges = getattr(cls, "gather_edges", "in") if self.has_gather else None
        if self.has_gather and self.gather_edges not in GATHER_EDGES:
            raise ProgramError(f"gather_edges must be one of {GATHER_EDGES}, not {self.gather_edges!r}", name)
        self.gather_reduce = getattr(cls, "gather_reduce", None)
        if self.has_gather and not isinstance(self.gather_reduce, _monoid.Monoid):
            raise ProgramError("gather_map needs gather_reduce = gr.monoid.<sum|min|max|...>", name)
        first = next(iter(self.vertex_fields.values()))
        self.gather_dtype = np.dtype(getattr(cls, "gather_dtype", None) or first)
        if not _defined(cls, "apply"):
            raise ProgramError("a program must define apply(self, v, acc)", name)

        self.activate = getattr(cls, "activate", "frontier")
        if self.activate not in ACTIVATE:
            raise ProgramError(f"activate must be one of {ACTIVATE}, not {self.activate!r}", name)
        self.gather_from = getattr(cls, "gather_from", "all")
        if self.gather_from not in GATHER_FROM:
            raise ProgramError(f"gather_from must be one of {GATHER_FROM}, not {self.gather_from!r}", name)
        if self.gather_from == "changed" and self.activate != "frontier":
            raise ProgramError('gather_from = "changed" needs activate = "frontier" (only changed '
                               'vertices send)', name)
        # activate = "schedule": an int vertex field says in which iteration each vertex is active
        self.schedule = getattr(cls, "schedule", None)
        if (self.activate == "schedule") != (self.schedule is not None):
            raise ProgramError('activate = "schedule" and schedule = "<int vertex field>" go '
                               'together', name)
        if self.schedule is not None and (self.schedule not in self.vertex_fields
                                          or self.vertex_fields[self.schedule].kind not in "iu"):
            raise ProgramError(f"schedule {self.schedule!r} is not an int vertex field", name)
        # "pull" forbids the engine to push this program; "auto": the engine decides (push_ok)
        self.direction = getattr(cls, "direction", "auto")
        if self.direction not in DIRECTIONS:
            raise ProgramError(f"direction must be one of {DIRECTIONS}, not {self.direction!r}", name)
        # the author's promise that apply is monotone (min/max style): a vertex may see its
        # neighbours' new values early (asynchronous local rounds) and the result is the same
        self.asynchronous = bool(getattr(cls, "asynchronous", False))
        # topology-driven programs keep every vertex active: only converged() or max_iter ends them
        self.stops_itself = self.activate != "all" or _defined(cls, "converged")

        self.params = dict(getattr(cls, "params", {}) or {})
        for p, val in self.params.items():
            if not isinstance(val, (bool, int, float, np.number)):
                raise ProgramError(f"param {p!r} must be a number or bool, not {type(val).__name__}", name)

        # params holding an internal vertex id (a source): the engine refuses a run with one
        # outside 0..n-1, which would otherwise start from no vertex and report nothing reached
        self.vertex_params = tuple(getattr(cls, "vertex_params", ()) or ())
        for p in self.vertex_params:
            if p not in self.params or isinstance(self.params[p], (bool, float, np.bool_, np.floating)):
                raise ProgramError(f"vertex_params: {p!r} is not an integer param", name)
        # a declared start (initial, seeds): constants the executor makes where the state lives
        self.initial, self.seeds = _declared_start(cls, self)
        # the run's start is the declaration (or zeros, every vertex active) where no class
        # defines init: no host array of the fields is needed (engine/state.py ConstantState)
        self.constant_init = not _defined(cls, "init")

        self.aggregates = dict(getattr(cls, "aggregates", {}) or {})
        for agg, m in self.aggregates.items():
            if not isinstance(m, _monoid.Monoid):
                raise ProgramError(f"aggregate {agg!r} must map to a gr.monoid", name)
            if not _defined(cls, "aggregate_" + agg):
                raise ProgramError(f"aggregate {agg!r} needs a method aggregate_{agg}(self, v)", name)
        self.aggregate_dtype = {a: np.dtype(getattr(cls, "aggregate_dtype", {}).get(a, "float64"))
                                for a in self.aggregates}
        clash = (set(self.params) & set(self.aggregates)) | (
            (set(self.params) | set(self.aggregates)) & {"num_vertices", "num_edges", "iteration"})
        if clash:
            raise ProgramError(f"names used twice among params, aggregates and built-ins: {sorted(clash)}", name)

        self.output = getattr(cls, "output", None) or next(iter(self.vertex_fields))
        if self.output not in self.vertex_fields:
            raise ProgramError(f"output {self.output!r} is not a vertex field", name)

        # The restricted-subset check and dependency analysis (which of src/dst/edge each
        # translatable method touches) live in checker.py.
        from .checker import check_program
        self.owner = cls
        self.analysis = check_program(cls, self)
        if self.schedule is not None and self.schedule in self.analysis.apply_writes:
            raise ProgramError(f"apply writes v.{self.schedule}, the schedule: it is read once, "
                               f"after init", name)
        from .cuda_emit import check_changed_mask
        check_changed_mask(self)
        # whether pushing from the changed vertices gives the pull result, and why not;
        # derived from the analysis in grstream/program/push.py
        from .push import derive
        self.push_ok, self.push_reason = derive(self)

    @property
    def translated_methods(self):
        names = [m for m in TRANSLATED if _defined_name(self, m)]
        return names + ["aggregate_" + a for a in self.aggregates]

    def __repr__(self):
        return f"<ProgramSpec {self.name}>"


def _coerce_param(spec, name, value):
    # A param keeps its default's Python type, so numpy's promotion (and the CUDA struct member
    # chosen from the default) is the same whatever number the caller passed.
    default = spec.params[name]
    kind = bool if isinstance(default, (bool, np.bool_)) else (
        float if isinstance(default, (float, np.floating)) else int)
    if not isinstance(value, (bool, int, float, np.number, np.bool_)):
        raise ProgramError(f"param {name!r} must be a number, not {type(value).__name__}", spec.name)
    if kind is int and not float(value).is_integer():
        raise ProgramError(f"param {name!r} is an integer parameter, got {value!r}", spec.name)
    if isinstance(default, np.generic):
        return type(default)(value)
    return kind(value)


def _declared_start(cls, spec):
    """``initial`` and ``seeds`` checked: every vertex field's initial value (0 where not
    declared) and each seed param's values, as numpy scalars of the fields' dtypes."""
    name, fields = spec.name, spec.vertex_fields
    initial, seeds = getattr(cls, "initial", None) or {}, getattr(cls, "seeds", None) or {}
    # the class declaring them must not have an init, its own or inherited: that init would
    # run in place of the declarations (a subclass's init may still call the base's, below)
    owner = next((c for c in cls.__mro__ if "initial" in vars(c) or "seeds" in vars(c)), None)
    if owner is not None and _defined(owner, "init"):
        raise ProgramError("declare the initial values (initial, seeds) or define init, not both "
                           "(an init of a base class counts)", name)
    if not isinstance(initial, dict) or not all(isinstance(v, dict) for v in (seeds, *seeds.values())):
        raise ProgramError("initial is a dict {field: value}, seeds a dict {vertex param: "
                           "{field: value}}", name)
    for p in seeds:
        if p not in spec.vertex_params:
            raise ProgramError(f"seeds: {p!r} is not one of vertex_params {spec.vertex_params}", name)
    # every field, 0 where not declared (a declared name that is no field: _constant refuses it)
    values = {f: _constant(spec, "initial", f, x) for f, x in {**dict.fromkeys(fields, 0), **initial}.items()}
    return values, {p: {f: _constant(spec, f"seeds[{p!r}]", f, v) for f, v in given.items()}
                    for p, given in seeds.items()}


def _constant(spec, where, field, value):
    """``value`` as field ``field``'s dtype; an int or bool field takes it only exactly, a float
    field any finite value it holds without overflow (inf where ``value`` is)."""
    dtype = spec.vertex_fields.get(field)
    if dtype is None:
        raise ProgramError(f"{where}: {field!r} is not a vertex field", spec.name)
    if not isinstance(value, (bool, int, float, np.number, np.bool_)):
        raise ProgramError(f"{where}: v.{field} must be a number, not {type(value).__name__}", spec.name)
    try:
        with np.errstate(over="ignore"):   # (an overflow is refused below, not warned of)
            x = dtype.type(value)
    except (OverflowError, ValueError):
        x = None
    infinite = isinstance(value, (float, np.floating)) and np.isinf(value)   # (an int never is)
    if x is None or (dtype.kind in "biu" and x != value) or \
            (dtype.kind == "f" and np.isinf(x) and not infinite):
        raise ProgramError(f"{where}: {value!r} is not a value of v.{field} ({dtype})", spec.name)
    return x


def _defined(cls, name):
    fn = getattr(cls, name, None)
    base = getattr(GASProgram, name, None) if "GASProgram" in globals() else None
    return fn is not None and fn is not base


def _defined_name(spec, name):
    return {"gather_map": spec.has_gather, "scatter": spec.has_scatter, "apply": True}[name]


class GASProgram:
    """Base class of Gather-Apply-Scatter programs.

    Subclasses set class attributes and define methods:

    ``vertex``        dict field -> dtype, the per-vertex state (resident in memory).
    ``reads``         built-in vertex properties (``in_degree``, ``out_degree``; ``id`` is always
                      readable) and edge properties (``weight``) the program reads.
    ``edge_state``    dict name -> dtype: mutable per-edge state that ``scatter`` writes and
                      gather/scatter read as ``edge.<name>``; it starts at 0, or at the stored edge
                      property of the same name when the store has one.
    ``gather_edges``  ``"in"`` (default), ``"out"`` or ``"all"``: which edges a vertex gathers over.
    ``gather_reduce`` a :mod:`grstream.monoid` combining the messages.
    ``gather_dtype``  dtype of the messages and accumulator (default: the first vertex field's).
    ``gather_from``   ``"all"`` (default): gather over all of the vertex's edges; ``"changed"``:
                      only over edges whose other end changed in the previous iteration (delta
                      programs).
    ``direction``     ``"auto"`` (default: the engine pushes or pulls per iteration where that
                      gives the same result) or ``"pull"`` (never push).
    ``asynchronous``  False (default); True promises that the result does not depend on when a
                      vertex sees its neighbours' new values (monotone programs over an idempotent
                      monoid: BFS, SSSP, CC), so the engine may iterate a loaded shard locally
                      (``local_rounds``, docs/PROGRAMS.md).
    ``activate``      ``"frontier"`` (default): only neighbours of changed vertices are active next
                      iteration; ``"all"``: every vertex every iteration (topology-driven);
                      ``"schedule"``: the vertices whose ``schedule`` field (as init left it) is
                      ``t`` are active in iteration ``t``, and the run ends after the largest.
    ``schedule``      with ``activate = "schedule"``: the int vertex field that schedules vertices
                      (apply may not write it; 0 or less: never active).
    ``params``        dict of numeric parameters with defaults, readable as ``self.<name>``.
    ``vertex_params`` names of int params that are internal vertex ids (``("source",)``): a run
                      with one outside ``0..n-1`` is a UsageError.
    ``aggregates``    dict name -> monoid; ``aggregate_<name>(self, v)`` gives each vertex's term,
                      reduced over all vertices after init and after every iteration and readable
                      as ``self.<name>`` in the next iteration and in ``converged``.
    ``output``        the field returned as the result (default: the first vertex field).
    ``initial``       dict field -> number: every vertex's initial value of the field (0 where
                      not listed), in place of an ``init`` method.
    ``seeds``         dict vertex param -> {field: number}: the vertex the param names starts
                      with these values and is in the seed; without ``seeds`` every vertex
                      starts active. A program declaring ``initial`` / ``seeds`` has its start
                      made where the state lives (no host array of n values, no upload).
    ``local_init``    False (default); True promises that ``init`` gives each vertex its values
                      and seed from its own id, built-in properties and the program's parameters
                      alone (no array of every vertex, no sum over vertices), so that MPI ranks
                      each run it over their own vertices (docs/DISTRIBUTED.md). It holds for the
                      class that defines it: a subclass with an ``init`` of its own declares it
                      again.

    ``init(self, v)``                   host-side: set initial state; may return a bool mask of
                                        vertices considered changed (the seed of the frontier);
                                        returning None activates every vertex. The base's
                                        writes the declared ``initial`` and ``seeds``.
    ``gather_map(self, src, dst, edge)`` message along an edge (restricted subset).
    ``apply(self, v, acc)``             update ``v``'s fields, return a bool "changed" per vertex.
    ``scatter(self, src, dst, edge)``   optional, along out-edges of changed vertices.
    ``converged(self)``                 host-side: return True to stop (aggregates are readable).
    ``finish(self, values)``            host-side, once after the run: the final vertex state
                                        (dict field -> array) as the Result reports it, e.g. a
                                        sentinel the iterations need mapped to the documented
                                        value (BFS: unreached is -1); the arrays are
                                        the Result's own, so it may change them in place.
    """

    spec = None  # set for each subclass
    local_init = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("abstract", False):
            return
        cls.spec = ProgramSpec(cls)

    def __init__(self, **params):
        spec = type(self).spec
        if spec is None:
            raise ProgramError("GASProgram itself cannot run; subclass it", type(self).__name__)
        unknown = set(params) - set(spec.params)
        if unknown:
            raise ProgramError(f"unknown parameter(s) {sorted(unknown)}; known: {sorted(spec.params)}",
                               spec.name)
        values = dict(spec.params)
        for k, v in params.items():
            values[k] = _coerce_param(spec, k, v)
        for k, v in values.items():
            setattr(self, k, v)
        self.num_vertices = 0
        self.num_edges = 0
        self.iteration = 0
        for agg in spec.aggregates:
            setattr(self, agg, 0.0)

    @property
    def param_values(self):
        return {k: getattr(self, k) for k in type(self).spec.params}

    def init(self, v):
        """The declared start: every field at its ``initial`` value, each of ``seeds``' vertices
        at its values; returns the seed vertices (None without seeds: every vertex active)."""
        spec, seed = type(self).spec, None
        for f, x in spec.initial.items():
            v.entries(f).fill(x)
        for p, given in spec.seeds.items():
            at = v.id_mask(getattr(self, p))
            for f, x in given.items():
                v.entries(f)[at] = x
            seed = at if seed is None else seed | at
        return seed

    def converged(self):
        return False

    def finish(self, values):
        return values
