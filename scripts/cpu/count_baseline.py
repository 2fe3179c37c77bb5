"""How much do the neighbours of a masked token tell? Count models on the masks the encoders are scored on.

Same BPE, same validation blocks and the same masks (`ResumableMaskingCollator`, seed 42) as
`scripts/cpu/plateau_ab.py`; bigram counts from its training blocks, add-k smoothed towards the
unigram. At every masked position (target x, left input token l, right input token r):

    unigram         p(x)
    left bigram     p(x | l)
    both sides      p(x | l, r) ∝ p(x | l) p(r | x)      (naive Bayes over the two neighbours)

A neural masked LM that uses only the two neighbours can reach the third; one that uses no context
at all cannot beat the no-context floor (the unigram plus what the 10% unchanged inputs give away;
`linformer_kit.train.context_free`, on plateau_ab.py's evaluation batches of 64). Prints all four.

    python scripts/cpu/count_baseline.py --data ../shared/data
"""

from __future__ import annotations

import argparse

import numpy as np

from linformer_kit.train.context_free import label_unigram, no_context_loss
from linformer_kit.train.data import load_text, pack_blocks, train_tokenizer
from linformer_kit.train.pretrain import ResumableMaskingCollator


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="../shared/data")
    parser.add_argument("--vocab", type=int, default=1024)
    parser.add_argument("--seq-len", type=int, default=128)
    parser.add_argument("--documents", type=int, default=40)
    parser.add_argument("--smoothing", type=float, default=0.1, help="add-k, k per token (times vocab)")
    args = parser.parse_args()

    train_text = load_text([f"{args.data}/gutenberg/train.jsonl.gz"], "text", "train")
    train_text = train_text.select(range(min(args.documents, len(train_text))))
    tokenizer = train_tokenizer(train_text, args.vocab, 100_000_000)
    v = len(tokenizer)
    train_blocks = pack_blocks(train_text, tokenizer, args.seq_len, "train")
    train = np.array(train_blocks["input_ids"]).reshape(-1)
    valid_text = load_text([f"{args.data}/gutenberg/valid.jsonl.gz"], "text", "validation")
    valid = pack_blocks(valid_text, tokenizer, args.seq_len, "valid").select(range(256))

    counts = np.zeros((v, v))
    np.add.at(counts, (train[:-1], train[1:]), 1)  # counts[l, x]: x follows l
    unigram = np.bincount(train, minlength=v) + 1.0
    unigram /= unigram.sum()
    k = args.smoothing * v
    following = (counts + k * unigram[None, :]) / (counts.sum(1, keepdims=True) + k)  # p(x | l), rows l

    collator = ResumableMaskingCollator(tokenizer, mlm_probability=0.15, seed=42)
    nll = np.zeros(3)
    positions = 0
    for start in range(0, len(valid), 32):  # the evaluation batches: same blocks, same masks
        batch = collator([valid[i] for i in range(start, min(start + 32, len(valid)))])
        inputs, labels = batch["input_ids"].numpy(), batch["labels"].numpy()
        for b, p in zip(*np.nonzero(labels != -100)):
            x, left, right = labels[b, p], inputs[b, p - 1], inputs[b, min(p + 1, inputs.shape[1] - 1)]
            both = following[left] * following[:, right]  # p(x | l) p(r | x), for every x
            nll -= np.log([unigram[x], following[left, x], both[x] / both.sum()])
            positions += 1
    unigram_ppl, left_ppl, both_ppl = np.exp(nll / positions)
    floor = np.exp(no_context_loss(collator, valid, label_unigram(train_blocks, tokenizer), batch_size=64))
    summary = f"no-context floor {floor:.1f}, left bigram {left_ppl:.1f}, both neighbours {both_ppl:.1f}"
    print(f"masked positions {positions}: perplexity unigram {unigram_ppl:.1f}, {summary}")


if __name__ == "__main__":
    main()
