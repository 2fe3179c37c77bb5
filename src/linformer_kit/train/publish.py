"""What a finished run leaves in its output directory, ready to share as it is.

    output_dir/  model.safetensors, config.json, modeling_linformer.py (for trust_remote_code),
                 tokenizer files (model_max_length = the model's longest input),
                 metrics.json (results + the run's config), README.md (the model card)

That is the layout of every model folder (models/folder.py): the Trainer's `save_model` writes the
model and its tokenizer (limited by `limit_tokenizer` before training), `publish` the rest with the
folder's `write_metrics_and_card`.

Checkpoints (`checkpoint-*/`) keep everything `Trainer` needs to resume. The final directory does
not keep `training_args.bin`, a pickle nobody should have to unpickle to use the model; the run's
settings are in metrics.json and the card. Local paths are written as given when relative, relative
to the working directory when under it, and as their last component otherwise (`portable`): a
published directory carries no absolute path of the machine it was trained on.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from transformers import PreTrainedConfig, Trainer
from transformers.trainer import TRAINING_ARGS_NAME

# limit_tokenizer and portable: importable from here too (pretrain, finetune and distill use them)
from linformer_kit.models.folder import limit_tokenizer as limit_tokenizer
from linformer_kit.models.folder import portable, write_metrics_and_card
from linformer_kit.train.guards import output_dir_of, trained_model

Task = Literal["fill-mask", "text-classification"]
# result field -> how the card names it, in the order the card lists them
METRICS = {
    "eval_loss": "validation loss",
    "perplexity": "validation perplexity",
    "no_context_perplexity": "no-context floor (perplexity from each masked token alone)",
    "accuracy": "validation accuracy",
    "f1": "validation F1 (label 1)",
    "train_loss": "training loss (mean over the run)",
    "tokens_per_second": "training tokens / s",
}


def publish(trainer: Trainer, task: Task, result: dict[str, Any], config: dict[str, Any]) -> None:
    """After `trainer.save_model()`: make its output directory the one to share (main process only)."""
    if not trainer.is_world_process_zero():
        return
    out = Path(output_dir_of(trainer))
    (out / TRAINING_ARGS_NAME).unlink(missing_ok=True)
    result, config = portable(result), portable(config)  # the card shows them as metrics.json holds them
    write_metrics_and_card(out, {**result, "config": config}, model_card(trainer, task, result, config))


# --- the model card --------------------------------------------------------------------------------


def model_card(trainer: Trainer, task: Task, result: dict[str, Any], config: dict[str, Any]) -> str:
    """README.md: what the model is, how it was trained and on what, its metrics, how to load it."""
    model_config = trained_model(trainer).config
    return "\n".join([
        _front_matter(task, result),
        _summary(task, model_config),
        _architecture(trainer, model_config),
        _training(trainer, config),
        _results(result),
        _how_to_load(task),
        _sharing_and_citation(),
    ])  # fmt: skip


def _front_matter(task: Task, result: dict[str, Any]) -> str:
    tags = "\n".join(f"- {tag}" for tag in ("linformer", "linformer-kit", task))
    return f"---\nlibrary_name: transformers\npipeline_tag: {task}\ntags:\n{tags}\n---\n"


def _summary(task: Task, model_config: PreTrainedConfig) -> str:
    attention = _attention(model_config)
    title, made = (
        ("masked language model", "pretrained with masked-language modelling by `linformer pretrain`")
        if task == "fill-mask"
        else ("text classifier", "finetuned for sequence classification by `linformer finetune`")
    )
    return (
        f"# Linformer {title}\n\n"
        "A [Linformer](https://arxiv.org/abs/2006.04768) encoder (RoBERTa's architecture; "
        f"{attention}), {made} ([linformer-kit](https://pypi.org/project/linformer-kit/), on the "
        "Hugging Face Trainer).\n"
    )


def _attention(model_config: PreTrainedConfig) -> str:
    k = getattr(model_config, "projected_length", "n/a")
    if k is None:
        return "full softmax attention: the quadratic baseline"
    return (
        f"self-attention over k = {k} projected keys and values, sharing {model_config.sharing!r}, "
        f"projection {model_config.projection!r}"
    )


def _architecture(trainer: Trainer, model_config: PreTrainedConfig) -> str:
    rows = {
        "layers / hidden size / heads / FFN": (
            f"{model_config.num_hidden_layers} / {model_config.hidden_size} / "
            f"{model_config.num_attention_heads} / {model_config.intermediate_size}"
        ),
        "longest input (tokens)": getattr(model_config, "max_seq_len", model_config.max_position_embeddings),
        "projected length k": getattr(model_config, "projected_length", "n/a"),
        "vocabulary": model_config.vocab_size,
        "parameters": f"{trained_model(trainer).num_parameters():,}",
    }
    if type(trainer.model).__name__.endswith("SequenceClassification"):
        rows["labels"] = ", ".join(str(label) for label in (model_config.id2label or {}).values())
    return "## Model\n\n" + _table(rows)


def _training(trainer: Trainer, config: dict[str, Any]) -> str:
    args = trainer.args
    data = config.get("train") or config.get("dataset") or config.get("glue_task")
    held_out = f"{config.get('validation_percent')} % of the training blocks, held out"
    start = config.get("init_from") or config.get("model")
    warmup = args.warmup_steps
    rows = {
        "training data": _listed(data),
        "validation data": _listed(config["validation"]) if config.get("validation") else held_out,
        "started from": _listed(start) if start else "random initialisation",
        "optimizer steps": trainer.state.global_step,
        "batch size (per device × accumulation × devices)": (
            f"{args.per_device_train_batch_size} × {args.gradient_accumulation_steps} × {args.world_size}"
        ),
        "learning rate / weight decay": f"{args.learning_rate} / {args.weight_decay}",
        "warmup": f"{warmup:.0%} of the steps" if warmup < 1 else f"{warmup} steps",
        "precision / seed": f"{'bf16' if args.bf16 else 'fp16' if args.fp16 else 'fp32'} / {args.seed}",
    }
    return "## Training\n\n" + _table(rows) + "\nEvery setting of the run is in `metrics.json` (`config`).\n"


def _results(result: dict[str, Any]) -> str:
    labels = dict(METRICS)
    if result.get("resumed_from_step"):  # the Trainer's mean covers the resumed invocation only
        start = result["resumed_from_step"]
        labels["train_loss"] = (
            f"training loss (mean over steps {start + 1}-{result.get('steps')}, after a resume)"
        )
    rows = {label: _number(result[key]) for key, label in labels.items() if result.get(key) is not None}
    held_out = result.get("eval_blocks") or result.get("eval_examples")
    note = (
        f"\nValidation: {held_out} held-out {'blocks' if 'eval_blocks' in result else 'examples'}.\n"
        if held_out
        else ""
    )
    if result.get("learned_context") is False:
        note += (
            "\n**Limitation: this model has not learned to use context.** Its validation perplexity is within "
            "20% of the no-context floor: it predicts a masked token from token frequencies alone (the "
            "masked-LM plateau). Do not use it as a pretrained encoder; train longer or with a "
            "sequence-length schedule.\n"
        )
    return "## Results\n\n" + _table(rows) + note


def _how_to_load(task: Task) -> str:
    auto = "AutoModelForMaskedLM" if task == "fill-mask" else "AutoModelForSequenceClassification"
    return (
        "## How to load\n\n"
        "```python\n"
        f"from transformers import {auto}, AutoTokenizer, pipeline\n\n"
        'path = "path/to/this/directory"  # or its Hub id\n'
        "tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=True)  # reads config.json's auto_map\n"
        f"model = {auto}.from_pretrained(path, trust_remote_code=True)  # runs modeling_linformer.py\n"
        f'pipe = pipeline("{task}", model=model, tokenizer=tokenizer)\n'
        "```\n\n"
        "With `pip install linformer-kit`, `import linformer_kit.models` registers the Linformer classes\n"
        "and no `trust_remote_code` is needed. Inputs longer than the longest input above raise an error;\n"
        "the tokenizer's `model_max_length` is that limit, so pass `truncation=True`.\n"
    )


def _sharing_and_citation() -> str:
    return (
        "## Sharing this directory\n\n"
        "Upload everything here except `checkpoint-*/` and `log_history.jsonl`: the checkpoints are the "
        "state a `--resume` needs (optimizer, RNG, pickled training arguments), not part of the model.\n\n"
        "## Citation\n\n"
        "```bibtex\n"
        "@article{wang2020linformer,\n"
        "  title   = {Linformer: Self-Attention with Linear Complexity},\n"
        "  author  = {Wang, Sinong and Li, Belinda Z. and Khabsa, Madian and Fang, Han and Ma, Hao},\n"
        "  journal = {arXiv preprint arXiv:2006.04768},\n"
        "  year    = {2020}\n"
        "}\n"
        "```\n"
    )


def _table(rows: dict[str, Any]) -> str:
    return "| | |\n|---|---|\n" + "".join(f"| {key} | {value} |\n" for key, value in rows.items())


def _listed(value: Any) -> str:
    items = value if isinstance(value, list) else [value]
    return ", ".join(f"`{item}`" for item in items)


def _number(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"
