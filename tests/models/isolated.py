"""Run saved models in a fresh Python where linformer-kit cannot be imported (as if not installed).

The child process gets no PYTHONPATH and a meta-path finder that fails every `linformer_kit` import
with the error Python gives for a missing package, so an installed copy (editable or not) cannot
leak in. It loads each directory with `AutoModel*.from_pretrained(dir, trust_remote_code=True)`,
runs the inputs from a safetensors file and writes the outputs to another; then it re-saves the
model and checks the copy loads too. A directory with a tokenizer also loads it with
`AutoTokenizer.from_pretrained(dir, trust_remote_code=True)` (transformers reads config.json, whose
`auto_map` needs the flag, before the tokenizer) and writes the ids of `TEXT` as `{name}.tokens`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

CHILD = r"""
import sys

class NotInstalled:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "linformer_kit":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NotInstalled())
try:
    import linformer_kit  # noqa: F401
    raise SystemExit("linformer_kit is importable: the isolation failed")
except ModuleNotFoundError:
    pass

import json
from pathlib import Path

import torch
import transformers
from safetensors.torch import load_file, save_file

torch.set_num_threads(1)
work = Path(sys.argv[1])
TEXT = sys.argv[2]
outputs = {}
for name, (directory, auto_class) in json.loads((work / "models.json").read_text()).items():
    loader = getattr(transformers, auto_class)
    model = loader.from_pretrained(directory, trust_remote_code=True).eval()
    assert type(model).__module__.startswith("transformers_modules."), type(model).__module__
    inputs = load_file(work / f"{name}.inputs.safetensors")
    with torch.no_grad():
        outputs[name] = model(**inputs)[0]
    copy = work / f"{name}.resaved"
    model.save_pretrained(copy)  # the loaded code writes itself again
    again = loader.from_pretrained(copy, trust_remote_code=True).eval()
    with torch.no_grad():
        assert torch.equal(again(**inputs)[0], outputs[name]), name
    if (Path(directory) / "tokenizer_config.json").is_file():
        tokenizer = transformers.AutoTokenizer.from_pretrained(directory, trust_remote_code=True)
        outputs[f"{name}.tokens"] = torch.tensor(tokenizer(TEXT)["input_ids"])
save_file(outputs, work / "outputs.safetensors")
assert not [m for m in sys.modules if m.split(".")[0] == "linformer_kit"]
print("ok")
"""

TEXT = "the cat sat on a mat"


def outputs_without_linformer_kit(
    work: Path, models: dict[str, tuple[Path, str, dict[str, torch.Tensor]]]
) -> dict[str, torch.Tensor]:
    """{name: (directory, Auto class name, inputs)} -> {name: first output} computed in the isolated child.

    Plus `{name}.tokens`: the ids of `TEXT` by the directory's tokenizer, where it has one.
    """
    import json

    work.mkdir(parents=True, exist_ok=True)
    for name, (_, _, inputs) in models.items():
        save_file(
            {key: value.contiguous() for key, value in inputs.items()}, work / f"{name}.inputs.safetensors"
        )
    (work / "models.json").write_text(json.dumps({n: (str(d), a) for n, (d, a, _) in models.items()}))
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    env.update(HF_MODULES_CACHE=str(work / "modules"), HF_HUB_OFFLINE="1", OMP_NUM_THREADS="1")
    result = subprocess.run(
        [sys.executable, "-c", CHILD, str(work), TEXT],
        capture_output=True,
        text=True,
        env=env,
        cwd=work,
        stdin=subprocess.DEVNULL,  # a trust_remote_code prompt fails at once instead of waiting
        check=False,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    assert result.stdout.strip().endswith("ok")
    return load_file(work / "outputs.safetensors")
