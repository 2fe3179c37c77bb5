"""`linformer distill`: a Linformer made from a pretrained encoder, keeping its quality by distillation.

    teacher  a BERT / RoBERTa model directory (as `convert` reads it; a sentence-transformers folder too)
             or a full-attention Linformer; run as a full-attention Linformer, which equals it exactly
             (models/convert.py), frozen
    student  the teacher converted with this run's Linformer options (k, sharing, window, global tokens)

Two stages, each optional (0 steps skips it), each reported (`fidelity`, below); their losses are
train/distill/losses.py's:

    attention transfer  only E and F train (every other weight is the teacher's); layer i of the student
                        gets the teacher's input to layer i's attention, x_i, and matches its output:
                            L_att = mean_i ||A_i^S(x_i) - A_i^T(x_i)||² / ||A_i^T(x_i)||²   (real tokens)
    end to end          every weight (or LoRA adapters on query / key / value / dense, with E and F)
                        trains on the student's own forward pass:
                            L_e2e = mean_l ||h_l^S - h_l^T||² / ||h_l^T||²  (+ KL(p^T || p^S) on the
                            masked-LM logits when the teacher has a masked-LM head: CALD's losses)
                                    + embedding_weight (1 - cos(mean-pooled h_L^S, h_L^T))

Fidelity (models/embedding.py): the mean cosine between the student's and the teacher's sentence
embeddings (mean pooling over real tokens, normalised: sentence-transformers' pipeline) of held-out
documents, each truncated to seq_len, at the start (the drop-in conversion) and after each stage; beside
it the teacher's own reference, the mean cosine of two *different* documents (a student at that level
keeps nothing document-specific).

Data (train/distill/data.py): `train`, one example per document truncated to seq_len tokens (the
default) or packed into blocks of exactly seq_len tokens; held-out documents (`validation`, or the last
train documents) for fidelity. Each stage is a Hugging Face Trainer run of its own in output_dir/<stage>/
(checkpoints, resume, SIGTERM: train/guards.py); the final student, its tokenizer, a sentence-transformers
folder's pipeline files, metrics.json and a model card go to output_dir.

This module is the run; the package, `linformer_kit.train.distill`, re-exports its `__all__` (the
pieces' public names among them). The pieces, beside it in train/distill/:

    train/distill/config.py       DistillConfig: the options, their values checked on construction
    train/distill/preflight.py    the teacher's folder and output_dir, checked at the start of the run
    train/distill/data.py         train examples, held-out documents, the long stage's text
    train/distill/losses.py       L_att, L_e2e
    train/distill/trainer.py      teacher, student, the stages (StagePlan, run_stage), DistillTrainer
    train/distill/report.py       DistillResult, the saved student (metrics.json, model card)
    train/distill/long.py         the long stage (`long_length`): the student extended and trained long
    train/distill/long_losses.py  its loss, L_long: the window, halves, short and crops terms
    train/distill/verdict.py      after it, its verdict: the long student against the teacher's chunks on the
                                  halves of held-out documents (`verdict_pairs`)
"""

from __future__ import annotations

import functools
import logging
import time
from typing import Any

from transformers import AutoTokenizer, set_seed

from linformer_kit.bench.memory import peak_rss
from linformer_kit.models.embedding import different_documents, embed, fidelity
from linformer_kit.train.distill.config import STAGES, DistillConfig, Examples, Stage, Tune, read_by_original
from linformer_kit.train.distill.data import fidelity_texts, load_data, long_text, stage_examples
from linformer_kit.train.distill.long import run_long_stage
from linformer_kit.train.distill.losses import (
    attention_io,
    attention_transfer_loss,
    end_to_end_loss,
    relative_error,
)
from linformer_kit.train.distill.report import DistillResult, describe_student, save_student
from linformer_kit.train.distill.trainer import (
    DistillTrainer,
    StagePlan,
    attention_stage,
    end_to_end_stage,
    finished_folders,
    load_teacher,
    run_stage,
    student_from,
)
from linformer_kit.train.distill.verdict import long_reading, reading_line
from linformer_kit.train.guards import guarded_run

__all__ = [
    "STAGES",
    "DistillConfig",
    "DistillResult",
    "DistillTrainer",
    "Examples",
    "Stage",
    "StagePlan",
    "Tune",
    "attention_io",
    "attention_transfer_loss",
    "distill",
    "end_to_end_loss",
    "load_teacher",
    "relative_error",
    "stages",
    "student_from",
]

