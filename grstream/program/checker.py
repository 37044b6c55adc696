"""The restricted-Python checker for GAS programs.

The translatable methods (``gather_map``, ``apply``, ``scatter``, ``aggregate_<name>``) must be
straight-line code over a small expression language so that the same source runs vectorised on
numpy arrays and translates one-to-one to a CUDA C device function (see docs/PROGRAMS.md).
:func:`check_program` parses each of them, rejects anything outside the subset with a
:class:`~grstream.errors.ProgramError` carrying the absolute source line, and records what each
method touches (which of ``src``/``dst``/``edge`` it uses, which fields it reads and writes) so
the engines can eliminate or hoist work.
"""
import ast
import inspect
import textwrap
import types
from dataclasses import dataclass, field
from typing import Dict, Set

from ..errors import ProgramError
from .functions import FUNCTIONS
from .source import method_source, unavailable_message
from .subset import (AGGREGATE_ROLES, ARITY, BINOPS, CMPOPS, FUNCTION_MODULES,  # noqa: F401
                     ROLES, SELF_BUILTINS, _WHY)


@dataclass
class MethodInfo:
    """What one translated method is and touches.

    Argument names are normalised to their roles (``src``, ``dst``, ``edge``, ``v``, ``acc``)
    whatever the user called them; ``argmap`` maps the user's names to the roles.
    """

    name: str
    tree: ast.FunctionDef
    lineno: int                      # absolute line of the ``def``
    line_offset: int                 # add to a node's lineno to get the absolute line
    argmap: Dict[str, str]
    uses: Set[str] = field(default_factory=set)
    vertex_reads: Dict[str, Set[str]] = field(default_factory=dict)
    vertex_writes: Set[str] = field(default_factory=set)
    edge_reads: Set[str] = field(default_factory=set)
    edge_writes: Set[str] = field(default_factory=set)
    params: Set[str] = field(default_factory=set)
    aggregates: Set[str] = field(default_factory=set)
    self_builtins: Set[str] = field(default_factory=set)
    functions: Dict[str, str] = field(default_factory=dict)  # spelling -> canonical name
    returns: bool = False

    def line(self, node):
        """Absolute source line of ``node``."""
        return node.lineno + self.line_offset


@dataclass
class ProgramAnalysis:
    """The checker's result for one program class."""

    methods: Dict[str, MethodInfo]

    @property
    def gather_uses(self):
        """Which of ``src``, ``dst``, ``edge`` gather_map uses (empty without gather)."""
        info = self.methods.get("gather_map")
        return set() if info is None else info.uses & {"src", "dst", "edge"}

    @property
    def apply_writes(self):
        """The vertex fields apply assigns."""
        return set(self.methods["apply"].vertex_writes)

    @property
    def scatter_writes(self):
        """The edge properties scatter assigns (empty without scatter)."""
        info = self.methods.get("scatter")
        return set() if info is None else set(info.edge_writes)


def check_program(cls, spec):
    """Check every translated method of ``cls`` against the subset; return a ProgramAnalysis.

    Parameters
    ----------
    cls : type
        The GASProgram subclass being defined.
    spec : ProgramSpec
        Its declarations (fields, reads, params, aggregates); read, never modified.

    Raises
    ------
    ProgramError
        Naming the program, the method and the absolute source line of the first violation.
    """
    methods = {}
    for name in spec.translated_methods:
        roles = AGGREGATE_ROLES if name.startswith("aggregate_") else ROLES[name]
        methods[name] = _MethodChecker(cls, spec, name, roles).run()
    return ProgramAnalysis(methods)


def _resolve_namespace(fn):
    ns = dict(fn.__globals__)
    if fn.__closure__:
        for var, cell in zip(fn.__code__.co_freevars, fn.__closure__):
            try:
                ns[var] = cell.cell_contents
            except ValueError:  # an empty cell: the closure variable is not bound yet
                pass
    return ns


