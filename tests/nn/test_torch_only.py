"""`linformer_kit.nn` needs torch and nothing else."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import linformer_kit.nn

NN_DIR = Path(linformer_kit.nn.__file__).parent


def test_nn_sources_import_only_torch_and_the_standard_library() -> None:
    allowed = {"torch", "linformer_kit", "__future__", *sys.stdlib_module_names}
    for path in NN_DIR.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                roots = {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                roots = {(node.module or "").split(".")[0]}
            else:
                continue
            assert roots <= allowed, f"{path.name} imports {roots - allowed}"


def test_nn_works_when_transformers_cannot_be_imported() -> None:
    code = (
        "import sys; sys.modules['transformers'] = None\n"  # makes `import transformers` fail
        "import torch\n"
        "from linformer_kit.nn import LinformerSelfAttention\n"
        "y = LinformerSelfAttention(16, 2, 8, 4)(torch.randn(1, 8, 16))\n"
        "assert y.shape == (1, 8, 16)\n"
        "assert 'transformers' not in {m.split('.')[0] for m, v in sys.modules.items() if v is not None}\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
