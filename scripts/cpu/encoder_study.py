"""A converted / distilled encoder against its original, on IMDB documents it did not see (issue "A Linformer that
keeps a pretrained encoder's quality"): fidelity, the frozen-embedding probe, retrieval, and encode speed.

    python scripts/cpu/encoder_study.py --original runs/models/all-MiniLM-L6-v2 \
        --model drop-in=runs/convert/minilm-k128-w16-g1 --model distilled=runs/distill/minilm-k128-w16-g1 \
        --data ../shared/data --documents 1000 --probe-train 1000 --probe-subset 600 --out docs/reproduction/distill-minilm/quality.json

Every model is read with `AutoModel` (a Linformer needs `import linformer_kit.models`, done here) and the
original's tokenizer, at `--length` or at its own `NAME=DIR@LENGTH`; above 512 positions it is extended as
`convert --max-length` extends (`encoder_at`). Fidelity is to the original at the same length where that
was measured (`--original-lengths`), else at `--length`. The measures are `linformer_kit.reproduction.encoder_eval`'s. Encode
throughput and peak memory: scripts/cpu/encoder_speed.py.
"""

from __future__ import annotations

import argparse
import gzip
import json
import time
from pathlib import Path

import torch
from transformers import AutoTokenizer

import linformer_kit.models  # noqa: F401  (registers model_type "linformer" with the Auto classes)
from linformer_kit.reproduction.encoder_eval import (
    different_documents,
    embed,
    encoder_at,
    fidelity,
    halves,
    probe_correct,
    recall_at_1,
)


def read_reviews(path: Path, count: int) -> tuple[list[str], list[int]]:
    texts, labels = [], []
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            record = json.loads(line)
            texts.append(record["text"])
            labels.append(int(record["label"]))
    order = torch.randperm(len(texts), generator=torch.Generator().manual_seed(0))[:count].tolist()
    return [texts[i] for i in order], [labels[i] for i in order]  # both classes (the files are sorted)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--original", required=True)
    parser.add_argument("--model", action="append", default=[], metavar="NAME=DIR")
    parser.add_argument("--data", default="../shared/data")
    parser.add_argument("--documents", type=int, default=500)
    parser.add_argument(
        "--probe-train", type=int, default=1000, help="labelled train reviews embedded (the pool)"
    )
    parser.add_argument(
        "--probe-subset",
        type=int,
        default=600,
        help="reviews each seed's probe trains on, drawn from the pool",
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--length", type=int, default=512, help="tokens every model reads")
    parser.add_argument(
        "--original-lengths",
        type=int,
        nargs="+",
        default=[256, 512],
        help="the original also at these lengths (256: all-MiniLM-L6-v2's max_seq_length)",
    )
    parser.add_argument(
        "--fidelity-only", action="store_true", help="skip the probe and retrieval (a grid of many models)"
    )
    parser.add_argument("--out", required=True)
    args = parser.parse_args()

    tokenizer = AutoTokenizer.from_pretrained(args.original)
    runs = [(f"original@{n}", args.original, n) for n in sorted(set(args.original_lengths) | {args.length})]
    for spec in args.model:  # NAME=DIR or NAME=DIR@LENGTH
        name, path = spec.split("=", 1)
        path, _, length = path.partition("@")
        runs.append((name, path, int(length or args.length)))
    test, test_labels = read_reviews(Path(args.data) / "imdb" / "test.jsonl.gz", args.documents)
    train, train_labels = read_reviews(Path(args.data) / "imdb" / "train.jsonl.gz", args.probe_train)
    first, second = halves(tokenizer, test, 256)
    long = torch.tensor([len(tokenizer(t)["input_ids"]) > 512 for t in test])
    results: dict = {"documents": len(test), "long_documents": int(long.sum()), "probe_train": len(train), "probe_subset": args.probe_subset,
                     "length": args.length, "models": {}}  # fmt: skip
    references: dict[int, torch.Tensor] = {}  # the original's test embeddings by length
    for name, path, length in runs:
        start = time.perf_counter()
        model = encoder_at(path, length)
        test_e = embed(model, tokenizer, test, length)
        if path == args.original:
            references[length] = test_e
        compared = length if length in references else args.length
        row = {
            "length": length,
            "fidelity": fidelity(test_e, references[compared]) if compared in references else None,
            "fidelity_to": f"original@{compared}",
            "different_documents": different_documents(test_e),
        }
        if not args.fidelity_only:
            row |= _downstream(
                model,
                tokenizer,
                length,
                args,
                test_e,
                test_labels,
                train,
                train_labels,
                long,
                (first, second),
            )
        row["seconds"] = time.perf_counter() - start
        results["models"][name] = row
        print(
            name, json.dumps({k: v for k, v in row.items() if not k.startswith("probe_accuracy")}), flush=True
        )
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(results, indent=2) + "\n")


def _downstream(
    model, tokenizer, length, args, test_e, test_labels, train, train_labels, long, halves_
) -> dict:
    """The probe (one fit per seed; accuracy on the documents longer than 512 tokens apart) and retrieval."""
    train_e = embed(model, tokenizer, train, length)
    correct = [
        probe_correct(train_e, train_labels, test_e, test_labels, s, args.probe_subset) for s in args.seeds
    ]
    accuracies = [float(c.mean()) for c in correct]
    long_accuracies = [float(c[long.numpy()].mean()) for c in correct]
    first, second = halves_
    return {
        "probe_accuracy": accuracies,
        "probe_mean": sum(accuracies) / len(accuracies),
        "probe_accuracy_long": long_accuracies,  # on the documents longer than 512 tokens
        "probe_mean_long": sum(long_accuracies) / len(long_accuracies),
        "recall_at_1": recall_at_1(embed(model, tokenizer, first, 256), embed(model, tokenizer, second, 256)),
    }


if __name__ == "__main__":
    main()
