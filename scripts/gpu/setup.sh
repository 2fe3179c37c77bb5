# Source me on the lent GPU machine (repo root): offline install of the carried wheels, then the env record.
# The image has torch, transformers, accelerate, tokenizers, peft; `datasets` and the PyPI peers travel
# as wheels in .whl/ (see scripts/gpu/README.md).
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  2>&1 | grep -v WARNING
export PYTHONPATH=/tmp/site:$PWD/src:$PWD
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
mkdir -p "$OUT"
{
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
  python3 - <<'PY'
import platform, torch, transformers, accelerate, datasets, tokenizers
print("python", platform.python_version(), "| torch", torch.__version__, "| cuda", torch.version.cuda,
      "| cudnn", torch.backends.cudnn.version(), "| transformers", transformers.__version__,
      "| accelerate", accelerate.__version__, "| datasets", datasets.__version__, "| tokenizers", tokenizers.__version__)
print("device", torch.cuda.get_device_name(), torch.cuda.get_device_properties(0))
PY
} 2>&1 | tee "$OUT/env.txt"
