"""Every figure of the README's results table and of the docs' "The answer" sections equals its evidence file.

FIGURES holds one line per figure (or per table row): the Markdown file, a snippet quoted from it with each
figure in braces, and one source per brace, in order. The test checks that the snippet (braces dropped,
whitespace runs read as one space, so a snippet may cross a line break) is in the file, and that each figure
is its source's value rounded to the decimals the text shows: "0.976" is the value to 3 decimals, "70" to
none; a space inside a number ("1 466") and a leading "+" are ignored. A source names its JSON file (under
docs/) and the key path in it:

    J("benchmarks/cpu-training/benchmark.json", "records", {"method": "full-sdpa", "n": 4096}, "time_median_s")

A str or int step indexes a dict or a list; a dict step picks the one element of a list whose fields equal it
(none or several is an error). Sources combine with + - * / and numbers (a ratio of two times, a difference
of two scores, a score / 100). `Many(...)` takes every element a dict step matches, and with the step "*"
every value of a dict: .mean(), .min(), .max(). `Least(a, b, ...)` (most=True: the greatest) spans runs
that live in different files.

A figure that holds by construction (fidelity 1.000 where the original's own weights read every input) is
marked `construction=True`, and its snippet must say "by construction": such a figure is no measurement.

Every number in the README's results table (its answer column) is either a figure here or a setting listed in
README_SETTINGS (a length, a k, a hardware name), so a new number there fails until it names its source.

To add a figure: quote the shortest unique part of its sentence, brace the number, name its source. To change
one: change the doc and its evidence file together; this test fails while they differ.
"""

from __future__ import annotations

import functools
import json
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from linformer_kit.models import token_groups
from linformer_kit.models.paired import difference, differences
from tests.test_readme import results_section

ROOT = Path(__file__).parents[1]
DOCS = ROOT / "docs"


@functools.cache
def load(file: str) -> Any:
    return json.loads((DOCS / file).read_text())


def walk(node: Any, path: tuple, many: bool) -> list[Any]:
    """The values at `path` under `node`: one, or with `many` every element a dict step matches."""
    if not path:
        return [node]
    step, rest = path[0], path[1:]
    if step == "*":  # every value of a dict or element of a list
        assert many, "'*' takes several values: use Many"
        items = node.values() if isinstance(node, dict) else node
        return [value for item in items for value in walk(item, rest, many)]
    if isinstance(step, dict):
        assert isinstance(node, list), f"selector {step} on a {type(node).__name__}, not a list"
        found = [item for item in node if all(item.get(key) == want for key, want in step.items())]
        assert found, f"no element matches {step}"
        assert many or len(found) == 1, (
            f"{len(found)} elements match {step}: add a field that tells them apart"
        )
        return [value for item in found for value in walk(item, rest, many)]
    assert isinstance(node, (dict, list)), f"step {step!r} on a {type(node).__name__}"
    return walk(node[step], rest, many)


class Source:
    """A number read from an evidence file, or computed from such numbers."""

    def value(self) -> float:
        raise NotImplementedError

    def _op(self, other: Source | float, op: Callable[[float, float], float], sign: str) -> Source:
        return Op(self, other, op, sign)

    def __add__(self, other: Source | float) -> Source:
        return self._op(other, operator.add, "+")

    def __sub__(self, other: Source | float) -> Source:
        return self._op(other, operator.sub, "-")

    def __mul__(self, other: Source | float) -> Source:
        return self._op(other, operator.mul, "*")

    def __truediv__(self, other: Source | float) -> Source:
        return self._op(other, operator.truediv, "/")


class J(Source):
    """The number at a key path of a JSON file under docs/."""

    def __init__(self, file: str, *path: Any) -> None:
        self.file, self.path = file, path

    def value(self) -> float:
        (value,) = walk(load(self.file), self.path, many=False)
        assert isinstance(value, (int, float)), f"{self}: {value!r} is not a number"
        return float(value)

    def __repr__(self) -> str:
        return f"{self.file}{''.join(f'[{step!r}]' for step in self.path)}"


class Paired(Source):
    """A paired difference of a run's records (models/paired.py, from each record's per-query hits): the
    difference in points, or the low or high end of its 95 % interval."""

    def __init__(self, file: str, length: int, method: str, against: str, part: str = "difference") -> None:
        self.file, self.length, self.method, self.against, self.part = file, length, method, against, part

    def value(self) -> float:
        (entry,) = [e for e in differences(load(self.file)["records"])
                    if (e["length"], e["method"], e["against"]) == (self.length, self.method, self.against)]  # fmt: skip
        return float(entry[self.part])

    def __repr__(self) -> str:
        return f"{self.file}: {self.method} - {self.against} at {self.length} ({self.part})"


class Many:
    """Every number a path's dict step matches (seeds, students): reduce it with .mean(), .min(), .max()."""

    def __init__(self, file: str, *path: Any) -> None:
        self.file, self.path = file, path

    def values(self) -> list[float]:
        return [float(value) for value in walk(load(self.file), self.path, many=True)]

    def mean(self) -> Source:
        return Reduce(self, "mean", lambda values: sum(values) / len(values))

    def min(self) -> Source:
        return Reduce(self, "min", min)

    def max(self) -> Source:
        return Reduce(self, "max", max)

    def __repr__(self) -> str:
        return f"{self.file}{''.join(f'[{step!r}]' for step in self.path)}"


class Reduce(Source):
    def __init__(self, many: Many, name: str, reduce: Callable[[list[float]], float]) -> None:
        self.many, self.name, self.reduce = many, name, reduce

    def value(self) -> float:
        return self.reduce(self.many.values())

    def __repr__(self) -> str:
        return f"{self.name}({self.many})"


class Op(Source):
    def __init__(self, a: Source, b: Source | float, op: Callable[[float, float], float], sign: str) -> None:
        self.a, self.b, self.op, self.sign = a, b, op, sign

    def value(self) -> float:
        b = self.b.value() if isinstance(self.b, Source) else self.b
        return self.op(self.a.value(), b)

    def __repr__(self) -> str:
        return f"({self.a} {self.sign} {self.b})"


class Least(Source):
    """The least (or with `most`, the greatest) of several sources: a range over runs in different files."""

    def __init__(self, *sources: Source, most: bool = False) -> None:
        self.sources, self.most = sources, most

    def value(self) -> float:
        return (max if self.most else min)(source.value() for source in self.sources)

    def __repr__(self) -> str:
        return f"{'max' if self.most else 'min'}{self.sources}"


class ProfileMs(Source):
    """An op's self CPU time a call, in ms, in a torch.profiler table under docs/ (scripts/cpu/encoder_profile.py:
    the table's totals over "N profiled call(s)")."""

    def __init__(self, file: str, op: str) -> None:
        self.file, self.op = file, op

    def value(self) -> float:
        text = (ROOT / "docs" / self.file).read_text()
        calls = int(re.search(r"^(\d+) profiled call", text, flags=re.MULTILINE).group(1))
        (row,) = [line.split() for line in text.splitlines() if line.split()[:1] == [self.op]]
        amount, unit = re.fullmatch(r"([\d.]+)(us|ms|s)", row[2]).groups()
        return float(amount) * {"us": 1e-3, "ms": 1.0, "s": 1e3}[unit] / calls

    def __repr__(self) -> str:
        return f"{self.file}[{self.op}] / calls"


class Count(Source):
    """A figure counted, not measured (multiply-adds of a layer's shape): its arithmetic, written out."""

    def __init__(self, formula: str, value: float) -> None:
        self.formula, self._value = formula, value

    def value(self) -> float:
        return self._value

    def __repr__(self) -> str:
        return self.formula


class From(Source):
    """The least n from which `make(n)` stays above `above` at every larger n of `ns` ("faster from n = 8 192");
    with `up_to`, the greatest n up to which it stays above ("beats chunking to 2 048")."""

    def __init__(
        self, ns: tuple[int, ...], make: Callable[[int], Source], above: float, up_to: bool = False
    ) -> None:
        self.ns, self.make, self.above, self.up_to = ns, make, above, up_to

    def value(self) -> float:
        ns = sorted(self.ns, reverse=not self.up_to)  # walk from the side the claim holds on
        held = [n for n in ns if self.make(n).value() > self.above]
        reached = None
        for n in ns:
            if n not in held:
                break
            reached = n
        assert reached is not None, f"{self}: holds at no n"
        return float(reached)

    def __repr__(self) -> str:
        side = "up to" if self.up_to else "from"
        return f"the n {side} which {self.make(self.ns[0])} (at n = {self.ns[0]}, ...) > {self.above}, n in {self.ns}"


@dataclass(frozen=True)
class F:
    """A snippet of a Markdown file with its figures in braces, and one source per figure."""

    doc: str
    snippet: str
    sources: tuple[Source, ...]
    construction: bool = False

    def __init__(self, doc: str, snippet: str, *sources: Source, construction: bool = False) -> None:
        object.__setattr__(self, "doc", doc)
        object.__setattr__(self, "snippet", snippet)
        object.__setattr__(self, "sources", sources)
        object.__setattr__(self, "construction", construction)

    @property
    def text(self) -> str:
        return spaced(self.snippet.replace("{", "").replace("}", ""))

    @property
    def figures(self) -> list[str]:
        return re.findall(r"\{([^{}]*)\}", self.snippet)


