"""Algorithm parameters declared once, in the manner of Gunrock's ``param_t``.

An algorithm module declares its entry point with :func:`declare`: its CLI name, one
:class:`Param` per parameter (name, kind, default, help) and what the command line prints about
its values. Everything else is derived from that declaration:

- the function's signature (``inspect.signature``: names, order, defaults, annotations) and the
  Parameters section of its docstring;
- the checks every call passes through, each failing with a :class:`~grstream.errors.UsageError`
  naming the parameter (a Python call) or its flag (``grstream run``);
- ``grstream run``'s options and their help: grstream/commands/run.py holds no per-algorithm
  code, it reads :data:`grstream.algorithms.ALGORITHMS` and these declarations.

The function itself is written without defaults, and it receives every declared parameter checked
(defaults filled in) plus the engine options (``**run_options``, passed to :func:`grstream.run`)::

    @declare("bfs", Param("source", Vertex(), None, "source vertex ..."),
             Param("max_iter", Count(), None, "iterations at most ..."))
    def bfs(store, source, max_iter, **run_options):
        ...

Declaring imports nothing heavy, so ``grstream run --help`` reads the declarations cheaply;
counts and flags are checked by the engine's own checks (grstream/engine/entry.py), so
``gr.run`` and the algorithms refuse a bad ``max_iter`` with the same message.
"""
import functools
import inspect
import math
import numbers
import random
from typing import Any, Callable, Optional

from ..errors import UsageError, plain


class Kind:
    """What values a parameter takes: its annotation, how the command line writes one
    (``parse``) and the check every value passes (``check``; the value to use, or UsageError).
    The base kind takes anything: the function checks it against the store."""

    annotation: Any = Any
    metavar = "X"
    #: whether the command line can give it (``parse``)
    textual = False

    def check(self, label, value):
        return value

    def parse(self, label, text):
        return text


class Vertex(Kind):
    """A vertex label as the input names it (an integer id or a name); the store resolves it."""

    metavar = "ID"
    textual = True


class Count(Kind):
    """An integer >= ``minimum`` >= 0 (and <= ``maximum``; None too when ``optional``); integral
    floats and numpy integers count, bools and strings do not."""

    annotation = int
    metavar = "N"
    textual = True

    def __init__(self, minimum=0, maximum=None, optional=False):
        self.minimum, self.maximum, self.optional = minimum, maximum, optional

    def check(self, label, value):
        from ..engine import entry  # the engine's own check of counts (gr.run's max_iter)
        x = entry.count(label, value, allow_none=self.optional)
        if x is None:
            return x
        if x < self.minimum or (self.maximum is not None and x > self.maximum):
            upper = f" and at most {self.maximum}" if self.maximum is not None else ""
            raise UsageError(f"{label} must be at least {self.minimum}{upper}, not {plain(value)}")
        return x

    def parse(self, label, text):
        return _convert(int, "an integer", label, text)


class Real(Kind):
    """A finite real number in [low, high], ``open_low`` excluding ``low``; the message says the
    rule it checks."""

    annotation = float
    metavar = "X"
    textual = True

    def __init__(self, low=-math.inf, high=math.inf, open_low=False, rule=None):
        self.low, self.high, self.open_low = low, high, open_low
        bounds = [f"{'>' if open_low else '>='} {low:g}"] if low > -math.inf else []
        bounds += [f"<= {high:g}"] if high < math.inf else []
        self.rule = rule or " and ".join(["a finite number"] + bounds)

    def check(self, label, value):
        if _is_bool(value) or not isinstance(value, numbers.Real):
            raise UsageError(f"{label} must be a number, not {plain(value)}")
        x = float(value)
        if math.isnan(x):
            raise UsageError(f"{label} must be a number, not NaN")
        low_ok = x > self.low if self.open_low else x >= self.low
        if not (low_ok and x <= self.high and math.isfinite(x)):
            raise UsageError(f"{label} must be {self.rule}, not {plain(value)}")
        return x

    def parse(self, label, text):
        return _convert(float, "a number", label, text)


def Fraction():
    """A real number in [0, 1]."""
    return Real(0.0, 1.0, rule="between 0 and 1")


def Positive():
    """A finite real number > 0."""
    return Real(0.0, math.inf, open_low=True, rule="a positive finite number")


