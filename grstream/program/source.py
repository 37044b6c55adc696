"""Finding the source text of a program's methods, wherever the class was defined.

The checker and the CUDA translator work from source, not bytecode (bytecode differs between
Python versions and loses the expression structure the translation keeps). Sources are found:

1. through :mod:`linecache`, as :func:`inspect.getsource` does: ``.py`` files, IPython and Jupyter
   cells (IPython registers every cell there), Python 3.13's REPL;
2. for ``python -c CODE``: from ``sys.orig_argv``, accepted only when compiling that text gives
   a function with exactly the method's bytecode (``<string>`` is also the name ``exec`` uses);
3. from a string given to :func:`program_from_source`, which registers it in linecache: the way
   for code that Python does not keep (``exec`` of a string, ``python - <<EOF``, the stdin REPL
   of Python <= 3.12).
"""
import inspect
import itertools
import linecache
import sys
import types

import numpy as np

from ..errors import ProgramError

_counter = itertools.count(1)

#: what to do when a source cannot be found; part of every "unavailable" ProgramError.
HOW_TO = ("put the class in a .py file or a notebook cell, or pass its source as a string: "
          "P = gr.program_from_source('''class P(gr.GASProgram): ...''')")


def method_source(fn):
    """Source text of function ``fn`` (its ``def`` and body, not dedented), or None."""
    try:
        return inspect.getsource(fn)
    except (OSError, TypeError):
        pass
    lines = _command_lines(fn.__code__)
    if lines is None:
        return None
    return "".join(inspect.getblock(lines[fn.__code__.co_firstlineno - 1:]))


def unavailable_message(fn):
    """The ProgramError text for a method whose source cannot be found."""
    where = fn.__code__.co_filename
    return (f"the source of {fn.__name__} is unavailable (defined in {where}, which Python does "
            f"not keep); the checker needs it: {HOW_TO}")


def _command_lines(code):
    """Lines of the ``python -c`` command when it defined ``code``, else None."""
    if code.co_filename != "<string>":
        return None
    command = _dash_c_command(getattr(sys, "orig_argv", None) or [])
    if command is None:
        return None
    try:
        compiled = compile(command, "<string>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return None
    if not any(_same_code(c, code) for c in _code_objects(compiled)):
        return None  # an exec() of some other string: its text is gone
    return command.splitlines(keepends=True)


def _dash_c_command(argv):
    """The CODE of ``python [options] -c CODE``, or None when the interpreter ran something else."""
    args = iter(argv[1:])
    for arg in args:
        if arg == "--" or not arg.startswith("-") or arg == "-":
            return None
        if arg.startswith("--"):
            if arg == "--check-hash-based-pycs":
                next(args, None)
            continue
        for k, flag in enumerate(arg[1:], start=1):
            rest = arg[k + 1:]
            if flag == "c":
                return rest or next(args, None)
            if flag == "m":
                return None
            if flag in "WX":  # options taking a value: the rest of this argument or the next one
                if not rest:
                    next(args, None)
                break
    return None


def _code_objects(code):
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _code_objects(const)


def _same_code(a, b):
    # the constants too: `x * 2.0` and `x * 3.0` differ only there
    return (a.co_name == b.co_name and a.co_firstlineno == b.co_firstlineno
            and a.co_code == b.co_code and a.co_names == b.co_names
            and a.co_consts == b.co_consts and a.co_varnames == b.co_varnames)


def program_from_source(source, name=None, namespace=None):
    """Define a GASProgram subclass from source text; for code without a file.

    ``python -c``, ``exec`` of a string and the stdin REPL of Python <= 3.12 do not keep the text
    of what they run, and the checker needs the source of the translated methods. This executes
    ``source`` under a unique file name registered in :mod:`linecache`, so the class is checked,
    translated and shown in tracebacks like one defined in a file.

    Parameters
    ----------
    source : str
        Python code defining the program class (and anything else it needs).
    name : str, optional
        The class to return when ``source`` defines several GASProgram subclasses.
    namespace : dict, optional
        Extra globals for the code (e.g. ``globals()``); ``gr``, ``grstream``, ``np`` and
        ``numpy`` are always defined.

    Returns
    -------
    type
        The GASProgram subclass.

    Raises
    ------
    ProgramError
        ``source`` does not parse, defines no program class, several without ``name``, or the
        class fails the checker.

    Examples
    --------
    >>> Max = gr.program_from_source('''
    ... class Max(gr.GASProgram):
    ...     vertex = {"x": "float64"}
    ...     gather_reduce = gr.monoid.max
    ...     def gather_map(self, src, dst, edge):
    ...         return src.x
    ...     def apply(self, v, acc):
    ...         new = gr.maximum(v.x, acc)
    ...         changed = new > v.x
    ...         v.x = new
    ...         return changed
    ... ''')
    >>> Max.__name__
    'Max'
    """
    import grstream
    from .program import GASProgram
    if not isinstance(source, str):
        raise ProgramError(f"program_from_source needs a str, not {type(source).__name__}")
    number = next(_counter)
    filename, module = f"<grstream-program-{number}>", f"grstream_program_{number}"
    # mtime None: linecache.checkcache keeps the entry (IPython registers its cells the same way)
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    scope = {"__name__": module, "gr": grstream, "grstream": grstream, "np": np, "numpy": np}
    scope.update(namespace or {})
    scope["__name__"] = module
    try:
        code = compile(source, filename, "exec", dont_inherit=True)
    except SyntaxError as exc:
        raise ProgramError(f"program source does not parse: {exc.msg}", name, exc.lineno) from None
    exec(code, scope)  # noqa: S102 - running the caller's own program text is the point
    found = {k: v for k, v in scope.items() if isinstance(v, type) and issubclass(v, GASProgram)
             and v is not GASProgram and v.__module__ == module and v.spec is not None}
    if name is not None:
        if name not in found:
            raise ProgramError(f"the source defines no GASProgram subclass {name!r} "
                               f"(it defines {sorted(found) or 'none'})", name)
        return found[name]
    if len(found) != 1:
        raise ProgramError(f"the source defines {len(found)} GASProgram subclasses "
                           f"({', '.join(sorted(found)) or 'none'}): name the one to return")
    return next(iter(found.values()))
