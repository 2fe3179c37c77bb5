# Sourced by scripts/gpu/run.sh on the lent GPU machine, at the repository root: installs the carried
# wheels (.whl/, offline), puts them and src/ on PYTHONPATH, and records the machine in $OUT/env.txt.
# The image has torch, transformers, accelerate, tokenizers and peft; `datasets` and the PyPI peers
# (linformer, linformer-pytorch) travel as wheels: scripts/gpu/README.md says how to make .whl/.
set -u
: "${OUT:?set OUT to the folder results go to}"
if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    2>&1 | grep -v WARNING
else
  echo "setup.sh: no .whl/*.whl carried: only what the image has (steps that need datasets or the peers fail)" >&2
fi
export PYTHONPATH=/tmp/site:$PWD/src:$PWD
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
mkdir -p "$OUT"
{
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
  python3 - <<'PY'
import importlib
import platform

import torch

versions = [f"python {platform.python_version()}", f"torch {torch.__version__}", f"cuda {torch.version.cuda}",
            f"cudnn {torch.backends.cudnn.version()}"]  # fmt: skip
for name in ("transformers", "accelerate", "datasets", "tokenizers"):
    try:
        versions.append(f"{name} {importlib.import_module(name).__version__}")
    except ImportError:
        versions.append(f"{name} missing")
print(" | ".join(versions))
if torch.cuda.is_available():
    print("device", torch.cuda.get_device_name(), torch.cuda.get_device_properties(0))
else:
    print("device: no CUDA device")
PY
} 2>&1 | tee "$OUT/env.txt"