class Choice(Kind):
    """One of a few values (strings on the command line)."""

    annotation = str
    textual = True

    def __init__(self, *choices):
        self.choices = choices
        self.metavar = "{" + ",".join(map(str, choices)) + "}"

    def check(self, label, value):
        if not isinstance(value, (str, type(None))) or value not in self.choices:
            raise UsageError(f"{label} must be one of {', '.join(map(repr, self.choices))}, "
                             f"not {plain(value)}")
        return value


class Flag(Kind):
    """True or False (numpy's bool too); other truthy values are refused, not guessed."""

    annotation = bool

    def check(self, label, value):
        from ..engine import entry  # the engine's own check of flags (gr.run's progress)
        return entry.flag(label, value)


class Seed(Kind):
    """A random seed as NetworkX takes one: an integer, a ``random.Random`` or None."""

    annotation = Any
    metavar = "N"
    textual = True

    def check(self, label, value):
        if value is None or isinstance(value, random.Random):
            return value
        if _is_bool(value) or not isinstance(value, numbers.Integral):
            raise UsageError(f"{label} must be an integer, a random.Random or None, not {plain(value)}")
        return int(value)

    def parse(self, label, text):
        return _convert(int, "an integer", label, text)


class CountOr(Count):
    """A count, or one word standing for "all" of something (``--sources all``)."""

    annotation = Any

    def __init__(self, word, minimum=1):
        super().__init__(minimum)
        self.word = word
        self.metavar = f"N|{word}"

    def check(self, label, value):
        if isinstance(value, str) and value == self.word:
            return value
        try:
            return super().check(label, value)
        except UsageError:
            raise UsageError(f"{label} must be {self.word!r} or an integer at least "
                             f"{self.minimum}, not {plain(value)}") from None

    def parse(self, label, text):
        return text if text == self.word else super().parse(label, text)


def _convert(kind, what, label, text):
    try:
        return kind(text)
    except ValueError:
        raise UsageError(f"{label} must be {what}, not {text!r}") from None


def _is_bool(value):
    return isinstance(value, bool) or type(value).__name__ == "bool_"


class Param:
    """One parameter: ``name`` (the Python keyword), ``kind``, ``default`` (None allows None),
    ``help`` (one sentence for the docstring and ``--help``; ``{other}`` names another parameter
    as the reader knows it: ``other`` in Python, its flag on the command line), ``none`` (what
    a default of None means), ``flag`` (its ``grstream run`` option: ``--name`` by default, None
    for none) and ``doc`` (more for the docstring only)."""

    def __init__(self, name: str, kind: Kind, default: Any, help: str, *, none: str = "",
                 flag: Any = "", metavar: Optional[str] = None, doc: str = ""):
        self.name, self.kind, self.default, self.help, self.doc = name, kind, default, help, doc
        self.none = none
        if flag == "" and kind.textual:
            flag = "--" + name.replace("_", "-")
        self.flag = flag or None
        self.metavar = metavar or kind.metavar

    def check(self, label, value):
        if value is None and self.default is None:
            return None
        return self.kind.check(label, value)

    @property
    def annotation(self):
        ann = self.kind.annotation
        return Optional[ann] if self.default is None and ann is not Any else ann

    def default_text(self):
        """The default as ``--help`` and the docs write it (for None, what it means)."""
        if self.default is None:
            return self.none or "None"
        return repr(self.default) if isinstance(self.default, str) else str(self.default)