logger = logging.getLogger("linformer_kit.train.distill")  # the run's logger: its lines keep their name


def distill(config: DistillConfig) -> DistillResult:
    """Distil `config.teacher` into a Linformer as configured; save it with its tokenizer and metrics.json."""
    return guarded_run(config, DistillResult, lambda: _distill(config))


def stages(config: DistillConfig) -> list[StagePlan]:
    """This run's stages, in the order they train the student (a stage of 0 steps is skipped)."""
    return [stage for stage in (attention_stage(config), end_to_end_stage(config)) if stage.steps > 0]


def _distill(config: DistillConfig) -> DistillResult:
    assert config.seq_len is not None  # the preflight's default: the teacher's longest input
    tokenizer = AutoTokenizer.from_pretrained(config.teacher)
    train, documents = load_data(config, tokenizer)
    others = fidelity_texts(config)  # read before any step: a bad file is named before the work
    long = long_text(config, tokenizer) if config.long_length is not None else None
    others.update(long.held_out if long is not None else {})  # split off before any step
    # the 512 stages' examples (half windows of the long text with stage_text="train+long"), unless every 512
    # stage is taken finished (--resume, --stages-from); the long stage's short term takes train's own and
    # its windows apart (long.py `short_examples`)
    reused = all(finished_folders(config, stage) for stage in stages(config))
    short = (
        stage_examples(config, train, long.sources, tokenizer) if long is not None and not reused else train
    )
    set_seed(config.seed)
    teacher = load_teacher(config.teacher)
    student = student_from(teacher, config)
    length, batch = config.seq_len, config.per_device_eval_batch_size
    reference = embed(teacher, tokenizer, documents, length, batch)
    different = different_documents(reference)
    scores = {"drop-in": fidelity(embed(student, tokenizer, documents, length, batch), reference)}
    logger.info(
        f"distill: {describe_student(student)}; drop-in fidelity {scores['drop-in']:.4f} (teacher, two "
        f"different documents: {different:.4f}); {len(train):,} "
        f"{'blocks of' if config.examples == 'blocks' else 'documents of at most'} {length} tokens"
    )
    losses: dict[str, float] = {}
    seconds: dict[str, float] = {}
    peaks: dict[str, float] = {}
    runs = [(stage.name, functools.partial(run_stage, config, stage), short) for stage in stages(config)]
    if long is not None:  # after the 512 stages: extended, then trained on long text
        runs.append(("long", functools.partial(run_long_stage, config, long=long), train))
    for name, run, examples in runs:
        start = time.perf_counter()
        student, losses[name] = run(student, teacher, examples, tokenizer)
        seconds[name] = time.perf_counter() - start
        peaks[name] = round(peak_rss() / 1e9, 2)
        scores[name] = fidelity(embed(student, tokenizer, documents, length, batch), reference)
        logger.info(
            f"distill: after {name} ({seconds[name]:.0f} s): fidelity at {length} tokens {scores[name]:.4f}"
        )
    by_source = {"held-out": {"fidelity": scores[list(scores)[-1]], "different_documents": different}}
    for name, texts in others.items():  # the final student on text no step trained on
        own = embed(teacher, tokenizer, texts, length, batch)
        by_source[name] = {
            "fidelity": fidelity(embed(student, tokenizer, texts, length, batch), own),
            "different_documents": different_documents(own),
        }
    reading: dict[str, Any] = {}
    if long is not None and config.verdict_pairs:  # what the long stage changed, on text it did not train on
        reading = long_reading(config, student, teacher, long, documents)
        logger.info(f"distill: {reading_line(reading, seconds['long'])}")
    result = DistillResult(
        output_dir=config.output_dir, fidelity=scores, different_documents=different, stage_losses=losses,
        stage_seconds=seconds, eval_documents=len(reference), train_examples=len(train),
        num_parameters=student.num_parameters(),
        fidelity_by_source=dict(sorted(by_source.items(), key=lambda item: item[1]["fidelity"])),
        stage_peak_gb=peaks, read_by_original=read_by_original(config), long_reading=reading,
    )  # fmt: skip
    save_student(config, student, tokenizer, result)
    return result
