"""The same pretraining under `torchrun --nproc_per_node 2` (gloo, CPU): both ranks end with equal weights."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SCRIPT = textwrap.dedent(
    """
    import hashlib, os, sys
    import torch
    from transformers import TrainerCallback
    from linformer_kit.train import PretrainConfig, pretrain

    class DumpWeights(TrainerCallback):  # every rank writes a digest of its final parameters
        def on_train_end(self, args, state, control, model=None, **kwargs):
            digest = hashlib.sha256()
            for name, tensor in sorted(model.state_dict().items()):
                digest.update(name.encode() + tensor.detach().cpu().numpy().tobytes())
            rank = os.environ["RANK"]
            with open(os.path.join(sys.argv[2], f"rank{rank}.txt"), "w") as f:
                f.write(f"{digest.hexdigest()} {state.global_step} {args.world_size}")

    pretrain(PretrainConfig(
        train=[sys.argv[1]], output_dir=os.path.join(sys.argv[2], "out"), preset="tiny", seq_len=32,
        projected_length=8, per_device_train_batch_size=2, max_steps=3, save_steps=100, max_eval_blocks=4,
        disable_tqdm=True, use_cpu=True, ddp_backend="gloo",
    ), callbacks=[DumpWeights()])
    """
)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.slow
def test_two_gloo_processes_agree_on_the_final_weights(corpus: Path, tmp_path: Path) -> None:
    script = tmp_path / "ddp_pretrain.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": ""}
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", str(free_port()),
               str(script), str(corpus / "train.txt"), str(tmp_path)]  # fmt: skip
    run = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]

    rank0 = (tmp_path / "rank0.txt").read_text().split()
    rank1 = (tmp_path / "rank1.txt").read_text().split()
    assert rank0[1:] == ["3", "2"]  # 3 steps, world size 2
    assert rank0 == rank1  # DDP kept the replicas identical
    assert (tmp_path / "out" / "model.safetensors").is_file()  # saved once, by rank 0
