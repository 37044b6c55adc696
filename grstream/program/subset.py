"""The restricted Python subset of GAS methods: roles of their arguments, allowed operators and
functions, and the reason each refused construct is refused (used by :mod:`.checker`).
"""
import ast

#: positional roles of each translated method's arguments, after ``self``.
ROLES = {
    "gather_map": ("src", "dst", "edge"),
    "apply": ("v", "acc"),
    "scatter": ("src", "dst", "edge"),
}
AGGREGATE_ROLES = ("v",)
#: ``self.<name>`` built-ins every program may read.
SELF_BUILTINS = ("num_vertices", "num_edges", "iteration")
#: arity of each allowed function.
ARITY = {"where": 3, "minimum": 2, "maximum": 2, "abs": 1, "sqrt": 1, "exp": 1, "log": 1}
BINOPS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow,
          ast.BitAnd, ast.BitOr, ast.BitXor)
CMPOPS = (ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq, ast.NotEq)
#: modules whose ``<alias>.<function>`` spelling is accepted.
FUNCTION_MODULES = ("grstream", "grstream.program", "grstream.program.functions")

_WHY = {
    ast.If: "if statements are not supported: compute both sides and pick with gr.where(cond, a, b)",
    ast.For: "for loops are not supported: a method sees one edge or vertex at a time",
    ast.While: "while loops are not supported: a method sees one edge or vertex at a time",
    ast.With: "with statements are not supported",
    ast.Try: "try statements are not supported",
    ast.FunctionDef: "nested functions are not supported",
    ast.Lambda: "lambdas are not supported",
    ast.IfExp: "'a if c else b' is not supported: use gr.where(c, a, b)",
    ast.BoolOp: "'and'/'or' do not vectorise: use & and | on bool expressions (parenthesised)",
    ast.Subscript: "subscripts are not supported",
    ast.ListComp: "comprehensions are not supported",
    ast.SetComp: "comprehensions are not supported",
    ast.DictComp: "comprehensions are not supported",
    ast.GeneratorExp: "generator expressions are not supported",
    ast.List: "lists are not supported",
    ast.Tuple: "tuples are not supported",
    ast.Dict: "dicts are not supported",
    ast.Set: "sets are not supported",
    ast.JoinedStr: "strings are not supported",
    ast.Starred: "starred expressions are not supported",
    ast.NamedExpr: "':=' is not supported",
    ast.Await: "await is not supported",
    ast.Yield: "yield is not supported",
    ast.YieldFrom: "yield is not supported",
    ast.Global: "global is not supported",
    ast.Nonlocal: "nonlocal is not supported",
    ast.Delete: "del is not supported",
    ast.Assert: "assert is not supported",
    ast.Raise: "raise is not supported",
    ast.Import: "imports are not supported inside a translated method",
    ast.ImportFrom: "imports are not supported inside a translated method",
    ast.AnnAssign: "annotated assignments are not supported: write x = ...",
    ast.ClassDef: "class definitions are not supported",
    ast.Break: "break is not supported",
    ast.Continue: "continue is not supported",
}
