"""`linformer distill`: a Linformer made from a pretrained encoder, keeping its quality by distillation.

    teacher  a BERT / RoBERTa model directory (as `convert` reads it; a sentence-transformers folder too)
             or a full-attention Linformer; run as a full-attention Linformer, which equals it exactly
             (models/convert.py), frozen
    student  the teacher converted with this run's Linformer options (k, sharing, window, global tokens)

Two stages, each optional (0 steps skips it), each reported (`fidelity`, below):

    attention transfer  only E and F train (every other weight is the teacher's); layer i of the student
                        gets the teacher's input to layer i's attention, x_i, and matches its output:
                            L_att = mean_i ||A_i^S(x_i) - A_i^T(x_i)||² / ||A_i^T(x_i)||²   (real tokens)
                        Layers are independent, so this is cheap, and its floor is what the chosen
                        attention can represent (LoLCATs' attention transfer).
    end to end          every weight (or LoRA adapters on query / key / value / dense, with E and F)
                        trains on the student's own forward pass:
                            L_e2e = mean_l ||h_l^S - h_l^T||² / ||h_l^T||²  (+ KL(p^T || p^S) on the
                            masked-LM logits when the teacher has a masked-LM head: CALD's losses)
                                    + embedding_weight (1 - cos(mean-pooled h_L^S, h_L^T))

Fidelity: the mean cosine between the student's and the teacher's sentence embeddings (mean pooling
over real tokens, normalised: sentence-transformers' pipeline) of held-out documents, at the start
(the drop-in conversion), after each stage; beside it the teacher's own reference, the mean cosine of
two *different* documents (a student at that level keeps nothing document-specific).

Data: `train` (pretrain's readers), one example per document truncated to seq_len tokens
(`examples="documents"`, the default), or packed into blocks of exactly seq_len tokens ("blocks", for
corpora of long documents); held-out documents (`validation`, one each, truncated to seq_len) for
fidelity. Documents are the default because a learned E trained at one length alone does not carry to
others: on all-MiniLM-L6-v2 (k = 128, w = 16, one global token), 100 steps of attention transfer on
blocks of 512 lowered the per-layer error from 0.27 to 0.19 yet the fidelity on reviews of every length
fell from 0.920 (the drop-in) to 0.833 (docs/reproduction/distill-minilm/). Each stage is a Hugging Face Trainer run in output_dir/<stage>/ (checkpoints,
resume, SIGTERM: train/guards.py); the final student, its tokenizer, a sentence-transformers folder's
pipeline files, metrics.json and a model card go to output_dir.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import torch
from torch import nn
from transformers import AutoTokenizer, DataCollatorWithPadding, PreTrainedModel, TrainingArguments, set_seed

from linformer_kit.models import LinformerForMaskedLM, LinformerModel, LinformerPreTrainedModel
from linformer_kit.models.convert import (
    SOURCE_TYPES,
    converter,
    is_projection_key,
    with_linformer_options,
)
from linformer_kit.models.loading import check_model_dir, longest_input, read_config_json
from linformer_kit.models.sentence_transformers_folder import (
    carry_sentence_transformers_files,
    sentence_embedding,
)
from linformer_kit.nn import LinformerSelfAttention, ShortInputs
from linformer_kit.nn.options import LinformerOptions, option_field
from linformer_kit.output_dir import saved_files
from linformer_kit.train.data import load_text, pack_blocks
from linformer_kit.train.guards import GuardedTrainer, guarded_run
from linformer_kit.train.model_fields import ConversionFields
from linformer_kit.train.publish import portable
from linformer_kit.train.training_arguments import (
    LinformerTrainingArguments,
    check_number,
    post_init_field,
    trainer_default,
)

logger = logging.getLogger(__name__)

Stage = Literal["attention", "end-to-end"]
STAGES: tuple[Stage, ...] = ("attention", "end-to-end")
Tune = Literal["all", "lora"]
Examples = Literal["documents", "blocks"]


@dataclass
class DistillConfig(ConversionFields, LinformerTrainingArguments):
    """Everything `distill` needs: the teacher, the text, the student's Linformer options (`ConversionFields`,
    train/model_fields.py), the stages.

    A `TrainingArguments` subclass, as `pretrain`'s: every Trainer field is a flag; `learning_rate` is the
    end-to-end stage's, `attention_learning_rate` the attention-transfer stage's, and each stage runs its
    own number of steps (`max_steps` is not used). ValueError names a bad value, before any work.
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
    text_column: str = field(default="text", metadata={"help": "field holding the text in JSON lines"})
    max_train_documents: int | None = field(
        default=None, metadata={"help": "use the first N train documents"}
    )
    max_eval_documents: int = field(
        default=256, metadata={"help": "fidelity on the first N held-out documents"}
    )
    seq_len: int | None = field(
        default=None, metadata={"help": "block length n (default: the teacher's longest input)"}
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
        check_number("embedding_weight", self.embedding_weight, 0)
        check_number("max_eval_documents", self.max_eval_documents, 1, integer=True)
        check_number("max_train_documents", self.max_train_documents, 1, integer=True, optional=True)
        check_number("seq_len", self.seq_len, 2, integer=True, optional=True)
        if self.attention_steps and (
            self.projected_length is None or self.projection in ("mean", "max", "random")
        ):
            raise ValueError(
                f"attention_steps={self.attention_steps}: attention transfer trains E and F, and "
                f"projection={self.projection!r} (projected_length={self.projected_length}) has none to train; "
                "set --attention-steps 0"
            )

    def _check_inputs(self) -> None:
        """The teacher's folder: a BERT / RoBERTa (or full-attention Linformer) model, with a tokenizer (the student is saved with it); seq_len
        (default: the teacher's longest input) within its positions; the options against its config."""
        check_model_dir(self.teacher, "teacher")
        longest = longest_input(read_config_json(self.teacher, "teacher"))
        if self.seq_len is None:
            self.seq_len = longest
        if self.seq_len > longest:
            raise ValueError(
                f"seq_len={self.seq_len} is longer than the teacher's longest input {longest}: distil at "
                f"<= {longest}, then extend the student (linformer extend STUDENT DST --max-length {self.seq_len})"
            )
        self.student_config()  # the options against the teacher's architecture, before any weight is read
        check_model_dir(self.teacher, "teacher", tokenizer=True)  # the student is saved with it

    def _check_checkpoints(self) -> None:
        """Stages keep their checkpoints in output_dir/<stage>/; a new run needs an empty output_dir."""
        out = Path(self.output_dir)
        held = saved_files(out) + [stage for stage in STAGES if (out / stage).exists()]
        if held and not self.resume:
            raise ValueError(
                f"output_dir {self.output_dir!r} already holds {', '.join(held)}: pass --resume to continue "
                "that run, or choose another --output-dir"
            )

    def student_config(self):
        """The student's LinformerConfig, from the teacher's config.json alone (ValueError names a bad option)."""
        from transformers import AutoConfig

        from linformer_kit.models.convert import converted_config
        from linformer_kit.train.init_from import target_config

        source = AutoConfig.from_pretrained(self.teacher)
        if source.model_type == "linformer":
            if any(k is not None for k in source.projected_lengths()):
                raise ValueError(
                    f"teacher: {self.teacher!r} is a Linformer with projected_length={source.projected_length}; "
                    "the teacher must attend fully (projected_length none), as the model it stands for"
                )
            return target_config(source, **self.conversion_options())
        if source.model_type not in SOURCE_TYPES:
            raise ValueError(
                f"teacher: {self.teacher!r} is a {source.model_type!r} model; expected linformer, "
                f"{', '.join(SOURCE_TYPES)}"
            )
        return converted_config(source, **self.conversion_options())


@dataclass
class DistillResult:
    output_dir: str
    # mean cosine of student and teacher embeddings: {"drop-in": c0, "attention": c1, "end-to-end": c2}
    fidelity: dict[str, float]
    different_documents: float  # the teacher's mean cosine between two different held-out documents
    stage_losses: dict[str, float]  # the last logged training loss of each stage
    stage_seconds: dict[str, float]
    eval_documents: int
    train_blocks: int
    num_parameters: int


# --- teacher and student ---------------------------------------------------------------------------


def load_teacher(path: str) -> LinformerPreTrainedModel:
    """The teacher as a full-attention Linformer (equal to it: models/convert.py), eval mode, frozen."""
    config = read_config_json(path, "teacher")
    if config["model_type"] == "linformer":
        masked_lm = any(a.endswith("ForMaskedLM") for a in config.get("architectures") or [])
        model = (LinformerForMaskedLM if masked_lm else LinformerModel).from_pretrained(path)
    else:
        model = converter(config["model_type"])(path, projected_length=None)
    model.eval().requires_grad_(False)
    return model


def student_from(teacher: LinformerPreTrainedModel, config: DistillConfig) -> LinformerPreTrainedModel:
    """The teacher with this run's Linformer options: every weight copied, E and F new (window start)."""
    student, _ = with_linformer_options(teacher, **config.conversion_options())
    if student is teacher:  # the options were the teacher's own: a copy to train
        student = type(teacher)(teacher.config)
        student.load_state_dict(teacher.state_dict())
    student.config.short_inputs = config.short_inputs
    for layer in _attention_layers(student):
        layer.short_inputs = config.short_inputs
    return student.train().requires_grad_(True)


def _attention_layers(model: nn.Module) -> list[LinformerSelfAttention]:
    return [m for m in model.modules() if isinstance(m, LinformerSelfAttention)]


# --- losses ----------------------------------------------------------------------------------------


@contextmanager
def attention_io(model: nn.Module) -> Iterator[list[tuple]]:
    """Record (x, key_padding_mask, output) of every Linformer attention layer of `model`, in order."""
    records: list[tuple] = []

    def hook(module, args, output) -> None:
        records.append((args[0], args[1] if len(args) > 1 else None, output))

    handles = [layer.register_forward_hook(hook) for layer in _attention_layers(model)]
    try:
        yield records
    finally:
        for handle in handles:
            handle.remove()


def relative_error(got: torch.Tensor, want: torch.Tensor, real: torch.Tensor) -> torch.Tensor:
    """||got - want||² / ||want||² over the real tokens: (b, n, D), (b, n, D), (b, n) bool -> scalar."""
    weight = real[..., None].to(want.dtype)
    return ((got - want).square() * weight).sum() / (want.square() * weight).sum().clamp_min(1e-12)


def attention_transfer_loss(student: nn.Module, teacher: nn.Module, inputs: dict) -> torch.Tensor:
    """L_att of the module docstring: each student layer on the teacher's input to that layer."""
    with torch.no_grad(), attention_io(teacher) as records:
        teacher(input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"])
    real = inputs["attention_mask"].bool()
    errors = [
        relative_error(layer(x, mask), want, real)
        for layer, (x, mask, want) in zip(_attention_layers(student), records)
    ]
    return torch.stack(errors).mean()


def end_to_end_loss(
    student: nn.Module, teacher: nn.Module, inputs: dict, logits_weight: float, embedding_weight: float = 0.0
) -> torch.Tensor:
    """L_e2e of the module docstring: hidden states of every layer, masked-LM logits where there are any,
    and 1 - cos of the mean-pooled last hidden states (the sentence embedding) with `embedding_weight`."""
    batch = {"input_ids": inputs["input_ids"], "attention_mask": inputs["attention_mask"]}
    with torch.no_grad():
        want = teacher(**batch, output_hidden_states=True)
    got = student(**batch, output_hidden_states=True)
    real = inputs["attention_mask"].bool()
    errors = [relative_error(s, t, real) for s, t in zip(got.hidden_states[1:], want.hidden_states[1:])]
    loss = torch.stack(errors).mean()
    if getattr(want, "logits", None) is not None and logits_weight > 0:
        log_p, log_q = want.logits[real].log_softmax(-1), got.logits[real].log_softmax(-1)
        loss = loss + logits_weight * (log_p.exp() * (log_p - log_q)).sum(-1).mean()
    if embedding_weight > 0:
        # 1 - cos as half the squared distance of the unit vectors: exactly 0, with a zero gradient, when equal
        unit = [
            sentence_embedding(h[-1], real) for h in (got.hidden_states, want.hidden_states)
        ]  # (b, D) each
        loss = loss + embedding_weight * 0.5 * (unit[0] - unit[1]).square().sum(-1).mean()
    return loss


class DistillTrainer(GuardedTrainer):
    """`Trainer` whose loss is one stage's distillation loss against a frozen teacher (not saved with it)."""

    def __init__(
        self, *args, teacher: nn.Module, stage: Stage, logits_weight: float, embedding_weight: float = 0.0,
        **kwargs,
    ) -> None:  # fmt: skip
        super().__init__(*args, **kwargs)
        self.teacher, self.stage, self.logits_weight = teacher.to(self.args.device), stage, logits_weight
        self.embedding_weight = embedding_weight

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        if self.stage == "attention":
            loss = attention_transfer_loss(model, self.teacher, inputs)
        else:
            loss = end_to_end_loss(model, self.teacher, inputs, self.logits_weight, self.embedding_weight)
        return (loss, None) if return_outputs else loss


# --- fidelity ----------------------------------------------------------------------------------------


@torch.no_grad()
def sentence_embeddings(model: nn.Module, batches: list[dict]) -> torch.Tensor:
    """Mean of the last hidden states over real tokens, normalised (sentence-transformers' pipeline): (N, D)."""
    base = getattr(model, "base_model", model)
    base = getattr(base, "linformer", base)
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    out = []
    for batch in batches:
        batch = {key: value.to(device) for key, value in batch.items()}
        hidden = base(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).last_hidden_state
        out.append(sentence_embedding(hidden, batch["attention_mask"]).cpu())
    model.train(was_training)
    return torch.cat(out)


def fidelity(student: nn.Module, teacher_embeddings: torch.Tensor, batches: list[dict]) -> float:
    """Mean cosine between the student's and the teacher's embeddings of the same documents."""
    return float((sentence_embeddings(student, batches) * teacher_embeddings).sum(-1).mean())


# --- the run ---------------------------------------------------------------------------------------


def distill(config: DistillConfig) -> DistillResult:
    """Distil `config.teacher` into a Linformer as configured; save it with its tokenizer and metrics.json."""
    return guarded_run(config, DistillResult, lambda: _distill(config))


def _distill(config: DistillConfig) -> DistillResult:
    tokenizer = AutoTokenizer.from_pretrained(config.teacher)
    train_blocks, eval_batches = _data(config, tokenizer)
    set_seed(config.seed)
    teacher = load_teacher(config.teacher)
    student = student_from(teacher, config)
    reference = sentence_embeddings(teacher, eval_batches)
    different = float((reference[:-1] * reference[1:]).sum(-1).mean()) if len(reference) > 1 else float("nan")
    scores = {"drop-in": fidelity(student, reference, eval_batches)}
    logger.info(
        f"distill: {_describe(student)}; drop-in fidelity {scores['drop-in']:.4f} (teacher, two different "
        f"documents: {different:.4f}); {len(train_blocks):,} "
        f"{'blocks of' if config.examples == 'blocks' else 'documents of at most'} {config.seq_len} tokens"
    )
    losses: dict[str, float] = {}
    seconds: dict[str, float] = {}
    for stage, steps in zip(STAGES, (config.attention_steps, config.end_to_end_steps)):
        if steps == 0:
            continue
        start = time.perf_counter()
        student, losses[stage] = _run_stage(config, stage, steps, student, teacher, train_blocks, tokenizer)
        seconds[stage] = time.perf_counter() - start
        scores[stage] = fidelity(student, reference, eval_batches)
        logger.info(
            f"distill: after {stage} ({steps} steps, {seconds[stage]:.0f} s): fidelity {scores[stage]:.4f}"
        )
    result = DistillResult(
        output_dir=config.output_dir, fidelity=scores, different_documents=different, stage_losses=losses,
        stage_seconds=seconds, eval_documents=len(reference), train_blocks=len(train_blocks),
        num_parameters=student.num_parameters(),
    )  # fmt: skip
    _save(config, student, tokenizer, result)
    return result


def _data(config: DistillConfig, tokenizer) -> tuple:
    """Train blocks of seq_len tokens and held-out documents as padded batches (fidelity)."""
    texts = load_text(config.train, config.text_column, "train")
    if config.max_train_documents is not None and len(texts) > config.max_train_documents:
        texts = texts.select(range(config.max_train_documents))
    if config.validation:
        held_out = load_text(config.validation, config.text_column, "validation", split="validation")
    else:  # the last documents, not trained on
        count = min(config.max_eval_documents, max(1, len(texts) // 10))
        held_out, texts = (
            texts.select(range(len(texts) - count, len(texts))),
            texts.select(range(len(texts) - count)),
        )
    assert config.seq_len is not None  # the preflight's default: the teacher's longest input
    if config.examples == "blocks":
        blocks = pack_blocks(texts, tokenizer, config.seq_len, "pack train blocks")
    else:
        blocks = texts.map(
            lambda batch: tokenizer(batch["text"], truncation=True, max_length=config.seq_len),
            batched=True, remove_columns=texts.column_names, desc="tokenize train documents",
        )  # fmt: skip
        blocks = blocks.filter(lambda row: len(row["input_ids"]) > 2)  # more than [CLS] [SEP]
    if len(blocks) == 0:
        raise ValueError(
            f"train: the text makes no {'block' if config.examples == 'blocks' else 'example'} of "
            f"seq_len={config.seq_len} tokens; add text or lower --seq-len"
        )
    documents = held_out["text"][: config.max_eval_documents]
    batch = config.per_device_eval_batch_size or config.per_device_train_batch_size
    eval_batches = []
    for i in range(0, len(documents), batch):
        encoded = tokenizer(
            documents[i : i + batch], truncation=True, max_length=config.seq_len, padding=True
        )
        eval_batches.append({key: torch.tensor(value) for key, value in encoded.items()})
    keep = ["input_ids", "attention_mask"]
    blocks = blocks.map(lambda row: {"attention_mask": [1] * len(row["input_ids"])})
    return blocks.select_columns(keep), eval_batches


def _run_stage(config, stage: Stage, steps: int, student, teacher, blocks, tokenizer):
    """One stage in output_dir/<stage>/: the trained student (a finished stage's saved one on resume)."""
    folder = Path(config.output_dir) / stage
    marker = folder / "stage.json"  # written last: a stage without it did not finish
    wanted = _stage_options(config, stage, steps)
    if marker.is_file():  # finished before a resume: reused only if it ran with these options
        done = json.loads(marker.read_text())
        if done.get("options") != wanted:
            raise ValueError(
                f"resume: {folder} finished with other options ({done.get('options')}) than this run's "
                f"({wanted}); choose another --output-dir"
            )
        student.load_state_dict(type(student).from_pretrained(folder).state_dict())
        return student, done["loss"]
    model = _trainable(student, stage, config)
    args = _stage_arguments(config, stage, steps, folder)
    trainer = DistillTrainer(
        model=model, args=args, train_dataset=blocks, data_collator=DataCollatorWithPadding(tokenizer),
        teacher=teacher, stage=stage, logits_weight=config.logits_weight, embedding_weight=config.embedding_weight,
    )  # fmt: skip
    resume = _last_checkpoint(folder) if config.resume else None
    output = trainer.train(resume_from_checkpoint=resume)
    merge = getattr(model, "merge_and_unload", None)  # LoRA: the adapters merged into the weights
    student = merge() if merge is not None else model
    losses = [log["loss"] for log in trainer.state.log_history if "loss" in log]
    loss = losses[-1] if losses else output.training_loss
    student.save_pretrained(folder)
    marker.write_text(json.dumps({"loss": loss, "steps": steps, "options": wanted}))
    return student, loss


def _stage_options(config: DistillConfig, stage: Stage, steps: int) -> dict:
    """What a finished stage must have run with for a resume to reuse it (JSON-comparable)."""
    options = {**config.conversion_options(), "steps": steps, "short_inputs": config.short_inputs,
               "examples": config.examples, "seq_len": config.seq_len}  # fmt: skip
    if stage == "attention":
        return {**options, "learning_rate": config.attention_learning_rate}
    return {**options, "learning_rate": config.learning_rate, "tune": config.tune,
            "embedding_weight": config.embedding_weight, "logits_weight": config.logits_weight}  # fmt: skip


def _trainable(student: PreTrainedModel, stage: Stage, config: DistillConfig) -> nn.Module:
    """What trains: E and F only (attention transfer), every weight, or LoRA adapters plus E and F."""
    if stage == "attention":
        for name, parameter in student.named_parameters():
            parameter.requires_grad_(is_projection_key(name))
        return student
    student.requires_grad_(True)
    if config.tune == "all":
        return student
    import peft  # the lora extra

    # E and F train whole and are saved in PEFT's checkpoints (modules_to_save), so a resume keeps them
    projections = sorted(
        {name.rsplit(".", 2)[-2] for name, _ in student.named_parameters() if is_projection_key(name)}
    )
    lora = peft.LoraConfig(r=config.lora_rank, lora_alpha=2 * config.lora_rank, modules_to_save=projections,
                           target_modules=["query", "key", "value", "dense"])  # fmt: skip
    return peft.get_peft_model(student, lora)


def _stage_arguments(config: DistillConfig, stage: Stage, steps: int, folder: Path) -> TrainingArguments:
    """The Trainer's arguments of one stage: this run's, with the stage's steps, learning rate and folder."""
    names = {f.name for f in dataclasses.fields(TrainingArguments) if f.init}
    values = {name: getattr(config, name) for name in names}
    values.update(
        output_dir=str(folder), max_steps=steps, remove_unused_columns=False, eval_strategy="no",
        learning_rate=config.attention_learning_rate if stage == "attention" else config.learning_rate,
        resume_from_checkpoint=None, report_to=[],
    )  # fmt: skip
    return TrainingArguments(**values)


def _last_checkpoint(folder: Path) -> str | None:
    from linformer_kit.train.checkpoints import last_complete_checkpoint

    if not folder.is_dir():
        return None
    checkpoint, _ = last_complete_checkpoint(folder)
    return None if checkpoint is None else str(checkpoint)


def _describe(model: PreTrainedModel) -> str:
    c = model.config
    options = LinformerOptions(projected_length=c.projected_length, local_window=c.local_window)
    return (
        f"student k={options.projected_length} window={options.local_window} global_tokens={c.global_tokens} "
        f"{c.sharing} ({model.num_parameters() / 1e6:.2f} M parameters)"
    )


def _save(config: DistillConfig, student: PreTrainedModel, tokenizer, result: DistillResult) -> None:
    out = Path(config.output_dir)
    student.save_pretrained(out)
    tokenizer.model_max_length = min(tokenizer.model_max_length, student.config.max_seq_len)
    tokenizer.save_pretrained(out)
    carry_sentence_transformers_files(config.teacher, out, student.config.max_seq_len, None)
    metrics = portable({**dataclasses.asdict(result), "config": config.to_dict()})
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2), encoding="utf-8")
    (out / "README.md").write_text(_card(config, result), encoding="utf-8")


def _card(config: DistillConfig, result: DistillResult) -> str:
    rows = "".join(f"| {stage} | {score:.4f} |\n" for stage, score in result.fidelity.items())
    return (
        "---\nlibrary_name: transformers\npipeline_tag: feature-extraction\ntags:\n- linformer\n"
        "- linformer-kit\n- distillation\n---\n"
        f"# Linformer distilled from `{Path(config.teacher).name}`\n\n"
        f"Made by `linformer distill` (linformer-kit): k = {config.projected_length}, local window "
        f"{config.local_window}, global tokens {config.global_tokens}, sharing {config.sharing!r}, "
        f"{'blocks of' if config.examples == 'blocks' else 'documents of at most'} {config.seq_len} tokens.\n\n"
        "Fidelity (mean cosine of this model's and the teacher's sentence embeddings, held-out documents):\n\n"
        f"| stage | fidelity |\n|---|---|\n{rows}\n"
        f"Two different documents under the teacher: {result.different_documents:.4f}.\n\n"
        "Load with `SentenceTransformer(path)` (a sentence-transformers teacher's pipeline is carried) or\n"
        "`AutoModel.from_pretrained(path, trust_remote_code=True)`; every setting is in `metrics.json`.\n"
    )
