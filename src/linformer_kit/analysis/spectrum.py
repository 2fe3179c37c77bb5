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

Running lives here (run the model over its inputs, average over inputs, `spectrum_from_pretrained`);
loading the model and cutting the text into inputs in `analysis/spectrum_inputs.py`; the result in
`analysis/spectrum_result.py`; the readings of copying and local heads in `analysis/head_readings.py`;
the options and their checks in `analysis/spectrum_config.py`; singular values in `analysis/svd.py`;
curves, ranks and k in `analysis/curves.py`; the files written (JSON, figures) in
`analysis/spectrum_report.py` and `analysis/plot.py`; the CLI in `cli/spectrum.py`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence

import torch
from torch import nn

from linformer_kit.analysis.curves import (
    cumulative_curve,
    distance_mass,
    effective_rank,
    first_token_mass,
    nuclear_norm_upper_bound,
    offset_mass,
    recommend_projected_length,
    uniform_distance_mass,
)
from linformer_kit.analysis.head_readings import copying_heads, shift_notes, window_reading
from linformer_kit.analysis.spectrum_config import SpectrumConfig, default_index
from linformer_kit.analysis.spectrum_inputs import (
    chunk_text,
    load_encoder,
    max_input_length,
    no_context_warning,
    read_text,
)
from linformer_kit.analysis.spectrum_result import OFFSET_RADIUS, WINDOW_RADII, SpectrumResult
from linformer_kit.analysis.svd import singular_values

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
    notes += shift_notes(mass)
    shifting = copying_heads(mass).any(-1)  # (L,) a layer with a head that copies a neighbour
    recommended = [None if bool(shifts) else k for k, shifts in zip(by_rank, shifting, strict=True)]
    window = window_reading(distances.mean(), firsts.mean(), uniform.mean(), config)
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


def _pad_offsets(mass: torch.Tensor, radius: int) -> torch.Tensor:
    """(..., 2r+1) offset mass of a short input (r < radius) -> (..., 2·radius+1), 0 where no key is."""
    missing = radius - (mass.shape[-1] - 1) // 2
    return torch.nn.functional.pad(mass, (missing, missing)) if missing > 0 else mass


# ----------------------------------------------------------------------------- from a saved model


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
