"""One benchmark case: build the module and its input, and return the call that is timed.

The same builder runs in the timing process and in the fresh subprocess that measures CPU peak
memory, so both see the very same module. A `Case` is plain data (it travels as JSON).

Encoder scope is the project's one model definition, `linformer_kit.models.LinformerModel` (no
pooler), called on input embeddings: `num_layers` RoBERTa blocks of `LinformerSelfAttention` + GELU FFN.
Full attention is the same model with projected_length=None (attn_implementation "auto" or "eager").
A Linformer case with a local window w is built with `local_window=w` (layer) or
`LinformerConfig(local_window=w)` (encoder: every layer); full and peer cases have none.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from linformer_kit.bench.config import PassType, Scope
from linformer_kit.bench.flops import case_flops
from linformer_kit.nn import LinformerSelfAttention
from linformer_kit.nn.options import SHARING_MODES, checked_choice


@dataclass(frozen=True)
class Case:
    """Everything needed to rebuild one measured configuration (k is None for full attention; local_window
    is the Linformer methods' window w, None: no window)."""

    method: str
    scope: Scope
    pass_type: PassType
    n: int
    k: int | None
    batch_size: int
    hidden_size: int
    num_heads: int
    num_layers: int
    intermediate_size: int
    device: str
    dtype: str
    local_window: int | None = None

    @property
    def flops(self) -> int:
        return case_flops(
            self.method, self.scope, self.pass_type, batch=self.batch_size, n=self.n, k=self.k,
            hidden=self.hidden_size, layers=self.num_layers, intermediate=self.intermediate_size,
            local_window=self.local_window,
        )  # fmt: skip

    def to_dict(self) -> dict[str, object]:
        return dataclasses.asdict(self)


def build_step(case: Case) -> Callable[[], None]:
    """Build the module and input of `case` on its device; return a call that runs one pass."""
    if case.pass_type == "train_step":
        return _train_step(case)
    dtype = getattr(torch, case.dtype)
    module = build_module(case).to(device=case.device, dtype=dtype).eval()  # eval: no dropout
    x = torch.randn(case.batch_size, case.n, case.hidden_size, device=case.device, dtype=dtype)  # (b, n, D)

    if case.pass_type == "forward":

        def forward() -> None:
            with torch.inference_mode():
                module(x)

        return forward

    def forward_backward() -> None:
        module.zero_grad(set_to_none=True)
        module(x).float().sum().backward()

    return forward_backward


def _train_step(case: Case) -> Callable[[], None]:
    module = build_module(case).to(device=case.device)  # fp32 weights (see `train_step`)
    x = torch.randn(case.batch_size, case.n, case.hidden_size, device=case.device)  # (b, n, D)
    return train_step(module, x, getattr(torch, case.dtype))


def train_step(module: nn.Module, x: torch.Tensor, dtype: torch.dtype) -> Callable[[], None]:
    """One optimizer step of `module` on `x`: forward, backward, AdamW (torch's default implementation).

    Weights, gradients and optimizer state stay fp32 and a bf16/fp16 `dtype` runs under autocast, as
    mixed-precision training does (`linformer pretrain --bf16`): AdamW on half-precision weights would
    lose updates below their resolution, so it is not a training step anyone runs. The benchmark's
    dropout is 0, so train mode changes nothing but is what training runs in.
    """
    module.train()
    optimizer = torch.optim.AdamW(module.parameters(), lr=1e-5)  # small: weights stay near their init
    device = x.device.type

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device, dtype=dtype, enabled=dtype != torch.float32):
            loss = module(x).float().sum()
        loss.backward()
        optimizer.step()

    return step


def build_module(case: Case) -> nn.Module:
    """The module of one case: an attention layer (ours, full, or a peer's) or an encoder stack."""
    if case.local_window is not None and not case.method.startswith("linformer-"):
        raise ValueError(
            f"a local window applies to the linformer-* methods, got {case.method} w={case.local_window}"
        )
    if case.scope == "layer":
        return _attention_layer(case)
    if case.method.startswith("peer-"):
        raise ValueError(f"{case.method} is measured at layer scope only, got scope={case.scope!r}")
    return _encoder(case)


def _encoder(case: Case) -> nn.Module:
    from linformer_kit.models import LinformerConfig, LinformerModel  # needs transformers (the hf extra)

    method_sharing = (
        case.method.removeprefix("linformer-") if case.method.startswith("linformer-") else "headwise"
    )
    sharing = checked_choice("sharing", method_sharing, SHARING_MODES)
    config = LinformerConfig(
        vocab_size=8, hidden_size=case.hidden_size, num_hidden_layers=case.num_layers,
        num_attention_heads=case.num_heads, intermediate_size=case.intermediate_size,
        max_position_embeddings=case.n + 2,  # RoBERTa positions start at pad_token_id + 1 = 2
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
        projected_length=case.k, sharing=sharing, local_window=case.local_window,
        # PreTrainedConfig takes it through __post_init__'s **kwargs, which its dataclass typing leaves out
        attn_implementation="eager" if case.method == "full-eager" else "auto",  # type: ignore[call-arg]
    )  # fmt: skip
    return EncoderForBenchmark(LinformerModel(config, add_pooling_layer=False))


def _attention_layer(case: Case) -> nn.Module:
    D, h, n, k = case.hidden_size, case.num_heads, case.n, case.k
    if case.method == "full-sdpa":
        return LinformerSelfAttention(D, h, n, None, backend="sdpa")
    if case.method == "full-eager":
        return LinformerSelfAttention(D, h, n, None, backend="eager")
    if case.method.startswith("linformer-"):
        sharing = checked_choice("sharing", case.method.removeprefix("linformer-"), SHARING_MODES)
        return LinformerSelfAttention(D, h, n, k, sharing=sharing, local_window=case.local_window)
    if case.method == "peer-linformer":
        import linformer  # PyPI `linformer` (lucidrains)

        return linformer.LinformerSelfAttention(dim=D, seq_len=n, k=k, heads=h)
    if case.method == "peer-linformer-pytorch":
        import linformer_pytorch  # PyPI `linformer-pytorch` (tatp22)

        return linformer_pytorch.MHAttention(
            input_size=n, dim=D // h, channels=D, dim_k=k, nhead=h, dropout=0.0, checkpoint_level="C0",
            parameter_sharing="headwise", E_proj=None, F_proj=None, full_attention=False, causal_mask=None,
        )  # fmt: skip
    raise ValueError(f"unknown method {case.method!r}")


class EncoderForBenchmark(nn.Module):
    """`LinformerModel` (no pooler) called on input embeddings (b, n, D) -> last hidden state (b, n, D)."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.model(inputs_embeds=x).last_hidden_state
