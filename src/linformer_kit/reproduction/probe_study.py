"""The short-input probe (probe.py) over every pretrained model of a study."""

from __future__ import annotations

from typing import Any

from linformer_kit.reproduction.recipe import Recipe
from linformer_kit.reproduction.study import Outcome


def probe_study(recipe: Recipe, outcomes: list[Outcome], lengths: list[int]) -> list[dict[str, Any]]:
    import torch

    from linformer_kit.reproduction.probe import probe_lengths
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
