"""What importing each part of the package pulls in (each case in a fresh interpreter), and what imports the CLI."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import linformer_kit


def run_python(code: str) -> None:
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr[-3000:]


def test_importing_nn_does_not_import_transformers() -> None:
    pytest.importorskip("transformers")  # installed, and still not imported
    run_python(
        "import sys, torch\n"
        "import linformer_kit.nn\n"
        "y = linformer_kit.nn.LinformerSelfAttention(16, 2, 8, 4)(torch.randn(1, 8, 16))\n"
        "assert 'transformers' not in sys.modules, 'linformer_kit.nn imported transformers'\n"
        "assert 'linformer_kit.models' not in sys.modules\n"
    )


def test_importing_linformer_kit_imports_neither_transformers_nor_torch() -> None:
    pytest.importorskip("transformers")  # installed, and still not imported
    run_python(
        "import sys\nimport linformer_kit\n"
        "heavy = sorted(m for m in ('transformers', 'torch', 'linformer_kit.models') if m in sys.modules)\n"
        "assert not heavy, f'import linformer_kit imported {heavy}'\n"
    )


def test_importing_linformer_kit_then_transformers_registers_nothing() -> None:
    """Registration is explicit: no import hook makes `import transformers` pull in the models."""
    pytest.importorskip("transformers")
    run_python(
        "import sys\nimport linformer_kit\nimport transformers\n"
        "assert 'linformer_kit.models' not in sys.modules\n"
        "assert 'linformer' not in transformers.CONFIG_MAPPING\n"
    )


@pytest.mark.parametrize("first", ["linformer_kit.models", "transformers"])
def test_importing_linformer_kit_models_registers_the_auto_classes(first: str) -> None:
    """Either import order: `import linformer_kit.models` is what registers `model_type="linformer"`."""
    second = "transformers" if first == "linformer_kit.models" else "linformer_kit.models"
    run_python(
        f"import {first}\nimport {second}\n"
        "from transformers import AutoConfig, AutoModelForMaskedLM\n"
        "config = AutoConfig.for_model('linformer', hidden_size=32, num_attention_heads=2, num_hidden_layers=1,\n"
        "                              intermediate_size=64, vocab_size=50, max_position_embeddings=18,\n"
        "                              projected_length=4)\n"
        "assert type(config).__module__ == 'linformer_kit.models.configuration_linformer', type(config)\n"
        "model = AutoModelForMaskedLM.from_config(config)\n"
        "assert type(model).__name__ == 'LinformerForMaskedLM'\n"
    )


def test_subpackages_load_on_first_use() -> None:
    run_python(
        "import sys\nimport linformer_kit\n"
        "assert 'linformer_kit.models' not in sys.modules\n"
        "assert linformer_kit.models.LinformerConfig.model_type == 'linformer'\n"
        "from transformers import AutoConfig\n"
        "assert AutoConfig.for_model('linformer').model_type == 'linformer'  # first use registered it\n"
        "assert linformer_kit.nn.LinformerSelfAttention is not None\n"
    )


@pytest.mark.parametrize("verb", ["spectrum", "benchmark"])
def test_help_and_argument_errors_of_a_verb_load_no_torch(verb: str) -> None:
    """`--help` and a bad flag answer after parsing only: torch (and the models) load after it."""
    pytest.importorskip("transformers")
    for argv in ([verb, "--help"], [verb, "--no-such-flag"]):
        run_python(
            "import contextlib, io, sys\nfrom linformer_kit.cli.main import main\n"
            f"with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):\n"
            f"    try:\n        main({argv!r})\n    except SystemExit:\n        pass\n"
            "heavy = sorted(m for m in ('torch', 'transformers.training_args', 'linformer_kit.models') if m in sys.modules)\n"
            "assert not heavy, heavy\n"
        )


def cli_imports(source: str, module: str) -> list[int]:
    """The lines of `source` (the module named `module`) that import linformer_kit.cli or a module in it:
    `import`, `from ... import` (relative too) and `importlib.import_module` / `__import__` of a constant."""
    package = module.split(".")[:-1]  # what `.` stands for (a package's own module: `pkg.__init__`)
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            target = ".".join([*base, *([node.module] if node.module else [])])
            names = [target, *(f"{target}.{alias.name}" for alias in node.names)]
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) in (
            "import_module", "__import__"
        ) and node.args and isinstance(node.args[0], ast.Constant):  # fmt: skip
            names = [str(node.args[0].value)]
        else:
            continue
        if any(name == "linformer_kit.cli" or name.startswith("linformer_kit.cli.") for name in names):
            found.append(node.lineno)
    return found


@pytest.mark.parametrize(
    ("source", "module", "imports"),
    [
        ("import linformer_kit.cli.main", "linformer_kit.train.x", True),
        ("from linformer_kit.cli import arguments", "linformer_kit.train.x", True),
        ("from linformer_kit import cli", "linformer_kit.x", True),
        ("from ..cli.pretrain import build_parser", "linformer_kit.reproduction.study", True),
        ("from .. import cli", "linformer_kit.reproduction.__init__", True),  # a package's `.` is itself
        ("from . import cli", "linformer_kit.__init__", True),
        ("from .cli import main", "linformer_kit.x", True),
        ("def f():\n    import importlib\n    importlib.import_module('linformer_kit.cli.main')", "linformer_kit.x", True),
        ("from linformer_kit.config_parser import parse_config", "linformer_kit.x", False),
        ("from . import client", "linformer_kit.x", False),
        ("argv = ['-m', 'linformer_kit.cli.main']", "linformer_kit.x", False),  # runs it in another process
    ],
)  # fmt: skip
def test_cli_imports_finds_every_spelling(source: str, module: str, imports: bool) -> None:
    assert bool(cli_imports(source, module)) is imports


def test_nothing_outside_the_cli_imports_it() -> None:
    """`cli/` is the top, thin shell (docs/design.md, "Layers"): no module of the library imports it, by
    absolute or relative name, at the top of a module or inside a function."""
    root = Path(linformer_kit.__file__).parent.parent
    found, cli = [], 0
    for path in sorted((root / "linformer_kit").rglob("*.py")):
        module = ".".join(path.relative_to(root).with_suffix("").parts)
        lines = cli_imports(path.read_text(), module)
        if module.startswith("linformer_kit.cli."):
            cli += len(lines)
        else:
            found += [f"{module}:{line}" for line in lines]
    assert found == []
    assert cli > 0  # the scan sees the imports there are (cli/ imports cli/)


LOWER = ("nn", "models", "train", "bench", "analysis", "lra")
TOP = ("linformer_kit.reproduction", "linformer_kit.longdocs", "linformer_kit.cli")


def test_the_lower_layers_import_no_study() -> None:
    """The studies (reproduction/, longdocs/) and the CLI sit on top (docs/design.md, "Layers"): nn/, models/,
    train/, bench/, analysis/ and lra/ import none of them, at the top of a module or inside a function."""
    root = Path(__file__).resolve().parents[1] / "src" / "linformer_kit"
    found = []
    for layer in LOWER:
        for path in (root / layer).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
                if isinstance(node, ast.ImportFrom) and node.module:
                    names = [node.module]
                found += [f"{path.relative_to(root)}:{node.lineno} {n}" for n in names if n.startswith(TOP)]
    assert not found


# The option tables: one definition, default and check per option, kept together (issue "The attention core as
# one plan a forward", item 8)
LONG_BY_DESIGN = {"train/distill/config.py", "nn/options.py"}
MOST_LINES = 300


def test_every_module_is_a_room_of_at_most_300_lines() -> None:
    root = Path(linformer_kit.__file__).parent
    sizes = {
        path.relative_to(root).as_posix(): len(path.read_text().splitlines()) for path in root.rglob("*.py")
    }
    assert set(LONG_BY_DESIGN) <= set(sizes)
    over = {name: lines for name, lines in sizes.items() if lines > MOST_LINES and name not in LONG_BY_DESIGN}
    assert not over, f"modules over {MOST_LINES} lines: {over}"
