"""The Python examples of the README and of docs/usage.md (its longer recipes) run as written (a block
opening with `# not run in tests` is skipped).

Their shell blocks run in tests/test_readme_shell.py.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).parents[1] / "README.md"
USAGE = README.parent / "docs" / "usage.md"  # the README's recipes at full size
BLOCKS = [
    (path, block)
    for path in (README, USAGE)
    for block in re.findall(r"```python\n(.*?)```", path.read_text(), flags=re.DOTALL)
]


def test_readme_has_python_examples() -> None:
    assert len(BLOCKS) >= 2


@pytest.mark.slow
def test_readme_python_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # examples that write files write them here
    namespace: dict = {}
    for path, block in BLOCKS:
        if block.startswith("# not run in tests"):
            continue
        exec(compile(block, str(path), "exec"), namespace)


# The README's results section: from its heading line "## Results in brief" up to (not including) the next
# line that opens with "## ". A word is a whitespace-separated token holding a letter or a digit, so table
# pipes and the |---| rule do not count and a Markdown link counts as one word. The limit leaves the section
# a summary; its detail lives in docs/choosing.md.
RESULTS_HEADING = "## Results in brief"
RESULTS_MAX_WORDS = 300


def results_section(text: str) -> str:
    match = re.search(rf"^{re.escape(RESULTS_HEADING)}\n.*?(?=^## |\Z)", text, flags=re.DOTALL | re.MULTILINE)
    assert match, f"README.md has no {RESULTS_HEADING!r} section"
    return match.group(0)


def count_words(text: str) -> int:
    return sum(1 for token in text.split() if re.search(r"\w", token))


def test_results_section_is_short() -> None:
    words = count_words(results_section(README.read_text()))
    assert words <= RESULTS_MAX_WORDS, (
        f"README's results section has {words} words (limit {RESULTS_MAX_WORDS}): move detail to docs/choosing.md"
    )


def test_results_section_counts_as_defined() -> None:
    section = "## Results in brief\n\n| q | a |\n|---|---|\n| Fast? | [yes](x.md), 2x |\n\n"
    assert results_section(section + "## Next\n\nnot counted\n") == section
    # "##", the pipes and the rule are not words: Results in brief q a Fast? [yes](x.md), 2x
    assert count_words(section) == 8


def github_anchor(heading: str) -> str:
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def markdown_without_code(path: Path) -> str:
    return re.sub(r"```.*?```", "", path.read_text(), flags=re.DOTALL)


@pytest.mark.parametrize(
    "doc", ["README.md", "docs/index.md", "docs/usage.md", "docs/choosing.md", "docs/distill.md"]
)
def test_relative_links_resolve(doc: str) -> None:
    """Every relative link (outside code blocks) names a file that exists, and an anchor in a .md file a heading."""
    path = README.parent / doc
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", markdown_without_code(path)):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
            continue
        file, _, anchor = target.partition("#")
        dest = path.parent / file if file else path
        if not dest.exists():
            broken.append(target)
        elif anchor and dest.suffix == ".md":
            headings = re.findall(r"^#+ (.*)$", markdown_without_code(dest), flags=re.MULTILINE)
            if anchor not in {github_anchor(h) for h in headings}:
                broken.append(target)
    assert not broken, f"{doc}: links that do not resolve: {broken}"
