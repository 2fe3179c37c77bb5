"""A long student reads long text wherever a user calls it (issue 73, item 0).

The teacher is a sentence-transformers folder as the Hub ships all-MiniLM-L6-v2, in miniature: its model reads
512 tokens, its tokenizer's model_max_length is 512 and its pipeline's max_seq_length 256. The folder
`distill --long-length 1024` writes must read 1 024 tokens through `SentenceTransformer`, a transformers
pipeline and its tokenizer, as the kit's own whole reading (longdocs' "whole") reads them.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
import torch
import transformers
from torch.nn import functional as F

from linformer_kit.longdocs.texts import token_count
from linformer_kit.models.readings import Reader, rows
from linformer_kit.token_pieces import Spans
from linformer_kit.train.distill import DistillConfig, distill
from tests.fixtures.models import TINY
from tests.train.test_distill import MANY_WORDS

st = pytest.importorskip("sentence_transformers")

LONG = 1024
# 300 tokens of one kind, then 400 of others: a reading of its first 256 (or 512) tokens is not the whole's
_OTHERS = random.Random(1).choices(MANY_WORDS[2:], k=400)
TEXT = " ".join(["hello world"] * 150 + _OTHERS)
WARNING = "Token indices sequence length is longer"


def _teacher(folder: Path) -> Path:
    """A tiny BERT reading 512 tokens, a tokenizer giving each of MANY_WORDS its own id (model_max_length 512),
    and the pipeline files of a mean-pooling sentence-transformers model at max_seq_length 256."""
    torch.manual_seed(0)
    config = transformers.BertConfig(**TINY, max_position_embeddings=512)
    transformers.BertModel(config).save_pretrained(folder)
    vocab = {word: i for i, word in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *MANY_WORDS])}
    transformers.BertTokenizer(vocab=vocab, model_max_length=512).save_pretrained(folder)
    modules = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
               {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
               {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}]  # fmt: skip
    (folder / "modules.json").write_text(json.dumps(modules))
    (folder / "1_Pooling").mkdir()
    pooling = {"word_embedding_dimension": TINY["hidden_size"], "pooling_mode_mean_tokens": True}
    (folder / "1_Pooling" / "config.json").write_text(json.dumps(pooling))
    (folder / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 256}))
    return folder


@pytest.fixture(scope="module")
def teacher(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _teacher(tmp_path_factory.mktemp("long-folder") / "teacher")


@pytest.fixture(scope="module")
def student(teacher: Path) -> Path:
    """The long student of one step a stage: what it learned does not matter here, only how it is read."""
    torch.set_num_threads(1)
    rng = random.Random(0)
    documents = [" ".join(rng.choice(MANY_WORDS) for _ in range(1500)) for _ in range(3)]  # spans of 1 024
    documents += [" ".join(rng.choice(MANY_WORDS) for _ in range(rng.randint(20, 60))) for _ in range(30)]
    text = teacher.parent / "text.txt"
    text.write_text("\n\n".join(documents) + "\n")
    out = teacher.parent / "student"
    distill(DistillConfig(
        teacher=str(teacher), train=[str(text)], output_dir=str(out), seq_len=32, projected_length=8,
        local_window=2, global_tokens=1, end_to_end_steps=1, per_device_train_batch_size=4, save_steps=1,
        disable_tqdm=True, seed=0, max_eval_documents=4, long_length=LONG, long_steps=1, long_batch_size=2,
    ))  # fmt: skip
    return out


def whole_reading(folder: Path) -> torch.Tensor:
    """(D,) the kit's own reading of TEXT whole: longdocs' "whole" (every token, mean-pooled, normalised)."""
    model = transformers.AutoModel.from_pretrained(folder).eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    return rows("whole", Reader(model, tokenizer, LONG), [TEXT])[0][0]


def test_the_folder_says_the_long_length_everywhere(student: Path) -> None:
    assert json.loads((student / "sentence_bert_config.json").read_text())["max_seq_length"] == LONG
    assert json.loads((student / "tokenizer_config.json").read_text())["model_max_length"] == LONG
    assert transformers.AutoTokenizer.from_pretrained(student).model_max_length == LONG
    assert f"up to {LONG} tokens" in (student / "README.md").read_text()


def test_sentence_transformers_encodes_a_long_text_whole(student: Path) -> None:
    n = token_count(transformers.AutoTokenizer.from_pretrained(student), TEXT) + 2  # [CLS] ... [SEP]
    assert 512 < n < LONG
    model = st.SentenceTransformer(str(student), device="cpu")
    assert model.tokenize([TEXT])["input_ids"].shape[1] == n  # not cut at the teacher's 256 (or 512)
    encoded = model.encode([TEXT], convert_to_tensor=True)[0]
    whole = whole_reading(student)
    assert float(encoded @ whole) >= 0.9999
    torch.testing.assert_close(encoded, whole, rtol=0, atol=1e-5)


def test_a_feature_extraction_pipeline_reads_a_long_text_whole(
    student: Path, transformers_log: list[str]
) -> None:
    """Asked to truncate (to what the model reads), the pipeline keeps every token, and nothing warns."""
    features = transformers.pipeline("feature-extraction", model=str(student))(TEXT, truncation=True)
    states = torch.tensor(features[0])  # (n, D)
    assert len(states) == token_count(transformers.AutoTokenizer.from_pretrained(student), TEXT) + 2
    assert float(F.normalize(states.mean(0), dim=-1) @ whole_reading(student)) >= 0.9999
    assert not [line for line in transformers_log if WARNING in line]


def test_the_kit_cuts_long_text_without_the_tokenizer_s_warning(
    teacher: Path, transformers_log: list[str]
) -> None:
    """Where the kit tokenizes a text whole to cut it itself (distill's held-out passages and longdocs' spans:
    `Spans`; a reader's chunks: `Reader.ids`; longdocs' sizes: `token_count`), a tokenizer at 512 tokens does
    not warn of "indexing errors": no such input reaches a model."""

    def fresh() -> transformers.PreTrainedTokenizerBase:
        """The teacher's tokenizer (model_max_length 512), new: transformers warns once a tokenizer."""
        return transformers.AutoTokenizer.from_pretrained(teacher)

    assert fresh().model_max_length == 512 < token_count(fresh(), TEXT)
    Spans(fresh(), [TEXT])
    Reader(torch.nn.Identity(), fresh(), LONG).ids([TEXT])
    assert not [line for line in transformers_log if WARNING in line]
