"""Linformer encoder, written the way Hugging Face writes a model: read it top to bottom, in three rooms.

    models/linformer_layers.py    the embeddings, one encoder layer and its parts, the encoder, the pooler,
                                  the masked-LM head
    models/modeling_linformer.py  this one: the pretrained-model base (init, loading, saving) and the base
                                  model `LinformerModel` (embeddings -> encoder (-> pooler))
    models/linformer_heads.py     the heads and the models that carry them: `LinformerForMaskedLM`,
                                  `LinformerForSequenceClassification`, `LinformerForTokenClassification`
A saved model folder holds all three (and what they import of the package) as one `modeling_linformer.py`
(`models/remote_code.py`), so its `auto_map` names `modeling_linformer.<Class>` for every class; in the
package, `linformer_kit.models` exports the public ones.

RoBERTa's architecture (learned absolute positions, post-LayerNorm blocks, GELU feed-forward,
tied masked-LM decoder) with `linformer_kit.nn.LinformerSelfAttention` as the self-attention.
Parameter names follow RoBERTa's, so a RoBERTa checkpoint converts by a key mapping:

    roberta.X                                   -> linformer.X
    ....layer.{i}.attention.output.dense        -> ....layer.{i}.attention.self.dense
    (new) ....layer.{i}.attention.self.key_projection / value_projection / kv_projection   E, F
    (new, sharing="layerwise") linformer.encoder.projection                             one E for all

LayerNorm placement (`config.layer_norm`), per layer, with f the attention or the feed-forward:
    "post"  x = LN(x + f(x))                        RoBERTa, BERT, fairseq's Linformer (the default)
    "pre"   x = x + f(LN(x)), and LN once more after the last layer: RoBERTa-PreLayerNorm, whose
            parameter names it keeps (`attention.LayerNorm`, `intermediate.LayerNorm`, `LayerNorm`
            of the base model), so that model converts by the same key mapping.
The layer norms a layout does not use are `nn.Identity` (no parameters): one forward for both.

Notation: b batch, n sequence length (<= config.max_seq_len), k projected length, h heads,
D hidden size.

Attention implementation (`attn_implementation=` in `from_pretrained` / the constructor, or
`model.set_attn_implementation(name)` after it): a name of the kit's one table of attention cores
(nn/cores.py), which every layer runs. "auto" (the default) picks per call: PyTorch's
`scaled_dot_product_attention`, the query-blocked core for bfloat16 on a CPU, the window's split or native
core where each was measured faster; "sdpa", "blocked", "split", "native", "flex" name one core; "eager" runs the
explicit softmax in fp32, the reference. `output_attentions=True` always takes the eager path, the only one
that materialises the (b, h, n, k) maps ((b, h, n, n) in layers with projected_length=None).
"""

import torch
from torch import nn
from transformers import PreTrainedModel
from transformers import initialization as init
from transformers.modeling_outputs import BaseModelOutputWithPooling

from linformer_kit.models.configuration_linformer import LinformerConfig
from linformer_kit.models.linformer_layers import (
    LinformerEmbeddings,
    LinformerEncoder,
    LinformerLMHead,
    LinformerPooler,
    _layer_norm,
)
from linformer_kit.models.loading import share_saved_weights, strict_from_pretrained
from linformer_kit.models.row_groups import encode_apart, read_apart
from linformer_kit.models.token_groups import encode_grouped, read_grouped
from linformer_kit.nn import ATTENTION_BACKENDS, SequenceProjection
from linformer_kit.nn.options import check_choice
from linformer_kit.nn.plan import model_plan

# --- the pretrained-model base: init, flags for transformers -------------------------------------------


class LinformerPreTrainedModel(PreTrainedModel):
    config_class = LinformerConfig
    base_model_prefix = "linformer"
    supports_gradient_checkpointing = True
    _supports_sdpa = True
    # transformers' instance attributes (a model collects its modules' per instance), so not ClassVar
    _no_split_modules: set[str] | list[str] | None = ["LinformerEmbeddings", "LinformerLayer"]  # noqa: RUF012
    # The layers read config._attn_implementation at every forward, so `set_attn_implementation` (or any
    # change of it) works after construction (transformers otherwise guesses from the source that it would not).
    _can_set_attn_implementation_cached_value = True

    def get_correct_attn_implementation(
        self, requested_attention: str | None, is_init_check: bool = False
    ) -> str:
        """transformers' check of `attn_implementation`: here a name of the kit's table of attention cores
        (nn/cores.py, `ATTENTION_BACKENDS`), "auto" where none is asked for."""
        core = "auto" if requested_attention is None else requested_attention
        check_choice("attn_implementation", core, ATTENTION_BACKENDS)
        return core

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, *model_args, **kwargs):
        """`PreTrainedModel.from_pretrained` that reads safetensors only (a pickle is never loaded) and
        never re-initialises encoder weights silently (`models/loading.py`, `strict_from_pretrained`).

        New or dropped task-head weights are fine (a classifier on an MLM checkpoint). Anything else
        the checkpoint lacks or holds unused is a ValueError: Linformer options other than the
        checkpoint's (`from_pretrained(dir, sharing="kv")` on a headwise model would start E/F from
        noise) are named in it. Changing k / sharing / projection of a trained model is a conversion:
        `linformer pretrain --init-from DIR` (`linformer_kit.train.init_from.linformer_from_checkpoint`).
        """
        load = super().from_pretrained
        return strict_from_pretrained(load, pretrained_model_name_or_path, *model_args, **kwargs)

    def save_pretrained(self, save_directory, *args, **kwargs) -> None:
        """`PreTrainedModel.save_pretrained`, then the weights get the mode of the other files it writes
        (`share_saved_weights`: safetensors alone would leave them readable by their owner only).
        Checkpoints and every directory the commands write save through here.
        """
        super().save_pretrained(save_directory, *args, **kwargs)
        if kwargs.get("is_main_process", True):
            share_saved_weights(save_directory)

    @torch.no_grad()
    def _init_weights(self, module: nn.Module) -> None:
        super()._init_weights(module)  # Linear / Embedding: N(0, initializer_range); LayerNorm: 1, 0
        if isinstance(module, LinformerLMHead):
            init.zeros_(module.bias)
        elif isinstance(module, SequenceProjection) and not getattr(
            getattr(module, "weight", None), "_is_hf_initialized", False
        ):
            module.reset_parameters()  # E, F: the layer's own start (config.projection_init), never over loaded weights


