"""`DistillConfig`: what `linformer distill` takes, with the checks of its values.

The flags of `linformer distill` are generated from this class (cli/arguments.py). Its constructor
checks values only and reads no file; `preflight()` (called by `distill` before any work) checks the
teacher's folder and the output_dir (train/distill/preflight.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from linformer_kit.models import LinformerConfig
from linformer_kit.nn import ShortInputs
from linformer_kit.nn.options import check_choice, check_exact_length, option_field
from linformer_kit.train.distill.preflight import (
    check_fresh_run,
    check_stages_from,
    check_teacher,
    student_config,
)
from linformer_kit.train.model_fields import ConversionFields
from linformer_kit.train.training_arguments import (
    LinformerTrainingArguments,
    check_number,
    post_init_field,
    trainer_default,
)

# A stage's loss and what trains under it (train/distill/losses.py, train/distill/trainer.py); each
# stage runs in output_dir/<stage>/
Stage = Literal["attention", "end-to-end", "long"]
STAGES: tuple[Stage, ...] = ("attention", "end-to-end", "long")
ProjectionResize = Literal["interpolate", "restart"]
# the long stage's options (train/distill/long.py): each means something only with long_length
LONG_OPTIONS = ("long_train", "long_held_out", "long_steps", "long_batch_size", "long_learning_rate", "window_weight",
                "contrastive_weight", "contrastive_scale", "short_weight", "crop_weight", "crop_length",
                "crops_per_half", "projection_resize", "long_tune", "long_adapter_rank", "short_text",
                "short_layers", "halves", "negatives_bank", "long_spans_per_document")  # fmt: skip
# options only a long stage reads: its own and its verdict's (train/distill/verdict.py), which a resume does not
# compare (the verdict trains nothing)
LONG_ONLY_OPTIONS = (*LONG_OPTIONS, "verdict_pairs")
Tune = Literal["all", "lora"]
# what the long stage trains: what `tune` names, E and F alone, long adapters with E and F, or long layers
# (weights only inputs longer than exact_length read; train/distill/long.py, "What trains")
LongTune = Literal["tune", "projections", "adapters", "layers"]
# what trains is read by no input of at most exact_length
LONG_ONLY_TUNES = ("projections", "adapters", "layers")
# the short term's (c) text in the long stage: the 512 stages' examples alone, or those alternating with
# seq_len-token windows of the long text (train/distill/long.py); the 512 stages' text likewise (`stage_text`)
ShortText = Literal["train", "train+long"]
# the halves of the long stage's contrastive terms (b) and (d) (train/distill/long_losses.py): each span of
# long_length cut in two, or each half itself a span of long_length (spans of twice that drawn)
Halves = Literal["split", "whole"]
# the weights a long-layers student reads inputs of at most exact_length tokens with (train/distill/long.py)
ShortLayers = Literal["original", "student"]
Examples = Literal["documents", "blocks"]
# fidelity's baseline, the teacher's mean cosine of two different held-out documents, needs two of them
MIN_EVAL_DOCUMENTS = 2


@dataclass
class DistillConfig(ConversionFields, LinformerTrainingArguments):
    """Everything `distill` needs: the teacher, the text, the student's Linformer options (`ConversionFields`,
    train/model_fields.py), the stages.

    A `TrainingArguments` subclass, as `pretrain`'s: every Trainer field is a flag; `learning_rate` is the
    end-to-end stage's, `attention_learning_rate` the attention-transfer stage's, and each stage runs its
    own number of steps (`max_steps` is not used); `per_device_eval_batch_size` is the batch of the
    fidelity's embeddings. ValueError names a bad value, before any work.
    """

    learning_rate: float = trainer_default("learning_rate", 1e-4)
    per_device_train_batch_size: int = trainer_default("per_device_train_batch_size", 8)
    warmup_steps: float = trainer_default("warmup_steps", 0.1)
    weight_decay: float = trainer_default("weight_decay", 0.0)
    teacher: str = post_init_field(
        "the model to distil from: a local BERT / RoBERTa / sentence-transformers folder, or a "
        "full-attention Linformer"
    )
    train: list[str] = field(
        default_factory=list,
        metadata={"help": "unlabeled text: .txt / .jsonl / .jsonl.gz files or folders, or a Hub dataset"},
    )
    validation: list[str] | None = field(
        default=None,
        metadata={"help": "held-out documents for fidelity (default: the last train documents, held out)"},
    )
    fidelity_text: list[str] | None = field(
        default=None,
        metadata={"help": "text no stage trains on, each file its own source: the final student's fidelity at "
                  "seq_len on its first max_eval_documents documents, beside the held-out documents', the "
                  "lowest first (e.g. held-out text of the long stage's domains)"},
    )  # fmt: skip
    text_column: str = field(default="text", metadata={"help": "field holding the text in JSON lines"})
    max_train_documents: int | None = field(
        default=None, metadata={"help": "use the first N train documents"}
    )
    max_eval_documents: int = field(
        default=256, metadata={"help": "fidelity on the first N held-out documents (at least 2)"}
    )
    seq_len: int | None = field(
        default=None, metadata={"help": "block length n (default: the teacher's longest input)"}
    )
    exact_length: int | None = option_field(
        "exact_length",
        note="the long student's alone (with --long-length; default: seq_len, the length the 512 "
        "stages read)",
    )
    short_inputs: ShortInputs = option_field(
        "short_inputs", default="exact", note="inputs of at most k tokens attend exactly, as the teacher"
    )
    # 0 by default: on all-MiniLM-L6-v2 attention transfer lowered the embedding fidelity it should raise
    # (0.920 drop-in -> 0.893; docs/reproduction/distill-minilm/), where end to end alone reached 0.959
    attention_steps: int = field(default=0, metadata={"help": "attention-transfer steps (0: skip the stage)"})
    attention_learning_rate: float = field(
        default=1e-3, metadata={"help": "learning rate of attention transfer"}
    )
    end_to_end_steps: int = field(default=150, metadata={"help": "end-to-end steps (0: skip the stage)"})
    examples: Examples = field(
        default="documents",
        metadata={
            "help": "'documents' (one per document, truncated to seq_len: every length the model will "
            "see) or 'blocks' (documents packed into blocks of exactly seq_len tokens)"
        },
    )
    stage_text: ShortText | None = field(
        default=None,
        metadata={"help": "the 512 stages' text: 'train' (the --train examples) or 'train+long' (half of them, "
                  "the other half seq_len-token windows of --long-train, each source in turn, held-out "
                  "documents left out: the short reading learned on the long stage's domains too; with "
                  "--long-length); default: 'train+long' with --long-length, else 'train'"},
    )  # fmt: skip
    # 0, not the teacher's 0.1: with it a CPU trains the window on a fused kernel (nn/cores.py, scores never
    # written out): a long step at 0.58x the time and 0.61x the peak memory, a 512 step at 0.67x and 0.58x
    # (docs/reproduction/long-minilm/long4096-readme/README.md, "Time and memory"); the targets are the
    # teacher's, so the noise buys nothing
    attention_dropout: float = field(
        default=0.0,
        metadata={"help": "dropout on the student's attention weights while a stage trains, only then (the "
                  "saved student's config keeps the teacher's attention_probs_dropout_prob, for a finetune); "
                  "0 trains the window on the fused kernel on a CPU; a stage run before this option trained "
                  "at the teacher's value (0.1 for BERT / MiniLM): give it to reuse that stage"},
    )  # fmt: skip
    tune: Tune = field(
        default="all", metadata={"help": "end to end: 'all' weights, or 'lora' adapters (+ E, F) via PEFT"}
    )
    lora_rank: int = field(default=16, metadata={"help": "LoRA rank (tune='lora')"})
    embedding_weight: float = field(
        default=1.0,
        metadata={
            "help": "weight of 1 - cos(mean-pooled student, teacher) at the last layer: the sentence "
            "embedding the fidelity measures (0: hidden states only)"
        },
    )
    logits_weight: float = field(
        default=1.0, metadata={"help": "weight of KL on masked-LM logits (teachers with a masked-LM head)"}
    )

    stages_from: str | None = field(
        default=None,
        metadata={"help": "a finished distill run's output_dir: each 512 stage it finished with this run's options "
                  "is taken from it, not trained (e.g. a 512 student, then --long-length from it); it is only "
                  "read", "metavar": "DIR"},
    )  # fmt: skip
    long_length: int | None = field(
        default=None,
        metadata={"help": "after the 512 stages, extend the student to N tokens and train it on long text "
                  "(the long stage, train/distill/long.py); None: no long stage", "metavar": "N"},
    )  # fmt: skip
    long_train: list[str] | None = field(
        default=None,
        metadata={"help": "long text for the long stage: spans of long_length tokens of one document each "
                  "(default: --train)"},
    )  # fmt: skip
    # 0.1 keeps a user's corpus for training; the study holds out 0.4 of the 250 Gutenberg train books (100,
    # with valid and test 110 books, 1 125 pairs at 4 096: docs/longdocs.md, "The held-out books")
    long_held_out: float = field(
        default=0.1,
        metadata={"help": "the share of each --long-train source's last documents held out of every stage "
                  "(at least 2, at most --max-eval-documents): the verdict's text and a test set for "
                  "`linformer longdocs --documents`"},
    )  # fmt: skip
    # 40 steps at batch 4 and contrastive 1.0: `c1`, the recommended long student
    # (docs/reproduction/long-minilm/README.md); 100 steps or a stronger rate lost the passkey at 4 096
    long_steps: int = field(default=40, metadata={"help": "steps of the long stage"})
    long_batch_size: int = field(
        default=4,
        metadata={"help": "spans per step of the long stage (>= 2: each half's in-batch negatives)"},
    )
    long_learning_rate: float = field(default=2e-5, metadata={"help": "learning rate of the long stage"})
    window_weight: float = field(
        default=1.0, metadata={"help": "long stage: weight of the sliding-window teacher's hidden states (a)"}
    )
    contrastive_weight: float = field(
        default=1.0, metadata={"help": "long stage: weight of the halves' in-batch contrastive loss (b)"}
    )
    contrastive_scale: float = field(
        default=20.0, metadata={"help": "long stage: cosine scale of the contrastive loss (MNRL's 20)"}
    )
    short_weight: float | None = field(
        default=None,
        metadata={"help": "long stage: weight of end to end on short documents at seq_len (c); default: 1.0 "
                  "where a weight it reads trains, else 0 (--long-tune projections / adapters / layers with "
                  "--exact-length >= seq_len: short inputs read none)"},
    )  # fmt: skip
    short_text: ShortText = field(
        default="train+long",
        metadata={"help": "long stage: the short term's (c) text: 'train' (the 512 stages' examples) or "
                  "'train+long' (those alternating with seq_len-token windows of --long-train, each source in "
                  "turn, so the short reading is held on each of the long stage's domains too)"},
    )  # fmt: skip
    crop_weight: float = field(
        default=0.0,
        metadata={"help": "long stage: weight of the crops' contrastive loss (d): crops of each half, read by "
                  "the teacher, find their half among the batch's (0: off)"},
    )  # fmt: skip
    halves: Halves = field(
        default="split",
        metadata={"help": "long stage: the halves of the contrastive terms (b) and (d): 'split' (each span of "
                  "--long-length tokens cut in two: halves of half that length) or 'whole' (each half a span "
                  "of --long-length tokens: spans of twice that are drawn, and the window term (a) reads the "
                  "first half), so the contrastive term trains the reading at the length the student serves"},
    )  # fmt: skip
    long_spans_per_document: int | None = field(
        default=None,
        metadata={"help": "long stage: at most this many spans of one --long-train document (a seeded draw of "
                  "its spans), so the stage's spans come from more documents; default: every span of a "
                  "document before the next"},
    )  # fmt: skip
    negatives_bank: int = field(
        default=0,
        metadata={"help": "long stage: second halves of earlier steps kept (detached, the newest) as "
                  "further negatives of the halves' contrastive loss (b), cross-batch memory; 0: the batch's "
                  "alone"},
    )  # fmt: skip
    crop_length: int = field(
        default=64, metadata={"help": "long stage: text tokens of a crop (d), at most half a span's text"}
    )
    crops_per_half: int = field(default=2, metadata={"help": "long stage: crops of each half per step (d)"})
    projection_resize: ProjectionResize = field(
        default="interpolate",
        metadata={"help": "long stage: E and F for long_length: 'interpolate' (each trained slot over the "
                  "same share of the input) or 'restart' (at their window start, as `linformer extend`)"},
    )  # fmt: skip

    # long layers: the long reading of `c1` (every weight trains) without moving what short inputs read
    # (docs/reproduction/long-minilm/README.md, "Long layers")
    long_tune: LongTune = field(
        default="layers",
        metadata={"help": "long stage: what trains: 'tune' (what --tune names), 'projections' (E and F "
                  "alone), 'adapters' (long adapters of rank --long-adapter-rank with E and F) or 'layers' (a "
                  "copy of every layer that only inputs longer than --exact-length read); with the last three, "
                  "inputs of at most --exact-length tokens are read exactly, by weights the stage leaves "
                  "untouched (the 512 student's; with 'layers', see --short-layers)"},
    )  # fmt: skip
    short_layers: ShortLayers = field(
        default="original",
        metadata={"help": "long stage, --long-tune layers: the weights inputs of at most --exact-length tokens "
                  "are read with: 'original' (the teacher's, every one but the long layers': there the long "
                  "student is the original) or 'student' (the 512 student's)"},
    )  # fmt: skip
    long_adapter_rank: int = field(
        default=16,
        metadata={"help": "long stage, --long-tune adapters: the rank of each attention linear's update read "
                  "by inputs longer than --exact-length only (nn/long_adapters.py)"},
    )  # fmt: skip
    # 20: on the README's run (MiniLM, 4 096, 2 AVX-512 cores, 2026-11-29) 70 s, 9 % of the long stage's 823 s
    # (docs/reproduction/long-minilm/long4096-readme/README.md, "The verdict"; each run prints its own): each
    # pair is 2 texts, read by the student whole and by the teacher's chunks and truncation, at 2 lengths
    verdict_pairs: int = field(
        default=20,
        metadata={"help": "after the long stage, the verdict: pairs of halves of each --long-train source's "
                  "held-out documents, at --long-length and at 2 x seq_len tokens, on which the long student "
                  "(whole, late chunks) meets the teacher's chunks (averaged, best) and truncation (0: none)"},
    )  # fmt: skip

    def _check_fields(self) -> None:
        """Values only; the teacher's files (and the defaults they give) are the preflight's (`_check_inputs`)."""
        if self.teacher is None:
            raise ValueError("teacher: missing; give the model directory to distil from (--teacher)")
        if not self.train:
            raise ValueError("train: missing; give unlabeled text to distil on (--train)")
        self._parse_option_text()
        for name in ("attention_steps", "end_to_end_steps"):
            check_number(name, getattr(self, name), 0, integer=True)
        if self.attention_steps + self.end_to_end_steps == 0:
            raise ValueError("attention_steps and end_to_end_steps are both 0: nothing to distil")
        check_number("attention_learning_rate", self.attention_learning_rate, 0, exclusive=True)
        check_number("lora_rank", self.lora_rank, 1, integer=True)
        check_number("logits_weight", self.logits_weight, 0)
        check_number("attention_dropout", self.attention_dropout, 0, below=1)
        check_number("embedding_weight", self.embedding_weight, 0)
        check_number(
            "max_eval_documents", self.max_eval_documents, MIN_EVAL_DOCUMENTS, integer=True,
            why="fidelity's baseline is the mean cosine of two different held-out documents",
        )  # fmt: skip
        check_number("max_train_documents", self.max_train_documents, 1, integer=True, optional=True)
        check_number("seq_len", self.seq_len, 2, integer=True, optional=True)
        if self.stage_text is None:  # the recommended long student's 512 stages read its long text too
            self.stage_text = "train+long" if self.long_length is not None else "train"
        self._check_long_fields()
        check_choice("stage_text", self.stage_text, get_args(ShortText))
        if self.stage_text == "train+long" and self.long_length is None:
            raise ValueError(
                "stage_text='train+long': its windows are of the long stage's text (--long-train); give "
                "--long-length N, or leave --stage-text at 'train'"
            )
        if self.attention_steps and not self._has_projection_weights():
            raise ValueError(
                f"attention_steps={self.attention_steps}: attention transfer trains E and F, and "
                f"projection={self.projection!r} (projected_length={self.projected_length}) has none to train; "
                "set --attention-steps 0"
            )

    def _has_projection_weights(self) -> bool:
        """Whether the student has an E and F to train (a learned projection)."""
        return self.projected_length is not None and self.projection not in ("mean", "max", "random")

    def _check_long_fields(self) -> None:
        """The long stage's values; without long_length, none of its options may be given."""
        if self.long_length is None:
            self._refuse_long_options()
            return
        check_number("long_length", self.long_length, 3, integer=True)
        check_number("long_steps", self.long_steps, 1, integer=True)
        check_number("long_held_out", self.long_held_out, 0, below=1, exclusive=True)
        if self.long_held_out != 0.1 and not self.long_train:
            raise ValueError(
                f"long_held_out={self.long_held_out}: the share held out of each --long-train source; without "
                "--long-train the held-out documents are the fidelity's (--validation, or train's last tenth)"
            )
        check_number("long_learning_rate", self.long_learning_rate, 0, exclusive=True)
        check_number("contrastive_scale", self.contrastive_scale, 0, exclusive=True)
        for name in ("window_weight", "contrastive_weight", "crop_weight"):
            check_number(name, getattr(self, name), 0)
        check_number("short_weight", self.short_weight, 0, optional=True)  # None: the preflight's default
        if self.short_weight is not None:  # else checked once the preflight gives its default
            self._check_some_long_loss()
        if self.crop_weight > 0:  # the crops' options mean something only with their term on
            check_number("crop_length", self.crop_length, 1, integer=True, below=(self.long_length - 2) // 2 + 1,
                         why=f"a crop lies inside one half of a long_length={self.long_length} span's text")  # fmt: skip
            check_number("crops_per_half", self.crops_per_half, 1, integer=True)
        check_number("negatives_bank", self.negatives_bank, 0, integer=True)
        check_number("long_spans_per_document", self.long_spans_per_document, 1, integer=True, optional=True)
        if self.negatives_bank > 0 and self.contrastive_weight == 0:
            raise ValueError(
                f"negatives_bank={self.negatives_bank}: the bank holds negatives of the halves' contrastive loss, "
                "which contrastive_weight=0 turns off; give contrastive_weight > 0 or negatives_bank=0"
            )
        low = 2 if self.contrastive_weight > 0 else 1
        check_number("long_batch_size", self.long_batch_size, low, integer=True,
                     why="the contrastive loss needs another span's half as a negative" if low == 2 else "")  # fmt: skip
        check_choice("projection_resize", self.projection_resize, get_args(ProjectionResize))
        check_choice("long_tune", self.long_tune, get_args(LongTune))
        check_number("long_adapter_rank", self.long_adapter_rank, 1, integer=True)
        check_number("verdict_pairs", self.verdict_pairs, 0, integer=True)
        if self.verdict_pairs == 1:
            raise ValueError(
                "verdict_pairs=1: a first half is told from at least one other pair's second half; give 2 or "
                "more, or 0 for no verdict"
            )
        check_choice("short_text", self.short_text, get_args(ShortText))
        check_choice("short_layers", self.short_layers, get_args(ShortLayers))
        check_choice("halves", self.halves, get_args(Halves))
        if self.long_tune in LONG_ONLY_TUNES:
            self._check_long_only()
        if self.exact_length is not None:  # else the preflight's default, seq_len (`_check_inputs`)
            self._check_exact_length()

    def refuse_given(self, typed: set[str]) -> None:
        """The command line's check (config_parser.parse_config): the long stage's options typed without
        --long-length, at their default too (`_refuse_long_options`)."""
        if self.long_length is None:
            self._refuse_long_options(typed)

    def _refuse_long_options(self, typed: Collection[str] = ()) -> None:
        """Without long_length no long stage runs, so each of its options (LONG_ONLY_OPTIONS, and exact_length) would
        be ignored: refused, all named in one error. "Given" is a value other than the field's default, or a
        flag typed (`typed`, from the command line: `--long-tune layers` is the default's value)."""
        options = (*LONG_ONLY_OPTIONS, "exact_length")
        defaults = {f.name: f.default for f in dataclasses.fields(self) if f.name in options}
        given = [name for name in options if name in typed or getattr(self, name) != defaults[name]]
        if given:
            values = ", ".join(
                f"{name}={getattr(self, name)!r} (default {defaults[name]!r})" for name in given
            )
            raise ValueError(
                f"{', '.join(given)}: options of the long stage, which runs only with --long-length N (given: "
                f"{values}); give --long-length N or leave them out"
            )

    def _check_some_long_loss(self) -> None:
        assert self.short_weight is not None
        if self.window_weight + self.contrastive_weight + self.short_weight + self.crop_weight == 0:
            raise ValueError(
                "window_weight, contrastive_weight, short_weight and crop_weight are all 0: the long stage "
                "has no loss"
            )

    def _check_exact_length(self) -> None:
        """The long student's exact_length T (nn/exact_rows.py): every k <= T < long_length, and with only weights
        of the long stage training (LONG_ONLY_TUNES), halves longer than T."""
        assert self.long_length is not None
        k = self.projected_length  # parsed by now (`_parse_option_text`): an int, a list or None
        ks = [v for v in (k if isinstance(k, list) else [k]) if isinstance(v, int)]
        check_exact_length(self.exact_length, ks, self.long_length)
        if self.long_tune in LONG_ONLY_TUNES:
            self._check_halves_projected()

    def _check_long_only(self) -> None:
        """long_tune='projections', 'adapters' or 'layers': E and F to train for the first two, and no option
        that would then train nothing."""
        tune = self.long_tune
        if tune != "layers" and not self._has_projection_weights():
            raise ValueError(
                f"long_tune={tune!r}: projection={self.projection!r} (projected_length="
                f"{self.projected_length}) has no E and F to train; use --long-tune tune"
            )
        if self.end_to_end_steps == 0 and self.tune != "all":
            raise ValueError(
                f"tune={self.tune!r}: no stage reads it (end_to_end_steps=0, and long_tune={tune!r} "
                "trains only weights of the long stage); leave --tune out or give end-to-end steps"
            )

    def _check_halves_projected(self) -> None:
        """With only weights of the long stage training (long_tune 'projections', 'adapters' or 'layers': weights
        that inputs of at most exact_length tokens never read), the halves' and the crops' terms train only if
        the halves they read are longer than exact_length T. A half holds (N - 2) // 2 + 2 tokens at
        long_length N, more than T from N = 2T on."""
        assert self.long_length is not None
        assert self.exact_length is not None
        half = (self.long_length - 2) // 2 + 2  # [CLS] + half the span's text + [SEP] (`halves`)
        for name in ("contrastive_weight", "crop_weight"):
            if getattr(self, name) > 0 and half <= self.exact_length:
                raise ValueError(
                    f"{name}={getattr(self, name)}: with long_tune={self.long_tune!r} its halves of {half} tokens "
                    f"are read exactly (exact_length={self.exact_length} >= {half}), by no weight that "
                    f"trains; set it to 0, lower --exact-length below {half}, raise --long-length to at least "
                    f"{2 * self.exact_length} or train shared weights (--long-tune tune)"
                )

    def _check_inputs(self) -> None:
        """The preflight's part (train/distill/preflight.py): the teacher's folder, a BERT / RoBERTa (or
        full-attention Linformer) model with a tokenizer (the student is saved with it); seq_len (default:
        the teacher's longest input) within its positions; the options against its config."""
        self.seq_len = check_teacher(self.teacher, self.seq_len)
        if self.long_length is not None and self.long_length <= self.seq_len:
            raise ValueError(
                f"long_length={self.long_length}: the long stage reads more than seq_len={self.seq_len} tokens"
            )
        if self.long_length is not None and self.exact_length is None:
            # the recommended long student: what the 512 stages read, it reads exactly, with their weights
            self.exact_length = self.seq_len
            self._check_exact_length()
        self._check_short_term()
        self.student_config()  # the options against the teacher's architecture, before any weight is read

    def _check_short_term(self) -> None:
        """With only weights of the long stage training and every input of seq_len read exactly, the short term
        (c) reads no weight that trains: its default is then 0, and a weight given is refused rather than
        computed for nothing."""
        assert self.seq_len is not None  # set by check_teacher
        exact = self.exact_length is not None and self.exact_length >= self.seq_len
        if self.long_length is None:
            return
        reads_nothing = self.long_tune in LONG_ONLY_TUNES and exact
        if self.short_weight is None:
            self.short_weight = 0.0 if reads_nothing else 1.0
            self._check_some_long_loss()
        if reads_nothing and self.short_weight > 0:
            raise ValueError(
                f"short_weight={self.short_weight}: with long_tune={self.long_tune!r} and exact_length="
                f"{self.exact_length} >= seq_len={self.seq_len}, the short term reads no weight that trains "
                "(short inputs are read exactly by weights the stage leaves alone); leave --short-weight out or set it to 0"
            )

    def _check_checkpoints(self) -> None:
        """Stages keep their checkpoints in output_dir/<stage>/; a new run needs an empty output_dir;
        stages_from is a finished run's folder, not this run's."""
        check_fresh_run(self.output_dir, self.resume)
        if self.stages_from is not None:
            check_stages_from(self.stages_from, self.output_dir)

    def conversion_options(self) -> dict[str, Any]:
        """The student's options at seq_len: exact_length is the long student's alone (`long_student`), since
        at seq_len it would make every input exact (full attention); left out, so the 512 stages' options
        (and a resume's comparison of them) are what they were before the option existed."""
        return {name: value for name, value in super().conversion_options().items() if name != "exact_length"}

    def student_config(self) -> LinformerConfig:
        """The student's LinformerConfig, from the teacher's config.json alone (ValueError names a bad option)."""
        return student_config(self.teacher, self.conversion_options())


def beside_the_teacher(config: DistillConfig) -> bool:
    """Whether the student's long layers sit beside the teacher's own weights (`--long-tune layers`,
    `--short-layers original`): the one condition of the card's reading note and of `read_by_original`."""
    return (
        config.long_length is not None and config.long_tune == "layers" and config.short_layers == "original"
    )


def read_by_original(config: DistillConfig) -> int | None:
    """exact_length where inputs of at most it, seq_len among them, are read by the teacher's own weights (long
    layers beside the teacher's: `short_layers` "original"); else None."""
    assert config.seq_len is not None  # the preflight's default
    if not beside_the_teacher(config):
        return None
    return config.exact_length if (config.exact_length or 0) >= config.seq_len else None
