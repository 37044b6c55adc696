"""The README's claims: its custom program runs and is right, its commands exist."""
import importlib.util
import re
from pathlib import Path

import numpy as np

import grstream as gr

from .algorithms.conftest import build, random_edges

README = Path(__file__).resolve().parents[1] / "README.md"


def readme_program(tmp_path):
    """The README's program class, loaded from a module file (the checker reads its source)."""
    text = README.read_text()
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    definition = code.split("\nstore = ")[0]  # the class, without the run on the default store
    path = tmp_path / "readme_program.py"
    path.write_text(definition)
    spec = importlib.util.spec_from_file_location("readme_program", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.WidestPath


def widest_reference(n, src, dst, w, source):
    width = np.zeros(n)
    width[source] = np.inf
    for _ in range(n + 1):
        cand = np.zeros(n)
        np.maximum.at(cand, dst, np.minimum(width[src], w))
        new = np.maximum(width, cand)
        if (new == width).all():
            break
        width = new
    return width


def test_readme_custom_program_computes_widest_paths(tmp_path, rng):
    widest = readme_program(tmp_path)
    for shards in (1, 4):
        src, dst, w = random_edges(rng, 60, 240, weighted=True)
        store = build(tmp_path, 60, src, dst, w, num_shards=shards, name=f"w{shards}")
        result = gr.run(widest(source=0), store, device="auto", memory_budget=1 << 26)
        np.testing.assert_array_equal(result.value, widest_reference(60, src, dst, w, 0))


def test_readme_first_commands_are_the_ci_ones():
    text = README.read_text()
    block = re.search(r"```bash\n(.*?)```", text, re.S).group(1).splitlines()
    assert block[0].startswith('pip install -e ".[test]" && grstream run pagerank')
    assert block[1].startswith("python -m pytest -q")
    ci = (README.parent / ".ci" / "run").read_text()
    assert "grstream run pagerank" in ci and "python -m pytest -q" in ci
