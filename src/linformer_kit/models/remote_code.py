"""Saved Linformer directories carry their own code, so they load where linformer-kit is not installed.

    model.save_pretrained(dir)  ->  dir/config.json  with "auto_map": {"AutoModel": "modeling_linformer.LinformerModel", ...}
                                    dir/modeling_linformer.py   (generated, self-contained)
    AutoModel.from_pretrained(dir, trust_remote_code=True)      # anywhere with torch + transformers

`modeling_linformer.py` is generated at save time from this package's own sources, never edited
by hand, so there is still one model definition: `linformer_kit/nn` (options, backends,
projection, short inputs, local window, attention) and `linformer_kit/models` (folder checks, config
rules, loading, configuration, the model's layers, base and heads, and this module, which is how a
re-saved copy writes itself again) are concatenated in import order, their imports of each other
removed and `from __future__ import annotations` put once at the top. Every other line is the
source's line, byte for byte. With `linformer_kit.models` imported (it registers the installed classes),
the Auto classes keep using them (transformers prefers a registered class over a directory's code,
even with trust_remote_code=True); without it (`import linformer_kit` alone registers nothing), a
directory loads through its own code only with trust_remote_code=True.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

from linformer_kit import __version__

REMOTE_CODE_FILE = "modeling_linformer.py"
# In import order: a module only uses names defined above it (or inside functions, at call time).
SOURCES = (
    "nn/options.py",
    "nn/backends.py",
    "nn/dense_projection.py",  # a dense E on tensors: E (m X), E m, the slots it reaches, length scaling
    "nn/projection.py",
    "nn/short_inputs.py",
    "nn/exact_rows.py",  # exact_length: the row rule and its router (rows of at most T real tokens exact)
    "nn/plan.py",  # one plan a forward: the mask state and which rows take which path, decided once
    "nn/keys.py",  # the keys a window core reads, and the pieces every window core shares
    "nn/local_band.py",  # the split core's band: keys read in place, the batch flat
    "nn/local_blocks.py",  # the window cores by query blocks
    "nn/local_flex.py",  # the FlexAttention window core
    "nn/local_split.py",  # the split window core: two partial softmaxes merged, and their fused backward
    "nn/native_build.py",  # the native kernel's build under an OS lock: a killed build never hangs a later one
    "nn/local_native.py",  # the window's CPU forward in one kernel of ours (the split core without its source)
    "nn/local.py",  # the local window and global tokens beside the projection: its cores
    "nn/cores.py",  # the one table of attention cores and the one "auto"
    "nn/autotune.py",  # "auto" that measures: the cores timed once a shape, the winner kept
    "nn/long_adapters.py",  # weights only rows longer than exact_length read
    "nn/long_layers.py",  # a second stack of layers only rows longer than exact_length read
    "nn/projected_keys.py",  # a layer's keys and values: every token's K, V and the slots E K, F V
    "nn/layer_checks.py",  # a layer's argument and input checks
    "nn/attention.py",
    "models/folder_checks.py",  # a model folder checked before anything loads (config.json, safetensors)
    "models/config_rules.py",  # the rules a config gives: longest input, the tokenizer's limit, the task head
    "models/loading.py",  # from_pretrained's checks (safetensors only, no silent re-initialisation)
    "models/configuration_linformer.py",
    "models/linformer_layers.py",  # the embeddings, one encoder layer and its parts, the encoder, the pooler
    "models/row_groups.py",  # a batch mixing short and long rows read as two batches, the short rows narrow
    "models/token_groups.py",  # a CPU inference batch read in groups of bounded tokens, each as narrow as its rows
    "models/modeling_linformer.py",  # the pretrained-model base and the base model
    "models/linformer_heads.py",  # the heads and the models that carry them (ForMaskedLM, ...)
    "models/remote_code.py",
)
AUTO_MAP = {
    "AutoConfig": "modeling_linformer.LinformerConfig",
    "AutoModel": "modeling_linformer.LinformerModel",
    "AutoModelForMaskedLM": "modeling_linformer.LinformerForMaskedLM",
    "AutoModelForSequenceClassification": "modeling_linformer.LinformerForSequenceClassification",
    "AutoModelForTokenClassification": "modeling_linformer.LinformerForTokenClassification",
}
SECTION = "# ---- linformer_kit/{} "


def write_remote_code(directory: str | os.PathLike) -> dict[str, str]:
    """Write `modeling_linformer.py` into `directory`; return the `auto_map` that points at it."""
    path = Path(directory) / REMOTE_CODE_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(remote_code_source(), encoding="utf-8")
    return dict(AUTO_MAP)


def remote_code_source() -> str:
    """The text of `modeling_linformer.py`: generated from the package, or this very file when it is one."""
    if not __name__.startswith("linformer_kit."):  # running as a saved directory's code: copy itself
        return Path(__file__).read_text(encoding="utf-8")
    package = Path(__file__).parents[1]
    parts = [
        f"# Linformer for transformers, generated by linformer-kit {__version__} from its sources\n"
        f"# ({', '.join(SOURCES)}). Do not edit: `pip install linformer-kit` for the package itself.\n"
        "from __future__ import annotations\n"
    ]
    for name in SOURCES:
        text = (package / name).read_text(encoding="utf-8")
        parts.append(f"\n\n{SECTION.format(name):-<100}\n\n{_without_package_imports(text)}")
    source = "".join(parts)
    _check_unique_names(source)
    return source


def _without_package_imports(text: str) -> str:
    """`text` without its `from __future__` / `from linformer_kit... import` statements, top-level or inside a
    function (an import at call time, where two modules build on each other): in the one file every name is
    already defined."""
    dropped: set[int] = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in (
            "__future__",
            "linformer_kit",
        ):
            dropped.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    lines = text.splitlines(keepends=True)
    return "".join(line for number, line in enumerate(lines, start=1) if number not in dropped)


def _check_unique_names(source: str) -> None:
    """One namespace for all sources: two modules defining one name would silently shadow each other."""
    seen: set[str] = set()
    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names = [node.name]
        elif isinstance(node, ast.Assign):
            names = [target.id for target in node.targets if isinstance(target, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names = [node.target.id]
        else:
            continue
        for name in names:
            if name in seen and name != "__all__":
                raise RuntimeError(f"{REMOTE_CODE_FILE}: {name!r} is defined by two of {SOURCES}")
            seen.add(name)


__all__ = ["AUTO_MAP", "REMOTE_CODE_FILE", "remote_code_source", "write_remote_code"]
