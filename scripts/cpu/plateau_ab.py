"""Which pretraining recipe leaves the masked-LM unigram plateau? A/B on the real books, one process.

Every variant trains on the same blocks (same BPE, same masks, same order, same seed) with the
Hugging Face Trainer and is evaluated on the same validation blocks every `--eval-steps`; the
script prints one line per evaluation and writes everything to `--out` (JSON). Variants:

    ours            LinformerForMaskedLM, full attention (post-LayerNorm, as RoBERTa)
    roberta         transformers' RobertaForMaskedLM of the same shape (is it our model?)
    roberta-preln   transformers' RobertaPreLayerNormForMaskedLM (does pre-LN leave it sooner?)

Each variant is `NAME[/MOD...][@lr][+warmup]` e.g. `ours@1e-3`, `roberta-preln/sin@2e-3`. MODs:

    sin             learned position embeddings *initialised* with sinusoids (Vaswani et al.), scaled
                    to the std of the other embeddings: relative offsets are linear maps from step 0
    local           attention local from step 0: position embeddings = sinusoids (base n, 2x the std of
                    the others), query = key = one random rotation per layer ("mimetic" init)
    nodrop          no dropout
    stdX            initializer_range X instead of RoBERTa's 0.02 (e.g. std0.125 = 1/sqrt(64))
    shortN          curriculum: first `--short-steps` steps on N-token blocks, each at a random offset
                    in the position table (so every position embedding takes part), then the main
                    steps on full blocks; the step counts printed are the main phase's
    growN           sequence-length warm-up (Li et al. 2022): step t trains on a random window of each
                    block, N tokens long at t=0, growing linearly to the full block at `--grow-frac` of
                    the steps, with the window's own position ids; evaluation always on full blocks

    python scripts/cpu/plateau_ab.py --data ../shared/data --steps 1500 \
        --variants ours roberta roberta-preln --out runs/plateau_ab.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import time
from pathlib import Path

import torch
from transformers import (
    RobertaConfig,
    RobertaForMaskedLM,
    RobertaPreLayerNormConfig,
    RobertaPreLayerNormForMaskedLM,
    Trainer,
    TrainerCallback,
    TrainingArguments,
    set_seed,
)

from linformer_kit.models import LinformerConfig, LinformerForMaskedLM
from linformer_kit.train.data import load_text, pack_blocks, train_tokenizer
from linformer_kit.train.pretrain import PRESETS, ResumableMaskingCollator


def sinusoids(positions: int, width: int, base: float = 10000.0) -> torch.Tensor:
    """(positions, width): sin/cos of position / base^(2i/width), every entry of RMS 1/sqrt(2)."""
    position = torch.arange(positions, dtype=torch.float64)[:, None]
    frequency = torch.exp(-math.log(base) * torch.arange(0, width, 2, dtype=torch.float64) / width)
    table = torch.zeros(positions, width, dtype=torch.float64)
    table[:, 0::2], table[:, 1::2] = torch.sin(position * frequency), torch.cos(position * frequency)
    return table.float()


def modify(model: torch.nn.Module, mods: list[str]) -> None:
    std = model.config.initializer_range
    for mod in mods:
        if mod == "sin":
            positions = next(m for name, m in model.named_modules() if name.endswith("position_embeddings"))
            with torch.no_grad():
                positions.weight.copy_(sinusoids(*positions.weight.shape) * std * math.sqrt(2))
        elif mod == "local":  # attention starts local: q_i . k_j ~ similarity of the positions' sinusoids
            positions = next(m for name, m in model.named_modules() if name.endswith("position_embeddings"))
            n, width = positions.weight.shape
            with torch.no_grad():
                positions.weight.copy_(sinusoids(n, width, base=n) * 2 * std * math.sqrt(2))
                for name, module in model.named_modules():
                    if name.endswith("attention.self"):
                        rotation = torch.linalg.qr(torch.randn(width, width))[0]
                        module.query.weight.copy_(rotation)
                        module.key.weight.copy_(rotation)
                        module.query.bias.zero_()
                        module.key.bias.zero_()
        elif mod != "nodrop" and not mod.startswith(("std", "short", "grow")):
            raise ValueError(f"unknown modifier {mod!r}")


def build(name: str, shape: dict, vocab: int, seq_len: int, tokenizer, mods: list[str]) -> torch.nn.Module:
    dropout = 0.0 if "nodrop" in mods else 0.1
    std = next((float(mod[3:]) for mod in mods if mod.startswith("std")), 0.02)
    common = dict(
        initializer_range=std,
        hidden_dropout_prob=dropout,
        attention_probs_dropout_prob=dropout,
        vocab_size=vocab,
        hidden_size=shape["hidden_size"],
        num_hidden_layers=shape["num_hidden_layers"],
        num_attention_heads=shape["num_attention_heads"],
        intermediate_size=shape["intermediate_size"],
        max_position_embeddings=seq_len + 2,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        type_vocab_size=1,
    )
    if name == "ours":
        return LinformerForMaskedLM(LinformerConfig(projected_length=None, **common))
    if name.startswith("ours-k"):
        return LinformerForMaskedLM(LinformerConfig(projected_length=int(name[6:]), **common))
    if name == "roberta":
        return RobertaForMaskedLM(RobertaConfig(**common))
    if name == "roberta-preln":
        return RobertaPreLayerNormForMaskedLM(RobertaPreLayerNormConfig(**common))
    raise ValueError(f"unknown variant {name!r}")


class EvalLog(TrainerCallback):
    def __init__(self, label: str, rows: list) -> None:
        self.label, self.rows, self.start = label, rows, time.perf_counter()

    def on_evaluate(self, args, state, control, metrics=None, **kwargs):
        loss = metrics["eval_loss"]
        row = dict(step=state.global_step, eval_loss=loss, perplexity=math.exp(loss),
                   seconds=round(time.perf_counter() - self.start, 1))  # fmt: skip
        self.rows.append(row)
        line = f"{self.label:28s} step {row['step']:6d}  ppl {row['perplexity']:9.2f}  {row['seconds']:7.1f}s"
        print(line, flush=True)


class RandomOffsets:
    """Wraps a collator: short blocks get RoBERTa position ids at a random offset (seeded)."""

    def __init__(self, collator, seq_len: int, pad: int, seed: int = 0) -> None:
        self.collator, self.seq_len, self.pad = collator, seq_len, pad
        self.generator = torch.Generator().manual_seed(seed)

    def __call__(self, features):
        batch = self.collator(features)
        b, n = batch["input_ids"].shape
        offsets = torch.randint(0, self.seq_len - n + 1, (b, 1), generator=self.generator)
        batch["position_ids"] = self.pad + 1 + offsets + torch.arange(n)  # (b, n)
        return batch


class GrowingWindows:
    """Wraps a collator: the t-th batch is cropped to a random window of length(t), true positions.

    Counts its own calls (one per optimizer step: no gradient accumulation here); evaluation uses
    the unwrapped collator (`WindowTrainer`), so it always scores full blocks.
    """

    def __init__(self, collator, start: int, seq_len: int, steps: int, pad: int, seed: int = 0) -> None:
        self.collator, self.start, self.seq_len, self.steps, self.pad = collator, start, seq_len, steps, pad
        self.calls, self.generator = 0, torch.Generator().manual_seed(seed)

    def length(self) -> int:
        grown = self.start + (self.seq_len - self.start) * self.calls / max(self.steps, 1)
        return min(self.seq_len, int(grown) // 8 * 8 or 8)

    def __call__(self, features):
        n, self.calls = self.length(), self.calls + 1
        starts = torch.randint(0, self.seq_len - n + 1, (len(features),), generator=self.generator)
        cropped = [{"input_ids": f["input_ids"][s : s + n]} for f, s in zip(features, starts.tolist())]
        batch = self.collator(cropped)
        batch["position_ids"] = self.pad + 1 + starts[:, None] + torch.arange(n)  # (b, n)
        return batch


class WindowTrainer(Trainer):
    """Trainer whose evaluation batches come from `eval_collator` (full blocks), not the training one."""

    def __init__(self, *args, eval_collator, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.eval_collator = eval_collator

    def get_eval_dataloader(self, eval_dataset=None):
        training, self.data_collator = self.data_collator, self.eval_collator
        try:
            return super().get_eval_dataloader(eval_dataset)
        finally:
            self.data_collator = training


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="../shared/data")
    parser.add_argument("--preset", default="tiny", choices=tuple(PRESETS))
    parser.add_argument("--vocab", type=int, default=1024)
    parser.add_argument("--seq-len", type=int, default=128)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--eval-steps", type=int, default=250)
    parser.add_argument("--documents", type=int, default=40)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--warmup", type=float, default=0.06)
    parser.add_argument("--short-steps", type=int, default=1000)
    parser.add_argument("--grow-frac", type=float, default=0.5)
    parser.add_argument("--variants", nargs="+", default=["ours", "roberta", "roberta-preln"])
    parser.add_argument("--out", default="runs/plateau_ab.json")
    args = parser.parse_args()

    train_text = load_text([f"{args.data}/gutenberg/train.jsonl.gz"], "text", "train")
    train_text = train_text.select(range(min(args.documents, len(train_text))))
    tokenizer = train_tokenizer(train_text, args.vocab, 100_000_000)
    train = pack_blocks(train_text, tokenizer, args.seq_len, "train")
    valid_text = load_text([f"{args.data}/gutenberg/valid.jsonl.gz"], "text", "validation")
    valid = pack_blocks(valid_text, tokenizer, args.seq_len, "valid").select(range(256))
    collator = ResumableMaskingCollator(tokenizer, mlm_probability=0.15, seed=42)
    shape = PRESETS[args.preset]
    results = {"args": vars(args), "runs": {}}
    for variant in args.variants:
        name, _, lr = variant.partition("@")
        name, *mods = name.split("/")
        lr, _, warmup = lr.partition("+")
        lr = float(lr) if lr else args.lr
        warmup = float(warmup) if warmup else args.warmup
        set_seed(42)
        model = build(name, shape, len(tokenizer), args.seq_len, tokenizer, mods)
        modify(model, mods)
        rows: list = []
        training = TrainingArguments(
            output_dir=f"runs/plateau_ab/{variant.replace('/', '-')}", max_steps=args.steps, per_device_train_batch_size=args.batch,
            per_device_eval_batch_size=64, learning_rate=lr, warmup_steps=warmup, adam_beta2=0.98,
            weight_decay=0.01, eval_strategy="steps", eval_steps=args.eval_steps, logging_steps=args.eval_steps,
            save_strategy="no", report_to=[], disable_tqdm=True, seed=42, dataloader_num_workers=0,
        )  # fmt: skip
        short = next((int(mod[5:]) for mod in mods if mod.startswith("short")), None)
        if short is not None:
            blocks = pack_blocks(train_text, tokenizer, short, f"train {short}")
            # the main phase's arguments, shorter, without evaluation (short blocks are not scored)
            phase = dataclasses.replace(training, max_steps=args.short_steps, eval_strategy="no")
            offsets = RandomOffsets(collator, args.seq_len, tokenizer.pad_token_id)
            Trainer(model=model, args=phase, data_collator=offsets, train_dataset=blocks).train()
        grow = next((int(mod[4:]) for mod in mods if mod.startswith("grow")), None)
        train_collator = collator
        if grow is not None:
            span = int(args.grow_frac * args.steps)
            train_collator = GrowingWindows(collator, grow, args.seq_len, span, tokenizer.pad_token_id)
        trainer = WindowTrainer(model=model, args=training, data_collator=train_collator, train_dataset=train,
                                eval_dataset=valid, callbacks=[EvalLog(variant, rows)],
                                eval_collator=collator)  # fmt: skip
        trainer.evaluate()
        trainer.train()
        results["runs"][variant] = rows
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
