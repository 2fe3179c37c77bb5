"""The short-input probe: what a pretrained encoder's attention does to inputs shorter than its blocks.

`probe_lengths` measures one saved model; `probe_study` measures every pretrained model of a
reproduction study (`linformer reproduce --probe-lengths`, results under "short_input_probe").

For inputs of L tokens (cut from held-out text) and every layer:
- key_norm_ratio / value_norm_ratio: mean norm of a projected key (value) row, E(mX)W_kᵀ + (Em)b_kᵀ,
  over the mean norm of a token's own key X W_kᵀ + b_k. Full attention: 1 by definition. With a
  learned E ~ N(0, 1/N) and no length scaling it falls like sqrt(L/N): short inputs get short keys.
- entropy: attention entropy over the keys (slots), divided by its maximum log(number of keys), so
  1 = uniform (attention does nothing) and 0 = one key.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from linformer_kit.nn import LinformerSelfAttention
from linformer_kit.reproduction.recipe import Recipe
from linformer_kit.reproduction.study import Outcome


def probe_study(recipe: Recipe, outcomes: list[Outcome], lengths: list[int]) -> list[dict[str, Any]]:
    """`probe_lengths` for every finished pretraining run, on the held-out text of the first one."""
    from linformer_kit.train.data import load_text

    done = [o for o in outcomes if o.run.verb == "pretrain" and (o.output_dir / "metrics.json").is_file()]
    if not done:
        return []
    held_out = done[0].run.options.get("validation") or done[0].run.options["train"]
    text = load_text(held_out if isinstance(held_out, list) else [held_out], "text", "validation")
    texts, chars = [], 0
    for row in text:  # enough held-out text for 16 inputs of the longest length
        texts.append(row["text"])
        chars += len(row["text"])
        if chars > 400_000:
            break
    device = "cuda" if torch.cuda.is_available() else "cpu"
    return [
        {"name": o.run.name, **probe_lengths(str(o.output_dir), texts, lengths, device=device)} for o in done
    ]


@torch.no_grad()
def probe_lengths(
    model_dir: str, texts: list[str], lengths: list[int], *, inputs: int = 16, device: str = "cpu"
) -> dict[str, Any]:
    """One saved model at each input length (`inputs` inputs cut from `texts`): a row per length and layer."""
    from transformers import AutoTokenizer

    from linformer_kit.models import LinformerModel
    from linformer_kit.models.loading import load_pretrained

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    # the encoder only: no report of the MLM head it leaves out (transformers' load table is noise here)
    loaded = load_pretrained(
        LinformerModel, model_dir, "model", report_head=False, attn_implementation="eager"
    )
    config = loaded.config
    # a Module to the type checker: transformers' `to` is typed as Module.to unbound (self its first argument)
    model: torch.nn.Module = loaded
    model = model.to(device).eval()
    # one long stream, cut into inputs of each length below (so no "longer than the model" warning)
    stream = tokenizer("\n\n".join(texts), add_special_tokens=False, verbose=False)["input_ids"]
    captured: list[tuple[LinformerSelfAttention, torch.Tensor, torch.Tensor | None]] = []

    def capture(block, args, kwargs):  # the attention block: (hidden_states, the forward's plan, ...)
        plan = args[1] if len(args) > 1 else kwargs.get("plan")
        captured.append((block.self, args[0], None if plan is None else plan.mask))  # nn/plan.py

    hooks = [
        m.register_forward_pre_hook(capture, with_kwargs=True)
        for m in model.modules()
        if isinstance(getattr(m, "self", None), LinformerSelfAttention)
    ]
    rows = []
    for length in lengths:
        if length > config.max_seq_len or len(stream) < inputs * length:
            continue
        ids = torch.tensor([stream[i * length : (i + 1) * length] for i in range(inputs)], device=device)
        captured.clear()
        out = model(ids, attention_mask=torch.ones_like(ids), output_attentions=True)
        for layer, (attentions, (module, x, mask)) in enumerate(zip(out.attentions, captured)):
            rows.append(
                {"length": length, "layer": layer, "entropy": _normalised_entropy(attentions)}
                | _norm_ratios(module, x, mask)
            )
    for hook in hooks:
        hook.remove()
    return {"model": model_dir, "projected_length": config.projected_length, "rows": rows}


def _normalised_entropy(p: torch.Tensor) -> float:
    """p (b, h, n, m): mean over b, h, n of H(p_row) / log(m)."""
    m = p.shape[-1]
    if m == 1:
        return 0.0
    entropy = -(p.float() * p.float().clamp_min(1e-12).log()).sum(-1)
    return float(entropy.mean() / math.log(m))


def _norm_ratios(module: LinformerSelfAttention, x: torch.Tensor, mask: torch.Tensor | None) -> dict:
    """Projected key (value) row norms over token key (value) norms, through the layer's own fast path."""
    if module.projections() is None:  # full attention: keys are the tokens' own
        return {"key_norm_ratio": 1.0, "value_norm_ratio": 1.0}
    if not module.uses_fast_order:  # per-head or max-pooled E: projected rows are per head, not comparable
        return {"key_norm_ratio": None, "value_norm_ratio": None}
    keys, values, _ = module._fast_keys_values(x, mask)  # (b, h, k, d) each, exactly as forward uses them
    rows = lambda t: t.transpose(1, 2).flatten(2).norm(dim=-1).mean()  # noqa: E731  (b, k, D) row norms
    return {
        "key_norm_ratio": float(rows(keys) / module.key(x).norm(dim=-1).mean()),
        "value_norm_ratio": float(rows(values) / module.value(x).norm(dim=-1).mean()),
    }
