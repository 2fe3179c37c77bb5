"""The heads on the Linformer encoder (`models/modeling_linformer.py`), and the models that carry them.

`LinformerForMaskedLM` (RoBERTa's masked-LM head, `LinformerLMHead`, sits with the layers:
`models/linformer_layers.py`); the sentence head
(`LinformerClassificationHead`: the first token or the mean over real tokens) and
`LinformerForSequenceClassification`; `LinformerForTokenClassification`, a linear classifier at every
position. Both classifiers share `LinformerClassifier`'s forward.
"""

from typing import ClassVar, Literal, get_args

import torch
from torch import nn
from torch.nn import BCEWithLogitsLoss, CrossEntropyLoss, MSELoss
from transformers.modeling_outputs import MaskedLMOutput, SequenceClassifierOutput, TokenClassifierOutput

from linformer_kit.models.configuration_linformer import LinformerConfig
from linformer_kit.models.linformer_layers import LinformerLMHead
from linformer_kit.models.modeling_linformer import (
    LinformerModel,
    LinformerPreTrainedModel,
    _key_padding_mask,
)

# --- heads ----------------------------------------------------------------------------------------------


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
        # the mask as given, read on no host: the encoder's plan made the forward's one read (nn/plan.py), and
        # a mask of every token real pools as the plain mean (to float summation order)
        mask = _key_padding_mask(attention_mask)
        if mask is None:  # no mask: every token real
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
    "LinformerClassificationHead",
    "LinformerClassifier",
    "LinformerForMaskedLM",
    "LinformerForSequenceClassification",
    "LinformerForTokenClassification",
    "LinformerLMHead",
]
