"""The Linformer attention options: one definition, one default and one validation each.

    LinformerOptions(projected_length=128, sharing="kv")            # validated on construction
    LinformerOptions.from_text(projected_length="256,256,128")      # command-line / config-file forms
    options.check_model(max_seq_len=512, num_layers=3)              # against a model's size

Every place that takes these options (`LinformerSelfAttention`, `LinformerConfig`, `linformer
pretrain`, `convert`, the benchmark, the recipes) checks them here, so a bad value gets the same
`ValueError` (or `TypeError` for a wrong type) naming the value and its limit wherever it is given.

    projected_length    k: an int (every layer), a tuple/list with one k per layer (None for a
                        full-attention layer), or None (full softmax attention through the same code)
    sharing             "none" | "headwise" | "kv" | "layerwise" (paper §4)
    projection          "linear" | "mean" | "max" | "conv" | "random" (paper §4-5, nn/projection.py)
    projection_init     "window" | "random": how a learned E, F start (nn/projection.py)
    projection_scaling  "none" | "length": sqrt(max_seq_len / real tokens) on E(mX) (dense E only)
    short_inputs        "project" | "exact": sequences of at most k real tokens (nn/attention.py)
    projection_order    "auto" | "paper": the fast order where it applies, or the reference order
    local_window        w: each query also attends exactly to the real keys within w positions, in the
                        same softmax as the k slots (nn/local.py); an int (every layer), one per layer
                        (None: no window in that layer), or None (the paper's layer)
    global_tokens       g: the first g positions are exact keys of every query, and their queries attend
                        to every real key (nn/local.py); 0 (the paper's layer) or more
    exact_length        T: a sequence of at most T real tokens takes exact softmax attention with the same
                        weights (nn/exact_rows.py); None (only short_inputs decides), or T >= every k

Torch-only, like the rest of `linformer_kit.nn`.
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, SupportsIndex, TypeVar, get_args

ProjectionKind = Literal["linear", "mean", "max", "conv", "random"]
PROJECTION_KINDS: tuple[ProjectionKind, ...] = get_args(ProjectionKind)
WINDOW_KINDS = ("mean", "max", "conv")  # pool windows of max_seq_len / k positions: k must divide it
ProjectionScaling = Literal["none", "length"]
PROJECTION_SCALINGS: tuple[ProjectionScaling, ...] = get_args(ProjectionScaling)
ProjectionInit = Literal["window", "random"]
PROJECTION_INITS: tuple[ProjectionInit, ...] = get_args(ProjectionInit)
Sharing = Literal["none", "headwise", "kv", "layerwise"]
SHARING_MODES: tuple[Sharing, ...] = get_args(Sharing)
ProjectionOrder = Literal["auto", "paper"]
PROJECTION_ORDERS: tuple[ProjectionOrder, ...] = get_args(ProjectionOrder)
ShortInputs = Literal["project", "exact"]
SHORT_INPUTS: tuple[ShortInputs, ...] = get_args(ShortInputs)
ChoiceT = TypeVar("ChoiceT")

ProjectedLength = int | tuple[int | None, ...] | None
LocalWindow = int | tuple[int | None, ...] | None  # the same per-layer form as k
# their defaults, one value for every layer (a config saves them as they are: JSON has no tuple)
DEFAULT_PROJECTED_LENGTH: int = 256
DEFAULT_LOCAL_WINDOW: int | None = None

CHOICES: dict[str, tuple[str, ...]] = {  # option -> its choices (all but projected_length)
    "sharing": SHARING_MODES,
    "projection": PROJECTION_KINDS,
    "projection_init": PROJECTION_INITS,
    "projection_scaling": PROJECTION_SCALINGS,
    "short_inputs": SHORT_INPUTS,
    "projection_order": PROJECTION_ORDERS,
}


def as_size(name: str, value: object) -> int:
    """`value` as an int, or a TypeError naming `name`: sizes are integers, and bool is not a size."""
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an int, got {value!r}")
    try:
        if not isinstance(value, SupportsIndex):
            raise TypeError
        return operator.index(value)  # int, numpy and 0-d torch integers; not 32.0, not "32"
    except TypeError:
        raise TypeError(f"{name} must be an int, got {value!r} of type {type(value).__name__}") from None


def exact_length_value(limit: object) -> int | None:
    """exact_length as a plain int >= 1, or None (TypeError for a non-int, as `as_size`; ValueError below 1)."""
    if limit is None:
        return None
    value = as_size("exact_length", limit)  # a plain int: the value is saved as JSON
    if value < 1:
        raise ValueError(f"exact_length must be >= 1 (or None), got {limit}")
    return value


def check_exact_length(limit: int | None, ks: Sequence[int | None], max_seq_len: int, at: str = "") -> None:
    """exact_length T against the layers' k and the longest input: k <= T < max_seq_len. Below k exact
    attention is the cheaper one already (n² <= n k: short_inputs='exact'), and at max_seq_len every input
    would take it (full attention: projected_length none)."""
    limit = exact_length_value(limit)
    if limit is None:
        return
    for layer_k in ks:
        if layer_k is not None and limit < layer_k:
            raise ValueError(
                f"exact_length={limit} must be at least projected_length k={layer_k}{at}: up to k tokens exact "
                "attention is the cheaper one already (short_inputs='exact')"
            )
    if limit >= max_seq_len:
        raise ValueError(
            f"exact_length={limit} must be below max_seq_len={max_seq_len}{at}: every input would take exact "
            "attention, which is full attention (projected_length none)"
        )


def check_choice(name: str, value: object, choices: Sequence[str]) -> None:
    """ValueError naming `name`, the value and the choices unless value is one of them."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {tuple(choices)}, got {value!r}")


