"""Linformer encoder, written the way Hugging Face writes a model: read it top to bottom.

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

Attention implementation (`attn_implementation=` in `from_pretrained` / the constructor):
"sdpa" (default) runs the layer's fast cores (`backend="auto"`: PyTorch's
`scaled_dot_product_attention`, or on a CPU in bfloat16 the query-blocked core of `nn/backends.py`);
"eager" runs the explicit softmax in fp32. `output_attentions=True` always takes the eager path, the only one that materialises the
(b, h, n, k) maps ((b, h, n, n) in layers with projected_length=None).
"""

from typing import ClassVar, Literal, get_args

import torch
from torch import nn
from torch.nn import BCEWithLogitsLoss, CrossEntropyLoss, MSELoss
from transformers import PreTrainedModel
from transformers import initialization as init
from transformers.activations import ACT2FN, gelu
from transformers.modeling_layers import GradientCheckpointingLayer
from transformers.modeling_outputs import (
    BaseModelOutput,
    BaseModelOutputWithPooling,
    MaskedLMOutput,
    SequenceClassifierOutput,
    TokenClassifierOutput,
)

from linformer_kit.models.configuration_linformer import LinformerConfig
from linformer_kit.models.loading import share_saved_weights, strict_from_pretrained
from linformer_kit.nn import LinformerSelfAttention, SequenceProjection
from linformer_kit.nn.long_layers import Stack, by_length
from linformer_kit.nn.plan import Plan, model_plan

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
        if output_attentions or self.config._attn_implementation == "eager":
            attended, weights = self.self.forward_with_weights(normed, mask, plan)  # (b, n, D)
            weights = weights if output_attentions else None  # (b, h, n, k)
        else:
            attended = self.self(normed, mask, plan)  # (b, n, D)
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


# --- the pretrained-model base: init, flags for transformers -------------------------------------------


class LinformerPreTrainedModel(PreTrainedModel):
    config_class = LinformerConfig
    base_model_prefix = "linformer"
    supports_gradient_checkpointing = True
    _supports_sdpa = True
    # transformers' instance attributes (a model collects its modules' per instance), so not ClassVar
    _no_split_modules: set[str] | list[str] | None = ["LinformerEmbeddings", "LinformerLayer"]  # noqa: RUF012
    # The layers read config._attn_implementation at every forward, so `set_attn_implementation`
    # works after construction (transformers otherwise guesses from the source that it would not).
    _can_set_attn_implementation_cached_value = True

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


# --- heads ----------------------------------------------------------------------------------------------


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


LogitsFor = Literal["all", "labelled"]
LOGITS_FOR: tuple[str, ...] = get_args(LogitsFor)


