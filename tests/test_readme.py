"""The README's Python examples run as written (a block opening with `# not run in tests` is skipped).

Its shell blocks run in tests/test_readme_shell.py.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)


def test_readme_has_python_examples() -> None:
    assert len(BLOCKS) >= 2


@pytest.mark.slow
def test_readme_python_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # examples that write files write them here
    namespace: dict = {}
    for block in BLOCKS:
        if block.startswith("# not run in tests"):
            continue
        exec(compile(block, str(README), "exec"), namespace)