def checked_choice(name: str, value: object, choices: tuple[ChoiceT, ...]) -> ChoiceT:
    """`value` as the one of `choices` it equals (typed as they are: a str as its Literal), else
    `check_choice`'s ValueError."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")
    return choices[choices.index(value)]


def parse_projected_length(text: str) -> int | list[int | None] | None:
    """The text form of `projected_length` (command lines, config files): one grammar for k.

    '128' -> 128 (every layer), '256,256,128' -> [256, 256, 128] (one per layer), 'none' -> None
    (full attention), 'none,128' -> [None, 128] (layer 1 full attention, exact at every length).
    Anything else raises ValueError naming the text.
    """
    return parse_per_layer("projected_length", text)


def parse_local_window(text: str) -> int | list[int | None] | None:
    """The text form of `local_window`, k's grammar: '16' (every layer), '16,none' (per layer), 'none'."""
    return parse_per_layer("local_window", text)


def parse_per_layer(name: str, text: str) -> int | list[int | None] | None:
    """An int, 'none', or a comma-separated list of them (one per layer); ValueError naming `name` and the text."""
    parts = [part.strip().lower() for part in text.split(",")]
    try:
        values = [None if part == "none" else int(part) for part in parts]
    except ValueError:
        raise ValueError(
            f"{name}: expected an int, 'none', or a comma-separated list of them (one per layer), got {text!r}"
        ) from None
    return values[0] if len(values) == 1 else values


def format_projected_length(k: int | Sequence[int | None] | None) -> str:
    """The text form `parse_projected_length` reads back: 128, '256,128', 'none', 'none,128'."""
    if k is None or isinstance(k, int):
        return "none" if k is None else str(k)
    return ",".join(format_projected_length(layer_k) for layer_k in k)


def check_projected_length(k: object, max_seq_len: int, projection: str = "linear", where: str = "") -> None:
    """One k (not None) against the longest input: 1 <= k <= max_seq_len, and k | max_seq_len for pooling.

    `where` says what max_seq_len is (e.g. "seq_len", or how a config derives it) in the message.
    """
    limit = f"max_seq_len={max_seq_len}{f' ({where})' if where else ''}"
    if not 1 <= (size := as_size("projected_length", k)) <= max_seq_len:
        raise ValueError(f"projected_length (k={k}) must be between 1 and {limit}")
    if projection in WINDOW_KINDS and max_seq_len % size:
        raise ValueError(
            f"projection {projection!r} pools windows of max_seq_len/k positions: k={k} must divide {limit}"
        )


