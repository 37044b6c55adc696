"""The functions a GAS program may call, as ``gr.<name>`` (numpy on the CPU).

The CUDA translator maps each name to its C spelling; the checker admits only these.
"""
import numpy as np


def where(cond, a, b):
    return np.where(cond, a, b)


minimum = np.minimum
maximum = np.maximum
abs = np.abs  # noqa: A001
sqrt = np.sqrt
exp = np.exp
log = np.log

#: name -> numpy callable; the checker's whitelist of callables.
FUNCTIONS = {
    "where": where,
    "minimum": minimum,
    "maximum": maximum,
    "abs": abs,
    "sqrt": sqrt,
    "exp": exp,
    "log": log,
}
