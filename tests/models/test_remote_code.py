"""A saved directory loads with trust_remote_code=True where linformer-kit is not installed.

Its `modeling_linformer.py` is generated from the package's sources at save time (one model
definition); these tests check that it is exactly those sources, that it needs nothing but torch
and transformers, and that it computes what the installed classes compute.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from tests.fixtures.batches import padded_batch
from tests.fixtures.models import tiny_linformer_config
from tests.models.isolated import outputs_without_linformer_kit
from transformers import AutoModel, AutoModelForMaskedLM
from transformers.dynamic_module_utils import get_imports

import linformer_kit
from linformer_kit.models import (
    LinformerForMaskedLM,
    LinformerForSequenceClassification,
    LinformerForTokenClassification,
    LinformerModel,
)
from linformer_kit.models.remote_code import REMOTE_CODE_FILE, SOURCES, remote_code_source

PACKAGE = Path(linformer_kit.__file__).parent


def _sections(bundle: str) -> dict[str, list[str]]:
    """The generated file split at its `# ---- linformer_kit/<source>` lines: {source: lines}."""
    sections: dict[str, list[str]] = {}
    current = None
    for line in bundle.splitlines(keepends=True):
        if line.startswith("# ---- linformer_kit/"):
            current = line.removeprefix("# ---- linformer_kit/").split(" ")[0]
            sections[current] = []
        elif current is not None:
            sections[current].append(line)
    return sections


def test_generated_code_is_the_package_sources_minus_their_imports_of_each_other() -> None:
    sections = _sections(remote_code_source())
    assert list(sections) == list(SOURCES)
    for name, lines in sections.items():
        source = (PACKAGE / name).read_text().splitlines(keepends=True)
        body = [line for line in lines if line.strip()]  # blank lines separate the sections
        # the section is the source with some lines left out, in order and byte for byte...
        kept, position = [], 0
        for line in body:
            while source[position] != line:
                position += 1  # IndexError here: a line that is not in the source
            kept.append(position)
            position += 1
        # (dedented: an import inside a function, at call time, is left out too)
        left_out = "".join(line.lstrip() for i, line in enumerate(source) if i not in set(kept))
        # ...and what was left out is only imports from __future__ or from linformer_kit itself
        for node in ast.parse(left_out).body:
            assert isinstance(node, ast.ImportFrom), ast.dump(node)
            assert node.module.split(".")[0] in ("__future__", "linformer_kit"), node.module


def test_generated_code_needs_only_torch_transformers_and_the_standard_library(tmp_path: Path) -> None:
    bundle = remote_code_source()
    first, *rest = ast.parse(bundle).body
    assert isinstance(first, ast.ImportFrom)
    assert first.module == "__future__"  # once, first: the one place Python allows it
    assert not [node for node in rest if isinstance(node, ast.ImportFrom) and node.module == "__future__"]
    (tmp_path / REMOTE_CODE_FILE).write_text(bundle)
    imports = set(get_imports(tmp_path / REMOTE_CODE_FILE))  # what transformers checks before loading it
    # safetensors: the weight format, a dependency of transformers itself (installed wherever it is)
    assert imports <= {"torch", "transformers", "safetensors", *sys.stdlib_module_names}, imports


CLASSIFIER = (LinformerForSequenceClassification, "AutoModelForSequenceClassification")
MODELS = {  # name: (class, Auto class, config): every head, every kind of shared projection, both poolings
    "mlm": (LinformerForMaskedLM, "AutoModelForMaskedLM", {"sharing": "headwise"}),
    "classifier": (*CLASSIFIER, {"sharing": "layerwise"}),
    "mean-classifier": (*CLASSIFIER, {"sharing": "kv", "classifier_pooling": "mean"}),
    "tagger": (LinformerForTokenClassification, "AutoModelForTokenClassification", {"sharing": "none"}),
    "encoder": (LinformerModel, "AutoModel", {"sharing": "kv"}),
    # the local window and a global token (nn/local.py) travel in the directory's code too
    "windowed": (LinformerModel, "AutoModel", {"local_window": 2, "global_tokens": 1}),
}


@pytest.mark.slow
def test_saved_models_load_and_agree_without_linformer_kit(tmp_path: Path) -> None:
    expected, models = {}, {}
    for name, (cls, auto_class, options) in MODELS.items():
        model = cls(tiny_linformer_config(**options)).eval()
        model.save_pretrained(tmp_path / name)
        input_ids, attention_mask = padded_batch(model.config.pad_token_id)
        inputs = {"input_ids": input_ids, "attention_mask": attention_mask}
        with torch.no_grad():
            expected[name] = model(**inputs)[0]
        models[name] = (tmp_path / name, auto_class, inputs)
        assert (tmp_path / name / REMOTE_CODE_FILE).is_file()

    got = outputs_without_linformer_kit(tmp_path / "isolated", models)

    for name in MODELS:
        assert torch.equal(got[name], expected[name]), name


def test_installed_classes_win_when_linformer_kit_models_is_imported(tmp_path: Path) -> None:
    # this module imports linformer_kit.models, which registers the installed classes
    LinformerForMaskedLM(tiny_linformer_config()).save_pretrained(tmp_path)
    assert type(AutoModelForMaskedLM.from_pretrained(tmp_path)) is LinformerForMaskedLM
    # transformers prefers a registered class over the directory's code, even when trusting it
    assert type(AutoModel.from_pretrained(tmp_path, trust_remote_code=True)) is LinformerModel


def test_directory_code_loads_when_only_linformer_kit_is_imported(tmp_path: Path) -> None:
    """`import linformer_kit` registers nothing, so trust_remote_code=True runs the directory's own code."""
    LinformerForMaskedLM(tiny_linformer_config()).save_pretrained(tmp_path / "model")
    code = (
        "import sys\nimport linformer_kit\nfrom transformers import AutoModel\n"
        f"model = AutoModel.from_pretrained({str(tmp_path / 'model')!r}, trust_remote_code=True)\n"
        "assert type(model).__module__.startswith('transformers_modules.'), type(model).__module__\n"
        "assert type(model).__name__ == 'LinformerModel'\n"
        "assert 'linformer_kit.models' not in sys.modules\n"
    )
    env = os.environ | {
        "HF_MODULES_CACHE": str(tmp_path / "modules"),
        "HF_HUB_OFFLINE": "1",
        "OMP_NUM_THREADS": "1",
    }
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                            stdin=subprocess.DEVNULL, check=False)  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
