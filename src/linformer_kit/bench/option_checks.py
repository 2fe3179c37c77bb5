"""The small checks and parser of BenchmarkConfig's values (bench/config.py calls them when it validates).

    is_int              an int that is not a bool
    check_choices       a non-empty list of values, each one of the allowed
    check_local_windows a non-empty list of windows, each an int >= 0 or None
    parse_local_window  one word of `--local-windows none 0 16`: 'none' is None, else an int

They take values, not the config: this module imports nothing of bench.
"""

from __future__ import annotations


def check_local_windows(windows: tuple[int | None, ...]) -> None:
    if not isinstance(windows, (tuple, list)) or not windows:
        raise ValueError(
            f"local_windows must be a non-empty list of windows (None: no window), got {windows!r}"
        )
    for w in windows:
        if w is not None and not (is_int(w) and w >= 0):
            raise ValueError(
                f"local_windows must hold windows w >= 0 (an int) or None (no window), got {w!r} in {windows}"
            )


def parse_local_window(text: str) -> int | None:
    """One word of `--local-windows none 0 16`: 'none' (any case) is None, else an int (the config checks it)."""
    if text.strip().lower() == "none":
        return None
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"local_windows: {text!r} is not a window (an int >= 0, or none)") from None


def is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_choices(name: str, values: tuple[str, ...], allowed: tuple[str, ...]) -> None:
    if not values:
        raise ValueError(f"{name} must not be empty; choose from {allowed}")
    bad = [v for v in values if v not in allowed]
    if bad:
        raise ValueError(f"unknown {name} {bad}; choose from {allowed}")