class LinformerForMaskedLM(LinformerPreTrainedModel):
    """RoBERTa's masked LM on the Linformer encoder.

    `logits_for="labelled"` runs the LM head only at the positions that have a label (15% in
    pretraining) and returns logits of shape (m, vocab) for those m positions, as fairseq's RoBERTa
    does with `masked_tokens`: the head (d x vocab, the largest matmul of a small model) then costs
    0.15x, and the loss is the same number as `logits_for="all"` (tests/models/test_masked_lm_head.py).
    `linformer pretrain` trains with it; the default keeps Hugging Face's (b, n, vocab) logits.
    """

    _tied_weights_keys: dict[str, str] = {  # noqa: RUF012 (an instance attribute in transformers)
        "lm_head.decoder.weight": "linformer.embeddings.word_embeddings.weight",
        "lm_head.decoder.bias": "lm_head.bias",
    }

    def __init__(self, config: LinformerConfig):
        super().__init__(config)
        self.linformer = LinformerModel(config, add_pooling_layer=False)
        self.lm_head = LinformerLMHead(config)
        self.post_init()

    def get_output_embeddings(self) -> nn.Linear:
        return self.lm_head.decoder

    def set_output_embeddings(self, new_embeddings: nn.Linear) -> None:
        self.lm_head.decoder = new_embeddings

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
        inputs_embeds: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        logits_for: LogitsFor = "all",
    ) -> MaskedLMOutput | tuple:
        """labels (b, n): token ids to predict, -100 where there is nothing to predict.
        logits_for: "all" -> logits (b, n, vocab); "labelled" -> logits (m, vocab) at the m positions
        with a label, in row-major order (needs labels)."""
        if logits_for not in LOGITS_FOR:
            raise ValueError(f"logits_for must be one of {LOGITS_FOR}, got {logits_for!r}")
        if logits_for == "labelled" and labels is None:
            raise ValueError('logits_for="labelled" needs labels: they say which positions to predict')
        return_dict = self.config.return_dict if return_dict is None else return_dict
        outputs = self.linformer(
            input_ids, attention_mask, token_type_ids, position_ids, inputs_embeds,
            output_attentions, output_hidden_states, return_dict=True,
        )  # fmt: skip
        hidden = outputs.last_hidden_state  # (b, n, D)
        if logits_for == "labelled" and labels is not None:  # (checked above: "labelled" has labels)
            labels = labels.to(hidden.device)
            labelled = labels.ne(-100)  # (b, n)
            hidden, labels = hidden[labelled], labels[labelled]  # (m, D), (m,)
        logits = self.lm_head(hidden)  # (b, n, vocab) or (m, vocab)
        loss = None
        if labels is not None:
            loss = CrossEntropyLoss()(
                logits.view(-1, self.config.vocab_size), labels.to(logits.device).view(-1)
            )
        output = MaskedLMOutput(
            loss=loss, logits=logits, hidden_states=outputs.hidden_states, attentions=outputs.attentions
        )
        return output if return_dict else output.to_tuple()