def spaced(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def bare(figure: str) -> str:
    """A figure as Python writes it: "1 466" -> "1466", "+4" -> "4", a Unicode minus -> "-"."""
    written = figure.replace(" ", "").replace("\u202f", "").replace("\u2212", "-").lstrip("+")
    assert re.fullmatch(r"-?\d+(\.\d+)?", written), f"{figure!r} is not a number"
    return written


def as_written(figure: str, value: float) -> str:
    """`value` rounded to the decimals `figure` shows, as `bare` writes it."""
    return f"{value:.{len(bare(figure).partition('.')[2])}f}"


# fmt: off
# The documents
README = "README.md"
LONGDOCS = "docs/longdocs.md"
DISTILL = "docs/distill.md"
DISTILL_MINILM = "docs/reproduction/distill-minilm/README.md"  # the 512 students' record, moved from docs/distill.md (issue 83)
DISTILL_LONG = "docs/reproduction/long-minilm/long4096-readme/README.md"  # the long student's record, moved from docs/distill.md
DISTILL_HISTORY = "docs/reproduction/long-minilm/README.md"  # the long stage's earlier runs, moved from docs/distill.md
STUDY = "docs/reproduction.md"
STUDY_PAPER = "docs/reproduction/cpu-paper/README.md"  # the study's record, moved from docs/reproduction.md (issue 83)
BENCHMARKS = "docs/benchmarks.md"
# The lab records docs/benchmarks.md links, each beside its evidence (docs/benchmarks/FOLDER/README.md)
AB_DOC = "docs/benchmarks/ab-5a34af5/README.md"
BAND_DOC = "docs/benchmarks/split-band/README.md"
NATIVE_DOC = "docs/benchmarks/native/README.md"
TRAIN_DOC = "docs/benchmarks/split-train/README.md"
STUDENTS_DOC = "docs/benchmarks/student-cpu/README.md"
PADDED_DOC = "docs/benchmarks/padded-batch/README.md"

# Evidence files (under docs/) that several figures read
GPU_LAYER = "benchmarks/gpu/layer/benchmark.json"
GPU_STUDENT = "benchmarks/gpu/student/student_speed.json"
CPU_TRAINING = "benchmarks/cpu-training/benchmark.json"
CPU_LIMITS = "benchmarks/student-cpu/limits-band/student.json"  # four students, the band read in place
EXACT512 = "benchmarks/student-cpu/exact512/student.json"
CPU_LOCAL = "reproduction/cpu-local/results.json"
CPU_LOCAL_LONG = "reproduction/cpu-local-long/results.json"
GPU_LEARNS = "reproduction/gpu-learns/results.json"
PAPER = "reproduction/cpu-paper/results.json"
P7500 = "reproduction/cpu-paper-7500/results.json"
P12000 = "reproduction/cpu-paper-12000/results.json"
MORE = "reproduction/cpu-paper-more/results.json"
MINILM = "reproduction/distill-minilm"
GRID = f"{MINILM}/grid-{{}}.json"  # the distill grid on 1 000 IMDB test reviews, at 512 or 256 tokens
QUALITY = f"{MINILM}/quality-1000.json"  # the recommended 512 student on the same reviews: fidelity, probe, recall
MINILM_512 = f"{MINILM}/k128-w64-g1-e2e.json"  # its `distill` report
LONG = "reproduction/long-minilm"
ANSWER = f"{LONG}/answer/longdocs.json"  # `c1` and the original's chunks, seeds 1-3
README_RUN = f"{LONG}/long4096-readme"  # the default long student (the README's long command), seed 1
CHUNKS_KEYS = f"{LONG}/long4096/longdocs.json"  # the original's chunks on passkey, seed 1
CHUNKS_BOOKS = f"{LONG}/long4096-books/longdocs.json"  # the original's chunks on book halves, seed 1
CHUNKS_ACCESS = f"{LONG}/long4096-c1-books-short/access-code/longdocs.json"  # the original's chunks on access code

KEYS = (1024, 2048, 4096)
METHODS = ("whole", "late-chunking-512", "truncate-512", "chunks-mean-512", "chunks-best-512")
GPU_NS = (512, 1024, 2048, 4096, 8192, 16384, 32768, 65536)
KB_TO_GB = 1024 / 1e9  # /usr/bin/time's peak RSS is in KiB; the docs write decimal GB

# Multiply-adds a layer of the MiniLM student at n = 4 096 (D 384, FFN 4D, k 128, window ±64, 1 global key,
# exact_length T = 512): its linears, the projection of K and V, attention to the k slots, the window and
# the global key. The sync-free exact path adds the K and V linears and exact attention on T tokens (a
# FlopCounterMode count of the layer agrees: 2 T D² in the linears, 2 T² D under SDPA's math kernel).
D, N, T, K, W, R = 384, 4096, 512, 128, 64, 16
LAYER = 12 * N * D * D + 2 * N * K * D + 2 * N * (K + 2 * W + 1 + 1) * D
EXACT_PATH = Count("(2 T D² + 2 T² D) / layer, %", 100 * (2 * T * D * D + 2 * T * T * D) / LAYER)
ADAPTERS = Count("8 D r / 12 D², %", 100 * 8 * D * R / (12 * D * D))  # 4 rank-r updates / the 12 D² of the linears


# Benchmarks
def gpu_layer(method: str, n: int, k: int | None = None) -> J:
    return J(GPU_LAYER, "records", {"method": method, "n": n, "k": k, "scope": "layer", "pass_type": "forward"}, "time_median_s")


def gpu_layer_best(n: int) -> Source:
    """The best speed-up of the kit's Linformer layers (every sharing, k 128-512) over flash attention at n."""
    methods = ("linformer-headwise", "linformer-kv", "linformer-layerwise")
    return Least(*(gpu_layer("full-sdpa", n) / gpu_layer(method, n, k) for method in methods for k in (128, 256, 512)), most=True)


def gpu_student(model: str, method: str, n: int, batch: int) -> J:
    return J(GPU_STUDENT, "records", {"mode": "inference", "model": model, "method": method, "n": n, "batch": batch}, "seconds_median")


def cpu_training_speedup(n: int) -> Source:
    def time(method: str) -> J:
        return J(CPU_TRAINING, "records", {"method": method, "n": n}, "time_median_s")

    return time("full-sdpa") / time("linformer-headwise")


def chunk_ratios(key: str, file: str = CPU_LIMITS) -> Many:
    """The four students' ratios to 8 chunks of 512 at 4 096 tokens, torch (limits/student.json): "speed" or "flop_limit"."""
    return Many(file, "ratios", {"runtime": "torch", "n": 4096, "baseline": "chunks"}, key)


def exact512(student: str, n: int, batch: int, baseline: str = "original") -> J:
    return J(EXACT512, "ratios", {"student": student, "runtime": "torch", "n": n, "batch": batch, "baseline": baseline}, "speed")


AB = "benchmarks/ab-5a34af5"  # main 5a34af5 and 3876da5 side by side, two runs each (docs/benchmarks/ab-5a34af5/README.md)


def ab_ratio(side: str, run: int, n: int, baseline: str) -> J:
    """The student / original texts/s of one side and run of the A/B at batch 1."""
    return J(f"{AB}/student-{side}-{run}.json", "ratios", {"n": n, "batch": 1, "baseline": baseline}, "speed")


BAND = "benchmarks/split-band"  # 1a4727f and 169ef86 side by side, three runs each (docs/benchmarks/split-band/README.md)


def batch1_ratio(file: str, n: int, baseline: str, key: str = "speed") -> J:
    """The student / original texts/s (or another ratio key) at batch 1 of one `--preset student` record."""
    return J(file, "ratios", {"n": n, "batch": 1, "baseline": baseline}, key)


def level(stem: str, *, most: bool = False) -> Source:
    """The least (or greatest) ratio to the original up to 512 tokens, every batch, over the runs STEM-1..3.json:
    an A/B's "level" row."""
    runs = [Many(f"{stem}-{r}.json", "ratios", {"baseline": "original"}, "speed") for r in (1, 2, 3)]
    return Least(*(run.max() if most else run.min() for run in runs), most=most)


def at_4096(file: str, student: str, baseline: str, key: str = "speed") -> J:
    """One student's ratio at 4 096 tokens, torch, in a several-student record (the FLOP-limit table's)."""
    return J(file, "ratios", {"student": student, "runtime": "torch", "n": 4096, "baseline": baseline}, key)


def band_ratio(file: str, n: int, baseline: str) -> J:
    """The band's A/B (split-band/FILE.json)."""
    return batch1_ratio(f"{BAND}/{file}.json", n, baseline)


def band_level(side: str, *, most: bool = False) -> Source:
    return level(f"{BAND}/student-{side}", most=most)


def limits_band(student: str, baseline: str, key: str = "speed") -> J:
    return at_4096(CPU_LIMITS, student, baseline, key)


NATIVE = "benchmarks/native"  # 52226b2 (split) and the native kernel side by side, three runs each (docs/benchmarks/native/README.md)
CPU_LIMITS_NATIVE = "benchmarks/student-cpu/limits-native/student.json"  # the four students on the native kernel


def native_ratio(side: str, run: int, n: int, baseline: str, key: str = "speed") -> J:
    """One side and run of the native A/B (native/SIDE-RUN.json)."""
    return batch1_ratio(f"{NATIVE}/{side}-{run}.json", n, baseline, key)


def native_level(side: str, *, most: bool = False) -> Source:
    return level(f"{NATIVE}/{side}", most=most)


def native_layer(n: int, key: str, *path: str, file: str = "window-cores") -> J:
    return J(f"{NATIVE}/{file}.json", "rows", {"n": n}, key, *path)


def limits_native(student: str, baseline: str, key: str = "speed") -> J:
    return at_4096(CPU_LIMITS_NATIVE, student, baseline, key)


AVX2_CPU = "benchmarks/native/avx2-cpu"  # the kernel on two threads, a 2-core AVX2-only EPYC (2026-12-07)
AVX2_DOC = "docs/benchmarks/native/avx2-cpu/README.md"


STEP_PROFILE = "benchmarks/native/avx2-cpu/step-profile-linformer.json"  # scripts/cpu/training_step_profile.py


def avx2_student(run: int | str, baseline: str, key: str = "speed") -> J:
    """`--preset student` on the AVX2 EPYC: run 1, 2 (the threaded kernel) or "before" (one thread)."""
    return batch1_ratio(f"{AVX2_CPU}/student-{run}.json", 4096, baseline, key)


def avx2_level(run: int | str, *, most: bool = False) -> Source:
    """The least (greatest) student / original ratio up to 512 tokens in one AVX2 run: one computation's noise."""
    ratios = Many(f"{AVX2_CPU}/student-{run}.json", "ratios", {"baseline": "original"}, "speed")
    return ratios.max() if most else ratios.min()


def avx2_encode(run: int, case: str) -> J:
    return J(f"{AVX2_CPU}/encode-fp32-{run}.json", "cases", {"case": case}, "student_speed_over_chunks")


def avx2_layer(file: str, n: int) -> J:
    return J(f"{AVX2_CPU}/window-cores-{file}.json", "rows", {"n": n}, "native_over_split")


def avx2_layers(*, most: bool = False) -> Source:
    """The least (greatest) native / split layer time over both threaded runs and every length."""
    return Least(*(avx2_layer(r, n) for r in ("1", "2") for n in (512, 1024, 4096)), most=most)


def avx2_training(run: int, key: str | None = None) -> Source:
    """The Linformer training step's % of the GEMM rate of its own rounds (--preset training, n = 2 048); with
    `key`, that rate (achieved_flops_per_s, matmul_flops_per_s) in GFLOP/s."""
    record = (f"{AVX2_CPU}/training-{run}.json", "records", {"method": "linformer-headwise"})
    if key is not None:
        return J(*record, key) / 1e9
    return J(*record, "achieved_flops_per_s") / J(*record, "matmul_flops_per_s") * 100


CPU_WINDOW = "benchmarks/cpu-window/benchmark.json"  # one layer, fp32, 2 AVX-512 cores (2026-11-26): k = 128, windows none to 64, SDPA


def cpu_layer(method: str, n: int, window: int | None = None) -> J:
    """One layer's forward seconds in the local window's run (`local_window` None: no window)."""
    return J(CPU_WINDOW, "records", {"method": method, "n": n, "pass_type": "forward", "local_window": window}, "time_median_s")


TRAIN = "benchmarks/split-train"  # the window's training core: SDPA's query blocks against split (docs/benchmarks/split-train/README.md)


def train_ab(shape: str) -> tuple[Source, ...]:
    """A student step's A/B (student-SHAPE.json): SDPA's time and peak, split's, and the two ratios."""
    file = f"{TRAIN}/student-{shape}.json"
    return (J(file, "median_s", "sdpa"), J(file, "peak_mib", "sdpa"), J(file, "median_s", "split"),
            J(file, "peak_mib", "split"), J(file, "split_over_sdpa_time"), J(file, "split_over_sdpa_peak"))


def long_stage(side: str, run: int, key: str) -> J:
    """The 4-step long stage's seconds ("stage_seconds") or peak GB ("stage_peak_gb"), one side and run."""
    return J(f"{TRAIN}/long-{side}-{run}.json", key, "long")


def avx2_gemm(mode: str, run: int) -> Source:
    """The training step's % of the GEMM rate with the ISA held to AVX2 ("avx2") or not ("native")."""
    record = (f"benchmarks/train-avx2/train-{mode}-{run}.json", "records", {"method": "linformer-headwise"})
    return J(*record, "achieved_flops_per_s") / J(*record, "matmul_flops_per_s") * 100


def avx2_rate(mode: str, *, most: bool = False) -> Source:
    """The least (or greatest) GEMM rate of one mode's two runs, GFLOP/s."""
    rates = [J(f"benchmarks/train-avx2/train-{mode}-{r}.json", "records", {"method": "linformer-headwise"}, "matmul_flops_per_s") / 1e9 for r in (1, 2)]
    return Least(*rates, most=most)


def ab_gemm(side: str, run: int) -> Source:
    """The Linformer training step's achieved FLOP/s over the GEMM rate of its own rounds, in %."""
    record = (f"{AB}/train-{side}-{run}.json", "records", {"method": "linformer-headwise"})
    return J(*record, "achieved_flops_per_s") / J(*record, "matmul_flops_per_s") * 100


# w64 with exact_length 512 against the original up to 512, but the n = 128, batch 32 row (its spread baseline)
EXACT512_LEVEL = tuple(exact512("w64", n, batch) for n, batch in ((128, 1), (256, 16), (256, 1), (512, 8), (512, 1)))


# Pretraining and finetuning studies (results.json)
def run(file: str, name: str, key: str = "val_perplexity") -> J:
    return J(file, "runs", {"name": name}, key)


def finetuned(file: str, pretrained: str, dataset: str = "imdb") -> J:
    return J(file, "finetune_summary", {"dataset": dataset, "pretrained": pretrained}, "mean")


def ppl(name: str, file: str = PAPER) -> J:
    return run(file, name)


def floors(name: str, file: str = PAPER) -> J:
    return run(file, name, "no_context_perplexity")


def ppl_floor(name: str, file: str = PAPER) -> tuple[Source, Source]:
    """A run's perplexity and its ratio to its masks' no-context floor: "**213.0** (0.95)"."""
    return ppl(name, file), ppl(name, file) / floors(name, file)


def params(name: str) -> Source:
    return run(PAPER, name, "num_parameters") / 1e6


# Distillation
def grid(model: str, length: int = 512, key: str = "fidelity") -> J:
    """A student's fidelity on the 1 000 random IMDB test reviews (the distill grid)."""
    return J(GRID.format(length), "models", model, key)


def grid_row(name: str) -> list[Source]:
    """A row of the grid table in docs/reproduction/distill-minilm/README.md: drop-in at 512 / 256, then 150 steps at 512 / 256."""
    return [grid(f"drop-in-{name}"), grid(f"drop-in-{name}", 256), grid(f"e2e150-{name}"), grid(f"e2e150-{name}", 256)]


def quality(model: str, key: str) -> J:
    return J(QUALITY, "models", model, key)


def stage_minutes(file: str, stage: str = "end-to-end") -> Source:
    return J(file, "stage_seconds", stage) / 60


# Long documents (`linformer longdocs` records)
def score(file: str, task: str, length: int, method: str, seed: int = 1) -> J:
    """A `linformer longdocs` score: the record's `score` (depth None: over every depth)."""
    return J(file, "records", {"task": task, "length": length, "method": method, "seed": seed, "depth": None}, "score")


def seeds_mean(file: str, task: str, length: int, method: str) -> Source:
    """The mean over seeds of a `linformer longdocs` score (the gathered tables' means)."""
    return Many(file, "records", {"task": task, "length": length, "method": method, "depth": None}, "score").mean()


def c1(task: str, lengths: tuple[int, ...], methods: tuple[str, ...]) -> list[Source]:
    """`c1`'s table in docs/longdocs.md: for each method, each length's mean over seeds."""
    return [seeds_mean(ANSWER, task, n, method) for method in methods for n in lengths]


def readme_run(task: str, lengths: tuple[int, ...]) -> list[Source]:
    """The default long student's `whole` scores (`readme`, seed 1)."""
    return [score(f"{README_RUN}/{task}/longdocs.json", task, n, "whole") for n in lengths]


CURVE = f"{LONG}/curve/curve.json"  # the learning curve (scripts/cpu/long_curve.py)


def curve(steps: str, task: str, method: str, n: int = 4096, schedule: int = 80, seed: int | None = None) -> J:
    """A point of the learning curve: its mean over the seeds it has, or one seed's score."""
    cell = (CURVE, f"{steps} (schedule {schedule})", f"{task}@{n}", method)
    return J(*cell, "mean") if seed is None else J(*cell, "scores", seed - 1)


C160 = f"{LONG}/curve/c160"  # the 160-step student (training seed 42)
S43 = f"{LONG}/curve/c160-s43"  # the 160-step stage's second training seed


def paired(n: int, method: str, against: str, run: str = C160) -> tuple[Paired, Paired, Paired]:
    """A paired difference over every pair of the test books at n tokens (the run's allpairs-n) and its 95 %
    interval's ends, as "+4.1 [+0.8, +7.4]"."""
    file = f"{run}/allpairs-{n}/longdocs.json"
    return tuple(Paired(file, n, method, against, part) for part in ("difference", "low", "high"))  # type: ignore[return-value]


HELD = f"{LONG}/heldout/h40-s42/longdocs.json"  # the student of --long-held-out 0.4 and the original's chunkings
HELD_SET = f"{LONG}/heldout/books.json"  # the held-out books and the pairs they hold
HELD_DOC = f"docs/{LONG}/heldout/README.md"
HELD_2048 = f"{LONG}/heldout/h40-s42-2048/longdocs.json"  # every method and chunking at 2 048, one run
HELD_K256 = f"{LONG}/heldout/h40-k256-s42/longdocs.json"  # k = 256 at 4 096, with the same chunkings
HELD_WHOLE = f"{LONG}/heldout/h40-whole-s42/longdocs.json"  # --halves whole, with the same chunkings
STRONGEST = "strongest chunking"
READINGS_K256 = f"{LONG}/heldout/readings-k256.json"  # scripts/cpu/heldout_readings.py: Chamfer and MRR, dev / test
READINGS_WHOLE = f"{LONG}/heldout/readings-whole.json"  # the same of the --halves whole student
READINGS_S43 = f"{LONG}/heldout/readings-whole-s43.json"  # the same of its second training seed
WHOLE_S43 = f"{LONG}/heldout/h40-whole-s43/metrics.json"  # that seed's `distill` report
KEYS_WHOLE = f"{LONG}/heldout/h40-whole-s42/keys/longdocs.json"  # passkey and access code of the --halves whole student
READINGS_CAP = f"{LONG}/heldout/readings-cap4-s42.json"  # --halves whole with --long-spans-per-document 4
READINGS_BANK = f"{LONG}/heldout/readings-bank-s42.json"  # --halves whole with --negatives-bank 128, test draw
BANK = f"{LONG}/heldout/h40-bank-s42/metrics.json"  # its `distill` report
SPAN_SOURCES = f"{LONG}/heldout/long-span-sources.json"  # the documents the long stage's spans are cut from
READINGS_2048 = f"{LONG}/heldout/readings-whole-2048.json"  # the two --halves whole students at 2 048
READINGS_S43_2048 = f"{LONG}/heldout/readings-whole-s43-2048.json"


def reading(split: str, name: str, key: str, *index: int, file: str = READINGS_K256) -> J:
    """A reading's figure in heldout_readings.py's record: hit@1, MRR, or an end of a paired interval."""
    return J(file, split, "readings", name, key, *index)


def reading_interval(split: str, name: str, key: str, file: str = READINGS_K256) -> tuple[J, J, J]:
    return tuple(reading(split, name, key, i, file=file) for i in range(3))  # type: ignore[return-value]


def held_paired(method: str, against: str, n: int = 4096, file: str | None = None) -> tuple[Paired, Paired, Paired]:
    """A paired difference on the held-out books at n tokens (300 pairs) and its interval's ends."""
    file = file or (HELD if n == 4096 else HELD_2048)
    return tuple(Paired(file, n, method, against, part) for part in ("difference", "low", "high"))  # type: ignore[return-value]


class Between(Source):
    """A paired difference of one reading by two students on the same queries (models/paired.py's `difference`,
    student a's hits against student b's), or an end of its interval."""

    def __init__(self, a: str, b: str, method: str, part: int) -> None:
        self.a, self.b, self.method, self.part = a, b, method, part

    def value(self) -> float:
        hits = [{r["seed"]: r["hits"] for r in load(f)["records"] if r["method"] == self.method} for f in (self.a, self.b)]
        return difference(*hits)[self.part]

    def __repr__(self) -> str:
        return f"{self.a} - {self.b}: {self.method} [{self.part}]"


ENCODE = "benchmarks/encode/encode-fp32.json"  # SentenceTransformer.encode at batch 32, the long student vs chunks
ENCODE_DOC = "docs/benchmarks/encode/README.md"
ENCODE_GROUPS = "benchmarks/encode/encode-groups-fp32.json"  # the same with token groups, and them off (--ungrouped)


def encode_case(case: str, key: str, *index: int) -> J:
    return J(ENCODE_GROUPS, "cases", {"case": case}, key, *index)


def autotune_row(dtype: str, n: int) -> tuple[J, J, J]:
    """One row of docs/benchmarks/autotune/README.md: the first call's seconds, the cost once, measured / static."""
    file = f"benchmarks/autotune/cost-{dtype}.json"
    return tuple(J(file, "lengths", {"n": n}, key) for key in ("first_call_s", "cost_once_s", "measured_over_static"))  # type: ignore[return-value]


AUTOTUNE_COSTS = [J(f"benchmarks/autotune/cost-{dtype}.json", "lengths", {"n": n}, "cost_once_s")
                  for dtype in ("fp32", "bf16") for n in (512, 2048, 4096)]  # fmt: skip


class VersusRecords(Source):
    """A paired difference (models/paired.py's `difference`) of one reading's hits in heldout_readings.py's record
    (ranks of 1) against another student's suite records of a method, on the same pairs, or an end of its
    interval."""

    def __init__(self, readings: str, reading: str, records: str, method: str, part: int) -> None:
        self.readings, self.reading, self.records, self.method, self.part = readings, reading, records, method, part

    def value(self) -> float:
        mine = [int(rank == 1) for rank in load(self.readings)["test"]["readings"][self.reading]["ranks"]]
        (theirs,) = [r["hits"] for r in load(self.records)["records"]
                     if (r["task"], r["method"], r["length"], r["seed"], r.get("depth")) == ("documents", self.method, 4096, 1, None)]  # fmt: skip
        readings = load(self.readings)["test"]["readings"]  # the same pairs in the same order: the chunks agree
        for reading, method in (("chunks-best", "chunks-best-512"), ("chunks-mean", "chunks-mean-512")):
            suite = [r["hits"] for r in load(HELD)["records"] if (r["method"], r["length"]) == (method, 4096)]
            assert suite == [[int(rank == 1) for rank in readings[reading]["ranks"]]], f"{self}: other pairs"
        return difference({1: mine}, {1: theirs})[self.part]

    def __repr__(self) -> str:
        return f"{self.readings} {self.reading} - {self.records} {self.method} [{self.part}]"


def bank_drop(name: str) -> Source:
    """Points a reading lost with --negatives-bank 128 (test draw, seed 42): without the bank minus with it."""
    return reading("test", name, "hit@1", file=READINGS_WHOLE) - reading("test", name, "hit@1", file=READINGS_BANK)


def between(a: str, b: str, method: str) -> tuple[Between, Between, Between]:
    return tuple(Between(a, b, method, part) for part in (0, 1, 2))  # type: ignore[return-value]


def readme_lead(task: str, n: int, chunks: str) -> Source:
    """The default long student's score over the original's best chunk."""
    return readme_run(task, (n,))[0] - score(chunks, task, n, "chunks-best-512")


def fidelity_range(folder: str) -> tuple[Source, Source]:
    """The least and the greatest `longdocs --tasks fidelity` score of a run, every domain and length."""
    every = Many(f"{folder}/fidelity/longdocs.json", "records", {"method": "whole", "depth": None}, "score")
    return every.min(), every.max()


README_FIDELITY = fidelity_range(README_RUN)[0] / 100  # 1.000 by construction: the original's weights read them
MEMORY = f"{README_RUN}/memory.json"
MEMORY_1129 = f"{LONG}/long4096-readme-1129/memory.json"  # the README's long command again, 2 AVX-512 cores, 2026-11-29
# Book halves at 4 096, whole text, in the six long stages of docs/reproduction/long-minilm/answer/README.md's "Why" (means where seeds are several)
SIX_STAGES_BOOKS = (
    score(f"{LONG}/long4096-books/longdocs.json", "books", 4096, "whole"),  # the first
    score(f"{LONG}/long4096-exact512-books/longdocs.json", "books", 4096, "whole"),
    score(f"{LONG}/long4096-v2-books/longdocs.json", "books", 4096, "whole"),
    seeds_mean(ANSWER, "books", 4096, "whole"),  # c1
    seeds_mean(f"{LONG}/long4096-c1-crops/books/longdocs.json", "books", 4096, "whole"),
    seeds_mean(f"{LONG}/long4096-proj/books/longdocs.json", "books", 4096, "whole"),
)
# `c1` over the best chunk on book halves at 1 024, each seed
C1_BOOKS_LEAD = tuple(score(ANSWER, "books", 1024, "whole", seed) - score(ANSWER, "books", 1024, "chunks-best-512", seed) for seed in (1, 2, 3))


FIGURES: tuple[F, ...] = (
    # docs/benchmarks/ab-5a34af5/README.md (from docs/benchmarks.md), "The student at 5a34af5 and now": both commits side by side
    F(AB_DOC, "| 8 chunks of 512 at 4 096, batch 1 | {0.93}x / {0.93}x | {0.95}x / {0.94}x |", *(ab_ratio(side, r, 4096, "chunks") for side in ("old", "new") for r in (1, 2))),
    F(AB_DOC, "| full attention at 4 096 (positions copied) | {2.27}x / {2.27}x | {2.30}x / {2.29}x |", *(ab_ratio(side, r, 4096, "full") for side in ("old", "new") for r in (1, 2))),
    F(AB_DOC, "% of the fp32 GEMM rate | {80} % / {77} % | {79} % / {81} % |", *(ab_gemm(side, r) for side in ("old", "new") for r in (1, 2))),
    # docs/benchmarks/split-band/README.md (from docs/benchmarks.md), "The split core's band read in place": 1a4727f and now side by side, the four students
    F(BAND_DOC, "| 8 chunks of 512 at 4 096, batch 1 | {0.95}x / {0.93}x / {0.96}x | {0.98}x / {0.98}x / {0.98}x | {1.05}x |", *(band_ratio(f"student-{side}-{r}", 4096, "chunks") for side in ("old", "new") for r in (1, 2, 3)), J(f"{BAND}/student-new-1.json", "ratios", {"n": 4096, "baseline": "chunks"}, "flop_limit")),
    F(BAND_DOC, "| full attention at 4 096 (positions copied) | {2.32}x / {2.29}x / {2.29}x | {2.39}x / {2.36}x / {2.39}x | {2.38}x |", *(band_ratio(f"student-{side}-{r}", 4096, "full") for side in ("old", "new") for r in (1, 2, 3)), J(f"{BAND}/student-new-1.json", "ratios", {"n": 4096, "baseline": "full"}, "flop_limit")),
    F(BAND_DOC, "| 128 and 512 tokens, batches 32 / 1 and 8 / 1 | {0.99}-{1.03}x | {0.97}-{1.01}x | 1.00x |", band_level("old"), band_level("old", most=True), band_level("new"), band_level("new", most=True)),
    F(BAND_DOC, "three rounds alternated; `block-64-*.json`, `block-32-*.json`): {0.97}x / {0.97}x / {0.97}x against\n{0.99}x / {0.99}x / {0.99}x chunks.", *(band_ratio(f"block-{b}-{r}", 4096, "chunks") for b in (64, 32) for r in (1, 2, 3))),
    F(BAND_DOC, "`avx2-*.json`): {0.95}x / {0.95}x / {0.96}x\nchunks at 1a4727f against {0.97}x / {0.99}x / {0.98}x now", *(band_ratio(f"avx2-{side}-{r}", 4096, "chunks") for side in ("old", "new") for r in (1, 2, 3))),
    F(BAND_DOC, "and {2.34}-{2.39}x against {2.42}-{2.46}x full attention.", *(Least(*(band_ratio(f"avx2-{side}-{r}", 4096, "full") for r in (1, 2, 3)), most=most) for side in ("old", "new") for most in (False, True))),
    F(STUDENTS_DOC, "the band read in place left\n  it at {1.35}-{1.47}x, limits-band/)", chunk_ratios("memory").min(), chunk_ratios("memory").max()),
    F(BAND_DOC, "| 8 chunks of 512 (FLOP limit) | {0.99}x ({1.05}x) | **{1.04}x** ({1.09}x) | **{1.03}x** ({1.10}x) | **{1.07}x** ({1.14}x) |", *(limits_band(st, "chunks", key) for st in ("w64", "w16", "k64", "k64-w16") for key in ("speed", "flop_limit"))),
    F(BAND_DOC, "| full attention (FLOP limit) | {2.40}x ({2.38}x) | {2.52}x ({2.47}x) | {2.52}x ({2.50}x) | {2.61}x ({2.59}x) |", *(limits_band(st, "full", key) for st in ("w64", "w16", "k64", "k64-w16") for key in ("speed", "flop_limit"))),
    F(STUDENTS_DOC, "0.98x / 0.98x / 0.98x the chunks in three runs beside the commit before, {2.36}-{2.39}x full attention.", Least(*(band_ratio(f"student-new-{r}", 4096, "full") for r in (1, 2, 3))), Least(*(band_ratio(f"student-new-{r}", 4096, "full") for r in (1, 2, 3)), most=True)),
    # docs/benchmarks/native/avx2-cpu/README.md: the kernel on two threads, a 2-core AVX2-only EPYC (2026-12-07)
    F(AVX2_DOC, "an identical computation (the\nstudent up to 512 tokens, which runs the original's) reads {0.84}-{1.12}x across runs", Least(*(avx2_level(r) for r in ("before", 1, 2))), Least(*(avx2_level(r, most=True) for r in ("before", 1, 2)), most=True)),
    *(F(AVX2_DOC, f"| {{{n:,}}} | {{{before}}} | {{{one}}} / {{{two}}} |".replace(",", " "), Count("n", n), avx2_layer("before", n), avx2_layer("1", n), avx2_layer("2", n)) for n, before, one, two in ((512, "1.00", "0.82", "0.75"), (1024, "0.98", "0.87", "0.89"), (4096, "1.00", "0.87", "0.87"))),
    F(AVX2_DOC, "| 8 chunks of 512 at 4 096, batch 1 | {0.93}x | **{1.12}x / {1.12}x** | {1.05}x |", *(avx2_student(r, "chunks") for r in ("before", 1, 2)), avx2_student(1, "chunks", "flop_limit")),
    F(AVX2_DOC, "| full attention at 4 096 (positions copied) | {2.35}x | {2.65}x / {2.54}x | {2.38}x |", *(avx2_student(r, "full") for r in ("before", 1, 2)), avx2_student(1, "full", "flop_limit")),
    F(AVX2_DOC, "against 512-token chunks | {0.95}x | {1.02}x / {1.13}x |", *(J(f"{AVX2_CPU}/student-{r}.json", "encode", {"student": "student"}, "speed_over_chunks") for r in ("before", 1, 2))),
    F(AVX2_DOC, "It reads {0.84}-{1.03}x before\nand {0.87}-{1.12}x now", avx2_level("before"), avx2_level("before", most=True), Least(avx2_level(1), avx2_level(2)), Least(avx2_level(1, most=True), avx2_level(2, most=True), most=True)),
    F(AVX2_DOC, "At 4 096 the student reads {1.07}x its FLOP limit against chunks.", avx2_student(1, "chunks") / avx2_student(1, "chunks", "flop_limit")),
    F(AVX2_DOC, "the student's\nattention kernels plus slot products took {311} + {51} + {16} ms where the chunks' attention took {326} ms. The linears\ncost the same ({848} against {801} ms `addmm`", *(ProfileMs(f"{AVX2_CPU}/profile-student-4096.txt", op) for op in ("aten::_scaled_dot_product_flash_attention_for_cpu", "aten::mm", "aten::bmm")), ProfileMs(f"{AVX2_CPU}/profile-original-8x512.txt", "aten::_scaled_dot_product_flash_attention_for_cpu"), ProfileMs(f"{AVX2_CPU}/profile-student-4096.txt", "aten::addmm"), ProfileMs(f"{AVX2_CPU}/profile-original-8x512.txt", "aten::addmm")),
    F(AVX2_DOC, "a batch of 4 096 + 300 tokens costs {1.07}x /\n{0.95}x its rows read alone with token groups (the default; goal 1.15x), against {3.73}x / {3.41}x", *(J(f"{AVX2_CPU}/padded-{r}.json", "cases", {"lengths": [4096, 300]}, key) for key in ("groups_over_alone", "routed_over_alone") for r in (1, 2))),
    F(BENCHMARKS, "| the same | 2-core AMD EPYC, AVX2 only, fp32 | {1.07}x / {0.95}x (two runs) |", *(J(f"{AVX2_CPU}/padded-{r}.json", "cases", {"lengths": [4096, 300]}, "groups_over_alone") for r in (1, 2))),
    F(AVX2_DOC, "That includes the AVX-512\nEPYC's {0.78}-{0.85}x", native_layer(512, "native_over_split"), native_layer(4096, "native_over_split")),
    F(AVX2_DOC, "the AVX-512 EPYC's {77}-{81} % may carry", Least(*(ab_gemm(side, r) for side in ("old", "new") for r in (1, 2))), Least(*(ab_gemm(side, r) for side in ("old", "new") for r in (1, 2)), most=True)),
    F(AVX2_DOC, "Their {1.03}-{1.13}x against chunks is from the one-thread kernel.", chunk_ratios("speed", CPU_LIMITS_NATIVE).min(), chunk_ratios("speed", CPU_LIMITS_NATIVE).max()),
    F(AVX2_DOC, "the\n`encode` runs below, at {1.16}-{1.22}x, are the stronger evidence", Least(*(avx2_encode(r, c) for r in (1, 2) for c in ("mixed", "similar"))), Least(*(avx2_encode(r, c) for r in (1, 2) for c in ("mixed", "similar")), most=True)),
    F("src/linformer_kit/nn/autotune.py", "on two threads,\n{0.75}-{0.89}x on an AVX2-only EPYC", avx2_layers(), avx2_layers(most=True)),
    F(AVX2_DOC, "| mixed, 128-4 096 tokens | **{1.21}x / {1.16}x** |", avx2_encode(1, "mixed"), avx2_encode(2, "mixed")),
    F(AVX2_DOC, "| similar, 2 900-3 100 tokens | **{1.22}x / {1.18}x** |", avx2_encode(1, "similar"), avx2_encode(2, "similar")),
    F(AVX2_DOC, "The Linformer step ran at {70.4} GFLOP/s, {70}-{78} % of two reference GEMMs of {90.0} and {100.1} GFLOP/s taken before\nand after it. Of its self time, {72.9} % is in GEMMs (`mm`, `addmm`), {9.2} % in SDPA's kernels over the k projected\nkeys, {1.3} % in AdamW's step and `lerp_`, and {16.6} % in other elementwise ops", J(STEP_PROFILE, "gflops"), J(STEP_PROFILE, "gflops") / J(STEP_PROFILE, "gemm_gflops_before_after", 1) * 100, J(STEP_PROFILE, "gflops") / J(STEP_PROFILE, "gemm_gflops_before_after", 0) * 100, J(STEP_PROFILE, "gemm_gflops_before_after", 0), J(STEP_PROFILE, "gemm_gflops_before_after", 1), *(J(STEP_PROFILE, "self_share", g) for g in ("gemm", "attention", "optimizer", "elementwise"))),
    F(AVX2_DOC, "Full attention's step spends {60.7} % of\nits time in SDPA's kernels", J(STEP_PROFILE.replace("linformer", "sdpa"), "self_share", "attention")),
    F(AVX2_DOC, "{88} % / {66} % / {61} % of the fp32 GEMM rate of its own rounds. The step itself\nheld steady at {94} / {105} / {103} GFLOP/s. The GEMM rate it is divided by moved from {107} to {158} and {168} GFLOP/s", *(avx2_training(r) for r in (1, 2, 3)), *(avx2_training(r, "achieved_flops_per_s") for r in (1, 2, 3)), *(avx2_training(r, "matmul_flops_per_s") for r in (1, 2, 3))),
    F(BENCHMARKS, "| at 4 096: {1.12}x / {1.12}x its 8 chunks of 512 (two runs; FLOP limit {1.05}x); through `encode` at batch 32: {1.21}x / {1.16}x on mixed lengths, {1.22}x / {1.18}x on similar |", avx2_student(1, "chunks"), avx2_student(2, "chunks"), avx2_student(1, "chunks", "flop_limit"), avx2_encode(1, "mixed"), avx2_encode(2, "mixed"), avx2_encode(1, "similar"), avx2_encode(2, "similar")),
    F(BENCHMARKS, "On two threads it takes {0.75}-{0.89}x the split core's layer time on an AVX2-only EPYC", avx2_layers(), avx2_layers(most=True)),
    F(NATIVE_DOC, "the kernel takes {0.82} / {0.75} of the split core's layer time at 512 and\n{0.87} / {0.87} at 4 096 (two runs; it was {1.00} / {1.00} there the same day)", avx2_layer("1", 512), avx2_layer("2", 512), avx2_layer("1", 4096), avx2_layer("2", 4096), avx2_layer("before", 512), avx2_layer("before", 4096)),
    F(NATIVE_DOC, "tokens {1.12}x / {1.12}x as fast as 512-token chunks (was {0.93}x)", avx2_student(1, "chunks"), avx2_student(2, "chunks"), avx2_student("before", "chunks")),
    F("src/linformer_kit/nn/cores.py", "{0.75}-{0.89}x the split core's time on the student's layer on an AVX2-only CPU", avx2_layers(), avx2_layers(most=True)),
    # docs/benchmarks/native/README.md (from docs/benchmarks.md), "The native window kernel, A/B"
    F(NATIVE_DOC, "{0.82} ns on 8 chunks of 512, {1.22} ns on the band's blocks without a mask ({1.25} with the mask broadcast,\n{1.38} with a full one) and {0.91} ns on the shared keys.", *(J(f"{NATIVE}/flash-key-sets.json", case, "ns_per_score") for case in ("chunks 8 x 512", "band 32 x 160, no mask", "band 32 x 160, broadcast mask", "band 32 x 160, full mask", "shared 4096 x 129"))),
    F(NATIVE_DOC, "| 512 | {7.4} | {5.8} | {0.78} |", native_layer(512, "ms", "split"), native_layer(512, "ms", "native"), native_layer(512, "native_over_split")),
    F(NATIVE_DOC, "| 1 024 | {15.2} | {12.7} | {0.83} |", native_layer(1024, "ms", "split"), native_layer(1024, "ms", "native"), native_layer(1024, "native_over_split")),
    F(NATIVE_DOC, "| 4 096 | {55.2} | {46.7} | {0.85} |", native_layer(4096, "ms", "split"), native_layer(4096, "ms", "native"), native_layer(4096, "native_over_split")),
    F(NATIVE_DOC, "the kernel is level with the split core or slower: {0.97} / {1.01} / {1.08} at 512 / 1 024 / 4 096.", *(native_layer(n, "native_over_split", file="window-cores-avx2") for n in (512, 1024, 4096))),
    F(NATIVE_DOC, "| 8 chunks of 512 at 4 096, batch 1 | {0.97}x / {0.98}x / {0.97}x | **{1.04}x / {1.05}x / {1.05}x** | {1.05}x |", *(native_ratio(side, r, 4096, "chunks") for side in ("split", "native") for r in (1, 2, 3)), native_ratio("native", 1, 4096, "chunks", "flop_limit")),
    F(NATIVE_DOC, "| full attention at 4 096 (positions copied) | {2.38}x / {2.38}x / {2.38}x | {2.53}x / {2.55}x / {2.55}x | {2.38}x |", *(native_ratio(side, r, 4096, "full") for side in ("split", "native") for r in (1, 2, 3)), native_ratio("native", 1, 4096, "full", "flop_limit")),
    F(NATIVE_DOC, "| 128 and 512 tokens, batches 32 / 1 and 8 / 1 | {0.99}-{1.02}x | {0.98}-{1.02}x | 1.00x |", native_level("split"), native_level("split", most=True), native_level("native"), native_level("native", most=True)),
    F(NATIVE_DOC, "| 8 chunks of 512 at 4 096, batch 1 | {0.94}x / {0.95}x / {0.94}x | **{1.03}x / {1.04}x / {1.07}x** | {1.05}x |", *(native_ratio(side, r, 4096, "chunks") for side in ("5a34af5", "now") for r in (1, 2, 3)), native_ratio("now", 1, 4096, "chunks", "flop_limit")),
    F(NATIVE_DOC, "| full attention at 4 096 (positions copied) | {2.29}x / {2.31}x / {2.26}x | {2.51}x / {2.54}x / {2.61}x | {2.38}x |", *(native_ratio(side, r, 4096, "full") for side in ("5a34af5", "now") for r in (1, 2, 3)), native_ratio("now", 1, 4096, "full", "flop_limit")),
    F(NATIVE_DOC, "| 128 and 512 tokens, batches 32 / 1 and 8 / 1 | {0.99}-{1.04}x | {1.00}-{1.03}x | 1.00x |", native_level("5a34af5"), native_level("5a34af5", most=True), native_level("now"), native_level("now", most=True)),
    F(NATIVE_DOC, "4 096 tokens {1.04}-{1.05}x as fast as 512-token chunks", Least(*(native_ratio("native", r, 4096, "chunks") for r in (1, 2, 3))), Least(*(native_ratio("native", r, 4096, "chunks") for r in (1, 2, 3)), most=True)),
    F(NATIVE_DOC, "| 8 chunks of 512 (FLOP limit) | **{1.03}x** ({1.05}x) | **{1.08}x** ({1.09}x) | **{1.09}x** ({1.10}x) | **{1.13}x** ({1.14}x) |", *(limits_native(st, "chunks", key) for st in ("w64", "w16", "k64", "k64-w16") for key in ("speed", "flop_limit"))),
    F(NATIVE_DOC, "| full attention (FLOP limit) | {2.53}x ({2.38}x) | {2.65}x ({2.47}x) | {2.68}x ({2.50}x) | {2.79}x ({2.59}x) |", *(limits_native(st, "full", key) for st in ("w64", "w16", "k64", "k64-w16") for key in ("speed", "flop_limit"))),
    F(NATIVE_DOC, "Up to 512 all four are level with the original ({0.99}-{1.03}x).", Many(CPU_LIMITS_NATIVE, "ratios", {"runtime": "torch", "baseline": "original"}, "speed").min(), Many(CPU_LIMITS_NATIVE, "ratios", {"runtime": "torch", "baseline": "original"}, "speed").max()),
    F(STUDENTS_DOC, "Since the native window kernel (2026-11-29, \"The native window kernel, A/B\" below): {1.04}x / {1.05}x / {1.05}x\nthe chunks in three runs beside the commit before, {2.53}-{2.55}x full attention.", *(native_ratio("native", r, 4096, "chunks") for r in (1, 2, 3)), Least(*(native_ratio("native", r, 4096, "full") for r in (1, 2, 3))), Least(*(native_ratio("native", r, 4096, "full") for r in (1, 2, 3)), most=True)),
    F(TRAIN_DOC, "(student-2x4096.json)) | {4.05} s, {3 031} MiB | {3.80} s, {2 297} MiB | {0.94}x time, {0.76}x peak |", *train_ab("2x4096")),
    F(TRAIN_DOC, "(student-4x4096.json)) | {8.21} s, {5 901} MiB | {7.64} s, {4 409} MiB | {0.93}x time, {0.75}x peak |", *train_ab("4x4096")),
    F(TRAIN_DOC, "| seconds (data, extension and 4 steps) | {95.4} / {94.0} | {88.1} / {89.6} |", *(long_stage(side, r, "stage_seconds") for side in ("old", "new") for r in (1, 2))),
    F(TRAIN_DOC, "| the process's peak | {8.69} / {8.98} GB | {7.59} / {7.51} GB |", *(long_stage(side, r, "stage_peak_gb") for side in ("old", "new") for r in (1, 2))),
    F(TRAIN_DOC, "So the long stage takes about {6} % less time and {1.1}-{1.5} GB less memory;", ((long_stage("old", 1, "stage_seconds") + long_stage("old", 2, "stage_seconds")) - (long_stage("new", 1, "stage_seconds") + long_stage("new", 2, "stage_seconds"))) / (long_stage("old", 1, "stage_seconds") + long_stage("old", 2, "stage_seconds")) * 100, long_stage("old", 1, "stage_peak_gb") - long_stage("new", 1, "stage_peak_gb"), long_stage("old", 2, "stage_peak_gb") - long_stage("new", 2, "stage_peak_gb")),
    F(DISTILL_LONG, "the long stage about {6} % faster and {1.1}-{1.5} GB lighter", ((long_stage("old", 1, "stage_seconds") + long_stage("old", 2, "stage_seconds")) - (long_stage("new", 1, "stage_seconds") + long_stage("new", 2, "stage_seconds"))) / (long_stage("old", 1, "stage_seconds") + long_stage("old", 2, "stage_seconds")) * 100, long_stage("old", 1, "stage_peak_gb") - long_stage("new", 1, "stage_peak_gb"), long_stage("old", 2, "stage_peak_gb") - long_stage("new", 2, "stage_peak_gb")),
    F(AB_DOC, "the Linformer training step runs at {77} % / {78} % of the GEMM rate of its own rounds under AVX2 and {77} % / {78} %\nunrestricted", avx2_gemm("avx2", 1), avx2_gemm("avx2", 2), avx2_gemm("native", 1), avx2_gemm("native", 2)),
    F(AB_DOC, "({212}-{218}\nagainst {210}-{215} GFLOP/s)", avx2_rate("avx2"), avx2_rate("avx2", most=True), avx2_rate("native"), avx2_rate("native", most=True)),
    # docs/reproduction/long-minilm/curve/README.md (from docs/longdocs.md): every pair of the test books, pair by pair
    F(f"docs/{LONG}/curve/README.md", "its contextual chunks lead the best chunk by {4.1} [{+0.8}, {+7.4}] at 1 024", *paired(1024, "contextual-chunks-512", "chunks-best-512")),
    F(f"docs/{LONG}/curve/README.md", "(482 pairs) and by {7.2} [{+2.0}, {+12.2}] at 2 048 (237 pairs), and its whole reading leads averaged chunks by {10.0}\n[{+5.8}, {+14.0}] at 1 024;", *paired(2048, "contextual-chunks-512", "chunks-best-512"), *paired(1024, "whole", "chunks-mean-512")),
    F(f"docs/{LONG}/curve/README.md", "the contextual chunks lead the best chunk by {4.3} [{-3.2}, {+11.7}]\nand the whole reading trails averaged chunks by {3.5} [{-10.3}, {+3.5}]", *paired(4096, "contextual-chunks-512", "chunks-best-512"), paired(4096, "whole", "chunks-mean-512")[0] * -1, *paired(4096, "whole", "chunks-mean-512")[1:]),
    # docs/reproduction/long-minilm/README.md, "Every pair the test books hold"
    F(f"docs/{LONG}/README.md", "| 1 024: whole | 482 | **{+10.0} [{+5.8}, {+14.0}]** | {+2.3} [{-2.0}, {+6.5}] |", *paired(1024, "whole", "chunks-mean-512"), *paired(1024, "whole", "chunks-best-512")),
    F(f"docs/{LONG}/README.md", "| 1 024: contextual chunks | 482 | **{+11.8} [{+7.8}, {+15.8}]** | **{+4.1} [{+0.8}, {+7.4}]** |", *paired(1024, "contextual-chunks-512", "chunks-mean-512"), *paired(1024, "contextual-chunks-512", "chunks-best-512")),
    F(f"docs/{LONG}/README.md", "| 2 048: whole | 237 | {+4.2} [{-0.5}, {+8.9}] | {+2.5} [{-4.1}, {+9.1}] |", *paired(2048, "whole", "chunks-mean-512"), *paired(2048, "whole", "chunks-best-512")),
    F(f"docs/{LONG}/README.md", "| 2 048: contextual chunks | 237 | **{+8.9} [{+2.6}, {+14.9}]** | **{+7.2} [{+2.0}, {+12.2}]** |", *paired(2048, "contextual-chunks-512", "chunks-mean-512"), *paired(2048, "contextual-chunks-512", "chunks-best-512")),
    F(f"docs/{LONG}/README.md", "| 4 096: whole | 115 | {-3.5} [{-10.3}, {+3.5}] | {-5.2} [{-14.1}, {+3.8}] |", *paired(4096, "whole", "chunks-mean-512"), *paired(4096, "whole", "chunks-best-512")),
    F(f"docs/{LONG}/README.md", "| 4 096: contextual chunks | 115 | {+6.1} [{-2.5}, {+14.5}] | {+4.3} [{-3.2}, {+11.7}] |", *paired(4096, "contextual-chunks-512", "chunks-mean-512"), *paired(4096, "contextual-chunks-512", "chunks-best-512")),
    F(f"docs/{LONG}/README.md", "late-mean {45.3}, contextual-mean {48.7}, whole centred {44.7}, against averaged chunks' {47.3} (centred {50.0}:", *(J(f"{LONG}/curve/one-row-readings-160.json", "books mean", k) for k in ("late-mean", "contextual-mean", "whole-centred", "chunks-mean", "chunks-mean-centred"))),
    # docs/reproduction/long-minilm/README.md, "A second training seed of the 160-step stage"
    F(f"docs/{LONG}/README.md", "| book halves, 3 data seeds: whole | {44.0} | {46.0} | {47.3} / {52.0} |", curve("160", "books", "whole", schedule=160), seeds_mean(f"{S43}/160-books/longdocs.json", "books", 4096, "whole"), *(seeds_mean(f"{S43}/160-books/longdocs.json", "books", 4096, m) for m in ("chunks-mean-512", "chunks-best-512"))),
    F(f"docs/{LONG}/README.md", "| book halves, 3 data seeds: contextual chunks | {54.7} | {52.7} |", curve("160", "books", "contextual-chunks-512", schedule=160), seeds_mean(f"{S43}/160-books/longdocs.json", "books", 4096, "contextual-chunks-512")),
    F(f"docs/{LONG}/README.md", "| every pair (115): whole − averaged chunks | {-3.5} [{-10.3}, {+3.5}] | {+1.7} [{-4.8}, {+8.2}] |", *paired(4096, "whole", "chunks-mean-512"), *paired(4096, "whole", "chunks-mean-512", S43)),
    F(f"docs/{LONG}/README.md", "| every pair (115): contextual chunks − best chunk | {+4.3} [{-3.2}, {+11.7}] | {+0.9} [{-6.3}, {+8.0}] |", *paired(4096, "contextual-chunks-512", "chunks-best-512"), *paired(4096, "contextual-chunks-512", "chunks-best-512", S43)),
    F(f"docs/{LONG}/README.md", "| passkey (data seed 1): whole | {40} | {50} | {20} / {52} |", curve("160", "passkey", "whole", schedule=160), *(score(f"{S43}/160-passkey/longdocs.json", "passkey", 4096, m) for m in ("whole", "chunks-mean-512", "chunks-best-512"))),
    F(f"docs/{LONG}/README.md", "| access code (data seed 1): whole | {26} | {34} | {30} / {60} |", curve("160", "access-code", "whole", schedule=160), *(score(f"{S43}/160-passkey/longdocs.json", "access-code", 4096, m) for m in ("whole", "chunks-mean-512", "chunks-best-512"))),
    F(f"docs/{LONG}/README.md", "long stage {3 694} s, peak {9.5} GB (`/usr/bin/time -v`), its verdict {72} s", J(f"{S43}/metrics.json", "stage_seconds", "long"), J(f"{S43}/memory.json", "peak_rss_kb") * KB_TO_GB, J(f"{S43}/metrics.json", "long_reading", "seconds")),
    F(f"docs/{LONG}/README.md", "| 2 048, every pair (237): whole − averaged chunks | {+4.2} [{-0.5}, {+8.9}] | {+3.0} [{-2.0}, {+7.8}] |", *paired(2048, "whole", "chunks-mean-512"), *paired(2048, "whole", "chunks-mean-512", S43)),
    F(f"docs/{LONG}/README.md", "| 2 048, every pair (237): contextual chunks − best chunk | **{+7.2} [{+2.0}, {+12.2}]** | **{+11.4} [{+6.2}, {+16.4}]** |", *paired(2048, "contextual-chunks-512", "chunks-best-512"), *paired(2048, "contextual-chunks-512", "chunks-best-512", S43)),
    F(f"docs/{LONG}/curve/README.md", "its contextual chunks lead the best chunk by\n{11.4} [{+6.2}, {+16.4}] at 2 048 and by {0.9} [{-6.3}, {+8.0}] at 4 096, where its whole reading leads averaged chunks by\n{1.7} [{-4.8}, {+8.2}].", *paired(2048, "contextual-chunks-512", "chunks-best-512", S43), *paired(4096, "contextual-chunks-512", "chunks-best-512", S43), *paired(4096, "whole", "chunks-mean-512", S43)),
    # README, "Results in brief": one line a figure; the GPU and long-document rows follow docs/gpu.md and
    # docs/longdocs.md
    F(README, "({5.75}x flash attention at 16 384)", gpu_layer("full-sdpa", 16384) / gpu_layer("linformer-layerwise", 16384, 128)),
    F(README, "({0.26}x 512-token chunks on an H100", gpu_student("original", "chunks", 4096, 16) / gpu_student("w64", "whole", 4096, 16)),
    F(README, "One layer from n = {8 192}", From(GPU_NS, gpu_layer_best, 1.0)),
    F(README, "Training: {1.26}x full attention at 512, {4.01}x at 4 096;", cpu_training_speedup(512), cpu_training_speedup(4096)),
    F(README, "beats 512-token chunks at 4 096 (AVX-512: {1.03}-{1.13}x,", chunk_ratios("speed", CPU_LIMITS_NATIVE).min(), chunk_ratios("speed", CPU_LIMITS_NATIVE).max()),
    F(README, "FLOP limit {1.05}-{1.14}x; AVX2: {1.12}x)", chunk_ratios("flop_limit", CPU_LIMITS_NATIVE).min(), chunk_ratios("flop_limit", CPU_LIMITS_NATIVE).max(), Least(*(avx2_student(r, "chunks") for r in (1, 2)))),
    F(README, "(perplexity {19.47} vs full attention's {20.58} on a CPU;", run(CPU_LOCAL, "k128-w16-s42-branch"), run(CPU_LOCAL, "full-s42")),
    F(README, "{220} vs {446} on an H100)", run(GPU_LEARNS, "k128-w16"), run(GPU_LEARNS, "full")),
    F(README, "finetuned IMDB trails by about {1} point", (finetuned(CPU_LOCAL, "full-s42") - finetuned(CPU_LOCAL, "k128-w16-s42-branch") + finetuned(CPU_LOCAL, "full-s43") - finetuned(CPU_LOCAL, "k128-w16-s43-branch")) * 50),
    F(README, "{18.9} vs full attention's {20.2} at n = 2 048 (seed 42)", run(CPU_LOCAL_LONG, "k128-w16-n2048-s42"), run(CPU_LOCAL_LONG, "full-n2048-s42")),
    F(README, "beat the strongest chunking on held-out books at 2 048 (+{7.7} / +{6.3} points, 2 seeds, 95 % intervals from +{1.0}); at 4 096 only by MRR (+{3.0} / +{2.8})", reading("test", "late-510-chamfer", "hit@1 vs strongest", 0, file=READINGS_2048), reading("test", "late-510-chamfer", "hit@1 vs strongest", 0, file=READINGS_S43_2048), Least(reading("test", "late-510-chamfer", "hit@1 vs strongest", 1, file=READINGS_2048), reading("test", "late-510-chamfer", "hit@1 vs strongest", 1, file=READINGS_S43_2048)), reading("test", "late-510-chamfer", "MRR vs strongest", 0, file=READINGS_WHOLE), reading("test", "late-510-chamfer", "MRR vs strongest", 0, file=READINGS_S43)),
    F(README, "Add `--halves whole` (about 40 minutes, {14.5}\nGB)", J(f"{LONG}/heldout/h40-whole-s42/memory.json", "peak_rss_kb") * KB_TO_GB),
    F(README, "at cosine {0.976} in {11} CPU minutes;", quality("k128-w64-g1-e2e150", "fidelity"), stage_minutes(MINILM_512)),
    F(README, "IMDB probe {1.0} point behind", (quality("original@512", "probe_mean") - quality("k128-w64-g1-e2e150", "probe_mean")) * 100),
    # docs/reproduction/long-minilm/curve/README.md (from docs/longdocs.md): the learning curve's goals (means over the seeds curve.json lists)
    # docs/reproduction/long-minilm/heldout/README.md: the held-out books' table
    F(HELD_DOC, "| original: best 512-token chunk (the strongest) | {62.7} |", score(HELD, "documents", 4096, "chunks-best-512")),
    F(HELD_DOC, "| original: averaged 512-token chunks | {57.7} |", score(HELD, "documents", 4096, "chunks-mean-512")),
    F(HELD_DOC, "| original: best / averaged 256-token chunks | {51.0} / {57.7} |", score(HELD, "documents", 4096, "chunks-best-256"), score(HELD, "documents", 4096, "chunks-mean-256")),
    F(HELD_DOC, "| original: best / averaged 256-token chunks, overlapping | {54.0} / {56.3} |", score(HELD, "documents", 4096, "chunks-best-256-overlap"), score(HELD, "documents", 4096, "chunks-mean-256-overlap")),
    F(HELD_DOC, "| student: contextual chunks | {64.7} | {+2.0} [{-1.6}, {+5.6}] |", score(HELD, "documents", 4096, "contextual-chunks-512"), *held_paired("contextual-chunks-512", STRONGEST)),
    F(HELD_DOC, "| student: late chunks | {60.0} | {-2.7} [{-7.6}, {+2.3}] |", score(HELD, "documents", 4096, "late-chunking-512"), *held_paired("late-chunking-512", STRONGEST)),
    F(HELD_DOC, "| student: whole | {53.7} | **{-9.0} [{-14.7}, {-3.2}]** |", score(HELD, "documents", 4096, "whole"), *held_paired("whole", STRONGEST)),
    F(HELD_DOC, "| student: its own 2 048-token chunks, best / averaged | {59.0} / {53.0} | {-3.7} [{-9.1}, {+1.8}] / **{-9.7} [{-15.7}, {-3.5}]** |", score(HELD, "documents", 4096, "model-chunks-best-2048"), score(HELD, "documents", 4096, "model-chunks-mean-2048"), *held_paired("model-chunks-best-2048", STRONGEST), *held_paired("model-chunks-mean-2048", STRONGEST)),
    F(HELD_DOC, "110 books no stage reads, {1 125} pairs at 4 096 tokens and {2 312} at 2 048", J(HELD_SET, "pairs_available", "4096"), J(HELD_SET, "pairs_available", "2048")),
    F(HELD_DOC, "tie as the strongest chunking ({59.7} each). The student's contextual\nchunks read {64.7}: {+5.0} [{-0.3}, {+10.2}] over the overlapping 256-token chunks", score(HELD_2048, "documents", 2048, "chunks-best-512"), score(HELD_2048, "documents", 2048, "contextual-chunks-512"), *held_paired("contextual-chunks-512", STRONGEST, 2048)),
    F(HELD_DOC, "against the student) and {+5.0} [{+0.8}, {+9.1}] over the best 512-token chunk", *held_paired("contextual-chunks-512", "chunks-best-512", 2048)),
    F(HELD_DOC, "The whole reading ties them ({58.7}).", score(HELD_2048, "documents", 2048, "whole")),
    F(HELD_DOC, "gathered with the\noriginal's chunkings above: contextual chunks {65.3}, {+2.7} [{-1.1}, {+6.4}] over the strongest chunking", score(HELD_K256, "documents", 4096, "contextual-chunks-512"), *held_paired("contextual-chunks-512", STRONGEST, file=HELD_K256)),
    F(HELD_DOC, "512-token chunk); whole {53.0}, **{-9.7} [{-15.5}, {-3.8}]**", score(HELD_K256, "documents", 4096, "whole"), *held_paired("whole", STRONGEST, file=HELD_K256)),
    F(HELD_DOC, "95 %): whole {-0.7} [{-2.1}, {+0.8}], contextual chunks {+0.7} [{-1.5}, {+2.8}]", *between(HELD_K256, HELD, "whole"), *between(HELD_K256, HELD, "contextual-chunks-512")),
    F(HELD_DOC, "seed 2 without the\ntest pairs ({218} pairs)", J(READINGS_K256, "dev", "pairs")),
    F(HELD_DOC, "best chunk {62.7}, whole {53.0}, contextual chunks {65.3})", *(reading("test", m, "hit@1") for m in ("chunks-best", "whole", "contextual"))),
    F(HELD_DOC, "(±{1.7} against\n±{4.4} for the chosen reading)", (reading("test", "contextual-chamfer", "MRR vs strongest", 2) - reading("test", "contextual-chamfer", "MRR vs strongest", 1)) / 2, (reading("test", "contextual-chamfer", "hit@1 vs strongest", 2) - reading("test", "contextual-chamfer", "hit@1 vs strongest", 1)) / 2),
    F(HELD_DOC, "| original: best 512-token chunk | {57.8} | {62.7} |", reading("dev", "chunks-best", "hit@1"), reading("test", "chunks-best", "hit@1")),
    F(HELD_DOC, "| original: 512-token chunks, Chamfer | {65.6} | {62.7} |", reading("dev", "chunks-chamfer", "hit@1"), reading("test", "chunks-chamfer", "hit@1")),
    F(HELD_DOC, "| student: contextual chunks | {59.2} | {65.3} | +{2.7} [{-1.4}, +{6.7}] | +{1.3} [{-1.0}, +{3.6}] |", reading("dev", "contextual", "hit@1"), reading("test", "contextual", "hit@1"), *reading_interval("test", "contextual", "hit@1 vs strongest"), *reading_interval("test", "contextual", "MRR vs strongest")),
    F(HELD_DOC, "| student: contextual chunks, Chamfer (chosen on dev) | {66.1} | {66.0} | +{3.3} [{-1.1}, +{7.7}] | **+{2.6} [+{0.9}, +{4.4}]** |", reading("dev", "contextual-chamfer", "hit@1"), reading("test", "contextual-chamfer", "hit@1"), *reading_interval("test", "contextual-chamfer", "hit@1 vs strongest"), *reading_interval("test", "contextual-chamfer", "MRR vs strongest")),
    F(HELD_DOC, "| student: late 510-token spans, Chamfer | {65.1} | {62.0} | {-0.7} [{-5.7}, +{4.3}] | +{0.4} [{-2.0}, +{2.7}] |", reading("dev", "late-510-chamfer", "hit@1"), reading("test", "late-510-chamfer", "hit@1"), *reading_interval("test", "late-510-chamfer", "hit@1 vs strongest"), *reading_interval("test", "late-510-chamfer", "MRR vs strongest")),
    F(HELD_DOC, "scores its records back (test {55.3})", reading("test", "whole", "hit@1", file=READINGS_WHOLE)),
    F(HELD_DOC, "| student: late 510-token spans, Chamfer (chosen on dev) | {71.1} | {65.0} | +{2.3} [{-2.1}, +{6.7}] | **+{3.0} [+{0.6}, +{5.4}]** |", reading("dev", "late-510-chamfer", "hit@1", file=READINGS_WHOLE), reading("test", "late-510-chamfer", "hit@1", file=READINGS_WHOLE), *reading_interval("test", "late-510-chamfer", "hit@1 vs strongest", file=READINGS_WHOLE), *reading_interval("test", "late-510-chamfer", "MRR vs strongest", file=READINGS_WHOLE)),
    F(HELD_DOC, "| student: contextual chunks, Chamfer | {67.9} | {64.3} | +{1.7} [{-2.4}, +{5.8}] | **+{2.3} [+{0.3}, +{4.2}]** |", reading("dev", "contextual-chamfer", "hit@1", file=READINGS_WHOLE), reading("test", "contextual-chamfer", "hit@1", file=READINGS_WHOLE), *reading_interval("test", "contextual-chamfer", "hit@1 vs strongest", file=READINGS_WHOLE), *reading_interval("test", "contextual-chamfer", "MRR vs strongest", file=READINGS_WHOLE)),
    F(HELD_DOC, "| student: whole | {63.3} | {55.3} | {-7.3} [{-13.0}, {-1.6}] | {-4.8} [{-7.9}, {-1.6}] |", reading("dev", "whole", "hit@1", file=READINGS_WHOLE), reading("test", "whole", "hit@1", file=READINGS_WHOLE), *reading_interval("test", "whole", "hit@1 vs strongest", file=READINGS_WHOLE), *reading_interval("test", "whole", "MRR vs strongest", file=READINGS_WHOLE)),
    F(HELD_DOC, "lead the strongest chunking by +{5.5} [+{0.6}, +{10.4}] points of accuracy@1 (MRR\n+{3.6} [+{0.7}, +{6.5}]); on test by +{2.3} (the interval holding 0) and by {3.0} points of MRR", *reading_interval("dev", "late-510-chamfer", "hit@1 vs strongest", file=READINGS_WHOLE), *reading_interval("dev", "late-510-chamfer", "MRR vs strongest", file=READINGS_WHOLE), reading("test", "late-510-chamfer", "hit@1 vs strongest", 0, file=READINGS_WHOLE), reading("test", "late-510-chamfer", "MRR vs strongest", 0, file=READINGS_WHOLE)),
    F(HELD_DOC, "(late 510-token spans: test {63.3} against the k = 256 student's {59.3})", reading("test", "late-510", "hit@1", file=READINGS_WHOLE), reading("test", "late-510", "hit@1")),
    F(HELD_DOC, "| student: late 510-token spans, Chamfer (chosen before) | 42 | {65.0} | +{2.3} [{-2.1}, +{6.7}] | **+{3.0} [+{0.6}, +{5.4}]** |", reading("test", "late-510-chamfer", "hit@1", file=READINGS_WHOLE), *reading_interval("test", "late-510-chamfer", "hit@1 vs strongest", file=READINGS_WHOLE), *reading_interval("test", "late-510-chamfer", "MRR vs strongest", file=READINGS_WHOLE)),
    F(HELD_DOC, "| | 43 | {65.3} | +{2.7} [{-1.8}, +{7.1}] | **+{2.8} [+{0.2}, +{5.5}]** |", reading("test", "late-510-chamfer", "hit@1", file=READINGS_S43), *reading_interval("test", "late-510-chamfer", "hit@1 vs strongest", file=READINGS_S43), *reading_interval("test", "late-510-chamfer", "MRR vs strongest", file=READINGS_S43)),
    F(HELD_DOC, "| student: contextual chunks, Chamfer | 42 | {64.3} | +{1.7} [{-2.4}, +{5.8}] | **+{2.3} [+{0.3}, +{4.2}]** |", reading("test", "contextual-chamfer", "hit@1", file=READINGS_WHOLE), *reading_interval("test", "contextual-chamfer", "hit@1 vs strongest", file=READINGS_WHOLE), *reading_interval("test", "contextual-chamfer", "MRR vs strongest", file=READINGS_WHOLE)),
    F(HELD_DOC, "| | 43 | {67.0} | **+{4.3} [+{0.0}, +{8.6}]** | **+{3.7} [+{1.7}, +{5.7}]** |", reading("test", "contextual-chamfer", "hit@1", file=READINGS_S43), *reading_interval("test", "contextual-chamfer", "hit@1 vs strongest", file=READINGS_S43), *reading_interval("test", "contextual-chamfer", "MRR vs strongest", file=READINGS_S43)),
    F(HELD_DOC, "| student: whole | 42 | {55.3} | {-7.3} [{-13.0}, {-1.6}] | {-4.8} [{-7.9}, {-1.6}] |", reading("test", "whole", "hit@1", file=READINGS_WHOLE), *reading_interval("test", "whole", "hit@1 vs strongest", file=READINGS_WHOLE), *reading_interval("test", "whole", "MRR vs strongest", file=READINGS_WHOLE)),
    F(HELD_DOC, "| | 43 | {58.0} | {-4.7} [{-10.3}, +{1.0}] | {-3.5} [{-6.9}, {-0.1}] |", reading("test", "whole", "hit@1", file=READINGS_S43), *reading_interval("test", "whole", "hit@1 vs strongest", file=READINGS_S43), *reading_interval("test", "whole", "MRR vs strongest", file=READINGS_S43)),
    F(HELD_DOC, "by {3.0} and {2.8} points of MRR, the interval above 0 each time; by accuracy@1 +{2.3} and +{2.7}", reading("test", "late-510-chamfer", "MRR vs strongest", 0, file=READINGS_WHOLE), reading("test", "late-510-chamfer", "MRR vs strongest", 0, file=READINGS_S43), reading("test", "late-510-chamfer", "hit@1 vs strongest", 0, file=READINGS_WHOLE), reading("test", "late-510-chamfer", "hit@1 vs strongest", 0, file=READINGS_S43)),
    F(HELD_DOC, "lead by {4.3} points\nof accuracy@1 (the interval's low end +{0.03}) and {3.7} of MRR; seed 42's by {1.7} and {2.3}", reading("test", "contextual-chamfer", "hit@1 vs strongest", 0, file=READINGS_S43), reading("test", "contextual-chamfer", "hit@1 vs strongest", 1, file=READINGS_S43), reading("test", "contextual-chamfer", "MRR vs strongest", 0, file=READINGS_S43), reading("test", "contextual-chamfer", "hit@1 vs strongest", 0, file=READINGS_WHOLE), reading("test", "contextual-chamfer", "MRR vs strongest", 0, file=READINGS_WHOLE)),
    F(HELD_DOC, "also the best reading here: {76.2} against the strongest chunking's {65.5}", reading("dev", "late-510-chamfer", "hit@1", file=READINGS_2048), reading("dev", "chunks-mean", "hit@1", file=READINGS_2048)),
    F(HELD_DOC, "| original: best 512-token chunk (the strongest) | | {59.7} | | |", reading("test", "chunks-best", "hit@1", file=READINGS_2048)),
    F(HELD_DOC, "| student: late 510-token spans, Chamfer | 42 | {67.3} | **+{7.7} [+{2.2}, +{13.0}]** | **+{6.4} [+{3.0}, +{9.9}]** |", reading("test", "late-510-chamfer", "hit@1", file=READINGS_2048), *reading_interval("test", "late-510-chamfer", "hit@1 vs strongest", file=READINGS_2048), *reading_interval("test", "late-510-chamfer", "MRR vs strongest", file=READINGS_2048)),
    F(HELD_DOC, "| | 43 | {66.0} | **+{6.3} [+{1.0}, +{11.6}]** | **+{5.7} [+{2.4}, +{9.0}]** |", reading("test", "late-510-chamfer", "hit@1", file=READINGS_S43_2048), *reading_interval("test", "late-510-chamfer", "hit@1 vs strongest", file=READINGS_S43_2048), *reading_interval("test", "late-510-chamfer", "MRR vs strongest", file=READINGS_S43_2048)),
    F(HELD_DOC, "| student: whole | 42 | {60.7} | +{1.0} [{-5.2}, +{7.2}] | +{1.0} [{-3.0}, +{5.0}] |", reading("test", "whole", "hit@1", file=READINGS_2048), *reading_interval("test", "whole", "hit@1 vs strongest", file=READINGS_2048), *reading_interval("test", "whole", "MRR vs strongest", file=READINGS_2048)),
    F(HELD_DOC, "| | 43 | {60.3} | +{0.7} [{-5.3}, +{6.7}] | +{0.7} [{-3.2}, +{4.7}] |", reading("test", "whole", "hit@1", file=READINGS_S43_2048), *reading_interval("test", "whole", "hit@1 vs strongest", file=READINGS_S43_2048), *reading_interval("test", "whole", "MRR vs strongest", file=READINGS_S43_2048)),
    F(HELD_DOC, "student alone, one pass a text: +{7.7} and +{6.3} points of accuracy@1", reading("test", "late-510-chamfer", "hit@1 vs strongest", 0, file=READINGS_2048), reading("test", "late-510-chamfer", "hit@1 vs strongest", 0, file=READINGS_S43_2048)),
    F(HELD_DOC, "finds LongEmbed's passkey for {68} % of 50 queries\namong 100 documents against the original's best chunk's {52}, and the access code (another filler and wording)\nfor {60} % against {60}", *(score(KEYS_WHOLE, t, 4096, m) for t in ("passkey", "access-code") for m in ("whole", "chunks-best-512"))),
    F(LONGDOCS, "| passkey / access code, 4 096, `--halves whole` (seed 42) | whole − best chunk | {68} against {52} / {60} against {60} |", *(score(KEYS_WHOLE, t, 4096, m) for t in ("passkey", "access-code") for m in ("whole", "chunks-best-512"))),
    F(HELD_DOC, "Seed 43's long stage took {1 665} s beside test runs (seed 42's {1 479} s alone), the peak\nits own report gives {13.3} GB (seed 42's {13.7})", J(WHOLE_S43, "stage_seconds", "long"), J(f"{LONG}/heldout/h40-whole-s42/metrics.json", "stage_seconds", "long"), J(WHOLE_S43, "stage_peak_gb", "long"), J(f"{LONG}/heldout/h40-whole-s42/metrics.json", "stage_peak_gb", "long")),
    F(HELD_DOC, "| student: late 510-token spans, Chamfer | {65.0} | {44.7} | **{-18.0} [{-24.1}, {-11.6}]** |", reading("test", "late-510-chamfer", "hit@1", file=READINGS_WHOLE), reading("test", "late-510-chamfer", "hit@1", file=READINGS_BANK), *reading_interval("test", "late-510-chamfer", "hit@1 vs strongest", READINGS_BANK)),
    F(HELD_DOC, "| student: contextual chunks, Chamfer | {64.3} | {62.7} | +{0.0} [{-4.5}, +{4.5}] |", reading("test", "contextual-chamfer", "hit@1", file=READINGS_WHOLE), reading("test", "contextual-chamfer", "hit@1", file=READINGS_BANK), *reading_interval("test", "contextual-chamfer", "hit@1 vs strongest", READINGS_BANK)),
    F(HELD_DOC, "| student: whole | {55.3} | {40.7} | **{-22.0} [{-27.9}, {-15.8}]** |", reading("test", "whole", "hit@1", file=READINGS_WHOLE), reading("test", "whole", "hit@1", file=READINGS_BANK), *reading_interval("test", "whole", "hit@1 vs strongest", READINGS_BANK)),
    F(HELD_DOC, "The student's own readings fall by {14.7} (whole) and {20.3} points (late spans by Chamfer). Paired on the same\nqueries against the suite records of the student without the bank, the whole reading's fall is **{-14.7} [{-20.2},\n{-9.0}]**", bank_drop("whole"), bank_drop("late-510-chamfer"), *(VersusRecords(READINGS_BANK, "whole", HELD_WHOLE, "whole", part) for part in range(3))),
    F(HELD_DOC, "move by {1.7}, inside the noise", bank_drop("contextual-chamfer")),
    F(HELD_DOC, "lowered the student's own readings by {14.7} and {20.3} points", bank_drop("whole"), bank_drop("late-510-chamfer")),
    F(DISTILL, "(the whole reading by\n  {14.7} points against the same student without it, its late spans by {20.3})", VersusRecords(READINGS_BANK, "whole", HELD_WHOLE, "whole", 0) * -1, bank_drop("late-510-chamfer")),
    F(HELD_DOC, "the long stage's\n{160} spans (40 steps of 4) come from only {15} Gutenberg books with `--halves whole` and {8} with split halves, up\nto {30} and {48} spans", J(SPAN_SOURCES, "whole", "spans"), J(SPAN_SOURCES, "whole", "documents"), J(SPAN_SOURCES, "split", "documents"), J(SPAN_SOURCES, "whole", "most_from_one_document"), J(SPAN_SOURCES, "split", "most_from_one_document")),
    F(HELD_DOC, "about {60} and {26} minutes of the AVX2 EPYC's 2 cores (the long stage {2 718} s, {68} s a step,\n# against {37} s without the bank on the AVX-512 EPYC: the machine's difference, not the bank's; peak {13.4} GB)", (J(BANK, "stage_seconds", "long") + J(BANK, "stage_seconds", "end-to-end")) / 60, J(READINGS_BANK, "rows", "seconds", "test-firsts") / 60 + J(READINGS_BANK, "rows", "seconds", "test-seconds") / 60, J(BANK, "stage_seconds", "long"), J(BANK, "stage_seconds", "long") / 40, J(f"{LONG}/heldout/h40-whole-s42/memory.json", "long_stage_seconds") / 40, J(BANK, "stage_peak_gb", "long")),
    F(DISTILL, "The long stage's spans come from {8} to {15} books", J(SPAN_SOURCES, "split", "documents"), J(SPAN_SOURCES, "whole", "documents")),
    F(DISTILL, "(N = 4: {46} books with split halves, {49} with `whole`", J(SPAN_SOURCES, "split, 4 a document", "documents"), J(SPAN_SOURCES, "whole, 4 a document", "documents")),
    F(HELD_DOC, "the same 160 spans cut\nfrom {49} books instead of {15}", J(SPAN_SOURCES, "whole, 4 a document", "documents"), J(SPAN_SOURCES, "whole", "documents")),
    F(HELD_DOC, "| student: late 510-token spans, Chamfer | {65.0} | {66.3} | +{3.7} [{-0.7}, +{8.0}] | **+{3.6} [+{1.0}, +{6.3}]** |", reading("test", "late-510-chamfer", "hit@1", file=READINGS_WHOLE), reading("test", "late-510-chamfer", "hit@1", file=READINGS_CAP), *reading_interval("test", "late-510-chamfer", "hit@1 vs strongest", READINGS_CAP), *reading_interval("test", "late-510-chamfer", "MRR vs strongest", READINGS_CAP)),
    F(HELD_DOC, "| student: contextual chunks, Chamfer | {64.3} | {65.0} | +{2.3} [{-1.9}, +{6.5}] | **+{2.8} [+{0.7}, +{4.9}]** |", reading("test", "contextual-chamfer", "hit@1", file=READINGS_WHOLE), reading("test", "contextual-chamfer", "hit@1", file=READINGS_CAP), *reading_interval("test", "contextual-chamfer", "hit@1 vs strongest", READINGS_CAP), *reading_interval("test", "contextual-chamfer", "MRR vs strongest", READINGS_CAP)),
    F(HELD_DOC, "| student: whole | {55.3} | {58.0} | {-4.7} [{-10.2}, +{0.9}] | {-2.9} [{-6.2}, +{0.4}] |", reading("test", "whole", "hit@1", file=READINGS_WHOLE), reading("test", "whole", "hit@1", file=READINGS_CAP), *reading_interval("test", "whole", "hit@1 vs strongest", READINGS_CAP), *reading_interval("test", "whole", "MRR vs strongest", READINGS_CAP)),
    F(HELD_DOC, "leads the strongest chunking by {3.7} points of accuracy@1, the interval holding 0, and\nby {3.6} of MRR", reading("test", "late-510-chamfer", "hit@1 vs strongest", 0, file=READINGS_CAP), reading("test", "late-510-chamfer", "MRR vs strongest", 0, file=READINGS_CAP)),
    F(HELD_DOC, "against the every-span student, paired: +{2.7} [{-0.3}, +{5.6}]", *(VersusRecords(READINGS_CAP, "whole", HELD_WHOLE, "whole", part) for part in range(3))),
    F(HELD_DOC, "(on dev {65.6} against {57.8}; by MRR", reading("dev", "chunks-chamfer", "hit@1"), reading("dev", "chunks-best", "hit@1")),
    F(HELD_DOC, "chunking (+{0.5} [{-3.1}, +{4.0}]). On test they lead it by {3.3} points of accuracy@1, the interval holding 0,\n  and by {2.6} points of MRR", *reading_interval("dev", "contextual-chamfer", "hit@1 vs strongest"), reading("test", "contextual-chamfer", "hit@1 vs strongest", 0), reading("test", "contextual-chamfer", "MRR vs strongest", 0)),

    F(HELD_DOC, "On the same 300 pairs: whole\n{55.3}, **{-7.3} [{-13.0}, {-1.6}]** below the strongest chunking; contextual chunks {63.3}, {+0.7} [{-3.0}, {+4.3}]", score(HELD_WHOLE, "documents", 4096, "whole"), *held_paired("whole", STRONGEST, file=HELD_WHOLE), score(HELD_WHOLE, "documents", 4096, "contextual-chunks-512"), *held_paired("contextual-chunks-512", STRONGEST, file=HELD_WHOLE)),
    F(HELD_DOC, "the default student (paired, 95 %): whole {+1.7} [{-1.5}, {+4.8}], contextual chunks {-1.3} [{-4.3}, {+1.6}]", *between(HELD_WHOLE, HELD, "whole"), *between(HELD_WHOLE, HELD, "contextual-chunks-512")),
    F(HELD_DOC, "Its long stage took {1 479} s ({37} s a step),\npeak {14.5} GB", J(f"{LONG}/heldout/h40-whole-s42/memory.json", "long_stage_seconds"), J(f"{LONG}/heldout/h40-whole-s42/memory.json", "long_stage_seconds") / 40, J(f"{LONG}/heldout/h40-whole-s42/memory.json", "peak_rss_kb") * KB_TO_GB),
    F(DISTILL, "at N = 4 096, {37} s a step and a peak of {14.5} GB", J(f"{LONG}/heldout/h40-whole-s42/memory.json", "long_stage_seconds") / 40, J(f"{LONG}/heldout/h40-whole-s42/memory.json", "peak_rss_kb") * KB_TO_GB),
    F("docs/benchmarks/autotune/README.md", "| 512 | bf16 | {0.129} | {0.061} | sdpa (the rule: blocked) | **{0.844}** |", *autotune_row("bf16", 512)),
    F("docs/benchmarks/autotune/README.md", "| 4 096 | fp32 | {1.097} | {0.374} | native (the rule's) | {1.009} |", *autotune_row("fp32", 4096)),
    F("docs/benchmarks/autotune/README.md", "| 4 096 | bf16 | {0.985} | {0.498} | split (the rule's) | {0.983} |", *autotune_row("bf16", 4096)),
    F("docs/benchmarks/autotune/README.md", "It costs {0.04}-{0.5} s once per shape bucket", Least(*AUTOTUNE_COSTS), Least(*AUTOTUNE_COSTS, most=True)),
    F(BENCHMARKS, "({0.04}-{0.5} s once; in bf16 at 512 it\n  found SDPA at {0.844}x the rule's time", Least(*AUTOTUNE_COSTS), Least(*AUTOTUNE_COSTS, most=True), autotune_row("bf16", 512)[2]),
    F("docs/benchmarks/encode/README.md", "| mixed, 128-4 096 tokens | {64} | {325} | 49.3 / 59.0 / 52.9 | 34.3 / 36.8 / 32.4 | **{0.62}x** |", J(ENCODE, "texts"), J(ENCODE, "cases", {"case": "mixed"}, "chunks"), J(ENCODE, "cases", {"case": "mixed"}, "student_speed_over_chunks")),
    F("docs/benchmarks/encode/README.md", "32 rows of 2 048 tokens took {14.44} s in one batch, {11.69} s in batches of 4, {11.32} s one at a time, against\n{12.44} s", *(J("benchmarks/encode/batch-split.json", "2048", arm) for arm in ("rows-all", "rows-by-4", "rows-by-1", "chunks-by-32"))),
    F("docs/benchmarks/encode/README.md", "equal-length rows at {1.10}x the chunks' speed where one batch of 32 reads them at {0.86}x", J("benchmarks/encode/batch-split.json", "2048", "chunks-by-32") / J("benchmarks/encode/batch-split.json", "2048", "rows-by-1"), J("benchmarks/encode/batch-split.json", "2048", "chunks-by-32") / J("benchmarks/encode/batch-split.json", "2048", "rows-all")),
    F(BENCHMARKS, "the long student is {1.10}x the original's\n  512-token chunks on texts of 128-4 096 tokens and {1.11}x", J(ENCODE_GROUPS, "cases", {"case": "mixed"}, "student_speed_over_chunks"), J(ENCODE_GROUPS, "cases", {"case": "similar"}, "student_speed_over_chunks")),
    F(BENCHMARKS, "it was {0.62}x before the model read a CPU batch in groups of at\n  most {4 096} tokens", J(ENCODE, "cases", {"case": "mixed"}, "student_speed_over_chunks"), Count("models/token_groups.py GROUP_TOKENS", token_groups.GROUP_TOKENS)),
    F(ENCODE_DOC, "computation (`--exact-length 512`): its {1.35}x there", encode_case("short", "student_speed_over_chunks")),
    F(ENCODE_DOC, "32 rows of 2 048 tokens read in {11.45} s at a budget of {4 096} ({14.79} s in one\nbatch), 16 rows of 4 096 in {10.72} s ({13.91} s in one batch; {11.86} s at 8 192)", J("benchmarks/encode/token-groups.json", "2048", "rows-all-groups-4096"), Count("models/token_groups.py GROUP_TOKENS", token_groups.GROUP_TOKENS), J("benchmarks/encode/token-groups.json", "2048", "rows-all"), J("benchmarks/encode/token-groups.json", "4096", "rows-all-groups-4096"), J("benchmarks/encode/token-groups.json", "4096", "rows-all"), J("benchmarks/encode/token-groups.json", "4096", "rows-all-groups-8192")),
    F(ENCODE_DOC, "mixed {0.999}x, similar {0.977}x the original's chunks in bf16", J("benchmarks/encode/encode-groups-bf16.json", "cases", {"case": "mixed"}, "student_speed_over_chunks"), J("benchmarks/encode/encode-groups-bf16.json", "cases", {"case": "similar"}, "student_speed_over_chunks")),
    F(ENCODE_DOC, "the kernel {0.787}x the split core's time at 512 tokens and {0.920}x at 4 096\nin bf16, casts included ({0.856}x and {0.988}x in float32", *(J("benchmarks/encode/window-cores-bf16.json", "runs", {"dtype": d, "n": n}, "native_over_split") for d, n in (("bfloat16", 512), ("bfloat16", 4096), ("float32", 512), ("float32", 4096)))),
    F(ENCODE_DOC, "mixed {1.08}x / {1.07}x, similar {1.06}x / {1.08}x the original's chunks", *(J(f"benchmarks/encode/encode-groups-bf16-{r}.json", "cases", {"case": c}, "student_speed_over_chunks") for c in ("mixed", "similar") for r in (2, 3))),
    F(BENCHMARKS, "In bf16, with the native kernel behind two casts, {1.08}x / {1.07}x", *(J(f"benchmarks/encode/encode-groups-bf16-{r}.json", "cases", {"case": "mixed"}, "student_speed_over_chunks") for r in (2, 3))),
    F(README, "through `encode` at batch 32 too (AVX-512: {1.10}x fp32, {1.08}x bf16; AVX2: {1.16}x)", encode_case("mixed", "student_speed_over_chunks"), J("benchmarks/encode/encode-groups-bf16-2.json", "cases", {"case": "mixed"}, "student_speed_over_chunks"), Least(*(avx2_encode(r, "mixed") for r in (1, 2)))),
    F(ENCODE_DOC, "similar` and no third arm): mixed {1.03}x, similar {1.07}x", J("benchmarks/encode/encode-groups-fp32-2.json", "cases", {"case": "mixed"}, "student_speed_over_chunks"), J("benchmarks/encode/encode-groups-fp32-2.json", "cases", {"case": "similar"}, "student_speed_over_chunks")),
    F(BENCHMARKS, "(2-core AMD EPYC, fp32; a\n  second run {1.03}x / {1.07}x", J("benchmarks/encode/encode-groups-fp32-2.json", "cases", {"case": "mixed"}, "student_speed_over_chunks"), J("benchmarks/encode/encode-groups-fp32-2.json", "cases", {"case": "similar"}, "student_speed_over_chunks")),
    F(ENCODE_DOC, "| mixed, 128-4 096 tokens | {325} | {26.4} / {26.3} / {26.4} | {29.1} / {29.5} / {28.6} | {47.2} / {46.0} / {46.6} | **{1.10}x** | {1.76}x |", encode_case("mixed", "chunks"), *(encode_case("mixed", "seconds", arm, r) for arm in ("student", "chunks", "student-ungrouped") for r in range(3)), encode_case("mixed", "student_speed_over_chunks"), encode_case("mixed", "groups_speedup")),
    F(ENCODE_DOC, "| similar, 2 900-3 100 | {397} | {33.1} / {33.4} / {32.9} | {37.7} / {37.2} / {36.1} | {48.4} / {46.8} / {47.3} | **{1.11}x** | {1.44}x |", encode_case("similar", "chunks"), *(encode_case("similar", "seconds", arm, r) for arm in ("student", "chunks", "student-ungrouped") for r in range(3)), encode_case("similar", "student_speed_over_chunks"), encode_case("similar", "groups_speedup")),
    F(ENCODE_DOC, "| short, 128-512 | {64} | {3.7} / {4.0} / {3.8} | {5.0} / {5.0} / {5.2} | {5.0} / {4.9} / {5.3} | **{1.35}x** | {1.34}x |", encode_case("short", "chunks"), *(encode_case("short", "seconds", arm, r) for arm in ("student", "chunks", "student-ungrouped") for r in range(3)), encode_case("short", "student_speed_over_chunks"), encode_case("short", "groups_speedup")),
    F(HELD_DOC, "Its long stage took {1 116} s ({28} s a step, 23-25 at k = 128), peak {10.1} GB", J(f"{LONG}/heldout/h40-k256-s42/memory.json", "long_stage_seconds"), J(f"{LONG}/heldout/h40-k256-s42/memory.json", "long_stage_seconds") / 40, J(f"{LONG}/heldout/h40-k256-s42/memory.json", "peak_rss_kb") * KB_TO_GB),
    # docs/benchmarks/padded-batch/README.md (from docs/benchmarks.md), "A padded batch of short and long rows"
    *(F(PADDED_DOC, f"| {rows} | {{{a}}}x / {{{a2}}}x | {{{b}}}x / {{{b2}}}x | **{{{c}}}x / {{{c2}}}x** |", *(J(f"benchmarks/padded-batch/{file}.json", "cases", {"lengths": lengths}, key) for key in ("routed_over_alone", "apart_over_alone", "groups_over_alone") for file in ("ab-groups", "ab-groups-2")))
      for rows, lengths, a, a2, b, b2, c, c2 in (("4 096 + 300", [4096, 300], "3.31", "3.30", "1.07", "1.11", "1.03", "1.05"), ("3 000 + 2 900", [3000, 2900], "1.17", "1.42", "1.17", "1.10", "1.01", "0.98"), ("4 096 + 4 000", [4096, 4000], "1.19", "1.16", "1.19", "1.16", "1.02", "1.01"))),
    *(F(PADDED_DOC, f"| {rows} | {{{b1}}}x / {{{b2}}}x | " + ("**" if bold else "") + f"{{{n1}}}x / {{{n2}}}x" + ("**" if bold else "") + " |", *(J(f"benchmarks/padded-batch/{file}.json", "cases", {"lengths": lengths}, key) for key in ("routed_over_alone", "groups_over_alone") for file in ("ab", "ab-2")))
      for rows, lengths, bold, b1, b2, n1, n2 in (("4 096 + 300", [4096, 300], True, "3.14", "2.97", "1.10", "1.01"), ("3 000 + 2 900", [3000, 2900], False, "1.18", "1.17", "1.17", "1.18"), ("4 096 + 4 000", [4096, 4000], False, "1.18", "1.11", "1.16", "1.15"))),
    # docs/benchmarks.md: its first lines and its one results table (the current headline figures)
    F(BENCHMARKS, "on a GPU, one layer only from n = {8 192}.**", From(GPU_NS, gpu_layer_best, 1.0)),
    F(BENCHMARKS, "layer runs {5.79}x PyTorch's fused full attention (SDPA) at n = 4 096 on 2 x86 cores with AVX-512 in fp32", cpu_layer("full-sdpa", 4096) / cpu_layer("linformer-headwise", 4096)),
    F(BENCHMARKS, "beats flash attention from n = {8 192} on an NVIDIA H100 in bf16 ({5.75}x at 16 384)", From(GPU_NS, gpu_layer_best, 1.0), gpu_layer("full-sdpa", 16384) / gpu_layer("linformer-layerwise", 16384, 128)),
    F(BENCHMARKS, "A training step is {1.26}x full attention at 512 and {4.01}x at 4 096 (2-core AMD EPYC, AVX2 only, fp32)", cpu_training_speedup(512), cpu_training_speedup(4096)),
    F(BENCHMARKS, "| faster than flash attention (SDPA) from n = {8 192}; {5.75}x at 16 384 (k = 128) |", From(GPU_NS, gpu_layer_best, 1.0), gpu_layer("full-sdpa", 16384) / gpu_layer("linformer-layerwise", 16384, 128)),
    F(BENCHMARKS, "| {2.43}x SDPA at 1 024, {5.79}x at 4 096; with a local window of 16: {2.73}x at 4 096 |", cpu_layer("full-sdpa", 1024) / cpu_layer("linformer-headwise", 1024), cpu_layer("full-sdpa", 4096) / cpu_layer("linformer-headwise", 4096), cpu_layer("full-sdpa", 4096) / cpu_layer("linformer-headwise", 4096, 16)),
    F(BENCHMARKS, "| {1.26}x full attention at 512, {4.01}x at 4 096 |", cpu_training_speedup(512), cpu_training_speedup(4096)),
    F(BENCHMARKS, "| {1.63}x the tokens/s |", Many("benchmarks/cpu-bf16/pretrain_throughput.json", "runs", {"precision": "bf16", "allocator": "ours"}, "tokens_per_second").mean() / Many("benchmarks/cpu-bf16/pretrain_throughput.json", "runs", {"precision": "fp32", "allocator": "ours"}, "tokens_per_second").mean()),
    F(BENCHMARKS, "| {0.99}-{1.03}x up to 512 tokens; at 4 096: {1.03}-{1.13}x its 8 chunks of 512 (FLOP limit {1.05}-{1.14}x), {2.53}-{2.79}x its full attention |", Many(CPU_LIMITS_NATIVE, "ratios", {"runtime": "torch", "baseline": "original"}, "speed").min(), Many(CPU_LIMITS_NATIVE, "ratios", {"runtime": "torch", "baseline": "original"}, "speed").max(), chunk_ratios("speed", CPU_LIMITS_NATIVE).min(), chunk_ratios("speed", CPU_LIMITS_NATIVE).max(), chunk_ratios("flop_limit", CPU_LIMITS_NATIVE).min(), chunk_ratios("flop_limit", CPU_LIMITS_NATIVE).max(), Many(CPU_LIMITS_NATIVE, "ratios", {"runtime": "torch", "n": 4096, "baseline": "full"}, "speed").min(), Many(CPU_LIMITS_NATIVE, "ratios", {"runtime": "torch", "n": 4096, "baseline": "full"}, "speed").max()),
    F(BENCHMARKS, "| {0.26}x 512-token chunks at 4 096 (batch 16) |", gpu_student("original", "chunks", 4096, 16) / gpu_student("w64", "whole", 4096, 16)),
    F(BENCHMARKS, "| {1.10}x / {1.01}x (two runs; goal 1.15x) |", *(J(f"benchmarks/padded-batch/{file}.json", "cases", {"lengths": [4096, 300]}, "groups_over_alone") for file in ("ab", "ab-2"))),
    F(BENCHMARKS, "+{112} % the windowless one's time at n = 4 096 (w = 16, forward;", (cpu_layer("linformer-headwise", 4096, 16) / cpu_layer("linformer-headwise", 4096) - 1) * 100),
    F(BENCHMARKS, "even attention at no cost would beat 512-token chunks by {1.22}x", Count("(2D + I + 512) / (2D + I): a token's multiply-adds a layer in 4D units, MiniLM's D 384, I 1 536", (2 * 384 + 1536 + 512) / (2 * 384 + 1536))),
    # docs/longdocs.md's first lines: the held-out books at 4 096
    F(LONGDOCS, "| 2 048, accuracy@1 | **+{7.7} [+{2.2}, +{13.0}]** | **+{6.3} [+{1.0}, +{11.6}]** | +5, above 0: met |", *reading_interval("test", "late-510-chamfer", "hit@1 vs strongest", READINGS_2048), *reading_interval("test", "late-510-chamfer", "hit@1 vs strongest", READINGS_S43_2048)),
    F(LONGDOCS, "| 4 096, accuracy@1 | +{2.3} [{-2.1}, +{6.7}] | +{2.7} [{-1.8}, +{7.1}] | +3, above 0: not met |", *reading_interval("test", "late-510-chamfer", "hit@1 vs strongest", READINGS_WHOLE), *reading_interval("test", "late-510-chamfer", "hit@1 vs strongest", READINGS_S43)),
    F(LONGDOCS, "| 4 096, MRR | **+{3.0} [+{0.6}, +{5.4}]** | **+{2.8} [+{0.2}, +{5.5}]** | |", *reading_interval("test", "late-510-chamfer", "MRR vs strongest", READINGS_WHOLE), *reading_interval("test", "late-510-chamfer", "MRR vs strongest", READINGS_S43)),
    F(LONGDOCS, "trails the best 512-token chunk at 4 096 (by {7.3} and {4.7} points)", reading("test", "whole", "hit@1 vs strongest", 0, file=READINGS_WHOLE) * -1, reading("test", "whole", "hit@1 vs strongest", 0, file=READINGS_S43) * -1),
    F(LONGDOCS, "that is {110} books no stage reads, {1 125} pairs at 4 096 and {2 312} at 2 048", J(HELD_SET, "books"), J(HELD_SET, "pairs_available", "4096"), J(HELD_SET, "pairs_available", "2048")),
    F(f"docs/{LONG}/curve/README.md", "the student whole reads {42.7} at 80 steps and {44.0} at 160 against averaged chunks' {47.3}", curve("80", "books", "whole"), curve("160", "books", "whole", schedule=160), curve("80", "books", "chunks-mean-512")),
    F(f"docs/{LONG}/curve/README.md", "reach the best chunk's {52.0} and pass it", curve("80", "books", "chunks-best-512")),
    F(f"docs/{LONG}/curve/README.md", "at 80 steps late\nchunks {51.3}, contextual chunks", curve("80", "books", "late-chunking-512")),
    F(f"docs/{LONG}/curve/README.md", "the student's reading of the same tokens) {52.0};", curve("80", "books", "contextual-chunks-512")),
    F(f"docs/{LONG}/curve/README.md", "at 160 late chunks {54.0}, contextual chunks {54.7} (goal +3)", curve("160", "books", "late-chunking-512", schedule=160), curve("160", "books", "contextual-chunks-512", schedule=160)),
    F(f"docs/{LONG}/curve/README.md", "reading leads averaged chunks by {2.2} at 160 steps ({67.5} against {65.3}", curve("160", "imdb", "whole", schedule=160) - curve("160", "imdb", "chunks-mean-512", schedule=160), curve("160", "imdb", "whole", schedule=160), curve("160", "imdb", "chunks-mean-512", schedule=160)),
    F(f"docs/{LONG}/curve/README.md", "(seed 1: {44} at 40 of 40 steps, {40} at 80)", curve("40", "books", "whole", schedule=40), curve("80", "books", "whole", seed=1)),
    F(f"docs/{LONG}/curve/README.md", "4 096 ({36} at 80 and {40}\nat 160, against {70} at 40 steps; best chunk {52})", curve("80", "passkey", "whole"), curve("160", "passkey", "whole", schedule=160), curve("40", "passkey", "whole", schedule=40), curve("80", "passkey", "chunks-best-512")),
    # docs/reproduction/long-minilm/answer/README.md (from docs/longdocs.md): `c1`'s table, means over the seeds each run has; the default long student; why
    F(f"docs/{LONG}/answer/README.md", "| passkey, 1 024 / 2 048 / 4 096 | **{68} / {71} / {62}** | {58} / {64} / **{70}** | {34} / {17} / {18} | {41} / {39} / {20} | {59} / {58} / {52} |", *c1("passkey", KEYS, METHODS)),
    F(f"docs/{LONG}/answer/README.md", "| needle, 1 024 / 2 048 (3) | {7} / {3} | {12} / {5} | {9} / {5} | {4} / {3} | **{15} / {9}** |", *c1("needle", (1024, 2048), METHODS)),
    F(f"docs/{LONG}/answer/README.md", "| book halves, 1 024 / 4 096 (3) | **{68}** / {44} | – / {47} | {40} / {23} | {51} / {47} | {56} / **{52}** |", *c1("books", (1024, 4096), ("whole",)), seeds_mean(ANSWER, "books", 4096, "late-chunking-512"), *c1("books", (1024, 4096), METHODS[2:])),
    F(f"docs/{LONG}/answer/README.md", "| IMDB reviews > 512 tokens (3) | {73.7} | **{74.8}** | {69.1} | {73.9} | – |", *c1("imdb", (4096,), METHODS[:4])),
    F(f"docs/{LONG}/answer/README.md", "| fidelity at 512 | {0.971} |", J(f"{LONG}/k128-w64-g1-long4096-exact512-c1.json", "fidelity", "long")),
    F(f"docs/{LONG}/answer/README.md", "at 4 096 it reads a text at\n{1.03}x the speed of 512-token chunks", limits_native("w64", "chunks")),
    F(f"docs/{LONG}/answer/README.md", "limits-native/: {1.03}-{1.13}x)", chunk_ratios("speed", CPU_LIMITS_NATIVE).min(), chunk_ratios("speed", CPU_LIMITS_NATIVE).max()),
    F(f"docs/{LONG}/answer/README.md", "(the README's long command, {41} minutes on 2 AVX2 cores, peak {9.0} GB;", J(MEMORY, "wall_s") / 60, J(MEMORY, "peak_rss_kb") * KB_TO_GB),
    F(f"docs/{LONG}/answer/README.md", "fidelity {1.000} on book, review, encyclopedia and sentence text and paragraph recall the original's {49.2}, both by construction", README_FIDELITY, score(f"{README_RUN}/paragraphs/longdocs.json", "paragraphs", 512, "whole"), construction=True),
    F(f"docs/{LONG}/answer/README.md", "(`c1`: 88.7 on 512-token book passages, the issue's measurement, in no file here;"),
    F(f"docs/{LONG}/answer/README.md", "beside its 512 student's weights: {97.5}-{98.2})", *fidelity_range(f"{LONG}/long4096-sbw-layers")),
    F(f"docs/{LONG}/answer/README.md", "Passkey {68} / {72} / {70} at 1 024 / 2 048 / 4 096 (best chunk {56} / {60} / {52})", *readme_run("passkey", KEYS), *(score(CHUNKS_KEYS, "passkey", n, "chunks-best-512") for n in KEYS)),
    F(f"docs/{LONG}/answer/README.md", "book halves {66} / {44} at 1 024 / 4 096", *readme_run("books", (1024, 4096))),
    F(f"docs/{LONG}/answer/README.md", "the access-code construction {70} / {80} / {38} (best chunk {44} / {66} / {60})", *readme_run("access-code", KEYS), *(score(CHUNKS_ACCESS, "access-code", n, "chunks-best-512") for n in KEYS)),
    F(f"docs/{LONG}/answer/README.md", "book halves at 4 096 between {42} and {48} against averaged chunks' {46}-{47}", Least(*SIX_STAGES_BOOKS), Least(*SIX_STAGES_BOOKS, most=True), score(ANSWER, "books", 4096, "chunks-mean-512"), seeds_mean(ANSWER, "books", 4096, "chunks-mean-512")),
    F(f"docs/{LONG}/answer/README.md", "(at lr 1e-3 they broke the 4 096 reading: books {22.7})", seeds_mean(f"{LONG}/long4096-proj-lr1e3/books/longdocs.json", "books", 4096, "whole")),
    F(LONGDOCS, "the default long student {+18} over the best chunk on LongEmbed's passkey, {-22} on the access code", readme_lead("passkey", 4096, CHUNKS_KEYS), readme_lead("access-code", 4096, CHUNKS_ACCESS)),
    F(LONGDOCS, "(the default long student {+4} over the best chunk, seed 1; `c1` {+6} to {+16}, by seed)", readme_lead("books", 1024, CHUNKS_BOOKS), Least(*C1_BOOKS_LEAD), Least(*C1_BOOKS_LEAD, most=True)),
    F(LONGDOCS, "(a tie; both {5}-{6} points above truncation)", seeds_mean(ANSWER, "imdb", 4096, "chunks-mean-512") - seeds_mean(ANSWER, "imdb", 4096, "truncate-512"), seeds_mean(ANSWER, "imdb", 4096, "late-chunking-512") - seeds_mean(ANSWER, "imdb", 4096, "truncate-512")),
    F(LONGDOCS, "(fidelity {1.000}, by construction;", README_FIDELITY, construction=True),
    # docs/longdocs.md, "The answer on all-MiniLM-L6-v2": its one table
    F(LONGDOCS, "| test books, 1 024 (482), `c160` | contextual chunks − best chunk | **{+4.1} [{+0.8}, {+7.4}]** |", *paired(1024, "contextual-chunks-512", "chunks-best-512")),
    F(LONGDOCS, "| test books, 2 048 (237), `c160`, training seeds 42 / 43 | contextual chunks − best chunk | **{+7.2} [{+2.0}, {+12.2}]** / **{+11.4} [{+6.2}, {+16.4}]** |", *paired(2048, "contextual-chunks-512", "chunks-best-512"), *paired(2048, "contextual-chunks-512", "chunks-best-512", S43)),
    F(LONGDOCS, "| held-out books, 2 048, `h40` | contextual chunks − strongest chunking | {+5.0} [{-0.3}, {+10.2}] |", *held_paired("contextual-chunks-512", STRONGEST, 2048)),
    F(LONGDOCS, "| held-out books, 4 096 (300), `h40` | contextual chunks − strongest chunking | {+2.0} [{-1.6}, {+5.6}] |", *held_paired("contextual-chunks-512", STRONGEST)),
    F(LONGDOCS, "| held-out books, 4 096 (300), `h40` | whole − best chunk | **{-9.0} [{-14.7}, {-3.2}]** |", *held_paired("whole", "chunks-best-512")),
    F(LONGDOCS, "| passkey, 4 096, the default | whole − best chunk | {70} against {52} |", *readme_run("passkey", (4096,)), score(CHUNKS_KEYS, "passkey", 4096, "chunks-best-512")),
    F(LONGDOCS, "| access code, 4 096, the default | whole − best chunk | {38} against {60} |", *readme_run("access-code", (4096,)), score(CHUNKS_ACCESS, "access-code", 4096, "chunks-best-512")),
    F(LONGDOCS, "| read by the original's own weights | fidelity {1.000}, by construction |", README_FIDELITY, construction=True),
    F(LONGDOCS, "| speed at 4 096, 2 CPU cores | whole / 512-token chunks | {1.03}x |", limits_native("w64", "chunks")),
    # docs/spectrum.md, "Figure 1 for our models": the mini study's full-attention model
    F("docs/spectrum.md", "| {454} / {229} | [{454}, {251}] | `--projected-length none,{251}` |", Many("reproduction/cpu-paper/spectrum-full/spectrum.json", "effective_rank", "0.9", "mean", 0, "*").mean(), Many("reproduction/cpu-paper/spectrum-full/spectrum.json", "effective_rank", "0.9", "mean", 1, "*").mean(), J("reproduction/cpu-paper/spectrum-full/spectrum.json", "rank_projected_length", 0), J("reproduction/cpu-paper/spectrum-full/spectrum.json", "rank_projected_length", 1), J("reproduction/cpu-paper/spectrum-full/spectrum.json", "recommended_projected_length", 1)),
    # docs/gpu.md, "Results (one H100, bf16)": its one table
    F("docs/gpu.md", "| {0.51}-{0.70}x up to n = 4 096; **{1.24}x** at 8 192, **{5.75}x** at 16 384, **{60.34}x** at 65 536;", Least(*(gpu_layer("full-sdpa", n) / gpu_layer("linformer-layerwise", n, 128) for n in GPU_NS[:4])), Least(*(gpu_layer("full-sdpa", n) / gpu_layer("linformer-layerwise", n, 128) for n in GPU_NS[:4]), most=True), *(gpu_layer("full-sdpa", n) / gpu_layer("linformer-layerwise", n, 128) for n in (8192, 16384, 65536))),
    F("docs/gpu.md", "faster at every n: {1.70}x at 512, {18.99}x at 8 192", *(gpu_layer("full-eager", n) / gpu_layer("linformer-layerwise", n, 128) for n in (512, 8192))),
    F("docs/gpu.md", "| **{1.61}x** at batch 1, **{2.67}x** at batch 8 |", *(J("benchmarks/gpu/compiled.json", {"method": "full-sdpa", "batch": b}, "eager_ms") / J("benchmarks/gpu/compiled.json", {"method": "linformer-headwise", "batch": b}, "compiled_ms") for b in (1, 8))),
    F("docs/gpu.md", "| {1.01}x / {1.09}x / {1.21}x / **{1.43}x** at n = 512 / 1 024 / 2 048 / 4 096 |", *(J("benchmarks/gpu/train_throughput.json", "results", {"n": n, "k": 128}, "best", "tokens_per_s") / J("benchmarks/gpu/train_throughput.json", "results", {"n": n, "k": None}, "best", "tokens_per_s") for n in (512, 1024, 2048, 4096))),
    F("docs/gpu.md", "inference at n = 4 096, batch 16, against 512-token chunks | {0.26}x |", gpu_student("original", "chunks", 4096, 16) / gpu_student("w64", "whole", 4096, 16)),
    F("docs/gpu.md", "validation perplexity, floor {516.7} | k = 128 + window 16: **{219.9}**; full attention {446.0}; k = 128 {446.1} |", run(GPU_LEARNS, "full", "no_context_perplexity"), run(GPU_LEARNS, "k128-w16"), run(GPU_LEARNS, "full"), run(GPU_LEARNS, "k128")),
    # docs/training.md, "Pretraining that learns": its table
    F("docs/training.md", "(floor {224.3}) | full attention {20.4}; k = 128 with `--local-window 16` {19.47} |", floors("full"), ppl("full"), run(CPU_LOCAL, "k128-w16-s42-branch")),
    F("docs/training.md", "| {80.5} against {138.7} |", run("reproduction/cpu/results.json", "full-keep"), run("reproduction/cpu/results.json", "full")),
    # docs/lra.md, "Published numbers and ours": the CPU tier's rows (test accuracy, %)
    F("docs/lra.md", "| ours, CPU tier, k = 256 window start | {15.5} (300 steps, 1 seed: one class for every tree) | **{57.0}** (n = 1 000, 2 000 steps, 1 seed) |", run("reproduction/lra-cpu/results.json", "listops-scratch-k256-window-s1", "accuracy") * 100, run("reproduction/lra-cpu/results.json", "text-scratch-k256-window-s1", "accuracy") * 100),
    F("docs/lra.md", "| ours, CPU tier, k = 256 random start | {15.5} (the same budget: the same one class) | **{51.95}** (the same budget) |", run("reproduction/lra-cpu/results.json", "listops-scratch-k256-random-s1", "accuracy") * 100, run("reproduction/lra-cpu/results.json", "text-scratch-k256-random-s1", "accuracy") * 100),
    F("docs/lra.md", "| ours, CPU tier, k = 256 window start + local window 16 | not run | **{50.55}** (the same budget: never left chance) |", run("reproduction/lra-cpu/results.json", "text-scratch-k256-w16-s1", "accuracy") * 100),
    F("docs/lra.md", "| majority class of the evaluated examples, CPU tier | {16.7} (2 000 test trees) | {50.7} (2 000 test reviews) |", run("reproduction/lra-cpu/results.json", "listops-scratch-k256-window-s1", "majority_class_accuracy") * 100, run("reproduction/lra-cpu/results.json", "text-scratch-k256-window-s1", "majority_class_accuracy") * 100),
    # docs/choosing.md, "In one table": the long-documents row
    F("docs/choosing.md", "test books at 2 048: {+7.2} [{+2.0}, {+12.2}] points over the best chunk; held-out books at 4 096: {+2.0} [{-1.6}, {+5.6}] over the strongest chunking", *paired(2048, "contextual-chunks-512", "chunks-best-512"), *held_paired("contextual-chunks-512", STRONGEST)),
    # docs/distill.md (the guide), "The answer on all-MiniLM-L6-v2": its one table, "Encode speed", "Known limits"
    F(DISTILL, "(two *different* reviews under the original\nscore {0.333})", grid("original@512", key="different_documents")),
    F(DISTILL, "| {0.976} after 150 steps, {11} minutes on 2 CPU cores; {0.968} as converted; without a window {0.590} as converted, {0.879} after training |", quality("k128-w64-g1-e2e150", "fidelity"), stage_minutes(MINILM_512), grid("drop-in-k128-w64-g1"), grid("drop-in-k128"), grid("e2e150-k128")),
    F(DISTILL, "| {76.87} against the original's {77.87} %; recall@1 {0.378} against {0.369} |", quality("k128-w64-g1-e2e150", "probe_mean") * 100, quality("original@512", "probe_mean") * 100, quality("k128-w64-g1-e2e150", "recall_at_1"), quality("original@512", "recall_at_1")),
    F(DISTILL, "| {77.3} against {73.5} % for the original cut at 512 |", quality("k128-w64-g1-e2e150@2048", "probe_mean_long") * 100, quality("original@512", "probe_mean_long") * 100),
    F(DISTILL, "| {0.99}-{1.01}x the original up to 512 tokens; at 4 096, {1.03}x its 512-token chunks and {2.53}x its full attention |", Many(CPU_LIMITS_NATIVE, "ratios", {"runtime": "torch", "baseline": "original", "student": "w64"}, "speed").min(), Many(CPU_LIMITS_NATIVE, "ratios", {"runtime": "torch", "baseline": "original", "student": "w64"}, "speed").max(), limits_native("w64", "chunks"), limits_native("w64", "full")),
    F(DISTILL, "| the original, exactly: fidelity {1.000} by construction |", README_FIDELITY, construction=True),
    F(DISTILL, "| {68} / {72} / {70} at 1 024 / 2 048 / 4 096 tokens against the original's best 512-token chunk's {56} / {60} / {52}; another construction of the key at 4 096: {38} against {60} |", *readme_run("passkey", KEYS), *(score(CHUNKS_KEYS, "passkey", n, "chunks-best-512") for n in KEYS), *readme_run("access-code", (4096,)), score(CHUNKS_ACCESS, "access-code", 4096, "chunks-best-512")),
    F(DISTILL, "its contextual chunks {+2.0} [{-1.6}, {+5.6}] points over the strongest chunking (held-out books); at 2 048, at least {7.2} points over the best chunk", *held_paired("contextual-chunks-512", STRONGEST), Least(paired(2048, "contextual-chunks-512", "chunks-best-512")[0], paired(2048, "contextual-chunks-512", "chunks-best-512", S43)[0])),
    F(DISTILL, "| {25} minutes on 2 AVX-512 cores, peak {7.9} GB |", J(MEMORY_1129, "wall_s") / 60, J(MEMORY_1129, "peak_rss_kb") * KB_TO_GB),
    F(DISTILL, "slower than the original at 512 tokens ({0.79}x) and needs 1.3-1.6x the original's peak memory for one forward; at 4 096 tokens it is {1.68}x faster", J(f"{MINILM}/speed-w64.json", "lengths", "512", "speedup"), J(f"{MINILM}/speed-w64.json", "lengths", "4096", "speedup")),
    F(DISTILL, "The 512 student's probe is {1.0} point behind the original's", (quality("original@512", "probe_mean") - quality("k128-w64-g1-e2e150", "probe_mean")) * 100),
    F(DISTILL, "The long student's fidelity up to 512 is {1.000} by construction", README_FIDELITY, construction=True),
    # docs/reproduction/distill-minilm/README.md, "The answer on all-MiniLM-L6-v2 in full" (moved from docs/distill.md)
    F(DISTILL_MINILM, "embeddings (mean cosine {0.976} to the original's on 1 000 random held-out IMDB reviews", quality("k128-w64-g1-e2e150", "fidelity")),
    F(DISTILL_MINILM, "150 steps of distillation, {11} minutes on 2 CPU cores**", stage_minutes(MINILM_512)),
    F(DISTILL_MINILM, "already scores {0.968}.", grid("drop-in-k128-w64-g1")),
    F(DISTILL_MINILM, "(k = 128: {0.590} as converted, {0.879} after the same 150 steps;", grid("drop-in-k128"), grid("e2e150-k128")),
    F(DISTILL_MINILM, "(recall@1 {0.378} against {0.369})", quality("k128-w64-g1-e2e150", "recall_at_1"), quality("original@512", "recall_at_1")),
    F(DISTILL_MINILM, "is {1.0} point behind its IMDB probe ({76.87} against {77.87} %, 3 seeds;", (quality("original@512", "probe_mean") - quality("k128-w64-g1-e2e150", "probe_mean")) * 100, quality("k128-w64-g1-e2e150", "probe_mean") * 100, quality("original@512", "probe_mean") * 100),
    F(DISTILL_MINILM, "{3.8} points better than the original cut at 512 ({77.3} against {73.5} %)", (quality("k128-w64-g1-e2e150@2048", "probe_mean_long") - quality("original@512", "probe_mean_long")) * 100, quality("k128-w64-g1-e2e150@2048", "probe_mean_long") * 100, quality("original@512", "probe_mean_long") * 100),
    F(DISTILL_MINILM, "It encodes {1.68}x faster than the original at n = 4 096 on a CPU, {0.79}x at 512", J(f"{MINILM}/speed-w64.json", "lengths", "4096", "speedup"), J(f"{MINILM}/speed-w64.json", "lengths", "512", "speedup")),
    F(DISTILL_MINILM, "512 tokens ({0.96}-{1.02}x there; {1.28}x at n = 128, batch 32, where the original's times spread) and {2.24}x the original's full attention at 4 096, {0.90}x its 512-token chunks", Least(*EXACT512_LEVEL), Least(*EXACT512_LEVEL, most=True), exact512("w64", 128, 32), exact512("w64", 4096, 1, "full"), exact512("w64", 4096, 1, "chunks")),
    F(DISTILL_MINILM, "| k = 64 | {0.470} | {0.425} | – | – |", grid("drop-in-k64"), grid("drop-in-k64", 256)),
    F(DISTILL_MINILM, "| k = 128 | {0.590} | {0.556} | {0.879} | {0.862} |", *grid_row("k128")),
    F(DISTILL_MINILM, "| k = 256 | {0.762} | {0.740} | – | – |", grid("drop-in-k256"), grid("drop-in-k256", 256)),
    F(DISTILL_MINILM, "| k = 64, w 16 + 1 global | {0.907} | {0.902} | {0.956} | {0.952} |", *grid_row("k64-w16-g1")),
    F(DISTILL_MINILM, "| k = 128, w 16 + 1 global | {0.917} | {0.913} | {0.959} | {0.955} |", *grid_row("k128-w16-g1")),
    F(DISTILL_MINILM, "| k = 256, w 16 + 1 global | {0.936} | {0.932} | **{0.974}** | **{0.988}** |", *grid_row("k256-w16-g1")),
    F(DISTILL_MINILM, "| k = 64, w 64 + 1 global | {0.967} | {0.968} | **{0.975}** | **{0.974}** |", *grid_row("k64-w64-g1")),
    F(DISTILL_MINILM, "| k = 128, w 64 + 1 global | {0.968} | {0.968} | **{0.976}** | **{0.974}** |", *grid_row("k128-w64-g1")),
    F(DISTILL_MINILM, "| k = 128, w 16 + 1 global, 600 steps | | | {0.966} | {0.963} |", grid("e2e600-k128-w16-g1"), grid("e2e600-k128-w16-g1", 256)),
    F(DISTILL_MINILM, "512: {0.333}, 256: {0.298}", grid("original@512", key="different_documents"), grid("original@256", 256, "different_documents")),  # different reviews under the original
    F(DISTILL_MINILM, "from {0.590} to {0.968} at k = 128 with no training at all (the grid's 1 000 random reviews); 150 steps add {0.008}", grid("drop-in-k128"), grid("drop-in-k128-w64-g1"), grid("e2e150-k128-w64-g1") - grid("drop-in-k128-w64-g1")),
    F(DISTILL_MINILM, "(600 steps, {41} minutes beside other jobs, about 34 alone) reach {0.966}", stage_minutes(f"{MINILM}/k128-w16-g1-e2e600.json"), grid("e2e600-k128-w16-g1")),
    F(DISTILL_MINILM, "k = 64 and k = 128 end {0.0003} apart ({0.975}, {0.976});", grid("e2e150-k128-w64-g1") - grid("e2e150-k64-w64-g1"), grid("e2e150-k64-w64-g1"), grid("e2e150-k128-w64-g1")),
    F(DISTILL_MINILM, "with w = 16, k = 256 ({0.974}) beats k = 128 ({0.959}) and k = 64 ({0.956})", grid("e2e150-k256-w16-g1"), grid("e2e150-k128-w16-g1"), grid("e2e150-k64-w16-g1")),
    F(DISTILL_MINILM, "which is why k = 256 at n = 256 reaches {0.988} after training", grid("e2e150-k256-w16-g1", 256)),
    F(DISTILL_MINILM, "(CPU time; k = 128's {0.879} shows where", grid("e2e150-k128")),
    F(DISTILL_MINILM, "k = 128 alone {442} s, k = 64 / 128 / 256 with w = 16 {507} / {543} / {628} s, k = 64 / 128 with w = 64 {564} / {663} s", *(J(f"{MINILM}/{name}.json", "stage_seconds", "end-to-end") for name in ("k128-e2e", "k64-w16-g1-e2e", "k128-w16-g1-e2e-rerun", "k256-w16-g1-e2e", "k64-w64-g1-e2e", "k128-w64-g1-e2e"))),
    # docs/reproduction/long-minilm/long4096-readme/README.md: "The answer first" and the recommended long student (moved from docs/distill.md)
    F(DISTILL_LONG, "(fidelity {1.000} on book, review, encyclopedia and sentence text at 256 and 512 tokens, by construction)", README_FIDELITY, construction=True),
    F(DISTILL_LONG, "LongEmbed's passkey {70} against the best chunk's {52}, the access code {38} against {60}.", *readme_run("passkey", (4096,)), score(CHUNKS_KEYS, "passkey", 4096, "chunks-best-512"), *readme_run("access-code", (4096,)), score(CHUNKS_ACCESS, "access-code", 4096, "chunks-best-512")),
    F(DISTILL_LONG, "fidelity {1.000} at 256 and 512 tokens on Gutenberg, IMDB, WikiText and SST-2 (`longdocs --tasks fidelity`; `distill`'s report {1.000} on each held-out source), and WikiText paragraph halves at the original's recall, both by construction", README_FIDELITY, Many(f"{LONG}/k128-w64-g1-long4096-readme.json", "fidelity_by_source", "*", "fidelity").min(), construction=True),
    F(DISTILL_LONG, "passkey {66} / {54} / {68} / {72} / {70} at 256 ... 4 096 tokens against the best 512-token chunk's {66} / {54} / {56} / {60} / {52}", *readme_run("passkey", (256, 512, *KEYS)), *(score(CHUNKS_KEYS, "passkey", n, "chunks-best-512") for n in (256, 512, *KEYS))),
    F(DISTILL_LONG, "book halves {66} / {44} at 1 024 / 4 096 (best chunk {62} / {44}, averaged chunks {54} / {46})", *readme_run("books", (1024, 4096)), *(score(CHUNKS_BOOKS, "books", n, method) for method in ("chunks-best-512", "chunks-mean-512") for n in (1024, 4096))),
    F(DISTILL_LONG, "**{41} minutes on 2 AVX2 cores, peak RSS {9.0} GB**", J(MEMORY, "wall_s") / 60, J(MEMORY, "peak_rss_kb") * KB_TO_GB),
    F(DISTILL_LONG, "**{25} minutes (the 512 stage {422} s at 2.8-2.9 s a step,\nthe long stage {823} s at 20 s a step) and {7.9} GB**", J(MEMORY_1129, "wall_s") / 60, J(MEMORY_1129, "stage_seconds", "end-to-end"), J(MEMORY_1129, "stage_seconds", "long"), J(MEMORY_1129, "peak_rss_kb") * KB_TO_GB),
    F(DISTILL_LONG, "holding\npairs, each read by the student and by the teacher's chunks and truncation) {70} s, {9} % of the long stage's\n{823} s.", J(f"{LONG}/long4096-readme-1129/metrics.json", "long_reading", "seconds"), J(f"{LONG}/long4096-readme-1129/metrics.json", "long_reading", "seconds") / J(f"{LONG}/long4096-readme-1129/metrics.json", "stage_seconds", "long") * 100, J(f"{LONG}/long4096-readme-1129/metrics.json", "stage_seconds", "long")),
    F(TRAIN_DOC, "machine and day): {25} minutes, {7.9} GB", J(MEMORY_1129, "wall_s") / 60, J(MEMORY_1129, "peak_rss_kb") * KB_TO_GB),
    F(README, "{25} minutes of 2 AVX-512 cores, peak {7.9} GB resident", J(MEMORY_1129, "wall_s") / 60, J(MEMORY_1129, "peak_rss_kb") * KB_TO_GB),
    F(DISTILL_MINILM, "Two *different* reviews under the original score {0.333} (n = 512) and {0.298} (n = 256).", grid("original@512", key="different_documents"), grid("original@256", 256, "different_documents")),
    F(DISTILL_LONG, "(at dropout 0.1: {7.6} GB against {16.8}; 88-91 s a step against 62-65 in another run, not an A/B;", J(f"{LONG}/long4096-sbw-layers/memory-gradient-checkpointing.json", "peak_rss_kb") * KB_TO_GB, J(f"{LONG}/long4096-sbw-layers/memory.json", "peak_rss_kb") * KB_TO_GB),
    F(DISTILL_HISTORY, "a longer one pays {2.8} % more multiply-adds in the layer's linears at rank 16", ADAPTERS),
    # counted costs in the code, docs/models.md and docs/notes/models/README.md
    F("src/linformer_kit/nn/exact_rows.py", "MiniLM's shape: about {4} % of a layer's)", EXACT_PATH),
    F("docs/notes/models/README.md", "about {4} % more multiply-adds a layer at n = 4 096, T = 512, MiniLM's shape", EXACT_PATH),
    F("src/linformer_kit/nn/long_adapters.py", "(r = 16, D = 384: 8 D r / 12 D² = {2.8} % of the layer's linears)", ADAPTERS),
    F("docs/models.md", "(r = 16, D = 384: 8 D r / 12 D² = {2.8} % of the layer's linears)", ADAPTERS),
    # docs/models.md, "A long-input model from a short one": the CPU tier's extension (its record: docs/reproduction/cpu-long/README.md)
    F("docs/models.md", "| full attention, positions copied | **{103.9}** |", run("reproduction/cpu-long/results.json", "full-copied")),
    F("docs/models.md", "| full attention, positions 512+ new | {179.3} |", run("reproduction/cpu-long/results.json", "full-new")),
    F("docs/models.md", "| Linformer k = 128 in every layer, positions copied | {237.0} (floor {232.1}) |", run("reproduction/cpu-long/results.json", "copied"), run("reproduction/cpu-long/results.json", "copied", "no_context_perplexity")),
    # docs/reproduction/long-minilm/README.md, "The original up to 512": the goals of the README's long command
    F(f"docs/{LONG}/README.md", "Fidelity at 512 is {1.000} by construction", J(f"{LONG}/k128-w64-g1-long4096-readme.json", "fidelity", "long"), construction=True),
    F(f"docs/{LONG}/README.md", "command; {41} minutes on 2 AVX2 cores (goal 60); peak {9.0} GB (goal 16);", J(MEMORY, "wall_s") / 60, J(MEMORY, "peak_rss_kb") * KB_TO_GB),
    # docs/reproduction/cpu-paper/README.md, "The answer at CPU scale": the headline and the tables of the study's runs
    F(STUDY_PAPER, "the `mini` encoder ({0.6} M parameters without E, F)", params("full")),
    F(STUDY_PAPER, "with 21 000 instead of 3 000 steps at n = 512 ({123} M tokens, {2.5}x the study's) it leaves it ({0.53} and {0.45} × floor, seeds 42 and 43)", run(MORE, "k128-30000", "train_tokens") / 1e6, run(MORE, "k128-30000", "train_tokens") / run(PAPER, "k128", "train_tokens"), ppl_floor("k128-30000", MORE)[1], ppl_floor("k128-30000-s43", MORE)[1]),
    F(STUDY_PAPER, "it comes within {4}-{8} % in both seeds where full attention learned", (ppl("k512-128-s43") / ppl("full-s43") - 1) * 100, (ppl("k512-128") / ppl("full") - 1) * 100),
    F(STUDY_PAPER, "no-context floor {224.3} for every seed-42 run (the same masks; seed 43's: {224.8}, seed 44's: {224.7}):", floors("full"), floors("full-s43"), floors("full-s44")),
    F(STUDY_PAPER, "| 9 000 / 3 000 | **{20.4}** ({0.09} × floor); seed 43: **{21.5}** ({0.10}); seed 44: **{215.0}** ({0.96}, no drop) | **{213.0}** ({0.95}); seed 43: **{216.4}** ({0.96}); seed 44: **{216.6}** ({0.96}) | **{22.1}** ({0.10}); seed 43: **{22.4}** ({0.10}); seed 44: **{216.0}** ({0.96}, no drop) |", *(x for name in ("full", "full-s43", "full-s44", "k128", "k128-s43", "k128-s44", "k512-128", "k512-128-s43", "k512-128-s44") for x in ppl_floor(name))),
    F(STUDY_PAPER, "| 6 000 / 1 500 | **{82.1}** ({0.37}) | **{213.9}** ({0.95}) | – |", *ppl_floor("full", P7500), *ppl_floor("k128", P7500)),
    F(STUDY_PAPER, "| 6 000 / 6 000 | – (not continued past 7 500) | **{181.3}** ({0.81}) | – |", *ppl_floor("k128", P12000)),
    F(STUDY_PAPER, "| 9 000 / 21 000 | – | **{119.2}** ({0.53}); seed 43: **{101.2}** ({0.45}; floor {224.8}) | – |", *ppl_floor("k128-30000", MORE), *ppl_floor("k128-30000-s43", MORE), floors("k128-30000-s43", MORE)),
    F(STUDY_PAPER, "| **{20.4}** ({0.09}) | **{199.8}** ({0.89}) | **{213.0}** ({0.95}) | **{231.3}** ({1.03}) | **{231.0}** ({1.03}) | **{22.1}** ({0.10}) |", *(x for name in ("full", "k256", "k128", "k64", "k32", "k512-128") for x in ppl_floor(name))),
    F(STUDY_PAPER, "| none: E, F per head ({1.14} M) | **{202.6}** ({0.90}) | **{21.97}** ({0.10}) |", params("k128-none"), *ppl_floor("k128-none"), *ppl_floor("k512-128-none")),
    F(STUDY_PAPER, "| headwise: E, F per layer ({0.87} M) | **{213.0}** ({0.95}); seed 43: {216.4} | **{22.1}** ({0.10}); seed 43: {22.4} |", params("k128"), *ppl_floor("k128"), ppl("k128-s43"), *ppl_floor("k512-128"), ppl("k512-128-s43")),
    F(STUDY_PAPER, "| kv: E = F per layer ({0.74} M) | **{200.6}** ({0.89}) | **{22.25}** ({0.10}) |", params("k128-kv"), *ppl_floor("k128-kv"), *ppl_floor("k512-128-kv")),
    F(STUDY_PAPER, "| layerwise: one E = F for every layer ({0.68} M) | **{206.4}** ({0.92}) |", params("k128-layerwise"), *ppl_floor("k128-layerwise")),
    F(STUDY_PAPER, "**{180.9}** ({0.81}) from step 0, **{217.9}** ({0.97}) on `full`'s trunk (only the start differs from k = 128's {213.0})", *ppl_floor("k128-random"), *ppl_floor("k128-random-full-trunk"), ppl("k128")),
    F(STUDY_PAPER, "at n = 1 024 the floor of the validation masks is {231.9}, at n = 2 048 {231.7}", floors("full-n1024"), floors("k128-n2048")),
    F(STUDY_PAPER, "| 512 | **{20.4}** ({0.09}) | **{22.1}** ({0.10}) | **{213.0}** ({0.95}) |", *ppl_floor("full"), *ppl_floor("k512-128"), *ppl_floor("k128")),
    F(STUDY_PAPER, "| 1 024 | **{221.7}** ({0.96}) | **{221.8}** ({0.96}) | **{223.9}** ({0.97}) |", *ppl_floor("full-n1024"), *ppl_floor("k1024-128-n1024"), *ppl_floor("k128-n1024")),
    F(STUDY_PAPER, "| 2 048 (floor {231.7}) | not run (below) | not run (below) | **{231.4}** ({1.00}) |", floors("k128-n2048"), *ppl_floor("k128-n2048")),
    # docs/reproduction.md (the guide), "The answer at CPU scale": its one table
    F(STUDY, "A `mini` encoder ({0.6} M parameters, 2 layers), 12 000 steps of 4 096 tokens ({49} M)", params("full"), run(PAPER, "k128", "train_tokens") / 1e6),
    F(STUDY, "(the no-context\nfloor, a model that ignores every neighbour, is about {224})", floors("full")),
    F(STUDY, "| perplexity {213.0} / {216.4} (at the floor) against full attention's {20.4} / {21.5} |", ppl("k128"), ppl("k128-s43"), ppl("full"), ppl("full-s43")),
    F(STUDY, "| with {2.5}x the tokens at n = 512 | {119.2} / {101.2}: off the floor", run(MORE, "k128-30000", "train_tokens") / run(PAPER, "k128", "train_tokens"), ppl("k128-30000", MORE), ppl("k128-30000-s43", MORE)),
    F(STUDY, "| {231.0} / {231.3} / {213.0} / {199.8}: the paper's order", ppl("k32"), ppl("k64"), ppl("k128"), ppl("k256")),
    F(STUDY, "| {200.6}-{213.0} for every sharing |", Least(*(ppl(name) for name in ("k128-none", "k128", "k128-kv", "k128-layerwise"))), Least(*(ppl(name) for name in ("k128-none", "k128", "k128-kv", "k128-layerwise")), most=True)),
    F(STUDY, "| {22.1} / {22.4}: within {4}-{8} % of full attention |", ppl("k512-128"), ppl("k512-128-s43"), (ppl("k512-128-s43") / ppl("full-s43") - 1) * 100, (ppl("k512-128") / ppl("full") - 1) * 100),
    F(STUDY, "| {19.47} / {24.07} against full attention's {20.58} / {27.26} |", run(CPU_LOCAL, "k128-w16-s42-branch"), run(CPU_LOCAL, "k128-w16-s43-branch"), run(CPU_LOCAL, "full-s42"), run(CPU_LOCAL, "full-s43")),
    F(STUDY, "| {18.88} / {25.74} against {20.24} / {29.73} |", run(CPU_LOCAL_LONG, "k128-w16-n2048-s42"), run(CPU_LOCAL_LONG, "k128-w16-n2048"), run(CPU_LOCAL_LONG, "full-n2048-s42"), run(CPU_LOCAL_LONG, "full-n2048")),
    F(STUDY, "| {74.47} / {76.27} % against full attention's {75.33} / {77.58} %; k = 128 alone {72.72} against {75.47} % |", *(finetuned(CPU_LOCAL, name) * 100 for name in ("k128-w16-s42-branch", "k128-w16-s43-branch", "full-s42", "full-s43")), finetuned(PAPER, "k128") * 100, finetuned(PAPER, "full") * 100),
    F(STUDY, "| {70.80} / {71.90} % against {71.06} / {71.33} % |", *(finetuned(CPU_LOCAL, name, "sst2") * 100 for name in ("k128-w16-s42-branch", "k128-w16-s43-branch", "full-s42", "full-s43"))),
    F(STUDY, "no: IMDB full attention from scratch {76.63} %, pretrained {75.47} %; a bag-of-words logistic regression {86.00} %", finetuned(PAPER, "scratch:full") * 100, finetuned(PAPER, "full") * 100, finetuned(PAPER, "bag-of-words") * 100),
)
# fmt: on

# Phrases of the README's results table whose numbers are settings, not results (lengths, k, window, models)
README_SETTINGS = (
    "k = 128 with `--local-window 16` from scratch; `--local-window 64 --global-tokens 1` for a pretrained encoder",
    "all-MiniLM-L6-v2",
)


@functools.cache
def doc_text(doc: str) -> str:
    return spaced((ROOT / doc).read_text())


@pytest.mark.parametrize("figure", FIGURES, ids=lambda f: f"{f.doc}: {f.text[:60]}")
def test_figure_equals_its_evidence(figure: F) -> None:
    assert figure.text in doc_text(figure.doc), f"{figure.doc} no longer says {figure.text!r}"
    assert len(figure.figures) == len(figure.sources), f"{figure.snippet!r}: one source a braced figure"
    for written, source in zip(figure.figures, figure.sources):
        expected = as_written(written, source.value())
        assert bare(written) == expected, (
            f"{figure.doc}: {written!r} in {figure.text!r}, but {source} gives {source.value()!r} ({expected})"
        )
    if figure.construction:
        assert "by construction" in figure.text, (
            f"{figure.doc}: {figure.text!r} holds by construction: say so"
        )


def test_unfiled_figures_say_so() -> None:
    """A snippet with no source quotes a figure no file holds: the text must say so."""
    for figure in FIGURES:
        if not figure.sources:
            assert "no file" in figure.text, (
                f"{figure.doc}: {figure.text!r} names no source: say it is in no file"
            )


def results_answers() -> list[str]:
    """The answer column of the README's "Results in brief" table, one cell a row (whitespace runs: one space)."""
    rows = results_section((ROOT / README).read_text()).splitlines()
    return [
        spaced(row.split(" | ")[1])
        for row in rows
        if row.startswith("| ") and not row.startswith("| question")
    ]


def test_every_readme_result_has_a_source() -> None:
    """Every number in the results table's answers is a figure of FIGURES or a setting of README_SETTINGS."""
    quoted = [figure.text for figure in FIGURES if figure.doc == README] + list(README_SETTINGS)
    answers = results_answers()
    assert len(answers) >= 5, answers
    for answer in answers:
        rest = answer
        for text in quoted:
            rest = rest.replace(text, " ")
        assert not re.search(r"\d", rest), (
            f"README.md results: {answer!r} has numbers with no source ({rest!r}): add them to FIGURES in "
            "tests/test_evidence.py (or to README_SETTINGS if they are settings, not results)"
        )
