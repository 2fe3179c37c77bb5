"""The docs stay short enough to read in minutes: the README and each guide (a top-level page of docs/)
have a word limit, counted outside fenced code blocks (commands and code are not prose to read).

The lab records under docs/'s folders (benchmarks, reproduction, notes) have no limit: they are the evidence.
The site over docs/ (mkdocs.yml) is built with `mkdocs build --strict` by .ci/run.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.test_readme import count_words

ROOT = Path(__file__).parents[1]
README_MAX_WORDS = 1200
GUIDE_MAX_WORDS = 2000
GUIDES = sorted((ROOT / "docs").glob("*.md"))


def prose_words(text: str) -> int:
    """Words outside fenced code blocks: every ```...``` block is dropped, then test_readme's count_words
    counts the whitespace-separated tokens holding a letter or a digit (so `#`, `|`, `---` and `-` are not
    words, and a link's target adds none to the words of its text)."""
    return count_words(re.sub(r"```.*?```", "", text, flags=re.DOTALL))


def test_prose_words_counts_as_defined() -> None:
    text = "# Title\n\nOne two, [a link](x.md) - | --- |\n\n```bash\nnot counted at all\n```\n\nx2 end.\n"
    # "#", "-", "|", "---" and the code block are not words: Title / One / two, / [a / link](x.md) / x2 / end.
    assert prose_words(text) == 7
    assert prose_words("```python\nprint(1)\n```\n") == 0


def test_readme_is_short() -> None:
    words = prose_words((ROOT / "README.md").read_text())
    assert words <= README_MAX_WORDS, (
        f"README.md has {words} words outside code blocks (limit {README_MAX_WORDS}): move detail to the guide "
        "it belongs to, or to docs/usage.md"
    )


def test_there_are_guides() -> None:
    assert {"index.md", "usage.md"} <= {path.name for path in GUIDES}


@pytest.mark.parametrize("guide", GUIDES, ids=lambda path: path.name)
def test_guide_is_short(guide: Path) -> None:
    words = prose_words(guide.read_text())
    assert words <= GUIDE_MAX_WORDS, (
        f"docs/{guide.name} has {words} words outside code blocks (limit {GUIDE_MAX_WORDS}): move the lab "
        "record to a README.md under docs/benchmarks/ or docs/reproduction/ and link it"
    )
