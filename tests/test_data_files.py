"""data_files.read_texts: the documents of the files spectrum (and the LRA / no-context readers) read."""

from __future__ import annotations

import gzip
import json

import pytest

from linformer_kit.data_files import read_texts


@pytest.mark.parametrize("name", ["docs.jsonl", "docs.jsonl.gz", "docs.json"])
def test_json_lines_end_at_newline_only(tmp_path, name) -> None:
    # IMDB reviews hold U+0085; JSON allows it (and U+2028) unescaped inside a string
    texts = ["first\x85review", "second\u2028one", "third\r\nwith a line"]
    body = "\n".join(json.dumps({"text": t}, ensure_ascii=False) for t in texts) + "\n"
    path = tmp_path / name
    if name.endswith(".gz"):
        with gzip.open(path, "wt", encoding="utf-8") as f:
            f.write(body)
    else:
        path.write_text(body, encoding="utf-8")
    assert list(read_texts(path)) == texts


def test_json_array_and_missing_field(tmp_path) -> None:
    path = tmp_path / "docs.json"
    path.write_text(json.dumps([{"text": "a\x85b"}, {"body": "c"}]), encoding="utf-8")
    with pytest.raises(ValueError, match="record 2 has no field 'text'"):
        list(read_texts(path))
