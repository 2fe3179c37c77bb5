"""The pieces of a distillation run's Trainers: teacher, student, the stages, what trains, the Trainer.

load_teacher / student_from  the frozen full-attention teacher; the student, its copy with this run's
                             Linformer options
StagePlan                    one stage: its folder, loss, steps, learning rate, the options a resume checks
attention_stage / end_to_end_stage  the two stages of `distill`, as the config sets them
run_stage                    one stage, one Trainer of its own in output_dir/<stage>/ (a finished one is
                             reused on resume)
DistillTrainer               `Trainer` whose loss is a stage's (train/distill/losses.py)
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast

import datasets
import torch
from torch import nn
from transformers import DataCollatorWithPadding, PreTrainedTokenizerBase, TrainingArguments

from linformer_kit.models import LinformerForMaskedLM, LinformerModel, LinformerPreTrainedModel
from linformer_kit.models.convert import converter, is_projection_key, with_linformer_options
from linformer_kit.models.loading import head_of, read_config_json
from linformer_kit.train.distill.config import DistillConfig, Stage, Tune
from linformer_kit.train.distill.losses import attention_layers, attention_transfer_loss, end_to_end_loss
from linformer_kit.train.guards import GuardedTrainer

# what a stage trains (`trainable`): E and F alone, or what `tune` names
Trains = Literal["projections", "adapters", "layers", Tune]

# --- teacher and student ---------------------------------------------------------------------------


def load_teacher(path: str) -> LinformerPreTrainedModel:
    """The teacher as a full-attention Linformer (equal to it: models/convert.py), eval mode, frozen."""
    config = read_config_json(path, "teacher")
    model: LinformerPreTrainedModel
    if config["model_type"] == "linformer":
        masked_lm = head_of(config) == "ForMaskedLM"
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
    for layer in attention_layers(student):
        layer.short_inputs = config.short_inputs
    return student.train().requires_grad_(True)


# --- the stages ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StagePlan:
    """One stage of a run: a Trainer of its own in output_dir/<name>/ (checkpoints, resume, SIGTERM:
    train/guards.py), its loss, steps and learning rate."""

    name: str  # its folder under output_dir and its key in DistillResult's fidelity, losses and seconds
    loss: Stage  # "attention": L_att; "end-to-end": L_e2e; "long": L_long (train/distill/long.py)
    # "projections": E and F alone; "adapters": E, F and long adapters; "layers": the long layers; "all": every
    # weight; "lora": LoRA adapters plus E and F
    trains: Trains
    steps: int  # 0: the stage is skipped
    learning_rate: float
    options: dict[str, Any]  # what a finished stage must have run with for a resume to reuse it (JSON)
    trainer: Callable[..., DistillTrainer] | None = None  # None: DistillTrainer
    collator: Callable[[PreTrainedTokenizerBase], Any] = DataCollatorWithPadding
    batch_size: int | None = None  # None: per_device_train_batch_size


def attention_stage(config: DistillConfig) -> StagePlan:
    """Attention transfer as configured (`attention_steps`, `attention_learning_rate`)."""
    steps, rate = config.attention_steps, config.attention_learning_rate
    return StagePlan(
        "attention", "attention", "projections", steps, rate,
        {**_run_options(config, steps), "learning_rate": rate},
    )  # fmt: skip


def end_to_end_stage(config: DistillConfig) -> StagePlan:
    """End to end as configured (`end_to_end_steps`, `learning_rate`, `tune`, the loss weights)."""
    steps, rate = config.end_to_end_steps, config.learning_rate
    options = {**_run_options(config, steps), "learning_rate": rate, "tune": config.tune,
               "embedding_weight": config.embedding_weight, "logits_weight": config.logits_weight}  # fmt: skip
    return StagePlan("end-to-end", "end-to-end", config.tune, steps, rate, options)


def _run_options(config: DistillConfig, steps: int) -> dict[str, Any]:
    """The options every stage's resume compares: the student's, its steps and examples (and, added by
    `run_stage`, which knows the student, attention_dropout where it is not the student's own)."""
    options = {**config.conversion_options(), "steps": steps, "short_inputs": config.short_inputs,
               "examples": config.examples, "seq_len": config.seq_len}  # fmt: skip
    # left out at the default: a stage run before the option resumes as it was
    if config.stage_text != "train":
        options.update(stage_text=config.stage_text, long_train=config.long_train)
    return options


def run_stage(
    config: DistillConfig,
    stage: StagePlan,
    student: LinformerPreTrainedModel,
    teacher: LinformerPreTrainedModel,
    train: datasets.Dataset,
    tokenizer: PreTrainedTokenizerBase,
) -> tuple[LinformerPreTrainedModel, float]:
    """One stage in output_dir/<stage>/: the trained student and the stage's last logged loss (a finished
    stage's saved student and loss on resume, if it ran with these options)."""
    stage = _with_dropout_option(stage, config.attention_dropout, student)
    folder = Path(config.output_dir) / stage.name
    for done_in in finished_folders(config, stage):  # reused only if it ran with these options
        done = json.loads((done_in / "stage.json").read_text())
        if done.get("options") != stage.options:
            raise ValueError(
                f"{done_in} finished with other options ({done.get('options')}) than this run's "
                f"({stage.options}); choose another --output-dir"
                + (" or --stages-from" if config.stages_from else "")
                + (
                    " (with --long-length the 512 stages train on half windows of the long text by default: "
                    "--stage-text train gives a 512 student trained on --train alone)"
                    if config.long_length is not None and config.stage_text == "train+long"
                    else ""
                )
                + (
                    f" (a stage run before --attention-dropout trained at the teacher's "
                    f"{student.config.attention_probs_dropout_prob}: give --attention-dropout "
                    f"{student.config.attention_probs_dropout_prob} to reuse it)"
                    if "attention_dropout" in stage.options
                    and "attention_dropout" not in done.get("options", {})
                    else ""
                )
            )
        student.load_state_dict(type(student).from_pretrained(done_in).state_dict())
        return student, done["loss"]
    _claim(folder, stage, config.resume)
    model = trainable(student, stage.trains, config.lora_rank)
    trainer = (stage.trainer or DistillTrainer)(
        model=model, args=stage_arguments(config, stage, folder), train_dataset=train,
        data_collator=stage.collator(tokenizer), teacher=teacher, stage=stage.loss,
        logits_weight=config.logits_weight, embedding_weight=config.embedding_weight,
    )  # fmt: skip
    resume = last_checkpoint(folder) if config.resume else None
    with attention_dropout(student, config.attention_dropout):
        output = trainer.train(resume_from_checkpoint=resume)
    merge = getattr(model, "merge_and_unload", None)  # LoRA: the adapters merged into the weights
    trained = cast(LinformerPreTrainedModel, merge() if merge is not None else model)
    losses = [log["loss"] for log in trainer.state.log_history if "loss" in log]
    loss = losses[-1] if losses else output.training_loss
    trained.save_pretrained(folder)
    # written last: a stage without it did not finish
    (folder / "stage.json").write_text(
        json.dumps({"loss": loss, "steps": stage.steps, "options": stage.options})
    )
    return trained, loss


def _with_dropout_option(stage: StagePlan, dropout: float, student: LinformerPreTrainedModel) -> StagePlan:
    """`stage` whose options a resume compares hold `attention_dropout`, left out where it is the student's
    own (the teacher's): a stage run before the option existed resumes as it was."""
    if dropout == student.config.attention_probs_dropout_prob:
        return stage
    return dataclasses.replace(stage, options={**stage.options, "attention_dropout": dropout})


@contextmanager
def attention_dropout(model: nn.Module, dropout: float) -> Iterator[None]:
    """Every Linformer attention layer of `model` (long layers too) drops its weights with `dropout` inside
    the block, and with its own after: the config, and so the saved student, keeps the teacher's."""
    layers = attention_layers(model)
    own = [layer.dropout for layer in layers]
    for layer in layers:
        layer.dropout = dropout
    try:
        yield
    finally:
        for layer, p in zip(layers, own, strict=True):
            layer.dropout = p


def finished_folders(config: DistillConfig, stage: StagePlan) -> list[Path]:
    """Where `stage` finished before (its stage.json is written last): output_dir/<stage>/ on a resume, else a
    512 stage of the run `stages_from` names (the long stage always trains in output_dir)."""
    places = [Path(config.output_dir)]
    if config.stages_from is not None and stage.name != "long":
        places.append(Path(config.stages_from))
    return [place / stage.name for place in places if (place / stage.name / "stage.json").is_file()][:1]


def _claim(folder: Path, stage: StagePlan, resume: bool) -> None:
    """Write the stage's options into its folder before its first step; a resume whose options differ from
    the ones its checkpoints ran with is refused (a killed run's checkpoint is never continued silently)."""
    started = folder / "options.json"
    options = json.loads(json.dumps(stage.options))  # as JSON reads it back (tuples become lists)
    if resume and started.is_file() and json.loads(started.read_text()) != options:
        raise ValueError(
            f"resume: {folder}'s checkpoints ran with other options ({started.read_text()}) than this run's "
            f"({options}); run with those, or choose another --output-dir"
        )
    folder.mkdir(parents=True, exist_ok=True)
    started.write_text(json.dumps(options))


def trainable(student: LinformerPreTrainedModel, trains: Trains, lora_rank: int) -> nn.Module:
    """What trains: E and F alone, E and F with the long adapters (nn/long_adapters.py), the long layers
    (nn/long_layers.py, their own E and F among them), every weight, or LoRA adapters (rank `lora_rank`) plus
    E and F."""
    if trains == "layers":  # (sharing="layerwise": the one E and F too, which only projected rows read)
        for name, parameter in student.named_parameters():
            parameter.requires_grad_(".long_layer." in name or "encoder.projection." in name)
        return student
    if trains in ("projections", "adapters"):
        for name, parameter in student.named_parameters():
            parameter.requires_grad_(
                is_projection_key(name) or (trains == "adapters" and ".long_adapters." in name)
            )
        return student
    student.requires_grad_(True)
    if trains == "all":
        return student
    import peft  # the lora extra

    from linformer_kit.nn.long_adapters import LORA_SCALE

    # E and F train whole and are saved in PEFT's checkpoints (modules_to_save), so a resume keeps them
    projections = sorted(
        {name.rsplit(".", 2)[-2] for name, _ in student.named_parameters() if is_projection_key(name)}
    )
    lora = peft.LoraConfig(r=lora_rank, lora_alpha=LORA_SCALE * lora_rank, modules_to_save=projections,
                           target_modules=["query", "key", "value", "dense"])  # fmt: skip
    return peft.get_peft_model(student, lora)


def stage_arguments(config: DistillConfig, stage: StagePlan, folder: Path) -> TrainingArguments:
    """The Trainer's arguments of one stage: this run's, with the stage's steps, learning rate and folder."""
    names = {f.name for f in dataclasses.fields(TrainingArguments) if f.init}
    values = {name: getattr(config, name) for name in names}
    values.update(
        output_dir=str(folder), max_steps=stage.steps, remove_unused_columns=False, eval_strategy="no",
        learning_rate=stage.learning_rate, resume_from_checkpoint=None, report_to=[],
        per_device_train_batch_size=stage.batch_size or config.per_device_train_batch_size,
    )  # fmt: skip
    return TrainingArguments(**values)


def last_checkpoint(folder: Path) -> str | None:
    """The newest complete checkpoint-* of a stage's folder (None: none, or no folder yet)."""
    from linformer_kit.train.checkpoints import last_complete_checkpoint

    if not folder.is_dir():
        return None
    checkpoint, _ = last_complete_checkpoint(folder)
    return None if checkpoint is None else str(checkpoint)


class DistillTrainer(GuardedTrainer):
    """`Trainer` whose loss is one stage's distillation loss against a frozen teacher (not saved with it)."""

    def __init__(
        self, *args: Any, teacher: nn.Module, stage: Stage, logits_weight: float, embedding_weight: float = 0.0,
        **kwargs: Any,
    ) -> None:  # fmt: skip
        super().__init__(*args, **kwargs)
        self.teacher, self.stage, self.logits_weight = teacher.to(self.args.device), stage, logits_weight
        self.embedding_weight = embedding_weight

    def compute_loss(
        self,
        model: nn.Module,
        inputs: dict[str, torch.Tensor | Any],
        return_outputs: bool = False,
        num_items_in_batch: torch.Tensor | int | None = None,
    ) -> torch.Tensor | tuple[torch.Tensor, Any]:
        loss = self.stage_loss(model, inputs)
        return (loss, None) if return_outputs else loss

    def stage_loss(self, model: nn.Module, inputs: dict[str, torch.Tensor | Any]) -> torch.Tensor:
        """The stage's loss on one batch (a subclass's stage overrides this alone)."""
        if self.stage == "attention":
            return attention_transfer_loss(model, self.teacher, inputs)
        return end_to_end_loss(model, self.teacher, inputs, self.logits_weight, self.embedding_weight)
