"""Whether pushing from the changed vertices gives the pull result, derived from source.

Pull: every active vertex v reduces the messages of *all* its neighbours over ``gather_edges``.
Push: only the vertices that changed in the previous iteration (the seed before iteration 1)
send, along the reverse adjacency, and only the vertices that receive a message apply. The
vertices that apply are the same (the pull frontier is exactly "a neighbour changed"), and push
evaluates ``gather_map`` on the same edge with the same ``cur`` values, so each message push
computes is one pull computes. What push leaves out are the messages of unchanged neighbours.
Push gives the pull result when leaving them out changes nothing, which holds in two cases:

delta programs (``gather_from = "changed"``)
    pull also gathers only over edges whose other end changed: the message sets are the same, so
    any of the commutative, associative monoids (sum, prod, min, max, or, and) is fine;
absorbing programs (``gather_from = "all"``)
    the monoid is idempotent (min, max, or, and) and the unchanged neighbours' messages were
    already absorbed into v's state when they last changed, which this module proves from the
    source: ``apply`` writes one field f as ``M(v.f, acc)`` (M the monoid's function:
    ``gr.minimum``, ``gr.maximum``, ``|``, ``&``) and returns "it changed" (``new < v.f`` /
    ``new != v.f`` ..., or the same test on ``acc``); ``gather_map`` reads the receiving end
    only in fields apply never writes, or as a top-level ``M(message, receiver.f)`` that apply's
    ``M(v.f, acc)`` absorbs (connected components' ``minimum(src.label, dst.label)``); neither
    reads ``self.iteration`` or an aggregate (they change between iterations, so an old message
    would change too); and the program has no scatter or edge state (edge values that change
    would change old messages).

Everything else is pull-only (``push_ok`` False with the reason): topology-driven programs
(``activate = "all"``: every vertex gathers every iteration, there is no changed set to push
from), PageRank-like sums over every in-neighbour, programs that ask for ``direction = "pull"``.

One assumption the source cannot show: in a seeded run, the vertices outside the seed send
messages that change nobody (BFS's unreached level, SSSP's inf), since push never sends them and
pull would gather them. A program whose ``init`` gives vertices outside its seed meaningful
values must say ``direction = "pull"`` (docs/PROGRAMS.md).
"""
import ast
import inspect

from .checker import _resolve_namespace

#: the function or operator that combines two values with each idempotent monoid
_COMBINE = {"min": ("minimum", None), "max": ("maximum", None),
            "or": (None, ast.BitOr), "and": (None, ast.BitAnd)}
#: comparisons ``new OP v.f`` (or ``acc OP v.f``) that mean "changed" for each monoid
_CHANGED = {"min": (ast.Lt, ast.NotEq), "max": (ast.Gt, ast.NotEq),
            "or": (ast.NotEq, ast.Gt), "and": (ast.NotEq, ast.Lt)}
_FLIP = {ast.Lt: ast.Gt, ast.Gt: ast.Lt, ast.NotEq: ast.NotEq}
#: the roles (sender, receiver) of gather_map's arguments for each gather direction
_SIDES = {"in": ("src", "dst"), "out": ("dst", "src")}