class LinformerClassificationHead(nn.Module):
    """Pooled sequence -> dropout -> dense -> tanh -> dropout -> out_proj: RoBERTa's sentence head.

    `config.classifier_pooling` says what is pooled from the final hidden states h (b, n, D):
        "cls"   h[:, 0], the <s> / [CLS] token (RoBERTa's)
        "mean"  pooled_b = sum_i m_bi h_bi / sum_i m_bi, with m the attention_mask (1 = real token,
                special tokens included; no mask: every position is real)
    Mean pooling is exact under padding: pads are selected away (never multiplied by 0, so a NaN in
    a pad cannot reach the sum), and the encoder gives real positions what they get without padding,
    so a sequence padded into a batch gets the logits it gets alone (up to float summation order).
    A row with no real token pools to zeros, not NaN.
    """

    def __init__(self, config: LinformerConfig):
        super().__init__()
        self.pooling = config.classifier_pooling
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.dropout = nn.Dropout(_classifier_dropout(config))
        self.out_proj = nn.Linear(config.hidden_size, _num_labels(config))

    def forward(self, features: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        x = self.dropout(self.pool(features, attention_mask))  # (b, D)
        x = self.dropout(torch.tanh(self.dense(x)))
        return self.out_proj(x)  # (b, num_labels)

    def pool(self, features: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
        """(b, n, D) final hidden states -> (b, D), as `classifier_pooling` says (class docstring)."""
        if self.pooling == "cls":
            return features[:, 0]  # (b, D): the <s> / [CLS] token
        mask = model_plan(_key_padding_mask(attention_mask), features.shape[1], None).mask
        if mask is None:  # every token real
            return features.mean(dim=1)  # (b, D)
        real = mask.unsqueeze(-1)  # (b, n, 1), True = real token
        total = features.masked_fill(~real, 0.0).sum(dim=1)  # (b, D)
        return total / real.sum(dim=1).clamp(min=1).to(features.dtype)  # (b, D)


class LinformerClassifier(LinformerPreTrainedModel):
    """The encoder and a classifier on its final hidden states: the forward of the sequence and token
    classifiers, which differ only in `_logits`, `_loss` and their output class."""

    output_class: ClassVar[type[SequenceClassifierOutput] | type[TokenClassifierOutput]]
    linformer: LinformerModel  # each subclass's encoder

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
        inputs_embeds: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
    ) -> SequenceClassifierOutput | TokenClassifierOutput | tuple:
        """labels: as the class says (a class id or target per sequence, or per token)."""
        return_dict = self.config.return_dict if return_dict is None else return_dict
        outputs = self.linformer(
            input_ids, attention_mask, token_type_ids, position_ids, inputs_embeds,
            output_attentions, output_hidden_states, return_dict=True,
        )  # fmt: skip
        logits = self._logits(outputs.last_hidden_state, attention_mask)
        loss = None if labels is None else self._loss(logits, labels.to(logits.device))
        output = self.output_class(
            loss=loss, logits=logits, hidden_states=outputs.hidden_states, attentions=outputs.attentions
        )
        return output if return_dict else output.to_tuple()

    def _logits(self, hidden: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
        raise NotImplementedError

    def _loss(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError


class LinformerForSequenceClassification(LinformerClassifier):
    """The encoder and RoBERTa's sentence head on the first token, or on the mean over real tokens
    (`config.classifier_pooling`, see `LinformerClassificationHead`).

    labels (b,): class ids (num_labels > 1) or targets (num_labels == 1: regression).
    """

    output_class = SequenceClassifierOutput

    def __init__(self, config: LinformerConfig):
        super().__init__(config)
        self.num_labels = _num_labels(config)
        self.linformer = LinformerModel(config, add_pooling_layer=False)
        self.classifier = LinformerClassificationHead(config)
        self.post_init()

    def _logits(self, hidden: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
        return self.classifier(hidden, attention_mask)  # (b, num_labels)

    def _loss(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        # the problem type is inferred once from the labels, as every transformers classifier does
        if self.config.problem_type is None:
            if self.num_labels == 1:
                self.config.problem_type = "regression"
            elif labels.dtype in (torch.long, torch.int):
                self.config.problem_type = "single_label_classification"
            else:
                self.config.problem_type = "multi_label_classification"
        if self.config.problem_type == "regression":
            return MSELoss()(logits.squeeze(-1), labels.squeeze(-1).to(logits.dtype))
        if self.config.problem_type == "single_label_classification":
            return CrossEntropyLoss()(logits.view(-1, self.num_labels), labels.view(-1))
        return BCEWithLogitsLoss()(logits, labels.to(logits.dtype))


class LinformerForTokenClassification(LinformerClassifier):
    """The encoder, dropout and a linear classifier at every position.

    labels (b, n): class ids, -100 where there is nothing to predict.
    """

    output_class = TokenClassifierOutput

    def __init__(self, config: LinformerConfig):
        super().__init__(config)
        self.num_labels = _num_labels(config)
        self.linformer = LinformerModel(config, add_pooling_layer=False)
        self.dropout = nn.Dropout(_classifier_dropout(config))
        self.classifier = nn.Linear(config.hidden_size, self.num_labels)
        self.post_init()

    def _logits(self, hidden: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
        return self.classifier(self.dropout(hidden))  # (b, n, num_labels)

    def _loss(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return CrossEntropyLoss()(logits.view(-1, self.num_labels), labels.view(-1))


def _num_labels(config: LinformerConfig) -> int:
    """config.num_labels: transformers types it optional (no id2label); a LinformerConfig checks it is >= 1."""
    labels = config.num_labels
    assert labels is not None
    return labels


def _classifier_dropout(config: LinformerConfig) -> float:
    """The dropout of a classification head: classifier_dropout, or the hidden states' when not set."""
    return config.classifier_dropout if config.classifier_dropout is not None else config.hidden_dropout_prob


__all__ = [
    "LinformerForMaskedLM",
    "LinformerForSequenceClassification",
    "LinformerForTokenClassification",
    "LinformerModel",
    "LinformerPreTrainedModel",
]