@dataclass(frozen=True)
class LinformerOptions:
    """The options of Linformer attention, with their defaults, checked on construction (module docstring).

    Raises:
        ValueError: a value outside its choices or limits, or two options that do not go together.
        TypeError: a k that is not an int (a float, a bool, a string: parse text with `from_text`).
    """

    projected_length: ProjectedLength = DEFAULT_PROJECTED_LENGTH
    sharing: Sharing = "headwise"
    projection: ProjectionKind = "linear"
    projection_init: ProjectionInit = "window"
    projection_scaling: ProjectionScaling = "none"
    short_inputs: ShortInputs = "project"
    projection_order: ProjectionOrder = "auto"
    local_window: LocalWindow = DEFAULT_LOCAL_WINDOW
    global_tokens: int = 0
    exact_length: int | None = None

    def __post_init__(self) -> None:
        self._check_local()
        k = self.projected_length
        if isinstance(k, list):
            object.__setattr__(self, "projected_length", k := tuple(k))
        for layer_k in k if isinstance(k, tuple) else () if k is None else (k,):
            if (
                layer_k is not None and as_size("projected_length", layer_k) < 1
            ):  # None: a full-attention layer
                raise ValueError(f"projected_length (k={layer_k}) must be >= 1")
        if k is not None:  # plain ints (not numpy / 0-d tensors): the value is saved as JSON
            object.__setattr__(
                self, "projected_length",
                tuple(None if x is None else int(x) for x in k) if isinstance(k, tuple) else int(k),
            )  # fmt: skip
        if isinstance(k, tuple) and not k:
            raise ValueError("projected_length: an empty list (give one k per layer, one k, or None)")
        for name, choices in CHOICES.items():
            check_choice(name, getattr(self, name), choices)
        self._check_combinations()

    @classmethod
    def from_text(cls, **values: Any) -> LinformerOptions:
        """Like the constructor, with `projected_length` also in its text form ('128', '256,128', 'none').

        The values are checked on construction, as the constructor's are (hence `Any`)."""
        for name in ("projected_length", "local_window"):
            if isinstance(text := values.get(name), str):
                values[name] = parse_per_layer(name, text)
        return cls(**values)

    def projected_lengths(self, num_layers: int) -> list[int | None]:
        """k of each of `num_layers` layers (None: full attention)."""
        k = self.projected_length
        return list(k) if isinstance(k, tuple) else [k] * num_layers

    def local_windows(self, num_layers: int) -> list[int | None]:
        """w of each of `num_layers` layers (None: no window)."""
        w = self.local_window
        if isinstance(w, tuple) and len(w) != num_layers:
            raise ValueError(
                f"local_window has {len(w)} entries, expected one per layer (num_hidden_layers={num_layers})"
            )
        return list(w) if isinstance(w, tuple) else [w] * num_layers

    def check_model(self, max_seq_len: int, num_layers: int, where: str = "") -> None:
        """These options in a model of `num_layers` layers whose longest input is `max_seq_len`."""
        k = self.projected_length
        for name, value in (("projected_length", k), ("local_window", self.local_window)):
            if isinstance(value, tuple) and len(value) != num_layers:
                raise ValueError(
                    f"{name} has {len(value)} entries, expected one per layer (num_hidden_layers={num_layers})"
                )
        if self.global_tokens > max_seq_len:
            raise ValueError(
                f"global_tokens={self.global_tokens} must be at most max_seq_len={max_seq_len}"
                f"{f' ({where})' if where else ''}"
            )
        at = f" ({where})" if where else ""
        for layer_w in self.local_windows(num_layers):
            if layer_w is not None and layer_w >= max_seq_len:
                raise ValueError(
                    f"local_window={layer_w} must be below max_seq_len={max_seq_len}{at}: a window of ±{layer_w} "
                    "covers every input, which is full attention (projected_length none)"
                )
        full = all(layer_k is None for layer_k in self.projected_lengths(num_layers))
        if self.global_tokens and full and all(w is None for w in self.local_windows(num_layers)):
            raise ValueError(
                f"global_tokens={self.global_tokens} with full attention in every layer{at}: every token already "
                "attends to every token; global tokens go with projected_length or local_window"
            )
        check_exact_length(self.exact_length, self.projected_lengths(num_layers), max_seq_len, at)
        if isinstance(k, tuple) and self.sharing == "layerwise" and len(set(k)) > 1:
            raise ValueError(
                f"sharing='layerwise' uses one projection for every layer, so projected_length must be "
                f"a single k, got {list(k)}"
            )
        for layer_k in self.projected_lengths(num_layers):
            if layer_k is not None:
                check_projected_length(layer_k, max_seq_len, self.projection, where)

    def _check_local(self) -> None:
        """w >= 0 (one, one per layer, or None) and g >= 0, as plain ints (they are saved as JSON)."""
        w = self.local_window
        if isinstance(w, list):
            object.__setattr__(self, "local_window", w := tuple(w))
        if isinstance(w, tuple) and not w:
            raise ValueError("local_window: an empty list (give one w per layer, one w, or None)")
        for layer_w in w if isinstance(w, tuple) else () if w is None else (w,):
            if layer_w is not None and as_size("local_window", layer_w) < 0:
                raise ValueError(f"local_window (w={layer_w}) must be >= 0 (0: each query's own key)")
        if w is not None:
            object.__setattr__(
                self, "local_window",
                tuple(None if x is None else int(x) for x in w) if isinstance(w, tuple) else int(w),
            )  # fmt: skip
        if as_size("global_tokens", self.global_tokens) < 0:
            raise ValueError(f"global_tokens must be >= 0, got {self.global_tokens}")
        object.__setattr__(self, "global_tokens", int(self.global_tokens))
        object.__setattr__(self, "exact_length", exact_length_value(self.exact_length))

    def _check_combinations(self) -> None:
        if self.projection_scaling == "length" and self.projection not in ("linear", "random"):
            raise ValueError(
                f"projection_scaling='length' applies to dense projections (linear, random), "
                f"not projection={self.projection!r}: pooling already averages over the real tokens of a window"
            )
        if (
            self.projection_scaling == "length"
            and self.projection == "linear"
            and self.projection_init == "window"
        ):
            raise ValueError(
                "projection_scaling='length' restores the key norm of a zero-mean random E on short inputs; "
                "projection_init='window' starts E as window means, which need no scaling: set "
                "projection_init='random' with it, or no scaling"
            )


