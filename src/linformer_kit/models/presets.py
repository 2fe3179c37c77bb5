"""Named encoder shapes: `linformer pretrain --preset NAME` trains them, `linformer benchmark --preset
training` times the `small` one. One definition, here in the models layer, so both read it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, TypedDict


class EncoderShape(TypedDict):
    """A preset's fields, as `LinformerConfig` takes them."""

    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    intermediate_size: int
    vocab_size: int


# Encoder shapes. "base" is the paper's RoBERTa-base (Linformer §5: 12 layers, 768 wide, 12 heads).
PRESETS: dict[str, EncoderShape] = {
    "tiny": dict(
        hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=256, vocab_size=1024
    ),
    # the CPU tier's shape: the smallest that leaves the masked-LM plateau in a CPU session (pre-LN)
    "mini": dict(
        hidden_size=128, num_hidden_layers=2, num_attention_heads=2, intermediate_size=512, vocab_size=1024
    ),
    # Long Range Arena's model (Tay et al. 2021; its PyTorch re-runs): 2 layers, 64 wide, 2 heads of 32, FFN 128
    "lra": dict(
        hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=128, vocab_size=512
    ),
    "small": dict(
        hidden_size=256, num_hidden_layers=4, num_attention_heads=4, intermediate_size=1024, vocab_size=8192
    ),
    "base": dict(
        hidden_size=768,
        num_hidden_layers=12,
        num_attention_heads=12,
        intermediate_size=3072,
        vocab_size=50265,
    ),
}

# The names `--preset` takes (the choices the command line shows), from the table above: one list. A Literal
# built at run time is no static type, so a type checker sees str (the parser still reads the Literal).
if TYPE_CHECKING:
    Preset = str
else:
    Preset = Literal[tuple(PRESETS)]
