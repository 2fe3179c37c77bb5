"""What importing each part of the package pulls in, each case in a fresh interpreter."""

from __future__ import annotations

import subprocess
import sys

import pytest


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
