"""The layers of the Linformer encoder, which `models/modeling_linformer.py` assembles into the model.

The embeddings, one encoder layer (the Linformer self-attention, add & norm, feed-forward, add & norm:
`LinformerAttention`, `LinformerSelfOutput`, `LinformerIntermediate`, `LinformerOutput`,
`LinformerLayer`), the encoder (the stack of layers, and the long stack beside it), `_layer_norm`
(the LayerNorm of `config.layer_norm`'s layout, or the identity), the pooler and the masked-LM head (here,
not with the heads, so that the pretrained base's `_init_weights` names it without importing the heads). Parameter names
are RoBERTa's; the LayerNorm placement and the notation (b, n, k, h, D) are modeling_linformer.py's.
"""

import torch
from torch import nn
from transformers.activations import ACT2FN, gelu
from transformers.modeling_layers import GradientCheckpointingLayer
from transformers.modeling_outputs import BaseModelOutput

from linformer_kit.models.configuration_linformer import LinformerConfig
from linformer_kit.nn import LinformerSelfAttention, SequenceProjection
from linformer_kit.nn.long_layers import Stack, by_length
from linformer_kit.nn.plan import Plan

# --- embeddings ------------------------------------------------------------------------------------


class LinformerEmbeddings(nn.Module):
    """Word + learned position + token type embeddings, then LayerNorm and dropout."""

    def __init__(self, config: LinformerConfig):
        super().__init__()
        self.position_style = config.position_style
        self.padding_idx = config.pad_token_id
        position_padding = config.pad_token_id if config.position_style == "roberta" else None
        self.word_embeddings: nn.Module = nn.Embedding(  # (set_input_embeddings may replace it)
            config.vocab_size, config.hidden_size, padding_idx=config.pad_token_id
        )
        self.position_embeddings = nn.Embedding(
            config.max_position_embeddings, config.hidden_size, padding_idx=position_padding
        )
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(
        self,
        input_ids: torch.Tensor | None,
        token_type_ids: torch.Tensor | None,
        position_ids: torch.Tensor | None,
        inputs_embeds: torch.Tensor | None,
    ) -> torch.Tensor:
        if inputs_embeds is None:
            inputs_embeds = self.word_embeddings(input_ids)  # (b, n, D)
        b, n, _ = inputs_embeds.shape
        if position_ids is None:
            position_ids = self.position_ids(input_ids, b, n, inputs_embeds.device)  # (b, n)
        if token_type_ids is None:
            token_type_ids = torch.zeros(b, n, dtype=torch.long, device=inputs_embeds.device)
        embeddings = (
            inputs_embeds
            + self.token_type_embeddings(token_type_ids)
            + self.position_embeddings(position_ids)
        )
        return self.dropout(self.LayerNorm(embeddings))  # (b, n, D)

    def position_ids(
        self, input_ids: torch.Tensor | None, b: int, n: int, device: torch.device
    ) -> torch.Tensor:
        """BERT: 0..n-1. RoBERTa (fairseq): real tokens count from pad+1, pad tokens sit at pad."""
        if self.position_style == "bert":
            return torch.arange(n, device=device).expand(b, n)
        pad = self.padding_idx
        assert pad is not None  # position_style="roberta": the config requires a pad_token_id
        if input_ids is None:  # embeddings given: padding unknown, so number every position
            return torch.arange(pad + 1, n + pad + 1, device=device).expand(b, n)
        real = input_ids.ne(pad).long()  # (b, n)
        return torch.cumsum(real, dim=1) * real + pad


# --- one encoder layer: Linformer self-attention, add & norm, feed-forward, add & norm ---------------