def _key_padding_mask(attention_mask: torch.Tensor | None) -> torch.Tensor | None:
    """HF's (b, n) attention_mask, 1 = real token, -> the layer's bool mask, True = real token."""
    if attention_mask is None:
        return None
    if attention_mask.dim() != 2:
        raise ValueError(
            f"attention_mask must have shape (batch, seq_len) with 1 = real token, got {tuple(attention_mask.shape)}"
        )
    return attention_mask.bool()


# --- the base model -------------------------------------------------------------------------------------


class LinformerModel(LinformerPreTrainedModel):
    """Embeddings + Linformer encoder (+ pooler). Outputs `BaseModelOutputWithPooling`."""

    def __init__(self, config: LinformerConfig, add_pooling_layer: bool = True):
        super().__init__(config)
        self.embeddings = LinformerEmbeddings(config)
        self.encoder = LinformerEncoder(config)
        self.LayerNorm = _layer_norm(config, "pre")  # after the last layer (pre-LN only)
        self.pooler = LinformerPooler(config) if add_pooling_layer else None
        self.post_init()

    def get_input_embeddings(self) -> nn.Module:
        return self.embeddings.word_embeddings

    def set_input_embeddings(self, value: nn.Module) -> None:
        self.embeddings.word_embeddings = value

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
        inputs_embeds: torch.Tensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
    ) -> BaseModelOutputWithPooling | tuple:
        tokens = input_ids if input_ids is not None else inputs_embeds
        if tokens is None or (input_ids is not None and inputs_embeds is not None):
            raise ValueError("specify exactly one of input_ids or inputs_embeds")
        output_attentions = self.config.output_attentions if output_attentions is None else output_attentions
        output_hidden_states = (
            self.config.output_hidden_states if output_hidden_states is None else output_hidden_states
        )
        return_dict = self.config.return_dict if return_dict is None else return_dict

        n = tokens.shape[1]
        if n > self.config.max_seq_len:  # checked here: the position embeddings would fail first, unclearly
            raise ValueError(
                f"sequence length {n} exceeds max_seq_len={self.config.max_seq_len} (the longest input the "
                f"{self.config.max_position_embeddings} position embeddings allow): truncate the input"
            )
        embedding_output = self.embeddings(
            input_ids, token_type_ids, position_ids, inputs_embeds
        )  # (b, n, D)
        # once a forward: the mask (None where every token is real) and which rows are longer than exact_length
        plan = model_plan(_key_padding_mask(attention_mask), n, self.config.exact_length)
        # CPU inference: groups of bounded tokens; else short and long rows as two batches, the short ones narrow
        if read_grouped(plan, embedding_output, bool(output_attentions)):
            encoder_outputs = encode_grouped(self.encoder, embedding_output, plan, bool(output_hidden_states))
        elif read_apart(plan, output_attentions):
            encoder_outputs = encode_apart(self.encoder, embedding_output, plan, bool(output_hidden_states))
        else:
            encoder_outputs = self.encoder(embedding_output, plan, output_attentions, output_hidden_states)
        sequence_output = self.LayerNorm(encoder_outputs.last_hidden_state)  # (b, n, D)
        pooled_output = self.pooler(sequence_output) if self.pooler is not None else None  # (b, D)
        hidden_states = encoder_outputs.hidden_states
        if hidden_states is not None:  # the last one is the output, final LN included (as in transformers)
            hidden_states = (*hidden_states[:-1], sequence_output)
        output = BaseModelOutputWithPooling(
            last_hidden_state=sequence_output,
            pooler_output=pooled_output,
            hidden_states=hidden_states,
            attentions=encoder_outputs.attentions,
        )
        return output if return_dict else output.to_tuple()


__all__ = [
    "LinformerModel",
    "LinformerPreTrainedModel",
]
