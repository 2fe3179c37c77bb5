"""Every shell block of the README, then of docs/usage.md (its recipes at full size), runs, in-process and
in a temporary folder, with smoke settings.

How a block is read (the README says the same in one sentence, above its tour):
- a block whose first line is `# not run in tests: REASON` is skipped with that reason (a GPU, the Hub,
  several processes); the set-up block is not run either: it must hold SETUP verbatim, CI runs it;
- every other line is a comment, `NAME=value` (a variable later lines expand, `$NAME` / `${NAME}`) or
  a `linformer ...` command, run as `linformer_kit.cli.main.main(argv)`, which must return 0;
- smoke settings: `DATA` points at a folder of tiny files with the names the README uses (`fixtures`),
  and SMOKE's options are appended to each verb's command line (the last value of a flag wins), so
  `--max-steps 4000` runs 2 steps, the benchmark times one short case and `reproduce` only checks its recipe.
"""

from __future__ import annotations

import gzip
import json
import re
import shlex
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
README = ROOT / "README.md"
USAGE = ROOT / "docs" / "usage.md"  # run after the README's blocks, with the variables and runs they left
BLOCKS = [
    block
    for path in (README, USAGE)
    for block in re.findall(r"```bash\n(.*?)```", path.read_text(), flags=re.DOTALL)
]
SKIP_PREFIX = "# not run in tests:"

# The two set-up commands of a fresh machine (.ci/run runs the same): kept byte for byte.
SETUP = (
    'pip install torch==2.13.0 && pip install -e ".[all]" && linformer benchmark --quick --output-dir runs/benchmark\n',
    'pip install -e ".[test]" && python -m pytest -q\n',
)

SMOKE: dict[str, list[str]] = {
    "pretrain": ["--max-steps", "2", "--batch-size", "4"],
    "finetune": ["--max-steps", "2", "--batch-size", "4"],
    "spectrum": ["--max-inputs", "2"],
    "benchmark": ["--seq-lens", "256", "--projected-lengths", "64", "--rounds", "1", "--no-memory"],
    "reproduce": ["--dry-run"],  # checks the recipe and its data files, prints every run's command
}
VARIABLE = re.compile(r"\$(\w+)|\$\{(\w+)\}")
ASSIGNMENT = re.compile(r"^([A-Za-z_]\w*)=(.*)$")


def is_setup(block: str) -> bool:
    return any(command in block for command in SETUP)


def skip_reason(block: str) -> str | None:
    first = block.splitlines()[0]
    return first[len(SKIP_PREFIX) :].strip() if first.startswith(SKIP_PREFIX) else None


RUN = [block for block in BLOCKS if not is_setup(block) and skip_reason(block) is None]
NOT_RUN = [skip_reason(block) for block in BLOCKS if skip_reason(block) is not None]


def lines_of(block: str) -> list[str]:
    """The block's logical lines: continuations joined, blank and comment lines dropped."""
    joined = block.replace("\\\n", " ")
    return [line.strip() for line in joined.splitlines() if line.strip() and not line.strip().startswith("#")]


def expand(text: str, variables: dict[str, str]) -> str:
    def value(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        assert name in variables, f"README shell line uses ${name}, which no line before it sets"
        return variables[name]

    return VARIABLE.sub(value, text)


def fixtures(folder: Path) -> Path:
    """Tiny stand-ins for the corpora the README's `DATA` folder holds, under the same names."""
    text = (ROOT / "examples" / "data" / "sample.txt").read_text()
    paragraphs = [p for p in text.split("\n\n") if p.strip()]
    cut = len(paragraphs) * 9 // 10
    for name, part in (("train", paragraphs[:cut]), ("valid", paragraphs[cut:])):
        path = folder / "gutenberg" / f"{name}.jsonl.gz"
        path.parent.mkdir(parents=True, exist_ok=True)
        with gzip.open(path, "wt") as f:  # a few "books" of paragraphs, as the real corpus has
            for start in range(0, len(part), 40):
                f.write(json.dumps({"text": "\n\n".join(part[start : start + 40])}) + "\n")
    (folder / "sst2").mkdir()
    (folder / "imdb").mkdir()
    for name, source in (("train", "sentiment-train.tsv"), ("dev", "sentiment-dev.tsv")):
        shutil.copy(ROOT / "examples" / "data" / source, folder / "sst2" / f"{name}.tsv")
        rows = [line.split("\t") for line in (folder / "sst2" / f"{name}.tsv").read_text().splitlines()[1:]]
        imdb = folder / "imdb" / f"{'test' if name == 'dev' else name}.jsonl.gz"
        with gzip.open(imdb, "wt") as f:
            f.writelines(json.dumps({"text": text, "label": int(label)}) + "\n" for text, label in rows)
    return folder


def test_readme_setup_commands_are_kept() -> None:
    """CI (.ci/run) runs these two; the README must show them exactly, in one block."""
    (setup,) = [block for block in BLOCKS if is_setup(block)]
    for command in SETUP:
        assert command in setup


def test_readme_shell_blocks_are_runnable_or_marked() -> None:
    """Fast check of what the slow test runs: only variables and `linformer` commands."""
    assert len(RUN) >= 4
    for block in RUN:
        for line in lines_of(block):
            if ASSIGNMENT.match(line):
                continue
            words = shlex.split(line, comments=True)
            assert words[0] == "linformer", (
                f"README shell line {line!r} is not a `linformer` command: make it one, or open its block "
                f"with `{SKIP_PREFIX} REASON`"
            )
            assert words[1] in SMOKE, f"README runs `linformer {words[1]}`: give it smoke options in SMOKE"


@pytest.mark.parametrize("reason", NOT_RUN)
def test_readme_shell_block_not_run(reason: str) -> None:
    assert reason, f"a README block opening with `{SKIP_PREFIX}` must say why"
    pytest.skip(f"README shell block: {reason}")


@pytest.mark.slow
def test_readme_shell_blocks_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from linformer_kit.cli.main import main

    data = fixtures(tmp_path / "data")
    work = tmp_path / "repo"
    work.mkdir()
    for name in ("examples", "recipes", "docs"):  # the README's paths are relative to the repository root
        (work / name).symlink_to(ROOT / name)
    monkeypatch.chdir(work)
    variables: dict[str, str] = {}
    for block in RUN:
        for line in lines_of(block):
            assignment = ASSIGNMENT.match(line)
            if assignment:
                name, value = assignment.groups()
                (value,) = shlex.split(expand(value, variables), comments=True)
                variables[name] = str(data) if name == "DATA" else value
                continue
            argv = shlex.split(expand(line, variables), comments=True)
            verb = argv[1]
            assert main([*argv[1:], *SMOKE[verb]]) == 0, f"README command failed: {line}"
