"""Tiny random RoBERTa / BERT / Linformer models built from configs (nothing is downloaded)."""

from pathlib import Path

import torch
import transformers

from linformer_kit.models import LinformerConfig

N = 32  # longest input of every tiny model here
TINY = {
    "vocab_size": 99,
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 37,
    "hidden_dropout_prob": 0.0,
    "attention_probs_dropout_prob": 0.0,
    "num_labels": 3,
}
HEADS = ("Model", "ForMaskedLM", "ForSequenceClassification", "ForTokenClassification")


def tiny_source(family: str, head: str) -> transformers.PreTrainedModel:
    """A random `RobertaX` / `RobertaPreLayerNormX` (positions from pad+1: 34 embeddings for n=32) or
    `BertX` (n=32), eval mode. `family` is the model_type: roberta, roberta-prelayernorm or bert."""
    torch.manual_seed(0)
    prefix = {"roberta": "Roberta", "roberta-prelayernorm": "RobertaPreLayerNorm", "bert": "Bert"}[family]
    config = getattr(transformers, f"{prefix}Config")(
        **TINY, max_position_embeddings=N if family == "bert" else N + 2
    )
    return getattr(transformers, f"{prefix}{head}")(config).eval()


def tiny_linformer_config(**overrides) -> LinformerConfig:
    fields = {**TINY, "max_position_embeddings": N + 2, "projected_length": 8, **overrides}
    return LinformerConfig(**fields)


def padded_batch(pad_token_id: int, n: int = 16) -> tuple[torch.Tensor, torch.Tensor]:
    """input_ids (3, n) and attention_mask: row 0 full, row 1 ends in padding, row 2 is 3 tokens long."""
    g = torch.Generator().manual_seed(1)
    input_ids = torch.randint(3, TINY["vocab_size"], (3, n), generator=g)
    attention_mask = torch.ones(3, n, dtype=torch.long)
    for row, length in ((1, n - 5), (2, 3)):
        input_ids[row, length:] = pad_token_id
        attention_mask[row, length:] = 0
    return input_ids, attention_mask


def main_output(output) -> torch.Tensor:
    """The tensor to compare: logits for heads, hidden states for the base model."""
    return output.logits if hasattr(output, "logits") else output.last_hidden_state


def write_tokenizer(directory: Path) -> None:
    """A 7-word BERT WordPiece tokenizer saved into `directory` (what a model directory carries)."""
    vocab = directory / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "world"]) + "\n")
    transformers.BertTokenizer(vocab_file=str(vocab)).save_pretrained(directory)


def save_tiny_source(directory: Path, family: str = "roberta", head: str = "ForMaskedLM") -> Path:
    """A tiny RoBERTa / BERT model directory (safetensors + tokenizer), as `linformer convert` reads it."""
    tiny_source(family, head).save_pretrained(directory)
    write_tokenizer(directory)
    return directory
