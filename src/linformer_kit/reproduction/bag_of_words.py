"""What the words alone give: a bag-of-words logistic regression beside every finetuning task.

A reader judging a classifier's accuracy needs the accuracy of a model that sees no word order and
learned nothing from pretraining. For each task of a recipe and each seed, on exactly the examples
`linformer finetune` trains and evaluates on (`train.finetune.sample_splits`: the seed picks the
training subset, the dev subset is the one every run gets):

    text ──TfidfVectorizer(word 1- and 2-grams, min_df 2, sublinear tf)──▶ x ──LogisticRegression──▶ label

scikit-learn's lbfgs solver is deterministic, so a record depends on its seed only through the
training subset. Records have the shape of a finetuning record with `pretrained: "bag-of-words"`.
scikit-learn is an extra (`pip install "linformer-kit[baselines]"`), imported only here.
"""

from __future__ import annotations

from typing import Any

from linformer_kit.reproduction.recipe import Recipe

BAG_OF_WORDS = "bag-of-words"


def bag_of_words_records(recipe: Recipe) -> list[dict[str, Any]]:
    """One record per (task, seed) of the recipe's finetuning runs."""
    try:
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression
    except ImportError as error:
        raise ValueError(
            'the recipe asks for the bag-of-words baseline, which needs scikit-learn: pip install "linformer-kit[baselines]"'
        ) from error
    from linformer_kit.train.finetune import load_table, sample_splits

    first: dict[
        str | None, dict[str, Any]
    ] = {}  # task -> the options of its first run (all runs of a task share the data options)
    for run in recipe.finetune:
        first.setdefault(run.task, run.options)
    seeds = sorted({run.seed for run in recipe.finetune if run.seed is not None})
    records = []
    for task, options in first.items():
        text, label = options.get("text_column", "sentence"), options.get("label_column", "label")
        train_all, dev_all = (
            load_table(options["train"], "train"),
            load_table(options["validation"], "validation"),
        )
        for seed in seeds:
            train, dev = sample_splits(
                train_all, dev_all, options.get("max_train_samples"), options.get("max_eval_samples"), seed
            )
            vectorizer = TfidfVectorizer(ngram_range=(1, 2), min_df=2, sublinear_tf=True)
            x_train = vectorizer.fit_transform(train[text])
            classifier = LogisticRegression(max_iter=1000).fit(x_train, train[label])
            accuracy = float((classifier.predict(vectorizer.transform(dev[text])) == dev[label]).mean())
            records.append(
                {
                    "name": f"{task}-{BAG_OF_WORDS}-s{seed}",
                    "task": "finetune",
                    "status": "ok",
                    "device": "cpu",
                    "command": "(in the driver: linformer_kit.reproduction.bag_of_words)",
                    "dataset": task,
                    "pretrained": BAG_OF_WORDS,
                    "attention": None,
                    "seed": seed,
                    "train_examples": len(train),
                    "eval_examples": len(dev),
                    "accuracy": accuracy,
                }
            )
    return records