class LinformerAttention(nn.Module):
    """`self` is the Linformer attention (query/key/value/dense + E, F); `output` adds & norms."""

    def __init__(self, config: LinformerConfig, layer_idx: int, shared_projection: SequenceProjection | None):
        super().__init__()
        self.config = config
        self.self = LinformerSelfAttention(
            config.hidden_size,
            config.num_attention_heads,
            config.max_seq_len,
            dropout=config.attention_probs_dropout_prob,
            shared_projection=shared_projection,
            long_adapter_rank=config.long_adapter_rank if config.projected_lengths()[layer_idx] else None,
            **config.layer_options(layer_idx),
        )
        self.LayerNorm = _layer_norm(config, "pre")  # before the attention (pre-LN only)
        self.output = LinformerSelfOutput(config)

    def forward(
        self, hidden_states: torch.Tensor, plan: Plan | None, output_attentions: bool
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        weights = None
        normed = self.LayerNorm(hidden_states)  # (b, n, D); the identity under post-LN
        mask = None if plan is None else plan.mask
        if output_attentions:
            attended, weights = self.self.forward_with_weights(normed, mask, plan)  # (b, n, D), (b, h, n, k)
        else:
            attended = self.self(normed, mask, plan, backend=self.config._attn_implementation)  # (b, n, D)
        return self.output(attended, hidden_states), weights


class LinformerSelfOutput(nn.Module):
    """Dropout, residual, LayerNorm (post-LN only). The output linear lives in `attention.self.dense`."""

    def __init__(self, config: LinformerConfig):
        super().__init__()
        self.LayerNorm = _layer_norm(config, "post")
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, attended: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return self.LayerNorm(self.dropout(attended) + residual)


class LinformerIntermediate(nn.Module):
    def __init__(self, config: LinformerConfig):
        super().__init__()
        self.LayerNorm = _layer_norm(config, "pre")  # before the feed-forward (pre-LN only)
        self.dense = nn.Linear(config.hidden_size, config.intermediate_size)
        self.intermediate_act_fn = ACT2FN[config.hidden_act]

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        return self.intermediate_act_fn(
            self.dense(self.LayerNorm(hidden_states))
        )  # (b, n, intermediate_size)


class LinformerOutput(nn.Module):
    def __init__(self, config: LinformerConfig):
        super().__init__()
        self.dense = nn.Linear(config.intermediate_size, config.hidden_size)
        self.LayerNorm = _layer_norm(config, "post")
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, hidden_states: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return self.LayerNorm(self.dropout(self.dense(hidden_states)) + residual)  # (b, n, D)


class LinformerLayer(GradientCheckpointingLayer):
    def __init__(self, config: LinformerConfig, layer_idx: int, shared_projection: SequenceProjection | None):
        super().__init__()
        self.attention = LinformerAttention(config, layer_idx, shared_projection)
        self.intermediate = LinformerIntermediate(config)
        self.output = LinformerOutput(config)

    def forward(
        self, hidden_states: torch.Tensor, plan: Plan | None = None, output_attentions: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """`plan`: the forward's (nn/plan.py: the padding mask, which rows are longer than exact_length), made
        once by the model; None: an unpadded batch, planned by each attention layer. Positional: gradient
        checkpointing needs that."""
        attention_output, weights = self.attention(hidden_states, plan, output_attentions)
        layer_output = self.output(self.intermediate(attention_output), attention_output)  # (b, n, D)
        return layer_output, weights


class LinformerEncoder(nn.Module):
    """The stack of layers. Under sharing="layerwise" it owns the one projection every layer uses."""

    def __init__(self, config: LinformerConfig):
        super().__init__()
        k = config.projected_lengths()[0]
        shared = None
        if config.sharing == "layerwise" and k is not None:
            self.projection = SequenceProjection(
                config.max_seq_len, k, config.projection, scaling=config.projection_scaling,
                init=config.projection_init,
            )  # fmt: skip
            shared = self.projection
        self.layer = nn.ModuleList(
            [LinformerLayer(config, i, shared) for i in range(config.num_hidden_layers)]
        )
        # rows of more than exact_length real tokens read these instead (nn/long_layers.py)
        self.long_layer = (
            nn.ModuleList([LinformerLayer(config, i, shared) for i in range(config.num_hidden_layers)])
            if config.long_layers
            else None
        )
        self.exact_length = config.exact_length

    def forward(
        self, hidden_states: torch.Tensor, plan: Plan, output_attentions: bool, output_hidden_states: bool
    ) -> BaseModelOutput:
        """`plan`: the forward's, made once (nn/plan.py); every layer takes it."""

        def run(layers: nn.ModuleList) -> Stack:
            return lambda x, rows_plan: self._run(
                layers, x, rows_plan, output_attentions, output_hidden_states
            )

        if self.long_layer is None:
            outputs = run(self.layer)(hidden_states, plan)
        else:
            assert self.exact_length is not None  # the config requires it
            outputs = by_length(run(self.layer), run(self.long_layer), hidden_states, plan, self.exact_length)
        states = len(self.layer) + 1 if output_hidden_states else 0
        return BaseModelOutput(
            last_hidden_state=outputs[0],
            hidden_states=outputs[1 : 1 + states] if output_hidden_states else None,
            attentions=outputs[1 + states :] if output_attentions else None,
        )

    @staticmethod
    def _run(
        layers: nn.ModuleList,
        hidden_states: torch.Tensor,
        plan: Plan,
        output_attentions: bool,
        output_hidden_states: bool,
    ) -> tuple[torch.Tensor, ...]:
        """One stack -> (last hidden state, every hidden state (the input first) if asked, every layer's
        attention weights if asked): flat, each (b, ...), so `by_length` merges them by row."""
        all_hidden_states: tuple[torch.Tensor, ...] = (hidden_states,) if output_hidden_states else ()
        all_attentions: tuple[torch.Tensor, ...] = ()
        for layer in layers:
            hidden_states, weights = layer(hidden_states, plan, output_attentions)
            all_hidden_states += (hidden_states,) if output_hidden_states else ()
            all_attentions += (weights,) if output_attentions else ()
        return (hidden_states, *all_hidden_states, *all_attentions)


def _layer_norm(config: LinformerConfig, layout: str) -> nn.Module:
    """A LayerNorm where `config.layer_norm` is `layout`, else the identity (no parameters, no state)."""
    if config.layer_norm != layout:
        return nn.Identity()
    return nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)


class LinformerPooler(nn.Module):
    """tanh(dense(first token)): RoBERTa's / BERT's pooler."""

    def __init__(self, config: LinformerConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.activation = nn.Tanh()

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        return self.activation(self.dense(hidden_states[:, 0]))  # (b, D)


class LinformerLMHead(nn.Module):
    """dense -> GELU -> LayerNorm -> decoder (tied to the word embeddings) + bias: RoBERTa's MLM head."""

    def __init__(self, config: LinformerConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.layer_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.decoder = nn.Linear(config.hidden_size, config.vocab_size)
        self.bias = nn.Parameter(torch.zeros(config.vocab_size))

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        x = self.layer_norm(gelu(self.dense(features)))  # (b, n, D)
        return self.decoder(x)  # (b, n, vocab)


__all__ = [
    "LinformerAttention",
    "LinformerEmbeddings",
    "LinformerEncoder",
    "LinformerIntermediate",
    "LinformerLMHead",
    "LinformerLayer",
    "LinformerOutput",
    "LinformerPooler",
    "LinformerSelfOutput",
]