DEFAULT_OPTIONS = LinformerOptions()
# the option names, in definition order: every list of them elsewhere is derived from this one
OPTION_NAMES: tuple[str, ...] = tuple(option.name for option in dataclasses.fields(LinformerOptions))

HELP: dict[str, str] = {  # the command-line help of each option (every verb that takes it)
    "projected_length": "Linformer k: K (every layer), K1,K2,... (one per layer; 'none' for a full-attention layer), or 'none' for full attention",
    "sharing": "E/F sharing (paper §4): none (per head), headwise (per layer), kv (E = F), layerwise (one E)",
    "projection": "projection kind (paper §4-5): linear (learned E), mean / max pooling, conv, random (fixed)",
    "projection_init": "how new E, F start: 'window' (each slot the mean of n/k neighbouring positions; learns "
    "local context, docs/reproduction.md) or 'random' (zero-mean N(0, 1/n), the paper's)",
    "projection_scaling": "'length': scale E(mX) by sqrt(n / real tokens) so short inputs keep full-length key "
    "norms (dense E with the random start only)",
    "short_inputs": "sequences of at most k real tokens: 'exact' softmax attention or 'project' to k slots "
    "(the paper)",
    "projection_order": "'auto' (project before the key/value linears where it applies) or 'paper'",
    "local_window": "W: each query also attends exactly to the real keys within W positions, in one softmax "
    "with the k slots (W, W1,W2,... one per layer, or 'none'); keeps the heads that read a neighbour",
    "global_tokens": "G: the first G tokens (e.g. [CLS]) are exact keys of every query and attend to every "
    "token (Longformer's global attention); 0 for none",
    "exact_length": "T: a sequence of at most T real tokens takes exact softmax attention with the same weights "
    "(T >= k; e.g. the original's 512 for a student extended past it: as fast as the original up to T); "
    "'none': short_inputs alone decides",
}


def option_field(name: str, default: object = dataclasses.MISSING, note: str = "") -> Any:
    """A config dataclass field for option `name`: the options' default (or a verb's own) and help text.

    Typed `Any`, as `dataclasses.field` is to a type checker, so `sharing: Sharing = option_field(...)` checks.
    `note` is added to the help (e.g. "new models only"). A verb that chooses another default passes
    it here, where the reason is written next to it.
    """
    value = getattr(DEFAULT_OPTIONS, name) if default is dataclasses.MISSING else default
    help_text = HELP[name] + (f"; {note}" if note else "")
    metavar = {"projected_length": "K", "local_window": "W", "global_tokens": "G", "exact_length": "T"}
    metadata = {"help": help_text, **({"metavar": metavar[name]} if name in metavar else {})}
    return dataclasses.field(default=value, metadata=metadata)


__all__ = [  # what the package re-exports (nn/__init__.py)
    "DEFAULT_OPTIONS", "PROJECTION_INITS", "PROJECTION_KINDS", "PROJECTION_ORDERS", "PROJECTION_SCALINGS",
    "SHARING_MODES", "SHORT_INPUTS", "LinformerOptions", "ProjectionInit", "ProjectionKind",
    "ProjectionOrder", "ProjectionScaling", "Sharing", "ShortInputs", "format_projected_length",
    "parse_projected_length",
]  # fmt: skip