def derive(spec):
    """``(push_ok, reason)`` for a ProgramSpec whose analysis is done: the reason says why push
    is valid, or why the engine keeps the program on pull."""
    spec.push_peeled = spec.push_field = None
    if spec.direction == "pull":
        return False, "the program sets direction = 'pull'"
    if not spec.has_gather:
        return False, "no gather_map: nothing to push"
    if spec.activate == "all":
        return False, ("activate = 'all': every vertex gathers every iteration, there is no "
                       "changed set to push from")
    if spec.activate == "schedule":
        return False, ("activate = 'schedule': the schedule, not the changed set, says who "
                       "applies")
    if spec.has_scatter or spec.edge_state:
        return False, "scatter / edge state: an edge's message can change without its source"
    methods = spec.analysis.methods
    for name in ("gather_map", "apply"):
        info = methods[name]
        if "iteration" in info.self_builtins or info.aggregates:
            what = "self.iteration" if "iteration" in info.self_builtins else "an aggregate"
            return False, f"{name} reads {what}, so an unchanged neighbour's message changes"
    monoid = spec.gather_reduce.name
    if monoid not in ("sum", "prod", "min", "max", "or", "and"):
        return False, f"gather_reduce {monoid} is not a known commutative monoid"
    if spec.gather_from == "changed":
        return True, (f"gather_from = 'changed': pull gathers only from changed neighbours, "
                      f"which is what push sends ({monoid} combines them in any order)")
    if not spec.gather_reduce.idempotent:
        return False, (f"gather_reduce {monoid} is not idempotent and gather_from is 'all': every "
                       f"neighbour's message counts every iteration (as in PageRank), while push "
                       f"sends only the changed ones")
    field, why = _absorbing_apply(methods["apply"], monoid)
    if field is None:
        return False, why
    why, peeled = _absorbed_gather(methods["gather_map"], monoid, field, spec.gather_edges)
    if why:
        return False, why
    spec.push_peeled, spec.push_field = peeled, field
    return True, (f"gather_reduce {monoid} is idempotent and apply keeps v.{field} = "
                  f"{monoid}(v.{field}, acc): unchanged neighbours' messages are already absorbed")


# ---------------------------------------------------------------------- apply
def _absorbing_apply(info, monoid):
    """(field, "") when apply is ``f = M(v.f, acc)`` returning "changed", else (None, why)."""
    writes, ret = _expand(info)
    if len(writes) != 1:
        return None, (f"apply writes {len(writes)} fields ({', '.join(sorted(writes)) or 'none'}); "
                      f"push needs one field it combines with acc")
    (field, value), = writes.items()
    if not _is_combine(value, monoid, lambda a: _is_field(a, "v", field), _is_acc):
        return None, (f"apply writes v.{field} = {ast.unparse(value)}, not {monoid}(v.{field}, acc): "
                      f"old messages would not be absorbed")
    if ret is None or not _is_changed(ret, monoid, field, value):
        got = "nothing" if ret is None else ast.unparse(ret)
        return None, (f"apply returns {got}, not the test that v.{field} changed (push sends only "
                      f"from vertices that report a change)")
    return field, ""


def _is_changed(node, monoid, field, new):
    """``new OP v.f`` / ``v.f OP' new`` (or with ``acc`` for ``new``) for the monoid's OPs."""
    if not (isinstance(node, ast.Compare) and len(node.ops) == 1):
        return False
    op, a, b = type(node.ops[0]), node.left, node.comparators[0]
    if _is_field(a, "v", field):
        op, a, b = _FLIP.get(op), b, a
    if op not in _CHANGED[monoid] or not _is_field(b, "v", field):
        return False
    return _same(a, new) or _is_acc(a)


# ---------------------------------------------------------------------- gather_map
def _absorbed_gather(info, monoid, field, gather_edges):
    """("", {direction: message with the absorbed receiver terms peeled off}) when every read
    of the receiving end is of a field apply never writes or is absorbed (a top-level
    ``M(message, receiver.field)``), else (the reason, None)."""
    _, ret = _expand(info)
    dirs = ("in", "out") if gather_edges == "all" else (gather_edges,)
    peeled = {}
    for d in dirs:
        sender, receiver = _SIDES[d]
        expr = ret
        while True:   # peel M(x, receiver.field) layers: apply's M(v.field, acc) absorbs them
            parts = _combine_args(expr, monoid)
            if parts is None:
                break
            a, b = parts
            if _is_field(b, receiver, field):
                expr = a
            elif _is_field(a, receiver, field):
                expr = b
            else:
                break
        for node in ast.walk(expr):
            if _is_field(node, receiver, field):
                return (f"gather_map reads {receiver}.{field} (the receiving end over "
                        f"{d}-edges) other than as {monoid}(message, {receiver}.{field}), so "
                        f"an old message changes when the receiver does"), None
        peeled[d] = expr
    return "", peeled