class _MethodChecker:
    def __init__(self, cls, spec, name, roles):
        self.spec = spec
        self.name = name
        self.prog = spec.name
        raw = inspect.getattr_static(cls, name)
        if not isinstance(raw, types.FunctionType):
            raise ProgramError(f"{name} must be a plain method (def {name}(self, ...))", self.prog)
        self.fn = raw
        text = method_source(raw)
        if text is None:
            raise ProgramError(unavailable_message(raw), self.prog)
        src = textwrap.dedent(text)
        self.first = raw.__code__.co_firstlineno
        try:
            module = ast.parse(src)
        except SyntaxError as exc:  # e.g. a method whose dedented source is not a full statement
            raise ProgramError(f"{name}: cannot parse source ({exc.msg})", self.prog,
                               self.first + (exc.lineno or 1) - 1) from None
        tree = module.body[0]
        self.info = MethodInfo(name=name, tree=tree, lineno=self.first, line_offset=self.first - 1,
                               argmap={})
        self.roles = roles
        self.ns = _resolve_namespace(raw)
        self.locals = set()
        # locals bound to a bare name or field read: on numpy they share the array, so an
        # in-place ``+=`` would also change the original (state or another local) on the CPU only.
        self.aliases = set()

    def fail(self, node, msg):
        line = self.info.line(node) if node is not None and hasattr(node, "lineno") else self.first
        raise ProgramError(f"{self.name}: {msg}", self.prog, line)

    # -- structure -------------------------------------------------------------------------
    def run(self):
        tree = self.info.tree
        if not isinstance(tree, ast.FunctionDef):
            self.fail(tree, "must be defined with def")
        if tree.decorator_list:
            self.fail(tree.decorator_list[0], "decorators are not supported on translated methods")
        a = tree.args
        if a.vararg or a.kwarg or a.kwonlyargs or a.defaults or a.posonlyargs:
            self.fail(tree, "takes plain positional arguments only (no defaults, *args, **kwargs)")
        names = [arg.arg for arg in a.args]
        want = ("self",) + tuple(self.roles)
        if len(names) != len(want):
            self.fail(tree, f"must be defined as {self.name}({', '.join(want)})")
        self.self_name = names[0]
        self.info.argmap = dict(zip(names[1:], self.roles))
        body = tree.body
        if body and _is_docstring(body[0]):
            body = body[1:]
        for i, stmt in enumerate(body):
            last = i == len(body) - 1
            if isinstance(stmt, ast.Return):
                if not last:
                    self.fail(body[i + 1], "code after return is not allowed: return must come last")
                self.check_return(stmt)
            else:
                self.check_stmt(stmt)
        if self.name != "scatter" and not self.info.returns:
            what = "its changed mask (a bool expression, or True/False)" if self.name == "apply" \
                else ("the message" if self.name == "gather_map" else "the per-vertex term")
            self.fail(body[-1] if body else tree, f"must end with 'return' of {what}")
        return self.info

    def check_return(self, stmt):
        if stmt.value is None:
            if self.name != "scatter":
                self.fail(stmt, "return needs a value")
            return
        if self.name == "scatter":
            self.fail(stmt, "scatter returns nothing; it assigns edge.<prop>")
        self.expr(stmt.value)
        self.info.returns = True

    def check_stmt(self, stmt):
        if isinstance(stmt, ast.Pass):
            return
        if isinstance(stmt, ast.Expr):
            if _is_docstring(stmt):
                self.fail(stmt, "a string is allowed only as the docstring")
            self.fail(stmt, "a bare expression does nothing: assign it or return it")
        if isinstance(stmt, ast.Assign):
            if len(stmt.targets) != 1:
                self.fail(stmt, "chained assignment 'a = b = ...' is not supported")
            self.expr(stmt.value)
            self.assign_target(stmt.targets[0], stmt)
            if isinstance(stmt.targets[0], ast.Name):
                if isinstance(stmt.value, (ast.Name, ast.Attribute)):
                    self.aliases.add(stmt.targets[0].id)
                else:
                    self.aliases.discard(stmt.targets[0].id)
            return
        if isinstance(stmt, ast.AugAssign):
            target = stmt.target
            if not isinstance(target, ast.Name):
                if isinstance(target, ast.Attribute):
                    self.fail(stmt, f"augmented assignment to a field is not supported: write "
                                    f"{_dotted(target)} = {_dotted(target)} ... instead")
                self.fail(stmt, "augmented assignment needs a local variable as its target")
            if not isinstance(stmt.op, BINOPS):
                self.fail(stmt, f"operator {type(stmt.op).__name__} is not supported")
            if target.id not in self.locals:
                self.fail(stmt, f"local {target.id!r} is used before it is assigned")
            if target.id in self.aliases:
                self.fail(stmt, f"{target.id!r} is another name for a value read elsewhere, and "
                                f"'+=' would change that value in place on numpy: write "
                                f"{target.id} = {target.id} {_opsym(stmt.op)} ... instead")
            self.expr(stmt.value)
            self.assign_target(target, stmt)
            return
        why = _WHY.get(type(stmt))
        self.fail(stmt, why or f"{type(stmt).__name__} statements are not supported")

    def assign_target(self, target, stmt):
        if isinstance(target, ast.Name):
            name = target.id
            if name == self.self_name or name in self.info.argmap:
                self.fail(stmt, f"cannot assign to the argument {name!r}; use a new local name")
            if self._global_function(name) is not None or self._is_function_module(name):
                self.fail(stmt, f"local {name!r} shadows a gr function or module; rename it")
            self.locals.add(name)
            return
        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
            base, attr = target.value.id, target.attr
            role = self.info.argmap.get(base)
            if base == self.self_name:
                self.fail(stmt, f"cannot assign self.{attr}: parameters and aggregates are "
                                f"read-only inside translated methods")
            if role == "v" and self.name == "apply":
                if attr in self.spec.vertex_fields:
                    self.info.vertex_writes.add(attr)
                    self.info.uses.add("v")
                    return
                if attr in _builtin_vertex():
                    self.fail(stmt, f"{base}.{attr} is a built-in vertex property and read-only")
                self.fail(stmt, f"{base}.{attr}: {attr!r} is not a declared vertex field "
                                f"(fields: {sorted(self.spec.vertex_fields)})")
            if role == "edge" and self.name == "scatter":
                if attr not in self.spec.edge_state:
                    self.fail(stmt, f"{base}.{attr}: scatter writes only mutable edge state; "
                                    f"declare {attr!r} in edge_state")
                self.info.edge_writes.add(attr)
                self.info.uses.add("edge")
                return
            if role in ("src", "dst", "edge", "v"):
                self.fail(stmt, f"cannot write {base}.{attr} in {self.name}: only apply writes "
                                f"vertex fields (v.<field>) and only scatter writes edge properties")
        if isinstance(target, (ast.Tuple, ast.List)):
            self.fail(stmt, "tuple unpacking is not supported: assign one name at a time")
        self.fail(stmt, "can assign only to a local name"
                  + (" or v.<field>" if self.name == "apply" else ""))

    # -- expressions -------------------------------------------------------------------------
    def expr(self, node):
        if isinstance(node, ast.Constant):
            val = node.value
            if isinstance(val, (bool, int, float)):
                return
            self.fail(node, f"constant {val!r} is not supported: only int, float and bool literals")
        if isinstance(node, ast.Name):
            name = node.id
            if name in self.locals:
                return
            role = self.info.argmap.get(name)
            if role == "acc":
                self.info.uses.add("acc")
                return
            if role is not None or name == self.self_name:
                self.fail(node, f"{name!r} cannot be used as a value; read one of its fields "
                                f"({name}.<field>)")
            if self._global_function(name) is not None:
                self.fail(node, f"function {name!r} must be called, not used as a value")
            self.fail(node, f"unknown name {name!r}: only locals assigned earlier, {self.self_name}."
                            f"<param> and the gr functions are visible (globals are not; "
                            f"declare a param)")
        if isinstance(node, ast.Attribute):
            return self.attribute(node)
        if isinstance(node, ast.BinOp):
            if not isinstance(node.op, BINOPS):
                self.fail(node, f"operator {_opname(node.op)} is not supported")
            self.expr(node.left)
            self.expr(node.right)
            return
        if isinstance(node, ast.UnaryOp):
            if isinstance(node.op, ast.Not):
                self.fail(node, "'not' does not vectorise: use ~ on a bool expression")
            self.expr(node.operand)
            return
        if isinstance(node, ast.Compare):
            if len(node.ops) != 1:
                self.fail(node, "chained comparisons are not supported: write (a < b) & (b < c)")
            if not isinstance(node.ops[0], CMPOPS):
                self.fail(node, f"comparison {_opname(node.ops[0])} is not supported")
            self.expr(node.left)
            self.expr(node.comparators[0])
            return
        if isinstance(node, ast.Call):
            return self.call(node)
        why = _WHY.get(type(node))
        self.fail(node, why or f"{type(node).__name__} expressions are not supported")

    def attribute(self, node):
        if not isinstance(node.value, ast.Name):
            self.fail(node, f"attribute access {_dotted(node)} is not supported: only "
                            f"src/dst/v.<field>, edge.<prop> and self.<param>")
        base, attr = node.value.id, node.attr
        if base == self.self_name:
            if attr in self.spec.params:
                self.info.params.add(attr)
            elif attr in self.spec.aggregates:
                self.info.aggregates.add(attr)
            elif attr in SELF_BUILTINS:
                self.info.self_builtins.add(attr)
            else:
                known = sorted(self.spec.params) + sorted(self.spec.aggregates) + list(SELF_BUILTINS)
                self.fail(node, f"self.{attr} is not a param, aggregate or built-in "
                                f"(known: {known})")
            return
        role = self.info.argmap.get(base)
        if role == "v" and attr in self.info.vertex_writes:
            return  # apply reads back a value it assigned, not the vertex state
        if role in ("src", "dst", "v"):
            if attr in self.spec.vertex_fields:
                pass
            elif attr in _builtin_vertex():
                if attr != "id" and attr not in self.spec.vertex_reads:
                    self.fail(node, f"{base}.{attr}: add {attr!r} to the program's reads")
            else:
                self.fail(node, f"{base}.{attr}: {attr!r} is not a vertex field or built-in "
                                f"(fields: {sorted(self.spec.vertex_fields)})")
            self.info.uses.add(role)
            self.info.vertex_reads.setdefault(role, set()).add(attr)
            return
        if role == "edge":
            if attr not in self.spec.edge_reads and attr not in self.spec.edge_state:
                self.fail(node, f"{base}.{attr}: edge property {attr!r} is neither in reads "
                                f"nor in edge_state")
            self.info.uses.add("edge")
            self.info.edge_reads.add(attr)
            return
        if role == "acc":
            self.fail(node, f"{base} is the gathered value, it has no attributes")
        if self._is_function_module(base):
            self.fail(node, f"{_dotted(node)} must be called")
        self.fail(node, f"attribute access {_dotted(node)} is not supported: only "
                        f"src/dst/v.<field>, edge.<prop> and self.<param>")

    def call(self, node):
        canon = self._callee(node.func)
        if canon is None:
            self.fail(node, f"call of {_dotted(node.func)} is not supported: only gr."
                            f"{'/'.join(ARITY)} may be called")
        if node.keywords:
            self.fail(node, f"{canon}() takes positional arguments only")
        if any(isinstance(a, ast.Starred) for a in node.args):
            self.fail(node, f"{canon}(*args) is not supported")
        if len(node.args) != ARITY[canon]:
            self.fail(node, f"{canon}() takes {ARITY[canon]} argument(s), not {len(node.args)}")
        self.info.functions[_dotted(node.func)] = canon
        for arg in node.args:
            self.expr(arg)

    def _callee(self, func):
        if isinstance(func, ast.Name):
            if func.id in self.locals or func.id in self.info.argmap:
                return None
            return self._global_function(func.id)
        if isinstance(func, ast.Attribute) and func.attr in ARITY:
            base = func.value
            parts = []
            while isinstance(base, ast.Attribute):
                parts.append(base.attr)
                base = base.value
            if not isinstance(base, ast.Name) or base.id in self.locals or base.id in self.info.argmap:
                return None
            obj = self.ns.get(base.id)
            for part in reversed(parts):
                obj = getattr(obj, part, None)
            if isinstance(obj, types.ModuleType) and obj.__name__ in FUNCTION_MODULES:
                return func.attr
        return None

    def _global_function(self, name):
        obj = self.ns.get(name)
        if obj is None:
            return None
        for canon, fn in FUNCTIONS.items():
            if obj is fn:
                return canon
        return None

    def _is_function_module(self, name):
        obj = self.ns.get(name)
        return isinstance(obj, types.ModuleType) and obj.__name__ in FUNCTION_MODULES


def _builtin_vertex():
    from .program import BUILTIN_VERTEX
    return BUILTIN_VERTEX


def _is_docstring(stmt):
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) \
        and isinstance(stmt.value.value, str)


def _dotted(node):
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return _dotted(node.value) + "." + node.attr
    return ast.unparse(node)


def _opsym(op):
    return {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
            ast.Mod: "%", ast.Pow: "**", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^"}.get(
        type(op), type(op).__name__)


def _opname(op):
    return {ast.MatMult: "@", ast.LShift: "<<", ast.RShift: ">>", ast.Is: "is", ast.IsNot: "is not",
            ast.In: "in", ast.NotIn: "not in"}.get(type(op), type(op).__name__)
