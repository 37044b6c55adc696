"""The README's "Algorithms from Python" example runs and prints what its comments say."""
import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_algorithms_example(tmp_path, monkeypatch, capsys):
    text = README.read_text()
    code = re.search(r"## Algorithms from Python.*?```python\n(.*?)```", text, re.S).group(1)
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "README.md", "exec"), {})
    printed = capsys.readouterr().out.splitlines()
    promised = [line.split("# ", 1)[1] for line in code.splitlines() if line.startswith("print(")]
    assert printed == promised
