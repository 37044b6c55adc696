"""The GAS program API: GASProgram, monoids and the functions programs may call."""
from . import monoid
from .functions import abs, exp, log, maximum, minimum, sqrt, where  # noqa: A004
from .program import GASProgram, ProgramSpec
from .source import program_from_source

__all__ = ["GASProgram", "ProgramSpec", "monoid", "where", "minimum", "maximum", "abs", "sqrt",
           "exp", "log", "program_from_source"]