def sender_map(spec, direction):
    """For an absorbing push-valid program: a function ``f(program, sender_view)`` giving the
    message of each sender over ``direction``-edges with the absorbed receiver terms left out
    (apply's ``M(v.f, acc)`` adds them back), when that message reads nothing but the sender,
    ``self`` and constants; else None. Connected components' ``minimum(src.label, dst.label)``
    becomes ``src.label``: one value per sender instead of one evaluation per edge."""
    peeled = getattr(spec, "push_peeled", None)
    if not spec.push_ok or not peeled or direction not in peeled:
        return None
    expr = peeled[direction]
    sender, receiver = _SIDES[direction]
    info = spec.analysis.methods["gather_map"]
    me = info.tree.args.args[0].arg
    for node in ast.walk(expr):
        if isinstance(node, ast.Name) and node.id in (receiver, "edge"):
            return None
    # evaluated in gather_map's own namespace, which resolves the gr functions as it does
    ns = _resolve_namespace(inspect.getattr_static(spec.owner, "gather_map"))
    text = f"def _sender_map({me}, {sender}):\n    return {ast.unparse(expr)}\n"
    local = {}
    exec(compile(text, f"<push message of {spec.name}>", "exec"), ns, local)
    return local["_sender_map"]


def sender_reads_builtins(spec):
    """Whether a message ``seed_is_silent`` tests (``sender_map``'s) reads a built-in property
    of the sender (its id, a degree): vertices of equal fields may then send different ones."""
    for direction, expr in (getattr(spec, "push_peeled", None) or {}).items():
        sender = _SIDES[direction][0]
        if any(isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
               and node.value.id == sender and node.attr not in spec.vertex_fields
               for node in ast.walk(expr)):
            return True
    return False


def message_field(spec, direction):
    """The vertex field whose value *is* the message over ``direction``-edges (gather_map
    returns ``<the other end>.<field>``, a field of the message dtype), else None: the field's
    array then serves as the per-vertex messages with nothing computed (a gather of it is a
    sparse matrix-vector product)."""
    if not spec.has_gather:
        return None
    _, ret = _expand(spec.analysis.methods["gather_map"])
    sender = _SIDES[direction][0]
    if (isinstance(ret, ast.Attribute) and isinstance(ret.value, ast.Name)
            and ret.value.id == sender and spec.vertex_fields.get(ret.attr) == spec.gather_dtype):
        return ret.attr
    return None


# ---------------------------------------------------------------------- expression helpers
def _expand(info):
    """Inline the locals of a straight-line method: ({field: written expr}, returned expr), with
    ``v.f`` after its assignment standing for the assigned value (as the checker reads it)."""
    env, writes, ret = {}, {}, None
    argmap = info.argmap

    class Sub(ast.NodeTransformer):
        def visit_Name(self, node):
            if node.id in env:
                return env[node.id]
            role = argmap.get(node.id)
            return ast.Name(id=role, ctx=ast.Load()) if role else node

        def visit_Attribute(self, node):
            if isinstance(node.value, ast.Name) and argmap.get(node.value.id) == "v" \
                    and node.attr in writes:
                return writes[node.attr]
            node.value = self.visit(node.value)
            return node

    def sub(node):
        return Sub().visit(_copy(node))

    body = info.tree.body
    for stmt in body:
        if isinstance(stmt, ast.Assign):
            target, value = stmt.targets[0], sub(stmt.value)
            if isinstance(target, ast.Name):
                env[target.id] = value
            elif isinstance(target, ast.Attribute):
                writes[target.attr] = value
        elif isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
            env[stmt.target.id] = ast.BinOp(left=env[stmt.target.id], op=stmt.op,
                                            right=sub(stmt.value))
        elif isinstance(stmt, ast.Return) and stmt.value is not None:
            ret = sub(stmt.value)
    return writes, ret


def _copy(node):
    return ast.parse(ast.unparse(node), mode="eval").body


def _combine_args(node, monoid):
    """(a, b) when ``node`` is the monoid's combine of a and b, else None."""
    fn, op = _COMBINE[monoid]
    if fn and isinstance(node, ast.Call) and len(node.args) == 2:
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        if name == fn:
            return node.args[0], node.args[1]
    if op and isinstance(node, ast.BinOp) and isinstance(node.op, op):
        return node.left, node.right
    return None


