"""A sentence-transformers folder stays one: `convert` and `distill` carry its pipeline to the Linformer.

A sentence-transformers model folder is a Hugging Face model (config.json, weights, tokenizer) plus the
files that say what runs after it: `modules.json` (Transformer -> Pooling -> Normalize, ...), each
module's own folder (`1_Pooling/config.json`, ...), `sentence_bert_config.json` (`max_seq_length`) and
`config_sentence_transformers.json` (prompts, similarity function). Copying them next to the converted
weights makes `SentenceTransformer(dst)` run the same pipeline as `SentenceTransformer(src)`: with
`projected_length=None` the same embeddings (tests/models/test_sentence_transformers_folder.py).

`max_seq_length` (what SentenceTransformer truncates to) becomes the converted model's longest input
when the conversion was given one (`max_length`), and is otherwise kept, capped at the model's longest
input. Reads and writes JSON only: sentence-transformers need not be installed. `sentence_embedding`, the
pipeline's output for a mean-pooling model in torch, lives in models/embedding.py (importable here too).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from linformer_kit.models.config_rules import input_limit

# re-exported (its home is models/embedding.py): `from ...sentence_transformers_folder import sentence_embedding`
from linformer_kit.models.embedding import sentence_embedding as sentence_embedding

MODULES_FILE = "modules.json"
SETTINGS_FILES = ("sentence_bert_config.json", "config_sentence_transformers.json")


def is_sentence_transformers_folder(path: str | Path) -> bool:
    return (Path(path) / MODULES_FILE).is_file()


def carry_sentence_transformers_files(
    source: str | Path, target: str | Path, longest: int, given: int | None
) -> None:
    """Copy the pipeline files of `source` (if it is a sentence-transformers folder) into `target`.

    The module folders (every `path` of modules.json but the Transformer's own, which is the model)
    are copied whole; `max_seq_length` is set as the module docstring says.
    """
    source, target = Path(source), Path(target)
    if not is_sentence_transformers_folder(source):
        return
    shutil.copy2(source / MODULES_FILE, target / MODULES_FILE)
    for module in json.loads((source / MODULES_FILE).read_text(encoding="utf-8")):
        folder = module.get("path", "")
        if module.get("type", "").endswith(".Transformer"):  # the model itself: written by the caller
            continue
        if folder and (source / folder).is_dir():
            shutil.copytree(source / folder, target / folder, dirs_exist_ok=True)
    for name in SETTINGS_FILES:
        if (source / name).is_file():
            shutil.copy2(source / name, target / name)
    settings = target / "sentence_bert_config.json"
    if settings.is_file():  # the tokenizer's rule (`input_limit`): exactly the longest input when given one
        values = json.loads(settings.read_text(encoding="utf-8"))
        values["max_seq_length"] = input_limit(values.get("max_seq_length"), longest, exact=given is not None)
        settings.write_text(json.dumps(values, indent=2) + "\n", encoding="utf-8")
