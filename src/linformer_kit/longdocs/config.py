"""What `linformer longdocs` measures and how: one typed config, its values checked once, before any model loads.

`linformer longdocs`'s flags are the fields of `LongDocsConfig` (cli/longdocs.py); the help of each is
its `metadata["help"]`. `check_files` reads the file system (the model folders, the data files); the
constructor reads none, so a config can be built where its paths do not exist yet.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from linformer_kit.longdocs.hub import HUB, hub_cache, hub_folder
from linformer_kit.longdocs.sources import TASK_FILES
from linformer_kit.models.readings import METHODS, Method
from linformer_kit.output_dir import check_output_dir

Task = Literal[
    "passkey", "access-code", "needle", "imdb", "books", "wikitext", "paragraphs", "fidelity", "documents"
]  # fmt: skip
TASKS: tuple[Task, ...] = (
    "passkey", "access-code", "needle", "imdb", "books", "wikitext", "paragraphs", "fidelity", "documents"
)  # fmt: skip
# the tasks no file feeds (generated text): what runs with no --data and no --documents
GENERATED: tuple[Task, ...] = ("passkey", "access-code")
RESULT_FILES = ("longdocs.json", "longdocs.md", "longdocs.png")


@dataclass
class LongDocsConfig:
    """The encoder under test, the 512-token original the baselines run, the tasks, lengths and methods."""

    model: str = field(
        default="",
        metadata={"help": "the encoder under test (a Linformer, or a BERT / RoBERTa / sentence-transformers "
                  "folder): `whole`, the late, contextual and their Chamfer readings read with it", "metavar": "DIR"},
    )  # fmt: skip
    original: str | None = field(
        default=None,
        metadata={"help": "the encoder the baselines run (truncate, chunks, full-extended), e.g. the one a "
                  "student was distilled from; default: --model", "metavar": "DIR"},
    )  # fmt: skip
    data: str | None = field(
        default=None,
        metadata={"help": "a data folder holding imdb/, gutenberg/, wikitext/ and sst2/ as longdocs/sources.py "
                  "lays out (the repository's shared data), or 'hub': those files made once from Hugging Face "
                  "datasets (IMDB, PG-19, WikiText-2, SST-2; longdocs/hub.py); needle, imdb, books, wikitext, "
                  "paragraphs and fidelity read it", "metavar": "DIR"},
    )  # fmt: skip
    documents: tuple[str, ...] = field(
        default=(),
        metadata={"help": "your own long documents: .jsonl / .jsonl.gz files (each record's `text` a document), "
                  ".txt files (each file a document) or folders of them; the `documents` task: the halves "
                  "task on them, every method", "metavar": "FILE"},
    )  # fmt: skip
    output_dir: str = field(
        default="",
        metadata={"help": "where longdocs.json, longdocs.md and longdocs.png go", "metavar": "DIR"},
    )
    tasks: tuple[Task, ...] = field(
        default=(),
        metadata={"help": "the tasks to run (default: `documents` with --documents, else every task --data "
                  "feeds with passkey and access-code, else those two alone)"},
    )  # fmt: skip
    methods: tuple[Method, ...] = field(default=METHODS, metadata={"help": "the methods to compare"})
    lengths: tuple[int, ...] = field(
        default=(256, 512, 1024, 2048, 4096),
        metadata={"help": "document lengths in tokens (special tokens included) of passkey, needle, books "
                  "and wikitext; IMDB reads its reviews whole, up to the longest", "metavar": "N"},
    )  # fmt: skip
    seeds: tuple[int, ...] = field(
        default=(1,),
        metadata={"help": "each seed draws new synthetic documents and probe subsets", "metavar": "S"},
    )
    candidates: int = field(default=100, metadata={"help": "passkey / needle documents per length"})
    queries: int = field(default=50, metadata={"help": "passkey / needle queries per length (<= candidates)"})
    pairs: int = field(default=100, metadata={"help": "books / wikitext halves per length"})
    probe_train: int = field(default=400, metadata={"help": "IMDB train reviews above 512 tokens (the pool)"})
    probe_subset: int = field(default=300, metadata={"help": "reviews of the pool each seed's probe fits on"})
    probe_test: int = field(default=400, metadata={"help": "IMDB test reviews above 512 tokens scored"})
    chunk_length: int = field(default=512, metadata={"help": "tokens per chunk (special tokens included)"})
    baselines: tuple[int, ...] = field(
        default=(),
        metadata={"help": "more chunkings of the original on the halves tasks (books, wikitext, documents): "
                  "each length L (special tokens included) read in consecutive chunks and in chunks every "
                  "L / 2 tokens, averaged and best (chunks-mean-L, chunks-best-L, chunks-mean-L-overlap, "
                  "chunks-best-L-overlap); the paired table sets the model's readings against the strongest "
                  "of the original's, e.g. 128 256 512 for all-MiniLM-L6-v2 (trained at 128, served at 256)",
                  "metavar": "L"},
    )  # fmt: skip
    model_chunks: tuple[int, ...] = field(
        default=(),
        metadata={"help": "the model under test reading chunks of L tokens on the halves tasks (e.g. 2048, a "
                  "long student's winning length), averaged and best (model-chunks-mean-L, model-chunks-best-L); "
                  "at most the longest of --lengths", "metavar": "L"},
    )  # fmt: skip
    full_extended_max: int = field(
        default=2048,
        metadata={"help": "full-extended (quadratic) runs at lengths up to this one only", "metavar": "N"},
    )
    tokens_per_batch: int = field(default=16384, metadata={"help": "padded tokens per forward pass"})
    device: str = field(default="cpu", metadata={"help": "torch device, e.g. cpu or cuda"})
    compile: bool = field(
        default=False,
        metadata={
            "help": "encode under torch.compile (each model compiles whole; every batch padded to a multiple of "
            "chunk_length tokens, so a model compiles once a width: at most 8 widths to 4 096 at 512)"
        },
    )

    def __post_init__(self) -> None:
        self.tasks, self.methods, self.documents = (
            tuple(self.tasks),
            tuple(self.methods),
            tuple(self.documents),
        )
        if not self.tasks:  # the default: what the given text feeds
            data_tasks = tuple(t for t in TASKS if t != "documents")
            self.tasks = ("documents",) if self.documents else data_tasks if self.data else GENERATED
        self.lengths, self.seeds = tuple(sorted(set(self.lengths))), tuple(self.seeds)
        self.baselines = tuple(sorted(set(self.baselines)))
        for name, values, allowed in (("tasks", self.tasks, TASKS), ("methods", self.methods, METHODS)):
            bad = [v for v in values if v not in allowed]
            if bad or not values:
                raise ValueError(f"{name}={list(values)}: expected one or more of {', '.join(allowed)}")
        if "documents" in self.tasks and not self.documents:
            raise ValueError("tasks: documents reads your documents; give them with --documents FILE")
        if self.documents and "documents" not in self.tasks:
            raise ValueError(
                f"documents: given, but tasks={list(self.tasks)} do not read them; add documents"
            )
        if not self.seeds:
            raise ValueError("seeds=[]: give at least one seed")
        for name, low in (("candidates", 2), ("queries", 1), ("pairs", 2), ("probe_train", 4),
                          ("probe_subset", 2), ("probe_test", 2), ("chunk_length", 8), ("tokens_per_batch", 1)):  # fmt: skip
            value = getattr(self, name)
            if not isinstance(value, int) or value < low:
                raise ValueError(f"{name}={value!r}: expected a whole number >= {low}")
        self.model_chunks = tuple(sorted(set(self.model_chunks)))
        for name, chunks in (("baselines", self.baselines), ("model_chunks", self.model_chunks)):
            if any(not isinstance(value, int) or value < 8 for value in chunks):
                raise ValueError(f"{name}={list(chunks)}: expected chunk lengths >= 8 tokens")
        if self.model_chunks and self.model_chunks[-1] > max(self.lengths, default=0):
            raise ValueError(
                f"model_chunks={list(self.model_chunks)}: at most the longest of lengths, {max(self.lengths)} "
                "(the model under test reads up to it)"
            )
        if self.queries > self.candidates:
            raise ValueError(f"queries={self.queries}: at most candidates={self.candidates}")
        if self.probe_subset > self.probe_train:
            raise ValueError(f"probe_subset={self.probe_subset}: at most probe_train={self.probe_train}")
        if not self.lengths or self.lengths[0] < 64:
            raise ValueError(
                f"lengths={list(self.lengths)}: expected lengths >= 64 tokens (a key sentence fits)"
            )

    @property
    def data_dir(self) -> Path:
        """The data folder (`check_files` refused tasks that read it without one)."""
        if self.data is None:
            raise ValueError("data: missing; give --data DIR")
        return hub_cache() if self.data == HUB else Path(self.data)

    @property
    def original_dir(self) -> str:
        return self.original or self.model

    def check_files(self) -> None:
        """The model folders, the data files the tasks read, and the output folder; before any model loads."""
        from linformer_kit.models.loading import check_model_dir, longest_input, read_config_json

        if not self.model:
            raise ValueError("model: missing; give the encoder directory to evaluate")
        if not self.output_dir:
            raise ValueError("output_dir: missing; give a folder for the results (--output-dir)")
        out = check_output_dir(self.output_dir)
        held = [name for name in RESULT_FILES if (out / name).exists()]
        if held:
            raise ValueError(
                f"output_dir {self.output_dir!r} already holds {', '.join(held)}; choose another"
            )
        for what, path in (("model", self.model), ("original", self.original_dir)):
            check_model_dir(path, what, tokenizer=True)
        longest = longest_input(read_config_json(self.original_dir, "original"))
        for name, value in (
            ("chunk_length", self.chunk_length),
            ("baselines", max(self.baselines, default=0)),
        ):
            if value > longest:
                raise ValueError(f"{name}={value}: longer than the original's longest input {longest}")
        reading = [task for task in self.tasks if TASK_FILES[task]]
        if reading and self.data is None:
            raise ValueError(
                f"tasks {', '.join(reading)} read a data folder: give --data DIR (imdb/, gutenberg/, wikitext/, "
                f"sst2/: longdocs/sources.py) or --data {HUB} (Hugging Face datasets), or run "
                f"{' and '.join(GENERATED)}, which need none"
            )
        files = sorted({f for task in reading for f in TASK_FILES[task]})
        if self.data == HUB:  # made once; offline, the dataset is named here
            hub_folder(files)
        missing = [f for f in files if not (self.data_dir / f).is_file()]
        if missing:
            raise ValueError(f"data: {self.data!r} lacks {', '.join(missing)} (the tasks' files)")
        if self.documents:
            from transformers import AutoTokenizer

            from linformer_kit.longdocs.sources import check_documents, user_documents

            documents = user_documents(self.documents)  # unreadable files named before the tokenizer loads
            tokenizer = AutoTokenizer.from_pretrained(self.original_dir, model_max_length=10**9)
            check_documents(documents, tokenizer, self.lengths, self.pairs)