def _is_combine(node, monoid, one, other):
    parts = _combine_args(node, monoid)
    if parts is None:
        return False
    a, b = parts
    return (one(a) and other(b)) or (one(b) and other(a))


def _is_field(node, role, field):
    return (isinstance(node, ast.Attribute) and node.attr == field
            and isinstance(node.value, ast.Name) and node.value.id == role)


def _is_acc(node):
    return isinstance(node, ast.Name) and node.id == "acc"


def _same(a, b):
    return ast.dump(a) == ast.dump(b)


#: vertices per block of seed_is_silent's pass: reads are views of the state, the temporaries
#: a block's messages
SILENT_BLOCK = 1 << 16


def seed_is_silent(spec, program, state, seed, span=None, gather=None):
    """Whether the vertices outside a run's ``seed`` send messages that change nobody, the one
    assumption of push the source cannot show (module docstring): True, False, or None when it
    cannot be checked without the edges (a message reading the edge or the receiver). Checked
    against the most resistant receiver: a message ``m`` of a vertex outside the seed must leave
    ``M(m, x) == x`` for the state value x that a min (max, or, and) lowers most easily.

    One pass over the state in contiguous blocks of SILENT_BLOCK vertices: each block's fields
    are views (no id list of the vertices outside the seed, no gathered copies), its messages
    are tested and the seed's own vertices masked out, and the pass stops at the first block
    that fails. MPI ranks (``span``: this rank's vertices ``[lo, hi)``, ``gather``: an
    all-gather of one object per rank) each test their own vertices and agree: the receiver's
    extreme value is the ranks' extremes combined, the answer False where any rank's is, so
    every rank gives the answer of the whole pass after 1/size of it."""
    import numpy as np
    field = getattr(spec, "push_field", None)
    if field is None or spec.gather_from != "all":
        return None
    fns = _sender_maps(spec)
    if fns is None:
        return None
    values = state[field]
    seed = np.broadcast_to(np.asarray(seed, dtype=bool), values.shape)
    n = values.shape[0]
    lo, hi = (0, n) if span is None else span
    monoid = spec.gather_reduce
    top = monoid.name in ("min", "and")
    extreme = (values[lo:hi].max() if top else values[lo:hi].min()) if hi > lo else None
    if gather is not None:   # (the ranks' extremes, as one pass over every vertex finds it)
        found = [x for x in gather(extreme) if x is not None]
        extreme = (np.max(found) if top else np.min(found)) if found else None
    silent = True if extreme is None else _silent_blocks(fns, program, state, seed, values, lo, hi,
                                                         monoid, extreme)
    return silent if gather is None else all(gather(silent))


def _silent_blocks(fns, program, state, seed, values, lo, hi, monoid, extreme):
    """seed_is_silent's pass over the vertices ``[lo, hi)``."""
    import numpy as np
    from .views import VertexView
    lanes = values.shape[1] if values.ndim > 1 else None
    for start in range(lo, hi, SILENT_BLOCK):
        stop = min(hi, start + SILENT_BLOCK)
        view = VertexView(state, {}, slice(start, stop), stop - start, lanes=lanes)
        quiet = seed[start:stop]
        for fn in fns:
            msg = np.asarray(fn(program, view))
            with np.errstate(invalid="ignore"):
                if not np.all((monoid.ufunc(msg, extreme) == extreme) | quiet):
                    return False
    return True


def _sender_maps(spec):
    """The sender maps of every gather direction of ``spec`` (``sender_map``), compiled once per
    program class; None when one of them reads more than the sender."""
    peeled = getattr(spec, "push_peeled", None)
    cached = spec.__dict__.get("_silent_maps")
    if cached is None or cached[0] is not peeled:   # derived again: compile again
        dirs = ("in", "out") if spec.gather_edges == "all" else (spec.gather_edges,)
        fns = [sender_map(spec, d) for d in dirs]
        cached = spec._silent_maps = (peeled, None if any(f is None for f in fns) else fns)
    return cached[1]
