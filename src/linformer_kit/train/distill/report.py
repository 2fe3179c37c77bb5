"""What a distillation run says: the student it starts from, its result, and the folder it saves.

DistillResult     the fidelity after each stage, its baseline, each stage's loss and time
describe_student  the student's options and size, for the run's first line
save_student      the final student into output_dir: weights, tokenizer, a sentence-transformers
                  teacher's pipeline files, metrics.json and a model card (`model_card`)
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from transformers import PreTrainedTokenizerBase

from linformer_kit.models import LinformerPreTrainedModel
from linformer_kit.models.folder import write_model_dir
from linformer_kit.nn.options import LinformerOptions
from linformer_kit.train.distill.config import DistillConfig, beside_the_teacher
from linformer_kit.train.distill.verdict import reading_card

# the fidelity where the teacher's own weights read every input it reads (`read_by_original`)
READ_BY_ORIGINAL = "read by the original: 1 by construction"


@dataclass
class DistillResult:
    output_dir: str
    # mean cosine of student and teacher embeddings: {"drop-in": c0, "attention": c1, "end-to-end": c2}
    fidelity: dict[str, float]
    different_documents: float  # the teacher's mean cosine between two different held-out documents
    stage_losses: dict[str, float]  # the last logged training loss of each stage
    stage_seconds: dict[str, float]
    eval_documents: int
    # train examples: documents truncated to seq_len, or blocks of seq_len tokens (`examples`); this field
    # was `train_blocks` in the metrics.json of runs before it counted documents too
    train_examples: int
    num_parameters: int
    # the final student's fidelity at seq_len on each source, the lowest first: "held-out" (the documents of
    # `fidelity`) and each `fidelity_text` file, each beside its two different documents under the teacher
    fidelity_by_source: dict[str, dict[str, float]] = dataclasses.field(default_factory=dict)
    # the process's peak resident memory (GB, VmHWM: the high-water mark so far) at the end of each stage: never
    # below the stage before's, so a stage's own peak only where it rises above that
    stage_peak_gb: dict[str, float] = dataclasses.field(default_factory=dict)
    # inputs of at most this many tokens, every fidelity above among them (at seq_len), are read by the teacher's
    # own weights (`read_by_original`): each is then 1 by construction, no measure of the long stage; None: by
    # the student's
    read_by_original: int | None = None
    # what the long stage changed, beyond seq_len: its verdict (train/distill/verdict.py); {} without one
    long_reading: dict[str, Any] = dataclasses.field(default_factory=dict)

    def lowest(self) -> tuple[str, float]:
        """(source, fidelity) of the source the final student keeps least of."""
        if not self.fidelity_by_source:
            return "held-out", list(self.fidelity.values())[-1]
        name, scores = next(iter(self.fidelity_by_source.items()))
        return name, scores["fidelity"]


def describe_student(model: LinformerPreTrainedModel) -> str:
    """ "student k=... window=... global_tokens=... <sharing> (N M parameters)"."""
    c = model.config
    options = LinformerOptions(projected_length=c.projected_length, local_window=c.local_window)
    return (
        f"student k={options.projected_length} window={options.local_window} global_tokens={c.global_tokens} "
        f"{c.sharing} ({model.num_parameters() / 1e6:.2f} M parameters)"
    )


def save_student(
    config: DistillConfig,
    student: LinformerPreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    result: DistillResult,
) -> None:
    """The student into output_dir with its tokenizer, the teacher's sentence-transformers files (if it is
    such a folder), metrics.json and README.md. A long student is made for long_length, as `linformer extend`'s
    model is for its --max-length, and its tokenizer (`model_max_length`) and pipeline (`max_seq_length`) read
    exactly that (`write_model_dir`'s max_length): with the teacher's own limits (all-MiniLM-L6-v2's 512 and
    256) `SentenceTransformer(path)` read every long text as the original reads its first 256 tokens."""
    metrics = {**dataclasses.asdict(result), "config": config.to_dict()}
    write_model_dir(student, config.output_dir, source=config.teacher, tokenizer=tokenizer, metrics=metrics,
                    card=model_card(config, result), max_length=config.long_length, staged=False)  # fmt: skip


def _by_source(result: DistillResult) -> str:
    """The final student's fidelity on each source, the lowest first (empty with only the held-out documents)."""
    if len(result.fidelity_by_source) < 2:
        return ""
    note = f" ({READ_BY_ORIGINAL})" if result.read_by_original is not None else ""  # as the stage table's
    rows = "".join(
        f"| {name} | {s['fidelity']:.4f}{note} | {s['different_documents']:.4f} |\n"
        for name, s in result.fidelity_by_source.items()
    )
    return (
        "The final student on each source (the lowest first):\n\n| source | fidelity | two different documents |\n"
        f"|---|---|---|\n{rows}\n"
    )


def _original_note(result: DistillResult) -> str:
    """Why the final fidelity says nothing of the long stage, where the original reads it (else empty)."""
    if result.read_by_original is None:
        return ""
    return (
        f"Inputs of at most {result.read_by_original} tokens, each fidelity above among them, are {READ_BY_ORIGINAL}. "
        "What the long stage changed is in the long reading below.\n\n"
    )


def _long_reading(result: DistillResult) -> str:
    """The long stage's verdict (empty without one)."""
    return reading_card(result.long_reading, result.stage_seconds.get("long")) if result.long_reading else ""


def _peaks(result: DistillResult) -> str:
    """The peak resident memory after each stage (empty for a result without it)."""
    if not result.stage_peak_gb:
        return ""
    peaks = ", ".join(f"{stage} {gb:.1f} GB" for stage, gb in result.stage_peak_gb.items())
    return f"Peak resident memory of the run (the high-water mark after each stage): {peaks}.\n\n"


def _long_length(config: DistillConfig) -> str:
    """What a long student reads wherever it is called (else empty): what its saved folder says."""
    if config.long_length is None:
        return ""
    return (
        f"It reads up to {config.long_length} tokens wherever it is called: its tokenizer's `model_max_length` "
        f"and its sentence-transformers pipeline's `max_seq_length` (a sentence-transformers teacher's) are "
        f"{config.long_length}, so `SentenceTransformer(path).encode` and a transformers pipeline read a long "
        "text whole.\n\n"
    )


def _reading(config: DistillConfig) -> str:
    """Which weights read which inputs, for a student with long layers beside the teacher's (else empty)."""
    if not beside_the_teacher(config):
        return ""
    return (
        f"Inputs of at most {config.exact_length} tokens are read by `{Path(config.teacher).name}`'s own weights "
        f"with exact attention: there this model is the teacher. Longer ones, to {config.long_length} tokens, are "
        "read by its long layers (Linformer layers distilled for them).\n\n"
    )


def model_card(config: DistillConfig, result: DistillResult) -> str:
    """README.md of the student: how it was made, its fidelity after each stage, how to load it."""
    last = list(result.fidelity)[-1]
    note = f" ({READ_BY_ORIGINAL})" if result.read_by_original is not None else ""
    rows = "".join(f"| {stage} | {score:.4f}{note if stage == last else ''} |\n"
                   for stage, score in result.fidelity.items())  # fmt: skip
    return (
        "---\nlibrary_name: transformers\npipeline_tag: feature-extraction\ntags:\n- linformer\n"
        "- linformer-kit\n- distillation\n---\n"
        f"# Linformer distilled from `{Path(config.teacher).name}`\n\n"
        f"Made by `linformer distill` (linformer-kit): k = {config.projected_length}, local window "
        f"{config.local_window}, global tokens {config.global_tokens}, sharing {config.sharing!r}, "
        f"{'blocks of' if config.examples == 'blocks' else 'documents of at most'} {config.seq_len} tokens.\n\n"
        f"{_long_length(config)}{_reading(config)}"
        "Fidelity (mean cosine of this model's and the teacher's sentence embeddings, held-out documents):\n\n"
        f"| stage | fidelity |\n|---|---|\n{rows}\n"
        f"Two different documents under the teacher: {result.different_documents:.4f}.\n\n"
        f"{_by_source(result)}{_original_note(result)}{_long_reading(result)}{_peaks(result)}"
        "Load with `SentenceTransformer(path)` (a sentence-transformers teacher's pipeline is carried) or\n"
        "`AutoModel.from_pretrained(path, trust_remote_code=True)`; every setting is in `metrics.json`.\n"
    )