class Algorithm:
    """The declaration of one algorithm entry point (see the module docstring)."""

    def __init__(self, name, params, function, summary=None, rules=None, vertex_valued=False):
        self.name, self.params, self.function = name, tuple(params), function
        self.summary_hook, self.rules, self.vertex_valued = summary, rules, vertex_valued
        self.entry = None   # the declared (wrapped) function

    def param(self, name):
        return next(p for p in self.params if p.name == name)

    def cli_params(self):
        return [p for p in self.params if p.flag]

    def help(self, param, label):
        """``param``'s help with its default, other parameters named by ``label(param)``."""
        text = param.help.format(**{p.name: label(p) for p in self.params})
        return f"{text} (default: {param.default_text()})"

    def check(self, store, given, label=None):
        """Every declared parameter's value: those in ``given`` checked, the others their
        default; then the algorithm's rules over them and the store. ``label(param)`` names a
        parameter in messages (default: its Python name; the command line passes its flag)."""
        label = label or (lambda p: p.name)
        unknown = set(given) - {p.name for p in self.params}
        if unknown:
            raise UsageError(f"{self.name} takes no {', '.join(sorted(unknown))}")
        values = {p.name: p.check(label(p), given[p.name]) if p.name in given else p.default
                  for p in self.params}
        if self.rules is not None:
            self.rules(store, values, set(given), {p.name: label(p) for p in self.params})
        return values

    def summary(self, store, values, results):
        """What the summary line of ``grstream run`` adds about the values ("" for nothing)."""
        return self.summary_hook(store, values, results) if self.summary_hook else ""

    def signature(self):
        store = inspect.Parameter("store", inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                  annotation="ShardStore")
        params = [inspect.Parameter(p.name, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                    default=p.default, annotation=p.annotation)
                  for p in self.params]
        rest = inspect.Parameter("run_options", inspect.Parameter.VAR_KEYWORD, annotation=Any)
        return inspect.Signature([store] + params + [rest],
                                 return_annotation=inspect.signature(self.function).return_annotation)

    def docstring(self):
        lines = [inspect.cleandoc(self.function.__doc__ or self.name), "", "Parameters",
                 "----------", "store : ShardStore"]
        for p in self.params:
            ann = inspect.formatannotation(p.annotation)
            flag = f" Command line: ``{p.flag}``." if p.flag else ""
            lines.append(f"{p.name} : {ann}")
            lines.append(f"    {self.help(p, lambda q: q.name)}." + (f" {p.doc}" if p.doc else "")
                         + flag)
        lines += ["**run_options", "    Passed to :func:`grstream.run` (device, memory_budget, "
                  "progress, direction, ...)."]
        return "\n".join(lines)


def declare(name: str, *params: Param, summary: Optional[Callable] = None,
            rules: Optional[Callable] = None, vertex_valued: bool = False):
    """Decorator declaring an algorithm entry point ``function(store, <params>, **run_options)``.

    ``summary(store, values, results)``: what ``grstream run`` adds to its summary line.
    ``rules(store, values, given, labels)``: checks across parameters and against the store
    (UsageError), ``given`` the names the caller passed, ``labels`` each name as the caller
    knows it (parameter or flag). ``vertex_valued``: the values
    are vertex ids (written as labels, as cc's component names).
    """
    def wrap(function: Callable) -> Callable:
        decl = Algorithm(name, params, function, summary, rules, vertex_valued)
        _check_definition(decl, function)
        sig = decl.signature()

        @functools.wraps(function)
        def entry(*args, **kwargs):
            bound = sig.bind(*args, **kwargs)
            run_options = bound.arguments.pop("run_options", {})
            store = bound.arguments.pop("store")
            return function(store, **decl.check(store, bound.arguments), **run_options)

        entry.__signature__ = sig
        entry.__doc__ = decl.docstring()
        entry.declaration = decl
        decl.entry = entry
        return entry
    return wrap


def _check_definition(decl, function):
    """The function must take (store, the declared parameters in order, **run_options), with no
    defaults of its own: the declaration holds them."""
    sig = inspect.signature(function)
    names = [p.name for p in sig.parameters.values()]
    want = ["store"] + [p.name for p in decl.params] + ["run_options"]
    if names != want or any(p.default is not inspect.Parameter.empty
                            for p in sig.parameters.values()):
        raise TypeError(f"{function.__qualname__}{sig} must be ({', '.join(want[:-1])}, "
                        f"**run_options) without defaults, as its declaration says")


def source_param():
    """``source``: the vertex a traversal starts from (bfs, sssp)."""
    return Param("source", Vertex(), None, "source vertex as the input names it",
                 none="the first vertex with an out-edge, so that the run reaches more than "
                      "its source where any vertex can")


def max_iter_param(default=None, none="until no vertex changes"):
    """``max_iter``: the iteration limit handed to :func:`grstream.run`."""
    return Param("max_iter", Count(optional=default is None), default, "iterations at most",
                 none=none,
                 doc="``result.converged`` says whether the run ended by its own rule.")


__all__ = ["Param", "Algorithm", "declare", "Kind", "Vertex", "Count", "Real", "Fraction",
           "Positive", "Choice", "Flag", "Seed", "CountOr"]
