"""Is attention low rank? The singular-value spectrum of P = softmax(QKᵀ/√d) per layer and head.

This is the paper's §3 / Figure 1 (Wang et al. 2020): run a model in full-attention mode on real
text, take the n × n attention map P of every layer and head, and plot the *normalized cumulative
singular value* curve c(i) = (σ_1 + ... + σ_i) / (σ_1 + ... + σ_n), averaged over inputs. The
paper never writes the formula; "normalized cumulative singular value" reads as the singular values
themselves (not their squares), so that is the default (`normalization="singular"`); the energy
version c(i) = Σ_{j≤i} σ_j² / ‖P‖_F² is `normalization="energy"`.

From the curves we read the effective rank (smallest r with c(r) ≥ t) and, per layer, the smallest k
that keeps a given share of the spectrum (`rank_projected_length`). Beside it, the offset mass m(o) of
every head (`curves.offset_mass`): a head that puts most of its attention on one neighbour is a shifted
identity, full rank, which a window-mean projection cannot hold however large k is below n (measured:
docs/reproduction/cpu-paper/switch-from-trunk.md: every k < n of such a layer, 384 of 512 included,
put the model back at the no-context floor). Such heads get a note, and their layer is recommended full
attention (None: exact at every length, whatever `short_inputs`): `recommended_projected_length`, a list
`LinformerConfig(projected_length=...)` takes as it is, is the rank reading with those layers None. The
rule looks at every head, whatever `head_reduction`: one head that copies a neighbour is enough.

Which window? A local window (`LinformerConfig(local_window=w)`, nn/local.py) holds such heads exactly
beside the k slots, so their layer need not be full attention. The distance mass M(r) of every head
(`curves.distance_mass`, the share of a query's attention within r places, r in WINDOW_RADII) gives
`recommended_local_window`: per layer the smallest w holding `window_mass` of every local head
(`curves.recommend_local_window`), None where no head is local; the first-token mass F gives
`recommended_global_tokens` = 1 when some head puts `global_mass` on position 0. With the window,
`windowed_projected_length` takes the rank reading in the layers full attention was for.

Running lives here (load the model, cut the text into inputs, run it, average over inputs); the
options and their checks in `analysis/spectrum_config.py`; singular values in `analysis/svd.py`;
curves, ranks and k in `analysis/curves.py`; the files written (JSON, figures) in
`analysis/spectrum_report.py` and `analysis/plot.py`; the CLI in `cli/spectrum.py`.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from linformer_kit.analysis.curves import (
    cumulative_curve,
    distance_mass,
    effective_rank,
    first_token_mass,
    nuclear_norm_upper_bound,
    offset_mass,
    recommend_global_tokens,
    recommend_local_window,
    recommend_projected_length,
    uniform_distance_mass,
)
from linformer_kit.analysis.spectrum_config import SpectrumConfig, default_index
from linformer_kit.analysis.svd import singular_values
from linformer_kit.data_files import read_texts

OFFSET_RADIUS = 3  # offset mass reported for keys -3 .. +3 positions from the query
SHIFT_MASS = 0.5  # this much mass on the key at one offset (a shift: full rank): a note, and its layer exact
WINDOW_RADII = (1, 4, 16, 64)  # the windows w read: distance mass within ±w, the recommended local_window
# a head is local at r only where it holds this many times uniform attention's share (so a window that
# covers most of a short input, where uniform attention already has half its mass, is not called local)
OVER_UNIFORM = 2.0

# ----------------------------------------------------------------------------- accumulation


class _RunningMoments:
    """Mean and standard deviation over inputs, streamed (sum and sum of squares, float64)."""

    def __init__(self) -> None:
        self.count = 0
        self.total: torch.Tensor | float = 0.0
        self.total_sq: torch.Tensor | float = 0.0

    def add(self, batch: torch.Tensor) -> None:  # (b, ...)
        batch = batch.double().cpu()
        self.count += batch.shape[0]
        self.total = self.total + batch.sum(0)
        self.total_sq = self.total_sq + batch.square().sum(0)

    def mean(self) -> torch.Tensor:
        return torch.as_tensor(self.total) / max(self.count, 1)

    def std(self) -> torch.Tensor:
        if self.count < 2:
            return torch.zeros_like(self.mean())
        var = (torch.as_tensor(self.total_sq) - self.count * self.mean().square()) / (self.count - 1)
        return var.clamp_min(0.0).sqrt()


@dataclass
class SpectrumResult:
    """Everything `linformer spectrum` reports. Curves are averaged over inputs (± std over inputs)."""

    config: SpectrumConfig
    num_inputs: int
    input_lengths: list[int]
    curve_mean: torch.Tensor  # (L, h, r) per layer and head
    curve_std: torch.Tensor  # (L, h, r)
    layer_curve_mean: torch.Tensor  # (L, r) head-averaged, Figure 1 (left)
    layer_curve_std: torch.Tensor  # (L, r)
    effective_rank_mean: dict[float, torch.Tensor]  # threshold -> (L, h), averaged over inputs
    effective_rank_std: dict[float, torch.Tensor]  # threshold -> (L, h)
    recommended_projected_length: list[int | None]  # per layer, for LinformerConfig(projected_length=...)
    rank_projected_length: list[int]  # per layer, the spectrum's reading alone (shift layers not None)
    offset_mass: torch.Tensor  # (L, h, 2·OFFSET_RADIUS + 1) mass on keys -R .. +R from the query
    distance_mass: torch.Tensor  # (L, h, len(WINDOW_RADII)) share of attention within ±r of the query
    first_token_mass: torch.Tensor  # (L, h) share of attention on position 0
    uniform_distance_mass: torch.Tensor  # (len(WINDOW_RADII),) the same for uniform attention, over inputs
    uniform_first_token_mass: float  # 1/n averaged over inputs
    recommended_local_window: list[int | None]  # per layer, for LinformerConfig(local_window=...)
    recommended_global_tokens: int  # 0 or 1, for LinformerConfig(global_tokens=...)
    windowed_projected_length: list[int | None]  # k beside the window: the rank reading where a window is
    notes: list[str] = field(default_factory=list)

    @property
    def num_layers(self) -> int:
        return self.curve_mean.shape[0]

    @property
    def num_heads(self) -> int:
        return self.curve_mean.shape[1]

    @property
    def index(self) -> int:
        """The 1-based index of Figure 1 (right): the config's, which `compute_spectrum` sets if None."""
        index = self.config.index
        assert index is not None
        return index

    def at_index(self, index: int | None = None) -> torch.Tensor:
        """(L, h) mean normalized cumulative value at the 1-based `index`, Figure 1 (right)."""
        index = self.index if index is None else index
        if not 1 <= index <= self.curve_mean.shape[-1]:
            raise ValueError(
                f"index={index} must be between 1 and the curve length {self.curve_mean.shape[-1]}"
            )
        return self.curve_mean[..., index - 1]

    def to_dict(self) -> dict[str, Any]:
        def rounded(t: torch.Tensor) -> Any:
            return torch.round(t.double(), decimals=6).tolist()

        config = asdict(self.config)
        config["thresholds"] = list(self.config.thresholds)
        return {
            "config": config,
            "definition": _definition(self.config),
            "num_inputs": self.num_inputs,
            "input_lengths": self.input_lengths,
            "num_layers": self.num_layers,
            "num_heads": self.num_heads,
            "recommended_projected_length": self.recommended_projected_length,
            "rank_projected_length": self.rank_projected_length,
            "at_index": {
                "index": self.index,
                "mean": rounded(self.at_index()),
                "std": rounded(self.curve_std[..., self.index - 1]),
            },
            "effective_rank": {
                str(t): {
                    "mean": rounded(self.effective_rank_mean[t]),
                    "std": rounded(self.effective_rank_std[t]),
                }
                for t in self.config.thresholds
            },
            "layer_curve_mean": rounded(self.layer_curve_mean),
            "layer_curve_std": rounded(self.layer_curve_std),
            "curve_mean": rounded(self.curve_mean),
            "curve_std": rounded(self.curve_std),
            "offset_mass": {
                "offsets": list(range(-OFFSET_RADIUS, OFFSET_RADIUS + 1)),
                "mean": rounded(self.offset_mass),
            },
            "distance_mass": {
                "radii": list(WINDOW_RADII),
                "mean": rounded(self.distance_mass),
                "uniform": rounded(self.uniform_distance_mass),
            },
            "first_token_mass": {
                "mean": rounded(self.first_token_mass),
                "uniform": round(self.uniform_first_token_mass, 6),
            },
            "recommended_local_window": self.recommended_local_window,
            "recommended_global_tokens": self.recommended_global_tokens,
            "windowed_projected_length": self.windowed_projected_length,
            "notes": self.notes,
        }


def _definition(config: SpectrumConfig) -> str:
    weights = "σ_j" if config.normalization == "singular" else "σ_j²"
    text = f"curve[i-1] = Σ_(j≤i) {weights} / Σ_(all j) {weights}, singular values σ of P = softmax(QKᵀ/√d)"
    if config.method == "randomized":
        text += f"; top {config.rank} σ by randomized subspace iteration, denominator exact (energy) or"
        text += " a Cauchy–Schwarz upper bound (singular), so the curve is a lower bound"
    return text


# ----------------------------------------------------------------------------- the model pass


def _batches_of_equal_length(inputs: Sequence[Sequence[int]], batch_size: int) -> Iterator[list[list[int]]]:
    """Group inputs by length so no batch needs padding: every P is all real tokens."""
    by_length: dict[int, list[list[int]]] = {}
    for ids in inputs:
        by_length.setdefault(len(ids), []).append(list(ids))
    for group in by_length.values():
        for start in range(0, len(group), batch_size):
            yield group[start : start + batch_size]


def _attention_maps(model: nn.Module, input_ids: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Run the model, return per layer (b, h, n, n) maps, or raise a clear error why not."""
    outputs = model(input_ids=input_ids, attention_mask=torch.ones_like(input_ids), output_attentions=True)
    attentions = getattr(outputs, "attentions", None)
    if attentions is None and isinstance(outputs, dict):
        attentions = outputs.get("attentions")
    if not attentions or any(a is None for a in attentions):
        impl = getattr(getattr(model, "config", None), "_attn_implementation", "unknown")
        raise ValueError(
            f"{type(model).__name__} returned no attention maps with output_attentions=True "
            f"(attention implementation: {impl!r}); load it with attn_implementation='eager', "
            "e.g. AutoModel.from_pretrained(path, attn_implementation='eager')"
        )
    n = input_ids.shape[1]
    for layer, maps in enumerate(attentions):
        if maps.dim() != 4 or maps.shape[-2:] != (n, n):
            raise ValueError(
                f"layer {layer} attention maps have shape {tuple(maps.shape)}, expected (b, h, {n}, {n}); "
                "the spectrum needs full n × n attention (a Linformer with projected_length=k returns "
                "(b, h, n, k) maps: use a model with projected_length=None, e.g. pretrained with "
                "--projected-length none)"
            )
    return tuple(attentions)


def _spectrum_curves(maps: torch.Tensor, config: SpectrumConfig, generator: torch.Generator) -> torch.Tensor:
    """(b, h, n, n) maps -> (b, h, width) curves, width = n (exact) or min(rank, n) (randomized)."""
    n = maps.shape[-1]
    if config.method == "exact" or config.rank >= n:
        return cumulative_curve(singular_values(maps, "exact"), config.normalization)
    top = singular_values(maps, "randomized", rank=config.rank, generator=generator)  # (b, h, rank)
    frobenius_sq = maps.square().sum((-2, -1))  # (b, h)
    if config.normalization == "energy":
        total = frobenius_sq
    else:
        total = nuclear_norm_upper_bound(top, frobenius_sq, n)
    return cumulative_curve(top, config.normalization, total=total)


def _pad_curves(curves: torch.Tensor, width: int) -> torch.Tensor:
    """Curves of a short input reach 1 at their n; beyond it the cumulative share stays 1."""
    missing = width - curves.shape[-1]
    if missing <= 0:
        return curves[..., :width]
    return torch.cat([curves, curves.new_ones(*curves.shape[:-1], missing)], dim=-1)


def compute_spectrum(
    model: nn.Module, inputs: Sequence[Sequence[int]], config: SpectrumConfig
) -> SpectrumResult:
    """Spectrum of every layer's and head's attention map over `inputs` (lists of token ids).

    `model` is any encoder whose forward accepts `input_ids`, `attention_mask`, `output_attentions`
    and returns `attentions` as per-layer (b, h, n, n) tensors: ours in full-attention mode, or a
    transformers RoBERTa / BERT loaded with attn_implementation="eager".
    """
    if not isinstance(model, nn.Module):
        raise ValueError(f"compute_spectrum needs a torch.nn.Module encoder, got {type(model).__name__}")
    if not inputs:
        raise ValueError("no inputs: the text gave 0 token chunks")
    from tqdm.auto import tqdm

    dtype = torch.float64 if config.dtype == "float64" else torch.float32
    device = torch.device(next(model.parameters()).device)
    max_len = max(len(ids) for ids in inputs)
    width = max_len if config.method == "exact" else min(config.rank, max_len)
    index = default_index(width) if config.index is None else config.index
    if config.index is None:
        config = dataclasses.replace(config, index=index)
    if index > width:
        raise ValueError(
            f"index={index} exceeds the curve length {width} "
            f"(longest input {max_len} tokens, method={config.method!r}); pass a smaller --index"
        )
    generator = torch.Generator(device=device).manual_seed(config.seed)
    head_curves, layer_curves, offsets = _RunningMoments(), _RunningMoments(), _RunningMoments()
    distances, firsts, uniform = _RunningMoments(), _RunningMoments(), _RunningMoments()
    ranks = {t: _RunningMoments() for t in config.thresholds}
    model.eval()  # no dropout on the attention maps
    with (
        torch.no_grad(),
        tqdm(total=len(inputs), desc="spectrum", unit="input", disable=not config.progress) as bar,
    ):
        for batch in _batches_of_equal_length(inputs, config.batch_size):
            input_ids = torch.tensor(batch, dtype=torch.long, device=device)  # (b, n)
            attentions = [maps.to(dtype) for maps in _attention_maps(model, input_ids)]  # L × (b, h, n, n)
            radius = min(OFFSET_RADIUS, input_ids.shape[1] - 1)
            mass = torch.stack([offset_mass(maps, radius) for maps in attentions], dim=1)
            offsets.add(_pad_offsets(mass, OFFSET_RADIUS))  # (b, L, h, 2R+1)
            distances.add(torch.stack([distance_mass(maps, WINDOW_RADII) for maps in attentions], 1))
            firsts.add(torch.stack([first_token_mass(maps) for maps in attentions], 1))  # (b, L, h)
            uniform.add(_uniform_mass(*input_ids.shape))  # (b, len(WINDOW_RADII) + 1)
            curves = torch.stack(
                [_spectrum_curves(maps, config, generator) for maps in attentions], dim=1
            )  # (b, L, h, r)
            for t in config.thresholds:
                ranks[t].add(effective_rank(curves, t))
            curves = _pad_curves(curves, width)  # (b, L, h, width)
            head_curves.add(curves)
            layer_curves.add(curves.mean(2))  # (b, L, width)
            bar.update(len(batch))

    curve_mean = head_curves.mean()
    notes = []
    by_rank = recommend_projected_length(curve_mean, config.keep, config.head_reduction)
    decisive = curve_mean if config.head_reduction == "max" else curve_mean.mean(1, keepdim=True)  # (L, ·, r)
    unreached = [i for i in range(len(by_rank)) if bool((decisive[i, :, -1] < config.keep - 1e-6).any())]
    if unreached:
        notes.append(
            f"layers {unreached} do not reach keep={config.keep} within the first {width} singular values; "
            "their rank reading is a lower bound (raise --rank)"
        )
    mass = offsets.mean()  # (L, h, 2R+1)
    notes += _shift_notes(mass)
    shifting = _copying_heads(mass).any(-1)  # (L,) a layer with a head that copies a neighbour
    recommended = [None if bool(shifts) else k for k, shifts in zip(by_rank, shifting, strict=True)]
    window = _window_reading(distances.mean(), firsts.mean(), uniform.mean(), config)
    windowed = [k if w is not None else r for k, r, w in zip(by_rank, recommended, window[0], strict=True)]
    return SpectrumResult(
        config=config,
        num_inputs=len(inputs),
        input_lengths=[len(ids) for ids in inputs],
        curve_mean=curve_mean.float(),
        curve_std=head_curves.std().float(),
        layer_curve_mean=layer_curves.mean().float(),
        layer_curve_std=layer_curves.std().float(),
        effective_rank_mean={t: m.mean().float() for t, m in ranks.items()},
        effective_rank_std={t: m.std().float() for t, m in ranks.items()},
        recommended_projected_length=recommended,
        rank_projected_length=by_rank,
        offset_mass=mass.float(),
        distance_mass=distances.mean().float(),
        first_token_mass=firsts.mean().float(),
        uniform_distance_mass=uniform.mean()[:-1].float(),
        uniform_first_token_mass=float(uniform.mean()[-1]),
        recommended_local_window=window[0],
        recommended_global_tokens=window[1],
        windowed_projected_length=windowed,
        notes=notes,
    )


def _uniform_mass(b: int, n: int) -> torch.Tensor:
    """(b, len(WINDOW_RADII) + 1): uniform attention's M(r) for each radius, then its F = 1/n (one row per input)."""
    row = torch.cat([uniform_distance_mass(n, WINDOW_RADII), torch.tensor([1.0 / n], dtype=torch.float64)])
    return row.expand(b, -1)


def _window_reading(
    distances: torch.Tensor, firsts: torch.Tensor, uniform: torch.Tensor, config: SpectrumConfig
) -> tuple[list[int | None], int]:
    """(L, h, R) distance mass, (L, h) first-token mass, (R + 1,) uniform's -> (local_window per layer, global_tokens)."""
    window = recommend_local_window(distances, uniform[:-1], WINDOW_RADII, config.window_mass, OVER_UNIFORM)
    global_tokens = recommend_global_tokens(firsts, float(uniform[-1]), config.global_mass, OVER_UNIFORM)
    return window, global_tokens


def _pad_offsets(mass: torch.Tensor, radius: int) -> torch.Tensor:
    """(..., 2r+1) offset mass of a short input (r < radius) -> (..., 2·radius+1), 0 where no key is."""
    missing = radius - (mass.shape[-1] - 1) // 2
    return torch.nn.functional.pad(mass, (missing, missing)) if missing > 0 else mass


def _copying_heads(mass: torch.Tensor) -> torch.Tensor:
    """(L, h, 2R+1) offset mass -> (L, h) bool: the heads with >= SHIFT_MASS of their attention on one offset."""
    return mass.amax(-1) >= SHIFT_MASS


def _shift_notes(mass: torch.Tensor) -> list[str]:
    """A note per head that copies a neighbour (`_copying_heads`; 0-based layer and head)."""
    notes = []
    for layer, head in zip(*torch.nonzero(_copying_heads(mass), as_tuple=True), strict=True):
        share, at = mass[layer, head].max(-1)
        notes.append(
            f"layer {int(layer)} head {int(head)} puts {float(share):.0%} of its attention on the key at offset "
            f"{int(at) - OFFSET_RADIUS:+d} (key - query): P is near a shifted identity, full rank; a window-mean "
            "projection averages neighbouring keys and values and cannot hold it (recommended: this layer full attention, "
            "or a local window beside k: recommended_local_window)"
        )
    return notes


# ----------------------------------------------------------------------------- loading text and models


def read_text(path: str) -> str:
    """The documents of `path`, one after another (a blank line between two)."""
    return "\n\n".join(read_texts(path))


def max_input_length(model: nn.Module, tokenizer: Any) -> int:
    """Longest input the model takes: RoBERTa-style positions start at pad_token_id + 1."""
    from transformers import PreTrainedConfig

    config = model.config
    if not isinstance(config, PreTrainedConfig):
        raise ValueError(
            f"model: expected a transformers encoder (with a config), got {type(model).__name__}"
        )
    limit = int(config.max_position_embeddings)
    padding_idx = getattr(getattr(model, "embeddings", None), "padding_idx", None)
    if padding_idx is not None:  # RoBERTa, Linformer: positions padding_idx+1 .. max_position_embeddings-1
        limit -= int(padding_idx) + 1
    tokenizer_limit = getattr(tokenizer, "model_max_length", None)
    if isinstance(tokenizer_limit, int) and 0 < tokenizer_limit < limit:
        limit = tokenizer_limit
    return limit


def special_tokens_around(tokenizer: Any) -> tuple[list[int], list[int]]:
    """The ids a tokenizer puts before and after one text (e.g. <s> ... </s>, [CLS] ... [SEP]).

    Found by encoding a probe with and without special tokens (transformers 5 fast tokenizers have
    no `build_inputs_with_special_tokens`), so it works for any tokenizer's post-processor.
    """
    with_special = tokenizer("a", add_special_tokens=True)["input_ids"]
    body = tokenizer("a", add_special_tokens=False)["input_ids"]
    for start in range(len(with_special) - len(body) + 1):
        if with_special[start : start + len(body)] == body:
            return with_special[:start], with_special[start + len(body) :]
    raise ValueError(
        f"cannot locate the text inside the tokenizer's special tokens: {with_special} vs {body}"
    )


def chunk_text(text: str, tokenizer: Any, seq_len: int, max_inputs: int) -> list[list[int]]:
    """Cut `text` into at most `max_inputs` inputs of exactly `seq_len` tokens (special tokens included).

    Tokenizes paragraph by paragraph and stops as soon as enough tokens are in hand, so a whole book
    costs only what is analysed. A text shorter than one input gives one shorter input.
    """
    prefix, suffix = special_tokens_around(tokenizer)
    body_len = seq_len - len(prefix) - len(suffix)
    if body_len < 1:
        raise ValueError(f"seq_len={seq_len} leaves no room for text after the tokenizer's special tokens")
    buffer: list[int] = []
    chunks: list[list[int]] = []
    for paragraph in text.split("\n\n"):
        if not paragraph.strip():
            continue
        # verbose=False: no "longer than the specified maximum" warning, the paragraph is cut into inputs below
        buffer.extend(tokenizer(paragraph.strip(), add_special_tokens=False, verbose=False)["input_ids"])
        while len(buffer) >= body_len and len(chunks) < max_inputs:
            chunks.append(prefix + buffer[:body_len] + suffix)
            buffer = buffer[body_len:]
        if len(chunks) >= max_inputs:
            break
    if not chunks and buffer:
        chunks.append(prefix + buffer + suffix)
    return chunks


def load_encoder(path: str, device: str | None = None) -> tuple[nn.Module, Any]:
    """AutoModel (eager attention, so it can return maps) and AutoTokenizer from a directory or name."""
    from transformers import AutoModel, AutoTokenizer

    import linformer_kit.models  # noqa: F401  (registers model_type="linformer" with the Auto classes)
    from linformer_kit.models.loading import load_pretrained

    # every encoder weight from the checkpoint (a config.json of another model type is an error); the
    # pooler an MLM checkpoint lacks and its MLM head are not used here: no line about them
    # a Module to the type checker: transformers' `to` is typed as Module.to unbound (self its first argument)
    model: nn.Module = load_pretrained(
        AutoModel, path, "model", report_head=False, attn_implementation="eager"
    )
    try:
        tokenizer = AutoTokenizer.from_pretrained(path)
    except (OSError, ValueError) as error:
        raise ValueError(
            f"model: cannot load the tokenizer of {path!r}: {str(error).splitlines()[0]}"
        ) from None
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    return model.to(device).eval(), tokenizer


def spectrum_from_pretrained(config: SpectrumConfig) -> SpectrumResult:
    """Load `config.model`, cut `config.text_file` into inputs, compute the spectrum."""
    model, tokenizer = load_encoder(config.model, config.device)
    limit = max_input_length(model, tokenizer)
    seq_len = config.seq_len or limit
    if seq_len > limit:
        raise ValueError(f"seq_len={seq_len} exceeds the model's longest input {limit}")
    inputs = chunk_text(read_text(config.text_file), tokenizer, seq_len, config.max_inputs)
    result = compute_spectrum(model, inputs, config)
    untrained = no_context_warning(config.model)
    if untrained is not None:
        result.notes.insert(0, untrained)
    return result


def no_context_warning(model: str) -> str | None:
    """A warning when the model's own metrics.json (`linformer pretrain`) says it learned no context.

    Such a model's attention is close to uniform or positional: its maps are low rank because it
    reads nothing yet, and a k taken from them says nothing about a trained model.
    """
    path = Path(model) / "metrics.json"
    try:
        metrics = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    except (OSError, ValueError):
        return None
    if not isinstance(metrics, dict) or metrics.get("learned_context") is not False:
        return None
    return (
        f"WARNING: this model has not learned to use context (validation perplexity "
        f"{metrics.get('perplexity', float('nan')):.1f} vs its no-context floor "
        f"{metrics.get('no_context_perplexity', float('nan')):.1f}, metrics.json): its attention maps "
        "reflect an untrained model, and the recommended projected_length may be far too small; "
        "measure a model that left the floor"
    )
